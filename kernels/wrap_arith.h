// Integer arithmetic that wraps on overflow (through the unsigned type, so it
// is defined behavior) and is plain arithmetic for floats. Shared by the CPU
// and CUDA elementwise, reduction and scatter kernels.
#pragma once

#include "kernels/host_device.h"

#include <type_traits>

namespace kiln::kernels {

template <typename T> using Unsigned = std::make_unsigned_t<T>;

template <typename T> KILN_HD T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(
        static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b)));
  } else {
    return a + b;
  }
}

template <typename T> KILN_HD T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(
        static_cast<Unsigned<T>>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b)));
  } else {
    return a - b;
  }
}

template <typename T> KILN_HD T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Narrow types promote to int; multiply as unsigned so nothing overflows.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, Unsigned<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// -MIN is MIN for signed integers.
template <typename T> KILN_HD T WrapNeg(T a) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<Unsigned<T>>(Unsigned<T>{0} - static_cast<Unsigned<T>>(a)));
  } else {
    return -a;
  }
}

} // namespace kiln::kernels
