// Gemv (gemv.h). A block of 8 warps owns a tile of W's columns and a range
// of K. On the CUDA cores (GemvKernel: up to 4 rows, f32, and W that cannot
// be read 16 bytes at a time), each warp reads kRowLanes rows of the tile
// at once, 8 lanes across each row with one 16-byte load per lane (128
// contiguous bytes a row), and every thread keeps kUnroll such loads in
// flight before it uses them. X is read through the read-only cache (a few
// KB, shared by every block); W is streamed past L1
// (ld.global.nc.L1::no_allocate), since each byte is read once. Each thread
// accumulates its 16 bytes' columns for every row of X in f32 registers;
// the lanes and warps that share a column meet through shuffles and shared
// memory, and the epilogue rounds once. 5 to 16 rows of f16 or bf16 run on
// the tensor cores instead (GemvMmaKernel, below), with the same tiles.
//
// Why W as stored ([K, N] row-major) rather than a transposed copy: a row
// of W serves every row of X, so X's values are per-row broadcasts and the
// products need no cross-lane reduction inside the loop; the tile of
// columns is as contiguous as a transposed row would be (128 bytes a row,
// whole cache lines), and cuBLASLt keeps reading the same weights for
// large M.
//
// A gated MLP's tile holds kTileCols / 2 gate columns and the same up
// columns (n apart in W), so act(gate) * up is computed where both sums
// are. When the column tiles are too few to fill the device (N = 4096 at
// bf16 is 64 tiles for 132 SMs), K is split across the blocks of a thread
// block cluster (Hopper): the first adds the others' sums from their
// shared memory, in split order (deterministic), and does the epilogue. So
// every product is one kernel and needs no scratch memory.
#include "kernels/cuda/products_gemv.h"

#include "kernels/cuda/pointwise_activation_math.cuh"
#include "kernels/cuda/elem_access.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <type_traits>

namespace kiln::kernels::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kColLanes = 8;                     // lanes across a row: 8 x 16 B = 128 B
constexpr int kRowLanes = 32 / kColLanes;        // rows one warp reads at once
constexpr int kRowsPerPass = kWarps * kRowLanes; // rows a block reads at once
constexpr int kUnroll = 4;                       // loads each thread keeps in flight
constexpr int64_t kRowsPerStep = kRowsPerPass * kUnroll;
// A split of K keeps at least this many rows, so each block still streams
// long runs, and there are at most kMaxSplits.
constexpr int64_t kMinSplitRows = 512;
constexpr int64_t kMaxSplits = 8; // the portable cluster size

template <typename T> constexpr int kVecElems = static_cast<int>(16 / sizeof(T));
template <typename T> constexpr int kTileCols = kColLanes *kVecElems<T>;

struct Params {
  const void *x;
  int64_t ldx;
  const void *w;
  int64_t ldw;
  const void *bias;
  void *y;
  int64_t ldy;
  int64_t rows, n, k;
  int64_t chunk; // rows of K per split
  Activation act;
  bool gated;
};

// 16 bytes of W, read once: not kept in L1, so X and the reductions keep it.
__device__ __forceinline__ uint4 LoadStreaming(const void *p) {
  uint4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
      : "l"(p));
  return v;
}

__device__ __forceinline__ void Widen(uint4 v, float (&out)[4]) {
  out[0] = __uint_as_float(v.x);
  out[1] = __uint_as_float(v.y);
  out[2] = __uint_as_float(v.z);
  out[3] = __uint_as_float(v.w);
}
// Element 2i is the low half of word i (little-endian).
__device__ __forceinline__ void Widen(uint4 v, float (&out)[8], const __nv_bfloat16 *) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __uint_as_float(words[i] << 16);
    out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
  }
}
__device__ __forceinline__ void Widen(uint4 v, float (&out)[8], const __half *) {
  const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(words[i] & 0xffffu)));
    out[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(words[i] >> 16)));
  }
}
template <typename T> __device__ __forceinline__ void WidenVec(uint4 v, float (&out)[4]) {
  Widen(v, out);
}
template <typename T> __device__ __forceinline__ void WidenVec(uint4 v, float (&out)[8]) {
  Widen(v, out, static_cast<const T *>(nullptr));
}

