// The weight conversions of kiln-convert-float-type against two references:
// numpy's float16 cast (a table), and LLVM's APFloat, an independent
// round-to-nearest-even implementation, over a sweep of f32 bit patterns.
#include "passes/HalfFloat.h"

#include "llvm/ADT/APFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace {

float FromBits(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

uint16_t ApFloatBits(float f, const llvm::fltSemantics &semantics) {
  llvm::APFloat v(f);
  bool loses = false;
  (void)v.convert(semantics, llvm::APFloat::rmNearestTiesToEven, &loses);
  return static_cast<uint16_t>(v.bitcastToAPInt().getZExtValue());
}

bool HalfIsNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }
bool BFloat16IsNaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0; }

// Made with numpy 1.26: np.array([x], np.uint32).view(np.float32)
// .astype(np.float16).view(np.uint16). Ties at 1 + 2^-11, the largest
// finite half and the overflow boundary (65520), subnormals and the 2^-25
// tie to zero, f32 subnormals, and a few ordinary values.
const struct {
  uint32_t f32;
  uint16_t f16;
} kNumpyFloat16[] = {
    {0x00000000u, 0x0000}, {0x80000000u, 0x8000}, {0x3f800000u, 0x3c00}, {0x3f801000u, 0x3c00},
    {0x3f802000u, 0x3c01}, {0x3f803000u, 0x3c02}, {0x3f800fffu, 0x3c00}, {0x3f801001u, 0x3c01},
    {0x477fe000u, 0x7bff}, {0x477fefffu, 0x7bff}, {0x477ff000u, 0x7c00}, {0x47800000u, 0x7c00},
    {0x7f7fffffu, 0x7c00}, {0x7f800000u, 0x7c00}, {0xff800000u, 0xfc00}, {0x33000000u, 0x0000},
    {0x33000001u, 0x0001}, {0x32ffffffu, 0x0000}, {0x33800000u, 0x0001}, {0x337fffffu, 0x0001},
    {0x38800000u, 0x0400}, {0x387fc000u, 0x03ff}, {0x387fe000u, 0x0400}, {0x387ff000u, 0x0400},
    {0x38801000u, 0x0400}, {0x00000001u, 0x0000}, {0x807fffffu, 0x8000}, {0xc0490fdbu, 0xc248},
    {0x3eaaaaabu, 0x3555}, {0x42f6e979u, 0x57b7}, {0xc77fffffu, 0xfc00}, {0x33c00000u, 0x0002},
    {0x34200000u, 0x0002}, {0x38000000u, 0x0200},
};

TEST(HalfFloat, MatchesNumpyFloat16) {
  for (const auto &c : kNumpyFloat16)
    EXPECT_EQ(kiln::floatToHalfBits(FromBits(c.f32)), c.f16) << std::hex << c.f32;
}

TEST(HalfFloat, NaNStaysNaN) {
  for (uint32_t nan : {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7f801000u, 0x7fffffffu}) {
    EXPECT_TRUE(HalfIsNaN(kiln::floatToHalfBits(FromBits(nan)))) << std::hex << nan;
    EXPECT_TRUE(BFloat16IsNaN(kiln::floatToBFloat16Bits(FromBits(nan)))) << std::hex << nan;
    EXPECT_EQ(kiln::floatToHalfBits(FromBits(nan)) & 0x8000, (nan >> 16) & 0x8000);
  }
}

TEST(HalfFloat, BFloat16Edges) {
  EXPECT_EQ(kiln::floatToBFloat16Bits(1.0f), 0x3f80);
  EXPECT_EQ(kiln::floatToBFloat16Bits(FromBits(0x3f808000u)), 0x3f80); // tie, even stays
  EXPECT_EQ(kiln::floatToBFloat16Bits(FromBits(0x3f818000u)), 0x3f82); // tie, odd rounds up
  EXPECT_EQ(kiln::floatToBFloat16Bits(FromBits(0x3f808001u)), 0x3f81);
  EXPECT_EQ(kiln::floatToBFloat16Bits(FromBits(0x7f7fffffu)), 0x7f80); // FLT_MAX -> inf
  EXPECT_EQ(kiln::floatToBFloat16Bits(FromBits(0xff7fffffu)), 0xff80);
  EXPECT_EQ(kiln::floatToBFloat16Bits(FromBits(0x7f7f7fffu)), 0x7f7f); // stays finite
  EXPECT_EQ(kiln::floatToBFloat16Bits(-0.0f), 0x8000);
}

