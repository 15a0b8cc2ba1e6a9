#include "kernels/cuda/attention_paged.h"
#include "kernels/cuda/attention_tile.cuh"

namespace kiln::kernels::cuda {
namespace {

static_assert(kMaxPagedHeadDim == kMaxTileHeadDim);

constexpr int kScanThreads = 1024;

// ---- store ---------------------------------------------------------------

// Block t copies token t's key and value rows of every KV head (at the
// dims' row strides) into its slot; a negative or out-of-cache slot stores
// nothing.
template <typename T>
__global__ void StoreNewRows(const T *k_new, const T *v_new, T *k_cache, T *v_cache,
                             const int64_t *slots, PagedDims d) {
  for (int64_t t = blockIdx.x; t < d.tokens; t += gridDim.x) {
    const int64_t slot = slots[t];
    if (slot < 0 || slot / d.block_size >= d.num_blocks)
      continue;
    const int64_t blk = slot / d.block_size, off = slot % d.block_size;
    for (int64_t i = threadIdx.x; i < d.kv_heads * d.head_dim; i += blockDim.x) {
      const int64_t g = i / d.head_dim, e = i % d.head_dim;
      k_cache[((blk * d.kv_heads + g) * d.block_size + off) * d.head_dim + e] =
          k_new[(g * d.kv_head_stride + t * d.kv_token_stride) * d.head_dim + e];
    }
    for (int64_t i = threadIdx.x; i < d.kv_heads * d.v_dim; i += blockDim.x) {
      const int64_t g = i / d.v_dim, e = i % d.v_dim;
      v_cache[((blk * d.kv_heads + g) * d.block_size + off) * d.v_dim + e] =
          v_new[(g * d.kv_head_stride + t * d.kv_token_stride) * d.v_dim + e];
    }
  }
}

// ---- tile split ----------------------------------------------------------

// Sequence s's new tokens, or -1 when its indices are malformed (it is then
// skipped), or 0 when another launch attends it (a single new token with
// single_tokens_elsewhere): query_start within [0, T] and non-decreasing, the context at
// least the new tokens and within the block table.
__device__ int64_t NewTokens(const PagedIndexArrays &idx, const PagedDims &d, int64_t s) {
  const int64_t a = idx.query_start[s], b = idx.query_start[s + 1], ctx = idx.context_lens[s];
  if (a < 0 || b < a || b > d.tokens || ctx < b - a || ctx > d.max_blocks * d.block_size)
    return -1;
  if (d.single_tokens_elsewhere && b - a == 1)
    return 0;
  return b - a;
}

// tile_starts[s] = the first tile of sequence s, tile_starts[N] = the tile
// count: sequence s has ceil(n_s * G / kTileRows) tiles. One block scans the
// sequences kScanThreads at a time.
__global__ void __launch_bounds__(kScanThreads)
    SplitTiles(PagedIndexArrays idx, PagedDims d, int64_t *tile_starts) {
  __shared__ int64_t warp_sums[kScanThreads / 32];
  __shared__ int64_t carry;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int64_t group = d.q_heads / d.kv_heads;
  if (tid == 0)
    carry = 0;
  __syncthreads();
  for (int64_t base = 0; base < d.num_seqs; base += kScanThreads) {
    const int64_t s = base + tid;
    int64_t count = 0;
    if (s < d.num_seqs) {
      const int64_t n = NewTokens(idx, d, s);
      count = n > 0 ? (n * group + kTileRows - 1) / kTileRows : 0;
    }
    int64_t incl = count; // inclusive scan within the warp
    for (int o = 1; o < 32; o <<= 1) {
      const int64_t up = __shfl_up_sync(kFullMask, incl, o);
      if (lane >= o)
        incl += up;
    }
    if (lane == 31)
      warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      int64_t w = warp_sums[lane]; // kScanThreads / 32 == 32 warps
      for (int o = 1; o < 32; o <<= 1) {
        const int64_t up = __shfl_up_sync(kFullMask, w, o);
        if (lane >= o)
          w += up;
      }
      warp_sums[lane] = w;
    }
    __syncthreads();
    const int64_t before = carry + (warp > 0 ? warp_sums[warp - 1] : 0) + incl - count;
    if (s < d.num_seqs)
      tile_starts[s] = before;
    __syncthreads();
    if (tid == kScanThreads - 1)
      carry = before + count;
    __syncthreads();
  }
  if (tid == 0)
    tile_starts[d.num_seqs] = carry;
}

// ---- attention -----------------------------------------------------------

// Tile `tile` of sequence s for KV head g: its rows are the sequence's
// query rows (new token, head of the group) in token-major order, from
// tile * kTileRows. Keys are the sequence's positions, read through its
// block table.
struct PagedSource {
  PagedIndexArrays idx;
  PagedDims d;
  int64_t s, g, tile;

