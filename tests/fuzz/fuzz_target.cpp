#include "fuzz/fuzz_target.hpp"

#include <ctdenoise/bilateral.hpp>
#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>
#include <ctdenoise/noise.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>

namespace ctd::fuzz {
namespace {

namespace fs = std::filesystem;

// The formats, by selector byte (mod the count). Detached layouts fuzz the header; their data
// file (or the series' other slices) stays valid.
enum class Layout { Single, MetaHeader, NrrdHeader, DicomSeriesSlice, Raw };
struct FormatCase {
  const char* name;
  const char* file;  // the mutated file's name
  Layout layout;
};
constexpr FormatCase kFormats[] = {
    {"NIfTI", "in.nii", Layout::Single},           {"NIfTI gzip", "in.nii.gz", Layout::Single},
    {"MetaImage", "in.mha", Layout::Single},        {"MetaImage header", "in.mhd", Layout::MetaHeader},
    {"NRRD", "in.nrrd", Layout::Single},            {"NRRD header", "in.nhdr", Layout::NrrdHeader},
    {"DICOM file", "in.dcm", Layout::Single},       {"DICOM series", "IM00002.dcm", Layout::DicomSeriesSlice},
    {"TIFF", "in.tif", Layout::Single},             {"PNG", "in.png", Layout::Single},
    {"raw", "in.raw", Layout::Raw},
};
constexpr int kCount = int(sizeof kFormats / sizeof kFormats[0]);
constexpr Dims kRawDims{9, 7, 3};

Volume sample(Dims dims) {
  Volume v(dims);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = float((i * 37) % 251 - 90 + (i % 7) * 3);
  v.geometry.spacing = {0.8, 0.8, 2.0};
  return v;
}

io::ImageInfo info_of(io::PixelType type) {
  io::ImageInfo info;
  info.pixel_type = type;
  return info;
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A private folder for this process's files, with the valid companions of detached layouts.
const fs::path& work_folder() {
  static const fs::path folder = [] {
    const char* tmp = std::getenv("TMPDIR");
    fs::path f = fs::path(tmp ? tmp : "/tmp") / ("ctdenoise-fuzz-" + std::to_string(::getpid()));
    fs::remove_all(f);
    fs::create_directories(f / "series");
    // Companions: the .mhd's and .nhdr's data files, and slices 1 and 3 of the series.
    const Volume v = sample(kRawDims);
    io::write_image(v, info_of(io::PixelType::Int16), f / "companion.mhd");
    fs::rename(f / "companion.raw", f / "in.raw.data");
    fs::remove(f / "companion.mhd");
    io::write_image(v, info_of(io::PixelType::Int16), f / "series_src");
    for (const char* slice : {"IM00001.dcm", "IM00003.dcm"}) fs::copy_file(f / "series_src" / slice, f / "series" / slice);
    fs::rename(f / "series_src" / "IM00002.dcm", f / "series_seed.dcm");  // same series: the seed of the slice
    fs::remove_all(f / "series_src");
    std::atexit([] { std::error_code ignored; fs::remove_all(work_folder(), ignored); });
    return f;
  }();
  return folder;
}

void describe_and_filter(const io::Image& image) {
  const Volume& v = image.volume;
  double lo = v.data()[0], hi = v.data()[0], sum = 0;
  for (std::int64_t i = 0; i < v.size(); ++i) {
    lo = std::min<double>(lo, v.data()[i]);
    hi = std::max<double>(hi, v.data()[i]);
    sum += v.data()[i];
  }
  (void)sum;
  try {
    estimate_noise(v.view());
    estimate_noise_model(v.view());
  } catch (const Error&) {
    // too small or too flat to estimate: the expected answer for many mutants
  }
  // A crop of at most 16 x 16 x 4 voxels, filtered exactly on the CPU.
  const Dims crop{std::min<std::int64_t>(v.dims().nx, 16), std::min<std::int64_t>(v.dims().ny, 16),
                  std::min<std::int64_t>(v.dims().nz, 4)};
  Volume in(crop), out(crop);
  for (std::int64_t z = 0; z < crop.nz; ++z)
    for (std::int64_t y = 0; y < crop.ny; ++y)
      for (std::int64_t x = 0; x < crop.nx; ++x) in.view()(x, y, z) = v.view()(x, y, z);
  BilateralParams p;
  p.sigma_spatial = 1.0f;
  p.sigma_range = float(std::max(1.0, (hi - lo) / 4));
  if (!std::isfinite(p.sigma_range)) p.sigma_range = 1.0f;
  p.algorithm = BilateralAlgorithm::Direct;
  ExecContext context;
  context.device = Device::Cpu;
  context.threads = 1;
  try {
    bilateral(in.view(), out.view(), p, context);
  } catch (const Error&) {
    // non-finite voxels are refused: expected
  }
}

}  // namespace

int format_count() { return kCount; }
std::string format_name(std::uint8_t selector) { return kFormats[selector % kCount].name; }

bool run_one(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return false;
  const FormatCase& format = kFormats[data[0] % kCount];
  const fs::path& folder = work_folder();
  const fs::path file = format.layout == Layout::DicomSeriesSlice ? folder / "series" / format.file : folder / format.file;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data + 1), std::streamsize(size - 1));
  }
  io::ReadOptions options;
  fs::path target = file;  // .mhd and .nhdr seeds name the valid data file "in.raw.data"
  if (format.layout == Layout::DicomSeriesSlice) target = folder / "series";
  if (format.layout == Layout::Raw) options.raw = io::RawLayout{kRawDims, io::PixelType::Int16, io::ByteOrder::Little, {1, 1, 1}, 0};
  try {
    describe_and_filter(io::read_image(target, options));
    return true;
  } catch (const Error&) {
    return false;  // bad input, told as such
  } catch (const std::bad_alloc&) {
    return false;  // out of memory is reported as such by the CLI
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s input raised a non-ctdenoise exception: %s\n", format.name, e.what());
    std::abort();
  }
}

