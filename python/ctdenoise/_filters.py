"""nlm, bilateral and estimate_noise: the Python face of the C++ filters (docs/python.md)."""

from __future__ import annotations

import re
import time
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._arrays import DeviceImage, HostImage, prepare

_DEVICES = ("auto", "cpu", "cuda")


def _choice(name: str, value: str, enum) -> Any:
    try:
        return getattr(enum, value)
    except (AttributeError, TypeError):
        names = ", ".join(m for m in dir(enum) if not m.startswith("_") and isinstance(getattr(enum, m), enum))
        raise ValueError(f"{name} must be one of {names}; got {value!r}") from None


def _check_device(device: str) -> None:
    if device not in _DEVICES:
        raise ValueError(f"device must be one of {', '.join(_DEVICES)}; got {device!r}")


class _Run:
    """One filter call: where it runs, the host copy of the voxels when one is needed, the timings."""

    def __init__(self, image, device: str, stream):
        _check_device(device)
        self.image = prepare(image, stream)
        self.device = device
        # A GPU array stays on the GPU unless the CPU is asked for (or, with "auto", this build or
        # machine has no CUDA); "cuda" without one raises NotImplementedError or CudaError here.
        gpu = isinstance(self.image, DeviceImage)
        self.on_gpu = gpu and device != "cpu" and _core.available_device(device) == "cuda"
        self.auto_device = "cuda" if self.on_gpu else device
        self._host = None
        self.timings = {}

    def host_voxels(self) -> np.ndarray:
        """float32, C-ordered, x fastest (downloaded once for a GPU array)."""
        if self._host is None:
            self._host = self.image.to_host() if isinstance(self.image, DeviceImage) else self.image.data
        return self._host

    def noise_model(self) -> _core.NoiseModel:
        """The image's noise model: a GPU array that stays on the GPU is read there (not copied)."""
        image = self.image
        if self.on_gpu:
            return _core.estimate_noise_model_cuda(image.pointer(image.data), image.dims, image.stream, image.ordinal)
        return _core.estimate_noise_model(self.host_voxels(), image.dims)

    def auto(self, host_call, device_call):
        """An automatic value: of a GPU array that stays on the GPU, from a sample gathered there
        (the same value as from a host copy); else from the host voxels."""
        image = self.image
        if self.on_gpu:
            return device_call(image.pointer(image.data), image.stream, image.ordinal)
        return host_call(self.host_voxels())

    def timed(self, stage: str, f):
        start = time.perf_counter()
        result = f()
        self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - start
        return result

    def automatic(self, name: str, f):
        """f() timed as the stage "auto"; the library's errors (worded for the command line, as
        "--h auto: ...") name the keyword that asked for the automatic value."""
        try:
            return self.timed("auto", f)
        except ValueError as e:
            message = re.sub(r"^--[a-z-]+ auto: ", "", str(e))
            raise ValueError(f"{name}='auto': {message}") from None

    def filter(self, host_call, device_call, out):
        """Runs the filter where it belongs and returns (result, FilterRun as a dict)."""
        image = self.image
        if self.on_gpu:
            target = image.output(out)
            run = self.timed("filter", lambda: device_call(image.pointer(image.data), image.pointer(target),
                                                           image.stream, image.ordinal))
            return image.result(target, out), run
        if isinstance(image, HostImage):
            target = image.output(out)
            run = self.timed("filter", lambda: host_call(image.voxels, target))
            return image.result(target, out), run
        # A GPU array filtered on the CPU: down, filter, up.
        host_out = np.empty(image.data.shape, dtype=np.float32)
        run = self.timed("filter", lambda: host_call(self.host_voxels(), host_out))
        result = image.from_host(host_out)
        if out is None:
            return image.result(result, None), run
        view = image.output(out)
        if image.kind == "cupy":
            view[...] = result
        else:
            view.copy_(result)
        return out, run

    def info(self, run: dict, parameters: dict, choice: Optional[dict]) -> dict:
        return {**run, "parameters": parameters, "auto": choice, "timings_s": dict(self.timings)}


