// Round trips through every writable format, pixel-type rules, and the error cases of reading
// and writing, on synthetic volumes.

#include "common/test_util.hpp"

#include <ctdenoise/io.hpp>

#include <cstring>
#include <fstream>
#include <limits>

#include <zlib.h>

namespace {

namespace fs = std::filesystem;
using ctd::ErrorKind;
using ctd::io::Format;
using ctd::io::PixelType;
using testing_util::TempDir;
using testing_util::throws_kind;

// Integer values (exact in every type that holds them) with a prime-period pattern.
ctd::Volume pattern(ctd::Dims dims, double lo, double hi) {
  ctd::Volume v(dims);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = static_cast<float>(lo + double((i * 37) % 113) / 112.0 * (hi - lo));
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = std::round(v.data()[i]);
  v.geometry.spacing = {0.7, 0.9, 2.5};
  v.geometry.origin = {-120.5, 33.25, 7.0};
  return v;
}

ctd::io::ImageInfo info_of(PixelType type) {
  ctd::io::ImageInfo info;
  info.pixel_type = type;
  return info;
}

void expect_same_voxels(const ctd::Volume& a, const ctd::Volume& b) {
  ASSERT_EQ(a.dims(), b.dims());
  for (std::int64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.data()[i], b.data()[i]) << "voxel " << i;
}

struct RoundTrip {
  const char* name;
  const char* file;
  PixelType type;
  ctd::Dims dims;
  double lo, hi;
  bool keeps_geometry;
};

const RoundTrip kRoundTrips[] = {
    {"nifti_gz_int16", "v.nii.gz", PixelType::Int16, {13, 7, 5}, -1024, 3000, true},
    {"nifti_float32", "v.nii", PixelType::Float32, {6, 5, 4}, -5, 5, true},
    {"nifti_int32", "v.nii.gz", PixelType::Int32, {5, 4, 3}, -100000, 100000, true},
    {"nifti_2d_uint8", "v.nii", PixelType::UInt8, {9, 8, 1}, 0, 255, true},
    {"mha_uint16", "v.mha", PixelType::UInt16, {11, 3, 4}, 0, 65535, true},
    {"mhd_int16", "v.mhd", PixelType::Int16, {7, 6, 5}, -2000, 2000, true},
    {"nrrd_float64", "v.nrrd", PixelType::Float64, {5, 5, 5}, -1, 1, true},
    {"nrrd_int8", "v.nrrd", PixelType::Int8, {5, 6, 2}, -128, 127, true},
    {"tiff_stack_int16", "v.tif", PixelType::Int16, {10, 9, 6}, -1024, 2000, false},
    {"tiff_2d_uint16", "v.tiff", PixelType::UInt16, {10, 9, 1}, 0, 4095, false},
    {"tiff_2d_uint8", "v.tif", PixelType::UInt8, {10, 9, 1}, 0, 255, false},
    {"tiff_float32", "v.tif", PixelType::Float32, {4, 5, 3}, -3, 3, false},
    {"png_uint16", "v.png", PixelType::UInt16, {12, 7, 1}, 0, 65535, false},
    {"png_uint8", "v.png", PixelType::UInt8, {12, 7, 1}, 0, 255, false},
    {"dicom_file_int16", "v.dcm", PixelType::Int16, {16, 12, 1}, -1024, 3071, true},
    {"dicom_series_int16", "series", PixelType::Int16, {16, 12, 4}, -1024, 3071, true},
    {"dicom_series_uint16", "series", PixelType::UInt16, {9, 8, 3}, 0, 4095, true},
};

class IoRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(IoRoundTrip, KeepsVoxelsTypeAndGeometry) {
  const RoundTrip& c = GetParam();
  TempDir dir;
  const ctd::Volume v = pattern(c.dims, c.lo, c.hi);
  const auto written = ctd::io::write_image(v, info_of(c.type), dir / c.file);
  EXPECT_EQ(written.pixel_type, c.type);
  EXPECT_EQ(written.clamped_voxels, 0);
  const auto back = ctd::io::read_image(dir / c.file);
  EXPECT_EQ(back.info.pixel_type, c.type);
  expect_same_voxels(v, back.volume);
  if (c.keeps_geometry) {
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(back.volume.geometry.spacing[i], v.geometry.spacing[i], 1e-5) << i;
    if (c.dims.nz > 1) {
      EXPECT_NEAR(back.volume.geometry.spacing[2], v.geometry.spacing[2], 1e-5);
    }
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(back.volume.geometry.origin[i], v.geometry.origin[i], 1e-4) << i;
  }
  std::vector<std::string> expected{c.file};
  if (expected[0] == "v.mhd") expected.push_back("v.raw");
  EXPECT_EQ(testing_util::entries(dir.path()), expected) << "only the output (and no temporary) is left";
}

INSTANTIATE_TEST_SUITE_P(Formats, IoRoundTrip, ::testing::ValuesIn(kRoundTrips), testing_util::case_name);

TEST(Io, NiftiTwinsWithAndWithoutGzAreNeverMixed) {
  // nifticlib reads x.nii's voxels when asked for x.nii.gz if both exist; ctdenoise must not.
  TempDir dir;
  const ctd::Volume gz = pattern({16, 16, 1}, 0, 100), plain = pattern({32, 32, 4}, 500, 900);
  ctd::io::write_image(gz, info_of(PixelType::Float32), dir / "x.nii.gz");
  ctd::io::write_image(plain, info_of(PixelType::Float32), dir / "x.nii");
  expect_same_voxels(gz, ctd::io::read_image(dir / "x.nii.gz").volume);
  expect_same_voxels(plain, ctd::io::read_image(dir / "x.nii").volume);
  EXPECT_EQ(ctd::io::read_image(dir / "x.nii.gz").info.path, dir / "x.nii.gz");
}

TEST(Io, MetaImageHeaderPointsAtItsDataFile) {
  TempDir dir;
  const ctd::Volume v = pattern({5, 4, 3}, 0, 100);
  const auto written = ctd::io::write_image(v, info_of(PixelType::UInt8), dir / "v.mhd");
  EXPECT_EQ(testing_util::entries(dir.path()), (std::vector<std::string>{"v.mhd", "v.raw"}));
  EXPECT_EQ(written.files.back().filename(), "v.mhd");
  expect_same_voxels(v, ctd::io::read_image(dir / "v.mhd").volume);
}

TEST(Io, KeepsAnOrientedDirection) {
  TempDir dir;
  ctd::Volume v = pattern({6, 5, 4}, -100, 100);
  const double c = std::cos(0.3), s = std::sin(0.3);
  v.geometry.direction = {c, -s, 0, s, c, 0, 0, 0, 1};
  for (const char* file : {"o.nii.gz", "o.mha", "o.nrrd", "series"}) {
    const auto back = ctd::io::read_image((ctd::io::write_image(v, info_of(PixelType::Int16), dir / file), dir / file));
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(back.volume.geometry.direction[i], v.geometry.direction[i], 1e-5) << file << " " << i;
  }
}

TEST(Io, RoundsAndClampsIntoTheOutputType) {
  TempDir dir;
  ctd::Volume v({6, 1, 1});
  const float values[] = {1.4f, 1.6f, -2.0f, 70000.0f, 65535.4f, 2.5f};
  std::copy(std::begin(values), std::end(values), v.data());
  const auto written = ctd::io::write_image(v, info_of(PixelType::UInt16), dir / "c.nrrd");
  EXPECT_EQ(written.clamped_voxels, 2);
  const auto back = ctd::io::read_image(dir / "c.nrrd").volume;
  const float expected[] = {1, 2, 0, 65535, 65535, 2};  // round half to even
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back.data()[i], expected[i]) << i;
}

