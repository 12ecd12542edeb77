// NIfTI, MetaImage, NRRD, TIFF and PNG through ITK's image IO classes.

#include "io/io_internal.hpp"

#include <fmt/format.h>

#include <itkGDCMImageIO.h>
#include <itkGDCMImageIOFactory.h>
#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkImageIOFactory.h>
#include <itkMetaImageIO.h>
#include <itkMultiThreaderBase.h>
#include <itkMetaImageIOFactory.h>
#include <itkNiftiImageIO.h>
#include <itkNiftiImageIOFactory.h>
#include <itkNrrdImageIO.h>
#include <itkNrrdImageIOFactory.h>
#include <itkPNGImageIO.h>
#include <itkPNGImageIOFactory.h>
#include <itkTIFFImageIO.h>
#include <itkTIFFImageIOFactory.h>

#include <gdcmTrace.h>

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>

namespace ctd::io::detail {

std::string one_line(const std::string& message) {
  // ITK: "/path/itkFoo.cxx:123:\nITK ERROR: FooImageIO(0x55..): the actual reason"
  std::string text = message;
  if (const auto pos = text.rfind("): "); pos != std::string::npos) text.erase(0, pos + 3);
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '.')) text.pop_back();
  return text;
}

std::string quoted(const fs::path& path) { return fmt::format("'{}'", path.string()); }

// What a user can do about the image libraries' errors that name an internal status only.
std::string with_hint(const std::string& description) {
  if (description.find("nrrdSpacingStatusScalarWithSpace") != std::string::npos) {
    return description + ": the header gives both 'space:' and 'spacings:', which NRRD does not allow; "
                         "delete the 'space:' line, or give 'space directions:' instead of 'spacings:'";
  }
  return description;
}

ErrorKind kind_of(const itk::ExceptionObject& e) {
  return dynamic_cast<const itk::MemoryAllocationError*>(&e) != nullptr ? ErrorKind::OutOfMemory : ErrorKind::Io;
}

void register_itk_factories() {
  // Registered by hand (not through ITK's generated registration) so that only these formats,
  // in this order, are probed.
  static std::once_flag once;
  std::call_once(once, [] {
    itk::Object::GlobalWarningDisplayOff();
    // ITK only reads and writes here: its thread pool would only add threads (and a crash at
    // exit when one of them cannot start for want of memory).
    itk::MultiThreaderBase::SetGlobalDefaultThreader(itk::MultiThreaderBase::ThreaderEnum::Platform);
    itk::MultiThreaderBase::SetGlobalDefaultNumberOfThreads(1);
    gdcm::Trace::WarningOff();
    gdcm::Trace::DebugOff();
    gdcm::Trace::ErrorOff();
    itk::GDCMImageIOFactory::RegisterOneFactory();
    itk::NiftiImageIOFactory::RegisterOneFactory();
    itk::MetaImageIOFactory::RegisterOneFactory();
    itk::NrrdImageIOFactory::RegisterOneFactory();
    itk::TIFFImageIOFactory::RegisterOneFactory();
    itk::PNGImageIOFactory::RegisterOneFactory();
  });
}

PixelType pixel_type_of(itk::IOComponentEnum component, const fs::path& path) {
  using C = itk::IOComponentEnum;
  switch (component) {
    case C::UCHAR: return PixelType::UInt8;
    case C::CHAR: return PixelType::Int8;
    case C::USHORT: return PixelType::UInt16;
    case C::SHORT: return PixelType::Int16;
    case C::UINT: return PixelType::UInt32;
    case C::INT: return PixelType::Int32;
    case C::FLOAT: return PixelType::Float32;
    case C::DOUBLE: return PixelType::Float64;
    default:
      fail(ErrorKind::Unsupported,
           fmt::format("{} has {} pixels; supported are 8/16/32-bit integers and 32/64-bit floats", quoted(path),
                       itk::ImageIOBase::GetComponentTypeAsString(component)));
  }
}

namespace {

Format format_of(const itk::ImageIOBase& imageio) {
  if (dynamic_cast<const itk::NiftiImageIO*>(&imageio)) return Format::Nifti;
  if (dynamic_cast<const itk::MetaImageIO*>(&imageio)) return Format::MetaImage;
  if (dynamic_cast<const itk::NrrdImageIO*>(&imageio)) return Format::Nrrd;
  if (dynamic_cast<const itk::TIFFImageIO*>(&imageio)) return Format::Tiff;
  return Format::Png;
}

}  // namespace

