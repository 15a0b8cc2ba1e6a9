// Cases of reductions, softmax and the normalizations.
#include "op_case.h"

namespace kiln::oracle {
namespace {

constexpr DType F32 = DType::kF32, F16 = DType::kF16, BF16 = DType::kBF16, I64 = DType::kI64;

void AddReductions(std::vector<OpCase> &c) {
  for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    c.push_back(MakeCase(op, F32, {7, 13, 37}, "axis1", Attrs().Int("keepdims", 0),
                         {Uniform(F32, {7, 13, 37}), Ints({1})}, kAccumulated));
    c.push_back(MakeCase(op, F32, {37, 129}, "last_keepdims", {},
                         {Uniform(F32, {37, 129}), Ints({-1})}, kAccumulated));
    c.push_back(MakeCase(op, F32, {7, 13, 5}, "all", {}, {Uniform(F32, {7, 13, 5})}, kAccumulated));
    c.push_back(MakeCase(op, F16, {13, 37}, "axis0", {}, {Uniform(F16, {13, 37}), Ints({0})},
                         kAccumulated));
    c.push_back(MakeCase(op, I64, {7, 13, 37}, "axes_0_2", Attrs().Int("keepdims", 0),
                         {Uniform(I64, {7, 13, 37}, -100, 100), Ints({0, 2})}, kAccumulated));
  }
  c.push_back(MakeCase("reduce_sum", F32, {7, 13}, "noop_empty_axes",
                       Attrs().Int("noop_with_empty_axes", 1), {Uniform(F32, {7, 13})}, kExact));
  // CumSum: positions from an attention mask ([B, T] i64 along T), a middle
  // axis, exclusive and reverse, a half type, a scalar axis.
  c.push_back(MakeCase("cumsum", I64, {4, 300}, "mask_positions", {},
                       {IntValued(I64, {4, 300}, 0, 1), Ints({1})}, kExact));
  c.push_back(MakeCase("cumsum", F32, {7, 13, 37}, "axis1", {},
                       {Uniform(F32, {7, 13, 37}), Ints({1})}, kAccumulated));
  c.push_back(MakeCase("cumsum", I64, {3, 129}, "exclusive_reverse",
                       Attrs().Int("exclusive", 1).Int("reverse", 1),
                       {Uniform(I64, {3, 129}, -100, 100), Ints({-1})}, kExact));
  c.push_back(MakeCase("cumsum", F16, {13, 37}, "axis0_reverse", Attrs().Int("reverse", 1),
                       {Uniform(F16, {13, 37}), Fixed(I64, {}, {0})}, kAccumulated));
  for (const char *op : {"softmax", "log_softmax"}) {
    c.push_back(
        MakeCase(op, F32, {37, 129}, "last", {}, {Uniform(F32, {37, 129}, -8, 8)}, kAccumulated));
    c.push_back(MakeCase(op, F32, {7, 13, 37}, "axis1", Attrs().Int("axis", 1),
                         {Uniform(F32, {7, 13, 37}, -8, 8)}, kAccumulated));
    c.push_back(
        MakeCase(op, F16, {13, 37}, "last", {}, {Uniform(F16, {13, 37}, -8, 8)}, kAccumulated));
    c.push_back(MakeCase(op, F32, {129, 1031}, "large", {}, {Uniform(F32, {129, 1031}, -8, 8)},
                         kAccumulated));
  }
}

// Rows of a model's width (4096) and odd widths past a device block's
// threads, in every float dtype the fused norms take.
void AddNormsAtModelShapes(std::vector<OpCase> &c) {
  const OpAttrs eps = Attrs().Float("epsilon", 1e-5f);
  c.push_back(MakeCase("rms_norm", F32, {5, 4096}, "d4096", eps,
                       {Uniform(F32, {5, 4096}), Uniform(F32, {4096})}, kAccumulated));
  c.push_back(MakeCase("rms_norm", BF16, {3, 4096}, "d4096", eps,
                       {Uniform(BF16, {3, 4096}), Uniform(BF16, {4096})}, kAccumulated));
  c.push_back(MakeCase("rms_norm", F32, {3, 4099}, "odd", eps,
                       {Uniform(F32, {3, 4099}), Uniform(F32, {4099})}, kAccumulated));
  // Wide rows: the CUDA kernel that holds a row in registers at 2 and 4
  // vectors a thread, and a row past what it holds (the generic kernel).
  c.push_back(MakeCase("rms_norm", F16, {2, 16384}, "d16384", eps,
                       {Uniform(F16, {2, 16384}), Uniform(F16, {16384})}, kAccumulated));
  OpCase wide = MakeCase(
      "add_rms_norm", BF16, {1, 32768}, "d32768", eps,
      {Uniform(BF16, {1, 32768}), Uniform(BF16, {1, 32768}), Uniform(F32, {32768})}, kAccumulated);
  wide.num_outputs = 2;
  c.push_back(wide);
  c.push_back(MakeCase("rms_norm", BF16, {1, 40000}, "d40000", eps,
                       {Uniform(BF16, {1, 40000}), Uniform(BF16, {40000})}, kAccumulated));
  c.push_back(MakeCase("layer_normalization", F32, {4, 4096}, "d4096", eps,
                       {Uniform(F32, {4, 4096}, 1, 3), Uniform(F32, {4096}), Uniform(F32, {4096})},
                       kAccumulated));
  c.push_back(MakeCase("layer_normalization", F16, {3, 5, 1031}, "odd", eps,
                       {Uniform(F16, {3, 5, 1031}), Uniform(F16, {1031}), Uniform(F16, {1031})},
                       kAccumulated));
  const struct {
    const char *op;
    DType t;
    int64_t d;
    bool bias;
  } fused[] = {{"add_rms_norm", BF16, 4096, false},
               {"add_rms_norm", F32, 4097, false},
               {"add_layer_norm", F16, 4096, true},
               {"add_layer_norm", F32, 2053, false}};
  for (const auto &f : fused) {
    OpCase k = MakeCase(f.op, f.t, {3, f.d}, f.d % 2 ? "odd" : "d4096", eps,
                        {Uniform(f.t, {3, f.d}), Uniform(f.t, {3, f.d}), Uniform(f.t, {f.d})},
                        kAccumulated);
    if (std::string(f.op) == "add_layer_norm")
      k.inputs.push_back(f.bias ? Uniform(f.t, {f.d}) : Omitted());
    k.num_outputs = 2;
    c.push_back(k);
  }
}

void AddNorms(std::vector<OpCase> &c) {
  const OpAttrs eps = Attrs().Float("epsilon", 1e-5f);
  c.push_back(MakeCase("layer_normalization", F32, {37, 129}, "last", eps,
                       {Uniform(F32, {37, 129}), Uniform(F32, {129}), Uniform(F32, {129})},
                       kAccumulated));
  OpCase stats =
      MakeCase("layer_normalization", F32, {7, 13, 37}, "axis1_stats",
               Attrs().Int("axis", 1).Float("epsilon", 1e-3f),
               {Uniform(F32, {7, 13, 37}, 0, 3), Uniform(F32, {13, 37}), Omitted()}, kAccumulated);
  stats.num_outputs = 3;
  c.push_back(stats);
  c.push_back(MakeCase("layer_normalization", F32, {7, 13, 37}, "axis1_bcast_scale",
                       Attrs().Int("axis", 1).Float("epsilon", 1e-5f),
                       {Uniform(F32, {7, 13, 37}), Uniform(F32, {1, 37}), Uniform(F32, {13, 1})},
                       kAccumulated));
  c.push_back(MakeCase("layer_normalization", F32, {7, 13}, "axis0_all", Attrs().Int("axis", 0),
                       {Uniform(F32, {7, 13}), Uniform(F32, {7, 13}), Omitted()}, kAccumulated));
  c.push_back(MakeCase("layer_normalization", BF16, {13, 129}, "last", eps,
                       {Uniform(BF16, {13, 129}), Uniform(BF16, {129}), Uniform(BF16, {129})},
                       kAccumulated));
  for (DType t : {F32, F16, BF16})
    c.push_back(MakeCase("rms_norm", t, {37, 129}, "", eps,
                         {Uniform(t, {37, 129}), Uniform(t, {129})}, kAccumulated));
  c.push_back(MakeCase("rms_norm", F32, {257, 1031}, "large", eps,
                       {Uniform(F32, {257, 1031}), Uniform(F32, {1031})}, kAccumulated));
  c.push_back(MakeCase("rms_norm", F32, {0, 129}, "empty", eps,
                       {Uniform(F32, {0, 129}), Uniform(F32, {129})}, kAccumulated));
  c.push_back(MakeCase("rms_norm", F32, {2, 7, 13}, "rank3", Attrs().Float("epsilon", 1e-2f),
                       {Uniform(F32, {2, 7, 13}, -0.1, 0.1), Uniform(F32, {13})}, kAccumulated));
  for (DType t : {F32, F16}) {
    OpCase rms =
        MakeCase("add_rms_norm", t, {37, 129}, "", eps,
                 {Uniform(t, {37, 129}), Uniform(t, {37, 129}), Uniform(t, {129})}, kAccumulated);
    rms.num_outputs = 2;
    c.push_back(rms);
    OpCase ln = MakeCase(
        "add_layer_norm", t, {37, 129}, "bias", eps,
        {Uniform(t, {37, 129}), Uniform(t, {37, 129}), Uniform(t, {129}), Uniform(t, {129})},
        kAccumulated);
    ln.num_outputs = 2;
    c.push_back(ln);
  }
  OpCase no_bias = MakeCase(
      "add_layer_norm", BF16, {7, 13, 37}, "no_bias", eps,
      {Uniform(BF16, {7, 13, 37}), Uniform(BF16, {7, 13, 37}), Uniform(BF16, {37}), Omitted()},
      kAccumulated);
  no_bias.num_outputs = 2;
  c.push_back(no_bias);
  // Half rows with f32 parameters, as half plans keep a norm's scale and
  // bias (kiln-convert-float-type).
  c.push_back(MakeCase("rms_norm", BF16, {37, 129}, "f32_scale", eps,
                       {Uniform(BF16, {37, 129}), Uniform(F32, {129})}, kAccumulated));
  OpCase rms_f32 = MakeCase(
      "add_rms_norm", BF16, {3, 4096}, "f32_scale", eps,
      {Uniform(BF16, {3, 4096}), Uniform(BF16, {3, 4096}), Uniform(F32, {4096})}, kAccumulated);
  rms_f32.num_outputs = 2;
  c.push_back(rms_f32);
  OpCase ln_f32 = MakeCase("add_layer_norm", F16, {7, 13, 37}, "f32_scale_bias", eps,
                           {Uniform(F16, {7, 13, 37}), Uniform(F16, {7, 13, 37}),
                            Uniform(F32, {37}), Uniform(F32, {37})},
                           kAccumulated);
  ln_f32.num_outputs = 2;
  c.push_back(ln_f32);
  AddNormsAtModelShapes(c);
}

} // namespace

void AddReduceNormCases(std::vector<OpCase> &cases) {
  AddReductions(cases);
  AddNorms(cases);
}

} // namespace kiln::oracle
