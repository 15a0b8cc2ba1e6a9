// Int8 x int8 products (W8A8): rows of A quantized per row to uint8 with a
// +128 offset, times a weight packed as kI8x4 (packed_matrix.h), summed in
// int32 (AVX-512 VNNI's vpdpbusd where the CPU has it, else AVX2's
// vpmaddubsw where the weights allow, else plain loops)
// and scaled to f32 once per element of C.
#pragma once

#include "kernels/cpu/products_packed_matrix.h"

#include <cstdint>

namespace kiln::kernels {

// The deepest product Int8Gemm takes exactly: every int32 sum it forms
// (255 * 127 * k at most) stays below 2^31. A precondition, checked by the
// caller (Int8Gemm does not check it).
inline constexpr int64_t kInt8GemmMaxDepth = 65536;

// k rounded up to a multiple of 4: the length of a quantized row.
int64_t QuantizedDepth(int64_t k);

// Quantizes rows of A (m rows of k floats, leading dim lda) symmetrically
// per row: s = max|a_row| / 127, q = nearbyint(a / s) (the current rounding
// mode, round-half-even by default) clamped to [-127, 127], stored as the
// byte q + 128 (1..255). A row of zeros gets s = 0 and bytes 128. A row
// holding NaN or an infinity gets s = NaN and bytes 128, so its row of C
// is NaN. aq is m x QuantizedDepth(k) bytes (row stride QuantizedDepth(k));
// its padding bytes (k..QuantizedDepth(k)) are 128. a_scale gets s per row.
void QuantizeRows(const float *a, int64_t m, int64_t k, int64_t lda, uint8_t *aq, float *a_scale);

// C[i][j] = a_scale[i] * scales[j] * sum_p (aq[i][p] - 128) * q[p][j] for
// B of kind kI8x4 (nothing written for another kind): the sum exact in
// int32 (computed as dot(aq, q) - 128 * col_sums[j]), converted to f32 and
// multiplied by the f32 product a_scale[i] * scales[j]. aq as QuantizeRows
// writes it (row stride QuantizedDepth(b.k())). Precondition: b.k() <=
// kInt8GemmMaxDepth. Writes (never reads) the first b.n() columns of each
// of C's m rows (leading dim ldc). Threads take whole panels. The AVX-512
// VNNI path where the CPU has avx512f, avx512bw and avx512vnni, else the
// AVX2 one where it takes b, else the portable one.
void Int8Gemm(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b, float *c,
              int64_t ldc);

// Int8Gemm's AVX2 path (int8_gemm_avx2.cpp), for CPUs without VNNI:
// whether it takes b (the CPU has AVX2, b is kI8x4 and holds no -128, whose
// negation its products cannot form), and the product, the same bit for
// bit as the other paths (the portable loops where it does not take b).
bool Int8GemmAvx2Takes(const PackedMatrix &b);
void Int8GemmAvx2(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                  float *c, int64_t ldc);

// Int8Gemm's plain-loop path, declared so that tests check it on every CPU.
// Same results as the VNNI path, bit for bit.
void Int8GemmPortable(int64_t m, const uint8_t *aq, const float *a_scale, const PackedMatrix &b,
                      float *c, int64_t ldc);

} // namespace kiln::kernels
