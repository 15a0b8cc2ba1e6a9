// LoadPlan: maps a plan file and verifies every byte of it before anything
// reads a field, then checks the graph invariants the executor relies on
// (listed in kiln/plan.h). Checks run outermost first, so a damaged file is
// reported by the first layer that notices (header, checksums, verifier) and
// the structural checks only ever see a well-formed FlatBuffer.
#include "kiln/plan.h"

#include "core/shape_table.h"
#include "kiln_schema/plan_generated.h"
#include "plan_format.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln {
namespace {

std::string U64(uint64_t v) { return std::to_string(v); }

// a + b <= limit without overflow.
bool FitsWithin(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

bool AllZero(const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] != 0)
      return false;
  return true;
}

std::string Str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

std::string TensorLabel(int id, const std::string &name) {
  return "tensor " + std::to_string(id) + " '" + name + "'";
}

// The FlatBuffers verifier checks a vector's length field for 4-byte
// alignment only, so a crafted plan can start a vector of 64-bit elements
// 4 bytes off an 8-byte boundary: reading it is undefined behaviour. The
// schema's non-empty [long] vectors are checked here (the buffer itself is
// aligned).
template <typename V> bool Aligned8(const V *v) {
  return v == nullptr || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % 8 == 0;
}

Status CheckWideVectorsAligned(const fb::Plan &f) {
  if (f.metadata() && !Aligned8(f.metadata()->eos_token_ids()))
    return DataLoss("plan flatbuffer: ModelMetadata.eos_token_ids is not 8-byte aligned");
  if (f.memory_plan() && !Aligned8(f.memory_plan()->slot_static_bytes()))
    return DataLoss("plan flatbuffer: MemoryPlan.slot_static_bytes is not 8-byte aligned");
  if (f.ops())
    for (const fb::Op *op : *f.ops())
      if (op->attrs())
        for (const fb::Attr *a : *op->attrs())
          if (!Aligned8(a->ints()))
            return DataLoss("plan flatbuffer: an Attr.ints of op '" +
                            (op->type() ? op->type()->str() : std::string("?")) +
                            "' is not 8-byte aligned");
  return Status::Ok();
}

} // namespace

// Friend of Plan: fills its private fields as the checks pass.
class PlanLoader {
public:
  static StatusOr<std::unique_ptr<Plan>> FromFile(const std::string &path,
                                                  const PlanLoadOptions &options);
  static StatusOr<std::unique_ptr<Plan>> FromBytes(const void *data, size_t size,
                                                   const std::string &source,
                                                   const PlanLoadOptions &options);

private:
  static StatusOr<std::unique_ptr<Plan>> Verify(std::unique_ptr<Plan> plan,
                                                const PlanLoadOptions &options);
  static Status CheckHeader(const uint8_t *p, uint64_t size, PlanHeader *h);
  static Status SelectGraph(Plan &plan, const PlanLoadOptions &options);
  static Status CheckSections(const uint8_t *p, uint64_t size, const PlanHeader &h,
                              const Plan &plan, bool mapped);
  static Status CheckMemoryPlan(const fb::Plan &plan);
  static Status DecodeTensors(const uint8_t *p, Plan &plan);
  static Status CheckGraphIO(Plan &plan);
  static Status CheckOps(const Plan &plan);
  static Status CheckSlots(const Plan &plan, const std::vector<int> &producer,
                           const std::vector<int> &last_use, const std::vector<int> &view_of);
  static Status CheckDecoder(const Plan &plan);
};

