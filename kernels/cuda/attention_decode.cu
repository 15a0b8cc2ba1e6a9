#include "kernels/attention_scores.h"
#include "kernels/cuda/attention_decode.h"
#include "kernels/cuda/attention_tile.cuh"
#include "kernels/cuda/launch.h"

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kHeads = static_cast<int>(kDecodeHeads);
constexpr int kMaxDim = static_cast<int>(kMaxDecodeHeadDim);
constexpr int kKeysPerWarp = 32; // one per lane
static_assert(kWarps == kHeads, "the combine gives each query head of a block one warp");

// Key vectors (16 bytes) a lane loads before it uses them.
constexpr int kKeyBatch = 8;

struct DecodeArgs {
  const void *q, *k_new, *v_new;
  void *k_cache, *v_cache, *out;
  PagedIndexArrays idx;
  PagedDims d;
  float scale;
  int64_t head_chunks; // blocks per KV group: ceil(group / kHeads)
  int64_t splits;
  float *partials; // null when splits is 1
  bool all;        // DecodeMode::kAllSequences
};

// A split's record for one head: running max, sum, then Dv unnormalized
// outputs.
__host__ __device__ constexpr int64_t RecordFloats(int64_t dv) { return dv + 2; }

__device__ __forceinline__ float *RecordsOf(const DecodeArgs &a, int64_t z) {
  const int64_t first = (blockIdx.x * static_cast<int64_t>(gridDim.y) + blockIdx.y) * a.splits + z;
  return a.partials + first * kHeads * RecordFloats(a.d.v_dim);
}

// The keys of one split of a context of `keys` keys shared by `splits`
// blocks: whole warps' worth, so that the first splits are full and the
// ones past the context are empty.
__device__ __forceinline__ int64_t KeysPerSplit(int64_t keys, int64_t splits) {
  return (keys + splits * kKeysPerWarp - 1) / (splits * kKeysPerWarp) * kKeysPerWarp;
}

// Sequence s's new tokens, or -1 when its indices are malformed (skipped).
__device__ int64_t SeqNewTokens(const DecodeArgs &a, int64_t s) {
  const PagedIndexArrays &idx = a.idx;
  const int64_t b = idx.query_start[s], e = idx.query_start[s + 1], ctx = idx.context_lens[s];
  if (b < 0 || e < b || e > a.d.tokens || ctx < e - b || ctx > a.d.max_blocks * a.d.block_size)
    return -1;
  return e - b;
}

// Whether the op stores token t's key and value: its slot is in the cache.
__device__ __forceinline__ bool Stored(const DecodeArgs &a, int64_t t) {
  const int64_t slot = a.idx.slots[t];
  return slot >= 0 && slot / a.d.block_size < a.d.num_blocks;
}

// Key j's rows of KV head g for sequence s (first new token `first`, n new
// tokens, context ctx): a new token's from k_new and v_new when the op
// stores it (the same values, read without waiting for the store), the
// others' through the block table, as the op's contract reads them after
// the stores (a padding token's position then holds whatever the cache
// held); null when the table entry is out of range (the key then reads as
// zeros).
template <typename T> struct KeyRows { const T *k = nullptr, *v = nullptr; };

template <typename T>
__device__ __forceinline__ KeyRows<T> RowsOf(const DecodeArgs &a, int64_t s, int64_t g,
                                             int64_t first, int64_t n, int64_t ctx, int64_t j) {
  const PagedDims &d = a.d;
  KeyRows<T> r;
  if (j >= ctx - n && Stored(a, first + j - (ctx - n))) {
    const int64_t row = g * d.kv_head_stride + (first + j - (ctx - n)) * d.kv_token_stride;
    r.k = static_cast<const T *>(a.k_new) + row * d.head_dim;
    r.v = static_cast<const T *>(a.v_new) + row * d.v_dim;
    return r;
  }
  const int64_t blk = a.idx.block_tables[s * d.max_blocks + j / d.block_size];
  if (blk < 0 || blk >= d.num_blocks)
    return r;
  const int64_t row = (blk * d.kv_heads + g) * d.block_size + j % d.block_size;
  r.k = static_cast<const T *>(a.k_cache) + row * d.head_dim;
  r.v = static_cast<const T *>(a.v_cache) + row * d.v_dim;
  return r;
}