TEST(Io, FloatOutputOnRequest) {
  TempDir dir;
  ctd::Volume v = pattern({4, 4, 2}, 0, 10);
  v.data()[3] = 0.25f;
  ctd::io::WriteOptions options;
  options.float_output = true;
  EXPECT_EQ(ctd::io::write_image(v, info_of(PixelType::Int16), dir / "f.nii", options).pixel_type, PixelType::Float32);
  expect_same_voxels(v, ctd::io::read_image(dir / "f.nii").volume);
}

TEST(Io, PixelTypeRulesPerFormat) {
  using ctd::io::output_pixel_type;
  EXPECT_EQ(output_pixel_type(info_of(PixelType::Int32), Format::DicomSeries, false), PixelType::Int16);
  EXPECT_EQ(output_pixel_type(info_of(PixelType::UInt16), Format::Dicom, false), PixelType::UInt16);
  EXPECT_EQ(output_pixel_type(info_of(PixelType::Int32), Format::Tiff, false), PixelType::Float32);
  EXPECT_EQ(output_pixel_type(info_of(PixelType::Int32), Format::Nifti, false), PixelType::Int32);
  EXPECT_TRUE(throws_kind([] { output_pixel_type(info_of(PixelType::Int16), Format::Png, false); }, ErrorKind::Unsupported));
  EXPECT_TRUE(throws_kind([] { output_pixel_type(info_of(PixelType::Int16), Format::Dicom, true); }, ErrorKind::Unsupported));
}

