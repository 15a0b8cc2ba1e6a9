#include "kernels/attention_scores.h"
#include "kernels/cuda/attention_mma.h"

#include <cub/block/block_scan.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace kiln::kernels::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileQ = kWarps * 16; // query rows per block, 16 per warp
constexpr int kTileK = 64;          // keys per step
constexpr int kPad = 8;             // halves of padding per shared row: ldmatrix without conflicts
constexpr int kScanThreads = 1024;
constexpr float kLog2e = 1.4426950408889634f;

// ---- PTX wrappers ----------------------------------------------------------

__device__ __forceinline__ uint32_t SharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, or 16 zero bytes when !valid.
__device__ __forceinline__ void CopyAsync16(void *dst, const void *src, bool valid) {
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SharedAddress(dst)),
               "l"(src), "r"(bytes));
}
__device__ __forceinline__ void CommitAsync() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending> __device__ __forceinline__ void WaitAsync() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// Four 8x8 matrices of 16-bit values; lanes 8i..8i+7 give matrix i's rows.
__device__ __forceinline__ void LoadMatrices(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}
__device__ __forceinline__ void LoadMatricesTransposed(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SharedAddress(row)));
}

// c += a (16x16, row-major) * b (16x8, column-major), f32 accumulators.
template <typename T> struct Mma;
template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void Run(float c[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t Pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&v);
  }
};
template <> struct Mma<__half> {
  static __device__ __forceinline__ void Run(float c[4], const uint32_t a[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t Pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t *>(&v);
  }
};

// ---- tile scan -------------------------------------------------------------

// Sequence s's new tokens, or 0 when its indices are malformed (skipped) or
// another launch attends it: the same rule as the split-key kernel's.
__device__ int64_t SeqTokens(const PagedIndexArrays &idx, const PagedDims &d, int64_t s) {
  const int64_t a = idx.query_start[s], b = idx.query_start[s + 1], ctx = idx.context_lens[s];
  if (a < 0 || b < a || b > d.tokens || ctx < b - a || ctx > d.max_blocks * d.block_size)
    return 0;
  if (d.single_tokens_elsewhere && b - a == 1)
    return 0;
  return b - a;
}

// tile_starts[s] = the first query tile of sequence s, tile_starts[N] = the
// tile count.
__global__ void __launch_bounds__(kScanThreads)
    ScanQueryTiles(PagedIndexArrays idx, PagedDims d, int64_t *tile_starts) {
  using Scan = cub::BlockScan<int64_t, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  int64_t carry = 0;
  for (int64_t base = 0; base < d.num_seqs; base += kScanThreads) {
    const int64_t s = base + threadIdx.x;
    const int64_t count = s < d.num_seqs ? (SeqTokens(idx, d, s) + kTileQ - 1) / kTileQ : 0;
    int64_t before = 0, total = 0;
    Scan(temp).ExclusiveSum(count, before, total);
    if (s < d.num_seqs)
      tile_starts[s] = carry + before;
    carry += total;
    __syncthreads(); // temp is reused
  }
  if (threadIdx.x == 0)
    tile_starts[d.num_seqs] = carry;
}

// ---- attention -------------------------------------------------------------

struct PrefillArgs {
  const void *q, *k_cache, *v_cache;
  void *out;
  PagedIndexArrays idx;
  PagedDims d;
  PrefillStrides st;
  float scale_log2; // the softmax scale times log2(e): scores go through exp2
  const int64_t *tile_starts;
  float scale; // the softmax scale itself, for the soft-cap
};

// Key j's element offset in the caches for KV head g of sequence s, or -1
// (read as zeros) outside [key_lo, key_end) or through a bad block-table
// entry. Keys before key_lo may be in blocks released behind the window.
__device__ __forceinline__ int64_t KeyOffset(const PrefillArgs &a, int64_t s, int64_t g, int64_t j,
                                             int64_t key_lo, int64_t key_end, int dim) {
  if (j >= key_end || j < key_lo)
    return -1;
  const int64_t blk = a.idx.block_tables[s * a.d.max_blocks + j / a.d.block_size];
  if (blk < 0 || blk >= a.d.num_blocks)
    return -1;
  return ((blk * a.d.kv_heads + g) * a.d.block_size + j % a.d.block_size) * dim;
}

// Block (h, x): query head h, query tile x of the batch. Heads vary fastest
// in launch order, so every head's longest tiles start first and the heads
// of one KV group read its keys at about the same time (from L2).
template <typename T, int D>
__global__ void __launch_bounds__(kThreads) PrefillKernel(PrefillArgs a) {
  constexpr int kStride = D + kPad; // shared row, in elements
  constexpr int kChunks = D / 8;    // 16-byte chunks per row
  constexpr int kKSteps = D / 16;   // k-steps of Q K^T, dim pairs of P V
  constexpr int kDimTiles = D / 8;  // n-tiles of the output
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T *sq = reinterpret_cast<T *>(smem_raw);
  T *sk = sq + kTileQ * kStride;                                          // [2][kTileK][kStride]
  T *sv = sk + 2 * kTileK * kStride;                                      // [2][kTileK][kStride]
  int64_t *soff = reinterpret_cast<int64_t *>(sv + 2 * kTileK * kStride); // [2][kTileK]

  // The tile: the last sequence s with tile_starts[s] <= x; its tiles run
  // last-first, so the longest (latest queries, most keys) start first.
  const int64_t x = blockIdx.y, num_seqs = a.d.num_seqs;
  if (x >= a.tile_starts[num_seqs])
    return;
  int64_t lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (a.tile_starts[mid] <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t s = lo;
  const int64_t first = a.idx.query_start[s];
  const int64_t n = a.idx.query_start[s + 1] - first;
  const int64_t pos0_seq = a.idx.context_lens[s] - n; // position of the sequence's first new token
  const int64_t tile = (a.tile_starts[s + 1] - a.tile_starts[s]) - 1 - (x - a.tile_starts[s]);
  const int64_t q0 = tile * kTileQ;
  const int rows = static_cast<int>(n - q0 < kTileQ ? n - q0 : kTileQ);
  const int64_t h = blockIdx.x, g = h / (a.d.q_heads / a.d.kv_heads);
  const int64_t pos0 = pos0_seq + q0;  // position of row 0
  const int64_t key_end = pos0 + rows; // keys [key_lo, key_end)
  // Row 0's window starts first: the tile's keys start at key tile kt0.
  const int64_t key_lo = WindowStart(pos0, a.d.window), kt0 = key_lo / kTileK;
  const int64_t key_tiles = (key_end + kTileK - 1) / kTileK - kt0;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const T *q = static_cast<const T *>(a.q);
  const T *kc = static_cast<const T *>(a.k_cache);
  const T *vc = static_cast<const T *>(a.v_cache);

  // Prologue: offsets of key tile 0, the query tile, key tile 0.
  if (tid < kTileK)
    soff[tid] = KeyOffset(a, s, g, kt0 * kTileK + tid, key_lo, key_end, D);
  for (int i = tid; i < kTileQ * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = r < rows;
    const T *src = valid ? q + (first + q0 + r) * a.st.q_token + h * a.st.q_head + c * 8 : q;
    CopyAsync16(sq + r * kStride + c * 8, src, valid);
  }
  __syncthreads();
  const auto load_keys = [&](int64_t kt) {
    const int stage = static_cast<int>(kt & 1);
    const int64_t *off = soff + stage * kTileK;
    T *dk = sk + stage * kTileK * kStride, *dv = sv + stage * kTileK * kStride;
    for (int i = tid; i < kTileK * kChunks; i += kThreads) {
      const int r = i / kChunks, c = i % kChunks;
      const int64_t o = off[r];
      CopyAsync16(dk + r * kStride + c * 8, o >= 0 ? kc + o + c * 8 : kc, o >= 0);
      CopyAsync16(dv + r * kStride + c * 8, o >= 0 ? vc + o + c * 8 : vc, o >= 0);
    }
  };
  load_keys(0);
  CommitAsync();
  if (tid < kTileK && key_tiles > 1)
    soff[kTileK + tid] = KeyOffset(a, s, g, (kt0 + 1) * kTileK + tid, key_lo, key_end, D);

  // This thread's two rows of its warp's 16: r0 = lane / 4 and r0 + 8.
  const int r0 = warp * 16 + lane / 4;
  // Rows past the tile's end take the last row's limit; they are not stored.
  const int64_t limit0 = pos0 + (r0 < rows ? r0 : rows - 1);
  const int64_t limit1 = pos0 + (r0 + 8 < rows ? r0 + 8 : rows - 1);
  uint32_t qf[kKSteps][4];
  float o[kDimTiles][4];
  for (int t = 0; t < kDimTiles; ++t)
    o[t][0] = o[t][1] = o[t][2] = o[t][3] = 0.0f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f; // in log2 units
  // ldmatrix addressing: lane gives row (lane % 8) of matrix (lane / 8).
  const int mi = lane / 8, mr = lane % 8;

  for (int64_t kt = 0; kt < key_tiles; ++kt) {
    __syncthreads(); // offsets of tile kt + 1 written; its stage consumed at kt - 1
    if (kt + 1 < key_tiles)
      load_keys(kt + 1);
    CommitAsync();
    WaitAsync<1>();
    __syncthreads(); // tile kt (and the queries) landed for every thread
    if (kt == 0)
      for (int ks = 0; ks < kKSteps; ++ks)
        LoadMatrices(qf[ks],
                     sq + (warp * 16 + (mi & 1) * 8 + mr) * kStride + ks * 16 + (mi >> 1) * 8);
    if (tid < kTileK && kt + 2 < key_tiles)
      soff[(kt & 1) * kTileK + tid] =
          KeyOffset(a, s, g, (kt0 + kt + 2) * kTileK + tid, key_lo, key_end, D);
    const T *tk = sk + (kt & 1) * kTileK * kStride, *tv = sv + (kt & 1) * kTileK * kStride;

    // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
    float sc[kTileK / 8][4];
    for (int t = 0; t < kTileK / 8; ++t)
      sc[t][0] = sc[t][1] = sc[t][2] = sc[t][3] = 0.0f;
    for (int ks = 0; ks < kKSteps; ++ks)
      for (int np = 0; np < kTileK / 16; ++np) {
        uint32_t b[4];
        LoadMatrices(b, tk + (np * 16 + (mi >> 1) * 8 + mr) * kStride + ks * 16 + (mi & 1) * 8);
        Mma<T>::Run(sc[2 * np], qf[ks], b[0], b[1]);
        Mma<T>::Run(sc[2 * np + 1], qf[ks], b[2], b[3]);
      }

    // Scale (and soft-cap), causal mask (only where the tile reaches past
    // row 0's position) and window, online softmax.
    const int64_t j0 = (kt0 + kt) * kTileK + 2 * (lane % 4), w = a.d.window;
    const bool masked = (kt0 + kt) * kTileK + kTileK - 1 > pos0 || w > 0;
    const float cap = a.d.softcap;
    float mx0 = m0, mx1 = m1;
    for (int t = 0; t < kTileK / 8; ++t)
      for (int e = 0; e < 2; ++e) {
        const int64_t j = j0 + t * 8 + e;
        float v0 = sc[t][e] * a.scale_log2, v1 = sc[t][2 + e] * a.scale_log2;
        if (cap > 0) {
          v0 = SoftCap(sc[t][e] * a.scale, cap) * kLog2e;
          v1 = SoftCap(sc[t][2 + e] * a.scale, cap) * kLog2e;
        }
        if (masked) {
          v0 = j <= limit0 && (w == 0 || j > limit0 - w) ? v0 : -INFINITY;
          v1 = j <= limit1 && (w == 0 || j > limit1 - w) ? v1 : -INFINITY;
        }
        sc[t][e] = v0;
        sc[t][2 + e] = v1;
        mx0 = fmaxf(mx0, v0);
        mx1 = fmaxf(mx1, v1);
      }
    for (int sh = 1; sh <= 2; sh <<= 1) {
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, sh));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, sh));
    }
    // Without a window, key 0 is in every row's range and in tile 0, so mx
    // is finite here; with one, a row's window may start past this tile:
    // its mx stays -inf, and 0 stands in so nothing becomes NaN.
    const float base0 = mx0 == -INFINITY ? 0.0f : mx0, base1 = mx1 == -INFINITY ? 0.0f : mx1;
    const float corr0 = exp2f(m0 - base0), corr1 = exp2f(m1 - base1);
    m0 = mx0;
    m1 = mx1;
    float sum0 = 0.0f, sum1 = 0.0f;
    for (int t = 0; t < kTileK / 8; ++t) {
      sc[t][0] = exp2f(sc[t][0] - base0);
      sc[t][1] = exp2f(sc[t][1] - base0);
      sc[t][2] = exp2f(sc[t][2] - base1);
      sc[t][3] = exp2f(sc[t][3] - base1);
      sum0 += sc[t][0] + sc[t][1];
      sum1 += sc[t][2] + sc[t][3];
    }
    l0 = l0 * corr0 + sum0; // this thread's columns; the quad adds up at the end
    l1 = l1 * corr1 + sum1;
    for (int t = 0; t < kDimTiles; ++t) {
      o[t][0] *= corr0;
      o[t][1] *= corr0;
      o[t][2] *= corr1;
      o[t][3] *= corr1;
    }

    // O += P V: P's accumulators become the A operand, 16 keys per step.
    for (int kk = 0; kk < kTileK / 16; ++kk) {
      uint32_t p[4];
      p[0] = Mma<T>::Pack(sc[2 * kk][0], sc[2 * kk][1]);
      p[1] = Mma<T>::Pack(sc[2 * kk][2], sc[2 * kk][3]);
      p[2] = Mma<T>::Pack(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
      p[3] = Mma<T>::Pack(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
      for (int dp = 0; dp < kKSteps; ++dp) {
        uint32_t b[4];
        LoadMatricesTransposed(b, tv + (kk * 16 + (mi & 1) * 8 + mr) * kStride + dp * 16 +
                                      (mi >> 1) * 8);
        Mma<T>::Run(o[2 * dp], p, b[0], b[1]);
        Mma<T>::Run(o[2 * dp + 1], p, b[2], b[3]);
      }
    }
  }

  for (int sh = 1; sh <= 2; sh <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, sh);
    l1 += __shfl_xor_sync(0xffffffffu, l1, sh);
  }
  const float inv0 = l0 > 0.0f ? 1.0f / l0 : 0.0f, inv1 = l1 > 0.0f ? 1.0f / l1 : 0.0f;
  T *out = static_cast<T *>(a.out);
  const int col = 2 * (lane % 4);
  if (r0 < rows) {
    T *row = out + (first + q0 + r0) * a.st.out_token + h * a.st.out_head + col;
    for (int t = 0; t < kDimTiles; ++t)
      *reinterpret_cast<uint32_t *>(row + t * 8) = Mma<T>::Pack(o[t][0] * inv0, o[t][1] * inv0);
  }
  if (r0 + 8 < rows) {
    T *row = out + (first + q0 + r0 + 8) * a.st.out_token + h * a.st.out_head + col;
    for (int t = 0; t < kDimTiles; ++t)
      *reinterpret_cast<uint32_t *>(row + t * 8) = Mma<T>::Pack(o[t][2] * inv1, o[t][3] * inv1);
  }
}