__device__ __forceinline__ float LoadX(const float *p, int64_t i) { return __ldg(p + i); }
__device__ __forceinline__ float LoadX(const __half *p, int64_t i) {
  return __half2float(__ldg(p + i));
}
__device__ __forceinline__ float LoadX(const __nv_bfloat16 *p, int64_t i) {
  return __bfloat162float(__ldg(p + i));
}

// The first column of W that lane group `lc` of a tile reads (V columns
// from there), and the end of the range of W's columns it lies in: plain,
// kColLanes groups side by side; gated, the first half of the groups on
// gate columns and the second half on the same up columns, n further.
template <int V, int TW>
__device__ __forceinline__ void TileColumns(const Params &p, int lc, int64_t *col, int64_t *limit) {
  if (p.gated) {
    const int half = lc / (kColLanes / 2); // 0: gate, 1: up
    *col = static_cast<int64_t>(blockIdx.x) * (TW / 2) + (lc % (kColLanes / 2)) * V + half * p.n;
    *limit = (half + 1) * p.n;
  } else {
    *col = static_cast<int64_t>(blockIdx.x) * TW + lc * V;
    *limit = p.n;
  }
}

// After each warp stored its partial sums for the tile in red[warp][m][c]
// (c < TW: the tile's columns, gated: gate ones then up ones): adds the
// warps, then (K split) the cluster's blocks, and stores the epilogue's
// results. Every thread of the block calls it.
template <typename T, int M, int TW> __device__ void FinishTile(const Params &p, float *red) {
  __syncthreads();
  // The warps, in warp order; sums land in warp 0's slots.
  for (int i = static_cast<int>(threadIdx.x); i < M * TW; i += kThreads) {
    float s = red[i];
#pragma unroll
    for (int w = 1; w < kWarps; ++w)
      s += red[w * M * TW + i];
    red[i] = s;
  }
  __syncthreads();

  if (gridDim.y > 1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The splits of K are one cluster: block 0 adds the others' sums from
    // their shared memory, in split order, and does the epilogue.
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync(); // every split's sums are in its shared memory
    const unsigned rank = cluster.block_rank(), splits = cluster.num_blocks();
    if (rank == 0)
      for (int i = static_cast<int>(threadIdx.x); i < M * TW; i += kThreads) {
        float s = red[i];
        for (unsigned r = 1; r < splits; ++r)
          s += cluster.map_shared_rank(red, r)[i];
        red[i] = s;
      }
    cluster.sync(); // the others keep their shared memory until block 0 has read it
    if (rank != 0)
      return;
#else
    __trap(); // the host splits K only on devices with clusters
#endif
  }
  const int out_cols = p.gated ? TW / 2 : TW;
  T *y = static_cast<T *>(p.y);
  for (int i = static_cast<int>(threadIdx.x); i < M * out_cols; i += kThreads) {
    const int m = i / out_cols, c = i % out_cols;
    const int64_t col_out = static_cast<int64_t>(blockIdx.x) * out_cols + c;
    if (m >= p.rows || col_out >= p.n)
      continue;
    const float *sums = red + m * TW;
    float v;
    if (p.gated) {
      v = ApplyActivation(p.act, sums[c]) * sums[TW / 2 + c];
    } else {
      v = sums[c];
      if (p.bias)
        v += LoadF32(static_cast<const T *>(p.bias), col_out);
      v = ApplyActivation(p.act, v);
    }
    StoreF32(y, m * p.ldy + col_out, v);
  }
}

