// DICOM through ITK's GDCM IO: single files and series folders in, derived series out.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <gdcmImageReader.h>
#include <gdcmReader.h>
#include <gdcmUIDGenerator.h>
#include <itkGDCMImageIO.h>
#include <itkGDCMSeriesFileNames.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkImageSeriesReader.h>
#include <itkMetaDataObject.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <optional>
#include <set>

namespace ctd::io::detail {
namespace {

using FloatImage = itk::Image<float, 3>;

std::string get(const itk::MetaDataDictionary& dict, const std::string& key) {
  std::string value;
  itk::ExposeMetaData<std::string>(dict, key, value);
  const auto first = value.find_first_not_of(" \0", 0, 2), last = value.find_last_not_of(" \0", std::string::npos, 2);
  return first == std::string::npos ? std::string() : value.substr(first, last - first + 1);
}

void set(itk::MetaDataDictionary& dict, const std::string& key, const std::string& value) {
  itk::EncapsulateMetaData<std::string>(dict, key, value);
}

// Attributes worth showing in `ctdenoise info` and in reports.
const std::pair<const char*, const char*> kShownAttributes[] = {
    {"0008|0060", "Modality"},          {"0008|0070", "Manufacturer"},     {"0008|1090", "ManufacturerModelName"},
    {"0010|0010", "PatientName"},       {"0010|0020", "PatientID"},        {"0008|0020", "StudyDate"},
    {"0008|1030", "StudyDescription"},  {"0008|103e", "SeriesDescription"}, {"0020|000d", "StudyInstanceUID"},
    {"0020|000e", "SeriesInstanceUID"}, {"0018|0060", "KVP"},              {"0018|0050", "SliceThickness"},
    {"0028|1052", "RescaleIntercept"},  {"0028|1053", "RescaleSlope"},     {"0002|0010", "TransferSyntaxUID"},
    {"0008|0008", "ImageType"},         {"0008|2111", "DerivationDescription"},
};

std::string choose_series(const std::vector<std::string>& ids, const std::string& wanted,
                          itk::GDCMSeriesFileNames& names, const fs::path& folder) {
  if (!wanted.empty()) {
    std::vector<std::string> matches;
    for (const auto& id : ids) {
      if (id == wanted) return id;
      if (id.starts_with(wanted)) matches.push_back(id);
    }
    if (matches.size() == 1) return matches.front();
    fail(ErrorKind::InvalidArgument,
         fmt::format("{} series '{}' in {}", matches.empty() ? "no" : "more than one", wanted, quoted(folder)));
  }
  if (ids.size() == 1) return ids.front();
  std::string list;
  for (const auto& id : ids) {
    list += fmt::format("{}{} ({} files)", list.empty() ? "" : "; ", id, names.GetFileNames(id).size());
  }
  fail(ErrorKind::InvalidArgument, fmt::format("{} holds {} DICOM series; choose one with --series: {}",
                                               quoted(folder), ids.size(), list));
}

// GDCM reads an uncompressed file whose pixel data is cut short without complaint (it pads),
// so check that the file reaches the end of rows x columns x frames x bytes per pixel after the
// start of the pixel data. Compressed data is checked by its decoder.
// Before the pixels are read (and their buffer allocated): a file cut short would otherwise be
// read in full first.
void check_complete(const fs::path& file) {
  const gdcm::Tag pixel_data(0x7fe0, 0x0010);
  gdcm::Reader reader;
  reader.SetFileName(file.c_str());
  if (!reader.ReadUpToTag(pixel_data, {pixel_data})) fail(ErrorKind::Io, fmt::format("{} is corrupt", quoted(file)));
  if (reader.GetFile().GetHeader().GetDataSetTransferSyntax().IsEncapsulated()) return;
  const gdcm::DataSet& dataset = reader.GetFile().GetDataSet();
  const auto number = [&](std::uint16_t element, std::uint64_t fallback) -> std::uint64_t {
    const gdcm::Tag tag(0x0028, element);
    if (!dataset.FindDataElement(tag)) return fallback;
    const gdcm::ByteValue* value = dataset.GetDataElement(tag).GetByteValue();
    if (!value || value->GetLength() == 0) return fallback;
    const std::string text(value->GetPointer(), value->GetLength());
    if (element == 0x0008) return std::uint64_t(std::max(1LL, std::atoll(text.c_str())));  // NumberOfFrames: IS text
    std::uint16_t binary = 0;  // Rows, Columns, BitsAllocated: US, little-endian in the files GDCM reads here
    std::memcpy(&binary, text.data(), std::min<std::size_t>(2, text.size()));
    return binary;
  };
  const std::uint64_t pixel_bytes = number(0x0010, 0) * number(0x0011, 0) * number(0x0008, 1) * ((number(0x0100, 16) + 7) / 8);
  // The reader stops at the pixel data element's tag or just after its header (GDCM does not
  // say which): where the next four bytes are the tag, the header (8 bytes, 12 with an explicit
  // OB/OW value representation) comes first.
  std::uint64_t start = std::uint64_t(reader.GetStreamCurrentPosition());
  {
    std::ifstream in(file, std::ios::binary);
    unsigned char head[6] = {};
    in.seekg(std::streamoff(start));
    if (in.read(reinterpret_cast<char*>(head), sizeof head)) {
      const bool little = head[0] == 0xe0 && head[1] == 0x7f && head[2] == 0x10 && head[3] == 0x00;
      const bool big = head[0] == 0x7f && head[1] == 0xe0 && head[2] == 0x00 && head[3] == 0x10;
      const bool explicit_vr = (head[4] == 'O' && (head[5] == 'B' || head[5] == 'W')) || (head[4] == 'U' && head[5] == 'N');
      if (little || big) start += explicit_vr ? 12 : 8;
    }
  }
  const std::uint64_t end = start + pixel_bytes;
  if (fs::file_size(file) < end) {
    fail(ErrorKind::Io, fmt::format("{} is truncated: it has {} bytes, its pixel data ends at byte {}", quoted(file),
                                    fs::file_size(file), end));
  }
}

}  // namespace

// GDCM, as Debian builds it, stops the process on an assertion for some corrupt files (seen by
// the fuzzer: a mangled file meta group). So the files are first parsed and decoded in a child
// process; if it dies, the file it was on is reported corrupt and the real read never starts.
void probe_dicom_in_child(const fs::path& path) {
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const auto& entry : fs::directory_iterator(path)) {
      if (entry.is_regular_file()) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  // Several children, each with a share of the files (every k-th), each telling its parent which
  // file it is on before it parses it.
  struct Child {
    pid_t pid = -1;
    int channel = -1;
  };
  const std::size_t count = std::min<std::size_t>(files.size(), std::size_t(std::min(16, cpu::hardware_threads())));
  std::vector<Child> children;
  for (std::size_t k = 0; k < count; ++k) {
    int channel[2];
    if (::pipe(channel) != 0) break;  // fewer probes possible: the files of the others are read unprobed
    const pid_t pid = ::fork();
    if (pid < 0) {
      ::close(channel[0]);
      ::close(channel[1]);
      break;
    }
    if (pid == 0) {
      ::close(channel[0]);
      for (std::size_t i = k; i < files.size(); i += count) {
        const std::uint32_t index = std::uint32_t(i);
        if (::write(channel[1], &index, sizeof index) != sizeof index) ::_exit(0);
        gdcm::ImageReader reader;
        reader.SetFileName(files[i].c_str());
        // Decoded into untouched memory (not zeroed: a corrupt header may declare gigabytes).
        if (reader.Read() && reader.GetImage().GetBufferLength() <= fs::file_size(files[i]) * 64 + (1 << 20)) {
          const std::unique_ptr<char[]> buffer(new (std::nothrow) char[reader.GetImage().GetBufferLength()]);
          if (buffer) reader.GetImage().GetBuffer(buffer.get());
        }
      }
      ::_exit(0);
    }
    ::close(channel[1]);
    children.push_back({pid, channel[0]});
  }
  std::optional<std::pair<std::uint32_t, int>> stopped;  // the first file a child stopped on, and the signal
  for (const Child& child : children) {
    std::uint32_t index = 0, last = std::uint32_t(-1);
    while (::read(child.channel, &index, sizeof index) == sizeof index) last = index;
    ::close(child.channel);
    int status = 0;
    while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status) && last < files.size() && (!stopped || last < stopped->first)) {
      stopped = std::make_pair(last, WTERMSIG(status));
    }
  }
  if (stopped) {
    fail(ErrorKind::Io, fmt::format("{} is corrupt: the DICOM library stops on it ({})", quoted(files[stopped->first]),
                                    ::strsignal(stopped->second)));
  }
}

