// References of reductions, softmax and the normalizations (layer norm,
// RMS norm and their residual-add fusions).
#include "references.h"

#include <cmath>
#include <limits>

namespace kiln::oracle {
namespace {

std::vector<RefTensor> Reduce(const std::string &kind, const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  std::vector<int64_t> axes;
  if (in.size() > 1 && in[1])
    for (double a : in[1]->v)
      axes.push_back(static_cast<int64_t>(a));
  else
    axes = attrs.Ints("axes");
  std::vector<bool> reduced(s.size(), axes.empty() && attrs.Int("noop_with_empty_axes", 0) == 0);
  for (int64_t a : axes)
    reduced[Axis(a, s.size())] = true;
  const bool keepdims = attrs.Int("keepdims", 1) != 0;
  Shape kept; // the result's dims with reduced ones at 1
  Shape shape;
  for (size_t d = 0; d < s.size(); ++d) {
    kept.push_back(reduced[d] ? 1 : s[d]);
    if (!reduced[d] || keepdims)
      shape.push_back(kept.back());
  }
  const int64_t n = NumElements(kept);
  std::vector<double> acc(static_cast<size_t>(n), kind == "max"   ? -INFINITY
                                                  : kind == "min" ? INFINITY
                                                                  : 0.0);
  const int64_t count = n == 0 ? 0 : in[0]->numel() / n;
  for (int64_t i = 0; i < in[0]->numel(); ++i) {
    std::vector<int64_t> idx = Unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d)
      if (reduced[d])
        idx[d] = 0;
    double &a = acc[Ravel(idx, kept)];
    const double x = in[0]->v[i];
    a = kind == "max" ? std::max(a, x) : kind == "min" ? std::min(a, x) : a + x;
  }
  if (kind == "mean")
    for (double &a : acc)
      a /= static_cast<double>(count);
  return {RefTensor{shape, acc}};
}

RefFn ReduceRef(std::string kind) {
  return [kind](const OpAttrs &attrs, const RefInputs &in) { return Reduce(kind, attrs, in); };
}

// `s` as [outer, len, inner] lines along `axis`.
struct Lines {
  int64_t outer = 1, len = 1, inner = 1;
  Lines(const Shape &s, int64_t axis) : len(s[axis]) {
    for (int64_t d = 0; d < axis; ++d)
      outer *= s[d];
    for (size_t d = static_cast<size_t>(axis) + 1; d < s.size(); ++d)
      inner *= s[d];
  }
};

// Running sums along the axis in[1] names, in double (the cases' values
// keep integer sums exact).
std::vector<RefTensor> CumSum(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t axis = Axis(static_cast<int64_t>(in[1]->v[0]), s.size());
  const bool exclusive = attrs.Int("exclusive", 0) != 0, reverse = attrs.Int("reverse", 0) != 0;
  const Lines lines(s, axis);
  const int64_t outer = lines.outer, len = lines.len, inner = lines.inner;
  RefTensor out = *in[0];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i)
      for (int64_t j = 0; j < len; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < len; ++k)
          if (reverse ? (exclusive ? k > j : k >= j) : (exclusive ? k < j : k <= j))
            sum += in[0]->v[(o * len + k) * inner + i];
        out.v[(o * len + j) * inner + i] = sum;
      }
  return {out};
}

// Each line along `axis` (outer x inner lines of s[axis] elements) on its own.
std::vector<RefTensor> Softmax(bool log, const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t axis = Axis(attrs.Int("axis", -1), s.size());
  const Lines lines(s, axis);
  const int64_t outer = lines.outer, len = lines.len, inner = lines.inner;
  RefTensor out = *in[0];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * len + j) * inner + i; };
      double max = -INFINITY, sum = 0;
      for (int64_t j = 0; j < len; ++j)
        max = std::max(max, in[0]->v[at(j)]);
      for (int64_t j = 0; j < len; ++j)
        sum += std::exp(in[0]->v[at(j)] - max);
      for (int64_t j = 0; j < len; ++j) {
        const double x = in[0]->v[at(j)] - max;
        out.v[at(j)] = log ? x - std::log(sum) : std::exp(x) / sum;
      }
    }
  return {out};
}

// One row normalized as layer norm does: (x - mean) / sqrt(var + eps).
struct RowStats {
  double mean = 0, inv_std = 0;
};
RowStats LayerStats(const double *x, int64_t n, double eps) {
  RowStats r;
  for (int64_t i = 0; i < n; ++i)
    r.mean += x[i];
  r.mean /= static_cast<double>(n);
  double var = 0;
  for (int64_t i = 0; i < n; ++i)
    var += (x[i] - r.mean) * (x[i] - r.mean);
  r.inv_std = 1 / std::sqrt(var / static_cast<double>(n) + eps);
  return r;
}

