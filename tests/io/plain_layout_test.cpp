// Voxels stored plainly (raw NRRD, uncompressed MetaImage, headerless raw) are read straight
// from the file: every layout the headers allow gives the values written, by a writer here that
// shares nothing with the readers (byte order, data beside or after the header, skipped bytes,
// pieces of the parallel read).

#include "common/test_util.hpp"

#include <ctdenoise/io.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <random>

namespace {

namespace fs = std::filesystem;
using ctd::io::PixelType;
using testing_util::TempDir;

// Random values of T (fixed seed), and their bytes in the given order.
template <class T>
std::vector<T> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = T(std::uniform_real_distribution<double>(-3000, 3000)(rng));
    } else {
      x = T(std::uniform_int_distribution<long long>(std::numeric_limits<T>::min(), std::numeric_limits<T>::max())(rng));
    }
  }
  return v;
}

template <class T>
std::string bytes_of(const std::vector<T>& values, bool big_endian) {
  std::string out(values.size() * sizeof(T), '\0');
  for (std::size_t i = 0; i < values.size(); ++i) {
    char b[sizeof(T)];
    std::memcpy(b, &values[i], sizeof(T));
    if (big_endian != (std::endian::native == std::endian::big)) std::reverse(b, b + sizeof(T));
    std::memcpy(out.data() + i * sizeof(T), b, sizeof(T));
  }
  return out;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

template <class T>
void expect_values(const fs::path& path, const std::vector<T>& values, ctd::Dims dims, const char* what) {
  const ctd::io::Image image = ctd::io::read_image(path);
  ASSERT_EQ(image.volume.dims().nx, dims.nx) << what;
  ASSERT_EQ(image.volume.dims().ny, dims.ny) << what;
  ASSERT_EQ(image.volume.dims().nz, dims.nz) << what;
  ASSERT_EQ(image.volume.size(), std::int64_t(values.size())) << what;
  std::int64_t wrong = 0, first = -1;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (image.volume.data()[i] != static_cast<float>(values[i])) {
      ++wrong;
      if (first < 0) first = std::int64_t(i);
    }
  }
  EXPECT_EQ(wrong, 0) << what << ": first wrong voxel " << first;
  EXPECT_DOUBLE_EQ(image.volume.geometry.spacing[0], 0.5) << what;
  EXPECT_DOUBLE_EQ(image.volume.geometry.spacing[2], 2.5) << what;
}

std::string nrrd_header(const char* type, ctd::Dims d, const char* endian, const std::string& data_file = "") {
  std::string h = "NRRD0004\n# written by the test\ntype: " + std::string(type) + "\ndimension: 3\n";
  h += "sizes: " + std::to_string(d.nx) + " " + std::to_string(d.ny) + " " + std::to_string(d.nz) + "\n";
  h += "spacings: 0.5 0.75 2.5\nencoding: raw\n";
  if (endian) h += "endian: " + std::string(endian) + "\n";
  if (!data_file.empty()) h += "data file: " + data_file + "\n";
  return h + "\n";
}

std::string metaimage_header(const char* type, ctd::Dims d, bool msb, const std::string& data_file, int header_size = 0) {
  std::string h = "ObjectType = Image\nNDims = 3\n";
  h += "DimSize = " + std::to_string(d.nx) + " " + std::to_string(d.ny) + " " + std::to_string(d.nz) + "\n";
  h += "ElementSpacing = 0.5 0.75 2.5\n";
  h += std::string("BinaryDataByteOrderMSB = ") + (msb ? "True" : "False") + "\n";
  if (header_size != 0) h += "HeaderSize = " + std::to_string(header_size) + "\n";
  h += "ElementType = " + std::string(type) + "\nElementDataFile = " + data_file + "\n";
  return h;
}

TEST(PlainLayouts, NrrdInEitherByteOrderBesideOrAfterItsHeader) {
  TempDir dir;
  const ctd::Dims d{7, 5, 3};
  const auto i16 = random_values<std::int16_t>(std::size_t(d.count()), 1);
  write_file(dir / "big.nrrd", nrrd_header("short", d, "big") + bytes_of(i16, true));
  expect_values(dir / "big.nrrd", i16, d, "int16, big endian, attached");
  write_file(dir / "little.nrrd", nrrd_header("short", d, "little") + bytes_of(i16, false));
  expect_values(dir / "little.nrrd", i16, d, "int16, little endian, attached");

  const auto f32 = random_values<float>(std::size_t(d.count()), 2);
  write_file(dir / "detached.nhdr", nrrd_header("float", d, "big", "detached.data"));
  write_file(dir / "detached.data", bytes_of(f32, true));
  expect_values(dir / "detached.nhdr", f32, d, "float32, big endian, detached");

  const auto f64 = random_values<double>(std::size_t(d.count()), 3);
  write_file(dir / "double.nrrd", nrrd_header("double", d, "big") + bytes_of(f64, true));
  expect_values(dir / "double.nrrd", f64, d, "float64, big endian");

  const auto u8 = random_values<std::uint8_t>(std::size_t(d.count()), 4);
  write_file(dir / "bytes.nrrd", nrrd_header("uchar", d, nullptr) + bytes_of(u8, false));
  expect_values(dir / "bytes.nrrd", u8, d, "uint8, no endian line");
}

