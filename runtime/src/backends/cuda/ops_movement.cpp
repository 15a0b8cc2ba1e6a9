// CUDA kernels of the data movement ops that reorder, select, replicate or
// generate elements of any dtype (by element size): the reshape family and
// the generators of core/shapes/movement_shape.cpp, and Transpose, Slice, Expand,
// Tile, Concat, Split and Trilu of core/shapes/movement.cpp. The index ops are
// in ops_gather.cpp.
//
// Operands whose values the shape rule read (slice bounds, Trilu's k,
// Range's start and delta) may be device tensors at run time (a weight, a
// staged graph input): their kernels then read them on the device, so no op
// here waits for the host.
#include "backends/op_families.h"
#include "core/shapes/movement.h"
#include "core/shapes/movement_shape.h"
#include "core/shapes/operand_checks.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "kernels/cuda/movement.h"
#include "movement_operands.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;

// The copy of `shape` with `strides` from src + offset, through the device's
// strided copy; Unimplemented when too many dims remain after merging.
Status CopyView(ExecContext &ctx, const char *op, size_t elem, const void *src, int64_t offset,
                const Shape &shape, const std::vector<int64_t> &strides, void *dst) {
  kc::CopyDims dims;
  if (!kc::MakeCopyDims(elem, offset, static_cast<int>(shape.size()), shape.data(), strides.data(),
                        &dims))
    return Unimplemented(std::string(op) + ": a copy of shape " + ShapeToString(shape) +
                         " has more than " + std::to_string(kc::kMaxCopyDims) +
                         " dims the CUDA kernel can address");
  KILN_CUDA_RETURN_IF_ERROR(kc::StridedCopy(src, dims, dst, Stream(ctx)));
  return Status::Ok();
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze --------------------------------

Status RunCopy(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  return CopyTensor(ctx, *in[0], out[0]);
}

// ---- Shape, Size ------------------------------------------------------------

Status RunShape(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  int64_t start, end;
  ShapeRange(attrs, static_cast<int64_t>(in[0]->shape.size()), &start, &end);
  if (end <= start)
    return Status::Ok();
  KILN_CUDA_RETURN_IF_ERROR(
      kc::WriteInt64s(in[0]->shape.data() + start, end - start, out[0].as<int64_t>(), Stream(ctx)));
  return Status::Ok();
}

Status RunSize(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  const int64_t n = in[0]->numel();
  KILN_CUDA_RETURN_IF_ERROR(kc::WriteInt64s(&n, 1, out[0].as<int64_t>(), Stream(ctx)));
  return Status::Ok();
}

// ---- ConstantOfShape ----------------------------------------------------

// Float to integer as the CPU's Cast: truncation, saturation, NaN to 0.
template <typename I> I FloatToInt(double v) {
  if (std::isnan(v))
    return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min()))
    return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max()))
    return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