// Each file of a sorted series into its slice of `volume` (sized by the series reader), on all
// cores, with the file's attributes in `slices`. ITK errors (a file that no longer decodes) come
// out as they are; a slice of another size is an Io error. Reading keeps no global state but one
// flag of GDCM's (rescale slope and intercept forced on), which the header read before already
// set to the value every reader sets (writing is not so: see write_slices).
void read_slices(const std::vector<std::string>& files, Volume& volume, std::vector<itk::MetaDataDictionary>& slices) {
  const Dims d = volume.dims();
  if (std::int64_t(files.size()) != d.nz) {
    fail(ErrorKind::Io, fmt::format("the series has {} files for {} slices", files.size(), d.nz));
  }
  slices.assign(files.size(), {});
  const std::int64_t plane = d.nx * d.ny;
  cpu::for_each_piece(std::int64_t(files.size()), 1, std::min(16, cpu::hardware_threads()), [&](std::int64_t z, std::int64_t, std::int64_t) {
    auto io = itk::GDCMImageIO::New();
    auto reader = itk::ImageFileReader<FloatImage>::New();
    reader->SetImageIO(io);
    reader->SetFileName(files[std::size_t(z)]);
    reader->Update();
    const auto size = reader->GetOutput()->GetLargestPossibleRegion().GetSize();
    if (std::int64_t(size[0]) != d.nx || std::int64_t(size[1]) != d.ny || size[2] != 1) {
      fail(ErrorKind::Io, fmt::format("{} is {}x{}x{}, not a {}x{} slice like the first of its series",
                                      quoted(fs::path(files[std::size_t(z)])), size[0], size[1], size[2], d.nx, d.ny));
    }
    std::copy(reader->GetOutput()->GetBufferPointer(), reader->GetOutput()->GetBufferPointer() + plane,
              volume.data() + z * plane);
    slices[std::size_t(z)] = io->GetMetaDataDictionary();
  });
}