Status PlanLoader::CheckHeader(const uint8_t *p, uint64_t size, PlanHeader *h) {
  if (size < kPlanHeaderSize)
    return DataLoss("file is " + U64(size) + " bytes, smaller than the " + U64(kPlanHeaderSize) +
                    "-byte plan header");
  std::memcpy(h, p, sizeof(*h));
  if (std::memcmp(h->magic, kPlanMagic, sizeof(kPlanMagic)) != 0)
    return InvalidArgument("not a kiln plan: the file does not start with \"KILNPLAN\"");
  if (PlanChecksum(p, 48) != h->header_checksum)
    return DataLoss("plan header checksum mismatch: the header is corrupt");
  if (h->reserved != 0)
    return DataLoss("plan header's reserved bytes are not zero");
  if (h->format_major != kPlanFormatMajor)
    return InvalidArgument("plan format version " + std::to_string(h->format_major) + "." +
                           std::to_string(h->format_minor) + " is not supported; this runtime " +
                           "reads version " + std::to_string(kPlanFormatMajor) +
                           ".x: rebuild the plan with a matching kiln");
  if (h->file_size != size)
    return DataLoss("plan file is " + U64(size) + " bytes but its header says " +
                    U64(h->file_size) + (size < h->file_size ? " (truncated)" : ""));
  if (h->flatbuffer_offset != kPlanHeaderSize)
    return DataLoss("plan header: flatbuffer offset " + U64(h->flatbuffer_offset) + ", expected " +
                    U64(kPlanHeaderSize));
  if (h->flatbuffer_size == 0 || !FitsWithin(kPlanHeaderSize, h->flatbuffer_size, size))
    return DataLoss("plan header: flatbuffer size " + U64(h->flatbuffer_size) +
                    " does not fit in the " + U64(size) + "-byte file");
  if (h->flatbuffer_size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return DataLoss("plan header: flatbuffer size " + U64(h->flatbuffer_size) + " exceeds 2 GB");
  if (PlanChecksum(p + kPlanHeaderSize, h->flatbuffer_size) != h->flatbuffer_checksum)
    return DataLoss("plan flatbuffer checksum mismatch: the plan's graph data is corrupt");
  return Status::Ok();
}

// The checksum of a weight section, read in 2 MiB pieces. From a file
// mapping, each piece's pages are dropped once summed: they are clean and
// read-only, so a later read faults them back from the page cache, and
// verifying a multi-GB plan never holds more than one piece in the
// process's resident memory (a build's check of the plan it just wrote, or
// a backend that uploads the weights and never reads the mapping again).
static uint64_t SectionChecksum(const uint8_t *data, uint64_t size, bool mapped) {
  constexpr uint64_t kPiece = uint64_t{2} << 20;
  PlanChecksumStream sum;
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  for (uint64_t pos = 0; pos < size; pos += kPiece) {
    const uint64_t n = std::min(kPiece, size - pos);
    sum.Update(data + pos, n);
    if (!mapped)
      continue;
    const auto begin = (reinterpret_cast<uintptr_t>(data + pos) + page - 1) / page * page;
    const auto end = reinterpret_cast<uintptr_t>(data + pos + n) / page * page;
    if (end > begin)
      ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
  }
  return sum.Final();
}

// Picks the graph this process runs: the plan's own, or in a
// tensor-parallel plan the nested program of the requested rank, whose
// weights' `section` 0 and 1 name the shared section and the rank's own.
Status PlanLoader::SelectGraph(Plan &plan, const PlanLoadOptions &options) {
  const fb::Plan &f = *plan.fb_;
  const auto *sections = f.sections();
  const uint32_t num_sections = sections ? sections->size() : 0;
  const fb::TensorParallel *tp = f.tensor_parallel();
  if (!tp) {
    if (options.tp_size > 1)
      return InvalidArgument("the plan was built without tensor parallelism, so it cannot run on " +
                             std::to_string(options.tp_size) +
                             " ranks: run it without --tp (or with --tp 1), or rebuild it with "
                             "tensor_parallel.tp_size: " +
                             std::to_string(options.tp_size));
    plan.graph_ = plan.fb_;
    for (uint32_t i = 0; i < num_sections; ++i)
      plan.section_of_role_.push_back(static_cast<int>(i));
    return Status::Ok();
  }
  const int n = tp->tp_size();
  if (n < 1 || n > 4096)
    return DataLoss("tensor_parallel.tp_size is " + std::to_string(n));
  if (options.tp_size == 0)
    return InvalidArgument("the plan was built for tensor parallelism over " + std::to_string(n) +
                           " ranks: run it with --tp " + std::to_string(n));
  if (options.tp_size != n && options.tp_size != PlanLoadOptions::kAsBuilt)
    return InvalidArgument("the plan was built for tensor parallelism over " + std::to_string(n) +
                           " ranks, not " + std::to_string(options.tp_size) +
                           ": run it with --tp " + std::to_string(n) +
                           " (kiln reshard changes the rank count)");
  // kFirstHeldRank: the first program the file holds (a rank file's only one).
  int rank = options.rank;
  if (rank == PlanLoadOptions::kFirstHeldRank && tp->ranks() && tp->ranks()->size() > 0)
    rank = tp->ranks()->Get(0)->rank();
  if (rank < 0 || rank >= n)
    return InvalidArgument("rank " + std::to_string(rank) + " is outside [0, " + std::to_string(n) +
                           ")");
  if (f.tensors() || f.ops() || f.memory_plan() || f.inputs() || f.outputs() || f.ragged() ||
      f.decoder())
    return DataLoss("a tensor-parallel plan's outer Plan has a graph; each rank's graph belongs "
                    "in tensor_parallel.ranks");
  const fb::RankProgram *mine = nullptr;
  std::string held;
  if (tp->ranks()) {
    for (const fb::RankProgram *rp : *tp->ranks()) {
      held += (held.empty() ? "" : ", ") + std::to_string(rp->rank());
      if (rp->rank() != rank)
        continue;
      if (mine)
        return DataLoss("tensor_parallel.ranks lists rank " + std::to_string(rank) + " twice");
      mine = rp;
    }
  }
  if (!mine)
    return InvalidArgument("the plan holds the program of rank(s) [" + held + "] of " +
                           std::to_string(n) + ", not rank " + std::to_string(rank) +
                           " (a rank file of kiln reshard --split runs only its own rank)");
  // The outer verifier already verified the nested buffer (nested_flatbuffer).
  const fb::Plan *program = mine->program_nested_root();
  if (!program || !mine->program() || mine->program()->size() == 0)
    return DataLoss("rank " + std::to_string(rank) + " has no program");
  // Its verifier checked alignment from the nested buffer's start, which
  // must itself be 8-byte aligned for the 64-bit fields inside. kiln's
  // writer aligns it; a program of another writer that does not is read
  // from an aligned copy.
  const flatbuffers::Vector<uint8_t> &bytes = *mine->program();
  if (reinterpret_cast<uintptr_t>(bytes.data()) % 8 != 0) {
    plan.graph_copy_.assign((bytes.size() + 7) / 8, 0);
    std::memcpy(plan.graph_copy_.data(), bytes.data(), bytes.size());
    program = fb::GetPlan(plan.graph_copy_.data());
  }
  KILN_RETURN_IF_ERROR(CheckWideVectorsAligned(*program));
  if (program->tensor_parallel())
    return DataLoss("rank " + std::to_string(rank) + "'s program is itself tensor-parallel");
  if (program->format_major() != f.format_major())
    return DataLoss("rank " + std::to_string(rank) + "'s program says format " +
                    std::to_string(program->format_major()) + ".x inside a " +
                    std::to_string(f.format_major()) + ".x plan");
  int shared = -1, own = -1;
  for (uint32_t i = 0; i < num_sections; ++i) {
    const int r = sections->Get(i)->rank();
    int *slot = r == -1 ? &shared : r == rank ? &own : nullptr;
    if (!slot)
      continue;
    if (*slot >= 0)
      return DataLoss("the plan has two sections for " +
                      (r == -1 ? std::string("the shared weights") : "rank " + std::to_string(r)));
    *slot = static_cast<int>(i);
  }
  plan.graph_ = program;
  plan.tp_size_ = n;
  plan.rank_ = rank;
  plan.build_id_ = Str(tp->build_id());
  plan.section_of_role_ = {shared, own};
  return Status::Ok();
}

Status PlanLoader::CheckSections(const uint8_t *p, uint64_t size, const PlanHeader &h,
                                 const Plan &plan_in, bool mapped) {
  // Sections must tile the rest of the file in order, separated only by
  // zero padding, so that no byte of the file goes unverified. A rank of a
  // tensor-parallel plan checksums only the sections it reads; its peers
  // check theirs, and it never touches their pages.
  const fb::Plan &plan = *plan_in.fb_;
  const std::vector<int> &used = plan_in.section_of_role_;
  uint64_t pos = kPlanHeaderSize + h.flatbuffer_size;
  const auto *sections = plan.sections();
  uint32_t n = sections ? sections->size() : 0;
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Section *s = sections->Get(i);
    std::string label = "section " + std::to_string(i) + " '" + Str(s->name()) + "'";
    if (s->offset() % kSectionAlign != 0)
      return DataLoss(label + ": offset " + U64(s->offset()) + " is not a multiple of " +
                      U64(kSectionAlign));
    if (s->offset() < pos)
      return DataLoss(label + ": offset " + U64(s->offset()) +
                      " overlaps the flatbuffer or the previous section (which end at " + U64(pos) +
                      ")");
    if (!FitsWithin(s->offset(), s->size(), size))
      return DataLoss(label + ": bytes [" + U64(s->offset()) + ", +" + U64(s->size()) +
                      ") run past the end of the " + U64(size) + "-byte file");
    if (s->rank() < -1)
      return DataLoss(label + ": rank " + std::to_string(s->rank()));
    if (!AllZero(p + pos, s->offset() - pos))
      return DataLoss("non-zero padding before " + label + " (corrupt file)");
    if (std::find(used.begin(), used.end(), static_cast<int>(i)) != used.end() &&
        SectionChecksum(p + s->offset(), s->size(), mapped) != s->checksum())
      return DataLoss(label + ": checksum mismatch, its weights are corrupt");
    pos = s->offset() + s->size();
  }
  if (pos != size)
    return DataLoss("plan file has " + U64(size - pos) +
                    " unexpected bytes after its last region (ends at " + U64(pos) + ")");
  return Status::Ok();
}

