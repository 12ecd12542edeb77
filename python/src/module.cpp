// ctdenoise._core: the C++ library as the Python package sees it. Arrays arrive here already
// float32, contiguous and x-fastest (python/ctdenoise/_arrays.py does the conversions); device
// memory arrives as pointers with the caller's stream. The GIL is released while filters run,
// and their progress callback checks for Ctrl-C.

#include "bindings.hpp"

#include <ctdenoise/auto_params.hpp>
#include <ctdenoise/ctdenoise.hpp>

#include <nanobind/stl/array.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#if CTD_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <Python.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace ctdpy {

using namespace ctd;

namespace {

PyObject* g_cuda_error = nullptr;

Dims to_dims(const DimsTuple& d) { return {std::get<0>(d), std::get<1>(d), std::get<2>(d)}; }

void require_size(std::size_t size, const Dims& dims, const char* what) {
  if (std::int64_t(size) != dims.count()) {
    throw Error(ErrorKind::InvalidArgument, std::string(what) + " does not hold the voxels its dimensions say");
  }
}

// The filters call this on the calling thread as they progress; Ctrl-C stops them.
ExecContext make_context(const std::string& device, int threads) {
  ExecContext context;
  context.device = device_from_string(device);
  context.threads = threads;
  context.progress = [](double) {
    nb::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      PyErr_Clear();
      throw Error(ErrorKind::Cancelled, "interrupted");
    }
  };
  return context;
}

nb::dict run_dict(const FilterRun& run) {
  nb::dict d;
  d["device"] = std::string(to_string(run.device));
  d["algorithm"] = run.algorithm;
  d["threads"] = run.threads;
  d["details"] = run.details;
  return d;
}

nb::dict choice_dict(const AutoChoice& c) {
  nb::dict d;
  d["value"] = c.value;
  d["optimum"] = c.optimum;
  d["strength"] = c.strength;
  d["noisy_mse"] = c.noisy_mse;
  d["noise_share"] = c.noise_share;
  d["noise_over_image"] = c.noise_over_image;
  d["scan_fit"] = c.scan_fit;
  d["scan_fit_beyond_intensity"] = c.scan_fit_beyond_intensity;
  d["scan_texture_distance"] = c.scan_texture_distance;
  d["scan_source"] = c.scan_source;
  nb::list curve;
  for (const RiskPoint& p : c.curve) curve.append(nb::make_tuple(p.value, p.mse));
  d["curve"] = curve;
  d["sample"] = nb::make_tuple(c.sample.nx, c.sample.ny, c.sample.nz);
  d["seconds"] = c.seconds;
  d["noise"] = c.noise;
  return d;
}

#if CTD_HAVE_CUDA
// Makes the array's GPU current for the call and restores the caller's afterwards.
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal) {
    check(cudaGetDevice(&previous_));
    if (ordinal != previous_) check(cudaSetDevice(ordinal));
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  static void check(cudaError_t status) {
    if (status != cudaSuccess) throw Error(ErrorKind::Cuda, std::string("CUDA: ") + cudaGetErrorString(status));
  }
  int previous_ = 0;
};
#else
struct DeviceScope {
  explicit DeviceScope(int) {}
};
#endif

CudaStream as_stream(std::uintptr_t stream) { return reinterpret_cast<CudaStream>(stream); }

}  // namespace

