// Data movement ops that reorder, select or replicate elements of any dtype:
// Transpose, Slice, Expand, Tile (all through a strided copy), Concat, Split,
// Gather and Trilu.
#include "kernels/cpu/copy.h"
#include "op_util.h"

#include <algorithm>

namespace kiln::cpu {
namespace {

// Strides (in elements) that read `in` broadcast to `out` shape: 0 where the
// right-aligned input dim is 1 (or missing).
std::vector<int64_t> BroadcastStrides(const Shape &in, const Shape &out) {
  const std::vector<int64_t> s = ContiguousStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = lead; d < out.size(); ++d)
    strides[d] = in[d - lead] == 1 ? 0 : s[d - lead];
  return strides;
}

// ---- Transpose ----------------------------------------------------------

StatusOr<std::vector<int64_t>> Permutation(const OpAttrs &attrs, int64_t rank) {
  std::vector<int64_t> perm = attrs.Ints("perm");
  if (perm.empty() && rank > 0) {
    // Default: reverse the dims.
    for (int64_t d = rank; d-- > 0;)
      perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return OpError("transpose", "perm has " + std::to_string(perm.size()) +
                                    " entries for an input of rank " + std::to_string(rank));
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return OpError("transpose", "perm " + ShapeToString(perm) + " is not a permutation of [0, " +
                                      std::to_string(rank) + ")");
    seen[p] = true;
  }
  return perm;
}

Status InferTranspose(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("transpose", in, 1, 1, out, 1, 1));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(attrs, s.size()));
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(s[p]);
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

Status RunTranspose(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, Permutation(attrs, s.size()));
  const std::vector<int64_t> in_strides = ContiguousStrides(s);
  std::vector<int64_t> strides;
  for (int64_t p : perm)
    strides.push_back(in_strides[p]);
  kernels::StridedCopy(DTypeSize(in[0]->dtype), in[0]->data, out[0].shape, strides, out[0].data);
  return Status::Ok();
}

// ---- Slice --------------------------------------------------------------

struct SliceView {
  Shape shape;                  // result shape
  int64_t offset = 0;           // first element, in elements
  std::vector<int64_t> strides; // per result dim, in elements
};

StatusOr<SliceView> ResolveSlice(const Inputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> starts, ReadInts("slice", "starts", *in[1]));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ends, ReadInts("slice", "ends", *in[2]));
  std::vector<int64_t> axes, steps;
  if (in.size() > 3 && in[3] != nullptr) {
    KILN_ASSIGN_OR_RETURN(axes, ReadInts("slice", "axes", *in[3]));
  } else {
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  }
  if (in.size() > 4 && in[4] != nullptr) {
    KILN_ASSIGN_OR_RETURN(steps, ReadInts("slice", "steps", *in[4]));
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return OpError("slice", "starts, ends, axes and steps must have the same length, got " +
                                std::to_string(starts.size()) + ", " + std::to_string(ends.size()) +
                                ", " + std::to_string(axes.size()) + ", " +
                                std::to_string(steps.size()));
  KILN_ASSIGN_OR_RETURN(axes, NormalizeAxes("slice", axes, rank));

  SliceView v;
  v.shape = s;
  v.strides = ContiguousStrides(s);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i], dim = s[axis], step = steps[i];
    if (step == 0)
      return OpError("slice", "step for axis " + std::to_string(axis) + " is 0");
    int64_t start = starts[i], end = ends[i];
    // Negative positions count from the end (no overflow: dim >= 0), then
    // both are clamped, with bounds that depend on the direction.
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    __int128 len = 0;
    if (dim > 0) {
      if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        if (end > start)
          len = (static_cast<__int128>(end) - start + step - 1) / step;
      } else {
        start = std::clamp<int64_t>(start, 0, dim - 1);
        end = std::clamp<int64_t>(end, -1, dim - 1);
        const __int128 neg = -static_cast<__int128>(step);
        if (start > end)
          len = (static_cast<__int128>(start) - end + neg - 1) / neg;
      }
    }
    v.shape[axis] = static_cast<int64_t>(len);
    if (len > 0)
      v.offset += start * v.strides[axis];
    // len is 0 or 1 when |step| > dim, so a huge step never leaves the data.
    v.strides[axis] *= len > 1 ? step : 1;
  }
  return v;
}

