// The tile loop shared by the CUDA dense and paged attention kernels: one
// thread block attends kTileRows query rows that share one KV head to their
// keys, kTileKeys keys at a time, with an online softmax (running max and
// sum per row), so shared memory depends on the head dims only, never on the
// context length. Scores, softmax and the weighted sum are f32; K and V
// tiles are widened into shared memory (16-byte loads where the rows are
// aligned).
//
// Work split: a warp owns rows warp, warp + 4, ...; for scores lane l takes
// key l of the tile (the K tile's rows have an odd stride so the lanes read
// distinct banks); for the weighted sum thread t owns the output columns t,
// t + 128, ... of every row.
//
// Split keys (flash-decoding): when a batch has too few tiles to fill the
// GPU, several blocks share a tile's keys, each writing its rows' running
// max, sum and unnormalized output to scratch; CombineSplits merges them.
#pragma once

#include "kernels/attention_scores.h"
#include "kernels/cuda/fused_io.cuh"

#include <cstdint>

namespace kiln::kernels::cuda {

constexpr int kTileThreads = 128;
constexpr int kTileWarps = kTileThreads / 32;
constexpr int kTileRows = 16;
constexpr int kRowsPerWarp = kTileRows / kTileWarps;
constexpr int kTileKeys = 32; // one per lane
// Head dims the tile handles: the output columns per thread are a template
// parameter of 1, 2 or 4 (Dv <= 128, 256, 512).
constexpr int64_t kMaxTileHeadDim = 512;

// One query row of a tile. q_row indexes q's rows of D (and out's rows of
// Dv); -1 marks an unused row. Keys first..limit are attended (limit -1:
// none). mask_off is the row's offset into the mask (dense attention only).
struct TileRow {
  int64_t q_row = -1;
  int64_t limit = -1;
  int64_t first = 0;
  int64_t mask_off = 0;
};

enum class TileMask { kNone, kAdditive, kAdditiveF16, kAdditiveBF16, kBool };

// An additive (f32) or bool (one byte) mask read at row offset + j * key_stride.
struct TileMaskRef {
  TileMask kind = TileMask::kNone;
  const void *data = nullptr;
  int64_t key_stride = 0;
};

// Shared memory of one block, in floats: q tile, padded K tile, V tile,
// probabilities, per-row rescale factors and sums; then the rows and the
// key rows (int64, 8-byte aligned since the float count is even).
__host__ __device__ constexpr int64_t TileSharedFloats(int64_t d, int64_t dv) {
  const int64_t floats =
      kTileRows * d + kTileKeys * (d + 1) + kTileKeys * dv + kTileRows * kTileKeys + 2 * kTileRows;
  return floats + (floats & 1);
}
__host__ __device__ constexpr int64_t TileSharedBytes(int64_t d, int64_t dv) {
  return TileSharedFloats(d, dv) * 4 + kTileRows * static_cast<int64_t>(sizeof(TileRow)) +
         kTileKeys * 8;
}

// Dynamic shared memory a kernel gets without opting in.
constexpr int64_t kDefaultSharedBytes = 48 * 1024;
// Fits the 227 KiB a block may opt into on sm_90.
static_assert(TileSharedBytes(kMaxTileHeadDim, kMaxTileHeadDim) <= 227 * 1024);

// One block's share of its tile's keys: split `index` of `count` takes the
// index-th of `count` equal runs of whole key tiles. With count > 1,
// `partial` receives kTileRows records of TilePartialFloats(dv) floats (max,
// sum, then Dv unnormalized outputs); with count 1 it is null and the rows
// are written to out.
struct TileSplit {
  int64_t index = 0, count = 1;
  float *partial = nullptr;
};

__host__ __device__ constexpr int64_t TilePartialFloats(int64_t dv) { return dv + 2; }

// Rows `key_rows` (kTileKeys of them, -1: zeros) of `src` (rows of `width`)
// into dst with row stride `stride`, 16 bytes at a time when `vec`.
template <typename T>
__device__ __forceinline__ void LoadKeyTile(const T *src, const int64_t *key_rows, int width,
                                            int stride, bool vec, float *dst) {
  constexpr int kVec = 16 / sizeof(T);
  if (vec) {
    const int per_row = width / kVec;
    for (int i = threadIdx.x; i < kTileKeys * per_row; i += kTileThreads) {
      const int kk = i / per_row, e = (i - kk * per_row) * kVec;
      const int64_t kr = key_rows[kk];
      float tmp[kVec];
      if (kr >= 0)
        WidenVector(src + kr * width + e, tmp);
      for (int x = 0; x < kVec; ++x)
        dst[kk * stride + e + x] = kr >= 0 ? tmp[x] : 0.0f;
    }
    return;
  }
  for (int i = threadIdx.x; i < kTileKeys * width; i += kTileThreads) {
    const int kk = i / width, e = i - kk * width;
    const int64_t kr = key_rows[kk];
    dst[kk * stride + e] = kr >= 0 ? Widen<float>(src[kr * width + e]) : 0.0f;
  }
}

// True when K and V rows can be read 16 bytes at a time.
template <typename T>
__device__ __forceinline__ bool VectorRows(const T *k, const T *v, int d, int dv) {
  constexpr int kVec = 16 / sizeof(T);
  return d % kVec == 0 && dv % kVec == 0 && reinterpret_cast<uintptr_t>(k) % 16 == 0 &&
         reinterpret_cast<uintptr_t>(v) % 16 == 0;
}

__device__ __forceinline__ float ApplyMask(const TileMaskRef &m, int64_t off, float s) {
  if (m.kind == TileMask::kAdditive)
    return s + static_cast<const float *>(m.data)[off];
  if (m.kind == TileMask::kAdditiveF16)
    return s + __half2float(static_cast<const __half *>(m.data)[off]);
  if (m.kind == TileMask::kAdditiveBF16)
    return s + __bfloat162float(static_cast<const __nv_bfloat16 *>(m.data)[off]);
  if (m.kind == TileMask::kBool)
    return static_cast<const uint8_t *>(m.data)[off] != 0 ? s : -INFINITY;
  return s;
}

// Attends the block's rows (its split of their keys). `Source` gives:
//   TileRow Row(int r)          row r of the tile (r < kTileRows);
//   int64_t KeyRow(int64_t j)   key j's row in k (rows of D) and v (rows
//                               of Dv), or -1 when it cannot be read (it
//                               then counts as zeros).
// Keys before every used row's first are never read. Scores are
// SoftCap(scale * q . k, softcap) before the mask. Without a split, each
// used row's result goes to out + q_row * dv; a row with no attended key
// gets zeros.
template <typename T, int kColsPerThread, typename Source>
__device__ void AttendTile(const Source &src, const T *q, const T *k, const T *v, T *out, int d,
                           int dv, float scale, float softcap, const TileMaskRef &mask,
                           const TileSplit &split) {
  extern __shared__ float4 shared_raw[];
  float *sq = reinterpret_cast<float *>(shared_raw);
  const int ks = d | 1; // the K tile's odd row stride (at most d + 1)
  float *sk = sq + kTileRows * d;
  float *sv = sk + kTileKeys * (d + 1);
  float *sp = sv + kTileKeys * dv;
  float *salpha = sp + kTileRows * kTileKeys;
  float *ssum = salpha + kTileRows;
  TileRow *rows = reinterpret_cast<TileRow *>(sq + TileSharedFloats(d, dv));
  int64_t *key_rows = reinterpret_cast<int64_t *>(rows + kTileRows);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid < kTileRows)
    rows[tid] = src.Row(tid);
  __syncthreads();
  int64_t num_keys = 0; // past the largest limit
  int64_t key_min = -1; // the smallest first of a row that attends
  for (int r = 0; r < kTileRows; ++r) {
    num_keys = rows[r].limit + 1 > num_keys ? rows[r].limit + 1 : num_keys;
    if (rows[r].limit >= rows[r].first && (key_min < 0 || rows[r].first < key_min))
      key_min = rows[r].first;
  }
  key_min = key_min < 0 ? 0 : key_min;
  // This split's keys [key_begin, key_end): whole key tiles from the one
  // that holds key_min.
  const int64_t tile0 = key_min / kTileKeys;
  const int64_t key_tiles = (num_keys + kTileKeys - 1) / kTileKeys - tile0;
  const int64_t per_split = (key_tiles + split.count - 1) / split.count;
  const int64_t key_begin = (tile0 + split.index * per_split) * kTileKeys;
  const int64_t key_end =
      num_keys < key_begin + per_split * kTileKeys ? num_keys : key_begin + per_split * kTileKeys;
  const bool vec = VectorRows(k, v, d, dv);
  for (int i = tid; i < kTileRows * d; i += kTileThreads) {
    const int r = i / d;
    const int64_t qr = rows[r].q_row;
    sq[i] = qr >= 0 ? Widen<float>(q[qr * d + (i - r * d)]) : 0.0f;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp];
  int64_t limit[kRowsPerWarp], first[kRowsPerWarp], mask_off[kRowsPerWarp];
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0;
    limit[i] = rows[warp + i * kTileWarps].limit;
    first[i] = rows[warp + i * kTileWarps].first;
    mask_off[i] = rows[warp + i * kTileWarps].mask_off;
  }
  float acc[kTileRows][kColsPerThread];
  for (int r = 0; r < kTileRows; ++r)
    for (int c = 0; c < kColsPerThread; ++c)
      acc[r][c] = 0;

  for (int64_t j0 = key_begin; j0 < key_end; j0 += kTileKeys) {
    __syncthreads(); // the previous tile is consumed
    if (tid < kTileKeys)
      key_rows[tid] = j0 + tid < key_end && j0 + tid >= key_min ? src.KeyRow(j0 + tid) : -1;
    __syncthreads();
    LoadKeyTile(k, key_rows, d, ks, vec, sk);
    LoadKeyTile(v, key_rows, dv, dv, vec, sv);
    __syncthreads();
    const int64_t j = j0 + lane;
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = warp + i * kTileWarps;
      float s = -INFINITY;
      if (j <= limit[i] && j >= first[i] && j < key_end) {
        const float *qr = sq + r * d, *kr = sk + lane * ks;
        float dot = 0;
        for (int e = 0; e < d; ++e)
          dot += qr[e] * kr[e];
        s = ApplyMask(mask, mask_off[i] + j * mask.key_stride, SoftCap(scale * dot, softcap));
      }
      const float m_new = fmaxf(m[i], WarpMax(s));
      const float p = s == -INFINITY ? 0.0f : expf(s - m_new);
      const float alpha = m[i] == -INFINITY ? 0.0f : expf(m[i] - m_new);
      l[i] = l[i] * alpha + WarpSum(p);
      m[i] = m_new;
      sp[r * kTileKeys + lane] = p;
      if (lane == 0)
        salpha[r] = alpha;
    }
    __syncthreads();
    for (int r = 0; r < kTileRows; ++r) {
      const float a = salpha[r];
      for (int c = 0; c < kColsPerThread; ++c)
        acc[r][c] *= a;
    }
    for (int kk = 0; kk < kTileKeys; ++kk) {
      float vk[kColsPerThread];
      for (int c = 0; c < kColsPerThread; ++c) {
        const int col = tid + c * kTileThreads;
        vk[c] = col < dv ? sv[kk * dv + col] : 0.0f;
      }
      for (int r = 0; r < kTileRows; ++r) {
        const float p = sp[r * kTileKeys + kk];
        for (int c = 0; c < kColsPerThread; ++c)
          acc[r][c] += p * vk[c];
      }
    }
  }
  __syncthreads(); // salpha is free again: it takes the final maxima
  if (lane == 0)
    for (int i = 0; i < kRowsPerWarp; ++i) {
      ssum[warp + i * kTileWarps] = l[i];
      salpha[warp + i * kTileWarps] = m[i];
    }
  __syncthreads();
  if (split.partial != nullptr) {
    const int64_t record = TilePartialFloats(dv);
    for (int r = 0; r < kTileRows; ++r) {
      float *p = split.partial + r * record;
      if (tid == 0) {
        p[0] = salpha[r];
        p[1] = ssum[r];
      }
      for (int c = 0; c < kColsPerThread; ++c) {
        const int col = tid + c * kTileThreads;
        if (col < dv)
          p[2 + col] = acc[r][c];
      }
    }
    return;
  }
  for (int r = 0; r < kTileRows; ++r) {
    const int64_t qr = rows[r].q_row;
    if (qr < 0)
      continue;
    const float inv = ssum[r] > 0 ? 1.0f / ssum[r] : 0.0f;
    for (int c = 0; c < kColsPerThread; ++c) {
      const int col = tid + c * kTileThreads;
      if (col < dv)
        out[qr * dv + col] = Narrow<T>(acc[r][c] * inv);
    }
  }
}

