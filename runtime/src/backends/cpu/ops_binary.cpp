// Broadcasting binary ops (arithmetic, comparisons, logic), variadic Max/Min
// and Where.
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/cast.h"
#include "kernels/cpu/elementwise.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

using kernels::BinaryOp;
using kernels::BroadcastLayout;
using kernels::CompareOp;
using kernels::LogicOp;

Status MakeLayout(std::string_view op, const std::vector<Shape> &in, const Shape &out,
                  BroadcastLayout *layout) {
  if (!kernels::MakeBroadcastLayout(in, out, layout))
    return OpError(op, "operands do not broadcast to result shape " + ShapeToString(out));
  return Status::Ok();
}

// ---- Arithmetic: add, sub, mul, div, pow --------------------------------

struct ArithDef {
  const char *name;
  BinaryOp op;
};
constexpr ArithDef kArith[] = {{"add", BinaryOp::kAdd},
                               {"sub", BinaryOp::kSub},
                               {"mul", BinaryOp::kMul},
                               {"div", BinaryOp::kDiv},
                               {"pow", BinaryOp::kPow}};

constexpr std::initializer_list<DType> kNumeric = {DType::kF32, DType::kF64, DType::kI8,
                                                   DType::kU8,  DType::kI32, DType::kI64};

template <int kIndex> Status InferArith(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr ArithDef def = kArith[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType(def.name, "A", *in[0], kNumeric));
  // Pow alone lets the exponent have its own type (ONNX T1).
  if (def.op == BinaryOp::kPow) {
    KILN_RETURN_IF_ERROR(CheckDType(def.name, "B", *in[1], kNumeric));
  } else {
    KILN_RETURN_IF_ERROR(CheckSameDType(def.name, *in[0], *in[1]));
  }
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair(def.name, in[0]->shape, in[1]->shape));
  out[0].dtype = in[0]->dtype;
  return Status::Ok();
}