namespace {

// A folder of this process's own under the temporary directory, removed with everything in it.
class PrivateFolder {
 public:
  PrivateFolder() : path_(fs::temp_directory_path() / fmt::format("ctdenoise-read-{}-{}", ::getpid(), counter_++)) {
    fs::create_directories(path_, error_);
  }
  ~PrivateFolder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  const fs::path& path() const { return path_; }
  const std::error_code& error() const { return error_; }  // set when it could not be made

 private:
  static inline std::atomic<int> counter_{0};
  fs::path path_;
  std::error_code error_;
};

// nifticlib, given "x.nii.gz", reads the voxels of "x.nii" when that file exists too (the header
// comes from the file asked for): a silent mix of two images. Such a file is read through a link
// in a private folder, where it has no sibling.
class UnambiguousNiftiPath {
 public:
  explicit UnambiguousNiftiPath(const fs::path& path) : path_(path) {
    std::string name = path.filename().string();
    const std::string lower = lower_case(name);
    fs::path sibling;
    if (lower.ends_with(".nii.gz")) sibling = path.parent_path() / name.substr(0, name.size() - 3);
    else if (lower.ends_with(".nii")) sibling = path.parent_path() / (name + ".gz");
    std::error_code ec;
    if (sibling.empty() || !fs::exists(sibling, ec)) return;
    folder_.emplace();
    ec = folder_->error();
    if (!ec) fs::create_symlink(fs::absolute(path), folder_->path() / name, ec);
    if (ec) fail(ErrorKind::Io, fmt::format("cannot read {} apart from {}: {}", quoted(path), quoted(sibling), ec.message()));
    path_ = folder_->path() / name;
  }
  const fs::path& get() const { return path_; }

 private:
  fs::path path_;
  std::optional<PrivateFolder> folder_;
};

// The inflated bytes of a .nii.gz as a plain .nii in a private folder, for ITK to read: nifticlib
// inflates with zlib at a third of libdeflate's speed, after the data check has inflated it once.
class PlainNiftiCopy {
 public:
  PlainNiftiCopy(const fs::path& original, const std::vector<char>& bytes) {
    std::string name = original.filename().string();
    if (lower_case(name).ends_with(".gz")) name.resize(name.size() - 3);
    if (!lower_case(name).ends_with(".nii")) name += ".nii";
    if (folder_.error()) return;  // no room for the copy: ITK reads the compressed file itself
    path_ = folder_.path() / name;
    std::ofstream out(path_, std::ios::binary);
    if (!out.write(bytes.data(), std::streamsize(bytes.size())) || !out.flush()) path_.clear();
  }
  const fs::path& get() const { return path_; }  // empty when it could not be written

 private:
  PrivateFolder folder_;
  fs::path path_;
};

}  // namespace