// For a folder without DICOM images of its own: its subfolders, which may hold the series (an
// archive's folder of series, a study's folder per series), named for the user to pick one.
std::string subfolder_hint(const fs::path& path) {
  std::vector<std::string> names;
  std::error_code error;
  for (fs::directory_iterator it(path, error), end; !error && it != end; it.increment(error))
    if (it->is_directory(error)) names.push_back(it->path().filename().string());
  if (names.empty()) return "";
  std::sort(names.begin(), names.end());
  std::string listed;
  for (std::size_t i = 0; i < std::min<std::size_t>(names.size(), 3); ++i) listed += (i ? ", " : "") + quoted(path / names[i]);
  if (names.size() > 3) listed += fmt::format(" and {} more", names.size() - 3);
  return fmt::format(" (its subfolders are not searched: give one of them, {})", listed);
}

Image read_dicom(const fs::path& path, const ReadOptions& options) {
  const LibraryOutputCapture quiet;
  StageClock clock;
  Image image;
  if (fs::is_directory(path)) {
    probe_dicom_in_child(path);  // single files were probed by read_itk
    image.info.stages.emplace_back("probe", clock.lap());
  }
  auto gdcm_io = itk::GDCMImageIO::New();
  FloatImage::Pointer itk_image;            // a single file
  std::optional<Volume> series_volume;      // a series
  auto source = std::make_shared<DicomSource>();
  try {
    if (fs::is_directory(path)) {
      auto names = itk::GDCMSeriesFileNames::New();
      names->SetUseSeriesDetails(true);  // split slices that differ in orientation, size or thickness
      names->SetDirectory(path.string());
      const std::vector<std::string> ids = names->GetSeriesUIDs();
      if (ids.empty()) fail(ErrorKind::Io, fmt::format("{} holds no readable DICOM image{}", quoted(path), subfolder_hint(path)));
      const std::string id = choose_series(ids, options.series_uid, *names, path);
      const std::vector<std::string> files = names->GetFileNames(id);
      gdcm_io->SetFileName(files.front());
      gdcm_io->ReadImageInformation();
      check_header(path, {gdcm_io->GetDimensions(0), gdcm_io->GetDimensions(1), files.size()},
                   {gdcm_io->GetSpacing(0), gdcm_io->GetSpacing(1)}, gdcm_io->GetComponentSize(), options);
      for (const auto& file : files) check_complete(file);
      // The geometry (the slices' spacing from their positions) is the series reader's; the
      // slices are decoded on all cores, each file by a reader of its own (GDCM decodes one file
      // at a time, and a cold disk serves one small file at a time slowly).
      auto reader = itk::ImageSeriesReader<FloatImage>::New();
      reader->SetImageIO(gdcm_io);
      reader->SetFileNames(files);
      reader->UpdateOutputInformation();
      series_volume = empty_volume(*reader->GetOutput());
      read_slices(files, *series_volume, source->slices);
      image.info.format = Format::DicomSeries;
      image.info.file_count = files.size();
      if (ids.size() > 1) image.info.notes.push_back(fmt::format("read series {} of the {} in the folder", id, ids.size()));
      if (files.size() > 1) image.info.notes.push_back(fmt::format("{} slices sorted by image position", files.size()));
    } else {
      gdcm_io->SetFileName(path.c_str());
      gdcm_io->ReadImageInformation();
      std::vector<std::uint64_t> extent;
      for (unsigned d = 0; d < gdcm_io->GetNumberOfDimensions(); ++d) extent.push_back(gdcm_io->GetDimensions(d));
      check_header(path, extent, {gdcm_io->GetSpacing(0), gdcm_io->GetSpacing(1)}, gdcm_io->GetComponentSize(), options);
      check_complete(path);
      auto reader = itk::ImageFileReader<FloatImage>::New();
      reader->SetImageIO(gdcm_io);
      reader->SetFileName(path.c_str());
      reader->Update();
      itk_image = reader->GetOutput();
      source->slices.push_back(gdcm_io->GetMetaDataDictionary());
      image.info.format = Format::Dicom;
    }
  } catch (const itk::ExceptionObject& e) {
    fail(kind_of(e), fmt::format("cannot read DICOM {}: {}", quoted(path), one_line(e.GetDescription())));
  }
  if (gdcm_io->GetNumberOfComponents() != 1) {
    fail(ErrorKind::Unsupported, fmt::format("{} is a colour DICOM image ({} samples per pixel); only grayscale "
                                             "is supported",
                                             quoted(path), gdcm_io->GetNumberOfComponents()));
  }
  image.info.path = path;
  // The component type ITK reports already holds the rescaled values (HU).
  image.info.pixel_type = pixel_type_of(gdcm_io->GetComponentType(), path);
  image.info.dicom = source;
  for (const auto& [key, name] : kShownAttributes) {
    if (auto value = get(source->slices.front(), key); !value.empty()) image.info.attributes[name] = value;
  }

  image.info.stages.emplace_back("file", clock.lap());
  if (series_volume) {
    image.volume = std::move(*series_volume);  // converted to float slice by slice already
  } else {
    image.volume = to_volume(*itk_image);
    image.info.stages.emplace_back("convert", clock.lap());
  }
  return image;
}

