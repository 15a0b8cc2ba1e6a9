// Sentence embeddings from an encoder plan (BERT and its family), as
// `kiln embed` and kiln serve's /v1/embeddings compute them: texts are
// tokenized with the plan's tokenizer (special tokens added), run through the
// graph in batches padded to the batch's longest input with attention masks
// (so a vector does not depend on what it was batched with), and each
// input's token states (the output last_hidden_state, else the first
// [batch, sequence, hidden] output) are pooled into one vector as the plan's
// sentence-transformers config says: "mean" (the average over the input's
// tokens, special tokens included; also a plan without that config) or
// "cls" (the first token's state), L2-normalized when it has a Normalize
// module or the caller asks.
#pragma once

#include "kiln/status.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

class Plan;      // kiln/plan.h
class Tokenizer; // kiln/tokenizer.h

struct EmbedderOptions {
  std::string device = "cpu"; // kiln/device.h spelling: "cpu", "cuda", "cuda:N"
  int batch_size = 16;        // inputs per graph run, >= 1
  bool normalize = false;     // L2-normalize even when the plan's config does not
};

struct Embeddings {
  std::vector<std::vector<float>> vectors; // one per input, in input order
  std::vector<int64_t> token_counts;       // tokens of each input
  int64_t tokens = 0;                      // their sum
};

class Embedder {
public:
  // InvalidArgument when the plan is not an encoder kiln can fill (inputs
  // other than input_ids, attention_mask, token_type_ids, position_ids; no
  // [batch, sequence, hidden] output), has no tokenizer, or pools other
  // than "mean" or "cls"; the device's error when it cannot be opened. The
  // plan must outlive the embedder.
  static StatusOr<std::unique_ptr<Embedder>> Create(const Plan &plan,
                                                    const EmbedderOptions &options);
  ~Embedder();
  Embedder(const Embedder &) = delete;
  Embedder &operator=(const Embedder &) = delete;

  // Embeds `texts` (tokenized here) and then `ids` (token ids as given):
  // InvalidArgument naming the input (by its index in texts, then ids)
  // when one has no tokens or more than the model's positions. Thread-safe:
  // one graph run at a time.
  StatusOr<Embeddings> Embed(const std::vector<std::string> &texts,
                             const std::vector<std::vector<int32_t>> &ids = {});

  const Tokenizer &tokenizer() const;
  const char *pooling() const;    // "mean" or "cls"
  bool pooling_from_plan() const; // false: the plan has no pooling config (mean)
  bool normalized() const;
  int64_t context_length() const; // 0: not known

  struct Impl;

private:
  explicit Embedder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
};

} // namespace kiln