template <typename T> uint64_t Bits(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

// The fill value's bytes in dtype t, converted as the CPU's Cast converts
// an int64 (`is_int`) or a float value.
StatusOr<uint64_t> ValueBits(DType t, bool is_int, int64_t i, float f) {
  const double v = is_int ? static_cast<double>(i) : f;
  const float as_float = is_int ? static_cast<float>(i) : f;
  switch (t) {
  case DType::kF32:
    return Bits(as_float);
  case DType::kF64:
    return Bits(is_int ? static_cast<double>(i) : static_cast<double>(f));
  case DType::kF16:
    return Bits(__half_raw(__float2half_rn(as_float)).x);
  case DType::kBF16:
    return Bits(__nv_bfloat16_raw(__float2bfloat16_rn(as_float)).x);
  case DType::kI8:
    return Bits(is_int ? static_cast<int8_t>(i) : FloatToInt<int8_t>(v));
  case DType::kU8:
    return Bits(is_int ? static_cast<uint8_t>(i) : FloatToInt<uint8_t>(v));
  case DType::kI32:
    return Bits(is_int ? static_cast<int32_t>(i) : FloatToInt<int32_t>(v));
  case DType::kI64:
    return Bits(is_int ? i : FloatToInt<int64_t>(v));
  case DType::kBool:
    return Bits(static_cast<uint8_t>(is_int ? i != 0 : f != 0.0f)); // NaN is true
  default:
    return OpError("constant_of_shape", std::string("unsupported dtype ") + DTypeName(t));
  }
}

Status RunConstantOfShape(ExecContext &ctx, const OpAttrs &attrs, const Inputs &, Outputs &out) {
  auto it = attrs.all().find("value");
  const bool is_int = it != attrs.all().end() && it->second.kind == AttrValue::Kind::kInt;
  KILN_ASSIGN_OR_RETURN(uint64_t bits, ValueBits(out[0].dtype, is_int, is_int ? it->second.i : 0,
                                                 attrs.Float("value", 0.0f)));
  KILN_CUDA_RETURN_IF_ERROR(
      kc::FillPattern(DTypeSize(out[0].dtype), bits, out[0].data, out[0].numel(), Stream(ctx)));
  return Status::Ok();
}

// ---- Range --------------------------------------------------------------

// start and delta by value when they are host tensors, else by address.
template <typename T> Status LaunchRange(ExecContext &ctx, const Inputs &in, TensorView &out) {
  const TensorView &start = *in[0], &delta = *in[2];
  const bool host_start = start.space == MemorySpace::kHost;
  const bool host_delta = delta.space == MemorySpace::kHost;
  KILN_CUDA_RETURN_IF_ERROR(kc::Range<T>(
      host_start ? *start.as<const T>() : T{}, host_delta ? *delta.as<const T>() : T{},
      host_start ? nullptr : start.as<const T>(), host_delta ? nullptr : delta.as<const T>(),
      out.as<T>(), out.numel(), Stream(ctx)));
  return Status::Ok();
}

Status RunRange(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  if (out[0].numel() == 0)
    return Status::Ok();
  switch (out[0].dtype) {
  case DType::kF32:
    return LaunchRange<float>(ctx, in, out[0]);
  case DType::kF64:
    return LaunchRange<double>(ctx, in, out[0]);
  case DType::kI32:
    return LaunchRange<int32_t>(ctx, in, out[0]);
  case DType::kI64:
    return LaunchRange<int64_t>(ctx, in, out[0]);
  default:
    return OpError("range", std::string("unsupported dtype ") + DTypeName(out[0].dtype));
  }
}

// ---- Transpose ----------------------------------------------------------

Status RunTranspose(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, TransposePermutation(attrs, s.size()));
  const std::vector<int64_t> in_strides = ContiguousStrides(s);
  std::vector<int64_t> strides;
  for (int64_t p : perm)
    strides.push_back(in_strides[p]);
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0}));
  return CopyView(ctx, "transpose", DTypeSize(in[0]->dtype), d[0], 0, out[0].shape, strides,
                  out[0].data);
}

// ---- Slice --------------------------------------------------------------

bool AllOnHost(const Inputs &in, size_t first) {
  for (size_t i = first; i < in.size(); ++i)
    if (in[i] != nullptr && in[i]->space != MemorySpace::kHost && in[i]->numel() > 0)
      return false;
  return true;
}

Status RunSlice(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  if (out[0].numel() == 0)
    return Status::Ok();
  const size_t elem = DTypeSize(in[0]->dtype);
  if (AllOnHost(in, 1)) {
    KILN_ASSIGN_OR_RETURN(SliceView v, ResolveSlice(in));
    KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0}));
    return CopyView(ctx, "slice", elem, d[0], v.offset, v.shape, v.strides, out[0].data);
  }
  // Bounds in device memory: the view is resolved on the device.
  const Shape &s = in[0]->shape;
  const int rank = static_cast<int>(s.size());
  if (rank > kc::kMaxCopyDims)
    return Unimplemented("slice: data of rank " + std::to_string(rank) + " has more than " +
                         std::to_string(kc::kMaxCopyDims) + " dims the CUDA kernel can address");
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0, 1, 3, 4},
                                                               sizeof(int64_t) * (s.size() + 1)));
  kc::SliceBounds b;
  b.starts = d[1];
  b.starts_i32 = in[1]->dtype == DType::kI32;
  if (in.size() > 3 && in[3] != nullptr) {
    b.axes = d[3];
    b.axes_i32 = in[3]->dtype == DType::kI32;
  }
  if (in.size() > 4 && in[4] != nullptr) {
    b.steps = d[4];
    b.steps_i32 = in[4]->dtype == DType::kI32;
  }
  b.count = in[1]->numel();
  KILN_CUDA_RETURN_IF_ERROR(
      kc::SliceWithDeviceBounds(elem, d[0], rank, s.data(), out[0].shape.data(), b,
                                static_cast<int64_t *>(d.extra()), out[0].data, Stream(ctx)));
  return Status::Ok();
}

// ---- Expand, Tile -------------------------------------------------------

Status RunExpand(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  // Strides that read `in` broadcast to the result: 0 where the
  // right-aligned operand dim is 1 (or missing).
  const Shape &s = in[0]->shape, &o = out[0].shape;
  const std::vector<int64_t> in_strides = ContiguousStrides(s);
  std::vector<int64_t> strides(o.size(), 0);
  const size_t lead = o.size() - s.size();
  for (size_t d = lead; d < o.size(); ++d)
    strides[d] = s[d - lead] == 1 ? 0 : in_strides[d - lead];
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0}));
  return CopyView(ctx, "expand", DTypeSize(in[0]->dtype), d[0], 0, o, strides, out[0].data);
}