// Copies the n new tokens' key and value rows of KV head g into their
// slots; a negative or out-of-cache slot stores nothing.
template <typename T>
__device__ void StoreNew(const DecodeArgs &a, int64_t g, int64_t first, int64_t n) {
  const PagedDims &d = a.d;
  for (int64_t t = first; t < first + n; ++t) {
    if (!Stored(a, t))
      continue;
    const int64_t slot = a.idx.slots[t];
    const int64_t dst = (slot / d.block_size * d.kv_heads + g) * d.block_size + slot % d.block_size;
    const int64_t src = g * d.kv_head_stride + t * d.kv_token_stride;
    for (int64_t e = threadIdx.x; e < d.head_dim; e += blockDim.x)
      static_cast<T *>(a.k_cache)[dst * d.head_dim + e] =
          static_cast<const T *>(a.k_new)[src * d.head_dim + e];
    for (int64_t e = threadIdx.x; e < d.v_dim; e += blockDim.x)
      static_cast<T *>(a.v_cache)[dst * d.v_dim + e] =
          static_cast<const T *>(a.v_new)[src * d.v_dim + e];
  }
}

// The bytes LoadValueCols' vector form reads at a time: a lane's kCols
// values, at most 16.
template <typename T, int kCols> constexpr int ValueChunkBytes() {
  return kCols * static_cast<int>(sizeof(T)) < 16 ? kCols * static_cast<int>(sizeof(T)) : 16;
}

template <int kBytes> struct ChunkOf;
template <> struct ChunkOf<2> { using type = unsigned short; };
template <> struct ChunkOf<4> { using type = unsigned int; };
template <> struct ChunkOf<8> { using type = uint2; };
template <> struct ChunkOf<16> { using type = uint4; };

// The kCols value columns lane owns in row v (null: zeros): with kVec, the
// consecutive columns lane * kCols.., read in chunks of up to 16 bytes
// (the caller checked their alignment); else lane + 32 c.
template <typename T, int kCols, bool kVec>
__device__ __forceinline__ void LoadValueCols(const T *v, int lane, int dv, float (&vc)[kCols]) {
  if constexpr (kVec) {
    constexpr int kBytes = kCols * static_cast<int>(sizeof(T));
    constexpr int kChunk = ValueChunkBytes<T, kCols>();
    using Chunk = typename ChunkOf<kChunk>::type;
    const int col0 = lane * kCols;
    if (v == nullptr || col0 >= dv) {
      for (int c = 0; c < kCols; ++c)
        vc[c] = 0.0f;
      return;
    }
    alignas(16) T buf[kCols];
    for (int i = 0; i < kBytes / kChunk; ++i)
      reinterpret_cast<Chunk *>(buf)[i] = reinterpret_cast<const Chunk *>(v + col0)[i];
    for (int c = 0; c < kCols; ++c)
      vc[c] = Widen<float>(buf[c]);
  } else {
    for (int c = 0; c < kCols; ++c) {
      const int col = lane + 32 * c;
      vc[c] = v != nullptr && col < dv ? Widen<float>(v[col]) : 0.0f;
    }
  }
}

// Output column c of a lane's kCols.
template <int kCols, bool kVec> __device__ __forceinline__ int ColOf(int lane, int c) {
  return kVec ? lane * kCols + c : lane + 32 * c;
}

struct SharedState {
  float q[kHeads][kMaxDim];
  float m[kWarps][kHeads], l[kWarps][kHeads];
  float acc[kWarps][kHeads][kMaxDim];
};