TEST(PlainLayouts, MetaImageLocalDetachedSkippedAndAtTheEnd) {
  TempDir dir;
  const ctd::Dims d{6, 4, 5};
  const auto i32 = random_values<std::int32_t>(std::size_t(d.count()), 5);
  write_file(dir / "msb.mha", metaimage_header("MET_INT", d, true, "LOCAL") + bytes_of(i32, true));
  expect_values(dir / "msb.mha", i32, d, "int32, MSB first, local");

  const auto u16 = random_values<std::uint16_t>(std::size_t(d.count()), 6);
  write_file(dir / "skip.mhd", metaimage_header("MET_USHORT", d, false, "skip.raw", 16));
  write_file(dir / "skip.raw", std::string(16, 'x') + bytes_of(u16, false));
  expect_values(dir / "skip.mhd", u16, d, "uint16, 16 bytes skipped");

  write_file(dir / "end.mhd", metaimage_header("MET_USHORT", d, true, "end.raw", -1));
  write_file(dir / "end.raw", std::string(37, 'y') + bytes_of(u16, true));
  expect_values(dir / "end.mhd", u16, d, "uint16, MSB first, at the end of its file");
}

TEST(PlainLayouts, LargeVolumesAreAssembledFromTheirPiecesInOrder) {
  // Over 8 MiB of int16 (the read's piece) with an odd size, and the same bytes as raw.
  TempDir dir;
  const ctd::Dims d{257, 263, 67};
  const auto i16 = random_values<std::int16_t>(std::size_t(d.count()), 7);
  write_file(dir / "large.nrrd", nrrd_header("short", d, "big") + bytes_of(i16, true));
  expect_values(dir / "large.nrrd", i16, d, "int16, big endian, several pieces");

  write_file(dir / "large.raw", std::string(100, 'h') + bytes_of(i16, true));
  ctd::io::ReadOptions options;
  options.raw = ctd::io::RawLayout{d, PixelType::Int16, ctd::io::ByteOrder::Big, {0.5, 0.75, 2.5}, 100};
  const ctd::io::Image raw = ctd::io::read_image(dir / "large.raw", options);
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < i16.size(); ++i) wrong += raw.volume.data()[i] != float(i16[i]);
  EXPECT_EQ(wrong, 0);
}

TEST(PlainLayouts, DataEndingEarlyIsAnErrorNotAPartialImage) {
  TempDir dir;
  const ctd::Dims d{7, 5, 3};
  const auto i16 = random_values<std::int16_t>(std::size_t(d.count()), 8);
  const std::string data = bytes_of(i16, false);
  write_file(dir / "short.nrrd", nrrd_header("short", d, "little") + data.substr(0, data.size() - 3));
  try {
    ctd::io::read_image(dir / "short.nrrd");
    FAIL() << "a truncated NRRD was read";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ctd::ErrorKind::Io);
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

// A NIfTI-1 file written here byte by byte: 348-byte header, 4 bytes of extension flag, padding
// up to vox_offset, the voxels.
template <class T>
std::string nifti_file(ctd::Dims d, std::int16_t datatype, const std::vector<T>& values, bool big_endian,
                       float vox_offset = 352, float slope = 0, float intercept = 0) {
  std::string h(std::size_t(vox_offset), '\0');
  auto put = [&](std::size_t at, auto value) {
    char b[sizeof value];
    std::memcpy(b, &value, sizeof value);
    if (big_endian != (std::endian::native == std::endian::big)) std::reverse(b, b + sizeof value);
    std::memcpy(h.data() + at, b, sizeof value);
  };
  put(0, std::int32_t(348));
  const std::int16_t dims[8] = {3, std::int16_t(d.nx), std::int16_t(d.ny), std::int16_t(d.nz), 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) put(40 + 2 * std::size_t(i), dims[i]);
  put(70, datatype);
  put(72, std::int16_t(8 * sizeof(T)));
  const float pixdim[8] = {1, 0.5f, 0.75f, 2.5f, 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) put(76 + 4 * std::size_t(i), pixdim[i]);
  put(108, vox_offset);
  put(112, slope);
  put(116, intercept);
  std::memcpy(h.data() + 344, "n+1", 4);
  return h + bytes_of(values, big_endian);
}

TEST(PlainLayouts, NiftiAsStoredOrScaledOrSwapped) {
  TempDir dir;
  const ctd::Dims d{9, 7, 5};
  const auto i16 = random_values<std::int16_t>(std::size_t(d.count()), 9);
  write_file(dir / "plain.nii", nifti_file(d, 4, i16, false));
  expect_values(dir / "plain.nii", i16, d, "int16 as stored");
  write_file(dir / "big.nii", nifti_file(d, 4, i16, true));
  expect_values(dir / "big.nii", i16, d, "int16, the other byte order");
  const auto f32 = random_values<float>(std::size_t(d.count()), 10);
  write_file(dir / "float.nii", nifti_file(d, 16, f32, false, 368));
  expect_values(dir / "float.nii", f32, d, "float32, voxels from byte 368");
  const auto u16 = random_values<std::uint16_t>(std::size_t(d.count()), 11);
  write_file(dir / "odd.nii", nifti_file(d, 512, u16, false, 353));
  expect_values(dir / "odd.nii", u16, d, "uint16 from an odd byte");

  // Scaled: the values are slope x stored + intercept (read as float by the library).
  write_file(dir / "scaled.nii", nifti_file(d, 4, i16, false, 352, 0.5f, -10));
  std::vector<double> scaled(i16.size());
  for (std::size_t i = 0; i < i16.size(); ++i) scaled[i] = 0.5 * i16[i] - 10;
  expect_values(dir / "scaled.nii", scaled, d, "int16 scaled");
}

}  // namespace
