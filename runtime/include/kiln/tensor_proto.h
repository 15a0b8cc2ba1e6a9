// Owning tensors and the ONNX TensorProto wire format, read and written by
// hand (the runtime links no protobuf). Used by `kiln exec` and tests to
// exchange tensors with ONNX tooling (the .pb files of ONNX node tests).
#pragma once

#include "kiln/status.h"
#include "kiln/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

// A tensor that owns its bytes (little-endian, row-major).
class Tensor {
public:
  Tensor() = default;
  // Zero-filled. The caller checks that the shape is valid and sane.
  Tensor(DType dtype, Shape shape, std::string name = "");
  // Copies a view's bytes.
  static Tensor CopyOf(const TensorView &view, std::string name = "");

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  const std::string &name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  int64_t numel() const { return NumElements(shape_); }
  std::vector<uint8_t> &bytes() { return bytes_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }
  template <typename T> T *data() { return reinterpret_cast<T *>(bytes_.data()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(bytes_.data()); }
  // A view of the bytes, valid while this tensor lives and is not resized.
  TensorView view() const;

private:
  DType dtype_ = DType::kUndefined;
  Shape shape_;
  std::string name_;
  std::vector<uint8_t> bytes_;
};

// ONNX TensorProto.DataType <-> kiln DType. Only the types kiln computes in
// map; others are InvalidArgument naming the ONNX type.
StatusOr<DType> DTypeFromOnnx(int onnx_data_type);
int OnnxDataType(DType dtype); // 0 (UNDEFINED) for kUndefined

// Parses a serialized TensorProto. Bytes are untrusted: every varint and
// length is bounds-checked, and element counts must match the shape before
// anything is allocated. string_data and external data are InvalidArgument.
StatusOr<Tensor> ParseTensorProto(const void *data, size_t size);
StatusOr<Tensor> ReadTensorProtoFile(const std::string &path);

// Serializes with dims, data_type, name and raw_data.
std::string SerializeTensorProto(const Tensor &tensor);
Status WriteTensorProtoFile(const std::string &path, const Tensor &tensor);

} // namespace kiln