Status InferSlice(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("slice", in, 3, 5, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(SliceView v, ResolveSlice(in));
  out[0] = {in[0]->dtype, v.shape, nullptr};
  return Status::Ok();
}

Status RunSlice(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(SliceView v, ResolveSlice(in));
  const size_t elem = DTypeSize(in[0]->dtype);
  if (NumElements(v.shape) == 0)
    return Status::Ok();
  kernels::StridedCopy(elem, in[0]->as<const char>() + v.offset * static_cast<int64_t>(elem),
                       v.shape, v.strides, out[0].data);
  return Status::Ok();
}

// ---- Expand, Tile -------------------------------------------------------

Status InferExpand(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("expand", in, 2, 2, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(Shape target, ReadInts("expand", "shape", *in[1]));
  KILN_RETURN_IF_ERROR(CheckShape("expand", target));
  KILN_ASSIGN_OR_RETURN(Shape shape, BroadcastPair("expand", in[0]->shape, target));
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

Status RunExpand(const OpAttrs &, const Inputs &in, Outputs &out) {
  kernels::StridedCopy(DTypeSize(in[0]->dtype), in[0]->data, out[0].shape,
                       BroadcastStrides(in[0]->shape, out[0].shape), out[0].data);
  return Status::Ok();
}

Status InferTile(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("tile", in, 2, 2, out, 1, 1));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ReadInts("tile", "repeats", *in[1]));
  if (repeats.size() != s.size())
    return OpError("tile", "repeats has " + std::to_string(repeats.size()) +
                               " values for an input of rank " + std::to_string(s.size()));
  Shape shape;
  for (size_t d = 0; d < s.size(); ++d) {
    if (repeats[d] < 0)
      return OpError("tile", "repeats " + ShapeToString(repeats) + " is negative");
    KILN_RETURN_IF_ERROR(CheckShape("tile", {s[d], repeats[d]}));
    shape.push_back(s[d] * repeats[d]);
  }
  KILN_RETURN_IF_ERROR(CheckShape("tile", shape));
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

Status RunTile(const OpAttrs &, const Inputs &in, Outputs &out) {
  // Tiling is a strided read of a [r0, d0, r1, d1, ...] view whose repeat
  // dims have stride 0.
  const Shape &s = in[0]->shape;
  const std::vector<int64_t> strides = ContiguousStrides(s);
  Shape view;
  std::vector<int64_t> view_strides;
  for (size_t d = 0; d < s.size(); ++d) {
    view.push_back(s[d] == 0 ? 0 : out[0].shape[d] / s[d]);
    view_strides.push_back(0);
    view.push_back(s[d]);
    view_strides.push_back(strides[d]);
  }
  kernels::StridedCopy(DTypeSize(in[0]->dtype), in[0]->data, view, view_strides, out[0].data);
  return Status::Ok();
}

// ---- Concat, Split ------------------------------------------------------

Status InferConcat(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("concat", in, in.empty() ? 1 : in.size(), 1 << 20, out, 1, 1));
  const Shape &first = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(first.size());
  if (!attrs.Has("axis"))
    return OpError("concat", "attribute 'axis' is missing");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis("concat", attrs.Int("axis", 0), rank));
  Shape shape = first;
  shape[axis] = 0;
  for (const TensorView *t : in) {
    KILN_RETURN_IF_ERROR(CheckSameDType("concat", *in[0], *t));
    bool match = static_cast<int64_t>(t->shape.size()) == rank;
    for (int64_t d = 0; match && d < rank; ++d)
      match = d == axis || t->shape[d] == first[d];
    if (!match)
      return OpError("concat", "operand shapes " + ShapeToString(first) + " and " +
                                   ShapeToString(t->shape) + " differ outside axis " +
                                   std::to_string(axis));
    shape[axis] += t->shape[axis];
  }
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

// Bytes per outer row of `shape` from `axis` on.
int64_t RowBytes(const Shape &shape, int64_t axis, DType t) {
  int64_t n = 1;
  for (size_t d = static_cast<size_t>(axis); d < shape.size(); ++d)
    n *= shape[d];
  return n * static_cast<int64_t>(DTypeSize(t));
}

Status RunConcat(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const int64_t rank = static_cast<int64_t>(out[0].shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis("concat", attrs.Int("axis", 0), rank));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= out[0].shape[d];
  std::vector<const void *> srcs;
  std::vector<int64_t> row_bytes;
  for (const TensorView *t : in) {
    srcs.push_back(t->data);
    row_bytes.push_back(RowBytes(t->shape, axis, t->dtype));
  }
  kernels::Concat(srcs, row_bytes, outer, out[0].data);
  return Status::Ok();
}

StatusOr<std::vector<int64_t>> SplitSizes(const OpAttrs &attrs, const Inputs &in, size_t n,
                                          int64_t dim) {
  std::vector<int64_t> sizes;
  if (in.size() > 1 && in[1] != nullptr) {
    KILN_ASSIGN_OR_RETURN(sizes, ReadInts("split", "split", *in[1]));
    if (sizes.size() != n)
      return OpError("split", "split has " + std::to_string(sizes.size()) + " sizes for " +
                                  std::to_string(n) + " results");
    int64_t total = 0;
    for (int64_t v : sizes) {
      if (v < 0)
        return OpError("split", "split sizes " + ShapeToString(sizes) + " are negative");
      total += v;
    }
    if (total != dim)
      return OpError("split", "split sizes " + ShapeToString(sizes) + " sum to " +
                                  std::to_string(total) + ", expected " + std::to_string(dim));
    return sizes;
  }
  const int64_t num_outputs = attrs.Int("num_outputs", 0);
  if (num_outputs > 0) {
    // Opset 18: chunks of ceil(dim / n), the last one smaller.
    if (static_cast<size_t>(num_outputs) != n)
      return OpError("split", "num_outputs is " + std::to_string(num_outputs) + " but the op has " +
                                  std::to_string(n) + " results");
    const int64_t chunk = (dim + num_outputs - 1) / num_outputs;
    const int64_t last = dim - chunk * (num_outputs - 1);
    if (last < 0)
      return OpError("split", "cannot split a dim of " + std::to_string(dim) + " into " +
                                  std::to_string(num_outputs) + " chunks of " +
                                  std::to_string(chunk));
    sizes.assign(n, chunk);
    sizes.back() = last;
    return sizes;
  }
  if (dim % static_cast<int64_t>(n) != 0)
    return OpError("split", "dim of " + std::to_string(dim) + " does not split evenly into " +
                                std::to_string(n) + " results");
  sizes.assign(n, dim / static_cast<int64_t>(n));
  return sizes;
}

Status InferSplit(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("split", in, 1, 2, out, 1, 1 << 20));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("split", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, SplitSizes(attrs, in, out.size(), s[axis]));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = {in[0]->dtype, s, nullptr};
    out[i].shape[axis] = sizes[i];
  }
  return Status::Ok();
}

