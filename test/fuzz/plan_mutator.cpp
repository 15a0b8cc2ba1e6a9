// Checksum-preserving plan mutation (plan_mutator.h).
#include "plan_mutator.h"

#include "kiln_schema/plan_generated.h"
#include "plan_format.h"

#include <flatbuffers/reflection.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
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
  return h->flatbuffer_offset == kPlanHeaderSize && h->flatbuffer_size <= size - kPlanHeaderSize;
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

// plan.fbs compiled to a binary schema (KILN_PLAN_BFBS, made by flatc at
// build time), for the field-aware mutation below.
const reflection::Schema *PlanSchema() {
  static const std::vector<uint8_t> bytes = [] {
    std::ifstream in(KILN_PLAN_BFBS, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }();
  if (bytes.empty())
    return nullptr;
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  return reflection::VerifySchemaBuffer(verifier) ? reflection::GetSchema(bytes.data()) : nullptr;
}

// One integer stored in the FlatBuffer: a table field that is present, or an
// element of a vector of integers.
struct IntSlot {
  uint8_t *at;
  reflection::BaseType type;
};

// Collects every stored integer of `table` (an `object`) and of the tables
// below it: slot numbers, tensor ids, dims, offsets, sizes, counts.
void CollectInts(const reflection::Schema &schema, const reflection::Object &object,
                 const flatbuffers::Table &table, std::vector<IntSlot> &out, int depth) {
  if (depth > 8 || !object.fields())
    return;
  for (const reflection::Field *f : *object.fields()) {
    reflection::BaseType type = f->type()->base_type();
    if (flatbuffers::IsInteger(type) && table.CheckField(f->offset())) {
      out.push_back({const_cast<uint8_t *>(table.GetAddressOf(f->offset())), type});
    } else if (type == reflection::Obj) {
      const reflection::Object *sub = schema.objects()->Get(f->type()->index());
      if (const flatbuffers::Table *child = flatbuffers::GetFieldT(table, *f);
          child && !sub->is_struct())
        CollectInts(schema, *sub, *child, out, depth + 1);
    } else if (type == reflection::Vector) {
      reflection::BaseType elem = f->type()->element();
      if (flatbuffers::IsInteger(elem)) {
        if (flatbuffers::VectorOfAny *v = flatbuffers::GetFieldAnyV(table, *f))
          for (uint32_t i = 0; i < v->size(); ++i)
            out.push_back({v->Data() + i * flatbuffers::GetTypeSize(elem), elem});
      } else if (elem == reflection::Obj) {
        const reflection::Object *sub = schema.objects()->Get(f->type()->index());
        auto *v =
            table.GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *>(
                f->offset());
        for (uint32_t i = 0; v && !sub->is_struct() && i < v->size(); ++i)
          CollectInts(schema, *sub, *v->Get(i), out, depth + 1);
      }
    }
  }
}

// Sets one stored integer of a verified FlatBuffer to a value that tends to
// sit at a check's boundary: 0, +-1, extremes, a neighbour of its own value,
// or another stored integer (+-1), which pairs a slot with num_slots, an id
// with a tensor count, an offset with a size. Returns false when the
// FlatBuffer does not verify or stores no integer.
bool MutateOneInt(uint8_t *fb, size_t size, std::minstd_rand &rng) {
  const reflection::Schema *schema = PlanSchema();
  AlignedFlatBuffer fbuf(fb, size);
  if (!schema || !VerifiedPlan(fbuf))
    return false;
  std::vector<IntSlot> ints;
  CollectInts(*schema, *schema->root_table(), *flatbuffers::GetAnyRoot(fbuf.data()), ints, 0);
  if (ints.empty())
    return false;
  const IntSlot &slot = ints[rng() % ints.size()];
  int64_t old = flatbuffers::GetAnyValueI(slot.type, slot.at);
  const IntSlot &other = ints[rng() % ints.size()];
  // Offsets wrap (unsigned arithmetic): the extremes are boundaries too.
  auto near = [&](int64_t base, unsigned span) {
    return static_cast<int64_t>(static_cast<uint64_t>(base) + rng() % span - span / 2);
  };
  int64_t v;
  switch (rng() % 8) {
  case 0:
    v = near(0, 3);
    break;
  case 1:
    v = rng() % 2 ? INT64_MAX : INT64_MIN;
    break;
  case 2:
    v = rng() % 2 ? INT32_MAX : INT32_MIN;
    break;
  case 3:
    v = int64_t{1} << (rng() % 63);
    break;
  case 4:
    v = near(old, 5);
    break;
  default:
    v = near(flatbuffers::GetAnyValueI(other.type, other.at), 3);
  }
  flatbuffers::SetAnyValueI(slot.type, slot.at, v);
  std::memcpy(fb, fbuf.data(), size);
  return true;
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
  // length); the rest go to the FlatBuffer, where the structure lives: half
  // of them to one stored integer, half to its bytes.
  unsigned pick = rng() % 8;
  if (pick == 0 || !ReadHeader(data, size, &h))
    n = LLVMFuzzerMutate(data, size, max_size);
  else if (pick <= 4 && MutateOneInt(data + kPlanHeaderSize, h.flatbuffer_size, rng))
    n = size;
  else
    n = MutateFlatBuffer(data, size, max_size, h);
  ResealPlan(data, n);
  return n;
}

} // namespace kiln::fuzz