constexpr int64_t SharedBytes(int64_t d) {
  return (kTileQ + 4 * kTileK) * (d + kPad) * 2 +
         2 * kTileK * static_cast<int64_t>(sizeof(int64_t));
}

int64_t MaxTiles(const PagedDims &d) { return (d.tokens + kTileQ - 1) / kTileQ + d.num_seqs; }

template <typename T, int D> cudaError_t Launch(const PrefillArgs &args, cudaStream_t stream) {
  constexpr int64_t smem = SharedBytes(D);
  auto *kernel = PrefillKernel<T, D>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess)
    return err;
  const dim3 grid(static_cast<unsigned>(args.d.q_heads), static_cast<unsigned>(MaxTiles(args.d)));
  kernel<<<grid, kThreads, smem, stream>>>(args);
  return cudaGetLastError();
}

template <typename T> cudaError_t LaunchDim(const PrefillArgs &args, cudaStream_t stream) {
  switch (args.d.head_dim) {
  case 64:
    return Launch<T, 64>(args, stream);
  case 80:
    return Launch<T, 80>(args, stream);
  case 96:
    return Launch<T, 96>(args, stream);
  case 128:
    return Launch<T, 128>(args, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace

bool PrefillAttentionSupported(FusedFloat type, const PagedDims &d, const PrefillTensors &t,
                               const PrefillStrides &st) {
  if (type != FusedFloat::kF16 && type != FusedFloat::kBF16)
    return false;
  const int64_t hd = d.head_dim;
  if (hd != d.v_dim || (hd != 64 && hd != 80 && hd != 96 && hd != 128))
    return false;
  if (d.kv_heads <= 0 || d.q_heads % d.kv_heads != 0 || d.block_size <= 0)
    return false;
  if (d.q_heads > 0x7fffffff || MaxTiles(d) > 65535) // the grid's x and y
    return false;
  for (const int64_t s : {st.q_token, st.q_head, st.out_token, st.out_head})
    if (s < 0 || s % 8 != 0)
      return false;
  return Aligned16(t.q) && Aligned16(t.k_cache) && Aligned16(t.v_cache) && Aligned16(t.out);
}

bool PrefillAttentionPreferred(const PagedDims &d) {
  return d.num_seqs > 0 && d.tokens >= 16 * d.num_seqs;
}

int64_t PrefillAttentionScratchBytes(const PagedDims &d) {
  return ((d.num_seqs + 1) * static_cast<int64_t>(sizeof(int64_t)) + 255) / 256 * 256;
}

cudaError_t PrefillAttention(FusedFloat type, const PrefillTensors &t, const PagedIndexArrays &idx,
                             const PagedDims &dims, const PrefillStrides &strides, float scale,
                             void *scratch, cudaStream_t stream) {
  if (!PrefillAttentionSupported(type, dims, t, strides))
    return cudaErrorInvalidValue;
  if (dims.tokens == 0 || dims.num_seqs == 0 || dims.q_heads == 0)
    return cudaSuccess;
  int64_t *tile_starts = static_cast<int64_t *>(scratch);
  ScanQueryTiles<<<1, kScanThreads, 0, stream>>>(idx, dims, tile_starts);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return err;
  const PrefillArgs args{t.q,  t.k_cache, t.v_cache,      t.out,       idx,
                         dims, strides,   scale * kLog2e, tile_starts, scale};
  return type == FusedFloat::kBF16 ? LaunchDim<__nv_bfloat16>(args, stream)
                                   : LaunchDim<__half>(args, stream);
}

} // namespace kiln::kernels::cuda
