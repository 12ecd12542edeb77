"""The arrays ctdenoise takes, and how they reach the C++ library.

Host arrays (numpy, PyTorch CPU tensors, anything numpy.asarray takes) go to the C++ host API as
float32 in place when they already are float32 and contiguous, and as int16 in place when they
are int16 and contiguous (the library uploads int16 as it is and converts on the GPU). GPU arrays (CuPy, PyTorch CUDA
tensors, any object with ``__cuda_array_interface__`` or a CUDA ``__dlpack__``) stay on the GPU:
the C++ device API reads and writes their memory on the caller's current stream.

Voxel order: the library stores x fastest. A C-ordered array of shape (z, y, x) or (y, x), and a
Fortran-ordered one of shape (x, y, z) or (x, y), both have x fastest in memory, so either is used
as it is; per-axis arguments (spacing, radius) follow the array's own axis order.
"""

from __future__ import annotations

import numpy as np

from . import _core

ACCEPTED_DTYPES = ("float32", "float64", "int16", "uint16", "uint8")


def _check_dtype(dtype) -> None:
    if str(dtype) not in ACCEPTED_DTYPES:
        raise TypeError(f"ctdenoise takes arrays of {', '.join(ACCEPTED_DTYPES)}; got {dtype}")


def _check_shape(shape) -> None:
    if len(shape) not in (2, 3):
        raise ValueError(f"ctdenoise takes 2D images and 3D volumes; got an array of {len(shape)} dimensions")
    if any(s < 1 for s in shape):
        raise ValueError(f"the image has no voxels (shape {tuple(shape)})")


def _dims(c_shape) -> tuple[int, int, int]:
    """(nx, ny, nz) of a C-contiguous array: the last axis is x."""
    if len(c_shape) == 2:
        return int(c_shape[1]), int(c_shape[0]), 1
    return int(c_shape[2]), int(c_shape[1]), int(c_shape[0])


def framework(obj) -> str:
    """'numpy', 'torch' (CPU tensor), 'cupy', 'torch-cuda' or 'cuda' (another GPU array)."""
    module = type(obj).__module__.split(".")[0]
    if module == "cupy":
        return "cupy"
    if module == "torch":
        return "torch-cuda" if obj.is_cuda else "torch"
    if hasattr(obj, "__cuda_array_interface__"):
        return "cuda"
    if hasattr(obj, "__dlpack_device__") and obj.__dlpack_device__()[0] in (2, 13):  # CUDA, CUDA managed
        return "cuda"
    return "numpy"


def is_gpu(obj) -> bool:
    return framework(obj) in ("cupy", "torch-cuda", "cuda")


class _Image:
    """What host and device images share: the caller's shape and whether the memory order is
    reversed (a Fortran-ordered array, used through its C-ordered transpose)."""

    shape: tuple
    reversed: bool

    def xyz(self, per_axis):
        """A per-array-axis tuple (spacing, radius) as (x, y, z)."""
        values = tuple(per_axis)
        if len(values) != len(self.shape):
            raise ValueError(f"give one value per array axis ({len(self.shape)}), got {len(values)}")
        xyz = values if self.reversed else values[::-1]
        return xyz + (xyz[-1],) * (3 - len(xyz))


class HostImage(_Image):
    """A host array as the C++ host API takes it: float32, C-contiguous, x fastest."""

    def __init__(self, image, kind: str):
        self.kind = kind
        array = image.detach().numpy() if kind == "torch" else np.asarray(image)
        _check_dtype(array.dtype)
        self.dtype = str(array.dtype)  # before the conversion to float32
        _check_shape(array.shape)
        self.shape = array.shape
        # A Fortran-ordered array is a C-ordered one with its axes reversed: use that view.
        self.reversed = not array.flags.c_contiguous and array.flags.f_contiguous
        view = array.T if self.reversed else array
        # int16 (CT's stored type) goes to the filters as it is: on CUDA it is uploaded as int16,
        # half the bytes, and converted there. A float32 copy is made only where one is needed
        # (the automatic parameters' noise model, file output).
        if array.dtype == np.int16:
            self.voxels = np.ascontiguousarray(view)
            self._data = None
        else:
            self._data = np.ascontiguousarray(view, dtype=np.float32)
            self.voxels = self._data
        self.c_shape = self.voxels.shape
        self.dims = _dims(self.c_shape)

    @property
    def data(self) -> np.ndarray:
        """The voxels as float32, C-ordered (made from int16 voxels on first use)."""
        if self._data is None:
            self._data = self.voxels.astype(np.float32)
        return self._data

    def output(self, out):
        """The C-ordered float32 array the filter writes, from `out` (checked) or new."""
        if out is None:
            return _core.empty_output(list(self.c_shape))
        array = out.detach().numpy() if framework(out) == "torch" else out
        if not isinstance(array, np.ndarray):
            raise TypeError(f"out must be a numpy array (or CPU tensor) like the image, got {type(out).__name__}")
        if array.dtype != np.float32 or array.shape != tuple(self.shape):
            raise ValueError(f"out must be float32 of shape {tuple(self.shape)}, got {array.dtype} {array.shape}")
        view = array.T if self.reversed else array
        if not view.flags.c_contiguous:
            raise ValueError("out must have the image's memory order (C or Fortran) and be contiguous")
        if np.shares_memory(view, self.voxels):
            raise ValueError("out must not share memory with the image")
        return view

    def result(self, data, out):
        """What the caller gets back: its own array type, shape and order."""
        if out is not None:
            return out
        array = data.T if self.reversed else data
        if self.kind == "torch":
            import torch

            return torch.from_numpy(array)
        return array


