// The toy plans the runtime tests share.
#pragma once

#include "test_plan.h"

namespace kiln::test {

// y = softmax(x @ W + b), x: f32[batch, 4]. h and y share slot 0 (h dies at
// the add), z has slot 1.
struct Mlp {
  static constexpr int kIn = 4, kOut = 3;
  std::vector<float> w{0.5f,   -1.0f, 0.25f, 1.5f, 0.0f, -0.5f,
                       -0.75f, 2.0f,  1.0f,  0.1f, 0.2f, 0.3f}; // [4, 3]
  std::vector<float> b{0.1f, -0.2f, 0.3f};
  int x, h, z, y;

  TestPlan Build() {
    TestPlan p;
    x = p.Input("x", DType::kF32, {"batch", kIn});
    int W = p.Weight("W", DType::kF32, {kIn, kOut}, w);
    int B = p.Weight("b", DType::kF32, {kOut}, b);
    h = p.Act("h", DType::kF32, {"batch", kOut}, 0);
    z = p.Act("z", DType::kF32, {"batch", kOut}, 1);
    y = p.Act("y", DType::kF32, {"batch", kOut}, 0);
    p.Op("matmul", {x, W}, {h});
    p.Op("add", {h, B}, {z});
    p.Op("softmax", {z}, {y}, {AInt("axis", -1)});
    p.Output(y);
    return p;
  }

  // Plain reference for one batch row.
  std::vector<float> Reference(const float *row) const {
    std::vector<float> z(kOut);
    float mx = -1e30f, sum = 0;
    for (int j = 0; j < kOut; ++j) {
      z[j] = b[j];
      for (int k = 0; k < kIn; ++k)
        z[j] += row[k] * w[k * kOut + j];
      mx = std::max(mx, z[j]);
    }
    for (float &v : z)
      sum += (v = std::exp(v - mx));
    for (float &v : z)
      v /= sum;
    return z;
  }
};

// y = neg(reshape(relu(x), [0, 2, 3])) with the reshape a view: its result
// v is in h's slot (0), as kiln-memory-plan assigns it. x: f32[batch, 6].
struct ViewPlan {
  int x, h, v, y;
  TestPlan Build(int y_slot = 1) {
    TestPlan p;
    x = p.Input("x", DType::kF32, {"batch", 6});
    int shape = p.Weight("shape", DType::kI64, {3}, std::vector<int64_t>{0, 2, 3});
    h = p.Act("h", DType::kF32, {"batch", 6}, 0);
    v = p.Act("v", DType::kF32, {"batch", 2, 3}, 0);
    y = p.Act("y", DType::kF32, {"batch", 2, 3}, y_slot);
    p.Op("relu", {x}, {h});
    p.Op("reshape", {h, shape}, {v}, {AInt("allowzero", 0)});
    p.Op("neg", {v}, {y});
    p.Output(y);
    return p;
  }
};

// y = reshape(x, concat(unsqueeze(gather(shape(x), 0), 0), [3, 2])):
// a shape subgraph evaluated on the host during Bind. x: f32[batch, 6].
inline TestPlan BuildReshapePlan() {
  TestPlan p;
  int x = p.Input("x", DType::kF32, {"batch", 6});
  int s = p.HostAct("s", DType::kI64, {2});
  int idx = p.Weight("idx", DType::kI64, {}, std::vector<int64_t>{0});
  int bsz = p.HostAct("bsz", DType::kI64, {});
  int axes = p.Weight("axes", DType::kI64, {1}, std::vector<int64_t>{0});
  int b1 = p.HostAct("b1", DType::kI64, {1});
  int tail = p.Weight("tail", DType::kI64, {2}, std::vector<int64_t>{3, 2});
  int ns = p.HostAct("ns", DType::kI64, {3});
  int y = p.Act("y", DType::kF32, {"batch", 3, 2});
  p.Op("shape", {x}, {s}, {AInt("start", 0)});
  p.Op("gather", {s, idx}, {bsz}, {AInt("axis", 0)});
  p.Op("unsqueeze", {bsz, axes}, {b1});
  p.Op("concat", {b1, tail}, {ns}, {AInt("axis", 0)});
  p.Op("reshape", {x, ns}, {y}, {AInt("allowzero", 0)});
  p.Output(y);
  return p;
}

// A decoder whose next token is, as a number, the sum of every token the
// model has seen (through the KV input when `with_kv`), plus the attention
// mask's length and the sum of this step's position ids. logits[v] = -|t - v|
// so greedy picks round(t) clamped to the vocabulary. present =
// concat(past, tokens) along the sequence.
inline TestPlan BuildSumDecoder(bool with_kv, int vocab) {
  TestPlan p;
  int ids = p.Input("input_ids", DType::kI64, {"batch", "sequence"});
  int mask = p.Input("attention_mask", DType::kI64, {"batch", "total"});
  int pos = p.Input("position_ids", DType::kI64, {"batch", "sequence"});
  int past = with_kv ? p.Input("past.0", DType::kF32, {"batch", "past", 1}) : -1;
  int axes2 = p.Weight("axes2", DType::kI64, {1}, std::vector<int64_t>{2});
  std::vector<float> range(vocab);
  for (int v = 0; v < vocab; ++v)
    range[v] = static_cast<float>(v);
  int vocab_w = p.Weight("vocab", DType::kF32, {vocab}, range);
  const int64_t f32 = static_cast<int64_t>(DType::kF32);
  int idsf = p.Act("idsf", DType::kF32, {"batch", "sequence"});
  int x3 = p.Act("x3", DType::kF32, {"batch", "sequence", 1});
  p.Op("cast", {ids}, {idsf}, {AInt("to", f32)});
  p.Op("unsqueeze", {idsf, axes2}, {x3});
  int seen = x3;
  int present = -1;
  if (with_kv) {
    present = p.Act("present.0", DType::kF32, {"batch", "total", 1});
    p.Op("concat", {past, x3}, {present}, {AInt("axis", 1)});
    seen = present;
  }
  auto sum_of = [&](int t, const std::string &name) {
    int s = p.Act(name, DType::kF32, {});
    p.Op("reduce_sum", {t}, {s}, {AInt("keepdims", 0), AInt("noop_with_empty_axes", 0)});
    return s;
  };
  int s1 = sum_of(seen, "s_tokens");
  int maskf = p.Act("maskf", DType::kF32, {"batch", "total"});
  p.Op("cast", {mask}, {maskf}, {AInt("to", f32)});
  int s2 = sum_of(maskf, "s_mask");
  int posf = p.Act("posf", DType::kF32, {"batch", "sequence"});
  p.Op("cast", {pos}, {posf}, {AInt("to", f32)});
  int s3 = sum_of(posf, "s_pos");
  int t1 = p.Act("t1", DType::kF32, {});
  int t2 = p.Act("t2", DType::kF32, {});
  p.Op("add", {s1, s2}, {t1});
  p.Op("add", {t1, s3}, {t2});
  int d = p.Act("d", DType::kF32, {vocab});
  int a = p.Act("a", DType::kF32, {vocab});
  int logits = p.Act("logits", DType::kF32, {vocab});
  p.Op("sub", {t2, vocab_w}, {d});
  p.Op("abs", {d}, {a});
  p.Op("neg", {a}, {logits});
  p.Output(logits);
  if (with_kv)
    p.Output(present);
  p.input_ids = ids;
  p.attention_mask = mask;
  p.position_ids = pos;
  p.logits = logits;
  if (with_kv)
    p.kv.push_back({past, present});
  return p;
}

// What BuildSumDecoder should generate greedily, computed directly.
inline std::vector<int32_t> SumDecoderReference(std::vector<int32_t> tokens, bool with_kv,
                                                int vocab, int new_tokens) {
  std::vector<int32_t> out;
  int64_t past = 0;
  for (int step = 0; step < new_tokens; ++step) {
    int64_t total = static_cast<int64_t>(tokens.size());
    int64_t first = with_kv ? past : 0;
    double t = 0;
    for (int32_t tok : tokens)
      t += tok;
    t += static_cast<double>(total);
    for (int64_t p = first; p < total; ++p)
      t += static_cast<double>(p);
    int32_t next = static_cast<int32_t>(std::min<double>(std::max(0.0, t), vocab - 1));
    out.push_back(next);
    tokens.push_back(next);
    past = total;
  }
  return out;
}

// A byte-level BPE tokenizer.json in which token i reads "<i>", for reading
// BuildSumDecoder's output as text.
inline std::string AngleTokenizerJson(int vocab) {
  std::string v;
  for (int i = 0; i < vocab; ++i)
    v += (i ? ", \"<" : "\"<") + std::to_string(i) + ">\": " + std::to_string(i);
  return R"({"model": {"type": "BPE", "merges": [], "vocab": {)" + v +
         R"(}}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
            "decoder": {"type": "ByteLevel"}})";
}

