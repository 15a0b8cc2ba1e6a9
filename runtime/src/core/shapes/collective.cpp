// Shape rules of all_reduce and all_gather: results as the collective
// leaves them on every rank.
#include "core/shapes/collective.h"

#include "core/shapes/operand_checks.h"
#include "core/shapes/shape_rules.h"

namespace kiln {

StatusOr<AllGatherSpec> ReadAllGather(const OpAttrs &attrs, const TensorView &x) {
  AllGatherSpec s;
  KILN_ASSIGN_OR_RETURN(s.axis, NormalizeAxis("all_gather", attrs.Int("axis", 0),
                                              static_cast<int64_t>(x.shape.size())));
  s.sizes = attrs.Ints("sizes");
  if (s.sizes.empty())
    return OpError("all_gather",
                   "needs `sizes`, each rank's extent along axis " + std::to_string(s.axis));
  for (int64_t v : s.sizes)
    if (v < 0)
      return OpError("all_gather", "a rank's size is " + std::to_string(v));
  for (int64_t i = 0; i < s.axis; ++i)
    s.outer *= x.shape[i];
  for (size_t i = static_cast<size_t>(s.axis) + 1; i < x.shape.size(); ++i)
    s.inner *= x.shape[i];
  return s;
}

StatusOr<AllGatherRun> PlanAllGather(const OpAttrs &attrs, const TensorView &x, int rank,
                                     int size) {
  AllGatherRun run;
  KILN_ASSIGN_OR_RETURN(run.spec, ReadAllGather(attrs, x));
  const AllGatherSpec &spec = run.spec;
  if (static_cast<int>(spec.sizes.size()) != size)
    return OpError("all_gather", "its sizes name " + std::to_string(spec.sizes.size()) +
                                     " ranks but the run has " + std::to_string(size) +
                                     (size == 1 ? " (run the plan with --tp N)" : ""));
  if (x.shape[spec.axis] != spec.sizes[rank])
    return OpError("all_gather", "rank " + std::to_string(rank) + "'s operand is " +
                                     ShapeToString(x.shape) + " but sizes[" + std::to_string(rank) +
                                     "] is " + std::to_string(spec.sizes[rank]));
  for (int64_t s : spec.sizes) {
    run.counts.push_back(spec.outer * s * spec.inner);
    run.total += s;
  }
  return run;
}

namespace {

Status InferAllReduce(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("all_reduce", in, 1, 1, out, 1, 1));
  KILN_RETURN_IF_ERROR(
      CheckDType("all_reduce", "x", *in[0], {DType::kF32, DType::kF16, DType::kBF16}));
  const std::string reduction = attrs.String("reduction", "sum");
  if (reduction != "sum")
    return OpError("all_reduce", "reduction '" + reduction + "' is not supported (only sum)");
  out[0] = {in[0]->dtype, in[0]->shape, nullptr};
  return Status::Ok();
}

Status InferAllGather(const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  KILN_RETURN_IF_ERROR(CheckArity("all_gather", in, 1, 1, out, 1, 1));
  KILN_ASSIGN_OR_RETURN(AllGatherSpec spec, ReadAllGather(attrs, *in[0]));
  int64_t total = 0;
  for (int64_t v : spec.sizes)
    total += v;
  Shape shape = in[0]->shape;
  shape[spec.axis] = total;
  out[0] = {in[0]->dtype, shape, nullptr};
  return Status::Ok();
}

} // namespace

void AddCollectiveShapeRules(std::vector<ShapeRule> &rules) {
  rules.push_back({"all_reduce", InferAllReduce});
  rules.push_back({"all_gather", InferAllGather});
}

} // namespace kiln
