// TensorProto reading and writing, including the encodings ONNX tools emit
// (typed repeated fields, packed or not) and malformed bytes.
#include "kiln/tensor_proto.h"
#include "test_plan.h"

#include <gtest/gtest.h>

#include <random>

namespace kiln {
namespace {

// Minimal protobuf encoder for building test inputs by hand.
struct Proto {
  std::string b;
  void Varint(uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<char>(v));
  }
  void Key(int field, int wire) { Varint(static_cast<uint64_t>(field) << 3 | wire); }
  void Bytes(int field, const std::string &s) {
    Key(field, 2);
    Varint(s.size());
    b += s;
  }
  void Int(int field, uint64_t v) {
    Key(field, 0);
    Varint(v);
  }
  void Fixed32(int field, float f) {
    Key(field, 5);
    b.append(reinterpret_cast<const char *>(&f), 4);
  }
};

std::string Packed(const std::vector<uint64_t> &vs) {
  Proto p;
  for (uint64_t v : vs)
    p.Varint(v);
  return p.b;
}

TEST(TensorProto, RoundTripsEveryDType) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16, DType::kF64, DType::kI8, DType::kU8,
                   DType::kI32, DType::kI64, DType::kBool}) {
    Tensor t(dt, {2, 3}, "t");
    for (size_t i = 0; i < t.bytes().size(); ++i)
      t.bytes()[i] = static_cast<uint8_t>(i * 7 + 1);
    std::string s = SerializeTensorProto(t);
    auto back = ParseTensorProto(s.data(), s.size());
    ASSERT_TRUE(back.ok()) << DTypeName(dt) << ": " << back.status().message();
    EXPECT_EQ(back->dtype(), dt);
    EXPECT_EQ(back->shape(), (Shape{2, 3}));
    EXPECT_EQ(back->name(), "t");
    EXPECT_EQ(back->bytes(), t.bytes());
  }
}

TEST(TensorProto, ScalarAndEmptyTensors) {
  Tensor scalar(DType::kF32, {}, "s");
  scalar.data<float>()[0] = 2.5f;
  std::string s = SerializeTensorProto(scalar);
  auto back = ParseTensorProto(s.data(), s.size());
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->shape().empty());
  EXPECT_EQ(back->data<float>()[0], 2.5f);

  Tensor empty(DType::kI64, {3, 0});
  s = SerializeTensorProto(empty);
  back = ParseTensorProto(s.data(), s.size());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->shape(), (Shape{3, 0}));
  EXPECT_TRUE(back->bytes().empty());
}

TEST(TensorProto, FileRoundTrip) {
  Tensor t(DType::kI32, {4}, "ids");
  for (int i = 0; i < 4; ++i)
    t.data<int32_t>()[i] = -i;
  std::string path = test::TempPath("t.pb");
  ASSERT_TRUE(WriteTensorProtoFile(path, t).ok());
  auto back = ReadTensorProtoFile(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data<int32_t>()[3], -3);
  EXPECT_EQ(ReadTensorProtoFile(test::TempPath("missing.pb")).status().code(),
            StatusCode::kNotFound);
}

TEST(TensorProto, ReadsTypedFields) {
  // float_data unpacked, dims unpacked, unknown fields skipped.
  Proto p;
  p.Int(1, 2);
  p.Int(2, 1); // FLOAT
  p.Fixed32(4, 1.5f);
  p.Fixed32(4, -2.0f);
  p.Bytes(12, "doc string");
  p.Int(99, 5);
  auto t = ParseTensorProto(p.b.data(), p.b.size());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->shape(), (Shape{2}));
  EXPECT_EQ(t->data<float>()[1], -2.0f);

  // int64_data packed, with a negative value (10-byte varint).
  Proto q;
  q.Bytes(1, Packed({3}));
  q.Int(2, 7); // INT64
  q.Bytes(7, Packed({1, static_cast<uint64_t>(-5), 1ull << 40}));
  t = ParseTensorProto(q.b.data(), q.b.size());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->data<int64_t>()[1], -5);
  EXPECT_EQ(t->data<int64_t>()[2], int64_t{1} << 40);

  // float16 bit patterns in int32_data; bool in int32_data.
  Proto h;
  h.Bytes(1, Packed({2}));
  h.Int(2, 10); // FLOAT16
  h.Bytes(5, Packed({0x3c00, 0xc000}));
  t = ParseTensorProto(h.b.data(), h.b.size());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->data<uint16_t>()[0], 0x3c00);
  EXPECT_EQ(t->data<uint16_t>()[1], 0xc000);

  Proto bl;
  bl.Bytes(1, Packed({3}));
  bl.Int(2, 9); // BOOL
  bl.Bytes(5, Packed({0, 1, 7}));
  t = ParseTensorProto(bl.b.data(), bl.b.size());
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->data<uint8_t>()[2], 1);
}