template <int kIndex> Status RunArith(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr ArithDef def = kArith[kIndex];
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(MakeLayout(def.name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
  const void *b = in[1]->data;
  std::vector<uint8_t> converted;
  if (in[1]->dtype != in[0]->dtype) {
    // Mixed-type Pow: bring the exponent to the base type once.
    kernels::ScalarKind from, to;
    if (!ToScalarKind(in[1]->dtype, &from) || !ToScalarKind(in[0]->dtype, &to))
      return OpError(def.name, "unsupported operand dtypes");
    converted.resize(static_cast<size_t>(in[1]->numel()) * DTypeSize(in[0]->dtype));
    kernels::CastElements(from, in[1]->data, to, converted.data(), in[1]->numel());
    b = converted.data();
  }
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Binary<T>(def.op, layout, in[0]->as<const T>(), static_cast<const T *>(b),
                       out[0].as<T>());
    return Status::Ok();
  });
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

template <bool kMax> Status RunMaxMin(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr const char *name = kMaxMinName<kMax>;
  const BinaryOp op = kMax ? BinaryOp::kMax : BinaryOp::kMin;
  if (in.size() == 1) {
    // One operand broadcasts to itself: a copy.
    CopyBytes(*in[0], out[0]);
    return Status::Ok();
  }
  return DispatchNumeric(name, in[0]->dtype, [&](auto tag) -> Status {
    using T = decltype(tag);
    BroadcastLayout layout;
    // The first pair broadcasts straight into the result; later operands
    // fold into it in place (same index in and out, so aliasing is safe).
    KILN_RETURN_IF_ERROR(MakeLayout(name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
    kernels::Binary<T>(op, layout, in[0]->as<const T>(), in[1]->as<const T>(), out[0].as<T>());
    for (size_t i = 2; i < in.size(); ++i) {
      KILN_RETURN_IF_ERROR(MakeLayout(name, {out[0].shape, in[i]->shape}, out[0].shape, &layout));
      kernels::Binary<T>(op, layout, out[0].as<const T>(), in[i]->as<const T>(), out[0].as<T>());
    }
    return Status::Ok();
  });
}

// ---- Comparisons --------------------------------------------------------

struct CompareDef {
  const char *name;
  CompareOp op;
};
constexpr CompareDef kCompare[] = {{"equal", CompareOp::kEqual},
                                   {"less", CompareOp::kLess},
                                   {"greater", CompareOp::kGreater},
                                   {"less_or_equal", CompareOp::kLessOrEqual},
                                   {"greater_or_equal", CompareOp::kGreaterOrEqual}};

template <int kIndex> Status InferCompare(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr CompareDef def = kCompare[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckSameDType(def.name, *in[0], *in[1]));
  if (def.op == CompareOp::kEqual && in[0]->dtype == DType::kBool) {
    // Equal also takes booleans.
  } else {
    KILN_RETURN_IF_ERROR(CheckDType(def.name, "A", *in[0], kNumeric));
  }
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair(def.name, in[0]->shape, in[1]->shape));
  out[0].dtype = DType::kBool;
  return Status::Ok();
}

template <int kIndex> Status RunCompare(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr CompareDef def = kCompare[kIndex];
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(MakeLayout(def.name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
  if (in[0]->dtype == DType::kBool) {
    kernels::Logic(LogicOp::kEqual, layout, in[0]->as<const uint8_t>(), in[1]->as<const uint8_t>(),
                   out[0].as<uint8_t>());
    return Status::Ok();
  }
  return DispatchNumeric(def.name, in[0]->dtype, [&](auto tag) {
    using T = decltype(tag);
    kernels::Compare<T>(def.op, layout, in[0]->as<const T>(), in[1]->as<const T>(),
                        out[0].as<uint8_t>());
    return Status::Ok();
  });
}

// ---- Logic: and, or, xor ------------------------------------------------

struct LogicDef {
  const char *name;
  LogicOp op;
};
constexpr LogicDef kLogic[] = {
    {"and", LogicOp::kAnd}, {"or", LogicOp::kOr}, {"xor", LogicOp::kXor}};

template <int kIndex> Status InferLogic(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr LogicDef def = kLogic[kIndex];
  KILN_RETURN_IF_ERROR(CheckArity(def.name, in, 2, 2, out, 1, 1));
  KILN_RETURN_IF_ERROR(CheckDType(def.name, "A", *in[0], {DType::kBool}));
  KILN_RETURN_IF_ERROR(CheckDType(def.name, "B", *in[1], {DType::kBool}));
  KILN_ASSIGN_OR_RETURN(out[0].shape, BroadcastPair(def.name, in[0]->shape, in[1]->shape));
  out[0].dtype = DType::kBool;
  return Status::Ok();
}

template <int kIndex> Status RunLogic(const OpAttrs &, const Inputs &in, Outputs &out) {
  constexpr LogicDef def = kLogic[kIndex];
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(MakeLayout(def.name, {in[0]->shape, in[1]->shape}, out[0].shape, &layout));
  kernels::Logic(def.op, layout, in[0]->as<const uint8_t>(), in[1]->as<const uint8_t>(),
                 out[0].as<uint8_t>());
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

Status RunWhere(const OpAttrs &, const Inputs &in, Outputs &out) {
  BroadcastLayout layout;
  KILN_RETURN_IF_ERROR(
      MakeLayout("where", {in[0]->shape, in[1]->shape, in[2]->shape}, out[0].shape, &layout));
  if (!kernels::Where(DTypeSize(out[0].dtype), layout, in[0]->as<const uint8_t>(), in[1]->data,
                      in[2]->data, out[0].data))
    return OpError("where", std::string("unsupported dtype ") + DTypeName(out[0].dtype));
  return Status::Ok();
}

} // namespace

void AddBinaryOps(std::vector<OpDef> &table) {
  table.push_back({"add", InferArith<0>, RunArith<0>});
  table.push_back({"sub", InferArith<1>, RunArith<1>});
  table.push_back({"mul", InferArith<2>, RunArith<2>});
  table.push_back({"div", InferArith<3>, RunArith<3>});
  table.push_back({"pow", InferArith<4>, RunArith<4>});
  table.push_back({"max", InferMaxMin<true>, RunMaxMin<true>});
  table.push_back({"min", InferMaxMin<false>, RunMaxMin<false>});
  table.push_back({"equal", InferCompare<0>, RunCompare<0>});
  table.push_back({"less", InferCompare<1>, RunCompare<1>});
  table.push_back({"greater", InferCompare<2>, RunCompare<2>});
  table.push_back({"less_or_equal", InferCompare<3>, RunCompare<3>});
  table.push_back({"greater_or_equal", InferCompare<4>, RunCompare<4>});
  table.push_back({"and", InferLogic<0>, RunLogic<0>});
  table.push_back({"or", InferLogic<1>, RunLogic<1>});
  table.push_back({"xor", InferLogic<2>, RunLogic<2>});
  table.push_back({"where", InferWhere, RunWhere});
}

} // namespace kiln::cpu