// Token t (position ctx - (first + n - t), attending keys [key_begin,
// key_end)) for query heads h0.. of KV group g: each warp's running max, sum
// and outputs end in `sh`, merged by the caller.
template <typename T, int kCols, bool kValueVec>
__device__ void AttendKeys(const DecodeArgs &a, SharedState &sh, int64_t s, int64_t g,
                           int64_t first, int64_t n, int64_t ctx, int64_t key_begin,
                           int64_t key_end) {
  constexpr int kVec = 16 / sizeof(T);
  const int d = static_cast<int>(a.d.head_dim), dv = static_cast<int>(a.d.v_dim);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float m[kHeads], l[kHeads], acc[kHeads][kCols];
  for (int h = 0; h < kHeads; ++h) {
    m[h] = -INFINITY;
    l[h] = 0;
    for (int c = 0; c < kCols; ++c)
      acc[h][c] = 0;
  }
  for (int64_t j0 = key_begin + warp * kKeysPerWarp; j0 < key_end; j0 += kWarps * kKeysPerWarp) {
    const int64_t j = j0 + lane;
    const bool valid = j < key_end;
    KeyRows<T> rows;
    if (valid)
      rows = RowsOf<T>(a, s, g, first, n, ctx, j);
    float sc[kHeads];
    for (int h = 0; h < kHeads; ++h)
      sc[h] = 0;
    if (rows.k != nullptr) {
      // kKeyBatch loads in flight before their products.
      for (int e0 = 0; e0 < d; e0 += kKeyBatch * kVec) {
        uint4 raw[kKeyBatch] = {};
#pragma unroll
        for (int b = 0; b < kKeyBatch; ++b)
          if (e0 + b * kVec < d)
            raw[b] = *reinterpret_cast<const uint4 *>(rows.k + e0 + b * kVec);
#pragma unroll
        for (int b = 0; b < kKeyBatch; ++b) {
          const int e = e0 + b * kVec;
          if (e >= d)
            break;
          float k[kVec];
          WidenVector(reinterpret_cast<const T *>(&raw[b]), k);
          for (int h = 0; h < kHeads; ++h)
            for (int x = 0; x < kVec; ++x)
              sc[h] += sh.q[h][e + x] * k[x];
        }
      }
    }
    float p[kHeads];
    for (int h = 0; h < kHeads; ++h) {
      const float score = valid ? SoftCap(sc[h], a.d.softcap) : -INFINITY;
      const float m_new = fmaxf(m[h], WarpMax(score));
      p[h] = valid ? expf(score - m_new) : 0.0f;
      const float alpha = m[h] == -INFINITY ? 0.0f : expf(m[h] - m_new);
      l[h] = l[h] * alpha + WarpSum(p[h]);
      m[h] = m_new;
      for (int c = 0; c < kCols; ++c)
        acc[h][c] *= alpha;
    }
    const int64_t left = key_end - j0;
    const int count = left < kKeysPerWarp ? static_cast<int>(left) : kKeysPerWarp;
    const auto vrow = reinterpret_cast<unsigned long long>(rows.v);
#pragma unroll 8
    for (int kk = 0; kk < count; ++kk) {
      const T *v = reinterpret_cast<const T *>(__shfl_sync(kFullMask, vrow, kk));
      float vc[kCols];
      LoadValueCols<T, kCols, kValueVec>(v, lane, dv, vc);
      for (int h = 0; h < kHeads; ++h) {
        const float pk = __shfl_sync(kFullMask, p[h], kk);
        for (int c = 0; c < kCols; ++c)
          acc[h][c] += pk * vc[c];
      }
    }
  }
  if (lane == 0)
    for (int h = 0; h < kHeads; ++h) {
      sh.m[warp][h] = m[h];
      sh.l[warp][h] = l[h];
    }
  for (int h = 0; h < kHeads; ++h)
    for (int c = 0; c < kCols; ++c) {
      const int col = ColOf<kCols, kValueVec>(lane, c);
      if (col < dv)
        sh.acc[warp][h][col] = acc[h][c];
    }
}

