// Request parameters, their validation, and StopChecker.
#include "kiln/request.h"

#include <algorithm>

namespace kiln {

Status ValidateRequestParams(const RequestParams &p) {
  KILN_RETURN_IF_ERROR(ValidateSamplingParams(p.sampling));
  if (p.max_new_tokens < 0)
    return InvalidArgument("max_new_tokens must be >= 0, got " + std::to_string(p.max_new_tokens));
  if (p.min_new_tokens < 0)
    return InvalidArgument("min_new_tokens must be >= 0, got " + std::to_string(p.min_new_tokens));
  if (p.min_new_tokens > p.max_new_tokens)
    return InvalidArgument("min_new_tokens (" + std::to_string(p.min_new_tokens) +
                           ") must not exceed max_new_tokens (" + std::to_string(p.max_new_tokens) +
                           ")");
  for (size_t i = 0; i < p.stop.size(); ++i)
    if (p.stop[i].empty())
      return InvalidArgument("stop string " + std::to_string(i) + " is empty");
  for (size_t i = 0; i < p.stop_token_ids.size(); ++i)
    if (p.stop_token_ids[i] < 0)
      return InvalidArgument("stop_token_ids[" + std::to_string(i) + "] must be >= 0, got " +
                             std::to_string(p.stop_token_ids[i]));
  if (p.n < 1)
    return InvalidArgument("n must be >= 1, got " + std::to_string(p.n));
  return Status::Ok();
}

Status CheckPromptLength(int64_t prompt_tokens, int64_t context_length) {
  if (context_length > 0 && prompt_tokens > context_length)
    return InvalidArgument("prompt of " + std::to_string(prompt_tokens) +
                           " tokens is longer than the context length of " +
                           std::to_string(context_length));
  return Status::Ok();
}

uint64_t CompletionSeed(uint64_t seed, int index) {
  if (index == 0)
    return seed;
  // SplitMix64 at position `index` of the stream that starts at `seed`: a
  // bijection of seed + index * gamma, so nearby seeds and indices spread out.
  uint64_t z = seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SamplingParams CompletionSampling(const RequestParams &params, int index) {
  SamplingParams s = params.sampling;
  s.seed = CompletionSeed(s.seed, index);
  return s;
}

StatusOr<std::unique_ptr<StopChecker>> StopChecker::Create(const RequestParams &params,
                                                           const std::vector<int64_t> &eos_ids,
                                                           const Tokenizer *tokenizer) {
  KILN_RETURN_IF_ERROR(ValidateRequestParams(params));
  if (!params.stop.empty() && !tokenizer)
    return InvalidArgument("stop strings need a tokenizer to read the output; the plan has none");
  return std::unique_ptr<StopChecker>(new StopChecker(params, eos_ids, tokenizer));
}

StopChecker::StopChecker(const RequestParams &params, const std::vector<int64_t> &eos_ids,
                         const Tokenizer *tokenizer)
    : max_new_tokens_(params.max_new_tokens), min_new_tokens_(params.min_new_tokens),
      matcher_(params.stop) {
  if (!params.ignore_eos)
    for (int64_t id : eos_ids)
      if (id >= 0 && id <= INT32_MAX)
        end_ids_.push_back(static_cast<int32_t>(id));
  eos_count_ = end_ids_.size();
  end_ids_.insert(end_ids_.end(), params.stop_token_ids.begin(), params.stop_token_ids.end());
  if (tokenizer)
    decoder_ = std::make_unique<IncrementalDecoder>(*tokenizer, /*skip_special_tokens=*/true);
}

const std::vector<int32_t> &StopChecker::Suppressed() const {
  return generated_ < min_new_tokens_ ? end_ids_ : none_;
}

std::string StopChecker::Append(int32_t token) {
  if (finished_)
    return "";
  ++generated_;
  auto end = std::find(end_ids_.begin(), end_ids_.end(), token);
  // An end id that slipped past suppression (all logits -inf) still ends it.
  if (end != end_ids_.end()) {
    bool eos = static_cast<size_t>(end - end_ids_.begin()) < eos_count_;
    return Finish(eos ? FinishReason::kEos : FinishReason::kStopToken, "");
  }
  std::string text = decoder_ ? decoder_->Add(token) : "";
  // Before min_new_tokens the text bypasses the matcher, which therefore
  // holds nothing yet when it starts looking.
  if (generated_ > min_new_tokens_) {
    text = matcher_.Feed(text);
    if (matcher_.stopped())
      return Finish(FinishReason::kStopString, std::move(text));
  }
  if (generated_ >= max_new_tokens_)
    return Finish(FinishReason::kLength, std::move(text));
  return text;
}

std::string StopChecker::Finish(FinishReason reason, std::string text) {
  finished_ = true;
  reason_ = reason;
  return text + Flush();
}

std::string StopChecker::Flush() {
  if (flushed_)
    return "";
  flushed_ = true;
  if (matcher_.stopped())
    return "";
  std::string tail = decoder_ ? decoder_->Flush() : "";
  if (generated_ <= min_new_tokens_)
    return tail;
  // The decoder's last piece (a U+FFFD for a cut character) goes through the
  // matcher too; the finish reason stays the caller's.
  std::string out = matcher_.Feed(tail);
  return out + matcher_.Flush();
}

} // namespace kiln
