// Weights on their way into a plan: streamWeightBytes passes every kind of
// constant in the plan's layout without a whole copy, and releasing the
// pages of a mapped model file never changes what later reads see (nor
// touches memory outside a registered mapping).
#include "compiler/plan/WeightBytes.h"
#include "compiler/support/SourcePages.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <vector>

namespace kiln::plan {
namespace {

// Collects a streamed weight, counting the pieces.
struct Collected {
  std::vector<uint8_t> bytes;
  int pieces = 0;
};

Collected stream(mlir::ElementsAttr value) {
  Collected c;
  llvm::Error e = streamWeightBytes(value, [&](const void *data, uint64_t size) {
    EXPECT_GT(size, 0u);
    const uint8_t *p = static_cast<const uint8_t *>(data);
    c.bytes.insert(c.bytes.end(), p, p + size);
    ++c.pieces;
    return true;
  });
  EXPECT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  return c;
}

TEST(WeightStream, LargeSplatExpandsInPieces) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  auto type = mlir::RankedTensorType::get({3 << 20}, b.getF32Type()); // 12 MB
  auto splat = mlir::DenseElementsAttr::get(type, 1.5f);
  Collected c = stream(splat);
  ASSERT_EQ(c.bytes.size(), size_t(12) << 20);
  EXPECT_GT(c.pieces, 1); // never one 12 MB buffer
  float last;
  std::memcpy(&last, c.bytes.data() + c.bytes.size() - 4, 4);
  EXPECT_EQ(last, 1.5f);
}

TEST(WeightStream, ResourceBoolsAreNormalizedAndEmptyWeightsPassNothing) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  std::vector<char> raw = {0, 2, 0, 7, 1};
  auto type = mlir::RankedTensorType::get({5}, b.getI1Type());
  auto attr = mlir::DenseResourceElementsAttr::get(
      type, "mask", mlir::HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, 1));
  EXPECT_EQ(stream(attr).bytes, (std::vector<uint8_t>{0, 1, 0, 1, 1}));

  auto empty = mlir::DenseElementsAttr::get(mlir::RankedTensorType::get({0, 4}, b.getF32Type()),
                                            llvm::ArrayRef<float>());
  Collected c = stream(empty);
  EXPECT_EQ(c.pieces, 0);
  EXPECT_TRUE(c.bytes.empty());
  EXPECT_FALSE(static_cast<bool>(writeWeightBytes(empty, nullptr)));
}

TEST(WeightStream, FailedSinkIsAnError) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  auto attr = mlir::DenseElementsAttr::get(mlir::RankedTensorType::get({2}, b.getF32Type()),
                                           llvm::ArrayRef<float>{1.0f, 2.0f});
  llvm::Error e = streamWeightBytes(attr, [](const void *, uint64_t) { return false; });
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("writing"), std::string::npos);
}

TEST(SourcePages, ReleasedPagesReadBackUnchanged) {
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("kiln-pages", "bin", path));
  std::vector<uint32_t> values(1 << 20); // 4 MB: mapped, not read into the heap
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<uint32_t>(i * 2654435761u);
  std::ofstream(std::string(path), std::ios::binary)
      .write(reinterpret_cast<const char *>(values.data()), values.size() * 4);
  auto buffer = llvm::MemoryBuffer::getFile(path, false, false);
  ASSERT_TRUE(static_cast<bool>(buffer));
  ASSERT_EQ((*buffer)->getBufferKind(), llvm::MemoryBuffer::MemoryBuffer_MMap);
  const char *data = (*buffer)->getBufferStart();
  compiler::registerMappedFile(data, (*buffer)->getBufferSize());
  EXPECT_EQ(std::memcmp(data, values.data(), values.size() * 4), 0);
  compiler::releaseSourcePages(data + 1000, 3 << 20); // unaligned: widened to whole pages
  EXPECT_EQ(std::memcmp(data, values.data(), values.size() * 4), 0);
  compiler::releaseAllSourcePages();
  EXPECT_EQ(std::memcmp(data, values.data(), values.size() * 4), 0);
  compiler::unregisterMappedFile(data);
  buffer->reset();
  llvm::sys::fs::remove(path);

  // Heap memory is never released: MADV_DONTNEED would zero it.
  std::vector<uint32_t> heap(values);
  compiler::releaseSourcePages(heap.data(), heap.size() * 4);
  EXPECT_EQ(heap, values);
}

} // namespace
} // namespace kiln::plan

namespace kiln::plan {
namespace {

// One rank's column slice, streamed from a [3, 4] i32 weight without a copy
// of the slice: exactly the elements of columns [1, 3) of every row, and a
// slice that does not fit the weight is refused.
TEST(WeightStream, SliceTakesOneRankColumns) {
  mlir::MLIRContext context;
  mlir::Builder b(&context);
  auto type = mlir::RankedTensorType::get({3, 4}, b.getI32Type());
  std::vector<int32_t> values = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  auto dense = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<int32_t>(values));
  std::vector<int32_t> got;
  llvm::Error e = streamWeightSlice(dense, /*axis=*/1, /*offset=*/1, /*count=*/2, /*fullDim=*/4,
                                    /*groups=*/1, [&](const void *data, uint64_t size) {
                                      const int32_t *p = static_cast<const int32_t *>(data);
                                      got.insert(got.end(), p, p + size / 4);
                                      return true;
                                    });
  ASSERT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  EXPECT_EQ(got, (std::vector<int32_t>{1, 2, 11, 12, 21, 22}));
  // Rows [2, 3): one contiguous run.
  got.clear();
  e = streamWeightSlice(dense, 0, 2, 1, 3, 1, [&](const void *data, uint64_t size) {
    const int32_t *p = static_cast<const int32_t *>(data);
    got.insert(got.end(), p, p + size / 4);
    return true;
  });
  ASSERT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  EXPECT_EQ(got, (std::vector<int32_t>{20, 21, 22, 23}));
  llvm::Error bad = streamWeightSlice(dense, 1, 3, 2, 4, 1, [](const void *, uint64_t) {
    return true;
  });
  EXPECT_TRUE(static_cast<bool>(bad));
  llvm::consumeError(std::move(bad));
}

} // namespace
} // namespace kiln::plan
