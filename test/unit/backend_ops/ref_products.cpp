// References of the matrix products (matmul, gemm, linear, gated_mlp) and
// rotary embeddings.
#include "references.h"

#include <algorithm>
#include <cmath>

namespace kiln::oracle {
namespace {

double Activate(const std::string &act, double x) {
  if (act == "relu")
    return x > 0 ? x : 0;
  if (act == "gelu")
    return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  if (act == "gelu_tanh")
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  if (act == "silu")
    return x / (1 + std::exp(-x));
  return x;
}

// numpy matmul: 1-D operands promoted to matrices, batch dims broadcast.
std::vector<RefTensor> MatMul(const OpAttrs &, const RefInputs &in) {
  Shape a = in[0]->shape, b = in[1]->shape;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec)
    a.insert(a.begin(), 1);
  if (b_vec)
    b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  const Shape ba(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const Shape batch = BroadcastAll({ba, bb});
  Shape full = batch;
  full.push_back(m);
  full.push_back(n);
  RefTensor out{full, std::vector<double>(static_cast<size_t>(NumElements(full)))};
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, full);
    const std::vector<int64_t> bidx(idx.begin(), idx.end() - 2);
    const int64_t row = idx[idx.size() - 2], col = idx.back();
    const int64_t oa = BroadcastIndex(bidx, ba) * m * k, ob = BroadcastIndex(bidx, bb) * k * n;
    double s = 0;
    for (int64_t j = 0; j < k; ++j)
      s += in[0]->v[oa + row * k + j] * in[1]->v[ob + j * n + col];
    out.v[i] = s;
  }
  Shape shape = batch;
  if (!a_vec)
    shape.push_back(m);
  if (!b_vec)
    shape.push_back(n);
  out.shape = shape;
  return {out};
}

// Y = alpha op(A) op(B) + beta C, C broadcast to [M, N].
std::vector<RefTensor> Gemm(const OpAttrs &attrs, const RefInputs &in) {
  const bool ta = attrs.Int("transA", 0) != 0, tb = attrs.Int("transB", 0) != 0;
  const double alpha = attrs.Float("alpha", 1), beta = attrs.Float("beta", 1);
  const Shape &sa = in[0]->shape, &sb = in[1]->shape;
  const int64_t m = ta ? sa[1] : sa[0], k = ta ? sa[0] : sa[1], n = tb ? sb[0] : sb[1];
  RefTensor out{{m, n}, std::vector<double>(static_cast<size_t>(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p)
        s += in[0]->v[ta ? p * m + i : i * k + p] * in[1]->v[tb ? j * k + p : p * n + j];
      s *= alpha;
      if (in.size() > 2 && in[2])
        s += beta * in[2]->v[BroadcastIndex({i, j}, in[2]->shape)];
      out.v[i * n + j] = s;
    }
  return {out};
}

// x [..., K] as rows of K: the product of the leading dims (K may be 0).
int64_t Rows(const RefTensor &x) { return NumElements(Shape(x.shape.begin(), x.shape.end() - 1)); }

// Row r of x [rows, K] times column c of w [K, N].
double Dot(const RefTensor &x, int64_t r, const RefTensor &w, int64_t c) {
  const int64_t k = w.shape[0], n = w.shape[1];
  double s = 0;
  for (int64_t j = 0; j < k; ++j)
    s += x.v[r * k + j] * w.v[j * n + c];
  return s;
}

std::vector<RefTensor> Linear(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor &x = *in[0], &w = *in[1];
  const std::string act = attrs.String("activation", "none");
  const int64_t n = w.shape[1], rows = Rows(x);
  RefTensor out{x.shape, std::vector<double>(static_cast<size_t>(rows * n))};
  out.shape.back() = n;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c)
      out.v[r * n + c] =
          Activate(act, Dot(x, r, w, c) + (in.size() > 2 && in[2] ? in[2]->v[c] : 0));
  return {out};
}

// (act(x Wg) * (x Wu)) Wd with w_gate_up = [Wg | Wu]; `rows_of` is applied
// to x and to the gated hidden state before their products (the identity,
// or gated_mlp_q8's int8 row quantization).
RefTensor GatedMlpOver(const OpAttrs &attrs, const RefTensor &x_in, const RefTensor &wgu,
                       const RefTensor &wd, RefTensor (*rows_of)(const RefTensor &)) {
  const RefTensor x = rows_of(x_in);
  const std::string act = attrs.String("activation", "silu");
  const int64_t f = wgu.shape[1] / 2, n = wd.shape[1], rows = Rows(x);
  RefTensor hidden{{rows, f}, std::vector<double>(static_cast<size_t>(rows * f))};
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < f; ++c)
      hidden.v[r * f + c] = Activate(act, Dot(x, r, wgu, c)) * Dot(x, r, wgu, f + c);
  hidden = rows_of(hidden);
  RefTensor out{x.shape, std::vector<double>(static_cast<size_t>(rows * n))};
  out.shape.back() = n;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c)
      out.v[r * n + c] = Dot(hidden, r, wd, c);
  return out;
}

RefTensor Unchanged(const RefTensor &t) { return t; }

std::vector<RefTensor> GatedMlp(const OpAttrs &attrs, const RefInputs &in) {
  return {GatedMlpOver(attrs, *in[0], *in[1], *in[2], Unchanged)};
}