// The warps' results for head h merged: the largest max, and the sum and the
// output column rescaled to it.
struct Merged {
  float m, l, acc;
};
__device__ __forceinline__ Merged MergeWarps(const SharedState &sh, int h, int col) {
  Merged r{-INFINITY, 0, 0};
  for (int w = 0; w < kWarps; ++w)
    r.m = fmaxf(r.m, sh.m[w][h]);
  if (r.m == -INFINITY)
    return r;
  for (int w = 0; w < kWarps; ++w) {
    const float f = sh.m[w][h] == -INFINITY ? 0.0f : expf(sh.m[w][h] - r.m);
    r.l += sh.l[w][h] * f;
    r.acc += sh.acc[w][h][col] * f;
  }
  return r;
}

__device__ __forceinline__ int64_t OutRow(const PagedDims &d, int64_t head, int64_t t) {
  return head * d.q_head_stride + t * d.q_token_stride;
}

// Block (s, g * head_chunks + chunk, z).
template <typename T, int kCols, bool kValueVec>
__global__ void __launch_bounds__(kThreads) DecodeKernel(const DecodeArgs a) {
  WaitForPriorKernels();
  __shared__ SharedState sh;
  const PagedDims &d = a.d;
  const int64_t s = blockIdx.x, g = blockIdx.y / a.head_chunks;
  const int64_t h0 = (blockIdx.y % a.head_chunks) * kHeads, z = blockIdx.z;
  const int64_t n = SeqNewTokens(a, s);
  if (n <= 0 || (!a.all && n != 1))
    return;
  const int64_t first = a.idx.query_start[s], ctx = a.idx.context_lens[s];
  const int64_t group = d.q_heads / d.kv_heads;
  const int heads = static_cast<int>(group - h0 < kHeads ? group - h0 : kHeads);
  if (a.all && z == 0 && h0 == 0)
    StoreNew<T>(a, g, first, n);
  const bool split = n == 1 && a.splits > 1;
  if (!split && z != 0)
    return;
  const int dv = static_cast<int>(d.v_dim);
  for (int64_t t = first; t < first + n; ++t) {
    // Attends keys lo..keys-1: its window's.
    const int64_t keys = ctx - (first + n - t) + 1, lo = WindowStart(keys - 1, d.window);
    int64_t key_begin = lo, key_end = keys;
    if (split) {
      const int64_t per = KeysPerSplit(keys - lo, a.splits);
      key_begin = lo + z * per;
      // A split past the context (the block table's width, not the context,
      // sets the split count) writes no record: the combine stops before it.
      if (key_begin >= keys)
        return;
      key_end = key_begin + per < keys ? key_begin + per : keys;
    }
    __syncthreads(); // the previous token's results are read
    for (int i = threadIdx.x; i < kHeads * d.head_dim; i += kThreads) {
      const int h = i / static_cast<int>(d.head_dim), e = i % static_cast<int>(d.head_dim);
      sh.q[h][e] = h < heads
                       ? a.scale * Widen<float>(static_cast<const T *>(
                                       a.q)[OutRow(d, g * group + h0 + h, t) * d.head_dim + e])
                       : 0.0f;
    }
    __syncthreads();
    AttendKeys<T, kCols, kValueVec>(a, sh, s, g, first, n, ctx, key_begin, key_end);
    __syncthreads();
    for (int i = threadIdx.x; i < heads * dv; i += kThreads) {
      const int h = i / dv, col = i % dv;
      const Merged r = MergeWarps(sh, h, col);
      if (split) {
        float *rec = RecordsOf(a, z) + h * RecordFloats(dv);
        if (col == 0) {
          rec[0] = r.m;
          rec[1] = r.l;
        }
        rec[2 + col] = r.acc;
      } else {
        static_cast<T *>(a.out)[OutRow(d, g * group + h0 + h, t) * dv + col] =
            Narrow<T>(r.l > 0 ? r.acc / r.l : 0.0f);
      }
    }
  }
}

// Columns of one head a combining block merges: a warp's.
constexpr int kCombineCols = 32;

