// Ops that address a tensor with tuples of indices: GatherND and ScatterND.
// Out-of-range indices are an error naming the index and its position; they
// are checked before anything is written.
#include "kernels/cpu/index_nd.h"
#include "half_via_f32.h"
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

Status InferGatherND(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("gather_nd", in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("gather_nd", "indices", *in[1], {DType::kI64}));
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const int64_t r = static_cast<int64_t>(s.size()), q = static_cast<int64_t>(is.size());
  const int64_t b = attrs.Int("batch_dims", 0);
  if (r < 1 || q < 1)
    return OpError("gather_nd", "data and indices must have rank >= 1, got " + ShapeToString(s) +
                                    " and " + ShapeToString(is));
  if (b < 0 || b >= r || b >= q)
    return OpError("gather_nd", "batch_dims " + std::to_string(b) +
                                    " must be in [0, min(rank(data), rank(indices)))");
  const int64_t m = is.back();
  if (m < 1 || m > r - b)
    return OpError("gather_nd", "the last dim of indices " + ShapeToString(is) +
                                    " must be in [1, " + std::to_string(r - b) + "] for data " +
                                    ShapeToString(s) + " and batch_dims " + std::to_string(b));
  for (int64_t d = 0; d < b; ++d)
    if (s[d] != is[d])
      return OpError("gather_nd", "batch dim " + std::to_string(d) + " differs: data " +
                                      ShapeToString(s) + ", indices " + ShapeToString(is));
  Shape shape(is.begin(), is.end() - 1);
  shape.insert(shape.end(), s.begin() + b + m, s.end());
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

Status RunGatherND(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
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

StatusOr<kernels::ScatterReduction> Reduction(const OpAttrs &attrs) {
  const std::string r = attrs.String("reduction", "none");
  if (r == "none")
    return kernels::ScatterReduction::kNone;
  if (r == "add")
    return kernels::ScatterReduction::kAdd;
  if (r == "mul")
    return kernels::ScatterReduction::kMul;
  if (r == "max")
    return kernels::ScatterReduction::kMax;
  if (r == "min")
    return kernels::ScatterReduction::kMin;
  return OpError("scatter_nd", "reduction '" + r + "' is not one of none, add, mul, max, min");
}

Status InferScatterND(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("scatter_nd", in, 3, 3, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("scatter_nd", "indices", *in[1], {DType::kI64}));
  KILN_RETURN_IF_ERROR(CheckSameDType("scatter_nd", *in[0], *in[2]));
  KILN_ASSIGN_OR_RETURN(kernels::ScatterReduction reduction, Reduction(attrs));
  if (reduction != kernels::ScatterReduction::kNone && in[0]->dtype == DType::kBool)
    return OpError("scatter_nd", "reduction '" + attrs.String("reduction", "") +
                                     "' is not supported for bool data");
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const int64_t r = static_cast<int64_t>(s.size());
  if (r < 1 || is.empty())
    return OpError("scatter_nd", "data and indices must have rank >= 1, got " + ShapeToString(s) +
                                     " and " + ShapeToString(is));
  const int64_t k = is.back();
  if (k < 1 || k > r)
    return OpError("scatter_nd", "the last dim of indices " + ShapeToString(is) +
                                     " must be in [1, " + std::to_string(r) + "] for data " +
                                     ShapeToString(s));
  Shape expected(is.begin(), is.end() - 1);
  expected.insert(expected.end(), s.begin() + k, s.end());
  if (in[2]->shape != expected)
    return OpError("scatter_nd", "updates " + ShapeToString(in[2]->shape) + " must have shape " +
                                     ShapeToString(expected) +
                                     " (indices.shape[:-1] + data.shape[k:])");
  out[0] = {in[0]->dtype, s, nullptr};
  return Status::Ok();
}

Status RunScatterND(const OpAttrs &attrs, const Inputs &in, Outputs &out);

// f16/bf16 reductions run in f32 (the bytes-only path needs no widening).
const OpDef &HalfScatterND() {
  static const OpDef def = WithHalfViaF32({"scatter_nd", InferScatterND, RunScatterND});
  return def;
}

Status RunScatterND(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(kernels::ScatterReduction reduction, Reduction(attrs));
  const DType t = in[0]->dtype;
  if (reduction != kernels::ScatterReduction::kNone && (t == DType::kF16 || t == DType::kBF16))
    return HalfScatterND().run(attrs, in, out);
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

} // namespace

void AddIndexOps(std::vector<OpDef> &table) {
  table.push_back({"gather_nd", InferGatherND, RunGatherND});
  table.push_back({"scatter_nd", InferScatterND, RunScatterND});
}

} // namespace kiln::cpu