  __device__ TileRow Row(int r) const {
    const int64_t group = d.q_heads / d.kv_heads, rr = tile * kTileRows + r;
    const int64_t first = idx.query_start[s], end = idx.query_start[s + 1];
    TileRow row;
    if (rr >= (end - first) * group)
      return row;
    const int64_t t = first + rr / group, h = g * group + rr % group;
    row.q_row = h * d.q_head_stride + t * d.q_token_stride;
    row.limit = idx.context_lens[s] - (end - t); // p(t)
    row.first = WindowStart(row.limit, d.window);
    return row;
  }
  __device__ int64_t KeyRow(int64_t j) const {
    const int64_t blk = idx.block_tables[s * d.max_blocks + j / d.block_size];
    if (blk < 0 || blk >= d.num_blocks)
      return -1;
    return (blk * d.kv_heads + g) * d.block_size + j % d.block_size;
  }
};

// The tile of the batch that block x takes, or false past the last tile
// (the grid is sized for the most tiles any batch of these dims can have):
// the last sequence s with tile_starts[s] <= x, by binary search.
__device__ bool FindTile(const int64_t *tile_starts, const PagedIndexArrays &idx,
                         const PagedDims &d, PagedSource *src) {
  const int64_t x = blockIdx.x;
  if (x >= tile_starts[d.num_seqs])
    return false;
  int64_t lo = 0, hi = d.num_seqs - 1;
  while (lo < hi) {
    const int64_t mid = (lo + hi + 1) / 2;
    if (tile_starts[mid] <= x)
      lo = mid;
    else
      hi = mid - 1;
  }
  *src = PagedSource{idx, d, lo, static_cast<int64_t>(blockIdx.y), x - tile_starts[lo]};
  return true;
}

// Split keys: block (x, g, z) writes split z of tile x's keys to the
// partials, from index ((x * Hkv + g) * splits + z) * kTileRows records.
struct PagedSplits {
  int64_t count = 1;
  float *partials = nullptr; // null when count is 1
};

__device__ __forceinline__ float *PartialsOf(const PagedSplits &sp, const PagedDims &d, int64_t z) {
  const int64_t first = (blockIdx.x * d.kv_heads + blockIdx.y) * sp.count + z;
  return sp.partials + first * kTileRows * TilePartialFloats(d.v_dim);
}

// Block (x, g, z): split z of tile x for KV head g.
template <typename T, int kCols>
__global__ void __launch_bounds__(kTileThreads)
    PagedAttentionKernel(const T *q, const T *k_cache, const T *v_cache, T *out,
                         PagedIndexArrays idx, PagedDims d, float scale, const int64_t *tile_starts,
                         PagedSplits splits) {
  PagedSource src;
  if (!FindTile(tile_starts, idx, d, &src))
    return;
  TileSplit split;
  split.index = blockIdx.z;
  split.count = splits.count;
  split.partial = splits.count > 1 ? PartialsOf(splits, d, blockIdx.z) : nullptr;
  AttendTile<T, kCols>(src, q, k_cache, v_cache, out, static_cast<int>(d.head_dim),
                       static_cast<int>(d.v_dim), scale, d.softcap, TileMaskRef{}, split);
}

// Block (x, g): merges the splits of tile x for KV head g into out.
template <typename T>
__global__ void __launch_bounds__(kTileThreads)
    CombinePagedSplits(T *out, PagedIndexArrays idx, PagedDims d, const int64_t *tile_starts,
                       PagedSplits splits) {
  PagedSource src;
  if (!FindTile(tile_starts, idx, d, &src))
    return;
  CombineSplits(src, PartialsOf(splits, d, 0), splits.count, out, static_cast<int>(d.v_dim));
}

// The most tiles a batch can have: sum_s ceil(n_s G / R) <= T G / R + N.
int64_t MaxTiles(const PagedDims &d) {
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 0;
  return (d.tokens * group + kTileRows - 1) / kTileRows + d.num_seqs;
}

// Blocks that keep an H200 (132 SMs) busy: splits are added until a batch's
// tiles make about this many blocks.
constexpr int64_t kFillBlocks = 264;
// A split takes at least this many key tiles of the longest context the
// block tables allow (MB * BS keys).
constexpr int64_t kMinKeyTilesPerSplit = 4;

// How many blocks share each tile's keys; from the dims only, so the grid
// and scratch never depend on index values. 1 when the tiles alone fill the
// GPU (prefill) or contexts are short.
int64_t SplitCount(const PagedDims &d) {
  const int64_t blocks = MaxTiles(d) * d.kv_heads;
  if (blocks <= 0)
    return 1;
  const int64_t key_tiles = (d.max_blocks * d.block_size + kTileKeys - 1) / kTileKeys;
  int64_t n = (kFillBlocks + blocks - 1) / blocks;
  n = n < key_tiles / kMinKeyTilesPerSplit ? n : key_tiles / kMinKeyTilesPerSplit;
  return n < 1 ? 1 : n > 65535 ? 65535 : n;
}

// Scratch: tile_starts (N + 1 i64), then the partials (256-byte aligned).
int64_t TileStartsBytes(const PagedDims &d) {
  return ((d.num_seqs + 1) * static_cast<int64_t>(sizeof(int64_t)) + 255) / 256 * 256;
}
int64_t PartialBytes(const PagedDims &d, int64_t splits) {
  if (splits <= 1)
    return 0;
  return MaxTiles(d) * d.kv_heads * splits * kTileRows * TilePartialFloats(d.v_dim) *
         static_cast<int64_t>(sizeof(float));
}

template <typename T, int kCols>
cudaError_t LaunchAttention(const PagedTensors &t, const PagedIndexArrays &idx, const PagedDims &d,
                            float scale, const int64_t *tile_starts, const PagedSplits &splits,
                            cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(MaxTiles(d)), static_cast<unsigned>(d.kv_heads),
                  static_cast<unsigned>(splits.count));
  const int64_t smem = TileSharedBytes(d.head_dim, d.v_dim);
  auto *kernel = PagedAttentionKernel<T, kCols>;
  if (smem > kDefaultSharedBytes) {
    const cudaError_t err =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (err != cudaSuccess)
      return err;
  }
  kernel<<<grid, kTileThreads, smem, stream>>>(
      static_cast<const T *>(t.q), static_cast<const T *>(t.k_cache),
      static_cast<const T *>(t.v_cache), static_cast<T *>(t.out), idx, d, scale, tile_starts,
      splits);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess || splits.count == 1)
    return err;
  CombinePagedSplits<T><<<dim3(grid.x, grid.y), kTileThreads, 0, stream>>>(
      static_cast<T *>(t.out), idx, d, tile_starts, splits);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchStore(const PagedTensors &t, const PagedIndexArrays &idx, const PagedDims &d,
                        cudaStream_t stream) {
  if (d.tokens == 0 || d.kv_heads == 0)
    return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(d.tokens < (1 << 20) ? d.tokens : (1 << 20));
  StoreNewRows<T><<<grid, 128, 0, stream>>>(
      static_cast<const T *>(t.k_new), static_cast<const T *>(t.v_new), static_cast<T *>(t.k_cache),
      static_cast<T *>(t.v_cache), idx.slots, d);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchTyped(const PagedTensors &t, const PagedIndexArrays &idx, const PagedDims &d,
                        float scale, void *scratch, cudaStream_t stream) {
  if (const cudaError_t err = LaunchStore<T>(t, idx, d, stream); err != cudaSuccess)
    return err;
  if (d.tokens == 0 || d.num_seqs == 0 || d.q_heads == 0 || d.v_dim == 0)
    return cudaSuccess;
  int64_t *tile_starts = static_cast<int64_t *>(scratch);
  PagedSplits splits;
  splits.count = SplitCount(d);
  if (splits.count > 1)
    splits.partials = reinterpret_cast<float *>(static_cast<char *>(scratch) + TileStartsBytes(d));
  SplitTiles<<<1, kScanThreads, 0, stream>>>(idx, d, tile_starts);
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return err;
  if (d.v_dim <= kTileThreads)
    return LaunchAttention<T, 1>(t, idx, d, scale, tile_starts, splits, stream);
  if (d.v_dim <= 2 * kTileThreads)
    return LaunchAttention<T, 2>(t, idx, d, scale, tile_starts, splits, stream);
  return LaunchAttention<T, 4>(t, idx, d, scale, tile_starts, splits, stream);
}

} // namespace

