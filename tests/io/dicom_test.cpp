// DICOM output is a new derived series: new series and instance UIDs, DERIVED image type,
// patient and study kept, values in HU and positions as read.

#include "common/test_util.hpp"

#include <ctdenoise/io.hpp>

namespace {

namespace fs = std::filesystem;
using testing_util::TempDir;

fs::path data(const std::string& relative) { return testing_util::shared_data() / relative; }

std::string attribute(const ctd::io::Image& image, const std::string& name) {
  const auto it = image.info.attributes.find(name);
  return it == image.info.attributes.end() ? std::string() : it->second;
}

TEST(DicomOutput, DerivedSingleSliceKeepsPatientAndStudy) {
  CTD_REQUIRE_SHARED_DATA();
  TempDir dir;
  const auto in = ctd::io::read_image(data("dicom_wg04_ct1_ge/CT1_J2KR.dcm"));
  ctd::io::WriteOptions options;
  options.description = "ctdenoise test";
  const auto written = ctd::io::write_image(in.volume, in.info, dir / "ct1.dcm", options);
  EXPECT_EQ(written.pixel_type, ctd::io::PixelType::Int16);  // HU -3024..1254 fit int16
  EXPECT_EQ(written.clamped_voxels, 0);
  const auto out = ctd::io::read_image(dir / "ct1.dcm");
  for (std::int64_t i = 0; i < in.volume.size(); ++i) ASSERT_EQ(out.volume.data()[i], in.volume.data()[i]) << i;
  EXPECT_EQ(attribute(out, "PatientName"), attribute(in, "PatientName"));
  EXPECT_EQ(attribute(out, "PatientID"), attribute(in, "PatientID"));
  EXPECT_EQ(attribute(out, "StudyInstanceUID"), attribute(in, "StudyInstanceUID"));
  EXPECT_FALSE(attribute(out, "SeriesInstanceUID").empty());
  EXPECT_NE(attribute(out, "SeriesInstanceUID"), attribute(in, "SeriesInstanceUID"));
  EXPECT_EQ(attribute(out, "ImageType").rfind("DERIVED", 0), 0u) << attribute(out, "ImageType");
  EXPECT_EQ(attribute(out, "DerivationDescription"), "ctdenoise test");
  EXPECT_NE(attribute(out, "SeriesDescription").find("[ctdenoise]"), std::string::npos);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(out.volume.geometry.origin[i], in.volume.geometry.origin[i], 1e-4);
}

TEST(DicomOutput, SeriesRoundTripWithAnonymisedUids) {
  CTD_REQUIRE_SHARED_DATA();
  TempDir dir;
  // This series has empty Study/Series/SOP Instance UIDs: the output gets fresh ones.
  const auto in = ctd::io::read_image(data("dicom_series_siemens_biograph_mct_20slices/original_jpeg2000_lossless"));
  ctd::io::write_image(in.volume, in.info, dir / "series");
  EXPECT_EQ(testing_util::entries(dir / "series").size(), 20u);
  const auto out = ctd::io::read_image(dir / "series");
  ASSERT_EQ(out.volume.dims(), in.volume.dims());
  for (std::int64_t i = 0; i < in.volume.size(); ++i) ASSERT_EQ(out.volume.data()[i], in.volume.data()[i]) << i;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(out.volume.geometry.spacing[i], in.volume.geometry.spacing[i], 1e-5);
    EXPECT_NEAR(out.volume.geometry.origin[i], in.volume.geometry.origin[i], 1e-4);
  }
  EXPECT_FALSE(attribute(out, "StudyInstanceUID").empty());
  EXPECT_FALSE(attribute(out, "SeriesInstanceUID").empty());
  EXPECT_EQ(attribute(out, "Modality"), "CT");
  EXPECT_EQ(attribute(out, "Manufacturer"), "SIEMENS");
  EXPECT_EQ(attribute(out, "SeriesDescription"), "CT Body 3.0 [ctdenoise]");
}

TEST(DicomOutput, NiftiToDicomSeriesKeepsGeometry) {
  CTD_REQUIRE_SHARED_DATA();
  TempDir dir;
  const auto in = ctd::io::read_image(data("nifti_totalseg_example_ct/example_ct_sm.nii.gz"));
  ctd::io::write_image(in.volume, in.info, dir / "from_nifti");
  const auto out = ctd::io::read_image(dir / "from_nifti");
  ASSERT_EQ(out.volume.dims(), in.volume.dims());
  for (std::int64_t i = 0; i < in.volume.size(); ++i) ASSERT_EQ(out.volume.data()[i], in.volume.data()[i]) << i;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(out.volume.geometry.origin[i], in.volume.geometry.origin[i], 1e-3) << i;
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(out.volume.geometry.direction[i], in.volume.geometry.direction[i], 1e-5) << i;
}

}  // namespace