// Runs before DecodeTensors, which indexes slot_static_bytes by the slots it
// reads from the tensors: the table must already be known to cover num_slots.
Status PlanLoader::CheckMemoryPlan(const fb::Plan &f) {
  const fb::MemoryPlan *mp = f.memory_plan();
  if (!mp)
    return Status::Ok();
  int64_t n = f.tensors() ? f.tensors()->size() : 0;
  if (mp->num_slots() < 0 || mp->num_slots() > n)
    return DataLoss("memory plan: " + std::to_string(mp->num_slots()) + " slots for " +
                    std::to_string(n) + " tensors");
  int a = mp->alignment();
  if (a < 1 || a > 65536 || (a & (a - 1)) != 0)
    return DataLoss("memory plan: alignment " + std::to_string(a) + " is not a power of two");
  if (const auto *bytes = mp->slot_static_bytes()) {
    if (bytes->size() != static_cast<uint32_t>(mp->num_slots()))
      return DataLoss("memory plan: slot_static_bytes has " + std::to_string(bytes->size()) +
                      " entries for " + std::to_string(mp->num_slots()) + " slots");
    // The arena holds every slot at once, so their sum must be a size.
    int64_t total = 0;
    for (uint32_t i = 0; i < bytes->size(); ++i) {
      int64_t b = bytes->Get(i);
      if (b < -1)
        return DataLoss("memory plan: slot " + std::to_string(i) + " has " + std::to_string(b) +
                        " static bytes");
      if (b > 0 && __builtin_add_overflow(total, b, &total))
        return DataLoss("memory plan: the static slot sizes add up to more than 2^63 bytes");
    }
  }
  return Status::Ok();
}

