#include "core/shapes/fused_checks.h"

#include <cmath>

namespace kiln {
namespace {

// The attribute's value, or null with `st` set when it is absent.
const AttrValue *Find(std::string_view op, const OpAttrs &attrs, const char *name, Status *st) {
  auto it = attrs.all().find(name);
  if (it == attrs.all().end()) {
    *st = OpError(op, std::string("missing attribute '") + name + "'");
    return nullptr;
  }
  return &it->second;
}

// The error for an attribute present with the wrong kind.
Status WrongKind(std::string_view op, const char *name, const char *want) {
  return OpError(op, std::string("attribute '") + name + "' must be " + want);
}

} // namespace

StatusOr<float> RequiredFloat(std::string_view op, const OpAttrs &attrs, const char *name) {
  Status st;
  const AttrValue *v = Find(op, attrs, name, &st);
  if (v == nullptr)
    return st;
  if (v->kind == AttrValue::Kind::kFloat)
    return v->f;
  if (v->kind == AttrValue::Kind::kInt) // an importer may write 1 for 1.0
    return static_cast<float>(v->i);
  return WrongKind(op, name, "a float");
}

StatusOr<int64_t> RequiredInt(std::string_view op, const OpAttrs &attrs, const char *name) {
  Status st;
  const AttrValue *v = Find(op, attrs, name, &st);
  if (v == nullptr)
    return st;
  if (v->kind == AttrValue::Kind::kInt)
    return v->i;
  return WrongKind(op, name, "an integer");
}

StatusOr<std::string> RequiredString(std::string_view op, const OpAttrs &attrs, const char *name) {
  Status st;
  const AttrValue *v = Find(op, attrs, name, &st);
  if (v == nullptr)
    return st;
  if (v->kind == AttrValue::Kind::kString)
    return v->s;
  return WrongKind(op, name, "a string");
}

StatusOr<bool> RequiredFlag(std::string_view op, const OpAttrs &attrs, const char *name) {
  KILN_ASSIGN_OR_RETURN(int64_t v, RequiredInt(op, attrs, name));
  if (v != 0 && v != 1)
    return OpError(op, std::string("attribute '") + name + "' must be 0 or 1, got " +
                           std::to_string(v));
  return v == 1;
}

StatusOr<float> SoftCapOf(std::string_view op, const OpAttrs &attrs) {
  if (!attrs.Has("softcap"))
    return 0.0f;
  KILN_ASSIGN_OR_RETURN(float cap, RequiredFloat(op, attrs, "softcap"));
  if (!(cap > 0) || !std::isfinite(cap))
    return OpError(op,
                   "attribute 'softcap' must be finite and positive, got " + std::to_string(cap));
  return cap;
}

StatusOr<int64_t> WindowOf(std::string_view op, const OpAttrs &attrs) {
  if (!attrs.Has("window"))
    return int64_t{0};
  KILN_ASSIGN_OR_RETURN(int64_t window, RequiredInt(op, attrs, "window"));
  if (window <= 0)
    return OpError(op, "attribute 'window' must be positive, got " + std::to_string(window));
  return window;
}

Status CheckFloatOperand(std::string_view op, const char *name, const TensorView &t) {
  if (t.dtype == DType::kF32)
    return Status::Ok();
  return OpError(op, std::string("operand '") + name + "' must be f32, f16 or bf16, got " +
                         DTypeName(t.dtype));
}

Status CheckMinRank(std::string_view op, const char *name, const TensorView &t, size_t min_rank) {
  if (t.shape.size() >= min_rank)
    return Status::Ok();
  return OpError(op, std::string("operand '") + name + "' must have rank >= " +
                         std::to_string(min_rank) + ", got shape " + ShapeToString(t.shape));
}

Status CheckExactShape(std::string_view op, const char *name, const TensorView &t,
                       const Shape &want, const char *want_text) {
  if (t.shape == want)
    return Status::Ok();
  return OpError(op, std::string("operand '") + name + "' must have shape " + want_text + " = " +
                         ShapeToString(want) + ", got " + ShapeToString(t.shape));
}

} // namespace kiln