TEST(Io, OutputFormatFromName) {
  EXPECT_EQ(ctd::io::output_format("a/b.NII.GZ"), Format::Nifti);
  EXPECT_EQ(ctd::io::output_format("b.mha"), Format::MetaImage);
  EXPECT_EQ(ctd::io::output_format("b.nhdr"), Format::Nrrd);
  EXPECT_EQ(ctd::io::output_format("b.TIFF"), Format::Tiff);
  EXPECT_EQ(ctd::io::output_format("out_series"), Format::DicomSeries);
  EXPECT_TRUE(throws_kind([] { ctd::io::output_format("b.jpg"); }, ErrorKind::Unsupported));
}

TEST(Io, RawRoundTripBothByteOrders) {
  TempDir dir;
  const ctd::Volume v = pattern({7, 5, 3}, -30000, 30000);
  for (auto order : {ctd::io::ByteOrder::Little, ctd::io::ByteOrder::Big}) {
    ctd::io::RawLayout layout{v.dims(), PixelType::Int16, order, {0.5, 0.5, 2.0}, 0};
    ctd::io::ImageInfo info = info_of(PixelType::Int16);
    info.raw = layout;
    const fs::path file = dir / (order == ctd::io::ByteOrder::Big ? "be.raw" : "le.raw");
    ctd::io::write_image(v, info, file);
    ctd::io::ReadOptions options;
    options.raw = layout;
    const auto back = ctd::io::read_image(file, options);
    expect_same_voxels(v, back.volume);
    EXPECT_EQ(back.volume.geometry.spacing[2], 2.0);
  }
  // Same bytes read in the other order are different values: the order is really applied.
  ctd::io::ReadOptions swapped;
  swapped.raw = ctd::io::RawLayout{v.dims(), PixelType::Int16, ctd::io::ByteOrder::Big, {1, 1, 1}, 0};
  EXPECT_NE(ctd::io::read_image(dir / "le.raw", swapped).volume.data()[1], v.data()[1]);
}