class DeviceImage(_Image):
    """A GPU array as the C++ device API takes it: a pointer to float32 voxels, x fastest, the GPU
    it lives on and the caller's current stream."""

    def __init__(self, image, kind: str, stream=None):
        if kind == "cuda":  # another framework's array: through CuPy (zero-copy), returned as CuPy
            import cupy

            image = cupy.asarray(image) if hasattr(image, "__cuda_array_interface__") else cupy.from_dlpack(image)
            kind = "cupy"
        self.kind = kind
        self.source = image
        _check_dtype(str(image.dtype).replace("torch.", ""))
        _check_shape(tuple(image.shape))
        self.shape = tuple(image.shape)
        ndim = len(self.shape)
        if kind == "cupy":
            import cupy

            self.reversed = not image.flags.c_contiguous and image.flags.f_contiguous
            view = image.T if self.reversed else image
            self.data = cupy.ascontiguousarray(view, dtype=cupy.float32)
            self.ordinal = int(image.device.id)
            self.stream = _stream_pointer(stream, cupy.cuda.get_current_stream().ptr)
        else:
            import torch

            reversed_view = image.permute(*range(ndim - 1, -1, -1))
            self.reversed = not image.is_contiguous() and reversed_view.is_contiguous()
            view = reversed_view if self.reversed else image
            self.data = view.to(torch.float32).contiguous()
            self.ordinal = int(image.device.index)
            self.stream = _stream_pointer(stream, torch.cuda.current_stream(image.device).cuda_stream)
        self.dims = _dims(tuple(self.data.shape))

    def pointer(self, array) -> int:
        return int(array.data.ptr) if self.kind == "cupy" else int(array.data_ptr())

    def output(self, out):
        if out is None:
            if self.kind == "cupy":
                import cupy

                with cupy.cuda.Device(self.ordinal):
                    return cupy.empty(self.data.shape, dtype=cupy.float32)
            import torch

            return torch.empty(tuple(self.data.shape), dtype=torch.float32, device=self.data.device)
        if framework(out) != framework(self.source):
            raise TypeError(f"out must be an array of the image's kind ({type(self.source).__name__})")
        if str(out.dtype).replace("torch.", "") != "float32" or tuple(out.shape) != self.shape:
            raise ValueError(f"out must be float32 of shape {self.shape}, got {out.dtype} {tuple(out.shape)}")
        ndim = len(self.shape)
        if self.kind == "cupy":
            view = out.T if self.reversed else out
            contiguous = view.flags.c_contiguous
            device = int(out.device.id)
        else:
            view = out.permute(*range(ndim - 1, -1, -1)) if self.reversed else out
            contiguous = view.is_contiguous()
            device = int(out.device.index)
        if not contiguous:
            raise ValueError("out must have the image's memory order (C or Fortran) and be contiguous")
        if device != self.ordinal:
            raise ValueError(f"out is on GPU {device}, the image on GPU {self.ordinal}")
        start, size = self.pointer(view), 4 * int(np.prod(self.shape))
        data_start = self.pointer(self.data)
        if start < data_start + size and data_start < start + size:
            raise ValueError("out must not share memory with the image (the GPU filters read while they write)")
        return view

    def result(self, data, out):
        if out is not None:
            return out
        if not self.reversed:
            return data
        return data.T if self.kind == "cupy" else data.permute(*range(data.dim() - 1, -1, -1))

    def to_host(self) -> np.ndarray:
        """The float32 voxels on the host, C-ordered (x fastest); waits for the stream."""
        if self.kind == "cupy":
            import cupy

            return cupy.asnumpy(self.data)
        return self.data.cpu().numpy()

    def from_host(self, array: np.ndarray):
        """A host result back on this image's GPU, as its framework's array."""
        if self.kind == "cupy":
            import cupy

            with cupy.cuda.Device(self.ordinal):
                return cupy.asarray(array)
        import torch

        return torch.from_numpy(array).to(self.data.device)


def _stream_pointer(stream, current: int) -> int:
    """The stream to queue on: the caller's current one, or one given as an int, a CuPy stream or a
    torch stream."""
    if stream is None:
        return int(current)
    for attribute in ("ptr", "cuda_stream"):
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    return int(stream)


def prepare(image, stream=None):
    """HostImage or DeviceImage for `image`."""
    kind = framework(image)
    if kind in ("cupy", "torch-cuda", "cuda"):
        return DeviceImage(image, "torch" if kind == "torch-cuda" else kind, stream)
    if stream is not None:
        raise ValueError("stream is for GPU arrays; this image is on the host")
    return HostImage(image, kind)