namespace {

// Attributes of the source that describe its pixel encoding or file container; the writer sets
// its own. Everything else (patient, study, equipment, acquisition) is kept.
bool describes_encoding(const std::string& key) {
  static const char* const kEncoding[] = {"0028|0002", "0028|0004", "0028|0006", "0028|0008", "0028|0010",
                                          "0028|0011", "0028|0100", "0028|0101", "0028|0102", "0028|0103",
                                          "0028|0106", "0028|0107", "0028|1052", "0028|1053", "0028|1054",
                                          "0028|2110", "0028|2112", "0028|2114"};
  if (key.starts_with("0002|") || key.starts_with("7fe0|")) return true;
  return std::find(std::begin(kEncoding), std::end(kEncoding), key) != std::end(kEncoding);
}

std::string numbers(std::initializer_list<double> values) {
  std::string out;
  for (double v : values) out += fmt::format("{}{:.10g}", out.empty() ? "" : "\\", std::abs(v) < 1e-12 ? 0.0 : v);
  return out;
}

template <class T>
std::int64_t write_slices(const Volume& volume, const ImageInfo& source, const fs::path& path,
                          const WriteOptions& options) {
  const Dims d = volume.dims();
  const Geometry& g = volume.geometry;
  const bool series = d.nz > 1 || !path.has_extension();
  if (series) fs::create_directory(path);

  gdcm::UIDGenerator uids;
  const std::vector<itk::MetaDataDictionary> empty(1);
  const auto& inputs = source.dicom ? source.dicom->slices : empty;
  const itk::MetaDataDictionary& first = inputs.front();
  auto keep_or_new = [&](const char* key) {
    const std::string v = get(first, key);
    return v.empty() ? std::string(uids.Generate()) : v;
  };
  const std::string study_uid = keep_or_new("0020|000d"), frame_uid = keep_or_new("0020|0052");
  const std::string series_uid = uids.Generate();
  // A non-DICOM input is labelled CT (this is a CT tool): CT Image Storage carries the image
  // plane (position, orientation), which Secondary Capture would drop.
  std::string modality = get(first, "0008|0060");
  if (modality.empty()) modality = "CT";
  std::string sop_class = get(first, "0008|0016");
  if (sop_class.empty()) sop_class = modality == "CT" ? "1.2.840.10008.5.1.4.1.1.2" : "1.2.840.10008.5.1.4.1.1.7";
  std::string description = get(first, "0008|103e");
  description = (description.empty() ? "" : description + " ") + "[ctdenoise]";
  if (description.size() > 64) description.resize(64);
  const std::string series_number = std::to_string(std::atoi(get(first, "0020|0011").c_str()) + 1000);

  // Column vectors of the direction matrix: row, column and slice axes in patient space.
  const double* m = g.direction.data();
  const double row[3] = {m[0], m[3], m[6]}, col[3] = {m[1], m[4], m[7]}, slice[3] = {m[2], m[5], m[8]};

  // One slice after the other: ITK's DICOM writer sets GDCM's global strings (UID root,
  // implementation class, application title) on every write, so writers on several threads
  // corrupt them (seen: an abort on the 16-core machine).
  using SliceImage = itk::Image<T, 2>;
  std::int64_t clamped = 0;
  const std::int64_t plane = d.nx * d.ny;
  for (std::int64_t z = 0; z < d.nz; ++z) {
    itk::MetaDataDictionary dict = inputs.size() == std::size_t(d.nz) ? inputs[std::size_t(z)] : first;
    for (const auto& key : dict.GetKeys()) {
      if (describes_encoding(key)) dict.Erase(key);
    }
    double position[3];
    for (int i = 0; i < 3; ++i) position[i] = g.origin[i] + double(z) * g.spacing[2] * slice[i];
    set(dict, "0008|0008", "DERIVED\\SECONDARY");
    set(dict, "0008|0016", sop_class);
    set(dict, "0008|0018", uids.Generate());
    set(dict, "0008|103e", description);
    set(dict, "0008|2111", options.description.substr(0, 1024));
    set(dict, "0020|000d", study_uid);
    set(dict, "0020|000e", series_uid);
    set(dict, "0020|0052", frame_uid);
    set(dict, "0020|0011", series_number);
    set(dict, "0020|0013", std::to_string(z + 1));
    set(dict, "0020|0032", numbers({position[0], position[1], position[2]}));
    set(dict, "0020|0037", numbers({row[0], row[1], row[2], col[0], col[1], col[2]}));
    set(dict, "0020|1041", numbers({position[0] * slice[0] + position[1] * slice[1] + position[2] * slice[2]}));
    set(dict, "0028|0030", numbers({g.spacing[1], g.spacing[0]}));
    if (d.nz > 1) set(dict, "0018|0088", numbers({g.spacing[2]}));
    set(dict, "0008|0060", modality);
    // Values are stored in the image's units (HU for CT) directly.
    set(dict, "0028|1052", "0");
    set(dict, "0028|1053", "1");
    if (modality == "CT") set(dict, "0028|1054", "HU");

    auto image = SliceImage::New();
    typename SliceImage::SizeType size;
    size[0] = static_cast<itk::SizeValueType>(d.nx);
    size[1] = static_cast<itk::SizeValueType>(d.ny);
    image->SetRegions(typename SliceImage::RegionType(size));
    typename SliceImage::SpacingType spacing;
    spacing[0] = g.spacing[0];
    spacing[1] = g.spacing[1];
    image->SetSpacing(spacing);
    image->Allocate();
    Volume one_slice({d.nx, d.ny, 1});
    std::memcpy(one_slice.data(), volume.data() + z * plane, sizeof(float) * std::size_t(plane));
    clamped += convert_voxels(one_slice, image->GetBufferPointer());
    image->SetMetaDataDictionary(dict);

    auto gdcm_io = itk::GDCMImageIO::New();
    gdcm_io->KeepOriginalUIDOn();
    gdcm_io->SetMetaDataDictionary(dict);
    auto writer = itk::ImageFileWriter<SliceImage>::New();
    writer->SetImageIO(gdcm_io);
    writer->SetInput(image);
    writer->SetFileName((series ? path / fmt::format("IM{:05d}.dcm", z + 1) : path).c_str());
    writer->Update();
  }
  return clamped;
}

}  // namespace

std::int64_t write_dicom(const Volume& volume, const ImageInfo& source, PixelType type, const fs::path& path,
                         const WriteOptions& options) {
  try {
    switch (type) {
      case PixelType::UInt8: return write_slices<std::uint8_t>(volume, source, path, options);
      case PixelType::UInt16: return write_slices<std::uint16_t>(volume, source, path, options);
      case PixelType::Int16: return write_slices<std::int16_t>(volume, source, path, options);
      default: fail(ErrorKind::Unsupported, fmt::format("DICOM output of {} pixels is not supported", to_string(type)));
    }
  } catch (const itk::ExceptionObject& e) {
    fail(ErrorKind::Io, fmt::format("cannot write DICOM {}: {}", quoted(path.filename()), one_line(e.GetDescription())));
  }
}

}  // namespace ctd::io::detail