Status PlanLoader::DecodeTensors(const uint8_t *p, Plan &plan) {
  const fb::Plan &f = *plan.graph_;
  const auto *tensors = f.tensors();
  uint32_t n = tensors ? tensors->size() : 0;
  const auto *sections = plan.fb_->sections();
  // The Plan.sections index of a tensor's `section`, or -1.
  auto resolve = [&](int role) {
    return role >= 0 && static_cast<size_t>(role) < plan.section_of_role_.size()
               ? plan.section_of_role_[static_cast<size_t>(role)]
               : -1;
  };
  int num_slots = f.memory_plan() ? f.memory_plan()->num_slots() : 0;
  const auto *slot_bytes = f.memory_plan() ? f.memory_plan()->slot_static_bytes() : nullptr;
  plan.tensors_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    const fb::Tensor *t = tensors->Get(i);
    PlanTensor &pt = plan.tensors_[i];
    pt.name = Str(t->name());
    std::string label = TensorLabel(static_cast<int>(i), pt.name);
    int dtype = static_cast<int>(t->dtype());
    if (dtype < 1 || dtype > static_cast<int>(DType::kBool))
      return DataLoss(label + ": unknown dtype " + std::to_string(dtype));
    pt.dtype = static_cast<DType>(dtype);
    int kind = static_cast<int>(t->kind());
    if (kind < 0 || kind > 2)
      return DataLoss(label + ": unknown kind " + std::to_string(kind));
    pt.kind = static_cast<TensorKind>(kind);
    pt.host = t->host();
    pt.slot = t->slot();
    pt.section = resolve(t->section());
    if (const fb::ShardSpec *sh = t->shard(); sh && sh->full_name()) {
      pt.sharded = true;
      pt.shard = {sh->full_name()->str(), sh->axis(), sh->offset(), sh->full_dim()};
    }
    // Bytes of the static shape, or UINT64_MAX when dynamic or overflowing.
    uint64_t bytes = DTypeSize(pt.dtype);
    if (t->shape()) {
      for (const fb::Dim *d : *t->shape()) {
        if (d->value() < -1)
          return DataLoss(label + ": dimension " + std::to_string(d->value()));
        pt.dims.push_back({d->value(), Str(d->symbol())});
        if (d->value() < 0 || bytes == UINT64_MAX ||
            __builtin_mul_overflow(bytes, static_cast<uint64_t>(d->value()), &bytes))
          bytes = UINT64_MAX;
      }
    }
    if (pt.kind == TensorKind::kWeight) {
      if (bytes == UINT64_MAX)
        return DataLoss(label + ": a weight needs a static shape, got " + pt.DimsToString());
      if (bytes == 0 && t->size() == 0 && pt.section < 0) {
        // An empty weight has no bytes to place, and a plan whose only
        // weights are empty has no section at all. Kernels may still pass
        // the pointer to memcpy with size 0, so it must not be null.
        pt.section = -1;
        pt.data = p;
        continue;
      }
      if (!sections || pt.section < 0)
        return DataLoss(label + ": section " + std::to_string(t->section()) + " does not exist");
      const fb::Section *s = sections->Get(pt.section);
      if (t->size() != bytes)
        return DataLoss(label + ": size " + U64(t->size()) + " bytes, but " + DTypeName(pt.dtype) +
                        pt.DimsToString() + " needs " + U64(bytes));
      if (t->offset() % kTensorAlign != 0)
        return DataLoss(label + ": offset " + U64(t->offset()) + " is not a multiple of " +
                        U64(kTensorAlign));
      if (!FitsWithin(t->offset(), t->size(), s->size()))
        return DataLoss(label + ": bytes [" + U64(t->offset()) + ", +" + U64(t->size()) +
                        ") run past the end of its " + U64(s->size()) + "-byte section");
      pt.data = p + s->offset() + t->offset();
      pt.size = t->size();
    } else if (pt.kind == TensorKind::kActivation && !pt.host) {
      if (pt.slot < 0 || pt.slot >= num_slots)
        return DataLoss(label + ": slot " + std::to_string(pt.slot) + " is outside the " +
                        std::to_string(num_slots) + " slots of the memory plan");
      if (slot_bytes && bytes != UINT64_MAX && slot_bytes->Get(pt.slot) >= 0 &&
          bytes > static_cast<uint64_t>(slot_bytes->Get(pt.slot)))
        return DataLoss(label + ": " + U64(bytes) + " bytes do not fit its slot " +
                        std::to_string(pt.slot) + " of " +
                        std::to_string(slot_bytes->Get(pt.slot)) + " bytes");
    }
  }
  return Status::Ok();
}

