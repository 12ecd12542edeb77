"""ctdenoise: edge-preserving denoising of CT images and volumes, non-local means and the bilateral
filter, on the CPU and on CUDA GPUs, from numpy, CuPy and PyTorch (docs/python.md)."""

from . import _core
from ._core import CudaError, NoiseModel
from ._filters import bilateral, estimate_noise, nlm
from ._io import read, write

__version__ = _core.__version__

if _core.has_io:
    from ._core import Metadata


def cuda_available() -> bool:
    """Whether filters can run on a CUDA GPU here (this build has CUDA and a device is present)."""
    return _core.available_device("auto") == "cuda"


def cuda_device_name() -> str:
    """The GPU that CUDA work runs on, or '' when there is none."""
    return _core.cuda_device_name()


def release_cuda_memory() -> None:
    """Frees the device memory that filter calls from host arrays keep for the next call."""
    _core.release_cuda_memory()


__all__ = ["nlm", "bilateral", "estimate_noise", "read", "write", "Metadata", "NoiseModel", "CudaError",
           "cuda_available", "cuda_device_name", "release_cuda_memory", "__version__"]
