// Integer arithmetic that wraps on overflow (through the unsigned type, so it
// is defined behavior) and is plain arithmetic for floats. Shared by the
// elementwise and reduction kernels.
#pragma once

#include <type_traits>

namespace kiln::kernels {

template <typename T> T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <typename T> T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return a - b;
  }
}

template <typename T> T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Narrow types promote to int; multiply as unsigned so nothing overflows.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

}  // namespace kiln::kernels