// Block (s, y, c), a warp per query head h0 + w: merges the splits of a
// one-token sequence that hold keys into output columns c * 32.. of the
// block's heads. Each warp first reads its head's split maxima and sums
// (a lane per split) into one weight per split, then each lane sums its
// column over the splits, several loads in flight.
template <typename T>
__global__ void __launch_bounds__(kThreads) CombineKernel(const DecodeArgs a) {
  WaitForPriorKernels();
  __shared__ float weight[kHeads][kMaxDecodeFillBlocks];
  const PagedDims &d = a.d;
  const int64_t s = blockIdx.x, g = blockIdx.y / a.head_chunks;
  const int64_t h0 = (blockIdx.y % a.head_chunks) * kHeads;
  const int lane = threadIdx.x & 31, h = threadIdx.x >> 5;
  const int64_t group = d.q_heads / d.kv_heads;
  if (SeqNewTokens(a, s) != 1 || h0 + h >= group)
    return;
  const int64_t t = a.idx.query_start[s], ctx = a.idx.context_lens[s];
  const int64_t keys = ctx - WindowStart(ctx - 1, d.window); // as DecodeKernel splits them
  const int64_t per = KeysPerSplit(keys, a.splits);
  const int64_t holding = (keys + per - 1) / per; // the splits that hold keys
  const int used = static_cast<int>(holding < a.splits ? holding : a.splits);
  const int dv = static_cast<int>(d.v_dim);
  const int64_t stride = kHeads * RecordFloats(dv);
  const float *rec = RecordsOf(a, 0) + h * RecordFloats(dv);
  float m = -INFINITY;
  for (int z = lane; z < used; z += 32)
    m = fmaxf(m, rec[z * stride]);
  m = WarpMax(m);
  float l = 0;
  for (int z = lane; z < used; z += 32) {
    const float mz = rec[z * stride];
    const float f = m == -INFINITY || mz == -INFINITY ? 0.0f : expf(mz - m);
    weight[h][z] = f;
    l += rec[z * stride + 1] * f;
  }
  l = WarpSum(l);
  __syncwarp();
  const int col = blockIdx.z * kCombineCols + lane;
  if (col >= dv)
    return;
  float acc = 0;
#pragma unroll 8
  for (int z = 0; z < used; ++z)
    acc += weight[h][z] * rec[z * stride + 2 + col];
  static_cast<T *>(a.out)[OutRow(d, g * group + h0 + h, t) * dv + col] =
      Narrow<T>(l > 0 ? acc / l : 0.0f);
}

bool PolicyValid(const DecodeSplitPolicy &p) {
  return p.fill_blocks >= 1 && p.fill_blocks <= kMaxDecodeFillBlocks && p.min_keys >= 1;
}

int64_t HeadChunks(const PagedDims &d) {
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 0;
  return (group + kHeads - 1) / kHeads;
}

// Whether the value rows allow LoadValueCols' vectors: every row starts at a
// multiple of the chunk, and the lanes' columns never straddle a row's end.
template <typename T, int kCols> bool ValueVectors(const DecodeArgs &a) {
  constexpr int64_t chunk = ValueChunkBytes<T, kCols>();
  const auto aligned = [](const void *p) { return reinterpret_cast<uintptr_t>(p) % chunk == 0; };
  return a.d.v_dim % kCols == 0 && a.d.v_dim * static_cast<int64_t>(sizeof(T)) % chunk == 0 &&
         aligned(a.v_cache) && aligned(a.v_new);
}

template <typename T, int kCols> cudaError_t LaunchCols(const DecodeArgs &a, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(a.d.num_seqs),
                  static_cast<unsigned>(a.d.kv_heads * a.head_chunks),
                  static_cast<unsigned>(a.splits));
  cudaError_t err = ValueVectors<T, kCols>(a)
                        ? Launch(DecodeKernel<T, kCols, true>, grid, dim3(kThreads), 0, stream, a)
                        : Launch(DecodeKernel<T, kCols, false>, grid, dim3(kThreads), 0, stream, a);
  if (err != cudaSuccess || a.splits == 1)
    return err;
  const auto col_blocks = static_cast<unsigned>((a.d.v_dim + kCombineCols - 1) / kCombineCols);
  return Launch(CombineKernel<T>, dim3(grid.x, grid.y, col_blocks), dim3(kThreads), 0, stream, a);
}