// Plain int16 voxels are kept as stored where asked for (the CLI uploads them to the GPU), equal
// to the float volume; nowhere else.
TEST(Io, KeepsPlainInt16VoxelsWhereAskedFor) {
  TempDir dir;
  const ctd::Volume v = pattern({13, 7, 5}, -3000, 3000);
  ctd::io::ReadOptions keep;
  keep.keep_int16 = true;
  ctd::io::ImageInfo big_endian = info_of(PixelType::Int16);
  big_endian.raw = ctd::io::RawLayout{v.dims(), PixelType::Int16, ctd::io::ByteOrder::Big, {1, 1, 1}, 0};
  ctd::io::write_image(v, big_endian, dir / "be.raw");
  for (const char* name : {"v.nrrd", "v.mha", "v.mhd", "be.raw"}) {
    if (std::string(name) != "be.raw") ctd::io::write_image(v, info_of(PixelType::Int16), dir / name);
    ctd::io::ReadOptions options = keep;
    if (std::string(name) == "be.raw") options.raw = big_endian.raw;
    const auto back = ctd::io::read_image(dir / name, options);
    ASSERT_EQ(back.int16_voxels.size(), std::size_t(v.size())) << name;
    for (std::int64_t i = 0; i < v.size(); ++i) ASSERT_EQ(float(back.int16_voxels[std::size_t(i)]), back.volume.data()[i]) << name << " " << i;
    expect_same_voxels(v, back.volume);
    options.keep_int16 = false;
    EXPECT_TRUE(ctd::io::read_image(dir / name, options).int16_voxels.empty()) << name;
  }
  ctd::io::write_image(v, info_of(PixelType::Float32), dir / "f.nrrd");
  ctd::io::write_image(v, info_of(PixelType::Int16), dir / "v.nii.gz");
  EXPECT_TRUE(ctd::io::read_image(dir / "f.nrrd", keep).int16_voxels.empty()) << "float32 voxels";
  EXPECT_TRUE(ctd::io::read_image(dir / "v.nii.gz", keep).int16_voxels.empty()) << "NIfTI: not kept";
}

TEST(Io, RawWithHeaderSkipsIt) {
  TempDir dir;
  std::ofstream(dir / "h.raw", std::ios::binary).write("HEADER\x01\x00\x02\x00", 10);
  ctd::io::ReadOptions options;
  options.raw = ctd::io::RawLayout{{2, 1, 1}, PixelType::UInt16, ctd::io::ByteOrder::Little, {1, 1, 1}, 6};
  const auto back = ctd::io::read_image(dir / "h.raw", options);
  EXPECT_EQ(back.volume.data()[0], 1);
  EXPECT_EQ(back.volume.data()[1], 2);
}

// ---- errors ----------------------------------------------------------------------------------

TEST(IoErrors, MissingEmptyTruncatedAndGarbageInputs) {
  TempDir dir;
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "nope.nii"); }, ErrorKind::Io));
  std::ofstream(dir / "empty.nii").close();
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "empty.nii"); }, ErrorKind::Io));
  std::ofstream(dir / "garbage.nii") << std::string(1000, 'x');
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "garbage.nii"); }, ErrorKind::Io));
  std::ofstream(dir / "garbage.dat") << std::string(1000, 'x');
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "garbage.dat"); }, ErrorKind::Io));

  // A real file cut short.
  for (const char* name : {"t.nii", "t.nii.gz", "t.nrrd", "t.dcm", "t.png", "t.tif"}) {
    const ctd::Volume v = pattern({32, 32, 1}, 0, 255);
    ctd::io::write_image(v, info_of(PixelType::UInt8), dir / name);
    fs::resize_file(dir / name, fs::file_size(dir / name) * 2 / 3);
    EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / name); }, ErrorKind::Io)) << "truncated " << name;
  }
}

TEST(IoErrors, RawLayoutProblems) {
  TempDir dir;
  std::ofstream(dir / "r.raw", std::ios::binary) << std::string(100, '\1');
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "r.raw"); }, ErrorKind::InvalidArgument));
  ctd::io::ReadOptions options;
  options.raw = ctd::io::RawLayout{{10, 10, 1}, PixelType::UInt16, ctd::io::ByteOrder::Little, {1, 1, 1}, 0};
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "r.raw", options); }, ErrorKind::Io));  // 100 != 200 bytes
  options.raw->dims = {0, 10, 1};
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "r.raw", options); }, ErrorKind::InvalidArgument));
  EXPECT_TRUE(throws_kind([] { ctd::io::pixel_type_from_string("int64"); }, ErrorKind::InvalidArgument));
}

