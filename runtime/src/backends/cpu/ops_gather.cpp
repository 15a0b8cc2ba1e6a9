// CPU kernels of the ops that address a tensor with indices: Gather (along
// one axis), GatherND and ScatterND; their shape rules are in
// core/shapes/gather.cpp.
// Out-of-range indices are an error naming the index and its position; they
// are checked before anything is written.
#include "backends/op_families.h"
#include "core/shapes/gather.h"
#include "cpu_kernels.h"
#include "half_via_f32.h"
#include "kernels/cpu/movement.h"
#include "kernels/cpu/gather_nd.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

// Product of shape[begin, end).
int64_t Count(const Shape &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= shape[d];
  return n;
}

// "index 7 (at [1, 0]) is out of range for dim 1 of size 4" for the flat
// position `pos` in an indices tensor whose tuples have k entries
// addressing data dims from `first_dim` on.
Status IndexError(const char *op, const TensorView &indices, int64_t pos, const Shape &data,
                  size_t first_dim) {
  const int64_t k = indices.shape.back();
  const int64_t value = indices.as<const int64_t>()[pos];
  const size_t dim = first_dim + static_cast<size_t>(pos % k);
  std::vector<int64_t> at;
  int64_t rest = pos;
  for (size_t d = indices.shape.size(); d-- > 0;) {
    at.insert(at.begin(), rest % indices.shape[d]);
    rest /= indices.shape[d];
  }
  return OpError(op, "index " + std::to_string(value) + " (at " + ShapeToString(at) +
                         " of indices) is out of range for dim " + std::to_string(dim) +
                         " of size " + std::to_string(data[dim]) + " in data " +
                         ShapeToString(data));
}

// ---- GatherND -----------------------------------------------------------

Status RunGatherND(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const size_t b = static_cast<size_t>(attrs.Int("batch_dims", 0));
  const size_t m = static_cast<size_t>(is.back());
  const std::vector<int64_t> dims(s.begin() + b, s.begin() + b + m);
  const int64_t bad = kernels::GatherND(DTypeSize(in[0]->dtype), in[0]->data, Count(s, 0, b), dims,
                                        Count(s, b + m, s.size()), in[1]->as<const int64_t>(),
                                        Count(is, b, is.size() - 1), out[0].data);
  if (bad >= 0)
    return IndexError("gather_nd", *in[1], bad, s, b);
  return Status::Ok();
}

// ---- ScatterND ----------------------------------------------------------

// The shape rule's reduction as the kernels' enum.
StatusOr<kernels::ScatterReduction> Reduction(const OpAttrs &attrs) {
  KILN_ASSIGN_OR_RETURN(ScatterReduction r, ScatterReductionOf(attrs));
  switch (r) {
  case ScatterReduction::kNone:
    return kernels::ScatterReduction::kNone;
  case ScatterReduction::kAdd:
    return kernels::ScatterReduction::kAdd;
  case ScatterReduction::kMul:
    return kernels::ScatterReduction::kMul;
  case ScatterReduction::kMax:
    return kernels::ScatterReduction::kMax;
  case ScatterReduction::kMin:
    return kernels::ScatterReduction::kMin;
  }
  return kernels::ScatterReduction::kNone;
}

Status RunScatterND(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out);

// f16/bf16 reductions run in f32 (the bytes-only path needs no widening).
const KernelFn &HalfScatterND() {
  static const KernelFn run = WithHalfViaF32(RunScatterND);
  return run;
}

Status RunScatterND(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(kernels::ScatterReduction reduction, Reduction(attrs));
  const DType t = in[0]->dtype;
  if (reduction != kernels::ScatterReduction::kNone && (t == DType::kF16 || t == DType::kBF16))
    return HalfScatterND()(ctx, attrs, in, out);
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const size_t k = static_cast<size_t>(is.back());
  const std::vector<int64_t> dims(s.begin(), s.begin() + k);
  const int64_t inner = Count(s, k, s.size()), n = Count(is, 0, is.size() - 1);
  const int64_t *idx = in[1]->as<const int64_t>();
  // Check the indices before the copy, so a failed op leaves out untouched.
  const int64_t bad = kernels::FirstBadIndex(dims, idx, n);
  if (bad >= 0)
    return IndexError("scatter_nd", *in[1], bad, s, 0);
  CopyBytes(*in[0], out[0]);
  if (reduction == kernels::ScatterReduction::kNone) {
    kernels::ScatterNDBytes(DTypeSize(t), out[0].data, dims, inner, idx, n, in[2]->data);
    return Status::Ok();
  }
  return DispatchNumeric("scatter_nd", t, [&](auto zero) -> Status {
    using T = decltype(zero);
    kernels::ScatterND<T>(out[0].as<T>(), dims, inner, idx, n, in[2]->as<const T>(), reduction);
    return Status::Ok();
  });
}

// ---- Gather -------------------------------------------------------------

Status RunGather(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("gather", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d)
    inner *= s[d];
  const size_t elem = DTypeSize(in[0]->dtype);
  const int64_t count = in[1]->numel();
  int64_t bad;
  int64_t value;
  if (in[1]->dtype == DType::kI64) {
    bad = kernels::Gather<int64_t>(elem, in[0]->data, outer, s[axis], inner,
                                   in[1]->as<const int64_t>(), count, out[0].data);
    value = bad >= 0 ? in[1]->as<const int64_t>()[bad] : 0;
  } else {
    bad = kernels::Gather<int32_t>(elem, in[0]->data, outer, s[axis], inner,
                                   in[1]->as<const int32_t>(), count, out[0].data);
    value = bad >= 0 ? in[1]->as<const int32_t>()[bad] : 0;
  }
  if (bad >= 0)
    return OpError("gather", "index " + std::to_string(value) + " (at position " +
                                 std::to_string(bad) + ") is out of range for axis " +
                                 std::to_string(axis) + " of size " + std::to_string(s[axis]));
  return Status::Ok();
}

} // namespace

void AddGatherKernels(std::vector<KernelDef> &table) { KILN_ADD_GATHER_KERNELS(table); }

} // namespace kiln::cpu
