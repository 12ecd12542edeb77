// NRRD and MetaImage outputs written with ITK's header and our own voxel writer must be the
// files ITK's writer makes, byte for byte; every output type rounds halves to even and clamps.

#include "common/test_util.hpp"

#include <ctdenoise/io.hpp>

#include <itkImage.h>
#include <itkImageFileWriter.h>

#include <cmath>
#include <fstream>
#include <limits>

namespace {

namespace fs = std::filesystem;
using ctd::io::PixelType;
using testing_util::TempDir;

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ctd::io::ImageInfo info_of(PixelType type) {
  ctd::io::ImageInfo info;
  info.pixel_type = type;
  return info;
}

// Whole values (so rounding cannot differ) spread over most of T's range, at an oblique geometry.
template <class T>
ctd::Volume volume_for(ctd::Dims dims, unsigned seed) {
  ctd::Volume v(dims);
  std::mt19937 rng(seed);
  const double lo = std::max<double>(std::numeric_limits<T>::lowest(), -40000);
  const double hi = std::min<double>(std::numeric_limits<T>::max(), 40000);
  std::uniform_real_distribution<double> value(lo, hi);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = float(std::floor(value(rng)));
  v.geometry.spacing = {0.732421875, 0.81, 2.5};
  v.geometry.origin = {-187.25, 13.0 / 3.0, -1234.5};
  const double c = std::cos(0.4), s = std::sin(0.4);
  v.geometry.direction = {c, 0, -s, 0, 1, 0, s, 0, c};
  return v;
}

// The same volume written by ITK's own writer: the reference file.
template <class T>
void write_with_itk(const ctd::Volume& v, const fs::path& path) {
  using Image = itk::Image<T, 3>;
  auto image = Image::New();
  typename Image::SizeType size;
  size[0] = itk::SizeValueType(v.dims().nx);
  size[1] = itk::SizeValueType(v.dims().ny);
  size[2] = itk::SizeValueType(v.dims().nz);
  typename Image::SpacingType spacing;
  typename Image::PointType origin;
  typename Image::DirectionType direction;
  for (unsigned i = 0; i < 3; ++i) {
    spacing[i] = v.geometry.spacing[i];
    origin[i] = v.geometry.origin[i];
    for (unsigned j = 0; j < 3; ++j) direction(i, j) = v.geometry.direction[3 * i + j];
  }
  image->SetRegions(typename Image::RegionType(size));
  image->SetSpacing(spacing);
  image->SetOrigin(origin);
  image->SetDirection(direction);
  image->Allocate();
  for (std::int64_t i = 0; i < v.size(); ++i) image->GetBufferPointer()[i] = static_cast<T>(v.data()[i]);
  auto writer = itk::ImageFileWriter<Image>::New();
  writer->SetFileName(path.c_str());
  writer->SetInput(image);
  writer->Update();
}

template <class T>
void expect_same_files_as_itk(PixelType type, ctd::Dims dims) {
  SCOPED_TRACE(std::string(ctd::io::to_string(type)));
  TempDir ours, itk_dir;
  const ctd::Volume v = volume_for<T>(dims, unsigned(dims.count()));
  for (const char* name : {"v.nrrd", "v.mha", "v.mhd"}) {
    SCOPED_TRACE(name);
    const auto written = ctd::io::write_image(v, info_of(type), ours / name);
    EXPECT_EQ(written.clamped_voxels, 0);
    EXPECT_FALSE(written.stages.empty());
    write_with_itk<T>(v, itk_dir / name);
    EXPECT_EQ(file_bytes(ours / name), file_bytes(itk_dir / name));
  }
  EXPECT_EQ(file_bytes(ours / "v.raw"), file_bytes(itk_dir / "v.raw")) << "the .mhd's data file";
  EXPECT_EQ(testing_util::entries(ours.path()), (std::vector<std::string>{"v.mha", "v.mhd", "v.nrrd", "v.raw"}));
}

// Sizes chosen so that the voxel writer's 4 MiB pieces split the volume unevenly (1 to 3 pieces).
TEST(PlainWrite, NrrdAndMetaImageAreTheFilesItkWrites) {
  expect_same_files_as_itk<std::int16_t>(PixelType::Int16, {129, 131, 67});
  expect_same_files_as_itk<std::uint8_t>(PixelType::UInt8, {31, 17, 5});
  expect_same_files_as_itk<float>(PixelType::Float32, {129, 131, 67});
  expect_same_files_as_itk<double>(PixelType::Float64, {64, 64, 67});
  expect_same_files_as_itk<std::uint16_t>(PixelType::UInt16, {1, 1, 1});
  expect_same_files_as_itk<std::int32_t>(PixelType::Int32, {7, 1, 3});
}

TEST(PlainWrite, ReplacesALongerFileEntirely) {
  TempDir dir;
  const ctd::Volume big = volume_for<std::int16_t>({40, 40, 40}, 1), small = volume_for<std::int16_t>({9, 8, 7}, 2);
  ctd::io::WriteOptions overwrite;
  overwrite.overwrite = true;
  for (const char* name : {"v.nrrd", "v.raw"}) {
    ctd::io::write_image(big, info_of(PixelType::Int16), dir / name, overwrite);
    ctd::io::write_image(small, info_of(PixelType::Int16), dir / name, overwrite);
  }
  EXPECT_EQ(fs::file_size(dir / "v.raw"), std::uintmax_t(9 * 8 * 7 * 2));
  const auto back = ctd::io::read_image(dir / "v.nrrd").volume;
  ASSERT_EQ(back.dims(), small.dims());
  for (std::int64_t i = 0; i < back.size(); ++i) ASSERT_EQ(back.data()[i], small.data()[i]) << i;
}

// Halves go to the even neighbour, values past the type's range are clamped and counted, on
// both sides of every integer type's range (the writer's rounding has a fast path to check).
TEST(PlainWrite, RoundsHalvesToEvenAndClampsEveryIntegerType) {
  struct Case {
    PixelType type;
    double lo, hi;
  };
  const Case cases[] = {{PixelType::UInt8, 0, 255},         {PixelType::Int8, -128, 127},
                        {PixelType::Int16, -32768, 32767},  {PixelType::UInt16, 0, 65535},
                        {PixelType::Int32, -2147483648.0, 2147483647.0}, {PixelType::UInt32, 0, 4294967295.0}};
  TempDir dir;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(ctd::io::to_string(c.type)));
    // Inputs as float (what the filters give) and what each must become; float cannot hold
    // every int32 half, so the 32-bit types test halves near zero and clamping at the ends.
    std::vector<std::pair<float, double>> values = {
        {0.5f, 0}, {1.5f, 2}, {2.5f, 2}, {3.49f, 3}, {3.51f, 4}, {-0.49f, 0}, {1e30f, c.hi}, {-1e30f, c.lo}};
    if (c.lo < 0) values.insert(values.end(), {{-1.5f, -2}, {-2.5f, -2}, {-3.5f, -4}});
    if (c.hi < 70000) {
      // Every small type's highest value is odd and its lowest even.
      values.insert(values.end(),
                    {{float(c.hi - 0.5), c.hi - 1}, {float(c.hi + 0.5), c.hi}, {float(c.lo - 0.5), c.lo}, {float(c.lo - 1), c.lo}});
    }
    ctd::Volume v({std::int64_t(values.size()), 1, 1});
    std::int64_t expected_clamped = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      v.data()[i] = values[i].first;
      const double rounded = std::nearbyint(double(values[i].first));  // the reference: the C library
      expected_clamped += rounded < c.lo || rounded > c.hi;
      EXPECT_EQ(std::clamp(rounded, c.lo, c.hi), values[i].second) << "the table itself, value " << values[i].first;
    }
    for (const char* name : {"r.nrrd", "r.raw"}) {
      const fs::path path = dir / (std::string(ctd::io::to_string(c.type)) + name);
      ctd::io::ImageInfo info = info_of(c.type);
      if (std::string(name) == "r.raw") info.raw = ctd::io::RawLayout{v.dims(), c.type, ctd::io::ByteOrder::Big, {1, 1, 1}, 0};
      const auto written = ctd::io::write_image(v, info, path);
      EXPECT_EQ(written.clamped_voxels, expected_clamped) << name;
      ctd::io::ReadOptions options;
      options.raw = info.raw;
      const auto back = ctd::io::read_image(path, options).volume;
      for (std::size_t i = 0; i < values.size(); ++i) {
        EXPECT_EQ(double(back.data()[i]), double(float(values[i].second))) << name << ": " << values[i].first;
      }
    }
  }
}

}  // namespace
