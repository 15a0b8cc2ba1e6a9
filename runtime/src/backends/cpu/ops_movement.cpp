// CPU kernels of the data movement ops that reorder, select or replicate
// elements of any dtype: Transpose, Slice, Expand, Tile (all through a
// strided copy), Concat, Split and Trilu; their shape rules are in
// core/shapes/movement.cpp.
#include "backends/op_families.h"
#include "core/shapes/movement.h"
#include "cpu_kernels.h"
#include "kernels/cpu/movement.h"
#include "op_util.h"

namespace kiln::cpu {
namespace {

// Strides (in elements) that read `in` broadcast to `out` shape: 0 where the
// right-aligned input dim is 1 (or missing).
std::vector<int64_t> BroadcastStrides(const Shape &in, const Shape &out) {
  const std::vector<int64_t> s = ContiguousStrides(in);
  std::vector<int64_t> strides(out.size(), 0);
  const size_t lead = out.size() - in.size();
  for (size_t d = lead; d < out.size(); ++d)
    strides[d] = in[d - lead] == 1 ? 0 : s[d - lead];
  return strides;
}

// ---- Transpose ----------------------------------------------------------

Status RunTranspose(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, TransposePermutation(attrs, s.size()));
  const std::vector<int64_t> in_strides = ContiguousStrides(s);
  std::vector<int64_t> strides;
  for (int64_t p : perm)
    strides.push_back(in_strides[p]);
  kernels::StridedCopy(DTypeSize(in[0]->dtype), in[0]->data, out[0].shape, strides, out[0].data);
  return Status::Ok();
}

// ---- Slice --------------------------------------------------------------

Status RunSlice(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  KILN_ASSIGN_OR_RETURN(SliceView v, ResolveSlice(in));
  const size_t elem = DTypeSize(in[0]->dtype);
  if (NumElements(v.shape) == 0)
    return Status::Ok();
  kernels::StridedCopy(elem, in[0]->as<const char>() + v.offset * static_cast<int64_t>(elem),
                       v.shape, v.strides, out[0].data);
  return Status::Ok();
}

// ---- Expand, Tile -------------------------------------------------------

Status RunExpand(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  kernels::StridedCopy(DTypeSize(in[0]->dtype), in[0]->data, out[0].shape,
                       BroadcastStrides(in[0]->shape, out[0].shape), out[0].data);
  return Status::Ok();
}

Status RunTile(ExecContext &, const OpAttrs &, const Inputs &in, Outputs &out) {
  const SliceView view = TileView(in[0]->shape, out[0].shape);
  kernels::StridedCopy(DTypeSize(in[0]->dtype), in[0]->data, view.shape, view.strides, out[0].data);
  return Status::Ok();
}

// ---- Concat, Split ------------------------------------------------------

Status RunConcat(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const int64_t rank = static_cast<int64_t>(out[0].shape.size());
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis("concat", attrs.Int("axis", 0), rank));
  const int64_t outer = RowsBefore(out[0].shape, axis);
  std::vector<const void *> srcs;
  std::vector<int64_t> row_bytes;
  for (const TensorView *t : in) {
    srcs.push_back(t->data);
    row_bytes.push_back(RowBytesFrom(t->shape, axis, t->dtype));
  }
  kernels::Concat(srcs, row_bytes, outer, out[0].data);
  return Status::Ok();
}

Status RunSplit(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  KILN_ASSIGN_OR_RETURN(
      int64_t axis, NormalizeAxis("split", attrs.Int("axis", 0), static_cast<int64_t>(s.size())));
  const int64_t outer = RowsBefore(s, axis);
  std::vector<void *> dsts;
  std::vector<int64_t> row_bytes;
  for (TensorView &t : out) {
    dsts.push_back(t.data);
    row_bytes.push_back(RowBytesFrom(t.shape, axis, t.dtype));
  }
  kernels::Split(in[0]->data, outer, row_bytes, dsts);
  return Status::Ok();
}

// ---- Trilu --------------------------------------------------------------

Status RunTrilu(ExecContext &, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const Shape &s = in[0]->shape;
  int64_t k = 0;
  if (in.size() > 1 && in[1] != nullptr)
    k = *in[1]->as<const int64_t>();
  const int64_t rows = s[s.size() - 2], cols = s.back();
  const int64_t batch = rows * cols == 0 ? 0 : in[0]->numel() / (rows * cols);
  kernels::Trilu(DTypeSize(in[0]->dtype), in[0]->data, out[0].data, batch, rows, cols, k,
                 attrs.Int("upper", 1) != 0);
  return Status::Ok();
}

} // namespace

void AddMovementKernels(std::vector<KernelDef> &table) { KILN_ADD_MOVEMENT_KERNELS(table); }

} // namespace kiln::cpu
