#include "host_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::oracle {
namespace {

// bf16 is the top half of an f32; round the dropped half to nearest even.
uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f))
    return 0x7FC0;
  const uint32_t lsb = (bits >> 16) & 1u;
  bits += 0x7FFFu + lsb;
  return static_cast<uint16_t>(bits >> 16);
}

float Bf16ToFloat(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T> T Load(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void Store(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

// Integers truncate toward zero, as a cast does; out-of-range values are a
// test bug, so they saturate instead of being undefined.
template <typename T> T ToInt(double v) {
  const double t = std::trunc(v);
  if (std::isnan(t))
    return 0;
  if (t <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

} // namespace

HostTensor::HostTensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
  bytes.resize(static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype));
}

TensorView HostTensor::View() const {
  return TensorView{dtype, shape, const_cast<uint8_t *>(bytes.data()), MemorySpace::kHost};
}

double ElementAt(const HostTensor &t, int64_t i) {
  const uint8_t *p = t.bytes.data() + static_cast<size_t>(i) * DTypeSize(t.dtype);
  switch (t.dtype) {
  case DType::kF32:
    return Load<float>(p);
  case DType::kF16:
    return static_cast<double>(Load<_Float16>(p));
  case DType::kBF16:
    return Bf16ToFloat(Load<uint16_t>(p));
  case DType::kF64:
    return Load<double>(p);
  case DType::kI8:
    return Load<int8_t>(p);
  case DType::kU8:
  case DType::kBool:
    return Load<uint8_t>(p);
  case DType::kI32:
    return Load<int32_t>(p);
  case DType::kI64:
    return static_cast<double>(Load<int64_t>(p));
  default:
    return std::nan("");
  }
}

std::vector<double> ToDoubles(const HostTensor &t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i)
    v[i] = ElementAt(t, i);
  return v;
}

HostTensor FromDoubles(DType dtype, const Shape &shape, const std::vector<double> &values) {
  HostTensor t(dtype, shape);
  const size_t elem = DTypeSize(dtype);
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) {
    uint8_t *p = t.bytes.data() + i * elem;
    const double v = values[i];
    switch (dtype) {
    case DType::kF32:
      Store(p, static_cast<float>(v));
      break;
    case DType::kF16:
      Store(p, static_cast<_Float16>(v));
      break;
    case DType::kBF16:
      Store(p, FloatToBf16(static_cast<float>(v)));
      break;
    case DType::kF64:
      Store(p, v);
      break;
    case DType::kI8:
      Store(p, ToInt<int8_t>(v));
      break;
    case DType::kU8:
      Store(p, ToInt<uint8_t>(v));
      break;
    case DType::kBool:
      Store<uint8_t>(p, v != 0);
      break;
    case DType::kI32:
      Store(p, ToInt<int32_t>(v));
      break;
    case DType::kI64:
      Store(p, ToInt<int64_t>(v));
      break;
    default:
      break;
    }
  }
  return t;
}

double RoundTo(DType dtype, double v) { return ElementAt(FromDoubles(dtype, {}, {v}), 0); }

bool IsFloat(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

std::string ShapeName(const Shape &s) {
  if (s.empty())
    return "scalar";
  std::string name;
  for (size_t i = 0; i < s.size(); ++i)
    name += (i ? "x" : "") + std::to_string(s[i]);
  return name;
}

} // namespace kiln::oracle