// The CUDA-core kernel: each thread multiplies its 16 bytes of a row of W
// by that row's X value for each of M rows, in f32 FMAs.
// kVec: W's base, row stride and n are multiples of 16 bytes' elements, so
// every thread's columns are one aligned 16-byte load, wholly in or out of
// range. Otherwise each column is loaded alone (odd N, unaligned rows).
template <typename T, int M, bool kVec>
__global__ void __launch_bounds__(kThreads) GemvKernel(Params p) {
  constexpr int V = kVecElems<T>;
  constexpr int TW = kTileCols<T>;
  __shared__ float red[kWarps * M * TW];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int lc = lane % kColLanes;
  const int row_lane = warp * kRowLanes + lane / kColLanes;
  int64_t col, limit;
  TileColumns<V, TW>(p, lc, &col, &limit);
  const int64_t k_begin = static_cast<int64_t>(blockIdx.y) * p.chunk;
  const int64_t k_end = k_begin + p.chunk < p.k ? k_begin + p.chunk : p.k;

  // Rows of X past p.rows repeat the last one; their sums are not stored.
  const T *xr[M];
#pragma unroll
  for (int m = 0; m < M; ++m)
    xr[m] = static_cast<const T *>(p.x) + (m < p.rows ? m : p.rows - 1) * p.ldx;
  const T *wc = static_cast<const T *>(p.w) + col;

  float acc[M][V];
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < V; ++j)
      acc[m][j] = 0.0f;

  if (col < limit) {
    for (int64_t k0 = k_begin + row_lane; k0 < k_end; k0 += kRowsPerStep) {
      float wf[kUnroll][V];
      if constexpr (kVec) {
        uint4 raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t kk = k0 + u * kRowsPerPass;
          raw[u] = kk < k_end ? LoadStreaming(wc + kk * p.ldw) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          WidenVec<T>(raw[u], wf[u]);
      } else {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t kk = k0 + u * kRowsPerPass;
#pragma unroll
          for (int j = 0; j < V; ++j)
            wf[u][j] = kk < k_end && col + j < limit ? LoadF32(wc, kk * p.ldw + j) : 0.0f;
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t kk = k0 + u * kRowsPerPass;
        if (kk < k_end) {
#pragma unroll
          for (int m = 0; m < M; ++m) {
            const float xv = LoadX(xr[m], kk);
#pragma unroll
            for (int j = 0; j < V; ++j)
              acc[m][j] = fmaf(xv, wf[u][j], acc[m][j]);
          }
        }
      }
    }
  }

  // Lanes kColLanes apart hold the same columns: fold the warp's row lanes.
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int off = kColLanes; off < 32; off *= 2)
        acc[m][j] += __shfl_xor_sync(0xffffffffu, acc[m][j], off);
  if (lane < kColLanes)
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
      for (int j = 0; j < V; ++j)
        red[(warp * M + m) * TW + lc * V + j] = acc[m][j];
  FinishTile<T, M, TW>(p, red);
}

// ---- The tensor-core kernel (f16 and bf16, 5 to 16 rows) ----
//
// At 16 rows the CUDA-core kernel does 128 FMAs per 16 bytes of W, about
// what an SM can issue while its share of the bandwidth arrives; the
// tensor cores take that work. Each warp step is mma.sync m16n8k16 over 16
// rows of W and the tile's 64 columns: Y[16, 8] += X[16, 16] W[16, 8], f32
// accumulators. The sum's order over its 16 k is free, so a thread's B
// fragment (k slots 2t, 2t+1, 2t+8, 2t+9 of column g; t = lane % 4, g =
// lane / 4) is taken from rows 4t .. 4t+3 of the slab, which that thread
// reads with 16-byte loads of 8 columns: one load feeds 8 MMAs (one per
// column of the 8), paired by byte permutes. X's A fragment follows the
// same k order: 4 consecutive values of rows g and g + 8.

__device__ __forceinline__ uint32_t Word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    const __nv_bfloat16 *) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void Mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                    const __half *) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

constexpr int kMmaRows = 16; // rows of X (padded with zeros) and of W per step
constexpr int kMmaSlabs = 2; // steps each warp keeps in flight: 8 loads a thread
constexpr int64_t kMmaRowsPerIter = int64_t{kWarps} * kMmaRows * kMmaSlabs;

