// libFuzzer target: chat template compilation and rendering.
//
// Input: a template, optionally followed by a NUL byte and a JSON document
// used as the messages (a list) or as the variables (an object with
// "messages"). A template that compiles renders over that input and over a
// fixed conversation, with and without the generation prompt. A finding is a
// crash, a hang, a sanitizer report (leaks included: macros and namespaces
// must not form reference cycles), or a render longer than the output limit.
#include "kiln/chat_template.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <string>
#include <string_view>

namespace {

void Check(const kiln::StatusOr<std::string> &out) {
  if (out.ok() && out.value().size() > kiln::ChatTemplate::kMaxOutputBytes)
    __builtin_trap();  // the output limit did not hold
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  size_t nul = input.find('\0');
  std::string_view source = input.substr(0, nul);
  auto tmpl = kiln::ChatTemplate::Compile(source);
  if (!tmpl.ok())
    return 0;
  static const nlohmann::ordered_json kChat = nlohmann::ordered_json::parse(
      R"([{"role": "system", "content": " sys "}, {"role": "user", "content": "hi"},
          {"role": "assistant", "content": "yo", "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}]},
          {"role": "tool", "content": [{"type": "text", "text": "r"}]}])");
  static const nlohmann::ordered_json kVars = nlohmann::ordered_json::parse(
      R"({"bos_token": "<s>", "eos_token": "</s>", "tools": [{"type": "function", "function": {"name": "f"}}]})");
  for (bool agp : {false, true})
    Check(tmpl->Render(kChat, agp, kVars));
  if (nul != std::string_view::npos) {
    auto j = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, /*allow_exceptions=*/false);
    if (j.is_array()) {
      Check(tmpl->Render(j, true, kVars));
    } else if (j.is_object() && j.contains("messages")) {
      nlohmann::ordered_json messages = j["messages"];
      j.erase("messages");
      Check(tmpl->Render(messages, true, j));
    }
  }
  return 0;
}
