//===- KilnShapeOps.cpp - shape functions of data movement ops ------------===//
//
// ShapeInferenceOpInterface::inferShapes of the data-movement and shape ops
// (Reshape ... Range, Constant). Static dims are exact (ONNX clamping
// included). Symbolic dims assume in-bounds indices: a Slice from `start` to
// `end` along a dim is `end - start` long, as the exporter intended, because
// a symbolic min() would leave the linear form.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnOps.h"
#include "compiler/dialect/ShapeFunctions.h"

#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;

namespace kiln {

using namespace shape_fn;

namespace {

/// A symbol standing for a dim the context does not know, so that slice
/// arithmetic such as (d - 1) - (d - 2) still cancels.
constexpr StringLiteral kUnknownDim = "<unknown>";

/// The length of slicing a dim `d` with one start/end/step triple.
SymDim sliceLength(SymDim d, const SymDim &start, const SymDim &end, const SymDim &step) {
  if (!start.isKnown() || !end.isKnown() || !step.isStatic() || step.getStatic() == 0)
    return SymDim::unknown();
  int64_t k = step.getStatic();
  if (d.isStatic() && start.isStatic() && end.isStatic()) {
    int64_t n = d.getStatic(), s = start.getStatic(), e = end.getStatic();
    if (s < 0)
      s += n;
    if (e < 0)
      e += n;
    if (k > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      return SymDim::of(e > s ? (e - s + k - 1) / k : 0);
    }
    s = std::clamp<int64_t>(s, 0, n - 1);
    e = std::clamp<int64_t>(e, -1, n - 1);
    return SymDim::of(s > e ? (s - e - k - 1) / -k : 0);
  }
  if (k != 1)
    return SymDim::unknown();
  if (!d.isKnown())
    d = SymDim::symbol(kUnknownDim);
  // Large static ends mean "to the end" (exporters use INT64_MAX or INT32_MAX).
  auto resolve = [&](const SymDim &i) {
    if (i.isStatic() && i.getStatic() >= INT32_MAX)
      return d;
    if (i.isStatic() && i.getStatic() < 0)
      return d + i;
    return i;
  };
  SymDim length = resolve(end) - resolve(start);
  if (length.hasSymbol(kUnknownDim))
    return SymDim::unknown();
  if (length.isStatic() && length.getStatic() < 0)
    return SymDim::of(0);
  return length;
}

} // namespace

LogicalResult ReshapeOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  Type elementType = elementTypeOf(getData());
  std::optional<SymDims> target = shapeOperandDims(ctx, getShape());
  if (!target) {
    ctx.setResult(getReshaped(), elementType, SymShape::unranked());
    return success();
  }
  SymDims dims;
  int64_t inferIndex = -1;
  for (auto [i, d] : llvm::enumerate(*target)) {
    if (d.isStatic(0) && !getAllowzero()) {
      dims.push_back(in.ranked && int64_t(i) < in.getRank() ? in.dims[i] : SymDim::unknown());
    } else if (d.isStatic(-1)) {
      inferIndex = i;
      dims.push_back(SymDim::unknown());
    } else if (d.isStatic() && d.getStatic() < 0) {
      return emitOpError() << "shape entry " << d.getStatic() << " is invalid";
    } else {
      dims.push_back(d);
    }
  }
  if (inferIndex >= 0 && in.ranked) {
    // Cancel dims that appear on both sides (e.g. batch and sequence), then
    // the -1 is the ratio of what is left if that is static.
    SymDims rest(in.dims.begin(), in.dims.end());
    bool ok = true;
    int64_t outProduct = 1;
    for (auto [i, d] : llvm::enumerate(dims)) {
      if (int64_t(i) == inferIndex)
        continue;
      auto it = llvm::find(rest, d);
      if (it != rest.end() && !d.isStatic()) {
        rest.erase(it);
        continue;
      }
      std::optional<int64_t> p =
          d.isStatic() ? llvm::checkedMul(outProduct, d.getStatic()) : std::nullopt;
      ok &= p.has_value();
      outProduct = p.value_or(1);
    }
    // What is left of the input may hold one symbolic dim (reshape
    // [batch, seq] to [-1, seq] leaves batch).
    int64_t inProduct = 1;
    std::optional<SymDim> symbolic;
    for (const SymDim &d : rest) {
      if (d.isSymbolic() && !symbolic) {
        symbolic = d;
        continue;
      }
      std::optional<int64_t> p =
          d.isStatic() ? llvm::checkedMul(inProduct, d.getStatic()) : std::nullopt;
      ok &= p.has_value();
      inProduct = p.value_or(1);
    }
    if (ok && outProduct > 0 && inProduct % outProduct == 0)
      dims[inferIndex] = symbolic ? *symbolic * SymDim::of(inProduct / outProduct)
                                  : SymDim::of(inProduct / outProduct);
  }
  SymShape out = SymShape::get(dims);
  std::optional<int64_t> inCount = in.getStaticNumElements();
  std::optional<int64_t> outCount = out.getStaticNumElements();
  if (inCount && outCount && *inCount != *outCount)
    return emitOpError() << "cannot reshape " << *inCount << " elements into " << *outCount;
  ctx.setResult(getReshaped(), elementType, out);
  if (out.getRank() <= 1)
    setIntValues(ctx, getReshaped(), ctx.getValues(getData()));
  return success();
}