Status PlanLoader::CheckGraphIO(Plan &plan) {
  const fb::Plan &f = *plan.graph_;
  int n = static_cast<int>(plan.tensors_.size());
  std::vector<int> seen(n, 0);
  if (f.inputs()) {
    for (int32_t id : *f.inputs()) {
      if (id < 0 || id >= n)
        return DataLoss("graph input id " + std::to_string(id) + " is not a tensor");
      if (plan.tensors_[id].kind != TensorKind::kInput)
        return DataLoss("graph input " + TensorLabel(id, plan.tensors_[id].name) +
                        " is not of kind Input");
      if (seen[id]++)
        return DataLoss("graph input " + TensorLabel(id, plan.tensors_[id].name) +
                        " is listed twice");
      plan.inputs_.push_back(id);
    }
  }
  for (int i = 0; i < n; ++i)
    if (plan.tensors_[i].kind == TensorKind::kInput && !seen[i])
      return DataLoss(TensorLabel(i, plan.tensors_[i].name) +
                      " is of kind Input but not a graph input, so nothing can bind it");
  if (f.outputs()) {
    for (int32_t id : *f.outputs()) {
      if (id < 0 || id >= n)
        return DataLoss("graph output id " + std::to_string(id) + " is not a tensor");
      plan.outputs_.push_back(id);
    }
  }
  return Status::Ok();
}

