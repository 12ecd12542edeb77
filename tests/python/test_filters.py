"""The Python API on the host: against the naive double references, across dtypes, memory orders
and the out argument, and its errors."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ctdenoise
import reference
from conftest import structured

# float32 against double: sums of a few hundred terms of values up to ~200.
ATOL = 2e-3


@pytest.mark.parametrize("shape", [(23, 17), (7, 9, 11), (5, 4, 3), (1, 6)])
@pytest.mark.parametrize("radii", [(2, 1), (1, 2)])
def test_nlm_matches_the_double_reference(rng, shape, radii):
    image = structured(rng, shape)
    search, patch = radii
    got = ctdenoise.nlm(image, h=25.0, search_radius=search, patch_radius=patch, noise_sigma=5.0, device="cpu")
    want = reference.nlm(image, 25.0, search, patch, noise_sigma=5.0)
    assert got.dtype == np.float32 and got.shape == image.shape
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)
    assert np.abs(got - image).max() > 1.0  # it did filter


def test_nlm_of_one_voxel_is_the_voxel():
    image = np.array([[37.5]], dtype=np.float32)
    assert ctdenoise.nlm(image, h=10.0, device="cpu")[0, 0] == np.float32(37.5)


@pytest.mark.parametrize("shape,spacing", [((21, 19), None), ((6, 13, 10), None), ((6, 13, 10), (2.5, 0.7, 0.9))])
def test_bilateral_matches_the_double_reference(rng, shape, spacing):
    image = structured(rng, shape)
    radius = (2,) * len(shape) if spacing is None else (1, 3, 3)
    got = ctdenoise.bilateral(image, sigma_range=30.0, sigma_spatial=1.3, spacing=spacing, radius=radius, device="cpu")
    want = reference.bilateral(image, 1.3, 30.0, radius, spacing)
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)


def test_bilateral_default_radius_follows_the_spacing(rng):
    image = structured(rng, (5, 12, 14))
    got, info = ctdenoise.bilateral(image, sigma_range=40.0, sigma_spatial=1.0, spacing=(3.0, 0.8, 0.8),
                                    device="cpu", return_info=True)
    # ceil(3 sigma / spacing): x, y 4 voxels, z 1 voxel; reported as (x, y, z)
    want = reference.bilateral(image, 1.0, 40.0, (1, 4, 4), (3.0, 0.8, 0.8))
    np.testing.assert_allclose(got, want, atol=ATOL, rtol=0)
    assert info["parameters"]["spatial_unit"] == "mm"


@pytest.mark.parametrize("dtype", ["int16", "uint16", "uint8", "float64"])
def test_integer_and_double_input_equal_their_float32_values(rng, dtype):
    image = np.clip(structured(rng, (9, 14, 12)) + 100, 0, 255).astype(dtype)
    got = ctdenoise.nlm(image, h=20.0, search_radius=2, device="cpu")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, ctdenoise.nlm(image.astype(np.float32), h=20.0, search_radius=2, device="cpu"))


@pytest.mark.parametrize("order", ["C", "F"])
def test_int16_goes_to_the_library_as_int16_with_the_float32_result(rng, order):
    image = np.asarray(np.round(structured(rng, (9, 14, 12)) * 10), dtype=np.int16, order=order)
    image = image if order == "C" else np.asfortranarray(image.T)
    device = "cuda" if ctdenoise.cuda_available() else "cpu"
    for filter_call in (lambda a: ctdenoise.nlm(a, h=200.0, search_radius=2, device=device, return_info=True),
                        lambda a: ctdenoise.bilateral(a, sigma_range=300.0, device=device, return_info=True)):
        got, info = filter_call(image)
        want, want_info = filter_call(image.astype(np.float32))
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
        if device == "cuda":
            assert info["details"]["upload_bytes"] == image.size * 2
            assert want_info["details"]["upload_bytes"] == image.size * 4


def test_fortran_order_is_the_same_volume_with_axes_reversed(rng):
    c_order = structured(rng, (8, 11, 13))
    f_order = np.asfortranarray(c_order.T)  # shape (x, y, z), x still fastest in memory
    got = ctdenoise.bilateral(f_order, sigma_range=30.0, spacing=(0.7, 0.9, 2.5), device="cpu")
    want = ctdenoise.bilateral(c_order, sigma_range=30.0, spacing=(2.5, 0.9, 0.7), device="cpu")
    assert got.flags.f_contiguous and got.shape == f_order.shape
    np.testing.assert_array_equal(got, want.T)


def test_non_contiguous_input_is_copied(rng):
    image = structured(rng, (9, 30, 14))
    view = image[:, ::2, :]
    np.testing.assert_array_equal(ctdenoise.nlm(view, h=20.0, search_radius=2, device="cpu"),
                                  ctdenoise.nlm(np.ascontiguousarray(view), h=20.0, search_radius=2, device="cpu"))


def test_out_is_written_and_returned(rng):
    image = structured(rng, (6, 10, 12))
    out = np.full(image.shape, np.nan, dtype=np.float32)
    returned = ctdenoise.nlm(image, h=20.0, search_radius=2, device="cpu", out=out)
    assert returned is out
    np.testing.assert_array_equal(out, ctdenoise.nlm(image, h=20.0, search_radius=2, device="cpu"))
    with pytest.raises(ValueError, match="share memory"):
        ctdenoise.nlm(image, h=20.0, device="cpu", out=image)
    with pytest.raises(ValueError, match="float32 of shape"):
        ctdenoise.nlm(image, h=20.0, device="cpu", out=np.empty(image.shape, np.float64))


def test_automatic_h_is_reported_and_strength_scales_it(rng):
    image = structured(rng, (48, 52), noise=20.0)
    _, info = ctdenoise.nlm(image, search_radius=3, device="cpu", return_info=True)
    auto = info["auto"]
    assert info["parameters"]["h"] == pytest.approx(auto["value"], rel=1e-6)
    assert auto["noise"].sigma == pytest.approx(20.0, rel=0.15)
    assert min(v for v, _ in auto["curve"]) <= auto["optimum"] <= max(v for v, _ in auto["curve"])
    assert auto["noise_over_image"] == "one level"
    _, stronger = ctdenoise.nlm(image, search_radius=3, strength=1.5, device="cpu", return_info=True)
    assert stronger["parameters"]["h"] == pytest.approx(1.5 * auto["optimum"], rel=1e-5)
    assert set(info["timings_s"]) == {"auto", "filter"}


@pytest.mark.parametrize("shape", [(8, 8), (200, 3), (3, 200), (2, 16, 16), (16, 16, 2), (3, 17, 5), (40, 4, 4)])
def test_automatic_values_on_odd_images_are_finite_or_refused(rng, shape):
    # Thin, tiny and flat images, steps, extreme scales and coarse quantisation: each filter either
    # gives a finite output with a finite value > 0, or refuses with a ValueError naming its keyword.
    contents = {
        "white": 30 * rng.standard_normal(shape),
        "air and tissue": np.where(rng.random(shape) < 0.3, -1000, 40) + 20 * rng.standard_normal(shape),
        "step": 1000.0 * (np.indices(shape)[-1] > shape[-1] // 2),
        "huge": 1e30 * rng.standard_normal(shape),
        "tiny": 1e-30 * rng.standard_normal(shape),
        "quantised": np.round(0.4 * rng.standard_normal(shape)),
    }
    for name, values in contents.items():
        image = values.astype(np.float32)
        for keyword, call in (("h", lambda: ctdenoise.nlm(image, device="cpu", return_info=True)),
                              ("sigma_range", lambda: ctdenoise.bilateral(image, sigma_spatial=1.0, device="cpu", return_info=True))):
            try:
                out, info = call()
            except ValueError as error:
                assert f"{keyword}='auto'" in str(error), (name, keyword, str(error))
                continue
            value = info["parameters"][keyword]
            assert np.isfinite(value) and value > 0, (name, keyword, value)
            assert np.isfinite(out).all(), (name, keyword, value)


def test_automatic_values_follow_the_image_scale(rng):
    # Both filters are equivariant to scale (f(s y; s v) = s f(y; v)), so their automatic values are
    # too: HU, attenuation per mm and counts get the same smoothing.
    image = structured(rng, (48, 52), noise=20.0)
    h = ctdenoise.nlm(image, search_radius=3, device="cpu", return_info=True)[1]["parameters"]["h"]
    sr = ctdenoise.bilateral(image, sigma_spatial=1.0, device="cpu", return_info=True)[1]["parameters"]["sigma_range"]
    for scale in (2e-5, 1e3):
        scaled = (scale * image).astype(np.float32)
        _, info = ctdenoise.nlm(scaled, search_radius=3, device="cpu", return_info=True)
        assert info["parameters"]["h"] == pytest.approx(scale * h, rel=0.03)
        _, info = ctdenoise.bilateral(scaled, sigma_spatial=1.0, device="cpu", return_info=True)
        assert info["parameters"]["sigma_range"] == pytest.approx(scale * sr, rel=0.03)


def test_noise_sigma_auto_and_a_given_noise_model(rng):
    image = structured(rng, (40, 44), noise=12.0)
    model = ctdenoise.estimate_noise(image)
    assert model.sigma == pytest.approx(12.0, rel=0.15)
    assert model.unconfirmed_smooth_sigma == 0 and model.unconfirmed_smooth_width == 0
    _, info = ctdenoise.nlm(image, h=15.0, noise_sigma="auto", noise_model=model, device="cpu", return_info=True)
    assert info["parameters"]["noise_sigma"] > 0
    assert info["auto"] is None


def test_a_noise_model_from_noise_alone_serves_a_padded_image(rng):
    # The choice leaves out the image's own padding, not the model's (noise alone has none): with
    # the padding read as noise-free voxels, h fell to 0.64 x.
    image = structured(rng, (96, 104), noise=25.0)
    image[:, :24] = -3024.0
    noise_alone = rng.normal(0, 25, (96, 104)).astype(np.float32)
    model = ctdenoise.estimate_noise(noise_alone)
    assert np.isnan(model.excluded_value)
    _, own = ctdenoise.nlm(image, search_radius=3, device="cpu", return_info=True)
    _, given = ctdenoise.nlm(image, search_radius=3, noise_model=model, device="cpu", return_info=True)
    assert own["auto"]["noise"].excluded_value == -3024.0
    assert given["parameters"]["h"] == pytest.approx(own["parameters"]["h"], rel=0.1)


def test_air_clipped_at_its_lowest_value_is_reported_and_padding_is_not(rng):
    # Air at -1000 HU with noise of 30, stored clipped at -1024 (about a fifth of it), in a field
    # of view padded with -3024.
    image = np.full((96, 112), -1000.0, np.float32) + rng.normal(0, 30, (96, 112)).astype(np.float32)
    image[30:70, 30:80] += 1040.0
    image = np.maximum(image, -1024.0)
    image[:, :12] = -3024.0
    model = ctdenoise.estimate_noise(image)
    assert model.clipped_value == -1024.0
    assert model.excluded_value == -3024.0
    unclipped = image.copy()
    unclipped[unclipped == -1024.0] = -1030.0 + rng.normal(0, 5, int((unclipped == -1024.0).sum()))
    assert np.isnan(ctdenoise.estimate_noise(unclipped).clipped_value)


def test_bad_input_gives_clear_errors(rng):
    image = structured(rng, (10, 12))
    with pytest.raises(ValueError, match="2D images and 3D volumes"):
        ctdenoise.nlm(np.ones(10, np.float32), h=1.0)
    with pytest.raises(TypeError, match="int32"):
        ctdenoise.nlm(image.astype(np.int32), h=1.0)
    with pytest.raises(ValueError, match="h must be"):
        ctdenoise.nlm(image, h=-1.0)
    with pytest.raises(ValueError, match="h must be"):
        ctdenoise.nlm(image, h="strong")
    with pytest.raises(ValueError, match="patch_kernel"):
        ctdenoise.nlm(image, h=1.0, patch_kernel="box")
    with pytest.raises(ValueError, match="NLM algorithm"):
        ctdenoise.nlm(image, h=1.0, algorithm="fastest")
    with pytest.raises(NotImplementedError, match="CUDA"):
        ctdenoise.nlm(image, h=1.0, algorithm="fused", device="cpu")
    with pytest.raises(ValueError, match="device"):
        ctdenoise.bilateral(image, 10.0, device="gpu")
    with pytest.raises(ValueError, match="one value per array axis"):
        ctdenoise.bilateral(image, 10.0, spacing=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="sigma_spatial"):
        ctdenoise.bilateral(image, 10.0, sigma_spatial=0.0)
    with pytest.raises(ValueError, match="no voxels"):
        ctdenoise.nlm(np.ones((0, 4), np.float32), h=1.0)
    # The automatic values' errors name the keyword that asked for them
    with pytest.raises(ValueError, match=r"^h='auto': the image shows no noise"):
        ctdenoise.nlm(np.full((3, 20, 20), 100, np.float32))
    with pytest.raises(ValueError, match=r"^sigma_range='auto': too few usable voxels"):
        ctdenoise.bilateral(np.ones((1, 1), np.float32), sigma_spatial=1.0)
    with pytest.raises(ValueError, match=r"^noise_sigma='auto': too few usable voxels"):
        ctdenoise.nlm(np.ones((1, 1), np.float32), h=5.0, noise_sigma="auto")
    # NaN voxels, with the automatic strength too (whose noise model reads the image first)
    holed = rng.normal(0, 20, (3, 40, 40)).astype(np.float32)
    holed[1, 2, 3] = np.nan
    for call in (lambda: ctdenoise.nlm(holed), lambda: ctdenoise.bilateral(holed, sigma_spatial=1.0)):
        with pytest.raises(ValueError, match=r"1 NaN or infinite voxel\(s\), the first at \(x=3, y=2, z=1\)"):
            call()


@pytest.mark.skipif(ctdenoise.cuda_available(), reason="a CUDA device is present")
def test_cuda_asked_for_without_a_device():
    with pytest.raises((NotImplementedError, ctdenoise.CudaError)):
        ctdenoise.nlm(np.ones((8, 8), np.float32), h=1.0, device="cuda")


def test_the_gil_is_released_while_filtering(rng):
    image = structured(rng, (40, 64, 64))
    ticks = []
    done = threading.Event()

    def filter_in_background():
        ctdenoise.nlm(image, h=20.0, search_radius=3, device="cpu", threads=1)
        done.set()

    worker = threading.Thread(target=filter_in_background)
    worker.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    assert len(ticks) > 20, "the main thread could not run while the filter ran"


def test_ctrl_c_stops_a_long_filter():
    script = textwrap.dedent("""
        import signal, sys, time, numpy as np, ctdenoise
        # Python's own Ctrl-C handler, also where SIGINT was ignored by whoever started this
        # (a background job of a non-interactive shell ignores it, and Python then keeps it so).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        image = np.random.default_rng(1).normal(0, 20, (64, 256, 256)).astype(np.float32)
        print("start", flush=True)
        start = time.perf_counter()
        try:
            ctdenoise.nlm(image, h=20.0, search_radius=6, patch_radius=2, device="cpu")
        except KeyboardInterrupt:
            print(f"interrupted after {time.perf_counter() - start:.2f} s", flush=True)
            sys.exit(3)
        sys.exit(0)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout.readline().strip() == "start"
    time.sleep(1.0)
    sent = time.perf_counter()
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 3, output
    assert time.perf_counter() - sent < 10, "Ctrl-C took too long to stop the filter"


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.environ.get("CTDENOISE_CLI", os.path.join(REPO, "build", "ctdenoise"))