// The W operand needs 16-byte loads (GemvKernel's kVec).
template <typename T> __global__ void __launch_bounds__(kThreads) GemvMmaKernel(Params p) {
  constexpr int V = kVecElems<T>;  // 8
  constexpr int TW = kTileCols<T>; // 64
  constexpr int M = kMmaRows;
  __shared__ float red[kWarps * M * TW];
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane / 4, t = lane % 4;
  int64_t col, limit;
  TileColumns<V, TW>(p, g, &col, &limit);
  const bool col_ok = col < limit;
  const int64_t k_begin = static_cast<int64_t>(blockIdx.y) * p.chunk;
  const int64_t k_end = k_begin + p.chunk < p.k ? k_begin + p.chunk : p.k;
  const T *wc = static_cast<const T *>(p.w) + (col_ok ? col : 0);
  // X's rows g and g + 8 as raw 16-bit values; rows past p.rows are zeros.
  const auto *xs = static_cast<const unsigned short *>(p.x);
  const bool lo_ok = g < p.rows, hi_ok = g + 8 < p.rows;
  const unsigned short *x_lo = xs + (lo_ok ? g : 0) * p.ldx;
  const unsigned short *x_hi = xs + (hi_ok ? g + 8 : 0) * p.ldx;

  float acc[V][4];
#pragma unroll
  for (int j = 0; j < V; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc[j][e] = 0.0f;

  // Every lane runs every MMA (they are warp-wide); lanes out of range
  // load zeros.
  for (int64_t base = k_begin + warp * kMmaRows; base < k_end; base += kMmaRowsPerIter) {
    uint4 raw[kMmaSlabs][4];
#pragma unroll
    for (int s = 0; s < kMmaSlabs; ++s)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int64_t kk = base + s * kWarps * kMmaRows + 4 * t + r;
        raw[s][r] = col_ok && kk < k_end ? LoadStreaming(wc + kk * p.ldw) : make_uint4(0, 0, 0, 0);
      }
    uint32_t a[kMmaSlabs][4];
#pragma unroll
    for (int s = 0; s < kMmaSlabs; ++s) {
      const int64_t kx = base + s * kWarps * kMmaRows + 4 * t;
      uint32_t lo[4], hi[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const bool in_k = kx + r < k_end;
        lo[r] = lo_ok && in_k ? __ldg(x_lo + kx + r) : 0u;
        hi[r] = hi_ok && in_k ? __ldg(x_hi + kx + r) : 0u;
      }
      a[s][0] = lo[0] | lo[1] << 16;
      a[s][1] = hi[0] | hi[1] << 16;
      a[s][2] = lo[2] | lo[3] << 16;
      a[s][3] = hi[2] | hi[3] << 16;
    }
#pragma unroll
    for (int s = 0; s < kMmaSlabs; ++s)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        // Column j of the 8: the low or high half of word j / 2 of each row.
        const unsigned sel = j % 2 ? 0x7632u : 0x5410u;
        const uint32_t b0 = __byte_perm(Word(raw[s][0], j / 2), Word(raw[s][1], j / 2), sel);
        const uint32_t b1 = __byte_perm(Word(raw[s][2], j / 2), Word(raw[s][3], j / 2), sel);
        Mma(acc[j], a[s], b0, b1, static_cast<const T *>(nullptr));
      }
  }

  // acc[j][2h + e]: row g + 8h, column j of lane group 2t + e.
#pragma unroll
  for (int j = 0; j < V; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        red[(warp * M + g + 8 * h) * TW + (2 * t + e) * V + j] = acc[j][2 * h + e];
  FinishTile<T, M, TW>(p, red);
}

int64_t ElemBytes(FloatElem t) { return t == FloatElem::kF32 ? 4 : 2; }
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// How the product is cut: column tiles (grid x) and splits of K (grid y,
// one cluster per tile).
struct Grid {
  int64_t tiles = 0, splits = 1, chunk = 0;
};

// sm_count: the device's multiprocessors; max_splits: 1 where the device
// has no thread block clusters.
Grid GridOf(const GemvArgs &a, int sm_count, int64_t max_splits) {
  const int64_t tile_cols = kColLanes * (16 / ElemBytes(a.t)) / (a.gated ? 2 : 1);
  Grid g;
  g.tiles = CeilDiv(a.n, tile_cols);
  // Blocks of few rows use few registers and fit several to an SM; aim
  // for that many resident blocks, each with its loads in flight.
  const int64_t target = std::max(1, sm_count) * (a.m <= 4 ? 4 : 2);
  if (g.tiles < target)
    g.splits =
        std::min({CeilDiv(target, g.tiles), std::max<int64_t>(1, a.k / kMinSplitRows), max_splits});
  g.chunk = CeilDiv(CeilDiv(a.k, g.splits), kRowsPerPass) * kRowsPerPass;
  g.splits = CeilDiv(a.k, g.chunk);
  return g;
}