// The ops whose result is their first operand's bytes under another shape:
// the memory plan may give the result the operand's slot (kernels then copy
// nothing, their input and output being one buffer).
static bool IsViewOp(const std::string &type) {
  return type == "reshape" || type == "flatten" || type == "squeeze" || type == "unsqueeze";
}

Status PlanLoader::CheckOps(const Plan &plan) {
  const fb::Plan &f = *plan.graph_;
  const auto &tensors = plan.tensors_;
  int n = static_cast<int>(tensors.size());
  // producer[t]: index of the op that writes t; last_use[t]: last op reading
  // it (INT_MAX for graph outputs, which the caller reads after the run).
  std::vector<int> producer(n, -1), last_use(n, -1);
  // view_of[t]: the tensor whose bytes t is (a reshape-family result in its
  // operand's slot, followed through chains), else -1.
  std::vector<int> view_of(n, -1);
  uint32_t num_ops = f.ops() ? f.ops()->size() : 0;
  for (uint32_t i = 0; i < num_ops; ++i) {
    const fb::Op *op = f.ops()->Get(i);
    int idx = static_cast<int>(i);
    std::string type = Str(op->type());
    std::string label = "op " + std::to_string(i) + " '" + Str(op->name()) + "' (" + type + ")";
    if (!FindShapeRule(type))
      return InvalidArgument(label + ": op type '" + type + "' is not supported by this runtime");
    if (op->attrs()) {
      for (const fb::Attr *a : *op->attrs()) {
        if (!a->name())
          return DataLoss(label + ": an attribute has no name");
        if (static_cast<int>(a->kind()) < 0 || static_cast<int>(a->kind()) > 4)
          return DataLoss(label + ": attribute '" + a->name()->str() + "' has unknown kind");
      }
    }
    if (op->inputs()) {
      for (int32_t t : *op->inputs()) {
        if (t == -1)
          continue;
        if (t < 0 || t >= n)
          return DataLoss(label + ": operand " + std::to_string(t) + " is not a tensor");
        if (tensors[t].kind == TensorKind::kActivation && producer[t] < 0)
          return DataLoss(label + ": reads " + TensorLabel(t, tensors[t].name) +
                          " before any op produces it");
        last_use[t] = idx;
      }
    }
    int host_outputs = 0, outputs = 0;
    if (op->outputs()) {
      for (int32_t t : *op->outputs()) {
        if (t < 0 || t >= n)
          return DataLoss(label + ": result " + std::to_string(t) + " is not a tensor");
        if (tensors[t].kind != TensorKind::kActivation)
          return DataLoss(label + ": writes " + TensorLabel(t, tensors[t].name) + " of kind " +
                          TensorKindName(tensors[t].kind));
        if (producer[t] >= 0)
          return DataLoss(label + ": " + TensorLabel(t, tensors[t].name) +
                          " is already produced by op " + std::to_string(producer[t]));
        producer[t] = idx;
        last_use[t] = std::max(last_use[t], idx);
        ++outputs;
        host_outputs += tensors[t].host ? 1 : 0;
      }
    }
    if (host_outputs != 0 && host_outputs != outputs)
      return DataLoss(label + ": some results are host tensors and some are not");
    if (IsViewOp(type) && outputs == 1 && op->inputs() && op->inputs()->size() >= 1) {
      const int32_t in = op->inputs()->Get(0), out = op->outputs()->Get(0);
      // Both ids were checked above (in is -1 or a tensor produced earlier).
      if (in >= 0) {
        const PlanTensor &a = tensors[in], &b = tensors[out];
        if (a.kind == TensorKind::kActivation && !a.host && !b.host && a.slot == b.slot &&
            a.dtype == b.dtype)
          view_of[out] = view_of[in] >= 0 ? view_of[in] : in;
      }
    }
  }
  for (int id : plan.outputs_) {
    if (tensors[id].kind == TensorKind::kActivation && producer[id] < 0)
      return DataLoss("graph output " + TensorLabel(id, tensors[id].name) + " is never produced");
    last_use[id] = INT_MAX;
  }
  return CheckSlots(plan, producer, last_use, view_of);
}

