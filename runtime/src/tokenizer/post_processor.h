// The tokenizer.json "post_processor", as far as it changes ids: the special
// tokens that add_special_tokens puts around a single sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "tokenizer/json_util.h"

namespace kiln::tokenizer {

class PostProcessor {
public:
  // Accepts null, ByteLevel (offsets only, no ids), TemplateProcessing,
  // BertProcessing, RobertaProcessing, and Sequence of those.
  Status Parse(const Json *config);
  // Wraps the ids of one sequence in the template's special tokens.
  std::vector<int32_t> Apply(std::vector<int32_t> ids) const;
  // InvalidArgument naming the first id the template adds for which
  // `known(id)` is false: every id an encoding yields must be a token.
  Status CheckIds(const std::function<bool(int32_t)> &known) const;

private:
  Status ParseOne(const Json &config, const std::string &path);
  Status ParseTemplate(const Json &config, const std::string &path);
  Status ParseClsSep(const Json &config, const std::string &path);

  bool has_template_ = false;
  std::vector<int32_t> before_, after_; // the single-sequence template around $A
};

} // namespace kiln::tokenizer
