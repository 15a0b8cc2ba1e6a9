// Broadcasting binary ops, comparisons, logic, Max/Min and Where against
// per-element references.
#include "test_util.h"

#include <cmath>
#include <functional>

namespace kiln::test {
namespace {

template <typename T, typename R>
std::vector<R> Reference(const Tensor &a, const Tensor &b, const Shape &out,
                         const std::function<R(T, T)> &f) {
  std::vector<R> r(static_cast<size_t>(NumElements(out)));
  for (int64_t i = 0; i < NumElements(out); ++i) {
    const auto idx = Unravel(i, out);
    r[i] = f(a.data<T>()[BroadcastIndex(idx, a.shape)], b.data<T>()[BroadcastIndex(idx, b.shape)]);
  }
  return r;
}

template <typename T> void CheckArith(const std::string &op, std::function<T(T, T)> f,
                                      std::mt19937 &rng, double lo, double hi) {
  for (int trial = 0; trial < 60; ++trial) {
    const Shape out = RandomShape(rng, 0, 4, 5);
    Shape sa = BroadcastableTo(out, rng), sb = BroadcastableTo(out, rng);
    if (trial % 2) std::swap(sa, sb);
    // Make sure the result has the full shape: one operand keeps it.
    if (trial % 3 == 0) sa = out;
    Tensor a = Random<T>(sa, rng, lo, hi), b = Random<T>(sb, rng, lo, hi);
    auto got = RunOp(op, Attrs(), {&a, &b});
    ASSERT_TRUE(got.ok()) << got.status().message();
    Shape expect_shape;
    ASSERT_TRUE(kernels_shape_ok(sa, sb, &expect_shape));
    ASSERT_EQ((*got)[0].shape, expect_shape) << op;
    const auto ref = Reference<T, T>(a, b, expect_shape, f);
    const auto val = (*got)[0].values<T>();
    for (size_t i = 0; i < ref.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>) {
        ASSERT_NEAR(val[i], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << op << " at " << i;
      } else {
        ASSERT_EQ(val[i], ref[i]) << op << " at " << i;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::test