Image read_itk(const fs::path& original_path, const ReadOptions& options) {
  const LibraryOutputCapture quiet;
  const UnambiguousNiftiPath unambiguous(original_path);
  const fs::path& path = unambiguous.get();
  // The formats with a signature or an extension of their own claim their files first; what none
  // claims goes to GDCM (after a probe in a child process: GDCM may stop the process on a corrupt
  // file, see read_dicom).
  itk::ImageIOBase::Pointer imageio;
  // "DICM" after the 128-byte preamble: DICOM, whatever else the preamble holds (some DICOM files
  // are valid TIFF files too).
  char magic[4] = {};
  if (std::ifstream in(path, std::ios::binary); in.seekg(128) && in.read(magic, 4) && std::memcmp(magic, "DICM", 4) == 0) {
    probe_dicom_in_child(path);
    return read_dicom(path, options);
  }
  for (itk::ImageIOBase::Pointer candidate :
       {itk::ImageIOBase::Pointer(itk::NiftiImageIO::New()), itk::ImageIOBase::Pointer(itk::MetaImageIO::New()),
        itk::ImageIOBase::Pointer(itk::NrrdImageIO::New()), itk::ImageIOBase::Pointer(itk::TIFFImageIO::New()),
        itk::ImageIOBase::Pointer(itk::PNGImageIO::New())}) {
    try {
      if (candidate->CanReadFile(path.c_str())) {
        imageio = candidate;
        break;
      }
    } catch (const itk::ExceptionObject& e) {  // its signature matched, its contents did not
      fail(ErrorKind::Io, fmt::format("cannot read {}: {}", quoted(original_path), one_line(e.GetDescription())));
    }
  }
  if (!imageio) {
    probe_dicom_in_child(path);
    if (auto dicom = itk::GDCMImageIO::New(); dicom->CanReadFile(path.c_str())) imageio = dicom;
  }
  if (!imageio) {
    fail(ErrorKind::Io, fmt::format("{} is not an image ctdenoise can read (DICOM, NIfTI, MetaImage, NRRD, TIFF, "
                                    "PNG), or it is corrupt",
                                    quoted(original_path)));
  }
  if (dynamic_cast<itk::GDCMImageIO*>(imageio.GetPointer())) return read_dicom(path, options);
  // Checks that must come before the library looks at the file.
  if (dynamic_cast<itk::NiftiImageIO*>(imageio.GetPointer())) check_nifti_header(original_path);
  if (dynamic_cast<itk::PNGImageIO*>(imageio.GetPointer())) check_png_data(original_path);
  if (dynamic_cast<itk::TIFFImageIO*>(imageio.GetPointer())) check_tiff_data(original_path);

  Image image;
  StageClock clock;
  std::optional<PlainNiftiCopy> plain_nifti;
  try {
    imageio->SetFileName(path.c_str());
    imageio->ReadImageInformation();
    if (imageio->GetNumberOfComponents() != 1) {
      fail(ErrorKind::Unsupported, fmt::format("{} has {} components per pixel (colour or vector image); only "
                                               "grayscale images are supported",
                                               quoted(original_path), imageio->GetNumberOfComponents()));
    }
    if (imageio->GetNumberOfDimensions() > 3) {
      std::size_t extra = 1;
      for (unsigned d = 3; d < imageio->GetNumberOfDimensions(); ++d) extra *= imageio->GetDimensions(d);
      if (extra > 1) {
        fail(ErrorKind::Unsupported, fmt::format("{} has {} dimensions; only 2D and 3D images are supported",
                                                 quoted(original_path), imageio->GetNumberOfDimensions()));
      }
    }
    image.info.path = original_path;
    image.info.format = format_of(*imageio);
    image.info.pixel_type = pixel_type_of(imageio->GetComponentType(), original_path);
    std::vector<std::uint64_t> extent;
    std::vector<double> spacing;
    for (unsigned d = 0; d < imageio->GetNumberOfDimensions(); ++d) {
      extent.push_back(imageio->GetDimensions(d));
      spacing.push_back(imageio->GetSpacing(d));
    }
    check_header(original_path, extent, spacing, imageio->GetComponentSize(), options);
    const std::uint64_t voxel_bytes = imageio->GetImageSizeInBytes();
    std::optional<DataLayout> layout;
    std::vector<char> nifti_bytes;            // a NIfTI file, inflated
    std::optional<NiftiVoxels> nifti_voxels;  // where in them the voxels are, when taken as they are
    switch (image.info.format) {
      case Format::Nifti: {
        nifti_bytes = nifti_file_bytes(path, voxel_bytes);
        check_nifti_data(original_path, nifti_bytes, imageio->GetImageSizeInPixels());
        // Voxels the library would return as they are stored are taken from these bytes (one
        // inflation, conversion on all cores); the others through a plain copy the library reads.
        nifti_voxels = nifti_plain_voxels(nifti_bytes);
        if (nifti_voxels && (nifti_voxels->type != image.info.pixel_type || imageio->GetNumberOfDimensions() > 3)) {
          nifti_voxels.reset();
        }
        if (!nifti_voxels && lower_case(path.filename().string()).ends_with(".gz")) plain_nifti.emplace(original_path, nifti_bytes);
        if (!nifti_voxels) nifti_bytes = {};
        break;
      }
      case Format::MetaImage: layout = metaimage_layout(original_path); break;
      case Format::Nrrd: layout = nrrd_layout(original_path); break;
      default: break;  // TIFF and PNG: checked above
    }
    if (layout) check_data(*layout, voxel_bytes, original_path);

    // Read in the file's own pixel type (no conversion inside ITK, which runs on one core), then
    // converted to float on all cores.
    const fs::path& read_path = plain_nifti && !plain_nifti->get().empty() ? plain_nifti->get() : path;
    // Voxels stored plainly in one file at a known place (raw NRRD, uncompressed MetaImage) are
    // read here on all cores; the geometry is still the library's.
    const bool plain = layout && !layout->file.empty() && !layout->at_end &&
                       layout->encoding == DataLayout::Encoding::Plain &&
                       (layout->byte_order || imageio->GetComponentSize() == 1) && imageio->GetNumberOfDimensions() <= 3;
    image.volume = with_pixel_type(image.info.pixel_type, [&](auto t) {
      using T = decltype(t);
      auto reader = itk::ImageFileReader<itk::Image<T, 3>>::New();
      reader->SetImageIO(imageio);
      reader->SetFileName(read_path.c_str());
      if (nifti_voxels) {
        reader->UpdateOutputInformation();
        Volume volume = empty_volume(*reader->GetOutput());  // its length checked by check_nifti_data
        voxels_to_float(reinterpret_cast<const T*>(nifti_bytes.data() + nifti_voxels->offset), volume.size(), volume.data());
        image.info.stages.emplace_back("file", clock.lap());  // inflated, then converted on all cores
        return volume;
      }
      if (plain) {
        reader->UpdateOutputInformation();
        image.volume = empty_volume(*reader->GetOutput());
        read_plain_voxels(layout->file, layout->offset, image.info.pixel_type, layout->byte_order.value_or(ByteOrder::Little),
                          options, image);
        image.info.stages.emplace_back("file", clock.lap());  // read and converted in one pass
        return std::move(image.volume);
      }
      reader->Update();
      image.info.stages.emplace_back("file", clock.lap());
      return to_volume(*reader->GetOutput());
    });
    image.info.stages.emplace_back("convert", clock.lap());
  } catch (const itk::ExceptionObject& e) {
    fail(kind_of(e), fmt::format("cannot read {}: {}", quoted(original_path), with_hint(one_line(e.GetDescription()))));
  }
  return image;
}

