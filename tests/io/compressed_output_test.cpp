// Compressed NRRD and MetaImage output (WriteOptions::compress, CLI --compress): compressed on
// all cores, read back by ITK as written, and checked here with zlib itself.

#include "common/test_util.hpp"

#include <ctdenoise/error.hpp>
#include <ctdenoise/io.hpp>

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <random>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using ctd::io::PixelType;
using testing_util::TempDir;

// Over 4 MiB of int16 (several compressed chunks): a smooth ramp under random noise, odd sizes.
ctd::Volume noisy_ramp() {
  ctd::Volume v({161, 149, 97});
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0, 30);
  for (std::int64_t i = 0; i < v.size(); ++i) v.data()[i] = std::round(float(i % 2000) - 1000 + noise(rng));
  v.geometry.spacing = {0.7, 0.9, 2.5};
  v.geometry.origin = {-12.5, 3.25, 7.0};
  return v;
}

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ctd::io::ImageInfo int16_info() {
  ctd::io::ImageInfo info;
  info.pixel_type = PixelType::Int16;
  return info;
}

// Inflates every gzip member (or the one zlib stream) from `data`; how many streams there were.
std::string inflate_all(const std::string& data, int& streams) {
  std::string out;
  streams = 0;
  std::size_t at = 0;
  while (at < data.size()) {
    z_stream z{};
    EXPECT_EQ(inflateInit2(&z, 15 + 32), Z_OK);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + at));
    z.avail_in = uInt(data.size() - at);
    std::vector<char> buffer(1 << 20);
    int status = Z_OK;
    while (status == Z_OK) {
      z.next_out = reinterpret_cast<Bytef*>(buffer.data());
      z.avail_out = uInt(buffer.size());
      status = inflate(&z, Z_NO_FLUSH);
      out.append(buffer.data(), buffer.size() - z.avail_out);
    }
    EXPECT_EQ(status, Z_STREAM_END);
    at = data.size() - z.avail_in;
    inflateEnd(&z);
    ++streams;
    if (status != Z_STREAM_END) break;
  }
  return out;
}

TEST(CompressedOutput, NrrdAndMetaImageReadBackAsWritten) {
  TempDir dir;
  const ctd::Volume v = noisy_ramp();
  ctd::io::WriteOptions plain, compressed;
  compressed.compress = true;
  for (const char* name : {"v.nrrd", "v.mha"}) {
    SCOPED_TRACE(name);
    const std::string stem = fs::path(name).stem().string(), extension = fs::path(name).extension().string();
    const fs::path p = dir / (stem + "-plain" + extension), c = dir / name;
    ctd::io::write_image(v, int16_info(), p, plain);
    const ctd::io::WriteResult written = ctd::io::write_image(v, int16_info(), c, compressed);
    bool compress_stage = false;
    for (const auto& [stage, seconds] : written.stages) compress_stage = compress_stage || stage == "compress";
    EXPECT_TRUE(compress_stage);
    const ctd::io::Image back = ctd::io::read_image(c);
    ASSERT_EQ(back.volume.dims(), v.dims());
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < v.size(); ++i) wrong += back.volume.data()[i] != v.data()[i];
    EXPECT_EQ(wrong, 0);
    EXPECT_EQ(back.volume.geometry.spacing, v.geometry.spacing);
    EXPECT_EQ(back.volume.geometry.origin, v.geometry.origin);

    // The header names the compression, and zlib inflates the data to the plain file's voxels.
    const std::string text = file_text(c), plain_text = file_text(p);
    EXPECT_LT(text.size(), plain_text.size());
    const std::string end = extension == ".nrrd" ? "\n\n" : "ElementDataFile = LOCAL\n";
    const std::size_t header = text.find(end) + end.size(), plain_header = plain_text.find(end) + end.size();
    EXPECT_NE(text.substr(0, header).find(extension == ".nrrd" ? "encoding: gzip" : "CompressedData = True"), std::string::npos);
    int streams = 0;
    EXPECT_EQ(inflate_all(text.substr(header), streams), plain_text.substr(plain_header));
    if (extension == ".mha") {
      EXPECT_EQ(streams, 1);  // MetaIO reads one stream
      EXPECT_NE(text.find("CompressedDataSize = " + std::to_string(text.size() - header) + "\n"), std::string::npos);
    } else {
      EXPECT_GT(streams, 1);  // gzip members of 4 MiB
    }
  }
}

TEST(CompressedOutput, OtherOutputsAreRefusedBeforeWriting) {
  TempDir dir;
  const ctd::Volume v = noisy_ramp();
  ctd::io::WriteOptions compressed;
  compressed.compress = true;
  for (const char* name : {"v.mhd", "v.nhdr", "v.tif", "v.nii", "series"}) {
    EXPECT_TRUE(testing_util::throws_kind([&] { ctd::io::write_image(v, int16_info(), dir / name, compressed); },
                                          ctd::ErrorKind::Unsupported))
        << name;
    EXPECT_FALSE(fs::exists(dir / name)) << name;
  }
}

TEST(CompressedOutput, MetaImageDataInSeveralStreamsIsRefused) {
  // MetaIO inflates the first stream and pads the rest: such a file would be read in part.
  TempDir dir;
  const ctd::Volume v = noisy_ramp();
  ctd::io::WriteOptions compressed;
  compressed.compress = true;
  ctd::io::write_image(v, int16_info(), dir / "one.mha", compressed);
  std::string text = file_text(dir / "one.mha");
  const std::string end = "ElementDataFile = LOCAL\n";
  const std::size_t header = text.find(end) + end.size();
  int streams = 0;
  const std::string voxels = inflate_all(text.substr(header), streams);
  std::string two;
  for (const std::size_t half : {std::size_t(0), voxels.size() / 2}) {
    const std::size_t length = half == 0 ? voxels.size() / 2 : voxels.size() - half;
    std::vector<char> packed(compressBound(uLong(length)));
    uLongf size = uLongf(packed.size());
    ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(packed.data()), &size, reinterpret_cast<const Bytef*>(voxels.data() + half),
                        uLong(length), 1),
              Z_OK);
    two.append(packed.data(), size);
  }
  std::string head = text.substr(0, header);
  const std::size_t size_line = head.find("CompressedDataSize = ");
  head.replace(size_line, head.find('\n', size_line) - size_line, "CompressedDataSize = " + std::to_string(two.size()));
  std::ofstream(dir / "two.mha", std::ios::binary) << head << two;
  try {
    ctd::io::read_image(dir / "two.mha");
    FAIL() << "read in part";
  } catch (const ctd::Error& e) {
    EXPECT_EQ(e.kind(), ctd::ErrorKind::Unsupported);
    EXPECT_NE(std::string(e.what()).find("several compressed streams"), std::string::npos) << e.what();
  }
}

}  // namespace
