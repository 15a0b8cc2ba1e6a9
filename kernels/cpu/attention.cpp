#include "kernels/cpu/attention.h"

#include "kernels/attention_scores.h"
#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/reduce_softmax.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace kiln::kernels {
namespace {

// Scores are computed for blocks of query rows at a time: [rows, Skv] floats
// at most about this many, so long sequences never need [Sq, Skv] at once.
constexpr int64_t kScoreBudget = int64_t{1} << 17;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Adds (or applies, for bool) one mask row to one score row.
void ApplyMaskRow(const AttentionMask &mask, int64_t offset, float *s, int64_t n) {
  const int64_t sj = mask.strides[3];
  if (mask.kind == MaskKind::kAdditive) {
    const float *m = static_cast<const float *>(mask.data) + offset;
    if (sj == 1) {
      for (int64_t j = 0; j < n; ++j)
        s[j] += m[j];
    } else {
      for (int64_t j = 0; j < n; ++j)
        s[j] += m[j * sj];
    }
  } else if (mask.kind == MaskKind::kBool) {
    const uint8_t *m = static_cast<const uint8_t *>(mask.data) + offset;
    if (sj == 1) {
      for (int64_t j = 0; j < n; ++j)
        s[j] = m[j] != 0 ? s[j] : kNegInf;
    } else {
      for (int64_t j = 0; j < n; ++j)
        s[j] = m[j * sj] != 0 ? s[j] : kNegInf;
    }
  }
}

} // namespace

void Attention(const float *q, const float *k, const float *v, const AttentionMask &mask,
               float *out, const AttentionDims &dims, float scale, bool causal, float softcap) {
  const int64_t sq = dims.q_len, skv = dims.kv_len, d = dims.head_dim, dv = dims.v_dim;
  if (dims.batch == 0 || dims.q_heads == 0 || sq == 0 || dims.kv_heads == 0)
    return;
  const int64_t group = dims.q_heads / dims.kv_heads;
  // The query heads sharing one KV head are adjacent in q and out, so a
  // group's queries are group * Sq contiguous rows: one GEMM covers them
  // (and turns MQA decoding into a real matrix product).
  const int64_t group_rows = group * sq;
  const int64_t block = std::clamp<int64_t>(kScoreBudget / std::max<int64_t>(skv, 1), 16, 4096);
  std::vector<float> scores(static_cast<size_t>(std::min(block, group_rows) * skv));
  std::vector<char> fully_masked;
  for (int64_t b = 0; b < dims.batch; ++b) {
    for (int64_t g = 0; g < dims.kv_heads; ++g) {
      const int64_t kv_index = b * dims.kv_heads + g;
      const float *kg = k + kv_index * skv * d;
      const float *vg = v + kv_index * skv * dv;
      const int64_t q_row0 = (b * dims.q_heads + g * group) * sq; // first row of the group
      for (int64_t r0 = 0; r0 < group_rows; r0 += block) {
        const int64_t m = std::min(block, group_rows - r0);
        float *s = scores.data();
        fully_masked.assign(static_cast<size_t>(m), 0);
        // s[m, Skv] = scale * Q[m, D] @ K^T
        Gemm<float>(false, true, m, skv, d, scale, q + (q_row0 + r0) * d, d, kg, d, 0.0f, s, skv);
        for (int64_t r = 0; r < m; ++r) {
          const int64_t h = g * group + (r0 + r) / sq, i = (r0 + r) % sq;
          float *row = s + r * skv;
          if (softcap > 0)
            for (int64_t j = 0; j < skv; ++j)
              row[j] = SoftCap(row[j], softcap);
          if (mask.kind != MaskKind::kNone)
            ApplyMaskRow(mask, b * mask.strides[0] + h * mask.strides[1] + i * mask.strides[2], row,
                         skv);
          if (causal) {
            // Keys after position i + (Skv - Sq) are in the query's future.
            const int64_t first_masked = std::clamp<int64_t>(i + (skv - sq) + 1, 0, skv);
            std::fill(row + first_masked, row + skv, kNegInf);
          }
          fully_masked[r] = std::all_of(row, row + skv, [](float x) { return x == kNegInf; });
        }
        Softmax<float>(s, s, m, skv, 1, false);
        // A query that may see no key attends to nothing: zeros, not NaN, so
        // padded positions cannot poison later layers through their values.
        for (int64_t r = 0; r < m; ++r)
          if (fully_masked[r])
            std::fill(s + r * skv, s + (r + 1) * skv, 0.0f);
        // out[m, Dv] = P[m, Skv] @ V[Skv, Dv]
        Gemm<float>(false, false, m, dv, skv, 1.0f, s, skv, vg, dv, 0.0f, out + (q_row0 + r0) * dv,
                    dv);
      }
    }
  }
}

} // namespace kiln::kernels