bool PagedAttentionSupported(const PagedDims &d) {
  return d.head_dim <= kMaxTileHeadDim && d.v_dim <= kMaxTileHeadDim && d.kv_heads <= 65535 &&
         MaxTiles(d) <= 0x7fffffff;
}

int64_t PagedAttentionScratchBytes(const PagedDims &d) {
  return TileStartsBytes(d) + PartialBytes(d, SplitCount(d));
}

cudaError_t PagedAttention(FusedFloat type, const PagedTensors &t, const PagedIndexArrays &idx,
                           const PagedDims &dims, float scale, void *scratch, cudaStream_t stream) {
  if (!PagedAttentionSupported(dims))
    return cudaErrorInvalidValue;
  switch (type) {
  case FusedFloat::kF32:
    return LaunchTyped<float>(t, idx, dims, scale, scratch, stream);
  case FusedFloat::kF16:
    return LaunchTyped<__half>(t, idx, dims, scale, scratch, stream);
  case FusedFloat::kBF16:
    return LaunchTyped<__nv_bfloat16>(t, idx, dims, scale, scratch, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t PagedStore(FusedFloat type, const PagedTensors &t, const PagedIndexArrays &idx,
                       const PagedDims &dims, cudaStream_t stream) {
  if (!PagedAttentionSupported(dims))
    return cudaErrorInvalidValue;
  switch (type) {
  case FusedFloat::kF32:
    return LaunchStore<float>(t, idx, dims, stream);
  case FusedFloat::kF16:
    return LaunchStore<__half>(t, idx, dims, stream);
  case FusedFloat::kBF16:
    return LaunchStore<__nv_bfloat16>(t, idx, dims, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
