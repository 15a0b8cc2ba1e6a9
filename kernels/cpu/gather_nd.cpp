#include "kernels/cpu/gather_nd.h"

#include "kernels/wrap_arith.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace kiln::kernels {
namespace {

// The slice number (row-major over `dims`) of each of the `count` tuples of
// k = dims.size() indices, or the position of the first bad index.
int64_t SliceOffsets(const int64_t *idx, int64_t count, const std::vector<int64_t> &dims,
                     std::vector<int64_t> &offsets) {
  const size_t k = dims.size();
  offsets.assign(static_cast<size_t>(count), 0);
  for (int64_t t = 0; t < count; ++t) {
    int64_t offset = 0;
    for (size_t d = 0; d < k; ++d) {
      const int64_t pos = t * static_cast<int64_t>(k) + static_cast<int64_t>(d);
      int64_t v = idx[pos];
      if (v < -dims[d] || v >= dims[d])
        return pos;
      if (v < 0)
        v += dims[d];
      offset = offset * dims[d] + v;
    }
    offsets[static_cast<size_t>(t)] = offset;
  }
  return -1;
}

int64_t Product(const std::vector<int64_t> &dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

template <typename T> T Combine(T old, T update, ScatterReduction r) {
  switch (r) {
  case ScatterReduction::kNone:
    return update;
  case ScatterReduction::kAdd:
    return WrapAdd(old, update);
  case ScatterReduction::kMul:
    return WrapMul(old, update);
  case ScatterReduction::kMax:
  case ScatterReduction::kMin:
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(old) || std::isnan(update))
        return std::isnan(old) ? old : update;
    }
    if (r == ScatterReduction::kMax)
      return update > old ? update : old;
    return update < old ? update : old;
  }
  return update;
}

} // namespace

int64_t FirstBadIndex(const std::vector<int64_t> &dims, const int64_t *idx, int64_t count) {
  const int64_t k = static_cast<int64_t>(dims.size());
  for (int64_t pos = 0; pos < count * k; ++pos) {
    const int64_t dim = dims[static_cast<size_t>(pos % k)];
    if (idx[pos] < -dim || idx[pos] >= dim)
      return pos;
  }
  return -1;
}

int64_t GatherND(size_t elem_size, const void *data, int64_t batch,
                 const std::vector<int64_t> &dims, int64_t inner, const int64_t *idx, int64_t n,
                 void *out) {
  std::vector<int64_t> offsets;
  const int64_t bad = SliceOffsets(idx, batch * n, dims, offsets);
  if (bad >= 0)
    return bad;
  const size_t row = static_cast<size_t>(inner) * elem_size;
  if (row == 0)
    return -1; // nothing to copy (and the buffers may be null)
  const int64_t batch_bytes = Product(dims) * static_cast<int64_t>(row);
  const char *d = static_cast<const char *>(data);
  char *o = static_cast<char *>(out);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t j = 0; j < n; ++j) {
      const int64_t t = b * n + j;
      std::memcpy(o + t * static_cast<int64_t>(row),
                  d + b * batch_bytes + offsets[t] * static_cast<int64_t>(row), row);
    }
  return -1;
}

template <typename T>
int64_t ScatterND(T *out, const std::vector<int64_t> &dims, int64_t inner, const int64_t *idx,
                  int64_t n, const T *updates, ScatterReduction reduction) {
  std::vector<int64_t> offsets;
  const int64_t bad = SliceOffsets(idx, n, dims, offsets);
  if (bad >= 0)
    return bad;
  for (int64_t j = 0; j < n; ++j) {
    T *dst = out + offsets[j] * inner;
    const T *src = updates + j * inner;
    for (int64_t i = 0; i < inner; ++i)
      dst[i] = Combine(dst[i], src[i], reduction);
  }
  return -1;
}

int64_t ScatterNDBytes(size_t elem_size, void *out, const std::vector<int64_t> &dims, int64_t inner,
                       const int64_t *idx, int64_t n, const void *updates) {
  std::vector<int64_t> offsets;
  const int64_t bad = SliceOffsets(idx, n, dims, offsets);
  if (bad >= 0)
    return bad;
  const size_t row = static_cast<size_t>(inner) * elem_size;
  if (row == 0)
    return -1;
  char *o = static_cast<char *>(out);
  const char *u = static_cast<const char *>(updates);
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(o + offsets[j] * static_cast<int64_t>(row), u + j * static_cast<int64_t>(row), row);
  return -1;
}

#define KILN_SCATTER_ND(T)                                                                         \
  template int64_t ScatterND<T>(T *, const std::vector<int64_t> &, int64_t, const int64_t *,       \
                                int64_t, const T *, ScatterReduction);
KILN_SCATTER_ND(float)
KILN_SCATTER_ND(double)
KILN_SCATTER_ND(int8_t)
KILN_SCATTER_ND(uint8_t)
KILN_SCATTER_ND(int32_t)
KILN_SCATTER_ND(int64_t)
#undef KILN_SCATTER_ND

} // namespace kiln::kernels