Status PlanLoader::CheckSlots(const Plan &plan, const std::vector<int> &producer,
                              const std::vector<int> &last_use, const std::vector<int> &view_of) {
  // Tensors sharing a slot overwrite each other, so their lifetimes
  // [producer, last use] must not overlap, not even at one op: kernels do not
  // run in place. A view (a reshape-family result in its operand's slot) is
  // the operand's bytes: it extends the operand's life instead.
  struct Life {
    int slot, begin, end, id;
  };
  std::vector<int> end = last_use;
  for (size_t i = 0; i < plan.tensors_.size(); ++i)
    if (view_of[i] >= 0)
      end[view_of[i]] = std::max(end[view_of[i]], last_use[i]);
  std::vector<Life> lives;
  for (size_t i = 0; i < plan.tensors_.size(); ++i) {
    const PlanTensor &t = plan.tensors_[i];
    if (t.kind != TensorKind::kActivation || t.host || producer[i] < 0 || view_of[i] >= 0)
      continue;
    lives.push_back({t.slot, producer[i], end[i], static_cast<int>(i)});
  }
  std::sort(lives.begin(), lives.end(), [](const Life &a, const Life &b) {
    return a.slot != b.slot ? a.slot < b.slot : a.begin < b.begin;
  });
  for (size_t i = 1; i < lives.size(); ++i) {
    const Life &a = lives[i - 1], &b = lives[i];
    if (a.slot == b.slot && b.begin <= a.end)
      return DataLoss("memory plan: " + TensorLabel(a.id, plan.tensors_[a.id].name) + " and " +
                      TensorLabel(b.id, plan.tensors_[b.id].name) + " share slot " +
                      std::to_string(a.slot) + " while both are live");
  }
  return Status::Ok();
}

