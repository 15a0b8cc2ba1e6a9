#include "test_util.h"

#include "backends/cpu/cpu_backend.h"
#include "core/shape_table.h"

#include <memory>

namespace kiln::test {
namespace {

// The context the executor gives CPU kernels: the CPU backend's.
ExecContext &CpuContext() {
  static const std::unique_ptr<Backend> backend = cpu::CreateCpuBackend();
  return backend->context();
}

} // namespace

Status RunKernel(const std::string &type, const OpAttrs &attrs, const Inputs &in, Outputs &out) {
  const KernelDef *kernel = cpu::CpuKernels().Find(type);
  if (kernel == nullptr)
    return NotFound("no CPU kernel for op " + type);
  return kernel->run(CpuContext(), attrs, in, out);
}

StatusOr<std::vector<Tensor>> RunOp(const std::string &type, const OpAttrs &attrs,
                                    const std::vector<const Tensor *> &inputs, size_t num_outputs) {
  const ShapeRule *rule = FindShapeRule(type);
  if (rule == nullptr)
    return NotFound("no op " + type);
  std::vector<TensorView> views(inputs.size());
  std::vector<const TensorView *> in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr)
      continue;
    views[i] = inputs[i]->View();
    in[i] = &views[i];
  }
  std::vector<TensorView> out(num_outputs);
  KILN_RETURN_IF_ERROR(rule->infer(attrs, in, out));
  std::vector<Tensor> results;
  for (const TensorView &o : out) {
    results.emplace_back(o.dtype, o.shape);
    std::fill(results.back().bytes.begin(), results.back().bytes.end(), 0xFF);
  }
  for (size_t i = 0; i < out.size(); ++i)
    out[i].data = results[i].bytes.data();
  KILN_RETURN_IF_ERROR(RunKernel(type, attrs, in, out));
  return results;
}

Status InferOp(const std::string &type, const OpAttrs &attrs,
               const std::vector<const Tensor *> &inputs, std::vector<TensorView> *out,
               const std::vector<bool> &known) {
  const ShapeRule *rule = FindShapeRule(type);
  if (rule == nullptr)
    return NotFound("no op " + type);
  std::vector<TensorView> views(inputs.size());
  std::vector<const TensorView *> in(inputs.size(), nullptr);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr)
      continue;
    views[i] = inputs[i]->View();
    if (i < known.size() && !known[i])
      views[i].data = nullptr;
    in[i] = &views[i];
  }
  return rule->infer(attrs, in, *out);
}

bool NaiveBroadcast(const Shape &a, const Shape &b, Shape *out) {
  const size_t rank = std::max(a.size(), b.size());
  Shape pa(rank - a.size(), 1), pb(rank - b.size(), 1);
  pa.insert(pa.end(), a.begin(), a.end());
  pb.insert(pb.end(), b.begin(), b.end());
  out->assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    if (pa[d] != pb[d] && pa[d] != 1 && pb[d] != 1)
      return false;
    (*out)[d] = pa[d] == 1 ? pb[d] : pa[d];
  }
  return true;
}

Shape RandomShape(std::mt19937 &rng, int min_rank, int max_rank, int64_t max_dim) {
  const int rank = std::uniform_int_distribution<int>(min_rank, max_rank)(rng);
  Shape s(rank);
  for (auto &d : s)
    d = std::uniform_int_distribution<int64_t>(1, max_dim)(rng);
  return s;
}

Shape BroadcastableTo(const Shape &out, std::mt19937 &rng) {
  const size_t drop = std::uniform_int_distribution<size_t>(0, out.size())(rng);
  Shape s(out.begin() + drop, out.end());
  for (auto &d : s)
    if (rng() % 3 == 0)
      d = 1;
  return s;
}

void ExpectError(const Status &st, const std::vector<std::string> &fragments) {
  ASSERT_FALSE(st.ok()) << "expected an error containing '" << fragments[0] << "'";
  for (const std::string &f : fragments)
    EXPECT_NE(st.message().find(f), std::string::npos)
        << "message '" << st.message() << "' lacks '" << f << "'";
}

} // namespace kiln::test
