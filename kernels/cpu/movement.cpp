#include "kernels/cpu/movement.h"

#include <algorithm>
#include <cstring>

namespace kiln::kernels {
namespace {

template <typename U> void StridedRow(const U *src, int64_t stride, int64_t n, U *dst) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = src[i * stride];
}

// One innermost run of the strided copy.
void CopyRun(size_t elem, const char *src, int64_t stride, int64_t n, char *dst) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * elem);
    return;
  }
  switch (elem) {
  case 1:
    return StridedRow(reinterpret_cast<const uint8_t *>(src), stride, n,
                      reinterpret_cast<uint8_t *>(dst));
  case 2:
    return StridedRow(reinterpret_cast<const uint16_t *>(src), stride, n,
                      reinterpret_cast<uint16_t *>(dst));
  case 4:
    return StridedRow(reinterpret_cast<const uint32_t *>(src), stride, n,
                      reinterpret_cast<uint32_t *>(dst));
  case 8:
    return StridedRow(reinterpret_cast<const uint64_t *>(src), stride, n,
                      reinterpret_cast<uint64_t *>(dst));
  default:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * elem, src + i * stride * static_cast<int64_t>(elem), elem);
  }
}

// dst[i * dst_row + j] = src[i + j * src_col] for a P x N block, in tiles so
// that the source cache lines read along i are reused across j.
template <typename U>
void TransposeBlock(const U *src, int64_t src_col, U *dst, int64_t dst_row, int64_t p, int64_t n) {
  constexpr int64_t kTile = 16;
  for (int64_t ib = 0; ib < p; ib += kTile) {
    const int64_t ie = std::min(ib + kTile, p);
    for (int64_t jb = 0; jb < n; jb += kTile) {
      const int64_t je = std::min(jb + kTile, n);
      for (int64_t i = ib; i < ie; ++i)
        for (int64_t j = jb; j < je; ++j)
          dst[i * dst_row + j] = src[i + j * src_col];
    }
  }
}

// Transpose-like copies (the innermost output run is strided in src, and
// some outer dim `p` is contiguous in src) are done as tiled 2-D blocks for
// every index of the remaining dims. Reading element by element along the
// strided dim instead thrashes the cache on large matrices.
template <typename U>
void TiledCopy(const U *src, const std::vector<int64_t> &dims, const std::vector<int64_t> &strides,
               int p, U *dst) {
  const int rank = static_cast<int>(dims.size());
  std::vector<int64_t> dst_strides(rank, 1);
  for (int d = rank - 1; d-- > 0;)
    dst_strides[d] = dst_strides[d + 1] * dims[d + 1];
  std::vector<int> others;
  for (int d = 0; d < rank - 1; ++d)
    if (d != p)
      others.push_back(d);
  std::vector<int64_t> counter(others.size(), 0);
  int64_t src_off = 0, dst_off = 0;
  while (true) {
    TransposeBlock(src + src_off, strides[rank - 1], dst + dst_off, dst_strides[p], dims[p],
                   dims[rank - 1]);
    int k = static_cast<int>(others.size()) - 1;
    for (; k >= 0; --k) {
      const int d = others[k];
      src_off += strides[d];
      dst_off += dst_strides[d];
      if (++counter[k] < dims[d])
        break;
      src_off -= strides[d] * dims[d];
      dst_off -= dst_strides[d] * dims[d];
      counter[k] = 0;
    }
    if (k < 0)
      return;
  }
}

// Returns false when the tiled path does not apply.
bool TryTiledCopy(size_t elem, const void *src, const std::vector<int64_t> &dims,
                  const std::vector<int64_t> &strides, void *dst) {
  const int rank = static_cast<int>(dims.size());
  if (rank < 2 || strides[rank - 1] == 1 || strides[rank - 1] == 0 || dims[rank - 1] < 4)
    return false;
  int p = -1;
  for (int d = 0; d < rank - 1; ++d)
    if (strides[d] == 1 && dims[d] >= 4)
      p = d;
  if (p < 0)
    return false;
  switch (elem) {
  case 1:
    TiledCopy(static_cast<const uint8_t *>(src), dims, strides, p, static_cast<uint8_t *>(dst));
    return true;
  case 2:
    TiledCopy(static_cast<const uint16_t *>(src), dims, strides, p, static_cast<uint16_t *>(dst));
    return true;
  case 4:
    TiledCopy(static_cast<const uint32_t *>(src), dims, strides, p, static_cast<uint32_t *>(dst));
    return true;
  case 8:
    TiledCopy(static_cast<const uint64_t *>(src), dims, strides, p, static_cast<uint64_t *>(dst));
    return true;
  default:
    return false;
  }
}

} // namespace

