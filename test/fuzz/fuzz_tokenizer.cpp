// libFuzzer target: tokenizer.json parsing, then encoding and decoding.
//
// Input: a tokenizer.json document, optionally followed by a NUL byte and a
// text. A document that parses encodes the text (or a fixed sample) with
// and without special tokens, decodes the ids whole and one at a time, and
// decodes ids read from the text's bytes (unknown and special ids
// included). A finding is a crash, a hang, a sanitizer report, or an
// encoding with an id the tokenizer does not know.
#include "kiln/tokenizer.h"

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

void Exercise(const kiln::Tokenizer &tok, std::string_view text) {
  for (bool special : {false, true}) {
    auto ids = tok.Encode(text, special);
    if (!ids.ok())
      continue;
    for (int32_t id : *ids)
      if (id < 0 || id >= tok.vocab_size())
        __builtin_trap(); // an id outside the vocabulary
    (void)tok.Decode(*ids, special);
    kiln::IncrementalDecoder inc(tok, special);
    for (int32_t id : *ids)
      (void)inc.Add(id);
    (void)inc.Flush();
  }
  // Arbitrary ids, four bytes each.
  std::vector<int32_t> raw(text.size() / 4);
  if (!raw.empty())
    std::memcpy(raw.data(), text.data(), raw.size() * 4);
  (void)tok.Decode(raw, true);
  (void)tok.Decode(raw, false);
  for (int32_t id : raw)
    (void)tok.TokenToId(tok.IdToToken(id));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  size_t nul = input.find('\0');
  std::string_view json = input.substr(0, nul);
  std::string_view text =
      nul == std::string_view::npos
          ? std::string_view("Hello, world! <|endoftext|> 12 ünïcödé 漢字 🙂")
          : input.substr(nul + 1);
  auto tok = kiln::Tokenizer::FromJson(json);
  if (!tok.ok()) {
    if (tok.status().message().empty())
      __builtin_trap(); // every refusal must say what is wrong
    return 0;
  }
  Exercise(**tok, text);
  return 0;
}
