// Runtime tensor descriptors: a dtype, a shape and a non-owning data pointer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// Numbering matches kiln.fb.DType in schemas/plan.fbs.
enum class DType : int8_t { kUndefined = 0, kF32 = 1, kF16 = 2, kBF16 = 3, kF64 = 4, kI8 = 5,
                            kU8 = 6, kI32 = 7, kI64 = 8, kBool = 9 };

inline size_t DTypeSize(DType t) {
  switch (t) {
  case DType::kF32: case DType::kI32: return 4;
  case DType::kF16: case DType::kBF16: return 2;
  case DType::kF64: case DType::kI64: return 8;
  case DType::kI8: case DType::kU8: case DType::kBool: return 1;
  default: return 0;
  }
}
const char *DTypeName(DType t);

using Shape = std::vector<int64_t>;

inline int64_t NumElements(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
std::string ShapeToString(const Shape &s);

// Where a tensor's bytes live. kHost memory the host can read; kDevice
// memory belongs to a backend (core/backend.h) and only its kernels and
// copies touch it.
enum class MemorySpace : int8_t { kHost = 0, kDevice = 1 };

// Non-owning view of a tensor's bytes.
struct TensorView {
  DType dtype = DType::kUndefined;
  Shape shape;
  void *data = nullptr;
  MemorySpace space = MemorySpace::kHost;

  int64_t numel() const { return NumElements(shape); }
  size_t bytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

}  // namespace kiln