LogicalResult TransposeOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  SymShape out = SymShape::get(SymDims(getPerm().size(), SymDim::unknown()));
  if (in.ranked && in.getRank() == int64_t(getPerm().size()))
    for (auto [i, p] : llvm::enumerate(getPerm()))
      if (p >= 0 && p < in.getRank())
        out.dims[i] = in.dims[p];
  ctx.setResult(getTransposed(), elementTypeOf(getData()), out);
  return success();
}

LogicalResult ConcatOp::inferShapes(ShapeInferenceContext &ctx) {
  Type elementType = elementTypeOf(getInputs()[0]);
  SymShape out = SymShape::unranked();
  for (Value v : getInputs()) {
    SymShape s = ctx.getShape(v);
    if (s.ranked) {
      out = SymShape::get(SymDims(s.getRank(), SymDim::unknown()));
      break;
    }
  }
  std::optional<int64_t> axis = out.ranked ? normalizeAxis(getAxis(), out.getRank()) : std::nullopt;
  if (!axis) {
    ctx.setResult(getConcatResult(), elementType, out);
    return success();
  }
  SymDim total = SymDim::of(0);
  for (Value v : getInputs()) {
    SymShape s = ctx.getShape(v);
    if (!s.ranked || s.getRank() != out.getRank()) {
      total = SymDim::unknown();
      continue;
    }
    for (int64_t i = 0; i < out.getRank(); ++i)
      if (i != *axis && !out.dims[i].isStatic() && s.dims[i].isKnown())
        out.dims[i] = s.dims[i];
    total = total + s.dims[*axis];
  }
  out.dims[*axis] = total;
  ctx.setResult(getConcatResult(), elementType, out);
  if (out.getRank() == 1) {
    SymDims values;
    for (Value v : getInputs()) {
      std::optional<SymDims> part = ctx.getValues(v);
      SymShape s = ctx.getShape(v);
      if (!part && s.ranked && s.getRank() == 1 && s.dims[0].isStatic() &&
          s.dims[0].getStatic() <= ShapeInferenceContext::kMaxTrackedElements)
        part = SymDims(s.dims[0].getStatic(), SymDim::unknown());
      if (!part)
        return success();
      values.append(part->begin(), part->end());
    }
    setIntValues(ctx, getConcatResult(), values);
  }
  return success();
}

LogicalResult SplitOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getInput());
  Type elementType = elementTypeOf(getInput());
  std::optional<int64_t> axis = in.ranked ? normalizeAxis(getAxis(), in.getRank()) : std::nullopt;
  size_t n = getOutputs().size();
  SymDims sizes(n, SymDim::unknown());
  if (getSplit()) {
    if (std::optional<SymDims> v = ctx.getValues(getSplit()); v && v->size() == n)
      sizes = *v;
  } else if (axis && in.dims[*axis].isStatic() && n > 0) {
    int64_t d = in.dims[*axis].getStatic(), chunk = (d + int64_t(n) - 1) / int64_t(n);
    for (size_t i = 0; i < n; ++i)
      sizes[i] = SymDim::of(std::clamp<int64_t>(d - chunk * int64_t(i), 0, chunk));
  } else if (axis && n > 0) {
    // An even split of a symbolic dim, e.g. fused QKV of width 3 * hidden.
    SymDim part = in.dims[*axis].floorDiv(SymDim::of(n));
    for (size_t i = 0; i < n; ++i)
      sizes[i] = part;
  }
  for (auto [i, out] : llvm::enumerate(getOutputs())) {
    SymShape s = in;
    if (axis)
      s.dims[*axis] = sizes[i];
    ctx.setResult(out, elementType, s);
  }
  return success();
}

