// References of the ops that move elements without arithmetic: transpose,
// slice, expand, tile, concat, split, gather, gather_nd, scatter_nd, trilu
// and the reshape family. Each walks the result one index at a time.
#include "references.h"

#include <algorithm>

namespace kiln::oracle {
namespace {

std::vector<int64_t> IntsOf(const RefTensor *t) {
  std::vector<int64_t> v;
  if (t)
    for (double x : t->v)
      v.push_back(static_cast<int64_t>(x));
  return v;
}

// out[i] = in[source(index of i)] over `shape`.
RefTensor Walk(const Shape &shape, const RefTensor &in,
               const std::function<int64_t(const std::vector<int64_t> &)> &source) {
  RefTensor out{shape, std::vector<double>(static_cast<size_t>(NumElements(shape)))};
  for (int64_t i = 0; i < out.numel(); ++i)
    out.v[i] = in.v[source(Unravel(i, shape))];
  return out;
}

std::vector<RefTensor> Transpose(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  std::vector<int64_t> perm = attrs.Ints("perm");
  if (perm.empty())
    for (size_t d = s.size(); d-- > 0;)
      perm.push_back(static_cast<int64_t>(d));
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(s[p]);
  return {Walk(shape, *in[0], [&](const std::vector<int64_t> &idx) {
    std::vector<int64_t> src(s.size());
    for (size_t d = 0; d < perm.size(); ++d)
      src[perm[d]] = idx[d];
    return Ravel(src, s);
  })};
}

// The source positions along one sliced axis, per ONNX Slice's clamping.
std::vector<int64_t> SlicePositions(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  std::vector<int64_t> pos;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    for (int64_t i = start; i < end; i += step)
      pos.push_back(i);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    for (int64_t i = start; i > end; i += step)
      pos.push_back(i);
  }
  return pos;
}

std::vector<RefTensor> Slice(const OpAttrs &, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const std::vector<int64_t> starts = IntsOf(in[1]), ends = IntsOf(in[2]);
  std::vector<int64_t> axes = IntsOf(in.size() > 3 ? in[3] : nullptr);
  std::vector<int64_t> steps = IntsOf(in.size() > 4 ? in[4] : nullptr);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty())
    steps.assign(starts.size(), 1);
  std::vector<std::vector<int64_t>> pos(s.size());
  for (size_t d = 0; d < s.size(); ++d)
    for (int64_t i = 0; i < s[d]; ++i)
      pos[d].push_back(i);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = Axis(axes[i], s.size());
    pos[a] = SlicePositions(starts[i], ends[i], steps[i], s[a]);
  }
  Shape shape;
  for (const auto &p : pos)
    shape.push_back(static_cast<int64_t>(p.size()));
  return {Walk(shape, *in[0], [&](const std::vector<int64_t> &idx) {
    std::vector<int64_t> src(s.size());
    for (size_t d = 0; d < s.size(); ++d)
      src[d] = pos[d][idx[d]];
    return Ravel(src, s);
  })};
}

std::vector<RefTensor> Expand(const OpAttrs &, const RefInputs &in) {
  const Shape shape = BroadcastAll({in[0]->shape, IntsOf(in[1])});
  return {Walk(shape, *in[0],
               [&](const std::vector<int64_t> &idx) { return BroadcastIndex(idx, in[0]->shape); })};
}

std::vector<RefTensor> Tile(const OpAttrs &, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const std::vector<int64_t> repeats = IntsOf(in[1]);
  Shape shape = s;
  for (size_t d = 0; d < s.size(); ++d)
    shape[d] *= repeats[d];
  return {Walk(shape, *in[0], [&](const std::vector<int64_t> &idx) {
    std::vector<int64_t> src(s.size());
    for (size_t d = 0; d < s.size(); ++d)
      src[d] = idx[d] % s[d];
    return Ravel(src, s);
  })};
}

std::vector<RefTensor> Concat(const OpAttrs &attrs, const RefInputs &in) {
  const int64_t axis = Axis(attrs.Int("axis", 0), in[0]->shape.size());
  RefTensor out{in[0]->shape, {}};
  out.shape[axis] = 0;
  for (const RefTensor *t : in)
    out.shape[axis] += t->shape[axis];
  out.v.resize(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> idx = Unravel(i, out.shape);
    size_t k = 0;
    while (idx[axis] >= in[k]->shape[axis])
      idx[axis] -= in[k++]->shape[axis];
    out.v[i] = in[k]->v[Ravel(idx, in[k]->shape)];
  }
  return {out};
}

