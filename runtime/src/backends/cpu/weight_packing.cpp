// The CPU backend's weight upload: the weights that matrix products read as
// their right operand are packed once (kernels/cpu/products_packed_matrix.h), and
// the plan's mapped pages of those that nothing else reads are handed back
// to the kernel, so the process holds one copy of each weight.
#include "backends/cpu/weight_packing.h"

#include "kiln/cpu.h"
#include "kiln/plan.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace kiln::cpu {
namespace {

// One weight read as op(B) [k, n] of a product, with B's leading dim.
struct ProductWeight {
  int tensor;
  int64_t k, n, ldb;
  bool trans;
  int scale = -1;    // an int8 weight's f32 scale [n]
  bool by_4 = false; // int8 packed for int8 x int8 products (kI8x4)
  uint64_t offset = 0; // bytes into the tensor: one expert's matrix of a moe weight
};

// The (weight, scale) operand positions of an int8 product.
std::vector<std::pair<size_t, size_t>> Int8ProductOperands(const std::string &type) {
  if (type == "linear_q8")
    return {{1, 2}};
  if (type == "gated_mlp_q8")
    return {{1, 2}, {3, 4}};
  return {};
}

// The int8 2-D weights `op` reads as B with their scales (never
// transposed).
std::vector<ProductWeight> Int8WeightsOf(const WeightUse &op,
                                         const std::vector<PlanTensor> &tensors) {
  std::vector<ProductWeight> out;
  const std::vector<int> &inputs = *op.inputs;
  const bool int8_activations = op.attrs->String("activations", "f32") == "int8";
  for (auto [wpos, spos] : Int8ProductOperands(std::string(op.op_type))) {
    if (spos >= inputs.size() || inputs[wpos] < 0 || inputs[spos] < 0)
      continue;
    const PlanTensor &w = tensors[inputs[wpos]], &s = tensors[inputs[spos]];
    if (w.kind != TensorKind::kWeight || w.dtype != DType::kI8 || !w.IsStatic() ||
        w.dims.size() != 2 || w.data == nullptr)
      continue;
    const int64_t rows = w.dims[0].value, cols = w.dims[1].value;
    // The shape rules check the scale at run time; packing needs it now.
    if (s.kind != TensorKind::kWeight || s.dtype != DType::kF32 || !s.IsStatic() ||
        s.dims.size() != 1 || s.dims[0].value != cols || s.data == nullptr)
      continue;
    out.push_back({inputs[wpos], rows, cols, cols, false, inputs[spos], int8_activations});
  }
  return out;
}

// The operand positions of an op type that the CPU kernels pass to
// kernels::Gemm as B (never transposed A), with B = the whole 2-D tensor.
std::vector<size_t> ProductOperands(const std::string &type) {
  if (type == "gemm")
    return {1};
  return HalfProductOperands(type);
}

// A moe op's expert weights (w_gate_up [E, H, 2F], w_down [E, F, H]; f32, or
// half, kept half as half_via_f32.h passes them): each expert's matrix, which
// the op's products read as B on its own.
std::vector<ProductWeight> ExpertWeightsOf(const WeightUse &op,
                                           const std::vector<PlanTensor> &tensors) {
  std::vector<ProductWeight> out;
  const std::vector<int> &inputs = *op.inputs;
  for (size_t pos : {size_t{2}, size_t{3}}) {
    if (pos >= inputs.size() || inputs[pos] < 0)
      continue;
    const PlanTensor &t = tensors[inputs[pos]];
    const bool half = t.dtype == DType::kBF16 || t.dtype == DType::kF16;
    if (t.kind != TensorKind::kWeight || (t.dtype != DType::kF32 && !half) || !t.IsStatic() ||
        t.dims.size() != 3 || t.data == nullptr)
      continue;
    const int64_t experts = t.dims[0].value, rows = t.dims[1].value, cols = t.dims[2].value;
    const uint64_t elem = half ? 2 : 4;
    for (int64_t e = 0; e < experts; ++e)
      out.push_back({inputs[pos], rows, cols, cols, false, -1, false,
                     static_cast<uint64_t>(e * rows * cols) * elem});
  }
  return out;
}

// The f32, bf16 and f16 2-D weights `op` reads as B, with how it reads them
// (a half one stays half when packed; half_via_f32.h passes it to the f32
// kernel unwidened). Gemm's B is transposed by its transB; a transposed A
// makes the kernel skip packed weights, so such a gemm's B is not counted.
std::vector<ProductWeight> ProductWeightsOf(const WeightUse &op,
                                            const std::vector<PlanTensor> &tensors) {
  std::vector<ProductWeight> out = Int8WeightsOf(op, tensors);
  const std::string type(op.op_type);
  if (type == "moe")
    return ExpertWeightsOf(op, tensors);
  const std::vector<int> &inputs = *op.inputs;
  const bool gemm = type == "gemm";
  if (gemm && op.attrs->Int("transA", 0) != 0)
    return out;
  const bool trans = gemm && op.attrs->Int("transB", 0) != 0;
  const std::vector<size_t> half_positions = HalfProductOperands(type);
  for (size_t pos : ProductOperands(type)) {
    if (pos >= inputs.size() || inputs[pos] < 0)
      continue;
    const PlanTensor &t = tensors[inputs[pos]];
    const bool half = t.dtype == DType::kBF16 || t.dtype == DType::kF16;
    // A half weight only where its op passes it through unwidened.
    if (half &&
        std::find(half_positions.begin(), half_positions.end(), pos) == half_positions.end())
      continue;
    if (t.kind != TensorKind::kWeight || (t.dtype != DType::kF32 && !half) || !t.IsStatic() ||
        t.dims.size() != 2 || t.data == nullptr)
      continue;
    const int64_t rows = t.dims[0].value, cols = t.dims[1].value;
    out.push_back({inputs[pos], trans ? cols : rows, trans ? rows : cols, cols, trans});
  }
  return out;
}

// Asks the kernel to drop the pages of [data, data + size) from this process.
// MADV_PAGEOUT keeps the contents (unlike MADV_DONTNEED on private memory),
// so a read later, or a plan held in memory rather than mapped, is still
// right; for a file mapping the pages are simply re-read if ever touched.
void ReleasePages(const void *data, uint64_t size) {
#ifdef MADV_PAGEOUT
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + size) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_PAGEOUT);
#else
  (void)data;
  (void)size;