def nlm(
    image,
    h: Union[float, str] = "auto",
    *,
    search_radius: int = 5,
    patch_radius: int = 1,
    noise_sigma: Union[float, str] = 0.0,
    patch_kernel: str = "uniform",
    patch_sigma: float = 1.0,
    distance: str = "l2",
    centre_weight: str = "formula",
    algorithm: str = "auto",
    strength: float = 1.0,
    noise_model: Optional[_core.NoiseModel] = None,
    device: str = "auto",
    threads: int = 0,
    out=None,
    stream=None,
    return_info: bool = False,
):
    """Non-local means denoising of a 2D image or 3D volume.

    out(p) = sum_q w(p,q) u(q) / sum_q w(p,q) over the search window, with
    w(p,q) = exp(-max(d2(p,q) - 2 noise_sigma^2, 0) / h^2) and d2 the mean squared difference of the
    patches around p and q (mirror border). docs/filters.md has the exact definition.

    Parameters
    ----------
    image : numpy array, CuPy array, torch tensor (CPU or CUDA), or any CUDA array
        2D (y, x) or 3D (z, y, x) in C order, or the reverse in Fortran order; float32, float64,
        int16, uint16 or uint8, in image units (HU for CT). A GPU array is filtered where it is,
        on the current stream, without copies when it is contiguous float32.
    h : float or "auto"
        Filtering strength in image units (HU), > 0. "auto" (default) picks the h of least
        estimated error for this image's noise (SURE, docs/parameters.md), times `strength`.
    search_radius, patch_radius : int
        Half-widths in voxels of the search window (default 5: 11^dim) and the patch (default 1: 3^dim).
    noise_sigma : float or "auto"
        Bias term: 2 noise_sigma^2 is subtracted from patch distances (image units; default 0, none).
    patch_kernel : "uniform" or "gaussian";  patch_sigma : float, voxels (gaussian only).
    distance : "l2" or "l1" (Zhang et al.'s weighted L1 distance).
    centre_weight : "formula" (w(p,p) = 1) or "max" (the largest weight of the other voxels).
    algorithm : "auto", or a variant: "displacement", "blockwise" (CPU, approximate), "naive",
        "tiled", "zslide", "rowwise", "fused" (CUDA).
    strength : float
        Multiplies the automatic h: > 1 smooths more, < 1 less (ignored with a numeric h).
    noise_model : NoiseModel, optional
        The noise to choose h for (e.g. measured on a water phantom); default: estimated from the image.
    device : "auto", "cpu" or "cuda"
        "auto": where the image is (a GPU array on its GPU; a host array on the GPU when there is one).
    threads : int
        CPU threads, 0 = all.
    out : array, optional
        float32 array of the image's shape, kind and memory order to write into (not the image).
    stream : optional
        GPU arrays: the CUDA stream to queue on (int, CuPy or torch stream); default the current one.
    return_info : bool
        Also return a dict: the variant, device, parameters used, what "auto" chose, timings.

    Returns
    -------
    The denoised image, float32, as the caller's array type, shape and order (`out` when given);
    with return_info, (image, info).

    Raises ValueError for bad parameters, NotImplementedError for what this build or device cannot
    do, MemoryError, ctdenoise.CudaError, and KeyboardInterrupt when Ctrl-C stops a CPU filter.
    """
    run = _Run(image, device, stream)
    params = _core.NlmParams()
    params.search_radius = int(search_radius)
    params.patch_radius = int(patch_radius)
    params.patch_kernel = _choice("patch_kernel", patch_kernel, _core.PatchKernel)
    params.patch_sigma = float(patch_sigma)
    params.distance = _choice("distance", distance, _core.PatchDistance)
    params.centre_weight = _choice("centre_weight", centre_weight, _core.CentreWeight)
    params.algorithm = algorithm
    dims = run.image.dims
    auto_h = isinstance(h, str)
    if auto_h and h != "auto":
        raise ValueError(f"h must be a number > 0 or 'auto'; got {h!r}")
    if isinstance(noise_sigma, str) and noise_sigma != "auto":
        raise ValueError(f"noise_sigma must be a number >= 0 or 'auto'; got {noise_sigma!r}")
    params.h = 1.0 if auto_h else float(h)  # validated with the rest before any long work
    params.noise_sigma = 0.0 if isinstance(noise_sigma, str) else float(noise_sigma)
    _core.validate_nlm(params)
    if noise_sigma == "auto":
        if noise_model is None:
            noise_model = run.automatic("noise_sigma", run.noise_model)
        params.noise_sigma = _core.auto_nlm_noise_sigma(noise_model, params, dims)
    choice = None
    if auto_h:
        choice = run.automatic("h", lambda: run.auto(
            lambda voxels: _core.auto_nlm_h(voxels, dims, params, noise_model, run.auto_device, int(threads),
                                            float(strength)),
            lambda src, s, ordinal: _core.auto_nlm_h_cuda(src, dims, params, noise_model, int(threads),
                                                          float(strength), s, ordinal)))
        params.h = choice["value"]
    result, filter_run = run.filter(
        lambda src, dst: _core.nlm_host(src, dst, dims, params, run.device, int(threads)),
        lambda src, dst, s, ordinal: _core.nlm_cuda(src, dst, dims, params, s, ordinal),
        out,
    )
    if not return_info:
        return result
    parameters = {"h": params.h, "noise_sigma": params.noise_sigma, "search_radius": params.search_radius,
                  "patch_radius": params.patch_radius, "patch_kernel": patch_kernel, "distance": distance,
                  "centre_weight": centre_weight, "strength": float(strength) if auto_h else None}
    return result, run.info(filter_run, parameters, choice)


