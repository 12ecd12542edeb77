"""read and write through the C++ I/O: round trips, metadata, DICOM derived series, errors."""

import os
import pathlib

import numpy as np
import pytest

import ctdenoise
from conftest import structured

pytestmark = pytest.mark.skipif(not ctdenoise._core.has_io, reason="this build has no file I/O")

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = pathlib.Path(os.environ.get("CTD_TEST_DATA_DIR", REPO.parent / "shared" / "data"))
SERIES = DATA / "dicom_series_siemens_biograph_mct_20slices" / "uncompressed_derived"


def test_demo_volume_reads_as_z_y_x_with_its_geometry():
    array, metadata = ctdenoise.read(REPO / "data" / "example_ct.nii.gz")
    nx, ny, nz = metadata.dims_xyz
    assert array.shape == (nz, ny, nx) and array.dtype == np.float32 and array.flags.c_contiguous
    assert metadata.format == "NIfTI"
    assert metadata.spacing == tuple(reversed(metadata.spacing_xyz))
    assert array.std() > 10  # a CT, not zeros


@pytest.mark.parametrize("suffix", [".nii.gz", ".nrrd", ".mha"])
def test_round_trip_keeps_voxels_geometry_and_pixel_type(tmp_path, rng, suffix):
    array, metadata = ctdenoise.read(REPO / "data" / "example_ct.nii.gz")
    denoised = ctdenoise.nlm(array, h=20.0, search_radius=2, device="cpu")
    path = tmp_path / f"out{suffix}"
    written = ctdenoise.write(path, denoised, metadata)
    assert written["pixel_type"] == metadata.pixel_type
    back, back_metadata = ctdenoise.read(path)
    assert back_metadata.pixel_type == metadata.pixel_type
    np.testing.assert_allclose(back_metadata.spacing_xyz, metadata.spacing_xyz)
    np.testing.assert_allclose(back_metadata.origin_xyz, metadata.origin_xyz, atol=1e-4)
    if metadata.pixel_type.startswith("int"):
        np.testing.assert_array_equal(back, np.round(denoised))
    else:
        np.testing.assert_array_equal(back, denoised)


def test_write_without_metadata_keeps_the_arrays_dtype(tmp_path, rng):
    image = np.round(structured(rng, (5, 7, 9))).astype(np.int16)
    ctdenoise.write(tmp_path / "a.nrrd", image)
    back, metadata = ctdenoise.read(tmp_path / "a.nrrd")
    assert metadata.pixel_type == "int16"
    np.testing.assert_array_equal(back, image.astype(np.float32))
    fortran = np.asfortranarray(image.T)  # (x, y, z): the same volume
    ctdenoise.write(tmp_path / "b.nrrd", fortran)
    np.testing.assert_array_equal(ctdenoise.read(tmp_path / "b.nrrd")[0], back)


@pytest.mark.parametrize("suffix", [".nrrd", ".mha"])
def test_compressed_nrrd_and_metaimage_read_back_as_written(tmp_path, rng, suffix):
    image = np.round(structured(rng, (9, 11, 13)) * 40).astype(np.int16)  # also values beyond +-1000
    written = ctdenoise.write(tmp_path / f"c{suffix}", image, compress=True)
    assert "compress" in written["stages_s"]
    header = (tmp_path / f"c{suffix}").read_bytes()[:400]
    assert (b"encoding: gzip" if suffix == ".nrrd" else b"CompressedData = True") in header
    np.testing.assert_array_equal(ctdenoise.read(tmp_path / f"c{suffix}")[0], image.astype(np.float32))
    with pytest.raises(Exception, match="compressed output"):
        ctdenoise.write(tmp_path / "c.nii", image, compress=True)


def test_existing_outputs_are_kept_unless_overwrite(tmp_path, rng):
    image = structured(rng, (4, 6, 8))
    path = tmp_path / "x.nii"
    ctdenoise.write(path, image)
    before = path.read_bytes()
    with pytest.raises(OSError, match="exists"):
        ctdenoise.write(path, image + 1)
    assert path.read_bytes() == before
    ctdenoise.write(path, image + 1, overwrite=True)
    np.testing.assert_array_equal(ctdenoise.read(path)[0], image + 1)


def test_a_folder_name_with_a_trailing_slash_is_a_dicom_series(tmp_path, rng):
    image = np.round(structured(rng, (3, 16, 16))).astype(np.int16)
    ctdenoise.write(str(tmp_path / "series") + "/", image)
    assert len(list((tmp_path / "series").iterdir())) == 3
    back, metadata = ctdenoise.read(tmp_path / "series")
    assert metadata.format == "DICOM series"
    np.testing.assert_array_equal(back, image.astype(np.float32))


def test_raw_input(tmp_path, rng):
    image = np.round(structured(rng, (3, 5, 7))).astype(">i2")  # big-endian int16
    path = tmp_path / "v.raw"
    image.tofile(path)
    back, _ = ctdenoise.read(path, raw_dims_xyz=(7, 5, 3), raw_dtype="int16", raw_byte_order="big")
    np.testing.assert_array_equal(back, image.astype(np.float32))


def test_unreadable_inputs_are_os_errors(tmp_path):
    with pytest.raises(OSError):
        ctdenoise.read(tmp_path / "missing.nii.gz")
    (tmp_path / "broken.nii.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(OSError):
        ctdenoise.read(tmp_path / "broken.nii.gz")
    with pytest.raises(NotImplementedError):
        ctdenoise.write(tmp_path / "x.jpeg", np.ones((4, 4), np.float32))


@pytest.mark.skipif(not SERIES.is_dir(), reason="../shared/data is not here")
def test_dicom_series_becomes_a_derived_series(tmp_path):
    array, metadata = ctdenoise.read(SERIES)
    assert metadata.format == "DICOM series" and array.ndim == 3 and metadata.attributes.get("Modality") == "CT"
    denoised = ctdenoise.nlm(array, h=20.0, search_radius=2, device="cpu")
    out = tmp_path / "denoised"
    written = ctdenoise.write(out, denoised, metadata, description="ctdenoise test")
    assert written["files"] == [str(out)] and len(list(out.iterdir())) == array.shape[0]
    back, back_metadata = ctdenoise.read(out)
    assert back_metadata.attributes["DerivationDescription"] == "ctdenoise test"
    assert back_metadata.attributes["ImageType"].startswith("DERIVED")
    np.testing.assert_allclose(back, np.round(denoised), atol=1.0)  # int16 storage, rescale kept
    with pytest.raises(ValueError, match="derived series keeps the slices"):
        ctdenoise.write(tmp_path / "cropped", denoised[1:], metadata)
