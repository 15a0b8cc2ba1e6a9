// Hand-written protobuf wire format for onnx.TensorProto (onnx/onnx.proto3):
// only the fields a dense tensor needs; everything else is skipped or, when
// it would change the meaning (strings, external data), refused.
#include "kiln/tensor_proto.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace kiln {
namespace {

// TensorProto field numbers.
enum Field : uint32_t {
  kDims = 1,
  kDataType = 2,
  kFloatData = 4,
  kInt32Data = 5,
  kStringData = 6,
  kInt64Data = 7,
  kName = 8,
  kRawData = 9,
  kDoubleData = 10,
  kUint64Data = 11,
  kExternalData = 13,
  kDataLocation = 14,
};

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// A bounds-checked cursor over untrusted bytes.
class Reader {
public:
  Reader(const uint8_t *p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ == end_; }

  bool Varint(uint64_t *v) {
    uint64_t out = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_)
        return false;
      uint8_t b = *p_++;
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *v = out;
        return true;
      }
    }
    return false; // more than 10 bytes
  }
  bool Fixed(void *out, size_t n) {
    if (static_cast<size_t>(end_ - p_) < n)
      return false;
    std::memcpy(out, p_, n);
    p_ += n;
    return true;
  }
  // A length-delimited payload; `out` is a sub-reader over it.
  bool Bytes(const uint8_t **data, size_t *len) {
    uint64_t n;
    if (!Varint(&n) || n > static_cast<uint64_t>(end_ - p_))
      return false;
    *data = p_;
    *len = static_cast<size_t>(n);
    p_ += n;
    return true;
  }

private:
  const uint8_t *p_;
  const uint8_t *end_;
};

Status Malformed(const std::string &what) { return DataLoss("malformed TensorProto: " + what); }

// A repeated numeric field arrives packed (one length-delimited run) or as
// one entry per tag; both append to `out`.
Status ReadVarints(Reader &r, uint32_t wire, std::vector<uint64_t> &out, const char *field) {
  uint64_t v;
  if (wire == kVarint) {
    if (!r.Varint(&v))
      return Malformed(std::string("truncated varint in ") + field);
    out.push_back(v);
    return Status::Ok();
  }
  if (wire != kLengthDelimited)
    return Malformed(std::string("bad wire type for ") + field);
  const uint8_t *p;
  size_t n;
  if (!r.Bytes(&p, &n))
    return Malformed(std::string("truncated ") + field);
  Reader sub(p, n);
  while (!sub.done()) {
    if (!sub.Varint(&v))
      return Malformed(std::string("truncated varint in packed ") + field);
    out.push_back(v);
  }
  return Status::Ok();
}

template <typename T>
Status ReadFixed(Reader &r, uint32_t wire, std::vector<T> &out, const char *field) {
  constexpr uint32_t kWire = sizeof(T) == 4 ? kFixed32 : kFixed64;
  T v;
  if (wire == kWire) {
    if (!r.Fixed(&v, sizeof(T)))
      return Malformed(std::string("truncated ") + field);
    out.push_back(v);
    return Status::Ok();
  }
  if (wire != kLengthDelimited)
    return Malformed(std::string("bad wire type for ") + field);
  const uint8_t *p;
  size_t n;
  if (!r.Bytes(&p, &n))
    return Malformed(std::string("truncated ") + field);
  if (n % sizeof(T) != 0)
    return Malformed(std::string("packed ") + field + " length " + std::to_string(n) +
                     " is not a multiple of " + std::to_string(sizeof(T)));
  size_t old = out.size();
  out.resize(old + n / sizeof(T));
  if (n)
    std::memcpy(out.data() + old, p, n);
  return Status::Ok();
}

Status SkipField(Reader &r, uint32_t wire, uint32_t field) {
  uint64_t v;
  const uint8_t *p;
  size_t n;
  bool ok = false;
  switch (wire) {
  case kVarint:
    ok = r.Varint(&v);
    break;
  case kFixed64:
    ok = r.Fixed(&v, 8);
    break;
  case kFixed32:
    ok = r.Fixed(&v, 4);
    break;
  case kLengthDelimited:
    ok = r.Bytes(&p, &n);
    break;
  default:
    return Malformed("field " + std::to_string(field) + " has unsupported wire type " +
                     std::to_string(wire));
  }
  return ok ? Status::Ok() : Malformed("field " + std::to_string(field) + " is truncated");
}

// The fields as they came off the wire, before they are checked together.
struct RawProto {
  std::vector<uint64_t> dims, int32_data, int64_data, uint64_data;
  std::vector<float> float_data;
  std::vector<double> double_data;
  uint64_t data_type = 0;
  std::string name;
  const uint8_t *raw = nullptr;
  size_t raw_size = 0;
  bool has_raw = false;
};