namespace {

// An ITK image with the volume's geometry, allocated: the volume's size, or one voxel (0) where
// only the header is wanted.
template <class T, unsigned D>
typename itk::Image<T, D>::Pointer itk_image_like(const Volume& volume, bool one_voxel) {
  using ImageType = itk::Image<T, D>;
  auto image = ImageType::New();
  typename ImageType::SizeType size;
  typename ImageType::SpacingType spacing;
  typename ImageType::PointType origin;
  typename ImageType::DirectionType direction;
  const std::int64_t n[3] = {volume.dims().nx, volume.dims().ny, volume.dims().nz};
  for (unsigned i = 0; i < D; ++i) {
    size[i] = one_voxel ? 1 : static_cast<itk::SizeValueType>(n[i]);
    spacing[i] = volume.geometry.spacing[i];
    origin[i] = volume.geometry.origin[i];
    for (unsigned j = 0; j < D; ++j) direction(i, j) = volume.geometry.direction[3 * i + j];
  }
  image->SetRegions(typename ImageType::RegionType(size));
  image->SetSpacing(spacing);
  image->SetOrigin(origin);
  image->SetDirection(direction);
  image->Allocate();
  if (one_voxel) image->FillBuffer(T{});
  return image;
}

template <class T, unsigned D>
void write_with_itk(typename itk::Image<T, D>::Pointer image, const fs::path& path) {
  auto writer = itk::ImageFileWriter<itk::Image<T, D>>::New();
  writer->SetFileName(path.c_str());
  writer->SetInput(image);
  writer->Update();
}

template <class T, unsigned D>
std::int64_t write_typed(const Volume& volume, const fs::path& path, StageTimes& stages) {
  StageClock clock;
  auto image = itk_image_like<T, D>(volume, false);
  const std::int64_t clamped = convert_voxels(volume, image->GetBufferPointer());
  stages.emplace_back("convert", clock.lap());
  write_with_itk<T, D>(image, path);
  stages.emplace_back("file", clock.lap());
  return clamped;
}

std::string read_whole_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(fs::file_size(path), '\0');
  if (!in.read(bytes.data(), std::streamsize(bytes.size()))) fail(ErrorKind::Io, fmt::format("cannot read back {}", quoted(path.filename())));
  return bytes;
}

