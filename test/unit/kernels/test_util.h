// Shared test scaffolding: owning tensors, random data, running one op
// through its shape rule (core/shape_table.h) and its CPU kernel
// (cpu::CpuKernels()), and naive index helpers that the reference
// implementations use (deliberately per-element and slow).
#pragma once

#include "core/kernel.h"
#include "core/op_attrs.h"
#include "kiln/status.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test/support/index_math.h"

namespace kiln::test {

template <typename T> constexpr DType DTypeOf();
template <> constexpr DType DTypeOf<float>() { return DType::kF32; }
template <> constexpr DType DTypeOf<double>() { return DType::kF64; }
template <> constexpr DType DTypeOf<int8_t>() { return DType::kI8; }
template <> constexpr DType DTypeOf<uint8_t>() { return DType::kU8; }
template <> constexpr DType DTypeOf<int32_t>() { return DType::kI32; }
template <> constexpr DType DTypeOf<int64_t>() { return DType::kI64; }

// An owning tensor.
struct Tensor {
  DType dtype = DType::kUndefined;
  Shape shape;
  std::vector<uint8_t> bytes;

  Tensor() = default;
  Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
    bytes.resize(static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype));
  }
  int64_t numel() const { return NumElements(shape); }
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes.data()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(bytes.data()); }
  template <typename T> std::vector<T> values() const {
    return std::vector<T>(data<T>(), data<T>() + numel());
  }
  TensorView View() const { return TensorView{dtype, shape, const_cast<uint8_t *>(bytes.data())}; }
};

template <typename T> Tensor Make(Shape shape, const std::vector<T> &values) {
  Tensor t(DTypeOf<T>(), std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel()) << "test bug: value count";
  if (!t.bytes.empty())
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  return t;
}
inline Tensor MakeBool(Shape shape, const std::vector<int> &values) {
  Tensor t(DType::kBool, std::move(shape));
  for (size_t i = 0; i < values.size(); ++i)
    t.bytes[i] = static_cast<uint8_t>(values[i]);
  return t;
}
inline Tensor Ints(const std::vector<int64_t> &values) {
  return Make<int64_t>({static_cast<int64_t>(values.size())}, values);
}
inline Tensor ScalarI64(int64_t v) { return Make<int64_t>({}, {v}); }

// Uniform random values: floats in [lo, hi), integers in [lo, hi].
template <typename T> Tensor Random(Shape shape, std::mt19937 &rng, double lo = -2, double hi = 2) {
  Tensor t(DTypeOf<T>(), std::move(shape));
  T *p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      p[i] = static_cast<T>(std::uniform_real_distribution<double>(lo, hi)(rng));
    } else {
      p[i] = static_cast<T>(std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo),
                                                                   static_cast<int64_t>(hi))(rng));
    }
  }
  return t;
}
inline Tensor RandomBool(Shape shape, std::mt19937 &rng) {
  Tensor t(DType::kBool, std::move(shape));
  for (auto &b : t.bytes)
    b = static_cast<uint8_t>(rng() & 1u);
  return t;
}

// Builds OpAttrs fluently.
class Attrs {
public:
  Attrs &Int(const std::string &n, int64_t v) {
    AttrValue a;
    a.kind = AttrValue::Kind::kInt;
    a.i = v;
    attrs_.Set(n, a);
    return *this;
  }
  Attrs &Float(const std::string &n, float v) {
    AttrValue a;
    a.kind = AttrValue::Kind::kFloat;
    a.f = v;
    attrs_.Set(n, a);
    return *this;
  }
  Attrs &String(const std::string &n, std::string v) {
    AttrValue a;
    a.kind = AttrValue::Kind::kString;
    a.s = std::move(v);
    attrs_.Set(n, a);
    return *this;
  }
  Attrs &IntList(const std::string &n, std::vector<int64_t> v) {
    AttrValue a;
    a.kind = AttrValue::Kind::kInts;
    a.ints = std::move(v);
    attrs_.Set(n, a);
    return *this;
  }
  operator const OpAttrs &() const { return attrs_; }

private:
  OpAttrs attrs_;
};

// Runs `type`: its shape rule, then outputs allocated (pre-filled with 0xFF
// bytes, a NaN pattern for floats, so unwritten elements show), then its CPU
// kernel.
StatusOr<std::vector<Tensor>> RunOp(const std::string &type, const OpAttrs &attrs,
                                    const std::vector<const Tensor *> &inputs,
                                    size_t num_outputs = 1);
// Runs the shape rule of `type` with the given inputs; `known[i]` false
// hides input i's data, as for an activation before execution.
Status InferOp(const std::string &type, const OpAttrs &attrs,
               const std::vector<const Tensor *> &inputs, std::vector<TensorView> *out,
               const std::vector<bool> &known = {});
// Runs only the CPU kernel of `type` on views the caller set up (in place,
// or without data the kernel must not read), with the CPU backend's context.
Status RunKernel(const std::string &type, const OpAttrs &attrs, const Inputs &in, Outputs &out);

// Naive index helpers for references: Unravel, Ravel, BroadcastIndex
// (test/support/index_math.h).

// Numpy broadcast of two shapes, written independently of the kernels;
// false when they do not broadcast.
bool NaiveBroadcast(const Shape &a, const Shape &b, Shape *out);

// A random shape of rank in [min_rank, max_rank] with dims in [1, max_dim].
Shape RandomShape(std::mt19937 &rng, int min_rank, int max_rank, int64_t max_dim);
// A random shape that broadcasts to `out`: some leading dims dropped and some
// dims set to 1.
Shape BroadcastableTo(const Shape &out, std::mt19937 &rng);

// Expects an error whose message contains every fragment.
void ExpectError(const Status &st, const std::vector<std::string> &fragments);

} // namespace kiln::test
