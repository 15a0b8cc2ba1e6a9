// References of attention and paged attention (docs/fused-ops.md), as one
// softmax over each query's visible keys.
#include "references.h"

#include <cmath>

namespace kiln::oracle {
namespace {

// Gemma 2's soft-cap of a scaled score; cap 0: none.
double Cap(double s, double cap) { return cap > 0 ? cap * std::tanh(s / cap) : s; }

// sum_j softmax_j(scores) v_j over the keys with `visible[j]`; zeros when
// none is visible. v(j, e) is element e of value j.
void AttendRow(const std::vector<double> &scores, const std::vector<bool> &visible,
               const std::function<double(int64_t, int64_t)> &v, int64_t v_dim, double *out) {
  double max = -INFINITY;
  for (size_t j = 0; j < scores.size(); ++j)
    if (visible[j])
      max = std::max(max, scores[j]);
  for (int64_t e = 0; e < v_dim; ++e)
    out[e] = 0;
  if (max == -INFINITY)
    return;
  double sum = 0;
  for (size_t j = 0; j < scores.size(); ++j)
    if (visible[j])
      sum += std::exp(scores[j] - max);
  for (size_t j = 0; j < scores.size(); ++j)
    if (visible[j])
      for (int64_t e = 0; e < v_dim; ++e)
        out[e] += std::exp(scores[j] - max) / sum * v(static_cast<int64_t>(j), e);
}

// q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv], mask? (bool:
// keep where true; f32: added after the soft-cap), causal: key j hidden
// from query i when j > i + Skv - Sq.
std::vector<RefTensor> Attention(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor &q = *in[0], &k = *in[1], &v = *in[2];
  const RefTensor *mask = in.size() > 3 ? in[3] : nullptr;
  const bool bool_mask = mask && mask->dtype == DType::kBool;
  const double scale = attrs.Float("scale", 1);
  const bool causal = attrs.Int("causal", 0) != 0;
  const double cap = attrs.Float("softcap", 0);
  const int64_t b = q.shape[0], hq = q.shape[1], sq = q.shape[2], d = q.shape[3];
  const int64_t hkv = k.shape[1], skv = k.shape[2], dv = v.shape[3];
  RefTensor out{{b, hq, sq, dv}, std::vector<double>(static_cast<size_t>(b * hq * sq * dv))};
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h) {
      const int64_t g = h / (hq / hkv);
      for (int64_t i = 0; i < sq; ++i) {
        std::vector<double> scores(skv);
        std::vector<bool> visible(skv, true);
        for (int64_t j = 0; j < skv; ++j) {
          double s = 0;
          for (int64_t e = 0; e < d; ++e)
            s += q.v[((bi * hq + h) * sq + i) * d + e] * k.v[((bi * hkv + g) * skv + j) * d + e];
          scores[j] = Cap(s * scale, cap);
          if (mask) {
            const double m = mask->v[BroadcastIndex({bi, h, i, j}, mask->shape)];
            if (bool_mask)
              visible[j] = m != 0;
            else
              scores[j] += m;
          }
          if (causal && j > i + skv - sq)
            visible[j] = false;
        }
        AttendRow(
            scores, visible,
            [&](int64_t j, int64_t e) { return v.v[((bi * hkv + g) * skv + j) * dv + e]; }, dv,
            &out.v[((bi * hq + h) * sq + i) * dv]);
      }
    }
  return {out};
}

// Stores each new token's key and value at its slot, then attends each token
// to its own sequence's positions max(0, p(t) - window + 1)..p(t) through the
// block table (never reading the others), scores soft-capped. Returns the
// result, then both caches.
std::vector<RefTensor> PagedAttention(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor &q = *in[0], &kn = *in[1], &vn = *in[2];
  RefTensor kc = *in[3], vc = *in[4];
  const RefTensor &slots = *in[5], &qs = *in[6], &ctx = *in[7], &tables = *in[8];
  const double scale = attrs.Float("scale", 1), cap = attrs.Float("softcap", 0);
  const int64_t window = attrs.Int("window", 0);
  // layout "bshd": q, k_new, v_new and out are [1, T, H, *].
  const bool bshd = attrs.String("layout", "bhsd") == "bshd";
  const int64_t hq = q.shape[bshd ? 2 : 1], t_count = q.shape[bshd ? 1 : 2], d = q.shape[3];
  const int64_t hkv = kc.shape[1], bs = kc.shape[2], dv = vc.shape[3];
  // The row of head h, token t in a [1, H, T, *] or [1, T, H, *] operand.
  auto row = [&](int64_t h, int64_t t, int64_t heads) {
    return bshd ? t * heads + h : h * t_count + t;
  };
  const int64_t mb = tables.shape[1], n_seqs = tables.shape[0];
  auto cache_at = [&](int64_t block, int64_t g, int64_t off, int64_t dim) {
    return ((block * hkv + g) * bs + off) * dim;
  };
  for (int64_t t = 0; t < t_count; ++t) {
    const int64_t slot = static_cast<int64_t>(slots.v[t]);
    if (slot < 0)
      continue;
    for (int64_t g = 0; g < hkv; ++g) {
      for (int64_t e = 0; e < d; ++e)
        kc.v[cache_at(slot / bs, g, slot % bs, d) + e] = kn.v[row(g, t, hkv) * d + e];
      for (int64_t e = 0; e < dv; ++e)
        vc.v[cache_at(slot / bs, g, slot % bs, dv) + e] = vn.v[row(g, t, hkv) * dv + e];
    }
  }
  RefTensor out{bshd ? Shape{1, t_count, hq, dv} : Shape{1, hq, t_count, dv},
                std::vector<double>(static_cast<size_t>(hq * t_count * dv))};
  for (int64_t s = 0; s < n_seqs; ++s) {
    const int64_t begin = static_cast<int64_t>(qs.v[s]), end = static_cast<int64_t>(qs.v[s + 1]);
    for (int64_t t = begin; t < end; ++t) {
      const int64_t pos = static_cast<int64_t>(ctx.v[s]) - (end - t);
      for (int64_t h = 0; h < hq; ++h) {
        const int64_t g = h / (hq / hkv);
        auto block = [&](int64_t j) { return static_cast<int64_t>(tables.v[s * mb + j / bs]); };
        std::vector<double> scores(pos + 1);
        std::vector<bool> visible(pos + 1, true);
        for (int64_t j = 0; j <= pos; ++j) {
          if (window > 0 && j <= pos - window) {
            visible[j] = false;
            continue;
          }
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += q.v[row(h, t, hq) * d + e] * kc.v[cache_at(block(j), g, j % bs, d) + e];
          scores[j] = Cap(dot * scale, cap);
        }
        AttendRow(
            scores, visible,
            [&](int64_t j, int64_t e) { return vc.v[cache_at(block(j), g, j % bs, dv) + e]; }, dv,
            &out.v[row(h, t, hq) * dv]);
      }
    }
  }
  return {out, kc, vc};
}

} // namespace

void AddAttentionRefs(RefTable &t) {
  t["attention"] = Attention;
  t["paged_attention"] = PagedAttention;
}

} // namespace kiln::oracle
