#include "op_case.h"

#include <cmath>

namespace kiln::oracle {

Generator Uniform(DType dtype, Shape shape, double lo, double hi) {
  return [=](std::mt19937 &rng) {
    std::vector<double> v(static_cast<size_t>(NumElements(shape)));
    for (double &x : v) {
      if (IsFloat(dtype))
        x = std::uniform_real_distribution<double>(lo, hi)(rng);
      else
        x = static_cast<double>(std::uniform_int_distribution<int64_t>(
            static_cast<int64_t>(lo), static_cast<int64_t>(hi))(rng));
    }
    return FromDoubles(dtype, shape, v);
  };
}

Generator AwayFromZero(DType dtype, Shape shape, double min_abs, double max_abs) {
  return [=](std::mt19937 &rng) {
    std::vector<double> v(static_cast<size_t>(NumElements(shape)));
    for (double &x : v) {
      x = std::uniform_real_distribution<double>(min_abs, max_abs)(rng);
      if (rng() & 1u)
        x = -x;
      if (!IsFloat(dtype))
        x = std::trunc(x);
    }
    return FromDoubles(dtype, shape, v);
  };
}

Generator IntValued(DType dtype, Shape shape, int64_t lo, int64_t hi) {
  return [=](std::mt19937 &rng) {
    std::vector<double> v(static_cast<size_t>(NumElements(shape)));
    for (double &x : v)
      x = static_cast<double>(std::uniform_int_distribution<int64_t>(lo, hi)(rng));
    return FromDoubles(dtype, shape, v);
  };
}

Generator Bools(Shape shape) {
  return [=](std::mt19937 &rng) {
    std::vector<double> v(static_cast<size_t>(NumElements(shape)));
    for (double &x : v)
      x = static_cast<double>(rng() & 1u);
    return FromDoubles(DType::kBool, shape, v);
  };
}

Generator Fixed(DType dtype, Shape shape, std::vector<double> values) {
  return [=](std::mt19937 &) { return FromDoubles(dtype, shape, values); };
}

Generator Omitted() {
  return [](std::mt19937 &) { return HostTensor(); };
}

Attrs &Attrs::Int(const std::string &name, int64_t v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kInt;
  a.i = v;
  attrs_.Set(name, a);
  return *this;
}

Attrs &Attrs::Float(const std::string &name, float v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kFloat;
  a.f = v;
  attrs_.Set(name, a);
  return *this;
}

Attrs &Attrs::String(const std::string &name, std::string v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kString;
  a.s = std::move(v);
  attrs_.Set(name, a);
  return *this;
}

Attrs &Attrs::IntList(const std::string &name, std::vector<int64_t> v) {
  AttrValue a;
  a.kind = AttrValue::Kind::kInts;
  a.ints = std::move(v);
  attrs_.Set(name, a);
  return *this;
}

std::string CaseName(const std::string &op, DType dtype, const Shape &shape,
                     const std::string &variant) {
  std::string name = op + "_" + DTypeName(dtype) + "_" + ShapeName(shape);
  return variant.empty() ? name : name + "_" + variant;
}

OpCase MakeCase(const std::string &op, DType dtype, const Shape &shape, const std::string &variant,
                OpAttrs attrs, std::vector<Generator> inputs, Tolerance tol) {
  OpCase c;
  c.name = CaseName(op, dtype, shape, variant);
  c.op = op;
  c.attrs = std::move(attrs);
  c.inputs = std::move(inputs);
  c.tol = tol;
  return c;
}

const std::vector<OpCase> &AllCases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> c;
    AddPointwiseCases(c);
    AddMovementCases(c);
    AddReduceNormCases(c);
    AddProductCases(c);
    AddAttentionCases(c);
    AddPointwiseEdgeCases(c);
    AddGemvCases(c);
    return c;
  }();
  return cases;
}

} // namespace kiln::oracle