@pytest.mark.skipif(not (os.path.exists(CLI) and ctdenoise._core.has_io), reason="no ctdenoise CLI built")
@pytest.mark.parametrize("command,python_call", [
    (["nlm", "--h", "auto", "--search-radius", "3"], lambda a: ctdenoise.nlm(a, search_radius=3, device="cpu",
                                                                             return_info=True)),
    (["nlm", "--h", "22", "--noise-sigma", "auto"], lambda a: ctdenoise.nlm(a, h=22.0, noise_sigma="auto",
                                                                            device="cpu", return_info=True)),
    (["bilateral", "--sigma-spatial", "1.5", "--sigma-range", "auto"],
     lambda a: ctdenoise.bilateral(a, sigma_spatial=1.5, device="cpu", return_info=True)),
])
def test_same_voxels_and_parameters_as_the_cli(tmp_path, rng, command, python_call):
    import json

    image = structured(rng, (7, 45, 38), noise=18.0)
    raw, out, report = tmp_path / "in.raw", tmp_path / "out.nrrd", tmp_path / "report.json"
    image.tofile(raw)
    subprocess.run([CLI, *command, "--raw-dims", "38,45,7", "--raw-type", "float32", "--device", "cpu", "--float",
                    "-q", "--json", str(report), str(raw), str(out)], check=True)
    got, info = python_call(image)
    np.testing.assert_array_equal(got, ctdenoise.read(out)[0])
    cli_parameters = json.loads(report.read_text())["parameters"]
    for name in ("h", "noise_sigma", "sigma_range"):
        if name in cli_parameters:
            assert info["parameters"][name] == pytest.approx(cli_parameters[name], rel=1e-6)