Status RunSplit(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("split", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  std::vector<void *> dsts;
  std::vector<int64_t> row_bytes;
  for (TensorView &t : out) {
    dsts.push_back(t.data);
    row_bytes.push_back(RowBytes(t.shape, axis, t.dtype));
  }
  kernels::Split(in[0]->data, outer, row_bytes, dsts);
  return Status::Ok();
}

// ---- Gather -------------------------------------------------------------

Status InferGather(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("gather", in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("gather", "indices", *in[1], {DType::kI64, DType::kI32}));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("gather", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  Shape shape(s.begin(), s.begin() + axis);
  shape.insert(shape.end(), in[1]->shape.begin(), in[1]->shape.end());
  shape.insert(shape.end(), s.begin() + axis + 1, s.end());
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

Status RunGather(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
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

// ---- Trilu --------------------------------------------------------------

Status InferTrilu(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("trilu", in, 1, 2, out, 1, 1));
  if (in[0]->shape.size() < 2)
    return OpError("trilu", "input must have rank >= 2, got " + ShapeToString(in[0]->shape));
  if (in.size() > 1 && in[1] != nullptr) {
    KILN_RETURN_IF_ERROR(CheckDType("trilu", "k", *in[1], {DType::kI64}));
    if (in[1]->numel() != 1)
      return OpError("trilu", "k must be a scalar, got shape " + ShapeToString(in[1]->shape));
  }
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

Status RunTrilu(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  int64_t k = 0;
  if (in.size() > 1 && in[1] != nullptr)
    k = *in[1]->as<const int64_t>();
  const int64_t rows = s[s.size() - 2], cols = s.back();
  const int64_t batch = rows * cols == 0 ? 0 : in[0]->numel() / (rows * cols);
  kernels::Trilu(DTypeSize(in[0]->dtype), in[0]->data, out[0].data, batch, rows, cols, k,
                 attrs.Int("upper", 1) != 0);
  return Status::Ok();
}

} // namespace

void AddLayoutOps(std::vector<OpDef> &table) {
  table.push_back({"transpose", InferTranspose, RunTranspose});
  table.push_back({"slice", InferSlice, RunSlice});
  table.push_back({"expand", InferExpand, RunExpand});
  table.push_back({"tile", InferTile, RunTile});
  table.push_back({"concat", InferConcat, RunConcat});
  table.push_back({"split", InferSplit, RunSplit});
  table.push_back({"gather", InferGather, RunGather});
  table.push_back({"trilu", InferTrilu, RunTrilu});
}

} // namespace kiln::cpu