// NRRD (.nrrd) and MetaImage (.mha, .mhd) with ITK's header and plain voxels written by
// write_plain_voxels (ITK converts into a copy of the volume and writes it on one core): ITK
// writes a one-voxel stand-in with the volume's geometry, whose size line is then set to the
// volume's. Nullopt, with nothing of use written, where the stand-in's header is not as expected.
template <class T>
std::optional<std::int64_t> write_header_and_plain_voxels(const Volume& volume, PixelType type, Format format,
                                                          const fs::path& path, StageTimes& stages) {
  StageClock clock;
  write_with_itk<T, 3>(itk_image_like<T, 3>(volume, true), path);
  std::string header = read_whole_file(path);
  const Dims d = volume.dims();
  const bool nrrd = format == Format::Nrrd;
  const std::string one = nrrd ? "\nsizes: 1 1 1\n" : "\nDimSize = 1 1 1\n";
  const std::size_t at = header.find(one);
  if (at == std::string::npos || header.find(one, at + 1) != std::string::npos) return std::nullopt;
  header.replace(at, one.size(), nrrd ? fmt::format("\nsizes: {} {} {}\n", d.nx, d.ny, d.nz)
                                      : fmt::format("\nDimSize = {} {} {}\n", d.nx, d.ny, d.nz));
  const bool attached = nrrd || lower_case(path.filename().string()).ends_with(".mha");
  if (attached) {
    // The stand-in's one voxel ends the file, right after the header's last line.
    const std::string end_of_header = nrrd ? "\n\n" : "ElementDataFile = LOCAL\n";
    if (header.size() < sizeof(T) + end_of_header.size()) return std::nullopt;
    header.resize(header.size() - sizeof(T));
    if (!header.ends_with(end_of_header)) return std::nullopt;
  }
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out.write(header.data(), std::streamsize(header.size())) || !out.flush()) {
      fail(ErrorKind::Io, fmt::format("cannot write {}", quoted(path.filename())));
    }
  }
  DataLayout layout;
  if (attached) {
    layout.file = path;
    layout.offset = header.size();
  } else {
    layout = metaimage_layout(path);
  }
  if (layout.file.empty() || layout.encoding != DataLayout::Encoding::Plain) return std::nullopt;
  const ByteOrder native = std::endian::native == std::endian::little ? ByteOrder::Little : ByteOrder::Big;
  const std::int64_t clamped = write_plain_voxels(volume, type, native, layout.file, layout.offset);
  stages.emplace_back("file", clock.lap());  // converted and written in one pass
  return clamped;
}

}  // namespace

