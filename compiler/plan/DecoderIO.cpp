//===- DecoderIO.cpp - find a decoder's inputs and outputs ---------------===//

#include "compiler/plan/DecoderIO.h"

#include "llvm/ADT/StringRef.h"

#include <map>
#include <optional>

namespace kiln::plan {
namespace {

/// A KV cache tensor: layer N and whether it is the key (0) or value (1).
using KVSlot = std::pair<int64_t, int>;

/// Parses "<prefix>N.key" / "<prefix>N.value".
std::optional<KVSlot> parseKV(llvm::StringRef name, llvm::StringRef prefix) {
  if (!name.consume_front(prefix))
    return std::nullopt;
  size_t dot = name.find('.');
  if (dot == llvm::StringRef::npos)
    return std::nullopt;
  int64_t layer = 0;
  if (name.take_front(dot).getAsInteger(10, layer) || layer < 0)
    return std::nullopt;
  llvm::StringRef which = name.drop_front(dot + 1);
  if (which == "key")
    return KVSlot{layer, 0};
  if (which == "value")
    return KVSlot{layer, 1};
  return std::nullopt;
}

llvm::Error err(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace

llvm::Expected<DecoderDesc> detectDecoderIO(const GraphDesc &graph) {
  DecoderDesc d;
  std::map<KVSlot, int32_t> past, present;
  for (int32_t id : graph.inputs) {
    const std::string &name = graph.tensors[id].name;
    if (name == "input_ids")
      d.inputIds = id;
    if (name == "attention_mask")
      d.attentionMask = id;
    if (name == "position_ids")
      d.positionIds = id;
    if (auto kv = parseKV(name, "past_key_values."))
      past[*kv] = id;
  }
  for (int32_t id : graph.outputs) {
    const std::string &name = graph.tensors[id].name;
    if (name == "logits")
      d.logits = id;
    if (auto kv = parseKV(name, "present."))
      present[*kv] = id;
  }
  auto label = [](const KVSlot &s) {
    return std::to_string(s.first) + (s.second == 0 ? ".key" : ".value");
  };
  for (const auto &[slot, id] : past) {
    auto it = present.find(slot);
    if (it == present.end())
      return err("graph input past_key_values." + label(slot) + " has no matching output present." +
                 label(slot));
    d.kv.emplace_back(id, it->second);
  }
  // A model exported without cache inputs (optimum's decoder_model.onnx)
  // still outputs present.*: it simply has no cache to carry.
  for (const auto &[slot, id] : present)
    if (!past.empty() && !past.count(slot))
      return err("graph output present." + label(slot) + " has no matching input past_key_values." +
                 label(slot));
  return d;
}

llvm::Expected<RaggedDesc> detectRaggedIO(const GraphDesc &graph) {
  RaggedDesc r;
  std::map<KVSlot, int32_t> cache;
  const std::pair<const char *, int32_t *> roles[] = {{"input_ids", &r.inputIds},
                                                      {"position_ids", &r.positionIds},
                                                      {"kv_slots", &r.kvSlots},
                                                      {"query_start", &r.queryStart},
                                                      {"context_lens", &r.contextLens},
                                                      {"block_tables", &r.blockTables},
                                                      {"logits_indices", &r.logitsIndices}};
  for (int32_t id : graph.inputs) {
    const std::string &name = graph.tensors[id].name;
    for (auto [role, slot] : roles)
      if (name == role)
        *slot = id;
    if (auto kv = parseKV(name, "kv_cache."))
      cache[*kv] = id;
  }
  if (cache.empty())
    return r;
  for (int32_t id : graph.outputs)
    if (graph.tensors[id].name == "logits")
      r.logits = id;
  for (auto [role, slot] : roles)
    if (*slot < 0)
      return err(llvm::Twine("a ragged graph (it has kv_cache inputs) has no ") + role + " input");
  if (r.logits < 0)
    return err("a ragged graph has no logits output");
  int64_t layers = cache.rbegin()->first.first + 1;
  for (int64_t layer = 0; layer < layers; ++layer) {
    auto k = cache.find({layer, 0}), v = cache.find({layer, 1});
    if (k == cache.end() || v == cache.end())
      return err("a ragged graph has no kv_cache." + std::to_string(layer) +
                 (k == cache.end() ? ".key" : ".value") + " input");
    r.kvCache.emplace_back(k->second, v->second);
  }
  r.present = true;
  return r;
}

} // namespace kiln::plan