#endif
}

} // namespace

std::vector<size_t> HalfProductOperands(const std::string &type) {
  if (type == "matmul" || type == "linear")
    return {1};
  if (type == "gated_mlp")
    return {1, 2};
  if (type == "moe") // each expert's matrix (ExpertWeightsOf)
    return {2, 3};
  return {};
}

void PackProductWeights(const Plan &plan, const std::vector<WeightUse> &ops,
                        std::vector<std::shared_ptr<const kernels::PackedMatrix>> &packed,
                        UploadStats &stats) {
  if (!CpuWeightPacking())
    return;
  const bool narrow = CpuExactNarrowing();
  const auto &tensors = plan.tensors();
  // Every read of each tensor, to tell the weights only products read.
  std::vector<int> reads(tensors.size(), 0), product_reads(tensors.size(), 0);
  std::vector<ProductWeight> uses;
  for (const WeightUse &op : ops) {
    for (int t : *op.inputs)
      if (t >= 0)
        ++reads[t];
    for (const ProductWeight &w : ProductWeightsOf(op, tensors)) {
      ++product_reads[w.tensor];
      if (w.offset != 0)
        ++reads[w.tensor]; // each expert's matrix is a read of its own
      uses.push_back(w);
    }
  }
  for (int t : plan.outputs())
    ++reads[t];
  // A weight counts as packed when every product reading of it got a copy.
  std::vector<int> packed_reads(tensors.size(), 0);
  for (const ProductWeight &w : uses) {
    const PlanTensor &t = tensors[w.tensor];
    std::shared_ptr<const kernels::PackedMatrix> held;
    if (t.dtype == DType::kF32)
      held = kernels::AcquirePacked(
          reinterpret_cast<const float *>(static_cast<const char *>(t.data) + w.offset), w.k, w.n,
          w.ldb, w.trans, narrow);
    else if (t.dtype == DType::kI8 && w.by_4)
      held = kernels::AcquirePackedI8x4(static_cast<const int8_t *>(t.data),
                                        static_cast<const float *>(tensors[w.scale].data), w.k, w.n,
                                        w.ldb);
    else if (t.dtype == DType::kI8)
      held = kernels::AcquirePackedI8(static_cast<const int8_t *>(t.data),
                                      static_cast<const float *>(tensors[w.scale].data), w.k, w.n,
                                      w.ldb);
    else
      held = kernels::AcquirePackedHalf(
          reinterpret_cast<const uint16_t *>(static_cast<const char *>(t.data) + w.offset), w.k,
          w.n, w.ldb, w.trans,
          t.dtype == DType::kF16 ? kernels::PackedElem::kF16 : kernels::PackedElem::kBF16);
    if (!held)
      continue; // out of memory, or read two ways: the product reads the mapping
    ++packed_reads[w.tensor];
    bool seen = false;
    for (const auto &p : packed)
      seen = seen || p == held;
    if (!seen) {
      stats.packed_bytes += held->bytes();
      if (held->source_elem() == kernels::PackedElem::kF32 &&
          held->elem() != kernels::PackedElem::kF32)
        ++stats.narrowed_weights;
      packed.push_back(std::move(held));
    }
    // Once every product reading of the weight has its copy, and nothing
    // else reads the original, its plan pages go back now rather than after
    // the last weight: the process never holds both forms of every weight
    // (a plan's size again at the peak).
    if (packed_reads[w.tensor] != product_reads[w.tensor])
      continue;
    ++stats.packed_weights;
    if (product_reads[w.tensor] != reads[w.tensor])
      continue; // another op reads the original
    ReleasePages(t.data, t.size);
    ++stats.released_weights;
  }
}

} // namespace kiln::cpu
