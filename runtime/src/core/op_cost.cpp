// Op cost estimates for the profiler's roofline (op_cost.h).
#include "core/op_cost.h"

#include <algorithm>

namespace kiln {
namespace {

double Bytes(const TensorView *v) { return v ? static_cast<double>(v->bytes()) : 0.0; }
double Dim(const TensorView &v, int i) {
  const int rank = static_cast<int>(v.shape.size());
  const int k = i < 0 ? rank + i : i;
  return k >= 0 && k < rank ? static_cast<double>(v.shape[k]) : 0.0;
}
bool Has(const Inputs &in, size_t i) { return in.size() > i && in[i] != nullptr; }

// Every operand read once, every result written once.
OpCost Streamed(const Inputs &in, const Outputs &out) {
  OpCost c;
  for (const TensorView *v : in)
    c.bytes += Bytes(v);
  for (const TensorView &v : out)
    c.bytes += Bytes(&v);
  return c;
}

// x [..., K] times w [K, N]: rows * K * N multiply-adds.
double ProductFlops(const TensorView &x, const TensorView &w) {
  const double k = Dim(x, -1);
  if (k <= 0)
    return 0;
  const double rows = static_cast<double>(x.numel()) / k;
  return 2.0 * rows * k * Dim(w, -1);
}

OpCost PagedAttention(const Inputs &in, const Outputs &out) {
  OpCost c;
  if (!Has(in, 8) || !Has(in, 3) || !Has(in, 4) || out.empty())
    return Streamed(in, out);
  const TensorView &q = *in[0], &kc = *in[3], &vc = *in[4], &slots = *in[5], &tables = *in[8];
  const double d = Dim(kc, -1), dv = Dim(vc, -1), bs = Dim(kc, 2), hkv = Dim(kc, 1);
  const double tokens = static_cast<double>(slots.numel());
  const double seqs = std::max(1.0, Dim(tables, 0));
  const double context = Dim(tables, 1) * bs; // per sequence, an upper bound
  if (d <= 0 || tokens <= 0)
    return Streamed(in, out);
  const double hq = static_cast<double>(q.numel()) / (tokens * d);
  // Queries, new keys and values in; the result out; the new keys and
  // values written into the cache; every sequence's context read back.
  c.bytes = Bytes(in[0]) + 2 * (Bytes(in[1]) + Bytes(in[2])) + Bytes(&out[0]);
  for (size_t i = 5; i < 9; ++i)
    c.bytes += Bytes(in[i]);
  const double elem = static_cast<double>(DTypeSize(kc.dtype));
  c.bytes += seqs * context * hkv * (d + dv) * elem;
  // Causal: a sequence's t-th new token of n sees context - n + t + 1 keys.
  const double per_seq = tokens / seqs;
  const double keys = std::max(1.0, context - per_seq / 2);
  c.flops = 2.0 * hq * tokens * keys * (d + dv);
  return c;
}

} // namespace

OpCost EstimateOpCost(std::string_view type, const Inputs &in, const Outputs &out) {
  OpCost c = Streamed(in, out);
  if (type == "paged_attention")
    return PagedAttention(in, out);
  if (type == "gather" && in.size() >= 2 && in[0] && in[1] && !out.empty()) {
    // Only the gathered rows of the table are read: as many bytes as the
    // result, besides the indices.
    c.bytes = 2 * Bytes(&out[0]) + Bytes(in[1]);
    return c;
  }
  if ((type == "linear" || type == "linear_q8" || type == "matmul" || type == "gemm") &&
      Has(in, 1)) {
    c.flops = ProductFlops(*in[0], *in[1]);
  } else if (type == "gated_mlp_q8" && Has(in, 3)) {
    // As gated_mlp, with the down weight at operand 3 (after its scale).
    c.flops = ProductFlops(*in[0], *in[1]);
    const double k = Dim(*in[0], -1);
    const double rows = k > 0 ? static_cast<double>(in[0]->numel()) / k : 0;
    c.flops += 2.0 * rows * Dim(*in[3], 0) * Dim(*in[3], -1);
  } else if (type == "gated_mlp" && Has(in, 2)) {
    // x @ w_gate_up, then [rows, F] @ w_down; the [rows, 2F] intermediate
    // is written and read once more.
    c.flops = ProductFlops(*in[0], *in[1]);
    const double k = Dim(*in[0], -1);
    const double rows = k > 0 ? static_cast<double>(in[0]->numel()) / k : 0;
    c.flops += 2.0 * rows * Dim(*in[2], 0) * Dim(*in[2], -1);
  } else if (type == "attention" && in.size() >= 3 && in[0] && in[1] && in[2]) {
    // q [B, Hq, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv].
    const double sq = Dim(*in[0], 2), skv = Dim(*in[1], 2);
    const double heads = Dim(*in[0], 0) * Dim(*in[0], 1);
    c.flops = 2.0 * heads * sq * skv * (Dim(*in[0], 3) + Dim(*in[2], 3));
  }
  return c;
}

} // namespace kiln