TEST(IoErrors, ColourImagesAreUnsupported) {
  TempDir dir;
  const unsigned char rgb_png[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
      0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd, 0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x10, 0x49,
      0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xe0, 0x12, 0x91, 0x03, 0x22, 0x06, 0x08, 0x05, 0x00, 0x06, 0x4e, 0x00, 0xf1,
      0x38, 0x63, 0x32, 0x81, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
  std::ofstream(dir / "rgb.png", std::ios::binary).write(reinterpret_cast<const char*>(rgb_png), sizeof rgb_png);
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "rgb.png"); }, ErrorKind::Unsupported));
}

TEST(IoErrors, SixtyFourBitIntegerPixelsAreUnsupported) {
  // A minimal NIfTI-1 file of 2 x 2 int64 voxels (datatype 1024).
  TempDir dir;
  std::vector<char> file(352 + 4 * 8, 0);
  auto put = [&](std::size_t at, auto value) { std::memcpy(file.data() + at, &value, sizeof value); };
  put(0, std::int32_t{348});
  const std::int16_t dims[8] = {2, 2, 2, 1, 1, 1, 1, 1};
  std::memcpy(file.data() + 40, dims, sizeof dims);
  put(70, std::int16_t{1024});
  put(72, std::int16_t{64});
  for (int i = 0; i < 8; ++i) put(76 + 4 * std::size_t(i), 1.0f);
  put(108, 352.0f);
  std::memcpy(file.data() + 344, "n+1", 4);
  std::ofstream(dir / "i64.nii", std::ios::binary).write(file.data(), std::streamsize(file.size()));
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "i64.nii"); }, ErrorKind::Unsupported));
}

TEST(IoErrors, ReadOnlyFolderIsReportedBeforeWriting) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can write into read-only folders";
  TempDir dir;
  fs::create_directory(dir / "ro");
  fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(pattern({4, 4, 1}, 0, 9), info_of(PixelType::Int16), dir / "ro" / "x.nii"); },
                          ErrorKind::Io));
  fs::permissions(dir / "ro", fs::perms::owner_all);
  EXPECT_TRUE(testing_util::entries(dir / "ro").empty());
}

TEST(IoErrors, NeverOverwritesWithoutPermission) {
  TempDir dir;
  const ctd::Volume a = pattern({4, 4, 2}, 0, 10), b = pattern({4, 4, 2}, 20, 30);
  ctd::io::write_image(a, info_of(PixelType::Int16), dir / "x.nii.gz");
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(b, info_of(PixelType::Int16), dir / "x.nii.gz"); }, ErrorKind::Io));
  expect_same_voxels(a, ctd::io::read_image(dir / "x.nii.gz").volume);
  ctd::io::WriteOptions overwrite;
  overwrite.overwrite = true;
  ctd::io::write_image(b, info_of(PixelType::Int16), dir / "x.nii.gz", overwrite);
  expect_same_voxels(b, ctd::io::read_image(dir / "x.nii.gz").volume);
  // A DICOM series folder is replaced as a whole.
  ctd::io::write_image(a, info_of(PixelType::Int16), dir / "s");
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(b, info_of(PixelType::Int16), dir / "s"); }, ErrorKind::Io));
  ctd::io::write_image(b, info_of(PixelType::Int16), dir / "s", overwrite);
  expect_same_voxels(b, ctd::io::read_image(dir / "s").volume);
  EXPECT_EQ(testing_util::entries(dir.path()), (std::vector<std::string>{"s", "x.nii.gz"}));
}

TEST(IoErrors, UnwritableOutputsFailBeforeWritingAnything) {
  TempDir dir;
  const ctd::Volume v3 = pattern({4, 4, 2}, 0, 10), v2 = pattern({4, 4, 1}, 0, 10);
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v2, info_of(PixelType::Int16), dir / "missing" / "x.nii"); }, ErrorKind::Io));
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v3, info_of(PixelType::UInt8), dir / "x.png"); }, ErrorKind::Unsupported));
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v3, info_of(PixelType::Int16), dir / "x.dcm"); }, ErrorKind::Unsupported));
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v2, info_of(PixelType::Int16), dir / "x.png"); }, ErrorKind::Unsupported));
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v2, info_of(PixelType::Int16), dir / "x.jpg"); }, ErrorKind::Unsupported));
  std::ofstream(dir / "file").close();
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v2, info_of(PixelType::Int16), dir / "file" / "x.nii"); }, ErrorKind::Io));
  EXPECT_EQ(testing_util::entries(dir.path()), std::vector<std::string>{"file"});
}

