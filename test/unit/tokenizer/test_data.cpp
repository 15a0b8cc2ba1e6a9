#include "test_data.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace kiln::tokenizer::testing {

std::string ReadTestFile(const std::string &name) {
  const std::string path = std::string(KILN_TOKENIZER_TESTDATA) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json ReadTestJson(const std::string &name) {
  return nlohmann::json::parse(ReadTestFile(name));
}

std::vector<std::string> ReadCorpus() {
  std::vector<std::string> lines;
  std::istringstream in(ReadTestFile("corpus.jsonl"));
  std::string line;
  while (std::getline(in, line))
    lines.push_back(nlohmann::json::parse(line).get<std::string>());
  return lines;
}

std::string PatchedFixture(const std::string &fixture, const nlohmann::json &patch) {
  nlohmann::json config = ReadTestJson(fixture);
  for (const auto &[key, value] : patch.items()) {
    if (key == "model") {
      for (const auto &[field, v] : value.items())
        config["model"][field] = v;
    } else {
      config[key] = value;
    }
  }
  return config.dump();
}

std::string Describe(const std::vector<int32_t> &ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    out += (i ? ", " : "") + std::to_string(ids[i]);
  return out + "]";
}

std::string Escape(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return "\"" + out + "\"";
}

} // namespace kiln::tokenizer::testing
