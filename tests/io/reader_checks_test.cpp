// Readers never turn bad input into an image: data cut short in any format, corrupt headers, and
// limits known from the header are errors, and the libraries' own messages stay off stderr.

#include "common/test_util.hpp"

#include <ctdenoise/io.hpp>

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using ctd::ErrorKind;
using ctd::io::PixelType;
using testing_util::TempDir;

ctd::Volume ramp(ctd::Dims dims) {
  ctd::Volume v(dims);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = float((i * 31) % 200 - 100);
  return v;
}

ctd::io::ImageInfo int16_info() {
  ctd::io::ImageInfo info;
  info.pixel_type = PixelType::Int16;
  return info;
}

// The error kind and message of reading `path`, or "" when it was read.
std::pair<ErrorKind, std::string> read_error(const fs::path& path, const ctd::io::ReadOptions& options = {}) {
  try {
    ctd::io::read_image(path, options);
  } catch (const ctd::Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::Cancelled, ""};
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// 2 x 2 bytes (int16) per voxel of a 12 x 10 x 5 volume.
constexpr std::uint64_t kVoxelBytes = 12 * 10 * 5 * 2;

// MetaImage and NRRD with compressed data, made here with zlib (ctdenoise writes them plain).
void write_compressed_variants(const fs::path& dir) {
  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "plain.mha");
  const std::string mha = file_text(dir / "plain.mha");
  const auto data_at = mha.find("ElementDataFile = LOCAL\n") + std::strlen("ElementDataFile = LOCAL\n");
  const std::string voxels = mha.substr(data_at);
  ASSERT_EQ(voxels.size(), kVoxelBytes);
  std::vector<unsigned char> packed(compressBound(uLong(voxels.size())));
  uLongf packed_size = uLongf(packed.size());
  ASSERT_EQ(compress2(packed.data(), &packed_size, reinterpret_cast<const Bytef*>(voxels.data()), uLong(voxels.size()), 6), Z_OK);
  std::string header = mha.substr(0, data_at);
  header.replace(header.find("CompressedData = False"), std::strlen("CompressedData = False"), "CompressedData = True");
  write_text(dir / "z.mha", header + std::string(reinterpret_cast<const char*>(packed.data()), packed_size));

  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "plain.nrrd");
  const std::string nrrd = file_text(dir / "plain.nrrd");
  const auto blank = nrrd.find("\n\n") + 2;
  std::string nrrd_header = nrrd.substr(0, blank);
  nrrd_header.replace(nrrd_header.find("encoding: raw"), std::strlen("encoding: raw"), "encoding: gzip");
  gzFile gz = gzopen((dir / "body.gz").c_str(), "wb");
  gzwrite(gz, nrrd.data() + blank, unsigned(nrrd.size() - blank));
  gzclose(gz);
  write_text(dir / "z.nrrd", nrrd_header + file_text(dir / "body.gz"));
}

TEST(ReaderChecks, EveryFormatCutShortIsAnIoError) {
  TempDir dir;
  write_compressed_variants(dir.path());
  for (const char* name : {"v.nii", "v.nii.gz", "v.mha", "v.nrrd", "v.tif"}) {
    ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / name);
  }
  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "v.mhd");  // + v.raw
  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "w.nhdr");  // + w.raw
  ctd::io::write_image(ramp({12, 10, 1}), int16_info(), dir / "s.dcm");
  ctd::io::ImageInfo uint16_info;
  uint16_info.pixel_type = PixelType::UInt16;
  ctd::Volume positive = ramp({12, 10, 1});
  for (std::int64_t i = 0; i < positive.size(); ++i) positive.data()[i] += 100;
  ctd::io::write_image(positive, uint16_info, dir / "s.png");
  struct Case {
    const char* read;
    const char* cut;
  };
  const Case cases[] = {{"v.nii", "v.nii"}, {"v.nii.gz", "v.nii.gz"}, {"v.mha", "v.mha"}, {"z.mha", "z.mha"},
                        {"v.mhd", "v.raw"}, {"v.nrrd", "v.nrrd"},     {"z.nrrd", "z.nrrd"}, {"w.nhdr", "w.raw"},
                        {"v.tif", "v.tif"}, {"s.dcm", "s.dcm"},       {"s.png", "s.png"}};
  for (const Case& c : cases) {
    ASSERT_EQ(read_error(dir / c.read).second, "") << c.read << " intact";
    const std::string whole = file_text(dir / c.cut);
    for (const std::size_t cut : {std::size_t(1), std::size_t(2), std::size_t(7), std::size_t(11), whole.size() / 3}) {
      write_text(dir / c.cut, whole.substr(0, whole.size() - cut));
      const auto [kind, message] = read_error(dir / c.read);
      EXPECT_EQ(kind, ErrorKind::Io) << c.read << " cut by " << cut << ": " << message;
      EXPECT_NE(message.find(c.read), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
    write_text(dir / c.cut, whole);
  }
}

TEST(ReaderChecks, TruncationMessagesSayWhatWasDeclaredAndFound) {
  TempDir dir;
  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "v.mhd");
  fs::resize_file(dir / "v.raw", 100);
  const auto [kind, message] = read_error(dir / "v.mhd");
  EXPECT_EQ(kind, ErrorKind::Io);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(kVoxelBytes)), std::string::npos) << message;
  EXPECT_NE(message.find("100"), std::string::npos) << message;
}

std::string metaimage_header(const std::string& dims, const std::string& spacing, const std::string& type = "MET_SHORT") {
  return "ObjectType = Image\nNDims = 3\nDimSize = " + dims + "\nElementSpacing = " + spacing + "\nElementType = " + type +
         "\nElementDataFile = d.raw\n";
}

