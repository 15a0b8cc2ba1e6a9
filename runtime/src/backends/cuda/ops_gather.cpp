// CUDA kernels of the ops that read or write a tensor at index values:
// Gather (core/shapes/movement.cpp), GatherND and ScatterND
// (core/shapes/gather.cpp).
//
// Index operands in device memory are checked by the kernels as they read
// them (index_errors.h): a bad index is reported at the backend's next
// synchronization. Index operands that are host tensors are checked here
// first, with the CPU's messages, and nothing is enqueued when one is bad.
#include "backends/op_families.h"
#include "core/shapes/gather.h"
#include "core/shapes/operand_checks.h"
#include "cuda_kernels.h"
#include "cuda_util.h"
#include "index_errors.h"
#include "kernels/cuda/gather.h"
#include "movement_operands.h"

namespace kiln::cuda {
namespace {

namespace kc = kernels::cuda;

// Product of shape[begin, end).
int64_t Count(const Shape &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t d = begin; d < end; ++d)
    n *= shape[d];
  return n;
}

int64_t IndexAt(const TensorView &t, int64_t i) {
  return t.dtype == DType::kI32 ? t.as<const int32_t>()[i] : t.as<const int64_t>()[i];
}

// ---- Gather -------------------------------------------------------------

// Host indices: the CPU's check and message.
Status CheckHostGatherIndices(const TensorView &idx, int64_t axis, int64_t dim) {
  for (int64_t j = 0; j < idx.numel(); ++j) {
    const int64_t v = IndexAt(idx, j);
    if (v < -dim || v >= dim)
      return OpError("gather", "index " + std::to_string(v) + " (at position " + std::to_string(j) +
                                   ") is out of range for axis " + std::to_string(axis) +
                                   " of size " + std::to_string(dim));
  }
  return Status::Ok();
}

// The error record for index operands in device memory; null for host ones
// (already checked).
StatusOr<kc::IndexError *> ErrorRecordFor(ExecContext &ctx, const TensorView &idx) {
  if (idx.space == MemorySpace::kHost)
    return static_cast<kc::IndexError *>(nullptr);
  return DeviceIndexErrors(Stream(ctx));
}

Status RunGather(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("gather", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  const TensorView &idx = *in[1];
  if (idx.numel() == 0)
    return Status::Ok();
  if (idx.space == MemorySpace::kHost)
    KILN_RETURN_IF_ERROR(CheckHostGatherIndices(idx, axis, s[axis]));
  KILN_ASSIGN_OR_RETURN(kc::IndexError * error, ErrorRecordFor(ctx, idx));
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0, 1}));
  const int64_t row_bytes = Count(s, static_cast<size_t>(axis) + 1, s.size()) *
                            static_cast<int64_t>(DTypeSize(in[0]->dtype));
  KILN_CUDA_RETURN_IF_ERROR(kc::Gather(d[0], Count(s, 0, static_cast<size_t>(axis)), s[axis],
                                       row_bytes, d[1], idx.dtype == DType::kI32, idx.numel(),
                                       static_cast<int>(axis), out[0].data, error, Stream(ctx)));
  return Status::Ok();
}

// ---- GatherND, ScatterND ------------------------------------------------

// Host indices: the CPU's check and message ("index 7 (at [1, 0] of
// indices) is out of range for dim 1 of size 4 in data [3, 4]"), for
// tuples of k = indices.shape.back() values addressing data dims from
// `first_dim` on.
Status CheckHostTuples(const char *op, const TensorView &indices, const Shape &data,
                       size_t first_dim) {
  const int64_t k = indices.shape.back();
  const int64_t *idx = indices.as<const int64_t>();
  for (int64_t pos = 0; pos < indices.numel(); ++pos) {
    const size_t dim = first_dim + static_cast<size_t>(pos % k);
    const int64_t v = idx[pos];
    if (v >= -data[dim] && v < data[dim])
      continue;
    std::vector<int64_t> at;
    int64_t rest = pos;
    for (size_t d = indices.shape.size(); d-- > 0;) {
      at.insert(at.begin(), rest % indices.shape[d]);
      rest /= indices.shape[d];
    }
    return OpError(op, "index " + std::to_string(v) + " (at " + ShapeToString(at) +
                           " of indices) is out of range for dim " + std::to_string(dim) +
                           " of size " + std::to_string(data[dim]) + " in data " +
                           ShapeToString(data));
  }
  return Status::Ok();
}

Status TooManyIndexDims(const char *op, int64_t k) {
  return Unimplemented(std::string(op) + ": index tuples of " + std::to_string(k) +
                       " values are more than the " + std::to_string(kc::kMaxIndexDims) +
                       " the CUDA kernel takes");
}

