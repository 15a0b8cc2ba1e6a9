// Writing a kiln .plan file: header + FlatBuffer + 4096-aligned weight
// sections (layout in schemas/plan.fbs). Header-only and free of FlatBuffers,
// so the compiler's plan writer and the runtime's tests share one writer.
//
// The section table (offsets, sizes, checksums) lives inside the FlatBuffer,
// but where the sections start depends on the FlatBuffer's size. WritePlanFile
// resolves that with a callback: it asks the caller to build the
// FlatBuffer for a proposed placement, and re-proposes a later placement until
// the FlatBuffer fits in front of the first section (usually on the first try,
// because offsets are fixed-width 64-bit fields). Sections are streamed
// (SectionSource), so a plan of any size is written without holding it.
#pragma once

#include "plan_format.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

namespace kiln {

// Bytes of one weight section, owned by the caller for the duration of the
// write. Tensors inside it are placed at kTensorAlign (see SectionBuffer).
struct SectionBlob {
  const void *data = nullptr;
  uint64_t size = 0;
};

// Where WritePlanFile puts a section, and the checksum the FlatBuffer must
// record for it in Plan.sections[i].
struct SectionPlacement {
  uint64_t offset = 0; // from the start of the file, multiple of kSectionAlign
  uint64_t size = 0;
  uint64_t checksum = 0; // PlanChecksum of the section's bytes
};

// Builds the finished FlatBuffer (root Plan, identifier "KPLN") whose
// Plan.sections[i] records placements[i] verbatim. Returns the bytes; an
// empty result aborts the write.
using PlanFlatBufferBuilder =
    std::function<std::vector<uint8_t>(const std::vector<SectionPlacement> &placements)>;

// Places sections back to back at kSectionAlign, the first one at or after
// kPlanHeaderSize + reserved_flatbuffer_bytes. Exposed for tests and tools.
inline std::vector<SectionPlacement> PlaceSections(uint64_t reserved_flatbuffer_bytes,
                                                   const std::vector<SectionBlob> &sections) {
  std::vector<SectionPlacement> out;
  uint64_t pos = AlignUp(kPlanHeaderSize + reserved_flatbuffer_bytes, kSectionAlign);
  for (const SectionBlob &s : sections) {
    out.push_back({pos, s.size, PlanChecksum(s.data, s.size)});
    pos = AlignUp(pos + s.size, kSectionAlign);
  }
  return out;
}

// Fills magic, versions, sizes and both checksums of a header.
inline PlanHeader MakePlanHeader(const uint8_t *flatbuffer, uint64_t flatbuffer_size,
                                 uint64_t file_size) {
  PlanHeader h;
  std::memset(&h, 0, sizeof(h));
  std::memcpy(h.magic, kPlanMagic, sizeof(h.magic));
  h.format_major = kPlanFormatMajor;
  h.format_minor = kPlanFormatMinor;
  h.flatbuffer_offset = kPlanHeaderSize;
  h.flatbuffer_size = flatbuffer_size;
  h.flatbuffer_checksum = PlanChecksum(flatbuffer, flatbuffer_size);
  h.file_size = file_size;
  h.header_checksum = PlanChecksum(&h, 48);
  return h;
}

namespace plan_file_detail {

inline bool WriteAllFd(int fd, const void *data, uint64_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    size_t chunk = size > (1u << 30) ? (1u << 30) : static_cast<size_t>(size);
    ssize_t n = ::write(fd, p, chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<uint64_t>(n);
  }
  return true;
}

inline bool PwriteAllFd(int fd, const void *data, uint64_t size, uint64_t offset) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::pwrite(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

inline bool WriteZerosFd(int fd, uint64_t count) {
  static const char zeros[65536] = {};
  while (count > 0) {
    uint64_t n = count < sizeof(zeros) ? count : sizeof(zeros);
    if (!WriteAllFd(fd, zeros, n))
      return false;
    count -= n;
  }
  return true;
}

// Placements for sections of the given sizes, with `checksum` in every one.
inline std::vector<SectionPlacement> PlaceSizes(uint64_t reserved_flatbuffer_bytes,
                                                const std::vector<uint64_t> &sizes,
                                                uint64_t checksum) {
  std::vector<SectionPlacement> out;
  uint64_t pos = AlignUp(kPlanHeaderSize + reserved_flatbuffer_bytes, kSectionAlign);
  for (uint64_t size : sizes) {
    out.push_back({pos, size, checksum});
    pos = AlignUp(pos + size, kSectionAlign);
  }
  return out;
}

} // namespace plan_file_detail

// Receives one section's bytes, in order, while WritePlanFile streams them
// to the file with plain write()s (no output mapping, so the written bytes
// never count as the writer's resident memory) and checksums them.
class SectionWriter {
public:
  explicit SectionWriter(int fd) : fd_(fd) {}
  // False on an I/O error (the writer then reports the failed write).
  bool Write(const void *data, uint64_t size) {
    if (size == 0)
      return true;
    sum_.Update(data, size);
    written_ += size;
    return plan_file_detail::WriteAllFd(fd_, data, size);
  }
  bool WriteZeros(uint64_t count) {
    static const char zeros[4096] = {};
    while (count > 0) {
      uint64_t n = count < sizeof(zeros) ? count : sizeof(zeros);
      if (!Write(zeros, n))
        return false;
      count -= n;
    }
    return true;
  }
  uint64_t written() const { return written_; }
  uint64_t checksum() const { return sum_.Final(); }

private:
  int fd_;
  PlanChecksumStream sum_;
  uint64_t written_ = 0;
};

// A section whose bytes are produced while the file is written, so that no
// copy of the whole section ever exists in memory. `write` must pass exactly
// `size` bytes to the writer; it returns "" or a message naming what failed.
struct SectionSource {
  uint64_t size = 0;
  std::function<std::string(SectionWriter &out)> write;
};

// Lays out and writes a complete plan to `path` (through `path`.tmp and a
// rename, so a reader never sees a half-written plan). Sections are streamed
// first, behind a region reserved for the header and FlatBuffer; their
// checksums are known only then, so the FlatBuffer is built once with
// placeholder checksums to size that region and once more with the real ones,
// and written last at its place. Gaps between regions are zero, which the
// loader checks so that no byte of the file escapes verification. Returns ""
// on success, else a message naming what failed.
//
// `sections_written`, when given, runs after the sections and before the final
// FlatBuffer is built (e.g. to wait for hashes computed meanwhile); what it
// changes must not make the FlatBuffer larger. A non-empty result aborts.
//
// `before_rename`, when given, runs on the complete file at its temporary
// path (e.g. to load and check it); a non-empty result removes the file and
// aborts, so whatever was at `path` before stays as it was.
inline std::string
StreamPlanFile(const std::string &path, const PlanFlatBufferBuilder &build,
               const std::vector<SectionSource> &sections,
               const std::function<std::string()> &sections_written = {},
               const std::function<std::string(const std::string &tmp)> &before_rename = {}) {
  using namespace plan_file_detail;
  std::vector<uint64_t> sizes;
  for (const SectionSource &s : sections)
    sizes.push_back(s.size);
  // A nonzero placeholder: a zero checksum could be left out of the
  // FlatBuffer as a default, and the real one would then need more room.
  constexpr uint64_t kPlaceholder = ~0ULL;
  // Room for FlatBuffer size drift between the two builds (alignment
  // padding of a checksum that happens to be zero).
  constexpr uint64_t kSlack = 64;
  uint64_t reserved = 0;
  std::vector<SectionPlacement> placements;
  std::vector<uint8_t> fb;
  for (int attempt = 0;; ++attempt) {
    if (attempt == 8)
      return "plan FlatBuffer size does not settle across rebuilds";
    placements = PlaceSizes(reserved, sizes, kPlaceholder);
    fb = build(placements);
    if (fb.empty())
      return "plan FlatBuffer builder returned no bytes";
    if (sections.empty() || fb.size() + kSlack <= reserved)
      break;
    reserved = fb.size() + kSlack;
  }

  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return "cannot open '" + tmp + "' for writing: " + std::strerror(errno);
  auto fail = [&](const std::string &message) {
    ::close(fd);
    std::remove(tmp.c_str());
    return message;
  };
  const std::string write_failed = "write to '" + tmp + "' failed (disk full?)";
  uint64_t pos = 0;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (!WriteZerosFd(fd, placements[i].offset - pos))
      return fail(write_failed);
    SectionWriter out(fd);
    std::string error = sections[i].write(out);
    if (!error.empty())
      return fail(error);
    if (out.written() != sections[i].size)
      return fail("section " + std::to_string(i) + " wrote " + std::to_string(out.written()) +
                  " bytes but declared " + std::to_string(sections[i].size));
    placements[i].checksum = out.checksum();
    pos = placements[i].offset + sections[i].size;
  }
  if (sections_written) {
    std::string error = sections_written();
    if (!error.empty())
      return fail(error);
  }
  if (!sections.empty() || sections_written) {
    fb = build(placements);
    if (fb.empty())
      return fail("plan FlatBuffer builder returned no bytes");
    if (!sections.empty() && kPlanHeaderSize + fb.size() > placements[0].offset)
      return fail("plan FlatBuffer grew past its reserved room when its checksums were filled in");
  }
  uint64_t file_size = sections.empty() ? kPlanHeaderSize + fb.size() : pos;
  PlanHeader header = MakePlanHeader(fb.data(), fb.size(), file_size);
  bool ok = PwriteAllFd(fd, &header, sizeof(header), 0) &&
            PwriteAllFd(fd, fb.data(), fb.size(), kPlanHeaderSize);
  if (::close(fd) != 0)
    ok = false;
  if (!ok) {
    std::remove(tmp.c_str());
    return write_failed;
  }
  if (before_rename) {
    std::string error = before_rename(tmp);
    if (!error.empty()) {
      std::remove(tmp.c_str());
      return error;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return "cannot rename '" + tmp + "' to '" + path + "': " + err;
  }
  return "";
}

// The same for sections already in memory (tests, small plans).
inline std::string WritePlanFile(const std::string &path, const PlanFlatBufferBuilder &build,
                                 const std::vector<SectionBlob> &sections) {
  std::vector<SectionSource> sources;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].size > 0 && sections[i].data == nullptr)
      return "section " + std::to_string(i) + " has a size but no data";
    SectionBlob blob = sections[i];
    sources.push_back({blob.size, [blob](SectionWriter &out) {
                         return out.Write(blob.data, blob.size) ? std::string()
                                                                : std::string("write failed");
                       }});
  }
  return StreamPlanFile(path, build, sources);
}

// Accumulates one section's tensors, each at a multiple of kTensorAlign, as
// the loader requires. Append returns the tensor's offset within the section.
class SectionBuffer {
public:
  uint64_t Append(const void *data, uint64_t size) {
    uint64_t offset = AlignUp(bytes_.size(), kTensorAlign);
    bytes_.resize(offset + size, 0);
    if (size > 0)
      std::memcpy(bytes_.data() + offset, data, size);
    return offset;
  }
  const std::vector<uint8_t> &bytes() const { return bytes_; }
  SectionBlob blob() const { return {bytes_.data(), bytes_.size()}; }

private:
  std::vector<uint8_t> bytes_;
};

} // namespace kiln
