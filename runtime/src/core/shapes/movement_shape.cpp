// Shape rules of the ops that compute shapes or views of one buffer:
// Reshape, Flatten, Squeeze, Unsqueeze, Shape, Size, plus the generators
// ConstantOfShape and Range. Their result shapes often depend on operand
// values, which the executor provides for host-evaluated shape tensors.
#include "core/shapes/movement_shape.h"

#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

#include <cmath>

namespace kiln {

void ShapeRange(const OpAttrs &attrs, int64_t rank, int64_t *start, int64_t *end) {
  // Out-of-range start/end are clamped, as ONNX specifies.
  auto clamp = [rank](int64_t v) {
    if (v < 0)
      v += rank;
    return v < 0 ? 0 : (v > rank ? rank : v);
  };
  *start = clamp(attrs.Int("start", 0));
  *end = attrs.Has("end") ? clamp(attrs.Int("end", rank)) : rank;
}

namespace {

// ---- Reshape ------------------------------------------------------------

Status InferReshape(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("reshape", in, 2, 2, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ReadInts("reshape", "shape", *in[1]));
  const bool allowzero = attrs.Int("allowzero", 0) != 0;
  const Shape &src = in[0]->shape;
  int infer_at = -1;
  bool has_zero = false;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (infer_at >= 0)
        return OpError("reshape", "shape has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (dims[i] < -1)
      return OpError("reshape", "shape has invalid dim " + std::to_string(dims[i]));
    if (dims[i] == 0) {
      has_zero = true;
      if (!allowzero) {
        // 0 copies the input's dim at the same position.
        if (i >= src.size())
          return OpError("reshape", "shape dim " + std::to_string(i) +
                                        " is 0 (copy) but the input " + ShapeToString(src) +
                                        " has no such dim");
        dims[i] = src[i];
      }
    }
    KILN_RETURN_IF_ERROR(CheckShape("reshape", {known, dims[i]}));
    known *= dims[i];
  }
  if (allowzero && has_zero && infer_at >= 0)
    return OpError("reshape", "shape may not contain both 0 and -1 when allowzero=1");
  const int64_t numel = in[0]->numel();
  if (infer_at >= 0) {
    if (known == 0 || numel % known != 0)
      return OpError("reshape", "cannot reshape " + ShapeToString(src) + " to " +
                                    ShapeToString(dims) + " (-1 cannot be inferred)");
    dims[infer_at] = numel / known;
  } else if (known != numel) {
    return OpError("reshape", "cannot reshape " + ShapeToString(src) + " (" +
                                  std::to_string(numel) + " elements) to " + ShapeToString(dims));
  }
  out[0] = {in[0]->dtype, dims, nullptr};
  return Status::Ok();
}

// ---- Flatten ------------------------------------------------------------

Status InferFlatten(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("flatten", in, 1, 1, out, 1, 1));
  const Shape &s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  int64_t axis = attrs.Int("axis", 1);
  // Flatten's axis may equal rank (everything in the first dim).
  if (axis < -rank || axis > rank)
    return OpError("flatten", "axis " + std::to_string(axis) + " is out of range for rank " +
                                  std::to_string(rank) + " (expected [" + std::to_string(-rank) +
                                  ", " + std::to_string(rank) + "])");
  if (axis < 0)
    axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d)
    (d < axis ? outer : inner) *= s[d];
  out[0] = {in[0]->dtype, {outer, inner}, nullptr};
  return Status::Ok();
}

// ---- Squeeze, Unsqueeze -------------------------------------------------

// Axes from the operand (opset 13+) or, for robustness, an `axes` attribute.
StatusOr<std::vector<int64_t>> AxesOf(const char *op, const OpAttrs &attrs, const Inputs &in) {
  if (in.size() > 1 && in[1] != nullptr)
    return ReadInts(op, "axes", *in[1]);
  return attrs.Ints("axes");
}

Status InferSqueeze(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("squeeze", in, 1, 2, out, 1, 1));
  const Shape &s = in[0]->shape;
  const int64_t rank = static_cast<int64_t>(s.size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf("squeeze", attrs, in));
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  if (axes.empty()) {
    for (int64_t d = 0; d < rank; ++d)
      drop[d] = s[d] == 1;
  } else {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes("squeeze", axes, rank));
    for (int64_t a : norm) {
      if (s[a] != 1)
        return OpError("squeeze", "cannot squeeze axis " + std::to_string(a) + " of size " +
                                      std::to_string(s[a]) + " in " + ShapeToString(s));
      drop[a] = true;
    }
  }
  Shape shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!drop[d])
      shape.push_back(s[d]);
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

Status InferUnsqueeze(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("unsqueeze", in, 1, 2, out, 1, 1));
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf("unsqueeze", attrs, in));
  if (axes.empty())
    return OpError("unsqueeze", "axes are required");
  const int64_t rank = static_cast<int64_t>(s.size() + axes.size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes("unsqueeze", axes, rank));
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t a : norm)
    inserted[a] = true;
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : s[next++]);
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

// ---- Shape --------------------------------------------------------------