TEST(IoErrors, DicomFoldersWithoutImagesOrWithSeveralSeries) {
  TempDir dir;
  fs::create_directory(dir / "empty");
  std::ofstream(dir / "empty" / "README.txt") << "not dicom";
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "empty"); }, ErrorKind::Io));

  // A folder whose series lies one level down (an archive's layout): the message names the subfolder.
  fs::create_directory(dir / "archive");
  ctd::io::write_image(pattern({8, 8, 3}, 0, 100), info_of(PixelType::Int16), dir / "archive" / "series1");
  try {
    ctd::io::read_image(dir / "archive");
    ADD_FAILURE() << "read a folder without images of its own";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("series1"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctd::io::read_image(dir / "archive" / "series1").volume.dims(), (ctd::Dims{8, 8, 3}));

  // Two series written by ctdenoise (each gets its own Series Instance UID) in one folder.
  ctd::io::write_image(pattern({8, 8, 3}, 0, 100), info_of(PixelType::Int16), dir / "a");
  ctd::io::write_image(pattern({6, 6, 2}, 0, 100), info_of(PixelType::Int16), dir / "b");
  fs::create_directory(dir / "mixed");
  for (const char* s : {"a", "b"})
    for (const auto& f : fs::directory_iterator(dir / s)) fs::copy_file(f.path(), dir / "mixed" / (std::string(s) + f.path().filename().string()));
  try {
    ctd::io::read_image(dir / "mixed");
    FAIL() << "no throw";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("2 DICOM series"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("(3 files)"), std::string::npos) << e.what();
  }
  const std::string uid_a = ctd::io::read_image(dir / "a").info.attributes.at("SeriesInstanceUID");
  ctd::io::ReadOptions pick;
  pick.series_uid = uid_a;
  EXPECT_EQ(ctd::io::read_image(dir / "mixed", pick).volume.dims(), (ctd::Dims{8, 8, 3}));
  pick.series_uid = "9.9.9";
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "mixed", pick); }, ErrorKind::InvalidArgument));
}

TEST(IoSideOutputs, TextAndPngAreAtomicAndRespectOverwrite) {
  TempDir dir;
  ctd::io::write_text_file("{}\n", dir / "r.json", false);
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_text_file("x", dir / "r.json", false); }, ErrorKind::Io));
  ctd::io::write_text_file("{\"a\": 1}\n", dir / "r.json", true);
  std::ifstream in(dir / "r.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "{\"a\": 1}\n");
  ctd::io::write_gray8_png(std::vector<std::uint8_t>(6, 200), 3, 2, dir / "p.png", false);
  const auto back = ctd::io::read_image(dir / "p.png");
  EXPECT_EQ(back.volume.dims(), (ctd::Dims{3, 2, 1}));
  EXPECT_EQ(back.volume.data()[5], 200);
  EXPECT_EQ(testing_util::entries(dir.path()), (std::vector<std::string>{"p.png", "r.json"}));
}

}  // namespace

