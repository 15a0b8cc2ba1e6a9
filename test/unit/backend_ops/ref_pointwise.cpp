// References of the elementwise ops: broadcasting binary math, comparisons
// and logic, where, unary math, clip, cast and gelu.
#include "references.h"

#include <cmath>

namespace kiln::oracle {
namespace {

using Fn1 = double (*)(double);
using Fn2 = double (*)(double, double);

// out[i] = f(a[bcast(i)], b[bcast(i)]) over the broadcast shape.
RefTensor Binary(const RefTensor &a, const RefTensor &b,
                 const std::function<double(double, double)> &f) {
  RefTensor out;
  out.shape = BroadcastAll({a.shape, b.shape});
  out.v.resize(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, out.shape);
    out.v[i] = f(a.v[BroadcastIndex(idx, a.shape)], b.v[BroadcastIndex(idx, b.shape)]);
  }
  return out;
}

RefFn BinaryRef(std::function<double(double, double)> f) {
  return [f](const OpAttrs &, const RefInputs &in) {
    return std::vector<RefTensor>{Binary(*in[0], *in[1], f)};
  };
}

// Max and Min fold any number of operands.
RefFn FoldRef(Fn2 f) {
  return [f](const OpAttrs &, const RefInputs &in) {
    RefTensor acc = *in[0];
    for (size_t i = 1; i < in.size(); ++i)
      acc = Binary(acc, *in[i], f);
    return std::vector<RefTensor>{acc};
  };
}

RefFn UnaryRef(std::function<double(double)> f) {
  return [f](const OpAttrs &, const RefInputs &in) {
    RefTensor out = *in[0];
    for (double &x : out.v)
      x = f(x);
    return std::vector<RefTensor>{out};
  };
}

double Gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double GeluTanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

std::vector<RefTensor> Where(const OpAttrs &, const RefInputs &in) {
  const RefTensor &c = *in[0], &x = *in[1], &y = *in[2];
  RefTensor out;
  out.shape = BroadcastAll({c.shape, x.shape, y.shape});
  out.v.resize(static_cast<size_t>(out.numel()));
  for (int64_t i = 0; i < out.numel(); ++i) {
    const std::vector<int64_t> idx = Unravel(i, out.shape);
    out.v[i] = c.v[BroadcastIndex(idx, c.shape)] != 0 ? x.v[BroadcastIndex(idx, x.shape)]
                                                     : y.v[BroadcastIndex(idx, y.shape)];
  }
  return {out};
}

std::vector<RefTensor> Clip(const OpAttrs &, const RefInputs &in) {
  RefTensor out = *in[0];
  for (double &x : out.v) {
    if (in.size() > 1 && in[1])
      x = std::max(x, in[1]->v[0]);
    if (in.size() > 2 && in[2])
      x = std::min(x, in[2]->v[0]);
  }
  return {out};
}

std::vector<RefTensor> GeluOp(const OpAttrs &attrs, const RefInputs &in) {
  const bool tanh = attrs.String("approximate", "none") == "tanh";
  RefTensor out = *in[0];
  for (double &x : out.v)
    x = tanh ? GeluTanh(x) : Gelu(x);
  return {out};
}

} // namespace

void AddPointwiseRefs(RefTable &t) {
  t["add"] = BinaryRef([](double a, double b) { return a + b; });
  t["sub"] = BinaryRef([](double a, double b) { return a - b; });
  t["mul"] = BinaryRef([](double a, double b) { return a * b; });
  // Integer division truncates toward zero: the driver's rounding to the
  // integer result dtype does that.
  t["div"] = BinaryRef([](double a, double b) { return a / b; });
  t["pow"] = BinaryRef([](double a, double b) { return std::pow(a, b); });
  t["max"] = FoldRef([](double a, double b) { return std::max(a, b); });
  t["min"] = FoldRef([](double a, double b) { return std::min(a, b); });
  t["equal"] = BinaryRef([](double a, double b) { return double(a == b); });
  t["less"] = BinaryRef([](double a, double b) { return double(a < b); });
  t["greater"] = BinaryRef([](double a, double b) { return double(a > b); });
  t["less_or_equal"] = BinaryRef([](double a, double b) { return double(a <= b); });
  t["greater_or_equal"] = BinaryRef([](double a, double b) { return double(a >= b); });
  t["and"] = BinaryRef([](double a, double b) { return double(a != 0 && b != 0); });
  t["or"] = BinaryRef([](double a, double b) { return double(a != 0 || b != 0); });
  t["xor"] = BinaryRef([](double a, double b) { return double((a != 0) != (b != 0)); });
  t["where"] = Where;
  t["sqrt"] = UnaryRef([](double x) { return std::sqrt(x); });
  t["reciprocal"] = UnaryRef([](double x) { return 1 / x; });
  t["neg"] = UnaryRef([](double x) { return -x; });
  t["exp"] = UnaryRef([](double x) { return std::exp(x); });
  t["log"] = UnaryRef([](double x) { return std::log(x); });
  t["erf"] = UnaryRef([](double x) { return std::erf(x); });
  t["tanh"] = UnaryRef([](double x) { return std::tanh(x); });
  t["sigmoid"] = UnaryRef([](double x) { return 1 / (1 + std::exp(-x)); });
  t["relu"] = UnaryRef([](double x) { return x > 0 ? x : 0.0; });
  t["abs"] = UnaryRef([](double x) { return std::fabs(x); });
  t["floor"] = UnaryRef([](double x) { return std::floor(x); });
  t["ceil"] = UnaryRef([](double x) { return std::ceil(x); });
  t["sin"] = UnaryRef([](double x) { return std::sin(x); });
  t["cos"] = UnaryRef([](double x) { return std::cos(x); });
  t["not"] = UnaryRef([](double x) { return double(x == 0); });
  t["is_nan"] = UnaryRef([](double x) { return double(std::isnan(x)); });
  t["identity"] = UnaryRef([](double x) { return x; });
  // The value is kept; the driver's rounding to the target dtype is the
  // conversion (nearest-even for floats, toward zero for integers).
  t["cast"] = UnaryRef([](double x) { return x; });
  t["clip"] = Clip;
  t["gelu"] = GeluOp;
}

} // namespace kiln::oracle
