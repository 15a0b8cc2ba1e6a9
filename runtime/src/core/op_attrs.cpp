#include "op_attrs.h"

namespace kiln {

// Accessors convert between int and float kinds (an importer may write
// `alpha` as an int); any other kind mismatch yields the fallback.

int64_t OpAttrs::Int(const std::string &name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  const AttrValue &v = it->second;
  switch (v.kind) {
  case AttrValue::Kind::kInt:
    return v.i;
  case AttrValue::Kind::kFloat:
    // Guard the conversion: out-of-range floats would be undefined.
    if (!(v.f >= -9.2e18f && v.f <= 9.2e18f))
      return fallback;
    return static_cast<int64_t>(v.f);
  case AttrValue::Kind::kInts:
    return v.ints.size() == 1 ? v.ints[0] : fallback;
  default:
    return fallback;
  }
}

float OpAttrs::Float(const std::string &name, float fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  const AttrValue &v = it->second;
  switch (v.kind) {
  case AttrValue::Kind::kFloat:
    return v.f;
  case AttrValue::Kind::kInt:
    return static_cast<float>(v.i);
  case AttrValue::Kind::kFloats:
    return v.floats.size() == 1 ? v.floats[0] : fallback;
  default:
    return fallback;
  }
}

std::string OpAttrs::String(const std::string &name, const std::string &fallback) const {
  auto it = values_.find(name);
  if (it == values_.end() || it->second.kind != AttrValue::Kind::kString)
    return fallback;
  return it->second.s;
}

std::vector<int64_t> OpAttrs::Ints(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return {};
  const AttrValue &v = it->second;
  if (v.kind == AttrValue::Kind::kInts)
    return v.ints;
  if (v.kind == AttrValue::Kind::kInt)
    return {v.i};
  return {};
}

std::vector<float> OpAttrs::Floats(const std::string &name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return {};
  const AttrValue &v = it->second;
  if (v.kind == AttrValue::Kind::kFloats)
    return v.floats;
  if (v.kind == AttrValue::Kind::kFloat)
    return {v.f};
  return {};
}

} // namespace kiln
