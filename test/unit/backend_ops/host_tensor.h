// Owning host tensors for the op oracle, and the conversions between a
// tensor's dtype and the doubles the references compute in. The half
// conversions are the compiler's own (_Float16) and a plain bit rounding for
// bf16, written apart from the runtime's kernels so they can check them.
#pragma once

#include "kiln/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::oracle {

struct HostTensor {
  DType dtype = DType::kUndefined;
  Shape shape;
  std::vector<uint8_t> bytes;

  HostTensor() = default;
  HostTensor(DType t, Shape s);
  int64_t numel() const { return NumElements(shape); }
  // A view of these bytes, as a kernel on the host sees them.
  TensorView View() const;
};

// Element i as a double (bool and integers exactly; floats widened).
double ElementAt(const HostTensor &t, int64_t i);
std::vector<double> ToDoubles(const HostTensor &t);
// Values rounded to `dtype` (nearest-even for floats, truncated toward zero
// for integers), in a new tensor.
HostTensor FromDoubles(DType dtype, const Shape &shape, const std::vector<double> &values);
// `v` after a round trip through `dtype`.
double RoundTo(DType dtype, double v);

bool IsFloat(DType t);
// "37x129", "scalar" for rank 0.
std::string ShapeName(const Shape &s);

} // namespace kiln::oracle