Status InferShape(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("shape", in, 1, 1, out, 1, 1));
  int64_t start, end;
  ShapeRange(attrs, static_cast<int64_t>(in[0]->shape.size()), &start, &end);
  out[0] = {DType::kI64, {end > start ? end - start : 0}, nullptr};
  return Status::Ok();
}

// ---- Size ---------------------------------------------------------------

// Like Shape, Size reads only its operand's dims, so the host may evaluate it
// before the operand has data.
Status InferSize(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("size", in, 1, 1, out, 1, 1));
  out[0] = {DType::kI64, {}, nullptr};
  return Status::Ok();
}

// ---- ConstantOfShape ----------------------------------------------------

// The result dtype is the plan tensor's: kept when the caller preset
// out[0].dtype, else taken from an optional `dtype` attribute (a kiln DType
// number), else f32 as in ONNX.
StatusOr<DType> ConstantDType(const OpAttrs &attrs, const TensorView &preset) {
  DType t = preset.dtype;
  if (t == DType::kUndefined)
    t = static_cast<DType>(attrs.Int("dtype", 1));
  if (!IsValueDType(t))
    return OpError("constant_of_shape",
                   "result dtype " + std::to_string(static_cast<int>(t)) + " is not a kiln dtype");
  return t;
}

Status InferConstantOfShape(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("constant_of_shape", in, 1, 1, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(DType dtype, ConstantDType(attrs, out[0]));
  KILN_ASSIGN_OR_RETURN(Shape shape, ReadInts("constant_of_shape", "shape", *in[0]));
  KILN_RETURN_IF_ERROR(CheckShape("constant_of_shape", shape));
  out[0] = {dtype, shape, nullptr};
  return Status::Ok();
}

// ---- Range --------------------------------------------------------------

StatusOr<double> ReadScalar(const char *name, const TensorView &t) {
  if (t.numel() != 1)
    return OpError("range", std::string("operand '") + name + "' must be a scalar, got shape " +
                                ShapeToString(t.shape));
  if (t.data == nullptr)
    return OpError("range", std::string("shape of range depends on values not known before "
                                        "execution (operand '") +
                                name + "')");
  switch (t.dtype) {
  case DType::kF32:
    return static_cast<double>(*t.as<const float>());
  case DType::kF64:
    return *t.as<const double>();
  case DType::kI32:
    return static_cast<double>(*t.as<const int32_t>());
  case DType::kI64:
    return static_cast<double>(*t.as<const int64_t>());
  default:
    return OpError("range", std::string("operand '") + name +
                                "' must be f32, f64, i32 or i64, "
                                "got " +
                                DTypeName(t.dtype));
  }
}

// Number of elements of [start, limit) in steps of delta.
StatusOr<int64_t> RangeCount(const Inputs &in) {
  KILN_ASSIGN_OR_RETURN(double start, ReadScalar("start", *in[0]));
  KILN_ASSIGN_OR_RETURN(double limit, ReadScalar("limit", *in[1]));
  KILN_ASSIGN_OR_RETURN(double delta, ReadScalar("delta", *in[2]));
  if (delta == 0)
    return OpError("range", "delta must not be 0");
  if (in[0]->dtype == DType::kI64 || in[0]->dtype == DType::kI32) {
    // Exact integer arithmetic: doubles lose precision past 2^53.
    auto read = [](const TensorView &t) -> __int128 {
      return t.dtype == DType::kI64 ? *t.as<const int64_t>() : *t.as<const int32_t>();
    };
    const __int128 s = read(*in[0]), l = read(*in[1]), d = read(*in[2]);
    const __int128 n =
        d > 0 ? (l > s ? (l - s + d - 1) / d : 0) : (l < s ? (s - l - d - 1) / -d : 0);
    if (n > (__int128{1} << 62))
      return OpError("range", "result would have too many elements");
    return static_cast<int64_t>(n);
  }
  const double n = std::ceil((limit - start) / delta);
  if (std::isnan(n))
    return OpError("range", "start, limit and delta must be finite");
  if (n <= 0)
    return int64_t{0};
  if (n >= 4.0e18)
    return OpError("range", "result would have too many elements");
  return static_cast<int64_t>(n);
}

Status InferRange(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("range", in, 3, 3, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType("range", "start", *in[0], {DType::kF32, DType::kF64, DType::kI32, DType::kI64}));
  KILN_RETURN_IF_ERROR(CheckSameDType("range", *in[0], *in[1]));
  KILN_RETURN_IF_ERROR(CheckSameDType("range", *in[0], *in[2]));
  KILN_ASSIGN_OR_RETURN(int64_t n, RangeCount(in));
  out[0] = {in[0]->dtype, {n}, nullptr};
  return Status::Ok();
}

} // namespace

void AddMovementShapeOpRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"reshape", InferReshape});
  rules.push_back({"flatten", InferFlatten});
  rules.push_back({"squeeze", InferSqueeze});
  rules.push_back({"unsqueeze", InferUnsqueeze});
  rules.push_back({"shape", InferShape});
  rules.push_back({"size", InferSize});
  rules.push_back({"constant_of_shape", InferConstantOfShape});
  rules.push_back({"range", InferRange});
}

} // namespace kiln