LogicalResult SliceOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  Type elementType = elementTypeOf(getData());
  if (!in.ranked) {
    ctx.setResult(getOutput(), elementType, in);
    return success();
  }
  SymShape out = in;
  std::optional<SymDims> starts = ctx.getValues(getStarts());
  std::optional<SymDims> ends = ctx.getValues(getEnds());
  std::optional<SmallVector<int64_t>> axes;
  if (getAxes())
    axes = ctx.getStaticValues(getAxes());
  else if (starts)
    axes = llvm::to_vector(llvm::seq<int64_t>(0, starts->size()));
  std::optional<SymDims> steps;
  if (getSteps())
    steps = ctx.getValues(getSteps());
  else if (starts)
    steps = SymDims(starts->size(), SymDim::of(1));
  if (!starts || !ends || !axes || !steps || ends->size() != starts->size() ||
      axes->size() != starts->size() || steps->size() != starts->size()) {
    // Which axes are sliced is unknown, so every dim is.
    if (!axes)
      out.dims.assign(in.getRank(), SymDim::unknown());
    else
      for (int64_t axis : *axes)
        if (std::optional<int64_t> a = normalizeAxis(axis, in.getRank()))
          out.dims[*a] = SymDim::unknown();
    ctx.setResult(getOutput(), elementType, out);
    return success();
  }
  for (size_t i = 0; i < starts->size(); ++i) {
    std::optional<int64_t> a = normalizeAxis((*axes)[i], in.getRank());
    if (!a)
      return emitOpError() << "axis " << (*axes)[i] << " is out of range for rank " << in.getRank();
    out.dims[*a] = sliceLength(in.dims[*a], (*starts)[i], (*ends)[i], (*steps)[i]);
  }
  ctx.setResult(getOutput(), elementType, out);
  // Slicing a shape vector: pick the values.
  std::optional<SymDims> values = ctx.getValues(getData());
  if (values && in.getRank() == 1 && starts->size() == 1 && (*starts)[0].isStatic() &&
      (*ends)[0].isStatic() && (*steps)[0].isStatic() && (*steps)[0].getStatic() != 0) {
    int64_t n = values->size(), s = (*starts)[0].getStatic(), e = (*ends)[0].getStatic();
    int64_t k = (*steps)[0].getStatic();
    s = s < 0 ? s + n : s;
    e = e < 0 ? e + n : e;
    SymDims picked;
    if (k > 0)
      for (int64_t i = std::clamp<int64_t>(s, 0, n); i < std::clamp<int64_t>(e, 0, n); i += k)
        picked.push_back((*values)[i]);
    else
      for (int64_t i = std::clamp<int64_t>(s, 0, n - 1); i > std::clamp<int64_t>(e, -1, n - 1);
           i += k)
        picked.push_back((*values)[i]);
    setIntValues(ctx, getOutput(), picked);
  }
  return success();
}

LogicalResult GatherOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape data = ctx.getShape(getData()), indices = ctx.getShape(getIndices());
  Type elementType = elementTypeOf(getData());
  std::optional<int64_t> axis =
      data.ranked ? normalizeAxis(getAxis(), data.getRank()) : std::nullopt;
  if (!axis || !indices.ranked) {
    ctx.setResult(getOutput(), elementType, SymShape::unranked());
    return success();
  }
  SymShape out = SymShape::get(ArrayRef(data.dims).take_front(*axis));
  out.dims.append(indices.dims.begin(), indices.dims.end());
  out.dims.append(data.dims.begin() + *axis + 1, data.dims.end());
  ctx.setResult(getOutput(), elementType, out);
  std::optional<SymDims> values = ctx.getValues(getData());
  std::optional<SmallVector<int64_t>> idx = ctx.getStaticValues(getIndices());
  if (values && idx && data.getRank() == 1 && indices.getRank() <= 1) {
    SymDims picked;
    int64_t n = values->size();
    for (int64_t i : *idx) {
      i = i < 0 ? i + n : i;
      if (i < 0 || i >= n)
        return emitOpError() << "index " << i << " is out of range for " << n << " elements";
      picked.push_back((*values)[i]);
    }
    setIntValues(ctx, getOutput(), picked);
  }
  return success();
}