Status ReadFields(Reader &r, RawProto &t) {
  while (!r.done()) {
    uint64_t key;
    if (!r.Varint(&key))
      return Malformed("truncated field key");
    uint32_t wire = static_cast<uint32_t>(key & 7);
    uint64_t field = key >> 3;
    if (field == 0 || field > 0x1fffffff)
      return Malformed("invalid field number");
    const uint8_t *p;
    size_t n;
    switch (field) {
    case kDims:
      KILN_RETURN_IF_ERROR(ReadVarints(r, wire, t.dims, "dims"));
      break;
    case kDataType:
      if (wire != kVarint || !r.Varint(&t.data_type))
        return Malformed("bad data_type");
      break;
    case kFloatData:
      KILN_RETURN_IF_ERROR(ReadFixed(r, wire, t.float_data, "float_data"));
      break;
    case kInt32Data:
      KILN_RETURN_IF_ERROR(ReadVarints(r, wire, t.int32_data, "int32_data"));
      break;
    case kInt64Data:
      KILN_RETURN_IF_ERROR(ReadVarints(r, wire, t.int64_data, "int64_data"));
      break;
    case kUint64Data:
      KILN_RETURN_IF_ERROR(ReadVarints(r, wire, t.uint64_data, "uint64_data"));
      break;
    case kDoubleData:
      KILN_RETURN_IF_ERROR(ReadFixed(r, wire, t.double_data, "double_data"));
      break;
    case kStringData:
      return InvalidArgument("string tensors (string_data) are not supported");
    case kExternalData:
      return InvalidArgument("TensorProto with external_data is not supported: "
                             "embed the data (raw_data) instead");
    case kName:
      if (wire != kLengthDelimited || !r.Bytes(&p, &n))
        return Malformed("bad name");
      t.name.assign(reinterpret_cast<const char *>(p), n);
      break;
    case kRawData:
      if (wire != kLengthDelimited || !r.Bytes(&t.raw, &t.raw_size))
        return Malformed("bad raw_data");
      t.has_raw = true;
      break;
    case kDataLocation: {
      uint64_t loc;
      if (wire != kVarint || !r.Varint(&loc))
        return Malformed("bad data_location");
      if (loc != 0)
        return InvalidArgument("TensorProto data_location is EXTERNAL, which is not supported");
      break;
    }
    default:
      KILN_RETURN_IF_ERROR(SkipField(r, wire, static_cast<uint32_t>(field)));
      break;
    }
  }
  return Status::Ok();
}

// Copies a typed repeated field into `out`, converting each element.
template <typename Src, typename Dst> void Convert(const std::vector<Src> &src, Tensor &out) {
  Dst *dst = out.data<Dst>();
  for (size_t i = 0; i < src.size(); ++i)
    dst[i] = static_cast<Dst>(src[i]);
}

} // namespace

Tensor::Tensor(DType dtype, Shape shape, std::string name)
    : dtype_(dtype), shape_(std::move(shape)), name_(std::move(name)),
      bytes_(static_cast<size_t>(NumElements(shape_)) * DTypeSize(dtype), 0) {}

Tensor Tensor::CopyOf(const TensorView &view, std::string name) {
  Tensor t(view.dtype, view.shape, std::move(name));
  if (!t.bytes_.empty())
    std::memcpy(t.bytes_.data(), view.data, t.bytes_.size());
  return t;
}

TensorView Tensor::view() const {
  TensorView v;
  v.dtype = dtype_;
  v.shape = shape_;
  v.data = const_cast<uint8_t *>(bytes_.data());
  return v;
}

StatusOr<DType> DTypeFromOnnx(int t) {
  switch (t) {
  case 1:
    return DType::kF32;
  case 2:
    return DType::kU8;
  case 3:
    return DType::kI8;
  case 6:
    return DType::kI32;
  case 7:
    return DType::kI64;
  case 9:
    return DType::kBool;
  case 10:
    return DType::kF16;
  case 11:
    return DType::kF64;
  case 16:
    return DType::kBF16;
  }
  static const char *kNames[] = {"UNDEFINED",  "FLOAT",   "UINT8",  "INT8",   "UINT16",
                                 "INT16",      "INT32",   "INT64",  "STRING", "BOOL",
                                 "FLOAT16",    "DOUBLE",  "UINT32", "UINT64", "COMPLEX64",
                                 "COMPLEX128", "BFLOAT16"};
  std::string name = t >= 0 && t < 17 ? kNames[t] : "unknown";
  return InvalidArgument("ONNX data type " + std::to_string(t) + " (" + name +
                         ") is not supported");
}

int OnnxDataType(DType d) {
  switch (d) {
  case DType::kF32:
    return 1;
  case DType::kU8:
    return 2;
  case DType::kI8:
    return 3;
  case DType::kI32:
    return 6;
  case DType::kI64:
    return 7;
  case DType::kBool:
    return 9;
  case DType::kF16:
    return 10;
  case DType::kF64:
    return 11;
  case DType::kBF16:
    return 16;
  default:
    return 0;
  }
}