// Merges the `count` splits of one tile (their records start at `partial`,
// split z's rows at partial + z * kTileRows * TilePartialFloats(dv)) into
// out: each split's sum and output rescaled to the largest maximum. A row
// whose splits attended no key gets zeros. Any block size.
template <typename T, typename Source>
__device__ void CombineSplits(const Source &src, const float *partial, int64_t count, T *out,
                              int dv) {
  const int64_t record = TilePartialFloats(dv), stride = kTileRows * record;
  for (int r = 0; r < kTileRows; ++r) {
    const int64_t qr = src.Row(r).q_row;
    if (qr < 0)
      continue;
    const float *p = partial + r * record;
    float m = -INFINITY;
    for (int64_t z = 0; z < count; ++z)
      m = fmaxf(m, p[z * stride]);
    float l = 0;
    for (int64_t z = 0; z < count; ++z)
      l += m == -INFINITY ? 0.0f : p[z * stride + 1] * expf(p[z * stride] - m);
    const float inv = l > 0 ? 1.0f / l : 0.0f;
    for (int col = threadIdx.x; col < dv; col += blockDim.x) {
      float acc = 0;
      if (m != -INFINITY)
        for (int64_t z = 0; z < count; ++z)
          acc += p[z * stride + 2 + col] * expf(p[z * stride] - m);
      out[qr * dv + col] = Narrow<T>(acc * inv);
    }
  }
}

} // namespace kiln::kernels::cuda