/// The static values of GatherND/ScatterND indices of rank <= 2 (tracked
/// values, or a small constant), or nullopt.
static std::optional<SmallVector<int64_t>> staticIndexValues(ShapeInferenceContext &ctx,
                                                             Value indices) {
  if (std::optional<SmallVector<int64_t>> v = ctx.getStaticValues(indices))
    return v;
  DenseElementsAttr dense = ctx.getConstant(indices);
  if (!dense || !dense.getElementType().isInteger(64) || dense.getType().getRank() > 2 ||
      dense.getNumElements() > ShapeInferenceContext::kMaxTrackedElements)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (const APInt &v : dense.getValues<APInt>())
    out.push_back(v.getSExtValue());
  return out;
}

LogicalResult GatherNDOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape data = ctx.getShape(getData()), indices = ctx.getShape(getIndices());
  Type elementType = elementTypeOf(getData());
  int64_t b = getBatchDims();
  std::optional<int64_t> m;
  if (indices.ranked && indices.getRank() > b && indices.dims.back().isStatic())
    m = indices.dims.back().getStatic();
  if (!data.ranked || !m || b < 0 || *m < 1 || b + *m > data.getRank()) {
    ctx.setResult(getOutput(), elementType, SymShape::unranked());
    return success();
  }
  SymShape out = SymShape::get(ArrayRef(indices.dims).drop_back());
  for (int64_t i = 0; i < b; ++i)
    if (!out.dims[i].isKnown())
      out.dims[i] = data.dims[i];
  out.dims.append(data.dims.begin() + b + *m, data.dims.end());
  ctx.setResult(getOutput(), elementType, out);
  // Picking entries of a shape vector: data is 1-D, the tuples have one index.
  std::optional<SymDims> values = ctx.getValues(getData());
  std::optional<SmallVector<int64_t>> idx = staticIndexValues(ctx, getIndices());
  if (values && idx && data.getRank() == 1 && indices.getRank() <= 2 && b == 0) {
    SymDims picked;
    int64_t n = values->size();
    for (int64_t i : *idx) {
      i = i < 0 ? i + n : i;
      if (i < 0 || i >= n)
        return emitOpError() << "index " << i << " is out of range for " << n << " elements";
      picked.push_back((*values)[i]);
    }
    setIntValues(ctx, getOutput(), picked);
  }
  return success();
}

LogicalResult ScatterNDOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape data = ctx.getShape(getData());
  ctx.setResult(getOutput(), elementTypeOf(getData()), data);
  // Writing entries of a shape vector: data is 1-D, the tuples have one index.
  std::optional<SymDims> values = ctx.getValues(getData());
  std::optional<SymDims> updates = ctx.getValues(getUpdates());
  std::optional<SmallVector<int64_t>> idx = staticIndexValues(ctx, getIndices());
  SymShape indices = ctx.getShape(getIndices());
  if (!values || !updates || !idx || getReduction() != "none" || data.getRank() != 1 ||
      !indices.ranked || indices.getRank() < 1 || indices.getRank() > 2 ||
      !indices.dims.back().isStatic(1) || idx->size() != updates->size())
    return success();
  int64_t n = values->size();
  for (size_t j = 0; j < idx->size(); ++j) {
    int64_t i = (*idx)[j] < 0 ? (*idx)[j] + n : (*idx)[j];
    if (i < 0 || i >= n)
      return emitOpError() << "index " << (*idx)[j] << " is out of range for " << n << " elements";
    (*values)[i] = (*updates)[j];
  }
  setIntValues(ctx, getOutput(), values);
  return success();
}

LogicalResult UnsqueezeOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  Type elementType = elementTypeOf(getData());
  std::optional<SmallVector<int64_t>> axes = ctx.getStaticValues(getAxes());
  if (!in.ranked || !axes) {
    std::optional<int64_t> n = staticAxesCount(ctx.getShape(getAxes()));
    ctx.setResult(getExpanded(), elementType,
                  in.ranked && n ? SymShape::get(SymDims(in.getRank() + *n, SymDim::unknown()))
                                 : SymShape::unranked());
    return success();
  }
  int64_t rank = in.getRank() + int64_t(axes->size());
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    std::optional<int64_t> a = normalizeAxis(axis, rank);
    if (!a || inserted[*a])
      return emitOpError() << "axes are invalid for result rank " << rank;
    inserted[*a] = true;
  }
  SymDims dims;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    dims.push_back(inserted[i] ? SymDim::of(1) : in.dims[next++]);
  ctx.setResult(getExpanded(), elementType, SymShape::get(dims));
  if (rank <= 1)
    setIntValues(ctx, getExpanded(), ctx.getValues(getData()));
  return success();
}

