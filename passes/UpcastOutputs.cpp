//===- UpcastOutputs.cpp - kiln-upcast-outputs: half outputs to f32 -------===//
//
// Appends a Cast to f32 to every f16/bf16 graph output but the KV cache's,
// so a model that is half already gives the runtime f32 logits. The
// contract is in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/KilnOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "passes/Passes.h"

namespace kiln {

#define GEN_PASS_DEF_KILNUPCASTOUTPUTS
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

bool isHalfTensor(Type t) {
  auto s = dyn_cast<TensorType>(t);
  return s && (s.getElementType().isF16() || s.getElementType().isBF16());
}

struct UpcastOutputsPass : impl::KilnUpcastOutputsBase<UpcastOutputsPass> {
  void runOnOperation() override {
    for (auto f : getOperation().getOps<func::FuncOp>()) {
      if (f.isExternal())
        continue;
      auto ret = cast<func::ReturnOp>(f.front().getTerminator());
      OpBuilder b(ret);
      for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
        Value v = ret.getOperand(i);
        auto name = f.getResultAttrOfType<StringAttr>(i, "kiln.name");
        if (!isHalfTensor(v.getType()) || (name && name.getValue().starts_with("present.")))
          continue;
        auto f32 = cast<TensorType>(v.getType()).clone(b.getF32Type());
        ret.setOperand(
            i, b.create<CastOp>(v.getLoc(), f32, v,
                                b.getI64IntegerAttr(*getDTypeForElementType(b.getF32Type()))));
      }
      f.setType(FunctionType::get(f.getContext(), f.getArgumentTypes(), ret.getOperandTypes()));
    }
  }
};

} // namespace
} // namespace kiln
