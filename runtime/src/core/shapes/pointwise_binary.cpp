// Shape rules of the broadcasting binary ops (arithmetic, comparisons,
// logic), variadic Max/Min and Where.
#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {
namespace {

constexpr std::initializer_list<DType> kNumeric = {DType::kF32, DType::kF64, DType::kI8,
                                                   DType::kU8,  DType::kI32, DType::kI64};

// ---- Arithmetic: add, sub, mul, div, pow --------------------------------

struct ArithRule {
  const char *name;
  bool pow; // Pow alone lets the exponent have its own type (ONNX T1).
};
constexpr ArithRule kArith[] = {
    {"add", false}, {"sub", false}, {"mul", false}, {"div", false}, {"pow", true}};

template <int kIndex> Status InferArith(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr ArithRule def = kArith[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType(def.name, "A", *in[0], kNumeric));
  if (def.pow) {
    KILN_RETURN_IF_ERROR(CheckDType(def.name, "B", *in[1], kNumeric));
  } else {
    KILN_RETURN_IF_ERROR(CheckSameDType(def.name, *in[0], *in[1]));
  }
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair(def.name, in[0]->shape, in[1]->shape));
  out[0].dtype = in[0]->dtype;
  return Status::Ok();
}

// ---- Max, Min: any number of operands, folded pairwise ------------------

template <bool kMax> constexpr const char *kMaxMinName = kMax ? "max" : "min";

template <bool kMax> Status InferMaxMin(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr const char *name = kMaxMinName<kMax>;
  KILN_RETURN_IF_ERROR(CheckArity(name, in, in.empty() ? 1 : in.size(), 64, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType(name, "data_0", *in[0], kNumeric));
  Shape shape = in[0]->shape;
  for (size_t i = 1; i < in.size(); ++i) {
    KILN_RETURN_IF_ERROR(CheckSameDType(name, *in[0], *in[i]));
    KILN_ASSIGN_OR_RETURN(shape, BroadcastPair(name, shape, in[i]->shape));
  }
  out[0].dtype = in[0]->dtype;
  out[0].shape = shape;
  return Status::Ok();
}

// ---- Comparisons --------------------------------------------------------

struct CompareRule {
  const char *name;
  bool bools; // Equal also takes booleans.
};
constexpr CompareRule kCompare[] = {{"equal", true},
                                    {"less", false},
                                    {"greater", false},
                                    {"less_or_equal", false},
                                    {"greater_or_equal", false}};

template <int kIndex> Status InferCompare(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr CompareRule def = kCompare[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckSameDType(def.name, *in[0], *in[1]));
  if (!(def.bools && in[0]->dtype == DType::kBool))
    KILN_RETURN_IF_ERROR(CheckDType(def.name, "A", *in[0], kNumeric));
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair(def.name, in[0]->shape, in[1]->shape));
  out[0].dtype = DType::kBool;
  return Status::Ok();
}

// ---- Logic: and, or, xor ------------------------------------------------

constexpr const char *kLogic[] = {"and", "or", "xor"};

template <int kIndex> Status InferLogic(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr const char *name = kLogic[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(name, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType(name, "A", *in[0], {DType::kBool}));
  KILN_RETURN_IF_ERROR(CheckDType(name, "B", *in[1], {DType::kBool}));
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair(name, in[0]->shape, in[1]->shape));
  out[0].dtype = DType::kBool;
  return Status::Ok();
}

// ---- Where --------------------------------------------------------------

Status InferWhere(const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("where", in, 3, 3, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType("where", "condition", *in[0], {DType::kBool}));
  KILN_RETURN_IF_ERROR(CheckSameDType("where", *in[1], *in[2]));
  if (DTypeSize(in[1]->dtype) == 0)
    return OpError("where", std::string("unsupported dtype ") + DTypeName(in[1]->dtype));
  KILN_ASSIGN_OR_RETURN(Shape shape, BroadcastPair("where", in[0]->shape, in[1]->shape));
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair("where", shape, in[2]->shape));
  out[0].dtype = in[1]->dtype;
  return Status::Ok();
}

} // namespace

void AddPointwiseBinaryShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"add", InferArith<0>});
  rules.push_back({"sub", InferArith<1>});
  rules.push_back({"mul", InferArith<2>});
  rules.push_back({"div", InferArith<3>});
  rules.push_back({"pow", InferArith<4>});
  rules.push_back({"max", InferMaxMin<true>});
  rules.push_back({"min", InferMaxMin<false>});
  rules.push_back({"equal", InferCompare<0>});
  rules.push_back({"less", InferCompare<1>});
  rules.push_back({"greater", InferCompare<2>});
  rules.push_back({"less_or_equal", InferCompare<3>});
  rules.push_back({"greater_or_equal", InferCompare<4>});
  rules.push_back({"and", InferLogic<0>});
  rules.push_back({"or", InferLogic<1>});
  rules.push_back({"xor", InferLogic<2>});
  rules.push_back({"where", InferWhere});
}

} // namespace kiln
