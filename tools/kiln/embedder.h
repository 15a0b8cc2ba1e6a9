// What `kiln serve` needs from the other commands' code: an encoder plan's
// embeddings (cmd_embed.cpp, the same batching and pooling as `kiln embed`)
// and the plan's chat template as a renderer (serve_chat.cpp).
#pragma once

#include "cli_args.h"
#include "kiln/plan.h"
#include "kiln/tokenizer.h"
#include "serve/http_server.h"

#include <memory>
#include <mutex>

namespace kiln::cli {

class PlanEmbedder {
public:
  // The plan must be an encoder and outlive the embedder; --device and
  // --threads in `a` choose where it runs.
  static StatusOr<std::unique_ptr<PlanEmbedder>> Create(const Plan &plan, const ParsedArgs &a);
  ~PlanEmbedder();
  // One vector per input, pooled and normalized as `kiln embed` does.
  // Thread-safe (one graph run at a time).
  StatusOr<serve::Embeddings> Embed(const serve::EmbeddingJob &job);

  struct Impl;

private:
  explicit PlanEmbedder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
};

// The renderer of the plan's chat template, with the tokenizer's BOS and
// EOS tokens; an empty function when the plan has no template.
StatusOr<serve::ChatRenderer> ChatRendererFor(const Plan &plan, const Tokenizer *tokenizer);

} // namespace kiln::cli