TEST(TensorProto, RefusesWhatItCannotRepresent) {
  Proto s;
  s.Int(2, 8); // STRING
  s.Bytes(6, "hello");
  auto t = ParseTensorProto(s.b.data(), s.b.size());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("string"), std::string::npos);

  Proto e;
  e.Int(2, 1);
  e.Int(14, 1); // data_location = EXTERNAL
  t = ParseTensorProto(e.b.data(), e.b.size());
  EXPECT_NE(t.status().message().find("EXTERNAL"), std::string::npos) << t.status().message();

  Proto x;
  x.Int(2, 1);
  x.Bytes(13, "key");
  t = ParseTensorProto(x.b.data(), x.b.size());
  EXPECT_NE(t.status().message().find("external_data"), std::string::npos);

  Proto u;
  u.Int(2, 12); // UINT32
  t = ParseTensorProto(u.b.data(), u.b.size());
  EXPECT_NE(t.status().message().find("UINT32"), std::string::npos) << t.status().message();
}

TEST(TensorProto, RefusesInconsistentSizes) {
  Proto p;
  p.Bytes(1, Packed({1000000, 1000000})); // 10^12 floats promised
  p.Int(2, 1);
  p.Bytes(9, std::string(8, '\0'));
  auto t = ParseTensorProto(p.b.data(), p.b.size());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(t.status().message().find("raw_data has 8 bytes"), std::string::npos);

  Proto q;
  q.Bytes(1, Packed({3}));
  q.Int(2, 1);
  q.Fixed32(4, 1.0f);
  t = ParseTensorProto(q.b.data(), q.b.size());
  EXPECT_NE(t.status().message().find("float_data has 1 elements"), std::string::npos)
      << t.status().message();

  Proto n;
  n.Bytes(1, Packed({static_cast<uint64_t>(-2)}));
  n.Int(2, 1);
  t = ParseTensorProto(n.b.data(), n.b.size());
  EXPECT_NE(t.status().message().find("negative"), std::string::npos);
}

TEST(TensorProto, EveryTruncationIsRefusedOrConsistent) {
  Tensor full(DType::kF32, {2, 2}, "weights");
  for (int i = 0; i < 4; ++i)
    full.data<float>()[i] = static_cast<float>(i);
  std::string s = SerializeTensorProto(full);
  for (size_t len = 0; len < s.size(); ++len) {
    auto t = ParseTensorProto(s.data(), len);
    // A prefix can only parse when it ends between fields and still agrees
    // with itself; it can never yield the full tensor's data.
    if (t.ok())
      EXPECT_NE(t->bytes(), full.bytes()) << len;
  }
}

TEST(TensorProto, RandomBytesNeverCrash) {
  std::mt19937_64 rng(7);
  Tensor base(DType::kI64, {3}, "x");
  std::string good = SerializeTensorProto(base);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string b;
    if (iter % 2) {
      b.resize(rng() % 64);
      for (char &c : b)
        c = static_cast<char>(rng());
    } else {
      b = good;
      for (int e = 0; e < 3; ++e)
        b[rng() % b.size()] = static_cast<char>(rng());
    }
    auto t = ParseTensorProto(b.data(), b.size());
    if (t.ok()) {
      EXPECT_EQ(static_cast<size_t>(t->numel()) * DTypeSize(t->dtype()), t->bytes().size());
    }
  }
}

TEST(TensorProto, DTypeMapping) {
  EXPECT_EQ(*DTypeFromOnnx(16), DType::kBF16);
  EXPECT_EQ(OnnxDataType(DType::kBF16), 16);
  for (int t : {1, 2, 3, 6, 7, 9, 10, 11, 16})
    EXPECT_EQ(OnnxDataType(*DTypeFromOnnx(t)), t);
  EXPECT_FALSE(DTypeFromOnnx(4).ok());
}

} // namespace
} // namespace kiln