std::vector<RefTensor> Split(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t axis = Axis(attrs.Int("axis", 0), s.size());
  // Sizes from the operand, else num_outputs chunks of ceil(dim / n), the
  // last one smaller (opset 18). The cases give one or the other.
  std::vector<int64_t> sizes = IntsOf(in.size() > 1 ? in[1] : nullptr);
  if (sizes.empty()) {
    const int64_t n = attrs.Int("num_outputs", 1), chunk = (s[axis] + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::min(chunk, s[axis] - i * chunk));
  }
  std::vector<RefTensor> outs;
  int64_t offset = 0;
  for (int64_t n : sizes) {
    Shape shape = s;
    shape[axis] = n;
    outs.push_back(Walk(shape, *in[0], [&](std::vector<int64_t> idx) {
      idx[axis] += offset;
      return Ravel(idx, s);
    }));
    offset += n;
  }
  return outs;
}

std::vector<RefTensor> Gather(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const int64_t axis = Axis(attrs.Int("axis", 0), s.size());
  Shape shape(s.begin(), s.begin() + axis);
  shape.insert(shape.end(), is.begin(), is.end());
  shape.insert(shape.end(), s.begin() + axis + 1, s.end());
  return {Walk(shape, *in[0], [&](const std::vector<int64_t> &idx) {
    std::vector<int64_t> src(idx.begin(), idx.begin() + axis);
    const std::vector<int64_t> at(idx.begin() + axis, idx.begin() + axis + is.size());
    int64_t k = static_cast<int64_t>(in[1]->v[Ravel(at, is)]);
    src.push_back(k < 0 ? k + s[axis] : k);
    src.insert(src.end(), idx.begin() + axis + is.size(), idx.end());
    return Ravel(src, s);
  })};
}

std::vector<RefTensor> GatherND(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const size_t b = static_cast<size_t>(attrs.Int("batch_dims", 0));
  const size_t m = static_cast<size_t>(is.back());
  Shape shape(is.begin(), is.end() - 1);
  shape.insert(shape.end(), s.begin() + b + m, s.end());
  return {Walk(shape, *in[0], [&](const std::vector<int64_t> &idx) {
    // idx = indices' leading dims (batch included), then data's trailing dims.
    std::vector<int64_t> tuple_at(idx.begin(), idx.begin() + (is.size() - 1));
    std::vector<int64_t> src(idx.begin(), idx.begin() + b);
    for (size_t j = 0; j < m; ++j) {
      tuple_at.push_back(static_cast<int64_t>(j));
      src.push_back(static_cast<int64_t>(in[1]->v[Ravel(tuple_at, is)]));
      tuple_at.pop_back();
    }
    src.insert(src.end(), idx.begin() + (is.size() - 1), idx.end());
    return Ravel(src, s);
  })};
}

std::vector<RefTensor> ScatterND(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const std::string reduction = attrs.String("reduction", "none");
  const size_t k = static_cast<size_t>(is.back());
  const int64_t tuples = in[1]->numel() / static_cast<int64_t>(k);
  int64_t inner = 1;
  for (size_t d = k; d < s.size(); ++d)
    inner *= s[d];
  RefTensor out = *in[0];
  for (int64_t t = 0; t < tuples; ++t) {
    std::vector<int64_t> at(s.size(), 0);
    for (size_t j = 0; j < k; ++j)
      at[j] = static_cast<int64_t>(in[1]->v[t * k + j]);
    const int64_t base = Ravel(at, s);
    for (int64_t e = 0; e < inner; ++e) {
      double &dst = out.v[base + e];
      const double u = in[2]->v[t * inner + e];
      if (reduction == "add")
        dst += u;
      else if (reduction == "mul")
        dst *= u;
      else if (reduction == "max")
        dst = std::max(dst, u);
      else if (reduction == "min")
        dst = std::min(dst, u);
      else
        dst = u;
    }
  }
  return {out};
}

std::vector<RefTensor> Trilu(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t k = in.size() > 1 && in[1] ? static_cast<int64_t>(in[1]->v[0]) : 0;
  const bool upper = attrs.Int("upper", 1) != 0;
  RefTensor out = *in[0];
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, s);
    const int64_t row = idx[s.size() - 2], col = idx.back();
    const bool keep = upper ? col - row >= k : col - row <= k;
    if (!keep)
      out.v[i] = 0;
  }
  return {out};
}

