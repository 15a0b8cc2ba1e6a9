#include "kiln/tensor.h"

namespace kiln {

const char *DTypeName(DType t) {
  switch (t) {
  case DType::kF32:
    return "f32";
  case DType::kF16:
    return "f16";
  case DType::kBF16:
    return "bf16";
  case DType::kF64:
    return "f64";
  case DType::kI8:
    return "i8";
  case DType::kU8:
    return "u8";
  case DType::kI32:
    return "i32";
  case DType::kI64:
    return "i64";
  case DType::kBool:
    return "bool";
  case DType::kUndefined:
    return "undefined";
  }
  return "invalid";
}

std::string ShapeToString(const Shape &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0)
      out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

} // namespace kiln
