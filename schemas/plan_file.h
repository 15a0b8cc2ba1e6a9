// Writing a kiln .plan file: header + FlatBuffer + 4096-aligned weight
// sections (layout in schemas/plan.fbs). Header-only and free of FlatBuffers,
// so the compiler's plan writer and the runtime's tests share one writer.
//
// The section table (offsets, sizes, checksums) lives inside the FlatBuffer,
// but where the sections start depends on the FlatBuffer's size. WritePlanFile
// resolves that with a callback: it computes every section's checksum first
// (they do not depend on placement), then asks the caller to build the
// FlatBuffer for a proposed placement, and re-proposes a later placement until
// the FlatBuffer fits in front of the first section (usually on the first try,
// because offsets are fixed-width 64-bit fields).
#pragma once

#include "plan_format.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
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

inline bool WriteAll(std::FILE *f, const void *data, uint64_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    size_t chunk = size > (1u << 30) ? (1u << 30) : static_cast<size_t>(size);
    if (std::fwrite(p, 1, chunk, f) != chunk)
      return false;
    p += chunk;
    size -= chunk;
  }
  return true;
}

inline bool WriteZeros(std::FILE *f, uint64_t count) {
  static const char zeros[4096] = {};
  while (count > 0) {
    uint64_t n = count < sizeof(zeros) ? count : sizeof(zeros);
    if (!WriteAll(f, zeros, n))
      return false;
    count -= n;
  }
  return true;
}

} // namespace plan_file_detail

// Lays out and writes a complete plan to `path` (through `path`.tmp and a
// rename, so a reader never sees a half-written plan). Gaps between regions
// are zero, which the loader checks so that no byte of the file escapes
// verification. Returns "" on success, else a message naming what failed.
inline std::string WritePlanFile(const std::string &path, const PlanFlatBufferBuilder &build,
                                 const std::vector<SectionBlob> &sections) {
  using namespace plan_file_detail;
  for (size_t i = 0; i < sections.size(); ++i)
    if (sections[i].size > 0 && sections[i].data == nullptr)
      return "section " + std::to_string(i) + " has a size but no data";

  // Fixpoint: propose placements for a reserved FlatBuffer size; if the built
  // FlatBuffer is larger than reserved, reserve its size and try again.
  uint64_t reserved = 0;
  std::vector<SectionPlacement> placements;
  std::vector<uint8_t> fb;
  for (int attempt = 0;; ++attempt) {
    if (attempt == 8)
      return "plan FlatBuffer size does not settle across rebuilds";
    placements = PlaceSections(reserved, sections);
    fb = build(placements);
    if (fb.empty())
      return "plan FlatBuffer builder returned no bytes";
    if (fb.size() <= reserved || sections.empty())
      break;
    if (AlignUp(kPlanHeaderSize + fb.size(), kSectionAlign) ==
        AlignUp(kPlanHeaderSize + reserved, kSectionAlign))
      break; // it still fits in front of the proposed first section
    reserved = fb.size();
  }

  uint64_t fb_end = kPlanHeaderSize + fb.size();
  uint64_t file_size = sections.empty() ? fb_end : placements.back().offset + sections.back().size;
  PlanHeader header = MakePlanHeader(fb.data(), fb.size(), file_size);

  std::string tmp = path + ".tmp";
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return "cannot open '" + tmp + "' for writing: " + std::strerror(errno);
  bool ok = WriteAll(f, &header, sizeof(header)) && WriteAll(f, fb.data(), fb.size());
  uint64_t pos = fb_end;
  for (size_t i = 0; ok && i < sections.size(); ++i) {
    ok = WriteZeros(f, placements[i].offset - pos) &&
         WriteAll(f, sections[i].data, sections[i].size);
    pos = placements[i].offset + sections[i].size;
  }
  if (std::fclose(f) != 0)
    ok = false;
  if (!ok) {
    std::remove(tmp.c_str());
    return "write to '" + tmp + "' failed (disk full?)";
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp.c_str());
    return "cannot rename '" + tmp + "' to '" + path + "': " + err;
  }
  return "";
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