// The reshape family keeps the values in order and only renames the shape.
std::vector<RefTensor> Reshape(const OpAttrs &attrs, const RefInputs &in) {
  std::vector<int64_t> dims = IntsOf(in[1]);
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && attrs.Int("allowzero", 0) == 0)
      dims[i] = in[0]->shape[i];
    if (dims[i] == -1)
      infer_at = static_cast<int>(i);
    else
      known *= dims[i];
  }
  if (infer_at >= 0)
    dims[infer_at] = in[0]->numel() / known;
  return {RefTensor{dims, in[0]->v}};
}

std::vector<RefTensor> Flatten(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t axis = Axis(attrs.Int("axis", 1), s.size());
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= s[d];
  return {RefTensor{{outer, in[0]->numel() / outer}, in[0]->v}};
}

std::vector<RefTensor> Squeeze(const OpAttrs &, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  std::vector<int64_t> axes = IntsOf(in.size() > 1 ? in[1] : nullptr);
  Shape shape;
  for (size_t d = 0; d < s.size(); ++d) {
    bool drop = axes.empty() && s[d] == 1;
    for (int64_t a : axes)
      drop = drop || Axis(a, s.size()) == static_cast<int64_t>(d);
    if (!drop)
      shape.push_back(s[d]);
  }
  return {RefTensor{shape, in[0]->v}};
}

std::vector<RefTensor> Unsqueeze(const OpAttrs &, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const std::vector<int64_t> axes = IntsOf(in[1]);
  const size_t rank = s.size() + axes.size();
  Shape shape;
  size_t next = 0;
  for (size_t d = 0; d < rank; ++d) {
    bool inserted = false;
    for (int64_t a : axes)
      inserted = inserted || Axis(a, rank) == static_cast<int64_t>(d);
    shape.push_back(inserted ? 1 : s[next++]);
  }
  return {RefTensor{shape, in[0]->v}};
}

std::vector<RefTensor> ConstantOfShape(const OpAttrs &attrs, const RefInputs &in) {
  const Shape shape = IntsOf(in[0]);
  auto it = attrs.all().find("value");
  const double value = it == attrs.all().end() ? 0.0
                       : it->second.kind == AttrValue::Kind::kInt
                           ? static_cast<double>(it->second.i)
                           : it->second.f;
  return {RefTensor{shape, std::vector<double>(static_cast<size_t>(NumElements(shape)), value)}};
}

// start, start + delta, ... while before limit.
std::vector<RefTensor> Range(const OpAttrs &, const RefInputs &in) {
  const double start = in[0]->v[0], limit = in[1]->v[0], delta = in[2]->v[0];
  RefTensor out;
  for (double x = start; delta > 0 ? x < limit : x > limit; x = start + out.v.size() * delta)
    out.v.push_back(x);
  out.shape = {static_cast<int64_t>(out.v.size())};
  return {out};
}

// The operand's dims from `start` to `end` (negative ones count from the
// end; both clamped to [0, rank]).
std::vector<RefTensor> ShapeOf(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(attrs.Int("start", 0)), end = clamp(attrs.Int("end", rank));
  RefTensor out;
  for (int64_t d = start; d < end; ++d)
    out.v.push_back(static_cast<double>(s[d]));
  out.shape = {static_cast<int64_t>(out.v.size())};
  return {out};
}

std::vector<RefTensor> Size(const OpAttrs &, const RefInputs &in) {
  return {RefTensor{{}, {static_cast<double>(in[0]->numel())}}};
}

} // namespace

void AddMovementRefs(RefTable &t) {
  t["shape"] = ShapeOf;
  t["size"] = Size;
  t["transpose"] = Transpose;
  t["slice"] = Slice;
  t["expand"] = Expand;
  t["tile"] = Tile;
  t["concat"] = Concat;
  t["split"] = Split;
  t["gather"] = Gather;
  t["gather_nd"] = GatherND;
  t["scatter_nd"] = ScatterND;
  t["trilu"] = Trilu;
  t["reshape"] = Reshape;
  t["flatten"] = Flatten;
  t["squeeze"] = Squeeze;
  t["unsqueeze"] = Unsqueeze;
  t["constant_of_shape"] = ConstantOfShape;
  t["range"] = Range;
}

} // namespace kiln::oracle