Status RunTile(ExecContext &ctx, const OpAttrs &, const Inputs &in, Outputs &out) {
  const SliceView view = TileView(in[0]->shape, out[0].shape);
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0}));
  return CopyView(ctx, "tile", DTypeSize(in[0]->dtype), d[0], 0, view.shape, view.strides,
                  out[0].data);
}

// ---- Concat, Split ------------------------------------------------------

// Rows of `width` bytes, `rows` of them, between buffers with row pitches
// `dpitch` and `spitch`: one 2-D copy on the stream.
Status CopyRows(ExecContext &ctx, void *dst, int64_t dpitch, const void *src, int64_t spitch,
                int64_t width, int64_t rows, cudaMemcpyKind kind) {
  if (width == 0 || rows == 0)
    return Status::Ok();
  if (rows == 1) {
    KILN_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(dst, src, static_cast<size_t>(width), kind, Stream(ctx)));
    return Status::Ok();
  }
  KILN_CUDA_RETURN_IF_ERROR(
      cudaMemcpy2DAsync(dst, static_cast<size_t>(dpitch), src, static_cast<size_t>(spitch),
                        static_cast<size_t>(width), static_cast<size_t>(rows), kind, Stream(ctx)));
  return Status::Ok();
}

Status RunConcat(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const int64_t rank = static_cast<int64_t>(out[0].shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis("concat", attrs.Int("axis", 0), rank));
  const int64_t outer = RowsBefore(out[0].shape, axis);
  const int64_t total = RowBytesFrom(out[0].shape, axis, out[0].dtype);
  char *dst = out[0].as<char>();
  int64_t col = 0;
  for (const TensorView *t : in) {
    const int64_t b = RowBytesFrom(t->shape, axis, t->dtype);
    KILN_RETURN_IF_ERROR(CopyRows(ctx, dst + col, total, t->data, b, b, outer, CopyKindFrom(*t)));
    col += b;
  }
  return Status::Ok();
}

Status RunSplit(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("split", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  const int64_t outer = RowsBefore(s, axis);
  const int64_t total = RowBytesFrom(s, axis, in[0]->dtype);
  const char *src = in[0]->as<const char>();
  // A device input: one launch for every part (a decode step splits each
  // layer's fused QKV product, where three copies cost three graph nodes).
  if (in[0]->space == MemorySpace::kDevice && out.size() <= kc::kMaxSplitParts) {
    kc::SplitPart parts[kc::kMaxSplitParts];
    int64_t col = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      const int64_t b = RowBytesFrom(out[k].shape, axis, out[k].dtype);
      parts[k] = {out[k].data, col, b};
      col += b;
    }
    KILN_CUDA_RETURN_IF_ERROR(
        kc::SplitColumns(src, total, outer, parts, static_cast<int>(out.size()), Stream(ctx)));
    return Status::Ok();
  }
  int64_t col = 0;
  for (TensorView &t : out) {
    const int64_t b = RowBytesFrom(t.shape, axis, t.dtype);
    KILN_RETURN_IF_ERROR(
        CopyRows(ctx, t.data, b, src + col, total, b, outer, CopyKindFrom(*in[0])));
    col += b;
  }
  return Status::Ok();
}

// ---- Trilu --------------------------------------------------------------

Status RunTrilu(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  const int64_t rows = s[s.size() - 2], cols = s.back();
  const int64_t batch = rows * cols == 0 ? 0 : in[0]->numel() / (rows * cols);
  if (batch == 0)
    return Status::Ok();
  int64_t k = 0;
  const int64_t *k_device = nullptr;
  const TensorView *kt = in.size() > 1 ? in[1] : nullptr;
  if (kt != nullptr && kt->space == MemorySpace::kHost)
    k = *kt->as<const int64_t>();
  else if (kt != nullptr)
    k_device = kt->as<const int64_t>();
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0}));
  KILN_CUDA_RETURN_IF_ERROR(kc::Trilu(DTypeSize(in[0]->dtype), d[0], out[0].data, batch, rows, cols,
                                      k, k_device, attrs.Int("upper", 1) != 0, Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddMovementKernels(std::vector<KernelDef> &table) {
  KILN_ADD_MOVEMENT_SHAPE_KERNELS(table);
  KILN_ADD_MOVEMENT_KERNELS(table);
}

} // namespace kiln::cuda
