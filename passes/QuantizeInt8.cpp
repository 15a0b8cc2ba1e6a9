//===- QuantizeInt8.cpp - kiln-quantize-int8: int8 weights ----------------===//
//
// Weight-only int8 quantization of the products' constant weights, one f32
// scale per output column; the contract is in Passes.td. The quantized
// weights are new heap blobs (a quarter of the f32 bytes), held until the
// plan is written; the f32 originals are dropped when nothing else reads
// them.
//
//===----------------------------------------------------------------------===//

#include "compiler/dialect/KilnDialect.h"
#include "compiler/dialect/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace kiln {

#define GEN_PASS_DEF_KILNQUANTIZEINT8
#include "passes/Passes.h.inc"

namespace {

using namespace mlir;

/// A weight's int8 form: q [K, N] and scale [N].
struct Quantized {
  Value q, scale;
};

/// The 2-D f32 constant that defines `v`, or null.
ConstantOp f32Weight(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return nullptr;
  auto type = dyn_cast<RankedTensorType>(c.getOutput().getType());
  if (!type || !type.getElementType().isF32() || type.getRank() != 2 || !type.hasStaticShape())
    return nullptr;
  return c;
}

bool isF32(Value v) { return cast<TensorType>(v.getType()).getElementType().isF32(); }

/// Calls `row(r, values)` for each of the constant's K rows of N floats, in
/// order. Resource blobs may be unaligned (mapped from the model file), so
/// each row is copied out first.
LogicalResult forEachRow(ConstantOp c, int64_t k, int64_t n,
                         llvm::function_ref<LogicalResult(int64_t, const float *)> row) {
  std::vector<float> buffer(static_cast<size_t>(n));
  ElementsAttr value = c.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(value)) {
    if (dense.isSplat()) {
      std::fill(buffer.begin(), buffer.end(), dense.getSplatValue<float>());
      for (int64_t r = 0; r < k; ++r)
        if (failed(row(r, buffer.data())))
          return failure();
      return success();
    }
    auto it = dense.value_begin<float>();
    for (int64_t r = 0; r < k; ++r) {
      for (int64_t j = 0; j < n; ++j, ++it)
        buffer[j] = *it;
      if (failed(row(r, buffer.data())))
        return failure();
    }
    return success();
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  if (!resource)
    return c.emitError("kiln-quantize-int8: a weight that is neither dense nor a resource");
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  const uint64_t bytes = static_cast<uint64_t>(k) * n * sizeof(float);
  if (!blob || blob->getData().size() != bytes)
    return c.emitError() << "weight data '" << resource.getRawHandle().getKey()
                         << "' is missing or has the wrong size";
  const char *src = blob->getData().data();
  for (int64_t r = 0; r < k; ++r) {
    std::memcpy(buffer.data(), src + static_cast<uint64_t>(r) * n * sizeof(float),
                n * sizeof(float));
    if (failed(row(r, buffer.data())))
      return failure();
  }
  return success();
}

std::string weightName(ConstantOp c) {
  if (auto n = c.getNameAttr(); n && !n.getValue().empty())
    return n.str();
  return "weight";
}

/// A new constant named `name` holding `bytes` as a resource blob of `type`.
Value blobConstant(OpBuilder &b, Location loc, RankedTensorType type, const std::string &name,
                   const void *bytes, size_t size) {
  AsmResourceBlob blob =
      HeapAsmResourceBlob::allocate(std::max<size_t>(size, 1), alignof(uint64_t));
  std::memcpy(blob.getMutableData().data(), bytes, size);
  auto attr = DenseResourceElementsAttr::get(type, name, std::move(blob));
  return b.create<ConstantOp>(loc, type, attr, b.getStringAttr(name));
}

class Quantizer {
public:
  // `activations`: the new ops' attribute, null for the default (f32).
  Quantizer(MLIRContext *ctx, StringAttr activations) : b(ctx), activations(activations) {}