Status RunGatherND(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const size_t b = static_cast<size_t>(attrs.Int("batch_dims", 0));
  const size_t m = static_cast<size_t>(is.back());
  if (m > static_cast<size_t>(kc::kMaxIndexDims))
    return TooManyIndexDims("gather_nd", static_cast<int64_t>(m));
  if (in[1]->numel() == 0)
    return Status::Ok();
  if (in[1]->space == MemorySpace::kHost)
    KILN_RETURN_IF_ERROR(CheckHostTuples("gather_nd", *in[1], s, b));
  KILN_ASSIGN_OR_RETURN(kc::IndexError * error, ErrorRecordFor(ctx, *in[1]));
  KILN_ASSIGN_OR_RETURN(DeviceOperands d, DeviceOperands::Make(ctx, in, {0, 1}));
  const int64_t row_bytes =
      Count(s, b + m, s.size()) * static_cast<int64_t>(DTypeSize(in[0]->dtype));
  KILN_CUDA_RETURN_IF_ERROR(kc::GatherND(d[0], Count(s, 0, b), s.data() + b, static_cast<int>(m),
                                         row_bytes, static_cast<const int64_t *>(d[1]),
                                         Count(is, b, is.size() - 1), static_cast<int>(b),
                                         out[0].data, error, Stream(ctx)));
  return Status::Ok();
}

kc::ScatterReduction KernelReduction(ScatterReduction r) {
  switch (r) {
  case ScatterReduction::kAdd:
    return kc::ScatterReduction::kAdd;
  case ScatterReduction::kMul:
    return kc::ScatterReduction::kMul;
  case ScatterReduction::kMax:
    return kc::ScatterReduction::kMax;
  case ScatterReduction::kMin:
    return kc::ScatterReduction::kMin;
  case ScatterReduction::kNone:
    break;
  }
  return kc::ScatterReduction::kNone;
}

// The kernel's element type of a reduction on dtype t (f16 and bf16 combine
// in float, as the CPU's does).
StatusOr<kc::ScatterType> ScatterTypeOf(DType t) {
  switch (t) {
  case DType::kF32:
    return kc::ScatterType::kF32;
  case DType::kF64:
    return kc::ScatterType::kF64;
  case DType::kI8:
    return kc::ScatterType::kI8;
  case DType::kU8:
    return kc::ScatterType::kU8;
  case DType::kI32:
    return kc::ScatterType::kI32;
  case DType::kI64:
    return kc::ScatterType::kI64;
  case DType::kF16:
    return kc::ScatterType::kF16Into32;
  case DType::kBF16:
    return kc::ScatterType::kBF16Into32;
  default:
    return Unimplemented(std::string("scatter_nd: no CUDA reduction for dtype ") + DTypeName(t));
  }
}

Status RunScatterND(ExecContext &ctx, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(ScatterReduction r, ScatterReductionOf(attrs));
  const kc::ScatterReduction reduction = KernelReduction(r);
  const DType t = in[0]->dtype;
  const Shape &s = in[0]->shape, &is = in[1]->shape;
  const size_t k = static_cast<size_t>(is.back());
  if (k > static_cast<size_t>(kc::kMaxIndexDims))
    return TooManyIndexDims("scatter_nd", static_cast<int64_t>(k));
  kc::ScatterType type = kc::ScatterType::kF32;
  if (reduction != kc::ScatterReduction::kNone) {
    KILN_ASSIGN_OR_RETURN(type, ScatterTypeOf(t));
  }
  // Check host indices before the copy, so a failed op leaves out untouched.
  if (in[1]->space == MemorySpace::kHost)
    KILN_RETURN_IF_ERROR(CheckHostTuples("scatter_nd", *in[1], s, 0));
  KILN_RETURN_IF_ERROR(CopyTensor(ctx, *in[0], out[0]));
  const int64_t n = Count(is, 0, is.size() - 1), inner = Count(s, k, s.size());
  if (n == 0)
    return Status::Ok();
  KILN_ASSIGN_OR_RETURN(kc::IndexError * error, ErrorRecordFor(ctx, *in[1]));
  // Half data with a reduction is combined in a float copy of out.
  const bool widen = type == kc::ScatterType::kF16Into32 || type == kc::ScatterType::kBF16Into32;
  const int64_t numel = out[0].numel();
  KILN_ASSIGN_OR_RETURN(
      DeviceOperands d,
      DeviceOperands::Make(ctx, in, {1, 2},
                           widen ? sizeof(float) * static_cast<uint64_t>(numel) : 0));
  const bool bf16 = t == DType::kBF16;
  void *target = out[0].data;
  if (widen) {
    target = d.extra();
    KILN_CUDA_RETURN_IF_ERROR(
        kc::HalfToFloat(out[0].data, bf16, static_cast<float *>(target), numel, Stream(ctx)));
  }
  KILN_CUDA_RETURN_IF_ERROR(kc::ScatterND(target, s.data(), static_cast<int>(k), inner,
                                          static_cast<const int64_t *>(d[1]), n, d[2], reduction,
                                          type, DTypeSize(t), error, Stream(ctx)));
  if (widen)
    KILN_CUDA_RETURN_IF_ERROR(
        kc::FloatToHalf(static_cast<const float *>(target), bf16, out[0].data, numel, Stream(ctx)));
  return Status::Ok();
}

} // namespace

void AddGatherKernels(std::vector<KernelDef> &table) { KILN_ADD_GATHER_KERNELS(table); }

} // namespace kiln::cuda
