// kernels/cuda/products_gemv.h refuses arguments outside its contract before it
// touches a device, so these run on any machine. Its results are checked
// against the CPU by the op oracle's gemv cases (cases_gemv.cpp) on a GPU.
#include "kernels/cuda/products_gemv.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace kiln {
namespace {

using kernels::cuda::Activation;
using kernels::cuda::FloatElem;
using kernels::cuda::Gemv;
using kernels::cuda::GemvArgs;

// A valid 2 x 8 by 8 x 4 product; the pointers are never dereferenced.
GemvArgs Valid(std::vector<uint16_t> &x, std::vector<uint16_t> &w, std::vector<uint16_t> &y) {
  GemvArgs a;
  a.t = FloatElem::kBF16;
  a.m = 2;
  a.n = 4;
  a.k = 8;
  a.x = x.data();
  a.ldx = 8;
  a.w = w.data();
  a.ldw = 8; // room for a gated product's gate and up columns
  a.y = y.data();
  a.ldy = 4;
  return a;
}

TEST(Gemv, RefusesArgumentsOutsideItsContract) {
  std::vector<uint16_t> x(16), w(64), y(8);
  const std::vector<void (*)(GemvArgs &)> breaks = {
      [](GemvArgs &a) { a.m = 0; },
      [](GemvArgs &a) { a.m = kernels::cuda::kGemvMaxRows + 1; },
      [](GemvArgs &a) { a.n = 0; },
      [](GemvArgs &a) { a.k = 0; },
      [](GemvArgs &a) { a.t = FloatElem::kF64; },
      [](GemvArgs &a) { a.x = nullptr; },
      [](GemvArgs &a) { a.w = nullptr; },
      [](GemvArgs &a) { a.y = nullptr; },
      [](GemvArgs &a) { a.ldx = 7; },
      [](GemvArgs &a) { a.ldy = 3; },
      [](GemvArgs &a) { a.ldw = 3; },
      // gated: w holds 2n columns, no bias, and a nonlinearity.
      [](GemvArgs &a) {
        a.gated = true;
        a.act = Activation::kSilu;
        a.ldw = 7;
      },
      [](GemvArgs &a) {
        a.gated = true;
        a.act = Activation::kSilu;
        a.bias = a.w;
      },
      [](GemvArgs &a) {
        a.gated = true;
        a.act = Activation::kNone;
      },
      [](GemvArgs &a) {
        a.gated = true;
        a.act = Activation::kRelu;
      },
  };
  for (size_t i = 0; i < breaks.size(); ++i) {
    GemvArgs a = Valid(x, w, y);
    breaks[i](a);
    EXPECT_EQ(Gemv(a, nullptr), cudaErrorInvalidValue) << "case " << i;
  }
}

} // namespace
} // namespace kiln