LogicalResult SqueezeOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  Type elementType = elementTypeOf(getData());
  std::optional<SmallVector<int64_t>> axes;
  if (getAxes())
    axes = ctx.getStaticValues(getAxes());
  SmallVector<bool> removed(in.getRank(), false);
  if (in.ranked && axes) {
    for (int64_t axis : *axes) {
      std::optional<int64_t> a = normalizeAxis(axis, in.getRank());
      if (!a)
        return emitOpError() << "axis " << axis << " is out of range for rank " << in.getRank();
      removed[*a] = true;
    }
  } else if (in.ranked && !getAxes() &&
             llvm::all_of(in.dims, [](const SymDim &d) { return d.isStatic(); })) {
    for (auto [i, d] : llvm::enumerate(in.dims))
      removed[i] = d.isStatic(1);
  } else {
    std::optional<int64_t> n =
        getAxes() ? staticAxesCount(ctx.getShape(getAxes())) : std::nullopt;
    ctx.setResult(getSqueezed(), elementType,
                  in.ranked && n && *n <= in.getRank()
                      ? SymShape::get(SymDims(in.getRank() - *n, SymDim::unknown()))
                      : SymShape::unranked());
    return success();
  }
  SymDims dims;
  for (auto [i, d] : llvm::enumerate(in.dims))
    if (!removed[i])
      dims.push_back(d);
  ctx.setResult(getSqueezed(), elementType, SymShape::get(dims));
  if (dims.size() <= 1)
    setIntValues(ctx, getSqueezed(), ctx.getValues(getData()));
  return success();
}

LogicalResult ExpandOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getInput());
  Type elementType = elementTypeOf(getInput());
  std::optional<SymDims> target = shapeOperandDims(ctx, getShape());
  if (!in.ranked || !target) {
    ctx.setResult(getOutput(), elementType, SymShape::unranked());
    return success();
  }
  SymShape out = broadcastShapes({in, SymShape::get(*target)});
  ctx.setResult(getOutput(), elementType, out);
  if (out.getRank() <= 1) {
    std::optional<SymDims> values = ctx.getValues(getInput());
    if (values && values->size() == 1 && out.isFullyStatic() && out.getRank() == 1 &&
        out.dims[0].getStatic() <= ShapeInferenceContext::kMaxTrackedElements)
      values = SymDims(out.dims[0].getStatic(), (*values)[0]);
    else if (values && out.getRank() == 1 && !(out.dims[0] == SymDim::of(values->size())))
      values.reset();
    setIntValues(ctx, getOutput(), values);
  }
  return success();
}

LogicalResult TileOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getInput());
  std::optional<SymDims> repeats = ctx.getValues(getRepeats());
  SymShape out = in;
  if (in.ranked) {
    for (auto [i, d] : llvm::enumerate(out.dims))
      d = repeats && repeats->size() == out.dims.size() ? d * (*repeats)[i] : SymDim::unknown();
  }
  ctx.setResult(getOutput(), elementTypeOf(getInput()), out);
  return success();
}

LogicalResult FlattenOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getInput());
  SymDim outer, inner;
  if (in.ranked) {
    if (std::optional<int64_t> axis = normalizeAxis(getAxis(), in.getRank(), true)) {
      outer = SymDim::of(1);
      inner = SymDim::of(1);
      for (auto [i, d] : llvm::enumerate(in.dims))
        (int64_t(i) < *axis ? outer : inner) = (int64_t(i) < *axis ? outer : inner) * d;
    }
  }
  ctx.setResult(getOutput(), elementTypeOf(getInput()), SymShape::get({outer, inner}));
  return success();
}

LogicalResult ShapeOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  Type i64 = IntegerType::get(getContext(), 64);
  if (!in.ranked) {
    ctx.setResult(getShape(), i64, SymShape::get({SymDim::unknown()}));
    return success();
  }
  auto [start, end] = shape_fn::shapeSliceBounds(getStart(), getEnd(), in.getRank());
  SymDims values(in.dims.begin() + start, in.dims.begin() + end);
  ctx.setResult(getShape(), i64, SymShape::get({SymDim::of(end - start)}));
  ctx.setValues(getShape(), values);
  return success();
}