void bind_filters(nb::module_& m) {
  nb::class_<NoiseModel>(m, "NoiseModel",
                         "The image's noise as the filters see it: standard deviation and covariance at small lags.")
      .def(nb::init<>())
      .def_ro("sigma", &NoiseModel::sigma, "Standard deviation of one voxel's noise, image units (HU for CT).")
      .def_ro("pseudo_residual_sigma", &NoiseModel::pseudo_residual_sigma,
              "The neighbour-difference (white-noise) estimate, image units.")
      .def_ro("radius_xy", &NoiseModel::radius_xy, "Lags measured in-plane, voxels.")
      .def_ro("radius_z", &NoiseModel::radius_z, "Lags measured across slices, voxels (0 for 2D).")
      .def_ro("covariance", &NoiseModel::covariance,
              "C(dx, dy, dz) in image units squared, x fastest, each lag from -radius to +radius.")
      .def_ro("samples", &NoiseModel::samples, "Second differences per lag the model rests on.")
      .def_ro("flat_blocks", &NoiseModel::flat_blocks, "8 x 8 blocks it was measured in.")
      .def_ro("excluded_value", &NoiseModel::excluded_value, "Padding value left out, or NaN.")
      .def_ro("clipped_value", &NoiseModel::clipped_value,
              "A value the image is clipped at among the noise (air stored at -1024 HU), read as a value "
              "but with no noise level read where it lies; or NaN.")
      .def_ro("fell_back_to_white", &NoiseModel::fell_back_to_white,
              "True when the measured correlation was not believed and white noise is assumed.")
      .def_ro("read_from_first_lags", &NoiseModel::read_from_first_lags,
              "True when no block was flat and the level is smooth noise fitted to the first lags (in 3D "
              "only where it changes from slice to slice as noise does; on coarse scans fine anatomy can "
              "count as noise).")
      .def_ro("unconfirmed_smooth_sigma", &NoiseModel::unconfirmed_smooth_sigma,
              "Smooth noise the model saw but could not tell from anatomy (its far lags held anatomy too, "
              "or in 3D it did not change from slice to slice), where over twice sigma: its "
              "standard deviation (else 0). If the image's noise is known to be smooth, give the noise "
              "(noise_model=) measured on noise alone.")
      .def_ro("unconfirmed_smooth_width", &NoiseModel::unconfirmed_smooth_width,
              "Its width in voxels (a Gaussian's), else 0.")
      .def("correlation", &NoiseModel::correlation, "dx"_a, "dy"_a, "dz"_a,
           "C(dx, dy, dz) / sigma^2 (0 outside the measured lags).")
      .def("__repr__", [](const NoiseModel& n) {
        return "NoiseModel(sigma=" + std::to_string(n.sigma) + ", pseudo_residual_sigma=" +
               std::to_string(n.pseudo_residual_sigma) + ", fell_back_to_white=" +
               (n.fell_back_to_white ? "True" : "False") + ")";
      });

  nb::enum_<PatchKernel>(m, "PatchKernel").value("uniform", PatchKernel::Uniform).value("gaussian", PatchKernel::Gaussian);
  nb::enum_<PatchDistance>(m, "PatchDistance").value("l2", PatchDistance::L2).value("l1", PatchDistance::L1);
  nb::enum_<CentreWeight>(m, "CentreWeight").value("formula", CentreWeight::Formula).value("max", CentreWeight::Max);
  nb::enum_<BilateralParams::Gaussian>(m, "Gaussian")
      .value("direct", BilateralParams::Gaussian::Direct)
      .value("recursive", BilateralParams::Gaussian::Recursive);

  nb::class_<NlmParams>(m, "NlmParams")
      .def(nb::init<>())
      .def_rw("search_radius", &NlmParams::search_radius)
      .def_rw("patch_radius", &NlmParams::patch_radius)
      .def_rw("h", &NlmParams::h)
      .def_rw("noise_sigma", &NlmParams::noise_sigma)
      .def_rw("patch_kernel", &NlmParams::patch_kernel)
      .def_rw("patch_sigma", &NlmParams::patch_sigma)
      .def_rw("distance", &NlmParams::distance)
      .def_rw("centre_weight", &NlmParams::centre_weight)
      .def_prop_rw(
          "algorithm", [](const NlmParams& p) { return std::string(to_string(p.algorithm)); },
          [](NlmParams& p, const std::string& name) { p.algorithm = nlm_algorithm_from_string(name); });

  nb::class_<BilateralParams>(m, "BilateralParams")
      .def(nb::init<>())
      .def_rw("sigma_spatial", &BilateralParams::sigma_spatial)
      .def_rw("sigma_range", &BilateralParams::sigma_range)
      .def_prop_rw(
          "in_mm", [](const BilateralParams& p) { return p.spatial_unit == SpatialUnit::Millimetre; },
          [](BilateralParams& p, bool mm) { p.spatial_unit = mm ? SpatialUnit::Millimetre : SpatialUnit::Voxel; })
      .def_rw("radius", &BilateralParams::radius)
      .def_rw("spacing", &BilateralParams::spacing)
      .def_rw("accuracy_db", &BilateralParams::accuracy_db)
      .def_rw("terms", &BilateralParams::terms)
      .def_rw("gaussian", &BilateralParams::gaussian)
      .def_prop_rw(
          "algorithm", [](const BilateralParams& p) { return std::string(to_string(p.algorithm)); },
          [](BilateralParams& p, const std::string& name) { p.algorithm = bilateral_algorithm_from_string(name); });

  m.def("validate_nlm", [](const NlmParams& p) { validate(p); });
  m.def("validate_bilateral", [](const BilateralParams& p) { validate(p); });

  // Host voxels as float32 or int16 (the library uploads int16 as it is); nanobind picks by dtype.
  auto nlm_host = [](auto in, HostOut out, DimsTuple dims, const NlmParams& p, const std::string& device, int threads) {
    const Dims d = to_dims(dims);
    require_size(in.size(), d, "image");
    require_size(out.size(), d, "out");
    const ExecContext context = make_context(device, threads);
    using T = std::remove_const_t<typename decltype(in)::Scalar>;
    return run_dict(without_gil([&] { return nlm(ConstVolumeView<T>{in.data(), d}, {out.data(), d}, p, context); }));
  };
  m.def("nlm_host", [=](HostIn in, HostOut out, DimsTuple dims, const NlmParams& p, const std::string& device,
                        int threads) { return nlm_host(in, out, dims, p, device, threads); });
  m.def("nlm_host", [=](HostInInt16 in, HostOut out, DimsTuple dims, const NlmParams& p, const std::string& device,
                        int threads) { return nlm_host(in, out, dims, p, device, threads); });
  m.def("nlm_cuda", [](std::uintptr_t in, std::uintptr_t out, DimsTuple dims, const NlmParams& p, std::uintptr_t stream,
                       int ordinal) {
    const Dims d = to_dims(dims);
    const DeviceScope scope(ordinal);
    return run_dict(nlm_device(reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), d, p, as_stream(stream)));
  });
  auto bilateral_host = [](auto in, HostOut out, DimsTuple dims, const BilateralParams& p, const std::string& device,
                           int threads) {
    const Dims d = to_dims(dims);
    require_size(in.size(), d, "image");
    require_size(out.size(), d, "out");
    const ExecContext context = make_context(device, threads);
    using T = std::remove_const_t<typename decltype(in)::Scalar>;
    return run_dict(without_gil([&] { return bilateral(ConstVolumeView<T>{in.data(), d}, {out.data(), d}, p, context); }));
  };
  m.def("bilateral_host", [=](HostIn in, HostOut out, DimsTuple dims, const BilateralParams& p, const std::string& device,
                              int threads) { return bilateral_host(in, out, dims, p, device, threads); });
  m.def("bilateral_host", [=](HostInInt16 in, HostOut out, DimsTuple dims, const BilateralParams& p,
                              const std::string& device, int threads) { return bilateral_host(in, out, dims, p, device, threads); });
  m.def("bilateral_cuda", [](std::uintptr_t in, std::uintptr_t out, DimsTuple dims, const BilateralParams& p,
                             std::uintptr_t stream, int ordinal, std::optional<std::pair<float, float>> value_range) {
    const Dims d = to_dims(dims);
    const DeviceScope scope(ordinal);
    // Without value_range, the compressive filter waits for the stream: not with the GIL held.
    return run_dict(without_gil([&] {
      return bilateral_device(reinterpret_cast<const float*>(in), reinterpret_cast<float*>(out), d, p, as_stream(stream),
                              value_range);
    }));
  });

  m.def("estimate_noise_model", [](HostIn in, DimsTuple dims) {
    const Dims d = to_dims(dims);
    require_size(in.size(), d, "image");
    return without_gil([&] { return estimate_noise_model({in.data(), d}); });
  });
  // GPU arrays: read where they are (only the reads' results come back; the same model and values).
  m.def("estimate_noise_model_cuda", [](std::uintptr_t in, DimsTuple dims, std::uintptr_t stream, int ordinal) {
    const Dims d = to_dims(dims);
    const DeviceScope scope(ordinal);
    return without_gil([&] { return estimate_noise_model_device(reinterpret_cast<const float*>(in), d, as_stream(stream)); });
  });
  // A GPU array's automatic value: its noise model (given, or read on its GPU), then `choose`
  // with the sample gathered there.
  auto auto_cuda = [](std::uintptr_t in, DimsTuple dims, const std::optional<NoiseModel>& noise, int threads,
                      std::uintptr_t stream, int ordinal, auto&& choose) {
    const Dims d = to_dims(dims);
    const DeviceScope scope(ordinal);
    const ExecContext context = make_context("cuda", threads);
    const auto* image = reinterpret_cast<const float*>(in);
    return choice_dict(without_gil([&] {
      const NoiseModel model = noise ? *noise : estimate_noise_model_device(image, d, as_stream(stream));
      return choose(image, d, model, context, as_stream(stream));
    }));
  };
  m.def("auto_nlm_h_cuda", [=](std::uintptr_t in, DimsTuple dims, const NlmParams& p, std::optional<NoiseModel> noise,
                               int threads, double strength, std::uintptr_t stream, int ordinal) {
    return auto_cuda(in, dims, noise, threads, stream, ordinal, [&](auto image, auto d, auto& model, auto& context, auto s) {
      return auto_nlm_h_device(image, d, p, model, context, strength, s);
    });
  });
  m.def("auto_bilateral_sigma_range_cuda", [=](std::uintptr_t in, DimsTuple dims, const BilateralParams& p,
                                               std::optional<NoiseModel> noise, int threads, double strength,
                                               std::uintptr_t stream, int ordinal) {
    return auto_cuda(in, dims, noise, threads, stream, ordinal, [&](auto image, auto d, auto& model, auto& context, auto s) {
      return auto_bilateral_sigma_range_device(image, d, p, model, context, strength, s);
    });
  });
  m.def("auto_nlm_noise_sigma", [](const NoiseModel& noise, const NlmParams& p, DimsTuple dims) {
    return auto_nlm_noise_sigma(noise, p, to_dims(dims));
  });
  m.def("auto_nlm_h", [](HostIn in, DimsTuple dims, const NlmParams& p, std::optional<NoiseModel> noise,
                         const std::string& device, int threads, double strength) {
    const Dims d = to_dims(dims);
    require_size(in.size(), d, "image");
    const ExecContext context = make_context(device, threads);
    return choice_dict(without_gil([&] {
      return noise ? auto_nlm_h({in.data(), d}, p, *noise, context, strength) : auto_nlm_h({in.data(), d}, p, context, strength);
    }));
  });
  m.def("auto_bilateral_sigma_range", [](HostIn in, DimsTuple dims, const BilateralParams& p,
                                         std::optional<NoiseModel> noise, const std::string& device, int threads,
                                         double strength) {
    const Dims d = to_dims(dims);
    require_size(in.size(), d, "image");
    const ExecContext context = make_context(device, threads);
    return choice_dict(without_gil([&] {
      return noise ? auto_bilateral_sigma_range({in.data(), d}, p, *noise, context, strength)
                   : auto_bilateral_sigma_range({in.data(), d}, p, context, strength);
    }));
  });

  // A new float32 array of the given C-order shape (2 or 3 axes) for a filter's output, in a
  // ctd::Volume: on huge pages where it is large, and its pages touched on all cores. A fresh
  // np.empty is instead faulted in page by page while the output is copied in (70-77 ms of a
  // 512^3 bilateral call's 108-119 ms on the H100 host).
  m.def("empty_output", [](const std::vector<std::size_t>& shape) {
    if (shape.size() != 2 && shape.size() != 3) throw Error(ErrorKind::InvalidArgument, "the output has 2 or 3 axes");
    const Dims d{std::int64_t(shape.back()), std::int64_t(shape[shape.size() - 2]), shape.size() == 3 ? std::int64_t(shape[0]) : 1};
    auto volume = without_gil([&] { return std::make_unique<Volume>(d); });
    float* data = volume->data();
    nb::capsule owner(volume.release(), [](void* p) noexcept { delete static_cast<Volume*>(p); });
    return nb::ndarray<nb::numpy, float>(data, shape.size(), shape.data(), owner);
  });
  m.def("available_device", [](const std::string& device) { return std::string(to_string(available_device(device_from_string(device)))); });
  m.def("cuda_device_name", &cuda_device_name);
  m.def("release_cuda_memory", &release_cuda_memory);
  m.attr("has_cuda_backend") = bool(CTD_HAVE_CUDA);
}

void translate_errors(nb::module_& m) {
  g_cuda_error = PyErr_NewException("ctdenoise.CudaError", PyExc_RuntimeError, nullptr);
  m.attr("CudaError") = nb::handle(g_cuda_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      PyObject* type = PyExc_RuntimeError;
      switch (e.kind()) {
        case ErrorKind::InvalidArgument: type = PyExc_ValueError; break;
        case ErrorKind::Unsupported: type = PyExc_NotImplementedError; break;
        case ErrorKind::Io: type = PyExc_OSError; break;
        case ErrorKind::Cuda: type = g_cuda_error; break;
        case ErrorKind::OutOfMemory: type = PyExc_MemoryError; break;
        case ErrorKind::Cancelled: type = PyExc_KeyboardInterrupt; break;
      }
      PyErr_SetString(type, e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "out of host memory");
    }
  });
}

}  // namespace ctdpy

NB_MODULE(_core, m) {
  m.doc() = "ctdenoise's C++ library; use the functions of the ctdenoise package.";
  m.attr("__version__") = CTD_VERSION;
  ctdpy::translate_errors(m);
  ctdpy::bind_filters(m);
  ctdpy::bind_io(m);
}
