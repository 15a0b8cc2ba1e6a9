//===- EmbeddedWeights.cpp - serve embedded weights from the file ---------===//

#include "compiler/importer/EmbeddedWeights.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <onnx/onnx_pb.h>

#include <cstring>
#include <optional>
#include <vector>

namespace kiln::onnx_import {
namespace {

/// Where a bytes field's payload lies in the file.
struct Span {
  uint64_t offset = 0, size = 0;
};

/// Walks protobuf wire format over [begin, end) of the mapped file, reading
/// only tags and lengths (skipped payloads are never touched, so their pages
/// are not faulted in).
class Wire {
public:
  Wire(const uint8_t *file, uint64_t begin, uint64_t end) : file(file), pos(begin), end(end) {}

  bool done() const { return pos >= end; }

  /// The next field's number and wire type; false at a malformed tag.
  bool next(uint32_t &field, uint32_t &type) {
    uint64_t key;
    if (!varint(key))
      return false;
    field = static_cast<uint32_t>(key >> 3);
    type = static_cast<uint32_t>(key & 7);
    return field != 0;
  }

  /// A length-delimited payload as a span of the file.
  bool bytes(Span &out) {
    uint64_t n;
    if (!varint(n) || n > end - pos)
      return false;
    out = {pos, n};
    pos += n;
    return true;
  }

  /// Skips a field of `type` (groups, deprecated, are refused).
  bool skip(uint32_t type) {
    uint64_t v;
    Span s;
    switch (type) {
    case 0:
      return varint(v);
    case 1:
      return advance(8);
    case 2:
      return bytes(s);
    case 5:
      return advance(4);
    default:
      return false;
    }
  }

private:
  bool varint(uint64_t &v) {
    v = 0;
    for (int shift = 0; shift < 64 && pos < end; shift += 7) {
      uint8_t b = file[pos++];
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return true;
    }
    return false;
  }
  bool advance(uint64_t n) {
    if (n > end - pos)
      return false;
    pos += n;
    return true;
  }

  const uint8_t *file;
  uint64_t pos, end;
};

// Field numbers from onnx.proto.
constexpr uint32_t kModelGraph = 7, kGraphInitializer = 5, kTensorRawData = 9;

/// The raw_data span of each initializer, in order (none where a tensor has
/// no raw_data); nullopt when the file does not walk cleanly.
std::optional<std::vector<std::optional<Span>>> locate(const uint8_t *file, uint64_t size) {
  std::vector<std::optional<Span>> out;
  Wire model(file, 0, size);
  while (!model.done()) {
    uint32_t field, type;
    if (!model.next(field, type))
      return std::nullopt;
    if (field != kModelGraph || type != 2) {
      if (!model.skip(type))
        return std::nullopt;
      continue;
    }
    // Several `graph` fields merge: their initializers concatenate.
    Span g;
    if (!model.bytes(g))
      return std::nullopt;
    Wire graph(file, g.offset, g.offset + g.size);
    while (!graph.done()) {
      if (!graph.next(field, type))
        return std::nullopt;
      if (field != kGraphInitializer || type != 2) {
        if (!graph.skip(type))
          return std::nullopt;
        continue;
      }
      Span t;
      if (!graph.bytes(t))
        return std::nullopt;
      std::optional<Span> raw;
      Wire tensor(file, t.offset, t.offset + t.size);
      while (!tensor.done()) {
        if (!tensor.next(field, type))
          return std::nullopt;
        Span s;
        if (field == kTensorRawData && type == 2) {
          if (!tensor.bytes(s))
            return std::nullopt;
          raw = s; // the last occurrence wins, as in parsing
        } else if (!tensor.skip(type)) {
          return std::nullopt;
        }
      }
      out.push_back(raw);
    }
  }
  return out;
}

/// Cheap evidence that `span` holds `data`: its first and last bytes.
bool sameEnds(const uint8_t *file, const Span &span, const std::string &data) {
  uint64_t n = std::min<uint64_t>(64, span.size);
  return span.size == data.size() && std::memcmp(file + span.offset, data.data(), n) == 0 &&
         std::memcmp(file + span.offset + span.size - n, data.data() + data.size() - n, n) == 0;
}

} // namespace

void moveEmbeddedWeightsToFile(onnx::ModelProto &model, llvm::StringRef path, uint64_t minBytes) {
  onnx::GraphProto *graph = model.mutable_graph();
  bool any = false;
  for (const onnx::TensorProto &t : graph->initializer())
    any |= t.raw_data().size() >= minBytes;
  if (!any)
    return;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return;
  const auto *file = reinterpret_cast<const uint8_t *>((*buffer)->getBufferStart());
  auto spans = locate(file, (*buffer)->getBufferSize());
  if (!spans || spans->size() != static_cast<size_t>(graph->initializer_size()))
    return;
  std::string location = llvm::sys::path::filename(path).str();
  for (int i = 0; i < graph->initializer_size(); ++i) {
    onnx::TensorProto &t = *graph->mutable_initializer(i);
    const std::optional<Span> &span = (*spans)[i];
    if (!span || t.raw_data().size() < minBytes ||
        t.data_location() == onnx::TensorProto::EXTERNAL || !sameEnds(file, *span, t.raw_data()))
      continue;
    // Swap with an empty string to free the copy, not just clear it.
    std::string().swap(*t.mutable_raw_data());
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char *key, const std::string &value) {
      onnx::StringStringEntryProto *e = t.add_external_data();
      e->set_key(key);
      e->set_value(value);
    };
    add("location", location);
    add("offset", std::to_string(span->offset));
    add("length", std::to_string(span->size));
    add(kEmbeddedKey, "1");
  }
}

} // namespace kiln::onnx_import
