// Access to the committed tokenizer test data under test/tokenizer/.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::tokenizer::testing {

std::string ReadTestFile(const std::string &name); // fails the test if unreadable
nlohmann::json ReadTestJson(const std::string &name);
std::vector<std::string> ReadCorpus(); // test/tokenizer/corpus.jsonl

// A fixture's tokenizer.json with a variant's patch applied, as the generator
// applies it: "model" fields are merged, other keys replaced.
std::string PatchedFixture(const std::string &fixture, const nlohmann::json &patch);

std::string Describe(const std::vector<int32_t> &ids);
std::string Escape(const std::string &text); // C-style, for readable failures

} // namespace kiln::tokenizer::testing
