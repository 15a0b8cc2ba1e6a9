// Checksum-preserving plan mutation (plan_mutator.h).
#include "plan_mutator.h"

#include "kiln_schema/plan_generated.h"
#include "plan_format.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

namespace kiln::fuzz {
namespace {

// The FlatBuffer's bytes, copied to 8-byte-aligned storage: FlatBuffers
// reads scalars in place, and libFuzzer's buffers promise no alignment.
struct AlignedFlatBuffer {
  std::vector<uint64_t> words;
  size_t size;
  AlignedFlatBuffer(const uint8_t *p, size_t n) : words((n + 7) / 8 + 1), size(n) {
    std::memcpy(words.data(), p, n);
  }
  uint8_t *data() { return reinterpret_cast<uint8_t *>(words.data()); }
};

const fb::Plan *VerifiedPlan(AlignedFlatBuffer &fbuf) {
  flatbuffers::Verifier::Options opts;
  opts.max_tables = 1u << 24; // as the loader
  flatbuffers::Verifier verifier(fbuf.data(), fbuf.size, opts);
  return fb::VerifyPlanBuffer(verifier) ? fb::GetPlan(fbuf.data()) : nullptr;
}

bool ReadHeader(const uint8_t *data, size_t size, PlanHeader *h) {
  if (size < kPlanHeaderSize)
    return false;
  std::memcpy(h, data, sizeof(*h));
  return h->flatbuffer_offset == kPlanHeaderSize &&
         h->flatbuffer_size <= size - kPlanHeaderSize;
}

// Where the weight sections begin (the end of the file when there are none):
// the first section's offset when the FlatBuffer says, else the next page.
size_t SectionsStart(const uint8_t *data, size_t size, const PlanHeader &h) {
  size_t fb_end = kPlanHeaderSize + h.flatbuffer_size;
  if (fb_end == size)
    return size;
  AlignedFlatBuffer fbuf(data + kPlanHeaderSize, h.flatbuffer_size);
  uint64_t start = AlignUp(fb_end, kSectionAlign);
  if (const fb::Plan *plan = VerifiedPlan(fbuf))
    if (plan->sections() && plan->sections()->size() > 0)
      start = plan->sections()->Get(0)->offset();
  return std::clamp<uint64_t>(start, fb_end, size);
}

// Mutates the FlatBuffer alone; the zero padding after it absorbs a change
// of length so that the sections keep their offsets.
size_t MutateFlatBuffer(uint8_t *data, size_t size, size_t max_size, const PlanHeader &h) {
  size_t tail = SectionsStart(data, size, h);
  size_t room = tail < size ? tail - kPlanHeaderSize : max_size - kPlanHeaderSize;
  if (room == 0)
    return size;
  std::vector<uint8_t> fbuf(room);
  size_t n = std::min<size_t>(h.flatbuffer_size, room);
  std::memcpy(fbuf.data(), data + kPlanHeaderSize, n);
  n = LLVMFuzzerMutate(fbuf.data(), n, room);
  std::memcpy(data + kPlanHeaderSize, fbuf.data(), n);
  size_t end = kPlanHeaderSize + n;
  if (tail < size)
    std::memset(data + end, 0, tail - end); // sections stay at [tail, size)
  else
    size = end;
  PlanHeader nh = h;
  nh.flatbuffer_size = n;
  std::memcpy(data, &nh, sizeof(nh));
  return size;
}

} // namespace

void ResealPlan(uint8_t *data, size_t size) {
  PlanHeader h;
  if (size < kPlanHeaderSize)
    return;
  bool framed = ReadHeader(data, size, &h);
  if (framed) {
    AlignedFlatBuffer fbuf(data + kPlanHeaderSize, h.flatbuffer_size);
    if (const fb::Plan *plan = VerifiedPlan(fbuf); plan && plan->sections()) {
      for (const fb::Section *s : *plan->sections()) {
        if (s->offset() > size || s->size() > size - s->offset())
          continue;
        // Section privately inherits flatbuffers::Table, whose SetField
        // overwrites a stored scalar in place.
        auto *table = reinterpret_cast<flatbuffers::Table *>(const_cast<fb::Section *>(s));
        table->SetField<uint64_t>(fb::Section::VT_CHECKSUM,
                                  PlanChecksum(data + s->offset(), s->size()), 0);
      }
      std::memcpy(data + kPlanHeaderSize, fbuf.data(), h.flatbuffer_size);
    }
    h.flatbuffer_checksum = PlanChecksum(data + kPlanHeaderSize, h.flatbuffer_size);
  }
  h.file_size = size;
  h.header_checksum = PlanChecksum(&h, 48);
  std::memcpy(data, &h, sizeof(h));
}

size_t MutatePlan(uint8_t *data, size_t size, size_t max_size, unsigned seed) {
  std::minstd_rand rng(seed);
  PlanHeader h;
  size_t n;
  // One mutation in eight goes anywhere (header fields, section bytes,
  // length); the rest go to the FlatBuffer, where the structure lives.
  if (rng() % 8 == 0 || !ReadHeader(data, size, &h))
    n = LLVMFuzzerMutate(data, size, max_size);
  else
    n = MutateFlatBuffer(data, size, max_size, h);
  ResealPlan(data, n);
  return n;
}

} // namespace kiln::fuzz