LogicalResult SizeOp::inferShapes(ShapeInferenceContext &ctx) {
  SymShape in = ctx.getShape(getData());
  ctx.setResult(getSize(), IntegerType::get(getContext(), 64), SymShape::get({}));
  if (!in.ranked)
    return success();
  // The product of the static dims times at most one symbolic dim stays
  // linear (batch * 768); two symbolic factors, or an unknown one, do not.
  int64_t product = 1;
  bool zero = false, overflow = false;
  SmallVector<SymDim> symbolic;
  for (const SymDim &d : in.dims) {
    if (d.isStatic()) {
      zero |= d.getStatic() == 0;
      std::optional<int64_t> p = llvm::checkedMul(product, d.getStatic());
      overflow |= !p;
      product = p.value_or(1);
    } else {
      symbolic.push_back(d);
    }
  }
  SymDim count;
  if (zero)
    count = SymDim::of(0);
  else if (overflow)
    count = SymDim::unknown();
  else if (symbolic.empty())
    count = SymDim::of(product);
  else if (symbolic.size() == 1)
    count = symbolic[0] * SymDim::of(product);
  ctx.setValues(getSize(), {count});
  return success();
}

LogicalResult ConstantOfShapeOp::inferShapes(ShapeInferenceContext &ctx) {
  Type elementType = elementTypeOf(getOutput());
  std::optional<SymDims> target = shapeOperandDims(ctx, getInput());
  SymShape out = target ? SymShape::get(*target) : SymShape::unranked();
  for (SymDim &d : out.dims)
    if (d.isStatic() && d.getStatic() < 0)
      return emitOpError() << "shape entries must be >= 0, got " << d.getStatic();
  ctx.setResult(getOutput(), elementType, out);
  double fill = getValue().convertToDouble();
  std::optional<int64_t> count = out.getStaticNumElements();
  if (elementType.isInteger() && out.getRank() <= 1 && count &&
      *count <= ShapeInferenceContext::kMaxTrackedElements && std::abs(fill) < 9.0e18 &&
      fill == double(int64_t(fill)))
    setIntValues(ctx, getOutput(), SymDims(*count, SymDim::of(int64_t(fill))));
  return success();
}

/// A scalar operand as a double, from a constant.
static std::optional<double> scalarConstant(ShapeInferenceContext &ctx, Value v) {
  DenseElementsAttr dense = ctx.getConstant(v);
  if (!dense || dense.getNumElements() != 1)
    return std::nullopt;
  if (isa<FloatType>(dense.getElementType()))
    return (*dense.getValues<APFloat>().begin()).convertToDouble();
  return double((*dense.getValues<APInt>().begin()).getSExtValue());
}

LogicalResult RangeOp::inferShapes(ShapeInferenceContext &ctx) {
  Type elementType = elementTypeOf(getStart());
  SymDim length;
  std::optional<SymDims> start = ctx.getValues(getStart()), limit = ctx.getValues(getLimit()),
                         delta = ctx.getValues(getDelta());
  std::optional<double> s = scalarConstant(ctx, getStart()), l = scalarConstant(ctx, getLimit()),
                        d = scalarConstant(ctx, getDelta());
  if (s && l && d && *d != 0) {
    double n = std::ceil((*l - *s) / *d);
    if (!(n < 9.0e15))
      return emitOpError() << "range has too many elements";
    length = SymDim::of(n > 0 ? int64_t(n) : 0);
  } else if (start && limit && delta && start->size() == 1 && limit->size() == 1 &&
             delta->size() == 1 && (*delta)[0].isStatic(1)) {
    length = (*limit)[0] - (*start)[0];
  }
  ctx.setResult(getOutput(), elementType, SymShape::get({length}));
  if (start && delta && length.isStatic() &&
      length.getStatic() <= ShapeInferenceContext::kMaxTrackedElements && start->size() == 1 &&
      delta->size() == 1) {
    SymDims values;
    for (int64_t i = 0; i < length.getStatic(); ++i)
      values.push_back((*start)[0] + (*delta)[0] * SymDim::of(i));
    setIntValues(ctx, getOutput(), values);
  }
  return success();
}

LogicalResult ConstantOp::inferShapes(ShapeInferenceContext &ctx) {
  auto type = cast<TensorType>(getValue().getType());
  ctx.setResult(getOutput(), type.getElementType(), SymShape::fromType(type));
  return success();
}
} // namespace kiln