StatusOr<Tensor> ParseTensorProto(const void *data, size_t size) {
  Reader r(static_cast<const uint8_t *>(data), size);
  RawProto raw;
  KILN_RETURN_IF_ERROR(ReadFields(r, raw));
  if (raw.data_type > 1000)
    return Malformed("data_type " + std::to_string(raw.data_type));
  KILN_ASSIGN_OR_RETURN(DType dtype, DTypeFromOnnx(static_cast<int>(raw.data_type)));

  Shape shape;
  uint64_t numel = 1;
  for (uint64_t d : raw.dims) {
    if (static_cast<int64_t>(d) < 0)
      return Malformed("negative dimension");
    if (__builtin_mul_overflow(numel, d, &numel) || numel > (uint64_t{1} << 48))
      return Malformed("shape too large");
    shape.push_back(static_cast<int64_t>(d));
  }
  uint64_t bytes = numel * DTypeSize(dtype);

  // Every element must come from somewhere before the tensor is allocated,
  // so a forged shape cannot make us allocate more than the input holds.
  size_t typed_count = 0;
  const char *typed_field = "";
  switch (dtype) {
  case DType::kF32:
    typed_count = raw.float_data.size();
    typed_field = "float_data";
    break;
  case DType::kF64:
    typed_count = raw.double_data.size();
    typed_field = "double_data";
    break;
  case DType::kI64:
    typed_count = raw.int64_data.size();
    typed_field = "int64_data";
    break;
  default:
    typed_count = raw.int32_data.size();
    typed_field = "int32_data";
    break;
  }
  if (raw.has_raw) {
    if (raw.raw_size != bytes)
      return Malformed("raw_data has " + std::to_string(raw.raw_size) + " bytes, shape " +
                       ShapeToString(shape) + " of " + DTypeName(dtype) + " needs " +
                       std::to_string(bytes));
  } else if (typed_count != numel) {
    return Malformed(std::string(typed_field) + " has " + std::to_string(typed_count) +
                     " elements, shape " + ShapeToString(shape) + " needs " +
                     std::to_string(numel));
  }

  Tensor t(dtype, shape, raw.name);
  if (raw.has_raw) {
    if (bytes)
      std::memcpy(t.bytes().data(), raw.raw, bytes);
    return t;
  }
  switch (dtype) {
  case DType::kF32:
    Convert<float, float>(raw.float_data, t);
    break;
  case DType::kF64:
    Convert<double, double>(raw.double_data, t);
    break;
  case DType::kI64:
    Convert<uint64_t, int64_t>(raw.int64_data, t);
    break;
  case DType::kI32:
    Convert<uint64_t, int32_t>(raw.int32_data, t);
    break;
  case DType::kI8:
    Convert<uint64_t, int8_t>(raw.int32_data, t);
    break;
  case DType::kU8:
    Convert<uint64_t, uint8_t>(raw.int32_data, t);
    break;
  case DType::kBool:
    for (size_t i = 0; i < raw.int32_data.size(); ++i)
      t.data<uint8_t>()[i] = raw.int32_data[i] != 0;
    break;
  // int32_data holds the 16-bit patterns of half and bfloat16 values.
  case DType::kF16:
  case DType::kBF16:
    Convert<uint64_t, uint16_t>(raw.int32_data, t);
    break;
  default:
    return Internal("unhandled dtype");
  }
  return t;
}

StatusOr<Tensor> ReadTensorProtoFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return NotFound("cannot open tensor file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    return InvalidArgument("cannot read tensor file '" + path + "'");
  auto t = ParseTensorProto(bytes.data(), bytes.size());
  if (!t.ok())
    return t.status().WithContext("'" + path + "'");
  return t;
}

namespace {

void PutVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutKey(std::string &out, uint32_t field, uint32_t wire) { PutVarint(out, field << 3 | wire); }

} // namespace

std::string SerializeTensorProto(const Tensor &t) {
  std::string out, dims;
  for (int64_t d : t.shape())
    PutVarint(dims, static_cast<uint64_t>(d));
  if (!t.shape().empty()) {
    PutKey(out, kDims, kLengthDelimited);
    PutVarint(out, dims.size());
    out += dims;
  }
  PutKey(out, kDataType, kVarint);
  PutVarint(out, static_cast<uint64_t>(OnnxDataType(t.dtype())));
  if (!t.name().empty()) {
    PutKey(out, kName, kLengthDelimited);
    PutVarint(out, t.name().size());
    out += t.name();
  }
  PutKey(out, kRawData, kLengthDelimited);
  PutVarint(out, t.bytes().size());
  out.append(reinterpret_cast<const char *>(t.bytes().data()), t.bytes().size());
  return out;
}

Status WriteTensorProtoFile(const std::string &path, const Tensor &t) {
  std::string bytes = SerializeTensorProto(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return InvalidArgument("cannot open '" + path + "' for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out)
    return Internal("write to '" + path + "' failed");
  return Status::Ok();
}

} // namespace kiln
