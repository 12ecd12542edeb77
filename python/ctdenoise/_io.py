"""read and write: medical image files through the C++ readers and writers (docs/python.md)."""

from __future__ import annotations

import os
from typing import Optional, Sequence, Tuple

import numpy as np

from . import _core
from ._arrays import HostImage, framework, is_gpu


def _require_io() -> None:
    if not _core.has_io:
        raise NotImplementedError("this build of ctdenoise has no file I/O (it was built without ITK); "
                                  "use the filters on arrays, or install with ITK (docs/python.md)")


def read(
    path: "str | os.PathLike[str]",
    *,
    raw_dims_xyz: Optional[Sequence[int]] = None,
    raw_dtype: str = "uint16",
    raw_byte_order: str = "little",
    raw_spacing_xyz: Sequence[float] = (1.0, 1.0, 1.0),
    raw_header: int = 0,
    series: str = "",
) -> Tuple[np.ndarray, "_core.Metadata"]:
    """Reads a DICOM file or series folder, NIfTI (.nii, .nii.gz), MetaImage, NRRD, TIFF, PNG or
    headerless raw file.

    Returns (array, metadata): a float32 numpy array in image units (HU for CT: DICOM rescale
    applied), C-ordered (z, y, x), or (y, x) for a single slice; and the Metadata that write()
    needs to put the result back where it came from (geometry, pixel type, DICOM attributes).

    raw_dims_xyz, raw_dtype, raw_byte_order, raw_spacing_xyz, raw_header: read `path` as
    headerless raw of these voxels (x fastest). series: a DICOM folder holding several series,
    the one to read (its UID or a prefix).
    Raises OSError (missing, unreadable, corrupt or truncated file), NotImplementedError (pixel
    type or format this build cannot read), ValueError (bad raw layout), MemoryError.
    """
    _require_io()
    dims = None if raw_dims_xyz is None else tuple(int(n) for n in raw_dims_xyz)
    if dims is not None and len(dims) != 3:
        raise ValueError(f"raw_dims_xyz takes (nx, ny, nz); got {raw_dims_xyz!r}")
    return _core.read_image(os.fspath(path), dims, raw_dtype, raw_byte_order,
                            tuple(float(s) for s in raw_spacing_xyz), int(raw_header), series)


def write(
    path: "str | os.PathLike[str]",
    array,
    metadata: Optional["_core.Metadata"] = None,
    *,
    overwrite: bool = False,
    float_output: bool = False,
    description: str = "",
    compression_level: int = 6,
    compress: bool = False,
) -> dict:
    """Writes `array` to `path`, its format from the extension (.nii, .nii.gz, .mha, .mhd, .nrrd,
    .nhdr, .tif, .png, .dcm, .raw; no extension: a DICOM series folder).

    metadata: from read(): the output keeps the input's geometry and pixel type (int16 stays
    int16, values rounded and clamped) and, for DICOM, becomes a derived series of the source.
    Without it, the array's own dtype and unit spacing are written. The array may be numpy,
    CuPy or torch (copied to the host), C-ordered (z, y, x) or Fortran-ordered (x, y, z).

    overwrite: replace an existing output (otherwise OSError). float_output: write float32.
    description: DICOM, stored as DerivationDescription (SeriesDescription gets "[ctdenoise]").
    compression_level: .nii.gz (and compress), 1 (fastest) to 12 (smallest; .mha: at most 9).
    compress: .nrrd and .mha with compressed data (gzip members for NRRD, one zlib stream for
    MetaImage), compressed on all cores.
    The file appears whole or not at all: it is written under a temporary name, then renamed.
    Returns what was written: pixel_type, clamped_voxels, files, stages_s.
    """
    _require_io()
    if is_gpu(array):
        if framework(array) == "cupy":
            import cupy

            array = cupy.asnumpy(array)
        elif framework(array) == "torch-cuda":
            array = array.detach().cpu()
        else:  # another GPU array: through CuPy
            import cupy

            array = cupy.asnumpy(cupy.asarray(array) if hasattr(array, "__cuda_array_interface__")
                                 else cupy.from_dlpack(array))
    host = HostImage(array, framework(array))
    if metadata is None:
        metadata = _core.Metadata()
        metadata.pixel_type = host.dtype
    return _core.write_image(os.fspath(path), host.data, host.dims, metadata, bool(overwrite), bool(float_output),
                             str(description), int(compression_level), bool(compress))
