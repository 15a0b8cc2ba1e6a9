// Moe (products_moe.h): route, align, the grouped up and down products, and
// the weighted combine. The grouped products read each tile's rows through
// the align step's row list (a gather: x rows for the up product, the tile's
// own rows of the gated intermediate for the down one) and one expert's
// weight, so the work is the routed rows' and only the picked experts'
// weights are read.
#include "kernels/cuda/products_moe.h"

#include "kernels/cuda/elem_access.cuh"
#include "kernels/cuda/pointwise_activation_math.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>
#include <cmath>

namespace kiln::kernels::cuda {
namespace {

constexpr int kBm = static_cast<int>(kMoeTileRows);
constexpr int kMaxSplits = 8;
constexpr int kRouteThreads = 256;
constexpr int kAlignThreads = 1024;

// ---- scratch layout --------------------------------------------------------

struct Layout {
  int64_t slots = 0;     // rows * top_k: one per (row, picked expert)
  int64_t max_tiles = 0; // ceil(slots / Bm) + E: every expert's rows padded to whole tiles
  int64_t splits = 1;    // the down product's sum, split over this many blocks
  int64_t k_per_split = 0;
  // byte offsets into the scratch
  uint64_t expert = 0, weight = 0, tile_expert = 0, used = 0, sorted = 0, g = 0, ys = 0, total = 0;
};

uint64_t Align256(uint64_t b) { return (b + 255) & ~uint64_t{255}; }

uint64_t ElemBytes(FloatElem t) { return t == FloatElem::kF32 ? 4 : 2; }

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int kTcBk = 32; // the tensor-core kernel's sum step (and the split granule)

Layout LayoutOf(const MoeArgs &a) {
  Layout l;
  l.slots = a.rows * a.top_k;
  l.max_tiles = CeilDiv(l.slots, kBm) + a.experts;
  // At least top_k tiles are used (a row's picks are distinct experts), and
  // at least ceil(slots / Bm). When those blocks of the down product cannot
  // fill the device twice over, its sum over F is split across blocks.
  const int64_t min_tiles = std::max<int64_t>(a.top_k, CeilDiv(l.slots, kBm));
  const int64_t blocks = CeilDiv(a.hidden, 64) * min_tiles;
  const int64_t want = a.sm_count > 0 ? CeilDiv(2 * a.sm_count, std::max<int64_t>(blocks, 1)) : 1;
  const int64_t most = std::max<int64_t>(1, a.ffn / (4 * kTcBk)); // >= 4 steps per split
  l.splits = std::min<int64_t>({want, most, kMaxSplits});
  if (l.splits < 1)
    l.splits = 1;
  l.k_per_split = CeilDiv(CeilDiv(a.ffn, l.splits), kTcBk) * kTcBk;
  l.splits = CeilDiv(a.ffn, l.k_per_split);
  uint64_t off = 0;
  auto take = [&](uint64_t bytes) {
    const uint64_t at = off;
    off += Align256(bytes);
    return at;
  };
  l.expert = take(static_cast<uint64_t>(l.slots) * 4);
  l.weight = take(static_cast<uint64_t>(l.slots) * 4);
  l.tile_expert = take(static_cast<uint64_t>(l.max_tiles) * 4);
  l.used = take(4);
  l.sorted = take(static_cast<uint64_t>(l.max_tiles * kBm) * 4);
  l.g = take(static_cast<uint64_t>(l.max_tiles * kBm * a.ffn) * ElemBytes(a.t));
  l.ys = take(static_cast<uint64_t>(l.splits * l.slots * a.hidden) * 4);
  l.total = off;
  return l;
}

bool Valid(const MoeArgs &a) {
  if (a.rows < 0 || a.hidden <= 0 || a.experts <= 0 || a.ffn <= 0 || a.top_k < 1 ||
      a.top_k > a.experts || a.experts > 4096)
    return false;
  if (a.act != Activation::kSilu && a.act != Activation::kGelu && a.act != Activation::kGeluTanh)
    return false;
  if (a.t != FloatElem::kF32 && a.t != FloatElem::kF16 && a.t != FloatElem::kBF16)
    return false;
  // Tile indices are ints on the device.
  return CeilDiv(a.rows * a.top_k, kBm) + a.experts < (int64_t{1} << 30);
}

// ---- route -----------------------------------------------------------------

template <typename T>
__global__ void __launch_bounds__(kRouteThreads)
    RouteKernel(const T *x, const T *wr, int64_t hidden, int experts, int top_k, bool normalize,
                int32_t *expert, float *weight) {
  extern __shared__ float logits[]; // [experts]
  const int64_t r = blockIdx.x;
  const T *xr = x + r * hidden;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (int e = warp; e < experts; e += warps) {
    float s = 0.0f;
    for (int64_t h = lane; h < hidden; h += 32)
      s = fmaf(LoadF32(xr, h), LoadF32(wr, h * experts + e), s);
    for (int o = 16; o > 0; o /= 2)
      s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
      logits[e] = s;
  }
  __syncthreads();
  if (threadIdx.x != 0)
    return;
  // As the CPU's MoeRoute: p = exp(l - max) / sum, the top k by p (ties to
  // the lower index), p / (sum of the picked) when normalizing.
  float best = -INFINITY;
  for (int e = 0; e < experts; ++e)
    if (logits[e] > best)
      best = logits[e];
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) {
    logits[e] = expf(logits[e] - best);
    sum += logits[e];
  }
  for (int e = 0; e < experts; ++e)
    logits[e] /= sum;
  int32_t *picks = expert + r * top_k;
  float picked = 0.0f;
  for (int k = 0; k < top_k; ++k) {
    int at = -1;
    float p = 0.0f;
    for (int e = 0; e < experts; ++e) {
      if (logits[e] < 0.0f)
        continue; // taken (probabilities are >= 0; a taken one is marked -1)
      if (at < 0 || logits[e] > p) {
        at = e;
        p = logits[e];
      }
    }
    if (at < 0) { // NaN probabilities: the lowest untaken expert
      for (int e = 0; e < experts && at < 0; ++e)
        if (!(logits[e] < 0.0f))
          at = e;
      p = logits[at];
    }
    picks[k] = at;
    weight[r * top_k + k] = p;
    picked += p;
    logits[at] = -1.0f;
  }
  if (normalize)
    for (int k = 0; k < top_k; ++k)
      weight[r * top_k + k] /= picked;
}

// ---- align -----------------------------------------------------------------

// One block. sorted[tile * Bm + i] is the slot (row * top_k + k) that row i
// of the tile holds, or -1 (padding); tile_expert[tile] the tile's expert;
// *used the number of tiles that hold rows. Within an expert the rows' order
// is the atomics' (each row's result does not depend on its place).
__global__ void __launch_bounds__(kAlignThreads)
    AlignKernel(const int32_t *expert, int64_t slots, int experts, int64_t max_tiles,
                int32_t *tile_expert, int32_t *sorted, int32_t *used) {
  extern __shared__ int32_t counts[]; // [experts] counts, then [experts] cursors
  int32_t *cursor = counts + experts;
  for (int e = threadIdx.x; e < experts; e += blockDim.x)
    counts[e] = 0;
  for (int64_t p = threadIdx.x; p < max_tiles * kBm; p += blockDim.x)
    sorted[p] = -1;
  __syncthreads();
  for (int64_t s = threadIdx.x; s < slots; s += blockDim.x)
    atomicAdd(&counts[expert[s]], 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t tile = 0;
    for (int e = 0; e < experts; ++e) {
      cursor[e] = tile * kBm;
      const int32_t tiles = (counts[e] + kBm - 1) / kBm;
      for (int32_t t = 0; t < tiles; ++t)
        tile_expert[tile + t] = e;
      tile += tiles;
    }
    *used = tile;
  }
  __syncthreads();
  for (int64_t s = threadIdx.x; s < slots; s += blockDim.x)
    sorted[atomicAdd(&cursor[expert[s]], 1)] = static_cast<int32_t>(s);
}

// ---- grouped products ------------------------------------------------------

// One grouped product. Up (kGated): a = x, row i of tile t is x row
// sorted[t * Bm + i] / top_k; out = g [max_tiles * Bm, n] of T, act(a Wg) *
// (a Wu) with the up columns at +n in w. Down: a = g, row i of tile t is g
// row t * Bm + i; out = ys [splits, slots, n] in f32 at the row's slot.
struct GemmParams {
  const void *a = nullptr;
  int64_t lda = 0;
  const void *w = nullptr;
  int64_t w_expert = 0; // elements between experts' weights
  int64_t ldw = 0;
  int64_t kdim = 0, n = 0;
  int top_k = 1;
  const int32_t *sorted = nullptr, *tile_expert = nullptr, *used = nullptr;
  void *out = nullptr;
  int64_t slots = 0;
  int64_t k_per_split = 0;
  Activation act = Activation::kSilu;
};

// The source row of a tile's row i: -1 for padding.
template <bool kGated>
__device__ __forceinline__ int64_t SourceRow(const GemmParams &p, int tile, int i) {
  const int32_t slot = p.sorted[tile * kBm + i];
  if (slot < 0)
    return -1;
  return kGated ? slot / p.top_k : static_cast<int64_t>(tile) * kBm + i;
}

template <typename T, bool kGated>
__device__ __forceinline__ void StoreResult(const GemmParams &p, int tile, int r, int64_t col,
                                            float gate, float up) {
  if (kGated) {
    const float v = ApplyActivation(p.act, gate) * up;
    StoreF32(static_cast<T *>(p.out), (static_cast<int64_t>(tile) * kBm + r) * p.n + col, v);
  } else {
    const int32_t slot = p.sorted[tile * kBm + r];
    if (slot >= 0)
      static_cast<float *>(p.out)[(blockIdx.z * p.slots + slot) * p.n + col] = gate;
  }
}

// What one block of a grouped product works on: its tile's expert weight
// and its part of the sum; each tile row's source row goes to `src` (shared,
// kBm entries; the caller syncs before reading it).
template <typename T> struct TileView {
  const T *w;
  int64_t k_begin, k_end;
};

template <typename T, bool kGated>
__device__ __forceinline__ TileView<T> OpenTile(const GemmParams &p, int tile, int64_t *src) {
  for (int i = threadIdx.x; i < kBm; i += blockDim.x)
    src[i] = SourceRow<kGated>(p, tile, i);
  TileView<T> v;
  v.w = static_cast<const T *>(p.w) + p.tile_expert[tile] * p.w_expert;
  v.k_begin = blockIdx.z * p.k_per_split;
  v.k_end = min(p.kdim, v.k_begin + p.k_per_split);
  return v;
}

// Exact f32 FMAs: a 64 x 32 tile per block of 256 threads, each thread 8
// rows of one column (and its up column when gated).
constexpr int kSimtBn = 32, kSimtBk = 16, kSimtThreads = 256;

template <typename T, bool kGated>
__global__ void __launch_bounds__(kSimtThreads) SimtGemmKernel(GemmParams p) {
  constexpr int kNb = kGated ? 2 : 1;
  const int tile = blockIdx.y;
  if (tile >= *p.used)
    return;
  __shared__ float as[kSimtBk][kBm];
  __shared__ float bs[kNb][kSimtBk][kSimtBn];
  __shared__ int64_t src[kBm];
  const TileView<T> v = OpenTile<T, kGated>(p, tile, src);
  const T *w = v.w, *a = static_cast<const T *>(p.a);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kSimtBn;
  const int64_t k_begin = v.k_begin, k_end = v.k_end;
  const int tx = threadIdx.x % kSimtBn, ty = threadIdx.x / kSimtBn; // ty: 0..7
  float acc[kNb][8] = {};
  __syncthreads();
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kSimtBk) {
    for (int i = threadIdx.x; i < kBm * kSimtBk; i += blockDim.x) {
      const int r = i / kSimtBk, kk = i % kSimtBk;
      const int64_t k = k0 + kk;
      as[kk][r] = (src[r] >= 0 && k < k_end) ? LoadF32(a, src[r] * p.lda + k) : 0.0f;
    }
    for (int i = threadIdx.x; i < kNb * kSimtBk * kSimtBn; i += blockDim.x) {
      const int nb = i / (kSimtBk * kSimtBn), rem = i % (kSimtBk * kSimtBn);
      const int kk = rem / kSimtBn, c = rem % kSimtBn;
      const int64_t k = k0 + kk, col = col0 + c;
      bs[nb][kk][c] = (k < k_end && col < p.n) ? LoadF32(w, k * p.ldw + col + nb * p.n) : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kSimtBk; ++kk)
      for (int nb = 0; nb < kNb; ++nb) {
        const float b = bs[nb][kk][tx];
        for (int j = 0; j < 8; ++j)
          acc[nb][j] = fmaf(as[kk][ty * 8 + j], b, acc[nb][j]);
      }
    __syncthreads();
  }
  const int64_t col = col0 + tx;
  if (col >= p.n)
    return;
  for (int j = 0; j < 8; ++j)
    StoreResult<T, kGated>(p, tile, ty * 8 + j, col, acc[0][j], acc[kNb - 1][j]);
}

