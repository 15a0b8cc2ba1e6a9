// Shape rules of the data movement ops that reorder, select or replicate
// elements of any dtype: Transpose, Slice, Expand, Tile, Concat, Split and
// Trilu (Gather: gather.cpp).
#include "core/shapes/movement.h"

#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

#include <algorithm>

namespace kiln {

StatusOr<std::vector<int64_t>> TransposePermutation(const OpAttrs &attrs, int64_t rank) {
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

SliceView TileView(const Shape &in, const Shape &out) {
  const std::vector<int64_t> in_strides = ContiguousStrides(in);
  SliceView view;
  for (size_t d = 0; d < in.size(); ++d) {
    view.shape.push_back(in[d] == 0 ? 0 : out[d] / in[d]);
    view.strides.push_back(0);
    view.shape.push_back(in[d]);
    view.strides.push_back(in_strides[d]);
  }
  return view;
}

int64_t RowBytesFrom(const Shape &shape, int64_t axis, DType t) {
  int64_t n = 1;
  for (size_t d = static_cast<size_t>(axis); d < shape.size(); ++d)
    n *= shape[d];
  return n * static_cast<int64_t>(DTypeSize(t));
}

int64_t RowsBefore(const Shape &shape, int64_t axis) {
  int64_t n = 1;
  for (int64_t d = 0; d < axis; ++d)
    n *= shape[d];
  return n;
}

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

namespace {

// ---- Transpose ----------------------------------------------------------

Status InferTranspose(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("transpose", in, 1, 1, out, 1, 1));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, TransposePermutation(attrs, s.size()));
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(s[p]);
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

// ---- Slice --------------------------------------------------------------

Status InferSlice(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("slice", in, 3, 5, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(SliceView v, ResolveSlice(in));
  out[0] = {in[0]->dtype, v.shape, nullptr};
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

} // namespace

void AddMovementShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"transpose", InferTranspose});
  rules.push_back({"slice", InferSlice});
  rules.push_back({"expand", InferExpand});
  rules.push_back({"tile", InferTile});
  rules.push_back({"concat", InferConcat});
  rules.push_back({"split", InferSplit});
  rules.push_back({"trilu", InferTrilu});
}

} // namespace kiln