// Every 257th f32 pattern (about 16.7M values, all exponents and both
// signs) against APFloat; NaNs need only stay NaN.
TEST(HalfFloat, MatchesApFloatOnASweep) {
  int64_t mismatches = 0;
  for (uint64_t x = 0; x <= 0xffffffffull; x += 257) {
    float f = FromBits(static_cast<uint32_t>(x));
    uint16_t h = kiln::floatToHalfBits(f), b = kiln::floatToBFloat16Bits(f);
    if (std::isnan(f)) {
      mismatches += !HalfIsNaN(h) + !BFloat16IsNaN(b);
      continue;
    }
    uint16_t wantH = ApFloatBits(f, llvm::APFloat::IEEEhalf());
    uint16_t wantB = ApFloatBits(f, llvm::APFloat::BFloat());
    if ((h != wantH || b != wantB) && ++mismatches <= 5)
      ADD_FAILURE() << std::hex << "f32 0x" << x << ": f16 0x" << h << " want 0x" << wantH
                    << ", bf16 0x" << b << " want 0x" << wantB;
  }
  EXPECT_EQ(mismatches, 0);
}

// A finite value past the type's range saturates to its largest finite
// value (finfo(float32).min becomes finfo(half).min); inf, NaN and values in
// range pass through, so converting after saturating is the plain conversion
// everywhere but where it would have made inf of a finite value.
TEST(HalfFloat, SaturateKeepsFiniteValuesFinite) {
  const float fmax = FromBits(0x7f7fffffu), inf = FromBits(0x7f800000u);
  EXPECT_EQ(kiln::halfMax(false), 65504.0f);
  EXPECT_EQ(kiln::floatToBFloat16Bits(kiln::halfMax(true)), 0x7f7f);
  for (bool bf16 : {false, true}) {
    const float max = kiln::halfMax(bf16);
    EXPECT_EQ(kiln::saturateToHalf(fmax, bf16), max);
    EXPECT_EQ(kiln::saturateToHalf(-fmax, bf16), -max);
    EXPECT_EQ(kiln::saturateToHalf(max, bf16), max);
    EXPECT_EQ(kiln::saturateToHalf(-1.5f, bf16), -1.5f);
    EXPECT_EQ(kiln::saturateToHalf(inf, bf16), inf);
    EXPECT_EQ(kiln::saturateToHalf(-inf, bf16), -inf);
    EXPECT_TRUE(std::isnan(kiln::saturateToHalf(FromBits(0x7fc00000u), bf16)));
  }
  EXPECT_EQ(kiln::floatToHalfBits(kiln::saturateToHalf(-fmax, false)), 0xfbff);
  EXPECT_EQ(kiln::floatToHalfBits(kiln::saturateToHalf(65520.0f, false)), 0x7bff);
  EXPECT_EQ(kiln::floatToBFloat16Bits(kiln::saturateToHalf(-fmax, true)), 0xff7f);
  EXPECT_EQ(kiln::floatToBFloat16Bits(kiln::saturateToHalf(65520.0f, true)), 0x4780);
}

TEST(HalfFloat, ConvertFloatsPicksTheType) {
  const float src[3] = {1.0f, -2.5f, 65520.0f};
  uint16_t half[3], bf[3];
  kiln::convertFloats(src, half, 3, /*bfloat16=*/false);
  kiln::convertFloats(src, bf, 3, /*bfloat16=*/true);
  EXPECT_EQ(half[0], 0x3c00);
  EXPECT_EQ(half[1], 0xc100);
  EXPECT_EQ(half[2], 0x7c00);
  EXPECT_EQ(bf[0], 0x3f80);
  EXPECT_EQ(bf[1], 0xc020);
  EXPECT_EQ(bf[2], 0x4780);
}

} // namespace