namespace {

TEST(IoErrors, NonFiniteVoxelsAreNeverHiddenAsZero) {
  TempDir dir;
  ctd::Volume v = pattern({6, 5, 4}, -10, 10);
  v.data()[17] = std::numeric_limits<float>::quiet_NaN();
  v.data()[3] = std::numeric_limits<float>::infinity();
  // NIfTI's own reader would silently turn these into 0, so ctdenoise refuses the file.
  ctd::io::write_image(v, info_of(PixelType::Float32), dir / "nan.nii.gz");
  EXPECT_TRUE(throws_kind([&] { ctd::io::read_image(dir / "nan.nii.gz"); }, ErrorKind::InvalidArgument));
  // Other formats keep them, and the filters refuse them.
  ctd::io::write_image(v, info_of(PixelType::Float32), dir / "nan.nrrd");
  const auto back = ctd::io::read_image(dir / "nan.nrrd");
  EXPECT_TRUE(std::isnan(back.volume.data()[17]));
  EXPECT_TRUE(std::isinf(back.volume.data()[3]));
}

}  // namespace

namespace {

// Gzip members in a file: each is inflated on its own (a reader that stops after the first
// would lose the rest of the voxels).
int gzip_members(const fs::path& path, std::uint64_t* inflated) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  int members = 0;
  *inflated = 0;
  std::size_t at = 0;
  std::vector<unsigned char> out(1 << 16);
  while (at < bytes.size()) {
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return -1;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + at));
    z.avail_in = uInt(bytes.size() - at);
    int status;
    do {
      z.next_out = out.data();
      z.avail_out = uInt(out.size());
      status = inflate(&z, Z_NO_FLUSH);
      *inflated += out.size() - z.avail_out;
    } while (status == Z_OK);
    at = bytes.size() - z.avail_in;
    inflateEnd(&z);
    if (status != Z_STREAM_END) return -1;
    ++members;
  }
  return members;
}

TEST(Io, NiftiGzIsCompressedOnAllCoresAsGzipMembers) {
  TempDir dir;
  const ctd::Volume v = pattern({256, 256, 40}, -1000, 2000);  // 5.2 MB of int16: two 4 MiB members
  for (const int level : {1, 12}) {
    ctd::io::WriteOptions options;
    options.compression_level = level;
    const fs::path path = dir / ("v" + std::to_string(level) + ".nii.gz");
    ctd::io::write_image(v, info_of(PixelType::Int16), path, options);
    std::uint64_t inflated = 0;
    EXPECT_EQ(gzip_members(path, &inflated), 2);
    EXPECT_EQ(inflated, 352 + 256u * 256 * 40 * 2);  // NIfTI-1 header and extension flag, then voxels
    expect_same_voxels(ctd::io::read_image(path).volume, v);
    EXPECT_FALSE(fs::exists(dir / ("v" + std::to_string(level) + ".nii")));  // the uncompressed step is gone
  }
  ctd::io::WriteOptions bad;
  bad.compression_level = 13;
  EXPECT_TRUE(throws_kind([&] { ctd::io::write_image(v, info_of(PixelType::Int16), dir / "bad.nii.gz", bad); },
                          ErrorKind::InvalidArgument));
  EXPECT_FALSE(fs::exists(dir / "bad.nii.gz"));
}

}  // namespace

namespace {

TEST(Io, ReplacingAMetaImagePairSwitchesItsDataFile) {
  TempDir dir;
  const ctd::Volume first = pattern({7, 6, 5}, 0, 100), second = pattern({7, 6, 5}, 200, 300);
  ctd::io::WriteOptions options;
  options.overwrite = true;
  ctd::io::write_image(first, info_of(PixelType::Int16), dir / "v.mhd", options);
  ctd::io::write_image(second, info_of(PixelType::Int16), dir / "v.mhd", options);
  // The new pair never shared a name with the old one: the data went to v-1.raw, v.raw is gone.
  EXPECT_TRUE(fs::exists(dir / "v-1.raw"));
  EXPECT_FALSE(fs::exists(dir / "v.raw"));
  expect_same_voxels(ctd::io::read_image(dir / "v.mhd").volume, second);
  ctd::io::write_image(first, info_of(PixelType::Int16), dir / "v.mhd", options);
  EXPECT_TRUE(fs::exists(dir / "v.raw"));
  EXPECT_FALSE(fs::exists(dir / "v-1.raw"));
  expect_same_voxels(ctd::io::read_image(dir / "v.mhd").volume, first);
}

}  // namespace
