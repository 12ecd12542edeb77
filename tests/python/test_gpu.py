"""The GPU paths: CuPy arrays and PyTorch CUDA tensors in and out, zero-copy, on the caller's
stream, giving the voxels of the C++ host API on CUDA. Skipped (never passed) without a GPU and
the framework."""

import numpy as np
import pytest

import ctdenoise
from ctdenoise import _arrays
from conftest import structured

if not ctdenoise.cuda_available():
    pytest.skip("no CUDA device (or this build has no CUDA backend)", allow_module_level=True)

try:
    import cupy
except ImportError:
    cupy = None
try:
    import torch

    if not torch.cuda.is_available():
        torch = None
except ImportError:
    torch = None

needs_cupy = pytest.mark.skipif(cupy is None, reason="CuPy is not installed")
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch with CUDA is not installed")


def to_gpu(kind, array):
    return cupy.asarray(array) if kind == "cupy" else torch.from_numpy(np.ascontiguousarray(array)).cuda()


def to_numpy(kind, array):
    return cupy.asnumpy(array) if kind == "cupy" else array.cpu().numpy()


KINDS = [pytest.param("cupy", marks=needs_cupy), pytest.param("torch", marks=needs_torch)]
NLM = dict(h=24.0, search_radius=3, patch_radius=1)
BILATERAL = dict(sigma_range=35.0, sigma_spatial=1.5)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(29, 41), (9, 37, 33)])
def test_gpu_arrays_give_the_host_apis_voxels_as_their_own_type(rng, kind, shape):
    image = structured(rng, shape)
    gpu = to_gpu(kind, image)
    got = ctdenoise.nlm(gpu, **NLM)
    assert type(got) is type(gpu) and tuple(got.shape) == shape
    np.testing.assert_array_equal(to_numpy(kind, got), ctdenoise.nlm(image, device="cuda", **NLM))
    for algorithm in ("fused", "tiled", "compressive"):
        got = ctdenoise.bilateral(gpu, algorithm=algorithm, **BILATERAL)
        want = ctdenoise.bilateral(image, algorithm=algorithm, device="cuda", **BILATERAL)
        np.testing.assert_array_equal(to_numpy(kind, got), want)


@pytest.mark.parametrize("kind", KINDS)
def test_contiguous_float32_is_not_copied(rng, kind):
    gpu = to_gpu(kind, structured(rng, (5, 16, 16)))
    prepared = _arrays.prepare(gpu)
    pointer = gpu.data.ptr if kind == "cupy" else gpu.data_ptr()
    assert prepared.pointer(prepared.data) == pointer


@needs_cupy
def test_runs_on_the_callers_stream(rng):
    image = structured(rng, (11, 64, 64))
    want = ctdenoise.nlm(image, device="cuda", **NLM)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        gpu = cupy.asarray(image)
        got = ctdenoise.nlm(gpu, **NLM)
        doubled = got * 2  # queued after the filter on the same stream
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(doubled), 2 * want)


@needs_torch
def test_runs_on_the_current_torch_stream(rng):
    image = structured(rng, (11, 64, 64))
    want = ctdenoise.bilateral(image, device="cuda", **BILATERAL)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gpu = torch.from_numpy(image).cuda()
        got = ctdenoise.bilateral(gpu, **BILATERAL) + 1
    stream.synchronize()
    np.testing.assert_array_equal(got.cpu().numpy(), want + 1)


@pytest.mark.parametrize("kind", KINDS)
def test_fortran_order_int16_and_out(rng, kind):
    c_order = structured(rng, (7, 21, 19))
    want = ctdenoise.nlm(c_order, device="cuda", **NLM)
    if kind == "cupy":
        f_order = cupy.asfortranarray(cupy.asarray(c_order).T)
    else:
        f_order = torch.from_numpy(c_order).cuda().permute(2, 1, 0)  # (x, y, z), x fastest
    got = ctdenoise.nlm(f_order, **NLM)
    np.testing.assert_array_equal(to_numpy(kind, got), want.T)
    as_int16 = np.round(c_order).astype(np.int16)
    np.testing.assert_array_equal(to_numpy(kind, ctdenoise.nlm(to_gpu(kind, as_int16), **NLM)),
                                  ctdenoise.nlm(as_int16, device="cuda", **NLM))
    out = to_gpu(kind, np.zeros(c_order.shape, np.float32))
    assert ctdenoise.nlm(to_gpu(kind, c_order), out=out, **NLM) is out
    np.testing.assert_array_equal(to_numpy(kind, out), want)
    gpu = to_gpu(kind, c_order)
    with pytest.raises(ValueError, match="share memory"):
        ctdenoise.nlm(gpu, out=gpu, **NLM)


@pytest.mark.parametrize("kind", KINDS)
def test_automatic_parameters_and_the_cpu_round_trip(rng, kind):
    image = structured(rng, (40, 48), noise=20.0)
    gpu = to_gpu(kind, image)
    got, info = ctdenoise.nlm(gpu, search_radius=3, return_info=True)
    want, want_info = ctdenoise.nlm(image, search_radius=3, device="cuda", return_info=True)
    assert info["parameters"]["h"] == want_info["parameters"]["h"]
    np.testing.assert_array_equal(to_numpy(kind, got), want)
    on_cpu = ctdenoise.bilateral(gpu, device="cpu", **BILATERAL)
    assert type(on_cpu) is type(gpu)
    np.testing.assert_array_equal(to_numpy(kind, on_cpu), ctdenoise.bilateral(image, device="cpu", **BILATERAL))


@needs_cupy
def test_compressive_value_range_given_or_measured(rng):
    image = structured(rng, (6, 50, 45))
    gpu = cupy.asarray(image)
    measured, info = ctdenoise.bilateral(gpu, algorithm="compressive", return_info=True, **BILATERAL)
    given = ctdenoise.bilateral(gpu, algorithm="compressive", value_range=(float(image.min()), float(image.max())),
                                **BILATERAL)
    np.testing.assert_array_equal(cupy.asnumpy(measured), cupy.asnumpy(given))
    assert info["details"]["terms"] >= 1


@needs_torch
def test_a_dlpack_only_array_comes_back_as_cupy(rng):
    if cupy is None:
        pytest.skip("CuPy is not installed")

    class DlpackOnly:
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kwargs):
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    image = structured(rng, (20, 30))
    got = ctdenoise.nlm(DlpackOnly(torch.from_numpy(image).cuda()), **NLM)
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(got), ctdenoise.nlm(image, device="cuda", **NLM))