  /// The int8 form of `c`, made once per constant and placed beside it.
  FailureOr<Quantized> quantize(ConstantOp c) {
    if (auto it = done.find(c); it != done.end())
      return it->second;
    auto type = cast<RankedTensorType>(c.getOutput().getType());
    const int64_t k = type.getDimSize(0), n = type.getDimSize(1);
    const std::string name = weightName(c);
    std::vector<float> maxAbs(static_cast<size_t>(n), 0.0f);
    if (failed(forEachRow(c, k, n, [&](int64_t r, const float *w) -> LogicalResult {
          for (int64_t j = 0; j < n; ++j) {
            if (!std::isfinite(w[j]))
              return c.emitError()
                     << "kiln-quantize-int8: weight '" << name << "' has a non-finite element at ["
                     << r << ", " << j << "]; int8 needs finite weights";
            maxAbs[j] = std::max(maxAbs[j], std::fabs(w[j]));
          }
          return success();
        })))
      return failure();
    std::vector<float> scale(static_cast<size_t>(n)), inverse(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      scale[j] = maxAbs[j] / 127.0f;
      inverse[j] = scale[j] > 0.0f ? 1.0f / scale[j] : 0.0f;
    }
    std::vector<int8_t> q(static_cast<size_t>(k * n));
    if (failed(forEachRow(c, k, n, [&](int64_t r, const float *w) {
          int8_t *out = q.data() + r * n;
          for (int64_t j = 0; j < n; ++j) {
            // |w| <= maxAbs, so |w * inverse| <= 127 up to rounding; the
            // clamp absorbs that rounding.
            const float v = std::nearbyint(w[j] * inverse[j]);
            out[j] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
          }
          return success();
        })))
      return failure();
    b.setInsertionPointAfter(c);
    auto i8 = RankedTensorType::get({k, n}, b.getI8Type());
    auto f32 = RankedTensorType::get({n}, b.getF32Type());
    Quantized out;
    out.q = blobConstant(b, c.getLoc(), i8, name + ".q8", q.data(), q.size());
    out.scale = blobConstant(b, c.getLoc(), f32, name + ".q8_scale", scale.data(),
                             scale.size() * sizeof(float));
    done[c] = out;
    return out;
  }

  LogicalResult rewrite(LinearOp op) {
    ConstantOp w = f32Weight(op.getW());
    if (!w || !isF32(op.getX()) || (op.getBias() && !isF32(op.getBias()))) {
      ++kept;
      return success();
    }
    FailureOr<Quantized> q = quantize(w);
    if (failed(q))
      return failure();
    b.setInsertionPoint(op);
    auto next = b.create<LinearQ8Op>(op.getLoc(), op.getY().getType(), op.getX(), q->q, q->scale,
                                     op.getBias(), op.getActivationAttr(), activations);
    op.getY().replaceAllUsesWith(next.getY());
    op.erase();
    ++linears;
    return success();
  }

  LogicalResult rewrite(GatedMlpOp op) {
    ConstantOp gu = f32Weight(op.getWGateUp()), down = f32Weight(op.getWDown());
    if (!gu || !down || !isF32(op.getX())) {
      ++kept;
      return success();
    }
    FailureOr<Quantized> qgu = quantize(gu);
    if (failed(qgu))
      return failure();
    FailureOr<Quantized> qd = quantize(down);
    if (failed(qd))
      return failure();
    b.setInsertionPoint(op);
    auto next =
        b.create<GatedMlpQ8Op>(op.getLoc(), op.getY().getType(), op.getX(), qgu->q, qgu->scale,
                               qd->q, qd->scale, op.getActivationAttr(), activations);
    op.getY().replaceAllUsesWith(next.getY());
    op.erase();
    ++mlps;
    return success();
  }

  /// The f32 originals that no longer have readers.
  void dropOriginals() {
    for (auto &[c, q] : done)
      if (c->use_empty())
        c->erase();
  }

  int linears = 0, mlps = 0, kept = 0;

private:
  OpBuilder b;
  StringAttr activations;
  llvm::DenseMap<Operation *, Quantized> done;
};

struct KilnQuantizeInt8 : impl::KilnQuantizeInt8Base<KilnQuantizeInt8> {
  using impl::KilnQuantizeInt8Base<KilnQuantizeInt8>::KilnQuantizeInt8Base;

  void runOnOperation() override {
    if (activations != "f32" && activations != "int8") {
      getOperation().emitError() << "kiln-quantize-int8: activations must be f32 or int8, got '"
                                 << activations << "'";
      return signalPassFailure();
    }
    Quantizer quantizer(&getContext(),
                        activations == "int8" ? StringAttr::get(&getContext(), "int8") : nullptr);
    SmallVector<Operation *> products;
    getOperation().walk([&](Operation *op) {
      if (isa<LinearOp, GatedMlpOp>(op))
        products.push_back(op);
    });
    for (Operation *op : products) {
      LogicalResult r = isa<LinearOp>(op) ? quantizer.rewrite(cast<LinearOp>(op))
                                          : quantizer.rewrite(cast<GatedMlpOp>(op));
      if (failed(r))
        return signalPassFailure();
    }
    quantizer.dropOriginals();
    std::string report = std::to_string(quantizer.linears) + " linears, " +
                         std::to_string(quantizer.mlps) + " gated MLPs to int8";
    if (quantizer.kept > 0)
      report += ", " + std::to_string(quantizer.kept) +
                " kept (weight not a 2-D f32 constant, or not an f32 product)";
    getOperation()->setAttr("kiln.quantize_report", StringAttr::get(&getContext(), report));
  }
};

} // namespace
} // namespace kiln