void write_seeds(const fs::path& seeds) {
  fs::create_directories(seeds);
  const fs::path scratch = seeds / ".scratch";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  const Volume volume = sample(kRawDims);
  Volume slice = sample({kRawDims.nx, kRawDims.ny, 1});
  for (std::int64_t i = 0; i < slice.size(); ++i) slice.data()[i] += 100;  // PNG holds unsigned values
  for (int s = 0; s < kCount; ++s) {
    const FormatCase& f = kFormats[s];
    std::string bytes;
    switch (f.layout) {
      case Layout::Single: {
        const bool flat = std::string(f.file).ends_with(".png") || std::string(f.file).ends_with(".dcm");
        const io::PixelType type = std::string(f.file).ends_with(".png") ? io::PixelType::UInt16 : io::PixelType::Int16;
        io::write_image(flat ? slice : volume, info_of(type), scratch / f.file);
        bytes = file_bytes(scratch / f.file);
        break;
      }
      case Layout::MetaHeader:
        bytes = "ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
                "CompressedData = False\nElementSpacing = 0.8 0.8 2\nDimSize = 9 7 3\nElementType = MET_SHORT\n"
                "ElementDataFile = in.raw.data\n";
        break;
      case Layout::NrrdHeader:
        bytes = "NRRD0004\ntype: short\ndimension: 3\nsizes: 9 7 3\nspacings: 0.8 0.8 2\nendian: little\n"
                "encoding: raw\ndata file: in.raw.data\n";
        break;
      case Layout::DicomSeriesSlice:
        bytes = file_bytes(work_folder() / "series_seed.dcm");
        break;
      case Layout::Raw: {
        std::vector<std::int16_t> raw(std::size_t(volume.size()));
        for (std::int64_t i = 0; i < volume.size(); ++i) raw[std::size_t(i)] = std::int16_t(volume.data()[i]);
        bytes.assign(reinterpret_cast<const char*>(raw.data()), raw.size() * sizeof(std::int16_t));
        break;
      }
    }
    std::ofstream out(seeds / ("seed-" + std::to_string(s)), std::ios::binary);
    out.put(char(s));
    out << bytes;
  }
  fs::remove_all(scratch);
}

}  // namespace ctd::fuzz
