#include "kernels/cpu/movement_fill.h"

#include <cstring>
#include <type_traits>

namespace kiln::kernels {

void FillBytes(size_t elem_size, const void *value, void *dst, int64_t n) {
  char *o = static_cast<char *>(dst);
  if (n <= 0)
    return;
  std::memcpy(o, value, elem_size);
  // Doubling copies: log(n) memcpy calls whatever the element size.
  int64_t filled = 1;
  while (filled < n) {
    const int64_t chunk = filled < n - filled ? filled : n - filled;
    std::memcpy(o + filled * static_cast<int64_t>(elem_size), o,
                static_cast<size_t>(chunk) * elem_size);
    filled += chunk;
  }
}

template <typename T> void Range(T start, T delta, T *out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      out[i] = static_cast<T>(static_cast<U>(start) + static_cast<U>(i) * static_cast<U>(delta));
    } else {
      out[i] = start + static_cast<T>(i) * delta;
    }
  }
}

template void Range<float>(float, float, float *, int64_t);
template void Range<double>(double, double, double *, int64_t);
template void Range<int32_t>(int32_t, int32_t, int32_t *, int64_t);
template void Range<int64_t>(int64_t, int64_t, int64_t *, int64_t);

} // namespace kiln::kernels