// Tensor cores (half operands, every width a multiple of 8): a 64 x 64 tile
// per block of 4 warps (each 32 x 32), the sum in steps of 32 through a
// 3-stage cp.async pipeline, f32 accumulators.
constexpr int kTcBn = 64, kTcStages = 3, kTcThreads = 128;
constexpr int kTcAld = kTcBk + 8, kTcBld = kTcBn + 8, kTcCld = kTcBn + 4;

__device__ __forceinline__ void CopyAsync16(void *dst, const void *src, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int bytes = valid ? 16 : 0; // 0: the 16 bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes));
}
__device__ __forceinline__ void CommitAsync() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void WaitAsync() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <typename T, bool kGated> struct TcSmem {
  static constexpr int kNb = kGated ? 2 : 1;
  static constexpr int kA = kTcStages * kBm * kTcAld;         // elements of T
  static constexpr int kB = kTcStages * kNb * kTcBk * kTcBld; // elements of T
  static constexpr int kPipe = (kA + kB) * static_cast<int>(sizeof(T));
  static constexpr int kC = kNb * kBm * kTcCld * 4;
  static constexpr int kBytes = kPipe > kC ? kPipe : kC;
};

template <typename T, bool kGated>
__global__ void __launch_bounds__(kTcThreads) TcGemmKernel(GemmParams p) {
  using namespace nvcuda;
  using Sm = TcSmem<T, kGated>;
  constexpr int kNb = Sm::kNb;
  const int tile = blockIdx.y;
  if (tile >= *p.used)
    return;
  __shared__ __align__(128) unsigned char smem[Sm::kBytes];
  __shared__ int64_t src[kBm];
  T *as = reinterpret_cast<T *>(smem);         // [stage][Bm][Ald]
  T *bs = as + Sm::kA;                         // [stage][nb][Bk][Bld]
  float *cs = reinterpret_cast<float *>(smem); // [nb][Bm][Cld], after the loop
  const TileView<T> v = OpenTile<T, kGated>(p, tile, src);
  const T *w = v.w, *a = static_cast<const T *>(p.a);
  const int64_t col0 = static_cast<int64_t>(blockIdx.x) * kTcBn;
  const int64_t k_begin = v.k_begin, k_end = v.k_end;
  __syncthreads();

  auto load = [&](int stage, int64_t k0) {
    // A: Bm rows x Bk = 64 x 4 chunks of 8.
    for (int c = threadIdx.x; c < kBm * (kTcBk / 8); c += kTcThreads) {
      const int r = c / (kTcBk / 8), kc = (c % (kTcBk / 8)) * 8;
      const bool ok = src[r] >= 0 && k0 + kc < k_end;
      CopyAsync16(as + (stage * kBm + r) * kTcAld + kc, ok ? a + src[r] * p.lda + k0 + kc : a, ok);
    }
    // B: Bk rows x Bn = 32 x 8 chunks, per gate/up half.
    for (int c = threadIdx.x; c < kNb * kTcBk * (kTcBn / 8); c += kTcThreads) {
      const int nb = c / (kTcBk * (kTcBn / 8)), rem = c % (kTcBk * (kTcBn / 8));
      const int r = rem / (kTcBn / 8), cc = (rem % (kTcBn / 8)) * 8;
      const int64_t k = k0 + r, col = col0 + cc;
      const bool ok = k < k_end && col < p.n;
      CopyAsync16(bs + ((stage * kNb + nb) * kTcBk + r) * kTcBld + cc,
                  ok ? w + k * p.ldw + col + nb * p.n : w, ok);
    }
  };

  const int warp = threadIdx.x / 32, wm = warp / 2, wn = warp % 2;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kNb][2][2];
  for (int nb = 0; nb < kNb; ++nb)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        wmma::fill_fragment(acc[nb][i][j], 0.0f);

  const int steps = static_cast<int>((k_end - k_begin + kTcBk - 1) / kTcBk);
  for (int s = 0; s < kTcStages - 1; ++s) {
    if (s < steps)
      load(s, k_begin + s * kTcBk);
    CommitAsync();
  }
  for (int step = 0; step < steps; ++step) {
    WaitAsync<kTcStages - 2>();
    __syncthreads();
    const int stage = step % kTcStages;
    for (int kk = 0; kk < kTcBk; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> af[2];
      for (int i = 0; i < 2; ++i)
        wmma::load_matrix_sync(af[i], as + (stage * kBm + wm * 32 + i * 16) * kTcAld + kk, kTcAld);
      for (int nb = 0; nb < kNb; ++nb)
        for (int j = 0; j < 2; ++j) {
          wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bf;
          wmma::load_matrix_sync(
              bf, bs + ((stage * kNb + nb) * kTcBk + kk) * kTcBld + wn * 32 + j * 16, kTcBld);
          for (int i = 0; i < 2; ++i)
            wmma::mma_sync(acc[nb][i][j], af[i], bf, acc[nb][i][j]);
        }
    }
    const int next = step + kTcStages - 1;
    if (next < steps)
      load(next % kTcStages, k_begin + static_cast<int64_t>(next) * kTcBk);
    CommitAsync();
  }
  WaitAsync<0>();
  __syncthreads();
  for (int nb = 0; nb < kNb; ++nb)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        wmma::store_matrix_sync(cs + (nb * kBm + wm * 32 + i * 16) * kTcCld + wn * 32 + j * 16,
                                acc[nb][i][j], kTcCld, wmma::mem_row_major);
  __syncthreads();
  for (int i = threadIdx.x; i < kBm * kTcBn; i += kTcThreads) {
    const int r = i / kTcBn, c = i % kTcBn;
    const int64_t col = col0 + c;
    if (col < p.n)
      StoreResult<T, kGated>(p, tile, r, col, cs[r * kTcCld + c],
                             cs[((kNb - 1) * kBm + r) * kTcCld + c]);
  }
}

