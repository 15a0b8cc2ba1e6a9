// A plan's chat template with its BOS and EOS tokens (kiln/chat_template.h).
#include "kiln/chat_template.h"
#include "kiln/plan.h"
#include "kiln/plan_info.h"
#include "kiln/tokenizer.h"

#include <nlohmann/json.hpp>

namespace kiln {

StatusOr<PlanChatTemplate> PlanChatTemplate::ForPlan(const Plan &plan, const Tokenizer *tokenizer) {
  const PlanInfo info = DescribePlan(plan);
  PlanChatTemplate out;
  if (info.chat_template.empty())
    return out;
  auto compiled = ChatTemplate::Compile(info.chat_template);
  // kiln build refuses templates outside the supported subset, so this is a
  // plan from elsewhere or an older kiln.
  if (!compiled.ok())
    return InvalidArgument("the plan's chat template: " + compiled.status().message());
  out.template_ = std::move(*compiled);
  if (tokenizer != nullptr && info.model.bos_token_id >= 0)
    out.bos_token_ = tokenizer->IdToToken(static_cast<int32_t>(info.model.bos_token_id));
  if (tokenizer != nullptr && !info.model.eos_token_ids.empty() && info.model.eos_token_ids[0] >= 0)
    out.eos_token_ = tokenizer->IdToToken(static_cast<int32_t>(info.model.eos_token_ids[0]));
  return out;
}

StatusOr<std::string> PlanChatTemplate::Render(const nlohmann::ordered_json &messages,
                                               bool add_generation_prompt,
                                               const nlohmann::ordered_json &extra) const {
  if (!template_)
    return InvalidArgument("the plan has no chat template (its tokenizer_config.json had none)");
  nlohmann::ordered_json vars = extra.is_object() ? extra : nlohmann::ordered_json::object();
  if (bos_token_ && !vars.contains("bos_token"))
    vars["bos_token"] = *bos_token_;
  if (eos_token_ && !vars.contains("eos_token"))
    vars["eos_token"] = *eos_token_;
  return template_->Render(messages, add_generation_prompt, vars);
}

StatusOr<std::string> PlanChatTemplate::Render(const nlohmann::json &messages,
                                               bool add_generation_prompt) const {
  if (!template_)
    return InvalidArgument("the plan has no chat template (its tokenizer_config.json had none)");
  nlohmann::json vars = nlohmann::json::object();
  if (bos_token_)
    vars["bos_token"] = *bos_token_;
  if (eos_token_)
    vars["eos_token"] = *eos_token_;
  return template_->Render(messages, add_generation_prompt, vars);
}

} // namespace kiln