void StridedCopy(size_t elem_size, const void *src, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &src_strides, void *dst) {
  for (int64_t d : shape)
    if (d == 0)
      return;
  // Drop unit dims and merge dims that are contiguous with their inner
  // neighbour, so typical transposes and slices become a few long runs.
  std::vector<int64_t> dims, strides;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1)
      continue;
    dims.push_back(shape[d]);
    strides.push_back(src_strides[d]);
  }
  std::vector<int64_t> mdims, mstrides; // innermost first while merging
  for (size_t d = dims.size(); d-- > 0;) {
    if (!mdims.empty() && strides[d] == mstrides.back() * mdims.back()) {
      mdims.back() *= dims[d];
      continue;
    }
    mdims.push_back(dims[d]);
    mstrides.push_back(strides[d]);
  }
  const char *s = static_cast<const char *>(src);
  char *o = static_cast<char *>(dst);
  const int64_t elem = static_cast<int64_t>(elem_size);
  if (mdims.empty()) {
    std::memcpy(o, s, elem_size);
    return;
  }
  std::reverse(mdims.begin(), mdims.end());
  std::reverse(mstrides.begin(), mstrides.end());
  if (TryTiledCopy(elem_size, src, mdims, mstrides, dst))
    return;
  const int rank = static_cast<int>(mdims.size());
  const int64_t n = mdims[rank - 1];
  const int64_t inner_stride = mstrides[rank - 1];
  int64_t rows = 1;
  for (int d = 0; d < rank - 1; ++d)
    rows *= mdims[d];
  std::vector<int64_t> counter(rank, 0);
  int64_t offset = 0; // in elements
  const int64_t row_bytes = n * elem;
  for (int64_t r = 0; r < rows; ++r) {
    if (inner_stride == 0) {
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(o + i * elem, s + offset * elem, elem_size);
    } else {
      CopyRun(elem_size, s + offset * elem, inner_stride, n, o);
    }
    o += row_bytes;
    for (int d = rank - 2; d >= 0; --d) {
      offset += mstrides[d];
      if (++counter[d] < mdims[d])
        break;
      offset -= mstrides[d] * mdims[d];
      counter[d] = 0;
    }
  }
}

void Concat(const std::vector<const void *> &srcs, const std::vector<int64_t> &row_bytes,
            int64_t outer, void *dst) {
  int64_t total = 0;
  for (int64_t b : row_bytes)
    total += b;
  char *o = static_cast<char *>(dst);
  int64_t col = 0;
  for (size_t i = 0; i < srcs.size(); ++i) {
    const char *s = static_cast<const char *>(srcs[i]);
    const int64_t b = row_bytes[i];
    if (b > 0)
      for (int64_t r = 0; r < outer; ++r)
        std::memcpy(o + r * total + col, s + r * b, static_cast<size_t>(b));
    col += b;
  }
}

void Split(const void *src, int64_t outer, const std::vector<int64_t> &row_bytes,
           const std::vector<void *> &dsts) {
  int64_t total = 0;
  for (int64_t b : row_bytes)
    total += b;
  const char *s = static_cast<const char *>(src);
  int64_t col = 0;
  for (size_t i = 0; i < dsts.size(); ++i) {
    char *o = static_cast<char *>(dsts[i]);
    const int64_t b = row_bytes[i];
    if (b > 0)
      for (int64_t r = 0; r < outer; ++r)
        std::memcpy(o + r * b, s + r * total + col, static_cast<size_t>(b));
    col += b;
  }
}

template <typename Index>
int64_t Gather(size_t elem_size, const void *data, int64_t outer, int64_t axis_dim, int64_t inner,
               const Index *idx, int64_t num_idx, void *out) {
  for (int64_t j = 0; j < num_idx; ++j) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -axis_dim || v >= axis_dim)
      return j;
  }
  const size_t row = static_cast<size_t>(inner) * elem_size;
  if (row == 0)
    return -1; // nothing to copy (and the buffers may be null)
  const char *d = static_cast<const char *>(data);
  char *o = static_cast<char *>(out);
  for (int64_t oi = 0; oi < outer; ++oi) {
    const char *block = d + oi * axis_dim * static_cast<int64_t>(row);
    for (int64_t j = 0; j < num_idx; ++j) {
      int64_t v = static_cast<int64_t>(idx[j]);
      if (v < 0)
        v += axis_dim;
      std::memcpy(o, block + v * static_cast<int64_t>(row), row);
      o += row;
    }
  }
  return -1;
}

template int64_t Gather<int32_t>(size_t, const void *, int64_t, int64_t, int64_t, const int32_t *,
                                 int64_t, void *);
template int64_t Gather<int64_t>(size_t, const void *, int64_t, int64_t, int64_t, const int64_t *,
                                 int64_t, void *);

void Trilu(size_t elem_size, const void *src, void *dst, int64_t batch, int64_t rows, int64_t cols,
           int64_t k, bool upper) {
  // Clamping k keeps i + k from overflowing without changing the result.
  k = std::clamp<int64_t>(k, -rows - 1, cols + 1);
  const int64_t elem = static_cast<int64_t>(elem_size);
  const char *s = static_cast<const char *>(src);
  char *o = static_cast<char *>(dst);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < rows; ++i) {
      // Kept columns form one range [lo, hi).
      const int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
      const int64_t hi = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
      const int64_t base = (b * rows + i) * cols * elem;
      if (lo > 0)
        std::memset(o + base, 0, static_cast<size_t>(lo * elem));
      if (hi > lo)
        std::memmove(o + base + lo * elem, s + base + lo * elem,
                     static_cast<size_t>((hi - lo) * elem));
      if (hi < cols)
        std::memset(o + base + std::max(hi, lo) * elem, 0,
                    static_cast<size_t>((cols - std::max(hi, lo)) * elem));
    }
  }
}

} // namespace kiln::kernels