namespace {

// An attached NRRD or MetaImage header and its plain voxels, rewritten with the voxels
// compressed on all cores (ITK would compress them on one): gzip members for NRRD ("encoding:
// gzip"; the NRRD library reads every member), one zlib stream for MetaImage ("CompressedData =
// True"; MetaIO reads one stream only).
void compress_attached_data(const fs::path& path, Format format, int level) {
  const std::string file = read_whole_file(path);
  const bool nrrd = format == Format::Nrrd;
  const std::string end_of_header = nrrd ? "\n\n" : "ElementDataFile = LOCAL\n";
  const std::size_t at = file.find(end_of_header);
  if (at == std::string::npos) fail(ErrorKind::Io, fmt::format("cannot compress {}: its header has no end", quoted(path.filename())));
  std::string header = file.substr(0, at + end_of_header.size());
  const std::size_t data_at = header.size();
  const std::string data = nrrd ? gzip_members(file.data() + data_at, file.size() - data_at, level)
                                : zlib_stream(file.data() + data_at, file.size() - data_at, level);
  auto replace = [&](const std::string& from, const std::string& to) {
    const std::size_t where = header.find(from);
    if (where == std::string::npos) fail(ErrorKind::Io, fmt::format("cannot compress {}: no '{}' line", quoted(path.filename()), from));
    header.replace(where, from.size(), to);
  };
  if (nrrd) {
    replace("encoding: raw\n", "encoding: gzip\n");
  } else {
    replace("CompressedData = False\n", "CompressedData = True\n");
    replace("ElementDataFile = LOCAL\n", fmt::format("CompressedDataSize = {}\nElementDataFile = LOCAL\n", data.size()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.write(header.data(), std::streamsize(header.size())) || !out.write(data.data(), std::streamsize(data.size())) ||
      !out.flush()) {
    fail(ErrorKind::Io, fmt::format("cannot write {}", quoted(path.filename())));
  }
}

}  // namespace

std::int64_t write_itk(const Volume& volume, PixelType type, Format format, const fs::path& path,
                       const WriteOptions& options, StageTimes& stages) {
  // PNG is 2D only, and a single-slice TIFF reads back best as a plain 2D page.
  const bool flat = volume.dims().nz == 1 && (format == Format::Png || format == Format::Tiff);
  // nifticlib compresses .nii.gz on one core with zlib: ITK writes .nii, compressed here on all.
  const bool gzipped_nifti = format == Format::Nifti && lower_case(path.filename().string()).ends_with(".gz");
  const fs::path written = gzipped_nifti ? fs::path(path).replace_extension("") : path;
  try {
    // .nhdr (NRRD's detached header) stays with ITK, which names its data file.
    const bool plain_voxels = !flat && (format == Format::MetaImage ||
                                        (format == Format::Nrrd && lower_case(path.extension().string()) == ".nrrd"));
    const std::int64_t clamped = with_pixel_type(type, [&](auto t) {
      using T = decltype(t);
      if (plain_voxels) {
        if (const auto done = write_header_and_plain_voxels<T>(volume, type, format, written, stages)) return *done;
      }
      return flat ? write_typed<T, 2>(volume, written, stages) : write_typed<T, 3>(volume, written, stages);
    });
    if (gzipped_nifti) {
      StageClock clock;
      gzip_file(written, path, options.compression_level);
      fs::remove(written);
      stages.emplace_back("compress", clock.lap());
    }
    if (options.compress && (format == Format::Nrrd || format == Format::MetaImage)) {
      StageClock clock;
      compress_attached_data(path, format, options.compression_level);
      stages.emplace_back("compress", clock.lap());
    }
    return clamped;
  } catch (const itk::ExceptionObject& e) {
    fail(ErrorKind::Io, fmt::format("cannot write {} as {} {}: {}", quoted(path.filename()), to_string(format),
                                    to_string(type), one_line(e.GetDescription())));
  }
}

}  // namespace ctd::io::detail

namespace ctd::io {

void check_side_output(const std::filesystem::path& path, bool overwrite) {
  const auto parent = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  if (!std::filesystem::is_directory(parent)) {
    detail::fail(ErrorKind::Io, fmt::format("output folder {} does not exist", detail::quoted(parent)));
  }
  if (std::filesystem::is_directory(path)) {
    detail::fail(ErrorKind::Io, fmt::format("{} is a folder", detail::quoted(path)));
  }
  if (!overwrite && std::filesystem::exists(path)) {
    detail::fail(ErrorKind::Io, fmt::format("{} already exists; pass --overwrite to replace it", detail::quoted(path)));
  }
}

void write_gray8_png(const std::vector<std::uint8_t>& pixels, int width, int height, const std::filesystem::path& path,
                     bool overwrite) {
  detail::register_itk_factories();
  check_side_output(path, overwrite);
  using Gray = itk::Image<std::uint8_t, 2>;
  auto image = Gray::New();
  Gray::SizeType size;
  size[0] = static_cast<itk::SizeValueType>(width);
  size[1] = static_cast<itk::SizeValueType>(height);
  image->SetRegions(Gray::RegionType(size));
  image->Allocate();
  std::copy(pixels.begin(), pixels.end(), image->GetBufferPointer());
  detail::StagedOutput staged(path, overwrite);
  try {
    const detail::LibraryOutputCapture quiet;
    auto writer = itk::ImageFileWriter<Gray>::New();
    writer->SetImageIO(itk::PNGImageIO::New());
    writer->SetFileName(staged.path().c_str());
    writer->SetInput(image);
    writer->Update();
  } catch (const itk::ExceptionObject& e) {
    detail::fail(ErrorKind::Io, fmt::format("cannot write {}: {}", detail::quoted(path), detail::one_line(e.GetDescription())));
  }
  staged.commit();
}

void write_text_file(const std::string& text, const std::filesystem::path& path, bool overwrite) {
  check_side_output(path, overwrite);
  detail::StagedOutput staged(path, overwrite);
  std::ofstream file(staged.path());
  if (!(file << text) || !file.flush()) detail::fail(ErrorKind::Io, fmt::format("cannot write {}", detail::quoted(path)));
  file.close();
  staged.commit();
}

}  // namespace ctd::io