bool Valid(const GemvArgs &a) {
  if (a.t == FloatElem::kF64 || a.m < 1 || a.m > kGemvMaxRows || a.n < 1 || a.k < 1)
    return false;
  if (!a.x || !a.w || !a.y || a.ldx < a.k || a.ldy < a.n || a.ldw < (a.gated ? 2 : 1) * a.n)
    return false;
  if (a.gated)
    return !a.bias && (a.act == Activation::kSilu || a.act == Activation::kGelu ||
                       a.act == Activation::kGeluTanh);
  return true;
}

// One launch of `kernel` over the grid, the splits of each tile a cluster.
cudaError_t Launch(void (*kernel)(Params), const Params &p, const Grid &g, cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(g.tiles), static_cast<unsigned>(g.splits));
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  cudaLaunchAttribute cluster[1];
  if (g.splits > 1) {
    cluster[0].id = cudaLaunchAttributeClusterDimension;
    cluster[0].val.clusterDim.x = 1;
    cluster[0].val.clusterDim.y = static_cast<unsigned>(g.splits);
    cluster[0].val.clusterDim.z = 1;
    config.attrs = cluster;
    config.numAttrs = 1;
  }
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, p);
  return err != cudaSuccess ? err : cudaGetLastError();
}

template <typename T, int M> void (*RowsKernel(bool vec))(Params) {
  return vec ? GemvKernel<T, M, true> : GemvKernel<T, M, false>;
}

template <typename T> cudaError_t LaunchType(const Params &p, const Grid &g, cudaStream_t stream) {
  constexpr int V = kVecElems<T>;
  const bool vec = reinterpret_cast<uintptr_t>(p.w) % 16 == 0 && p.ldw % V == 0 && p.n % V == 0;
  void (*kernel)(Params);
  if (p.rows == 1)
    kernel = RowsKernel<T, 1>(vec);
  else if (p.rows == 2)
    kernel = RowsKernel<T, 2>(vec);
  else if (p.rows <= 4)
    kernel = RowsKernel<T, 4>(vec);
  else if (p.rows <= 8)
    kernel = RowsKernel<T, 8>(vec);
  else
    kernel = RowsKernel<T, 16>(vec);
  // More than 4 rows of half operands, with 16-byte loads, go to the
  // tensor cores.
  if constexpr (!std::is_same_v<T, float>)
    if (p.rows > 4 && vec)
      kernel = GemvMmaKernel<T>;
  return Launch(kernel, p, g, stream);
}

} // namespace

cudaError_t Gemv(const GemvArgs &a, cudaStream_t stream) {
  if (!Valid(a))
    return cudaErrorInvalidValue;
  // Host-side attribute queries: no device work, so a graph capture may
  // include this launch.
  int device = 0, sm_count = 0, major = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  if (err != cudaSuccess)
    return err;
  const Grid g = GridOf(a, sm_count, major >= 9 ? kMaxSplits : 1);
  if (g.tiles > 0x7fffffff)
    return cudaErrorInvalidValue;
  Params p{};
  p.x = a.x;
  p.ldx = a.ldx;
  p.w = a.w;
  p.ldw = a.ldw;
  p.bias = a.bias;
  p.y = a.y;
  p.ldy = a.ldy;
  p.rows = a.m;
  p.n = a.n;
  p.k = a.k;
  p.chunk = g.chunk;
  p.act = a.act;
  p.gated = a.gated;
  switch (a.t) {
  case FloatElem::kF32:
    return LaunchType<float>(p, g, stream);
  case FloatElem::kF16:
    return LaunchType<__half>(p, g, stream);
  case FloatElem::kBF16:
    return LaunchType<__nv_bfloat16>(p, g, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
