#include "kernels/cuda/attention.h"
#include "kernels/cuda/attention_tile.cuh"

namespace kiln::kernels::cuda {
namespace {

static_assert(kMaxDenseHeadDim == kMaxTileHeadDim);

// Rows of one (batch b, KV head g): the G = Hq / Hkv query heads of the
// group at every query position, position-major (row = i * G + head in
// group); block x takes rows [x * kTileRows, ...).
struct DenseSource {
  DenseAttentionDims dims;
  DenseMask mask;
  bool causal;
  int64_t b, g, first;

  __device__ TileRow Row(int r) const {
    const int64_t group = dims.q_heads / dims.kv_heads, rr = first + r;
    TileRow row;
    if (rr >= dims.q_len * group)
      return row;
    const int64_t i = rr / group, h = g * group + rr % group;
    row.q_row = (b * dims.q_heads + h) * dims.q_len + i;
    row.limit = dims.kv_len - 1;
    if (causal) {
      const int64_t last = i + dims.kv_len - dims.q_len;
      row.limit = last < row.limit ? last : row.limit;
    }
    row.mask_off = b * mask.strides[0] + h * mask.strides[1] + i * mask.strides[2];
    return row;
  }
  __device__ int64_t KeyRow(int64_t j) const {
    return j < dims.kv_len ? (b * dims.kv_heads + g) * dims.kv_len + j : -1;
  }
};

template <typename T, int kCols>
__global__ void __launch_bounds__(kTileThreads)
    DenseAttentionKernel(const T *q, const T *k, const T *v, T *out, DenseAttentionDims dims,
                         DenseMask mask, float scale, bool causal) {
  const DenseSource src{dims,       mask,
                        causal,     static_cast<int64_t>(blockIdx.z),
                        blockIdx.y, static_cast<int64_t>(blockIdx.x) * kTileRows};
  TileMaskRef m;
  m.kind = mask.kind == DenseMaskKind::kAdditive       ? TileMask::kAdditive
           : mask.kind == DenseMaskKind::kAdditiveF16  ? TileMask::kAdditiveF16
           : mask.kind == DenseMaskKind::kAdditiveBF16 ? TileMask::kAdditiveBF16
           : mask.kind == DenseMaskKind::kBool         ? TileMask::kBool
                                                       : TileMask::kNone;
  m.data = mask.data;
  m.key_stride = mask.strides[3];
  AttendTile<T, kCols>(src, q, k, v, out, static_cast<int>(dims.head_dim),
                       static_cast<int>(dims.v_dim), scale, dims.softcap, m, TileSplit{});
}

template <typename T, int kCols>
cudaError_t LaunchCols(const void *q, const void *k, const void *v, const DenseMask &mask,
                       void *out, const DenseAttentionDims &dims, float scale, bool causal,
                       cudaStream_t stream) {
  const int64_t rows = dims.q_len * (dims.q_heads / dims.kv_heads);
  const dim3 grid(static_cast<unsigned>((rows + kTileRows - 1) / kTileRows),
                  static_cast<unsigned>(dims.kv_heads), static_cast<unsigned>(dims.batch));
  const int64_t smem = TileSharedBytes(dims.head_dim, dims.v_dim);
  auto *kernel = DenseAttentionKernel<T, kCols>;
  if (smem > kDefaultSharedBytes) {
    const cudaError_t err =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (err != cudaSuccess)
      return err;
  }
  kernel<<<grid, kTileThreads, smem, stream>>>(static_cast<const T *>(q), static_cast<const T *>(k),
                                               static_cast<const T *>(v), static_cast<T *>(out),
                                               dims, mask, scale, causal);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchTyped(const void *q, const void *k, const void *v, const DenseMask &mask,
                        void *out, const DenseAttentionDims &dims, float scale, bool causal,
                        cudaStream_t stream) {
  if (dims.v_dim <= kTileThreads)
    return LaunchCols<T, 1>(q, k, v, mask, out, dims, scale, causal, stream);
  if (dims.v_dim <= 2 * kTileThreads)
    return LaunchCols<T, 2>(q, k, v, mask, out, dims, scale, causal, stream);
  return LaunchCols<T, 4>(q, k, v, mask, out, dims, scale, causal, stream);
}

} // namespace

bool DenseAttentionSupported(const DenseAttentionDims &d) {
  const int64_t rows = d.kv_heads > 0 ? d.q_len * (d.q_heads / d.kv_heads) : 0;
  return d.head_dim <= kMaxTileHeadDim && d.v_dim <= kMaxTileHeadDim && d.kv_heads <= 65535 &&
         d.batch <= 65535 && (rows + kTileRows - 1) / kTileRows <= 0x7fffffff;
}

cudaError_t DenseAttention(FusedFloat type, const void *q, const void *k, const void *v,
                           const DenseMask &mask, void *out, const DenseAttentionDims &dims,
                           float scale, bool causal, cudaStream_t stream) {
  if (!DenseAttentionSupported(dims))
    return cudaErrorInvalidValue;
  if (dims.batch == 0 || dims.q_heads == 0 || dims.q_len == 0 || dims.v_dim == 0)
    return cudaSuccess;
  switch (type) {
  case FusedFloat::kF32:
    return LaunchTyped<float>(q, k, v, mask, out, dims, scale, causal, stream);
  case FusedFloat::kF16:
    return LaunchTyped<__half>(q, k, v, mask, out, dims, scale, causal, stream);
  case FusedFloat::kBF16:
    return LaunchTyped<__nv_bfloat16>(q, k, v, mask, out, dims, scale, causal, stream);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