// ---- combine ---------------------------------------------------------------

// y[r, c] = sum over k of weight[r, k] * (sum over splits of ys[s, r * K + k, c]).
template <typename T>
__global__ void CombineKernel(const float *ys, const float *weight, T *y, int64_t rows,
                              int64_t hidden, int top_k, int64_t splits, int64_t slots) {
  const int64_t total = rows * hidden;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t r = i / hidden, c = i - r * hidden;
    float out = 0.0f;
    for (int k = 0; k < top_k; ++k) {
      const int64_t slot = r * top_k + k;
      float v = 0.0f;
      for (int64_t s = 0; s < splits; ++s)
        v += ys[(s * slots + slot) * hidden + c];
      out = fmaf(weight[slot], v, out);
    }
    StoreF32(y, i, out);
  }
}

template <typename T> bool TensorCoreShapes(const MoeArgs &a) {
  if constexpr (sizeof(T) == 4) {
    return false;
  } else {
    const auto aligned = [](const void *ptr) {
      return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0;
    };
    return a.hidden % 8 == 0 && a.ffn % 8 == 0 && aligned(a.x) && aligned(a.w_gate_up) &&
           aligned(a.w_down);
  }
}

template <typename T>
cudaError_t Run(const MoeArgs &a, const Layout &l, unsigned char *base, cudaStream_t stream) {
  auto *expert = reinterpret_cast<int32_t *>(base + l.expert);
  auto *weight = reinterpret_cast<float *>(base + l.weight);
  auto *tile_expert = reinterpret_cast<int32_t *>(base + l.tile_expert);
  auto *used = reinterpret_cast<int32_t *>(base + l.used);
  auto *sorted = reinterpret_cast<int32_t *>(base + l.sorted);
  void *g = base + l.g;
  auto *ys = reinterpret_cast<float *>(base + l.ys);
  const int E = static_cast<int>(a.experts), K = static_cast<int>(a.top_k);

  RouteKernel<T><<<static_cast<unsigned>(a.rows), kRouteThreads, E * sizeof(float), stream>>>(
      static_cast<const T *>(a.x), static_cast<const T *>(a.router_w), a.hidden, E, K, a.normalize,
      expert, weight);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return err;
  AlignKernel<<<1, kAlignThreads, 2 * E * sizeof(int32_t), stream>>>(
      expert, l.slots, E, l.max_tiles, tile_expert, sorted, used);
  if ((err = cudaGetLastError()) != cudaSuccess)
    return err;

  const bool tc = TensorCoreShapes<T>(a);
  GemmParams up;
  up.a = a.x;
  up.lda = a.hidden;
  up.w = a.w_gate_up;
  up.w_expert = a.hidden * 2 * a.ffn;
  up.ldw = 2 * a.ffn;
  up.kdim = a.hidden;
  up.n = a.ffn;
  up.top_k = K;
  up.sorted = sorted;
  up.tile_expert = tile_expert;
  up.used = used;
  up.out = g;
  up.slots = l.slots;
  up.k_per_split = a.hidden;
  up.act = a.act;
  GemmParams down = up;
  down.a = g;
  down.lda = a.ffn;
  down.w = a.w_down;
  down.w_expert = a.ffn * a.hidden;
  down.ldw = a.hidden;
  down.kdim = a.ffn;
  down.n = a.hidden;
  down.out = ys;
  down.k_per_split = l.k_per_split;
  const unsigned tiles = static_cast<unsigned>(l.max_tiles);
  const unsigned splits = static_cast<unsigned>(l.splits);
  if (tc) {
    if constexpr (sizeof(T) == 2) {
      TcGemmKernel<T, true><<<dim3(CeilDiv(a.ffn, kTcBn), tiles, 1), kTcThreads, 0, stream>>>(up);
      TcGemmKernel<T, false>
          <<<dim3(CeilDiv(a.hidden, kTcBn), tiles, splits), kTcThreads, 0, stream>>>(down);
    }
  } else {
    SimtGemmKernel<T, true>
        <<<dim3(CeilDiv(a.ffn, kSimtBn), tiles, 1), kSimtThreads, 0, stream>>>(up);
    SimtGemmKernel<T, false>
        <<<dim3(CeilDiv(a.hidden, kSimtBn), tiles, splits), kSimtThreads, 0, stream>>>(down);
  }
  if ((err = cudaGetLastError()) != cudaSuccess)
    return err;
  CombineKernel<T><<<GridStrideBlocks(a.rows * a.hidden, 256), 256, 0, stream>>>(
      ys, weight, static_cast<T *>(a.y), a.rows, a.hidden, K, l.splits, l.slots);
  return cudaGetLastError();
}

} // namespace

uint64_t MoeScratchBytes(const MoeArgs &a) {
  if (!Valid(a) || a.rows == 0)
    return 0;
  return LayoutOf(a).total;
}

cudaError_t Moe(const MoeArgs &a, void *scratch, cudaStream_t stream) {
  if (!Valid(a) || (a.rows > 0 && scratch == nullptr))
    return cudaErrorInvalidValue;
  if (a.rows == 0)
    return cudaSuccess;
  const Layout l = LayoutOf(a);
  if (l.splits > 65535 || l.max_tiles > 65535)
    return cudaErrorInvalidValue; // grid y and z limits
  auto *base = static_cast<unsigned char *>(scratch);
  switch (a.t) {
  case FloatElem::kF32:
    return Run<float>(a, l, base, stream);
  case FloatElem::kF16:
    return Run<__half>(a, l, base, stream);
  case FloatElem::kBF16:
    return Run<__nv_bfloat16>(a, l, base, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