// Per row: softmax(x router_w) in double, the top_k experts (ties to the
// lower index), their probabilities (renormalized with `normalize`), and
// the weighted sum of those experts' gated MLPs. Every expert runs on every
// row here; only the picked ones count.
std::vector<RefTensor> Moe(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor &x = *in[0], &wr = *in[1], &wgu = *in[2], &wd = *in[3];
  const int64_t h = x.shape.back(), rows = Rows(x), experts = wr.shape[1];
  const int64_t f2 = wgu.shape[2], f = f2 / 2, k = attrs.Int("top_k", 1);
  const bool normalize = attrs.Int("normalize", 0) != 0;
  std::vector<RefTensor> outs;
  for (int64_t e = 0; e < experts; ++e) {
    RefTensor g{{h, f2}, std::vector<double>(wgu.v.begin() + e * h * f2,
                                             wgu.v.begin() + (e + 1) * h * f2)};
    RefTensor d{{f, h}, std::vector<double>(wd.v.begin() + e * f * h,
                                            wd.v.begin() + (e + 1) * f * h)};
    outs.push_back(GatedMlpOver(attrs, x, g, d, Unchanged));
  }
  RefTensor out{x.shape, std::vector<double>(x.v.size(), 0.0)};
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> p(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e)
      p[e] = Dot(x, r, wr, e);
    const double best = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (double &v : p)
      sum += (v = std::exp(v - best));
    for (double &v : p)
      v /= sum;
    std::vector<int64_t> order(static_cast<size_t>(experts));
    for (int64_t e = 0; e < experts; ++e)
      order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return p[a] > p[b]; });
    double picked = 0;
    for (int64_t i = 0; i < k; ++i)
      picked += p[order[i]];
    for (int64_t i = 0; i < k; ++i) {
      const double w = normalize ? p[order[i]] / picked : p[order[i]];
      for (int64_t c = 0; c < h; ++c)
        out.v[r * h + c] += w * outs[order[i]].v[r * h + c];
    }
  }
  return {out};
}

// An int8 weight [K, N] times its per-column scale [N]: the f32 weight it
// stands for.
RefTensor Dequantized(const RefTensor &q, const RefTensor &scale) {
  RefTensor w = q;
  const int64_t n = q.shape[1];
  for (int64_t i = 0; i < q.numel(); ++i)
    w.v[i] = q.v[i] * scale.v[i % n];
  return w;
}

// With `activations = "int8"`: each row of `x` ([..., K]) replaced by its
// symmetric int8 quantization, s * round(x / s) with s = max |row| / 127.
RefTensor QuantizedRows(const RefTensor &x) {
  RefTensor q = x;
  const int64_t k = x.shape.back(), rows = k == 0 ? 0 : x.numel() / k;
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0;
    for (int64_t i = 0; i < k; ++i)
      m = std::max(m, std::fabs(x.v[r * k + i]));
    const double s = m / 127;
    for (int64_t i = 0; i < k; ++i)
      q.v[r * k + i] =
          s == 0 ? 0 : s * std::clamp(std::nearbyint(x.v[r * k + i] / s), -127.0, 127.0);
  }
  return q;
}

bool Int8Rows(const OpAttrs &attrs) { return attrs.String("activations", "f32") == "int8"; }

// linear over the dequantized weight: x, w, scale, bias?.
std::vector<RefTensor> LinearQ8(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor w = Dequantized(*in[1], *in[2]);
  const RefTensor x = Int8Rows(attrs) ? QuantizedRows(*in[0]) : *in[0];
  return Linear(attrs, {&x, &w, in.size() > 3 ? in[3] : nullptr});
}

// gated_mlp over the dequantized weights: x, w_gate_up, its scale, w_down,
// its scale. With int8 activations, x and the gated hidden rows are
// quantized before their products.
std::vector<RefTensor> GatedMlpQ8(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor wgu = Dequantized(*in[1], *in[2]), wd = Dequantized(*in[3], *in[4]);
  return {GatedMlpOver(attrs, *in[0], wgu, wd, Int8Rows(attrs) ? QuantizedRows : Unchanged)};
}

// y[..R] = x cos + rot(x) sin, the rest of the last dim passed through.
std::vector<RefTensor> Rotary(const OpAttrs &attrs, const RefInputs &in) {
  const RefTensor &x = *in[0], &cos = *in[1], &sin = *in[2];
  const int64_t r = attrs.Int("rotary_dim", 0);
  const bool interleaved = attrs.Int("interleaved", 0) != 0;
  RefTensor y = x;
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = Unravel(i, x.shape);
    const int64_t e = idx.back();
    if (e >= r)
      continue;
    double rotated;
    if (interleaved)
      rotated = e % 2 == 0 ? -x.v[i + 1] : x.v[i - 1];
    else
      rotated = e < r / 2 ? -x.v[i + r / 2] : x.v[i - r / 2];
    const int64_t t = BroadcastIndex(idx, cos.shape);
    y.v[i] = x.v[i] * cos.v[t] + rotated * sin.v[t];
  }
  return {y};
}

} // namespace

void AddProductRefs(RefTable &t) {
  t["matmul"] = MatMul;
  t["gemm"] = Gemm;
  t["linear"] = Linear;
  t["gated_mlp"] = GatedMlp;
  t["moe"] = Moe;
  t["linear_q8"] = LinearQ8;
  t["gated_mlp_q8"] = GatedMlpQ8;
  t["rotary"] = Rotary;
}

} // namespace kiln::oracle
