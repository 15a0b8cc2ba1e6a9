// f16/bf16 through ops whose kernels compute in f32 (backends/cpu/half_via_f32.h):
// results must equal the f32 computation rounded once to the half type.
#include "kernels/cpu/pointwise_cast.h"
#include "test_util.h"

namespace kiln::test {
namespace {

Tensor FromFloats(DType half, Shape shape, const std::vector<float> &v) {
  Tensor t(half, std::move(shape));
  auto *bits = t.data<uint16_t>();
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = half == DType::kF16 ? kernels::FloatToHalf(v[i]) : kernels::FloatToBFloat16(v[i]);
  return t;
}

float ToFloat(DType half, uint16_t b) {
  return half == DType::kF16 ? kernels::HalfToFloat(b) : kernels::BFloat16ToFloat(b);
}

TEST(HalfViaF32, BinaryAndMaxMatchRoundedF32Reference) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (DType half : {DType::kF16, DType::kBF16}) {
    std::vector<float> a(12), b(4);
    for (float &x : a) x = dist(rng);
    for (float &x : b) x = dist(rng);
    Tensor ta = FromFloats(half, {3, 4}, a), tb = FromFloats(half, {4}, b);
    for (const char *op : {"add", "mul", "max"}) {
      auto r = RunOp(op, OpAttrs(), {&ta, &tb}, 1);
      ASSERT_TRUE(r.ok()) << op << ": " << r.status().message();
      const Tensor &out = (*r)[0];
      ASSERT_EQ(out.dtype, half) << op;
      ASSERT_EQ(out.shape, (Shape{3, 4})) << op;
      for (int i = 0; i < 12; ++i) {
        // Inputs as the op saw them (already rounded to half), computed in f32.
        float x = ToFloat(half, ta.data<uint16_t>()[i]);
        float y = ToFloat(half, tb.data<uint16_t>()[i % 4]);
        float ref = std::string(op) == "add" ? x + y : std::string(op) == "mul" ? x * y
                                                                                 : std::max(x, y);
        uint16_t want = half == DType::kF16 ? kernels::FloatToHalf(ref)
                                            : kernels::FloatToBFloat16(ref);
        EXPECT_EQ(out.data<uint16_t>()[i], want) << op << " element " << i;
      }
    }
  }
}

TEST(HalfViaF32, ComparisonKeepsBoolOutput) {
  Tensor a = FromFloats(DType::kF16, {3}, {1.f, 2.f, 3.f});
  Tensor b = FromFloats(DType::kF16, {3}, {2.f, 2.f, 2.f});
  auto r = RunOp("less", OpAttrs(), {&a, &b}, 1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ((*r)[0].dtype, DType::kBool);
  EXPECT_EQ((*r)[0].values<uint8_t>(), (std::vector<uint8_t>{1, 0, 0}));
}

TEST(HalfViaF32, F32InputsAreUntouched) {
  Tensor a = Make<float>({2}, {1.5f, -2.f}), b = Make<float>({2}, {0.25f, 4.f});
  auto r = RunOp("add", OpAttrs(), {&a, &b}, 1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].dtype, DType::kF32);
  EXPECT_EQ((*r)[0].values<float>(), (std::vector<float>{1.75f, 2.f}));
}

}  // namespace
}  // namespace kiln::test