// A bigram decoder: the logits at each position are row ids[t] of `table`
// ([vocab, vocab], row-major), whatever came before. Dense interface with
// input_ids only; logits [batch, sequence, vocab] (perplexity's closed form).
inline TestPlan BuildBigramDecoder(const std::vector<float> &table, int vocab) {
  TestPlan p;
  int ids = p.Input("input_ids", DType::kI64, {"batch", "sequence"});
  int e = p.Weight("E", DType::kF32, {vocab, vocab}, table);
  int logits = p.Act("logits", DType::kF32, {"batch", "sequence", vocab});
  p.Op("gather", {e, ids}, {logits}, {AInt("axis", 0)});
  p.Output(logits);
  p.input_ids = ids;
  p.logits = logits;
  return p;
}

// A byte-level BPE tokenizer.json whose tokens are the letters a, b, ...
// (`vocab` of them, ids in order) and no merges: "cab" is [2, 0, 1].
inline std::string LetterTokenizerJson(int vocab) {
  std::string v;
  for (int i = 0; i < vocab; ++i)
    v += std::string(i ? ", \"" : "\"") + static_cast<char>('a' + i) + "\": " + std::to_string(i);
  return R"({"model": {"type": "BPE", "merges": [], "vocab": {)" + v +
         R"(}}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false},
            "decoder": {"type": "ByteLevel"}})";
}

} // namespace kiln::test
