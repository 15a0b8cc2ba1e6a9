#include "kernels/cpu/products_moe.h"

#include "kernels/cpu/products_gemm.h"
#include "kernels/cpu/products_mlp.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace kiln::kernels {

void MoeRoute(const float *x, const float *router_w, const MoeDims &d, int32_t *expert,
              float *weight) {
  const int64_t E = d.experts, K = d.top_k;
  std::vector<float> logits(static_cast<size_t>(d.rows * E));
  // logits[rows, E] = x[rows, H] @ router_w[H, E]
  Gemm<float>(false, false, d.rows, E, d.hidden, 1.0f, x, d.hidden, router_w, E, 0.0f,
              logits.data(), E);
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t r = 0; r < d.rows; ++r) {
    float *p = logits.data() + r * E;
    const float best = *std::max_element(p, p + E);
    float sum = 0;
    for (int64_t e = 0; e < E; ++e) {
      p[e] = std::exp(p[e] - best);
      sum += p[e];
    }
    for (int64_t e = 0; e < E; ++e) {
      p[e] /= sum;
      order[e] = static_cast<int32_t>(e);
    }
    // The K most probable, ties to the lower index (the order TopK gives).
    std::partial_sort(order.begin(), order.begin() + K, order.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    float picked = 0;
    for (int64_t k = 0; k < K; ++k)
      picked += p[order[k]];
    for (int64_t k = 0; k < K; ++k) {
      expert[r * K + k] = order[k];
      weight[r * K + k] = d.normalize ? p[order[k]] / picked : p[order[k]];
    }
  }
}

void Moe(const float *x, const float *router_w, const float *w_gate_up, const float *w_down,
         float *y, const MoeDims &d, Activation act) {
  const int64_t H = d.hidden, F = d.ffn, K = d.top_k;
  std::fill(y, y + d.rows * H, 0.0f);
  if (d.rows == 0)
    return;
  std::vector<int32_t> expert(static_cast<size_t>(d.rows * K));
  std::vector<float> weight(static_cast<size_t>(d.rows * K));
  MoeRoute(x, router_w, d, expert.data(), weight.data());
  // The (row, weight) pairs of each expert, in row order.
  std::vector<std::vector<std::pair<int64_t, float>>> routed(static_cast<size_t>(d.experts));
  for (int64_t r = 0; r < d.rows; ++r)
    for (int64_t k = 0; k < K; ++k)
      routed[expert[r * K + k]].emplace_back(r, weight[r * K + k]);
  std::vector<float> xs, ys, scratch;
  for (int64_t e = 0; e < d.experts; ++e) {
    const auto &pairs = routed[e];
    const int64_t n = static_cast<int64_t>(pairs.size());
    if (n == 0)
      continue; // an expert no row picked does no work
    xs.resize(static_cast<size_t>(n * H));
    ys.resize(static_cast<size_t>(n * H));
    scratch.resize(static_cast<size_t>(GatedMlpScratchSize(n, F)));
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(xs.data() + i * H, x + pairs[i].first * H, static_cast<size_t>(H) * sizeof(float));
    // Expert e's matrices, at the bytes their stored element type puts them.
    const auto at = [&](const float *w, int64_t elems) {
      return reinterpret_cast<const float *>(reinterpret_cast<const char *>(w) +
                                             e * elems * d.weight_elem_bytes);
    };
    GatedMlp(xs.data(), at(w_gate_up, H * 2 * F), at(w_down, F * H), scratch.data(), ys.data(), n,
             H, F, H, act);
    for (int64_t i = 0; i < n; ++i) {
      float *out = y + pairs[i].first * H;
      const float w = pairs[i].second;
      const float *src = ys.data() + i * H;
      for (int64_t c = 0; c < H; ++c)
        out[c] += w * src[c];
    }
  }
}

} // namespace kiln::kernels