template <typename T> cudaError_t LaunchTyped(const DecodeArgs &a, cudaStream_t stream) {
  if (a.d.v_dim <= 32)
    return LaunchCols<T, 1>(a, stream);
  if (a.d.v_dim <= 64)
    return LaunchCols<T, 2>(a, stream);
  if (a.d.v_dim <= 128)
    return LaunchCols<T, 4>(a, stream);
  return LaunchCols<T, 8>(a, stream);
}

} // namespace

int64_t DecodeAttentionSplits(const PagedDims &d, const DecodeSplitPolicy &policy) {
  const int64_t blocks = d.num_seqs * d.kv_heads * HeadChunks(d);
  if (blocks <= 0)
    return 1;
  // Out-of-range policies fall back to the defaults (DecodeAttention refuses them).
  const DecodeSplitPolicy p = PolicyValid(policy) ? policy : DecodeSplitPolicy{};
  // A window bounds the keys a token reads, however wide the tables are.
  int64_t max_keys = d.max_blocks * d.block_size;
  max_keys = d.window > 0 && d.window < max_keys ? d.window : max_keys;
  int64_t n = (p.fill_blocks + blocks - 1) / blocks;
  const int64_t by_keys = (max_keys + p.min_keys - 1) / p.min_keys;
  n = n < by_keys ? n : by_keys;
  // n <= kMaxDecodeFillBlocks, which the combine's shared weights hold.
  return n < 1 ? 1 : n;
}

bool DecodeAttentionSupported(FusedFloat type, const PagedDims &d, const PagedTensors &t) {
  if (type == FusedFloat::kF64)
    return false;
  const int64_t bytes = FusedFloatBytes(type);
  if (d.kv_heads <= 0 || d.q_heads % d.kv_heads != 0 || d.block_size <= 0)
    return false;
  if (d.head_dim <= 0 || d.head_dim > kMaxDecodeHeadDim || d.v_dim <= 0 ||
      d.v_dim > kMaxDecodeHeadDim || d.head_dim * bytes % 16 != 0)
    return false;
  if (d.num_seqs > 0x7fffffff || d.kv_heads * HeadChunks(d) > 65535)
    return false;
  // k_new's rows start at multiples of D elements from its base.
  return Aligned16(t.k_cache) && Aligned16(t.k_new);
}

int64_t DecodeAttentionScratchBytes(const PagedDims &d, const DecodeSplitPolicy &policy) {
  const int64_t splits = DecodeAttentionSplits(d, policy);
  if (splits <= 1)
    return 0;
  return d.num_seqs * d.kv_heads * HeadChunks(d) * splits * kHeads * RecordFloats(d.v_dim) *
         static_cast<int64_t>(sizeof(float));
}

cudaError_t DecodeAttention(FusedFloat type, const PagedTensors &t, const PagedIndexArrays &idx,
                            const PagedDims &dims, float scale, DecodeMode mode, void *scratch,
                            cudaStream_t stream, const DecodeSplitPolicy &policy) {
  if (!DecodeAttentionSupported(type, dims, t) || !PolicyValid(policy))
    return cudaErrorInvalidValue;
  if (dims.num_seqs == 0 || dims.tokens == 0 || dims.q_heads == 0)
    return cudaSuccess;
  DecodeArgs a{t.q,
               t.k_new,
               t.v_new,
               t.k_cache,
               t.v_cache,
               t.out,
               idx,
               dims,
               scale,
               HeadChunks(dims),
               DecodeAttentionSplits(dims, policy),
               nullptr,
               mode == DecodeMode::kAllSequences};
  if (a.splits > 1)
    a.partials = static_cast<float *>(scratch);
  switch (type) {
  case FusedFloat::kF32:
    return LaunchTyped<float>(a, stream);
  case FusedFloat::kF16:
    return LaunchTyped<__half>(a, stream);
  case FusedFloat::kBF16:
    return LaunchTyped<__nv_bfloat16>(a, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
