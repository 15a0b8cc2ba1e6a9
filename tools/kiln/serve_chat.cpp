// The chat template of `kiln serve`'s /v1/chat/completions and /tokenize:
// the plan's stored Jinja template, compiled once at startup
// (kiln/chat_template.h).
#include "embedder.h"
#include "kiln/chat_template.h"

#include <nlohmann/json.hpp>
#include "kiln_schema/plan_generated.h"

namespace kiln::cli {

StatusOr<serve::ChatRenderer> ChatRendererFor(const Plan &plan, const Tokenizer *tokenizer) {
  const auto *t = plan.fb().chat_template();
  if (t == nullptr || t->size() == 0)
    return serve::ChatRenderer();
  auto compiled = ChatTemplate::Compile(std::string_view(t->c_str(), t->size()));
  // kiln build refuses templates outside the supported subset, so this is a
  // plan from elsewhere or an older kiln: refuse to start rather than fail
  // every chat request.
  if (!compiled.ok())
    return InvalidArgument("the plan's chat template: " + compiled.status().message());
  nlohmann::json extra = nlohmann::json::object();
  if (const fb::ModelMetadata *m = plan.fb().metadata()) {
    if (tokenizer != nullptr && m->bos_token_id() >= 0)
      extra["bos_token"] = tokenizer->IdToToken(static_cast<int32_t>(m->bos_token_id()));
    if (tokenizer != nullptr && m->eos_token_ids() && m->eos_token_ids()->size() > 0)
      extra["eos_token"] = tokenizer->IdToToken(static_cast<int32_t>(m->eos_token_ids()->Get(0)));
  }
  auto shared = std::make_shared<ChatTemplate>(std::move(*compiled));
  return serve::ChatRenderer(
      [shared, extra](const nlohmann::json &messages, bool add_generation_prompt) {
        return shared->Render(messages, add_generation_prompt, extra);
      });
}

} // namespace kiln::cli
