// The chat template of `kiln serve`'s /v1/chat/completions.
#include "embedder.h"
#include "kiln_schema/plan_generated.h"

namespace kiln::cli {

StatusOr<serve::ChatRenderer> ChatRendererFor(const Plan &plan, const Tokenizer *tokenizer) {
  (void)tokenizer;
  const auto *t = plan.fb().chat_template();
  if (t == nullptr || t->size() == 0)
    return serve::ChatRenderer();
  // The template engine (kiln/chat_template.h) is not merged yet: chat is
  // refused with a 400 that says the plan has no usable template.
  return serve::ChatRenderer();
}

} // namespace kiln::cli