def test_torch_cpu_tensors_come_back_as_tensors(rng):
    torch = pytest.importorskip("torch")
    image = structured(rng, (6, 20, 18))
    tensor = torch.from_numpy(image).requires_grad_(True)
    got = ctdenoise.bilateral(tensor, sigma_range=30.0, device="cpu")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), ctdenoise.bilateral(image, sigma_range=30.0, device="cpu"))


def test_new_outputs_are_zeroed_writable_arrays_that_outlive_their_call():
    # Outputs the filters allocate come from the C++ side (huge pages, touched on all cores).
    from ctdenoise import _core

    for shape in ([3, 4, 5], [7, 9], [1, 1, 1]):
        a = _core.empty_output(shape)
        assert a.shape == tuple(shape) and a.dtype == np.float32
        assert a.flags.c_contiguous and a.flags.writeable
        assert not a.any()
        a[...] = 2.5
        assert float(a.sum()) == 2.5 * a.size
    with pytest.raises(ValueError):
        _core.empty_output([4])
    image = structured(np.random.default_rng(5), (9, 11, 13))
    first = ctdenoise.bilateral(image, sigma_range=40, device="cpu")
    again = np.empty_like(image)
    ctdenoise.bilateral(image, sigma_range=40, device="cpu", out=again)
    del image
    np.testing.assert_array_equal(first, again)