// ONNX LayerNormalization over dims [axis, rank); also Mean and InvStdDev
// (the driver keeps as many results as the case has).
std::vector<RefTensor> LayerNorm(const OpAttrs &attrs, const RefInputs &in) {
  const Shape &s = in[0]->shape;
  const int64_t axis = Axis(attrs.Int("axis", -1), s.size());
  const double eps = attrs.Float("epsilon", 1e-5f);
  int64_t cols = 1;
  for (size_t d = static_cast<size_t>(axis); d < s.size(); ++d)
    cols *= s[d];
  const int64_t rows = in[0]->numel() / cols;
  Shape stat_shape = s;
  for (size_t d = static_cast<size_t>(axis); d < s.size(); ++d)
    stat_shape[d] = 1;
  RefTensor y = *in[0], mean{stat_shape, std::vector<double>(rows)}, inv{stat_shape, mean.v};
  const Shape norm(s.begin() + axis, s.end());
  for (int64_t r = 0; r < rows; ++r) {
    const RowStats st = LayerStats(&in[0]->v[r * cols], cols, eps);
    mean.v[r] = st.mean;
    inv.v[r] = st.inv_std;
    for (int64_t c = 0; c < cols; ++c) {
      const std::vector<int64_t> idx = Unravel(c, norm);
      double v = (in[0]->v[r * cols + c] - st.mean) * st.inv_std *
                 in[1]->v[BroadcastIndex(idx, in[1]->shape)];
      if (in.size() > 2 && in[2])
        v += in[2]->v[BroadcastIndex(idx, in[2]->shape)];
      y.v[r * cols + c] = v;
    }
  }
  return {y, mean, inv};
}

// x / sqrt(mean(x^2) + eps) * scale over the last dim.
RefTensor RmsNorm(const RefTensor &x, const RefTensor &scale, double eps) {
  const int64_t d = x.shape.back(), rows = x.numel() / d;
  RefTensor y = x;
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < d; ++c)
      ms += x.v[r * d + c] * x.v[r * d + c];
    const double inv = 1 / std::sqrt(ms / static_cast<double>(d) + eps);
    for (int64_t c = 0; c < d; ++c)
      y.v[r * d + c] = x.v[r * d + c] * inv * scale.v[c];
  }
  return y;
}

RefTensor Sum(const RefTensor &a, const RefTensor &b) {
  RefTensor s = a;
  for (size_t i = 0; i < s.v.size(); ++i)
    s.v[i] += b.v[i];
  return s;
}

// Layer norm of the last dim with a [D] scale and optional [D] bias.
RefTensor LastDimLayerNorm(const RefTensor &x, const RefTensor &scale, const RefTensor *bias,
                           double eps) {
  const int64_t d = x.shape.back(), rows = x.numel() / d;
  RefTensor y = x;
  for (int64_t r = 0; r < rows; ++r) {
    const RowStats st = LayerStats(&x.v[r * d], d, eps);
    for (int64_t c = 0; c < d; ++c)
      y.v[r * d + c] =
          (x.v[r * d + c] - st.mean) * st.inv_std * scale.v[c] + (bias ? bias->v[c] : 0);
  }
  return y;
}

} // namespace

void AddReduceNormRefs(RefTable &t) {
  t["reduce_sum"] = ReduceRef("sum");
  t["reduce_mean"] = ReduceRef("mean");
  t["reduce_max"] = ReduceRef("max");
  t["reduce_min"] = ReduceRef("min");
  t["cumsum"] = CumSum;
  t["softmax"] = [](const OpAttrs &a, const RefInputs &in) { return Softmax(false, a, in); };
  t["log_softmax"] = [](const OpAttrs &a, const RefInputs &in) { return Softmax(true, a, in); };
  t["layer_normalization"] = LayerNorm;
  t["rms_norm"] = [](const OpAttrs &a, const RefInputs &in) {
    return std::vector<RefTensor>{RmsNorm(*in[0], *in[1], a.Float("epsilon", 0))};
  };
  t["add_rms_norm"] = [](const OpAttrs &a, const RefInputs &in) {
    const RefTensor sum = Sum(*in[0], *in[1]);
    return std::vector<RefTensor>{sum, RmsNorm(sum, *in[2], a.Float("epsilon", 0))};
  };
  t["add_layer_norm"] = [](const OpAttrs &a, const RefInputs &in) {
    const RefTensor sum = Sum(*in[0], *in[1]);
    const RefTensor *bias = in.size() > 3 ? in[3] : nullptr;
    return std::vector<RefTensor>{sum, LastDimLayerNorm(sum, *in[2], bias, a.Float("epsilon", 0))};
  };
}

} // namespace kiln::oracle