TEST(ReaderChecks, CorruptHeadersAreRefusedBeforeTheData) {
  TempDir dir;
  write_text(dir / "d.raw", std::string(64, '\1'));
  const std::pair<const char*, std::string> corrupt[] = {
      {"negative.mhd", metaimage_header("16 -1 8", "1 1 1")},
      {"zero.mhd", metaimage_header("16 0 8", "1 1 1")},
      {"absurd.mhd", metaimage_header("16 99999999 8", "1 1 1")},
      {"zero_spacing.mhd", metaimage_header("4 4 2", "1 0 1")},
      {"negative_spacing.mhd", metaimage_header("4 4 2", "1 1 -2")},
  };
  for (const auto& [name, header] : corrupt) {
    write_text(dir / name, header);
    const auto [kind, message] = read_error(dir / name);
    EXPECT_EQ(kind, ErrorKind::Io) << name << ": " << message;
    EXPECT_NE(message.find("corrupt header"), std::string::npos) << name << ": " << message;
  }
  // NIfTI: the library would repair these silently.
  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "v.nii");
  const std::string nifti = file_text(dir / "v.nii");
  auto patched = [&](std::size_t offset, auto value) {
    std::string copy = nifti;
    std::memcpy(copy.data() + offset, &value, sizeof value);
    return copy;
  };
  const std::pair<const char*, std::string> nifti_cases[] = {
      {"negative_dim.nii", patched(42, std::int16_t(-10))},
      {"zero_pixdim.nii", patched(80, 0.0f)},
      {"nan_pixdim.nii", patched(84, std::numeric_limits<float>::quiet_NaN())},
      {"rank_nine.nii", patched(40, std::int16_t(9))},
  };
  for (const auto& [name, bytes] : nifti_cases) {
    write_text(dir / name, bytes);
    const auto [kind, message] = read_error(dir / name);
    EXPECT_EQ(kind, ErrorKind::Io) << name << ": " << message;
    EXPECT_NE(message.find("corrupt header"), std::string::npos) << name << ": " << message;
  }
}

// A NRRD header with both 'space:' and 'spacings:' (VTK's headsq has one): the NRRD library
// refuses it with an internal status, and the message says what to change; changed, it reads.
TEST(ReaderChecks, NrrdSpaceWithSpacingsSaysWhatToChange) {
  TempDir dir;
  write_text(dir / "d.raw", std::string(4 * 3 * 2 * 2, '\1'));
  const std::string fields = "NRRD0004\ndimension: 3\nsizes: 4 3 2\nspacings: 3.2 3.2 1.5\nendian: little\ntype: short\n"
                             "encoding: raw\ndata file: d.raw\n";
  write_text(dir / "both.nhdr", fields + "space: 3D-left-handed\n");
  const auto [kind, message] = read_error(dir / "both.nhdr");
  EXPECT_EQ(kind, ErrorKind::Io) << message;
  EXPECT_NE(message.find("delete the 'space:' line"), std::string::npos) << message;
  write_text(dir / "spacings.nhdr", fields);
  const ctd::io::Image image = ctd::io::read_image(dir / "spacings.nhdr");
  EXPECT_EQ(image.volume.dims(), (ctd::Dims{4, 3, 2}));
  EXPECT_EQ(image.volume.geometry.spacing[0], 3.2);
  EXPECT_EQ(image.volume.data()[0], 257.0f);
}

TEST(ReaderChecks, LimitsFromTheHeaderComeFirst) {
  TempDir dir;
  write_text(dir / "d.raw", std::string(64, '\1'));
  // Far more than any machine's memory: out of memory, from the header alone.
  write_text(dir / "huge.mhd", metaimage_header("4000000 4000000 4", "1 1 1", "MET_FLOAT"));
  EXPECT_EQ(read_error(dir / "huge.mhd").first, ErrorKind::OutOfMemory);
  // A caller's limit (the CLI's for CUDA) is Unsupported, before the short data is noticed.
  write_text(dir / "big.mhd", metaimage_header("64 64 64", "1 1 1"));
  ctd::io::ReadOptions options;
  options.max_voxels = 64 * 64 * 63;
  options.max_voxels_reason = "the test's limit";
  const auto [kind, message] = read_error(dir / "big.mhd", options);
  EXPECT_EQ(kind, ErrorKind::Unsupported);
  EXPECT_NE(message.find("the test's limit"), std::string::npos) << message;
  options.max_voxels = 64 * 64 * 64;
  EXPECT_EQ(read_error(dir / "big.mhd", options).first, ErrorKind::Io);  // within the limit: now it is too short
}

TEST(ReaderChecks, LibraryMessagesStayOffStderrUnlessAskedFor) {
  TempDir dir;
  ctd::io::write_image(ramp({12, 10, 5}), int16_info(), dir / "v.nii");
  std::string nifti = file_text(dir / "v.nii");
  const std::int16_t bad_datatype = 9999;
  std::memcpy(nifti.data() + 70, &bad_datatype, 2);
  write_text(dir / "bad.nii", nifti);
  testing::internal::CaptureStderr();
  EXPECT_EQ(read_error(dir / "bad.nii").first, ErrorKind::Io);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  ctd::io::show_library_messages(true);
  testing::internal::CaptureStderr();
  EXPECT_EQ(read_error(dir / "bad.nii").first, ErrorKind::Io);
  const std::string shown = testing::internal::GetCapturedStderr();
  ctd::io::show_library_messages(false);
  EXPECT_NE(shown.find("datatype"), std::string::npos) << shown;
}

}  // namespace