def bilateral(
    image,
    sigma_range: Union[float, str] = "auto",
    sigma_spatial: float = 1.0,
    *,
    spacing: Optional[Sequence[float]] = None,
    radius: Union[None, int, Sequence[int]] = None,
    algorithm: str = "auto",
    accuracy_db: float = 50.0,
    terms: int = 0,
    gaussian: str = "direct",
    value_range: Optional[Tuple[float, float]] = None,
    strength: float = 1.0,
    noise_model: Optional[_core.NoiseModel] = None,
    device: str = "auto",
    threads: int = 0,
    out=None,
    stream=None,
    return_info: bool = False,
):
    """Bilateral filter of a 2D image or 3D volume.

    out(p) = sum_q gs(p-q) gr(u(p)-u(q)) u(q) / sum_q gs(p-q) gr(u(p)-u(q)) over the window, with
    Gaussian gs (sigma_spatial) and gr (sigma_range), mirror border (docs/filters.md).

    Parameters
    ----------
    image : as for nlm.
    sigma_range : float or "auto"
        Range sigma in image units (HU), > 0; "auto" (default): the value of least estimated error
        for this image's noise, times `strength`.
    sigma_spatial : float
        Spatial sigma, > 0: in voxels (default 1), or in the units of `spacing` (mm) when given.
    spacing : sequence of float, optional
        Voxel spacing per array axis (mm); then sigma_spatial is in mm and anisotropic voxels are
        weighted by their true distance.
    radius : int or sequence of int (per array axis), optional
        Window half-width in voxels; default ceil(3 sigma_spatial / spacing) per axis.
    algorithm : "auto", "direct" (CPU), "naive", "tiled", "fused" (CUDA), or "compressive"
        (approximate, CPU and CUDA: Sugimoto & Kamata's cosine series).
    accuracy_db, terms, gaussian : the compressive filter's accuracy (PSNR against the exact filter,
        default 50 dB), fixed number of cosine terms (0: from accuracy_db), and "direct" or
        "recursive" Gaussian filters.
    value_range : (min, max), optional
        GPU compressive filter: the image's value range, so that the call need not measure it and
        wait for the stream.
    strength, noise_model, device, threads, out, stream, return_info : as for nlm.

    Returns the filtered image (float32, the caller's array type), or (image, info).
    """
    run = _Run(image, device, stream)
    img = run.image
    params = _core.BilateralParams()
    params.sigma_spatial = float(sigma_spatial)
    if spacing is not None:
        params.in_mm = True
        params.spacing = tuple(float(s) for s in img.xyz(spacing))
    if radius is not None:
        per_axis = (radius,) * len(img.shape) if np.isscalar(radius) else radius
        params.radius = tuple(int(r) for r in img.xyz(per_axis))
    params.algorithm = algorithm
    params.accuracy_db = float(accuracy_db)
    params.terms = int(terms)
    params.gaussian = _choice("gaussian", gaussian, _core.Gaussian)
    auto_range = isinstance(sigma_range, str)
    if auto_range and sigma_range != "auto":
        raise ValueError(f"sigma_range must be a number > 0 or 'auto'; got {sigma_range!r}")
    params.sigma_range = 1.0 if auto_range else float(sigma_range)
    _core.validate_bilateral(params)
    dims = img.dims
    choice = None
    if auto_range:
        choice = run.automatic("sigma_range", lambda: run.auto(
            lambda voxels: _core.auto_bilateral_sigma_range(voxels, dims, params, noise_model, run.auto_device,
                                                            int(threads), float(strength)),
            lambda src, s, ordinal: _core.auto_bilateral_sigma_range_cuda(src, dims, params, noise_model,
                                                                          int(threads), float(strength), s, ordinal)))
        params.sigma_range = choice["value"]
    span = None if value_range is None else (float(value_range[0]), float(value_range[1]))
    result, filter_run = run.filter(
        lambda src, dst: _core.bilateral_host(src, dst, dims, params, run.device, int(threads)),
        lambda src, dst, s, ordinal: _core.bilateral_cuda(src, dst, dims, params, s, ordinal, span),
        out,
    )
    if not return_info:
        return result
    parameters = {"sigma_range": params.sigma_range, "sigma_spatial": params.sigma_spatial,
                  "spatial_unit": "mm" if params.in_mm else "voxel", "radius_xyz": params.radius,
                  "strength": float(strength) if auto_range else None}
    return result, run.info(filter_run, parameters, choice)


def estimate_noise(image) -> _core.NoiseModel:
    """The image's noise model: sigma (image units), the covariance at small lags and how it was
    measured (flat 8 x 8 blocks, second differences; docs/parameters.md). `.sigma` is the noise
    standard deviation; `.pseudo_residual_sigma` the white-noise estimate from neighbour
    differences. GPU arrays are read on their GPU (only what the model is made of is copied
    back; the same model as from a host copy)."""
    return _Run(image, "auto", None).noise_model()
