// Attributes of one plan op, decoded from the FlatBuffer once at load time so
// backends never touch the plan format.
#pragma once

#include "kiln/status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln {

struct AttrValue {
  enum class Kind { kInt, kFloat, kString, kInts, kFloats } kind = Kind::kInt;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

class OpAttrs {
public:
  void Set(const std::string &name, AttrValue v) { values_[name] = std::move(v); }
  bool Has(const std::string &name) const { return values_.count(name) != 0; }
  int64_t Int(const std::string &name, int64_t fallback) const;
  float Float(const std::string &name, float fallback) const;
  std::string String(const std::string &name, const std::string &fallback) const;
  std::vector<int64_t> Ints(const std::string &name) const;  // empty when absent
  std::vector<float> Floats(const std::string &name) const;
  const std::map<std::string, AttrValue> &all() const { return values_; }

private:
  std::map<std::string, AttrValue> values_;
};

}  // namespace kiln