Status PlanLoader::CheckDecoder(const Plan &plan) {
  const fb::DecoderIO *d = plan.graph_->decoder();
  if (!d)
    return Status::Ok();
  auto input = [&](int id, const char *role) -> Status {
    if (id == -1 || plan.InputIndex(id) >= 0)
      return Status::Ok();
    return DataLoss(std::string("decoder ") + role + " tensor " + std::to_string(id) +
                    " is not a graph input");
  };
  auto output = [&](int id, const char *role) -> Status {
    if (id == -1 || plan.OutputIndex(id) >= 0)
      return Status::Ok();
    return DataLoss(std::string("decoder ") + role + " tensor " + std::to_string(id) +
                    " is not a graph output");
  };
  KILN_RETURN_IF_ERROR(input(d->input_ids(), "input_ids"));
  KILN_RETURN_IF_ERROR(input(d->attention_mask(), "attention_mask"));
  KILN_RETURN_IF_ERROR(input(d->position_ids(), "position_ids"));
  KILN_RETURN_IF_ERROR(output(d->logits(), "logits"));
  if (d->kv()) {
    for (const fb::KVPair *kv : *d->kv()) {
      KILN_RETURN_IF_ERROR(input(kv->past(), "past"));
      KILN_RETURN_IF_ERROR(output(kv->present(), "present"));
      if (kv->past() == -1 || kv->present() == -1)
        return DataLoss("decoder kv pair lacks its past or present tensor");
    }
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Plan>> PlanLoader::Verify(std::unique_ptr<Plan> plan,
                                                   const PlanLoadOptions &options) {
  const uint8_t *p = static_cast<const uint8_t *>(plan->bytes_);
  uint64_t size = plan->bytes_size_;
  plan->file_size_ = size;
  PlanHeader h;
  KILN_RETURN_IF_ERROR(CheckHeader(p, size, &h));

  flatbuffers::Verifier::Options opts;
  opts.max_tables = 1u << 24; // large models have many tensors, dims and attrs
  flatbuffers::Verifier verifier(p + kPlanHeaderSize, h.flatbuffer_size, opts);
  if (!fb::VerifyPlanBuffer(verifier))
    return DataLoss("plan flatbuffer failed verification (wrong identifier or malformed tables)");
  plan->fb_ = fb::GetPlan(p + kPlanHeaderSize);
  KILN_RETURN_IF_ERROR(CheckWideVectorsAligned(*plan->fb_));
  const fb::Plan &f = *plan->fb_;
  if (f.format_major() != h.format_major || f.format_minor() != h.format_minor)
    return DataLoss("plan flatbuffer says format " + std::to_string(f.format_major()) + "." +
                    std::to_string(f.format_minor()) + " but its header says " +
                    std::to_string(h.format_major) + "." + std::to_string(h.format_minor));

  KILN_RETURN_IF_ERROR(SelectGraph(*plan, options));
  KILN_RETURN_IF_ERROR(CheckSections(p, size, h, *plan, plan->mapped_));
  KILN_RETURN_IF_ERROR(CheckMemoryPlan(*plan->graph_));
  KILN_RETURN_IF_ERROR(DecodeTensors(p, *plan));
  KILN_RETURN_IF_ERROR(CheckGraphIO(*plan));
  KILN_RETURN_IF_ERROR(CheckOps(*plan));
  KILN_RETURN_IF_ERROR(CheckDecoder(*plan));
  return plan;
}

StatusOr<std::unique_ptr<Plan>> PlanLoader::FromFile(const std::string &path,
                                                     const PlanLoadOptions &options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = "cannot open plan '" + path + "': " + std::strerror(err);
    return err == ENOENT ? NotFound(msg) : InvalidArgument(msg);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument("plan '" + path + "' is not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return DataLoss("plan '" + path + "' is empty");
  }
  void *map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd); // the mapping keeps the file alive
  if (map == MAP_FAILED)
    return Internal("cannot mmap plan '" + path + "': " + std::strerror(errno));
  std::unique_ptr<Plan> plan(new Plan());
  plan->source_ = path;
  plan->bytes_ = map;
  plan->bytes_size_ = static_cast<uint64_t>(st.st_size);
  plan->mapped_ = true;
  auto loaded = Verify(std::move(plan), options);
  if (!loaded.ok())
    return loaded.status().WithContext("plan '" + path + "'");
  return loaded;
}

StatusOr<std::unique_ptr<Plan>> PlanLoader::FromBytes(const void *data, size_t size,
                                                      const std::string &source,
                                                      const PlanLoadOptions &options) {
  std::unique_ptr<Plan> plan(new Plan());
  plan->source_ = source;
  // Page-aligned like a mapping, so tensor and FlatBuffer alignment holds.
  size_t alloc = static_cast<size_t>(AlignUp(std::max<size_t>(size, 1), kSectionAlign));
  plan->bytes_ = std::aligned_alloc(kSectionAlign, alloc);
  if (!plan->bytes_)
    return Status(StatusCode::kResourceExhausted, "out of memory copying plan");
  if (size > 0)
    std::memcpy(plan->bytes_, data, size);
  plan->bytes_size_ = size;
  auto loaded = Verify(std::move(plan), options);
  if (!loaded.ok())
    return loaded.status().WithContext("plan '" + source + "'");
  return loaded;
}

StatusOr<std::unique_ptr<Plan>> LoadPlan(const std::string &path, const PlanLoadOptions &options) {
  return PlanLoader::FromFile(path, options);
}

StatusOr<std::unique_ptr<Plan>> LoadPlanFromBytes(const void *data, size_t size,
                                                  const std::string &source,
                                                  const PlanLoadOptions &options) {
  return PlanLoader::FromBytes(data, size, source, options);
}

} // namespace kiln
