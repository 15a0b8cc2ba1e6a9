// Weights repacked once for the products that read them. A product of few
// rows (decode, short prompts) is bound by reading its weight: row-major
// [K, N] read in 64-column panels touches a new page every row, which costs
// a TLB miss per row and defeats the hardware prefetcher. Packed, each panel
// is one contiguous run of memory (on huge pages where the kernel allows),
// read front to back by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace kiln::kernels {

// Columns per panel: 4 AVX-512 vectors, the width of SmallMGemm's tiles.
inline constexpr int64_t kPanelCols = 64;

// How a packed weight's elements are stored: f32, or bf16 or f16 (as a half
// plan stores its weights) that the products widen to f32 as they read
// them, so a half plan's weights stream at half the bytes and are still
// multiplied in f32; or int8 with one f32 scale per column (symmetric
// per-output-channel quantization: B[p][j] = q[p][j] * scale[j]), read at a
// quarter of the bytes, widened to f32 and scaled once per column of C.
// kI8x4 is int8 with per-column scales too, laid out for int8 x int8
// products (Int8Gemm, kernels/cpu/products_int8_gemm.h) rather than for PackedGemm:
// each 64-column panel holds G = ceil(k / 4) groups, group g being 64
// columns x 4 bytes, column c's 4 bytes being rows 4g..4g+3 of that column
// (byte (g * 64 + c) * 4 + i of the panel is row 4g + i), the operand
// layout of vpdpbusd (one zmm: 16 columns x 4 rows). Rows past k and
// columns past n are zero. It also keeps each column's int32 sum of q.
enum class PackedElem { kF32, kBF16, kF16, kI8, kI8x4 };

// op(B) [k, n] as ceil(n / 64) panels, each k rows of 64 elements,
// contiguous; columns past n are zero (and so are their scales).
class PackedMatrix {
public:
  // Packs op(B), where B is row-major with leading dim ldb: [k, n] when
  // `trans` is false, [n, k] when true. Null when memory runs out or a size
  // is not positive.
  static std::unique_ptr<PackedMatrix> Pack(const float *b, int64_t k, int64_t n, int64_t ldb,
                                            bool trans);
  // The same for half B (16-bit patterns of `elem`, kBF16 or kF16), kept
  // in that type (null for another elem).
  static std::unique_ptr<PackedMatrix> PackHalf(const uint16_t *b, int64_t k, int64_t n,
                                                int64_t ldb, bool trans, PackedElem elem);
  // The same for f32 B stored as `elem` (kBF16 or kF16) when that type holds
  // every value of op(B) exactly (see ExactHalfElem): the products then read
  // half the bytes and compute exactly what they compute on Pack(b). The
  // result's source_elem() is kF32. Null when `elem` does not hold every
  // value, for another elem, or as Pack.
  static std::unique_ptr<PackedMatrix> PackNarrowed(const float *b, int64_t k, int64_t n,
                                                    int64_t ldb, bool trans, PackedElem elem);
  // The same for int8 B (row-major [k, n], never transposed) with `scales`
  // (n floats, copied): op(B)[p][j] = b[p * ldb + j] * scales[j].
  static std::unique_ptr<PackedMatrix> PackI8(const int8_t *b, const float *scales, int64_t k,
                                              int64_t n, int64_t ldb);
  // The same int8 B and scales in the kI8x4 layout (see PackedElem), with
  // per-column sums of q. Null on a null pointer, a size that is not
  // positive, ldb < n, or when memory runs out.
  static std::unique_ptr<PackedMatrix> PackI8x4(const int8_t *b, const float *scales, int64_t k,
                                                int64_t n, int64_t ldb);
  ~PackedMatrix();
  PackedMatrix(const PackedMatrix &) = delete;
  PackedMatrix &operator=(const PackedMatrix &) = delete;

  PackedElem elem() const { return elem_; }
  // The element type of the weight it was packed from: elem(), or kF32 for
  // a PackNarrowed copy.
  PackedElem source_elem() const { return source_elem_; }
  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  int64_t panels() const { return (n_ + kPanelCols - 1) / kPanelCols; }
  size_t bytes() const { return bytes_; }
  // Panel j of an f32 matrix (`panel`), or of a half or int8 one as T (an
  // element type of elem()'s size: gemm_tile.h's Bf16, F16 or I8). Not for
  // kI8x4, whose panels are panel_i8x4's.
  const float *panel(int64_t j) const {
    return static_cast<const float *>(data_) + j * k_ * kPanelCols;
  }
  template <typename T> const T *panel_as(int64_t j) const {
    static_assert(sizeof(T) == sizeof(uint16_t) || sizeof(T) == 1);
    return reinterpret_cast<const T *>(static_cast<const char *>(data_) +
                                       j * k_ * kPanelCols * static_cast<int64_t>(sizeof(T)));
  }
  // Panel j of a kI8x4 matrix: ceil(k / 4) groups of 256 bytes.
  const int8_t *panel_i8x4(int64_t j) const {
    return static_cast<const int8_t *>(data_) + j * ((k_ + 3) / 4) * 4 * kPanelCols;
  }
  // An int8 (kI8 or kI8x4) matrix's column scales, panels() * 64 of them
  // (zero past n); null for the other kinds.
  const float *scales() const { return scales_; }
  // A kI8x4 matrix's per-column sums of q over its k rows, panels() * 64 of
  // them (zero past n); null for the other kinds.
  const int32_t *col_sums() const { return col_sums_; }
  // Whether a kI8x4 matrix holds the value -128 (Int8Gemm's AVX2 path
  // cannot negate it); false for the other kinds.
  bool has_int8_min() const { return has_int8_min_; }

private:
  PackedMatrix(void *data, size_t bytes, int64_t k, int64_t n, PackedElem elem)
      : data_(data), bytes_(bytes), k_(k), n_(n), elem_(elem) {}
  template <typename S, typename T = S>
  static std::unique_ptr<PackedMatrix> PackAs(const S *b, int64_t k, int64_t n, int64_t ldb,
                                              bool trans, PackedElem elem);
  void *data_;
  float *scales_ = nullptr;     // kI8 and kI8x4 only
  int32_t *col_sums_ = nullptr; // kI8x4 only
  bool has_int8_min_ = false;   // kI8x4 only
  size_t bytes_;
  int64_t k_, n_;
  PackedElem elem_;
  PackedElem source_elem_ = elem_;
};

// The narrower type that holds every value of f32 op(B) [k, n] exactly
// (B row-major with leading dim ldb, [n, k] when `trans`): kBF16 when each
// value's low 16 bits are zero (a NaN too: bf16 keeps it bit for bit), else
// kF16 when each is an f16 value (zeros, infinities, normals and subnormals
// of f16; no NaN), else kF32.
// Checkpoints trained in bf16 or f16 and exported to an f32 ONNX file have
// such weights. Stops early once a value fits neither.
PackedElem ExactHalfElem(const float *b, int64_t k, int64_t n, int64_t ldb, bool trans);

// Runs panels(j0, j1) over ranges of B's panels on the kernel threads
// (kernels/cpu/parallel.h), each range at least ~0.5 M multiply-adds of m
// rows (fewer is not worth a wake-up); nothing when m <= 0. The products on
// packed matrices (PackedGemm, Int8Gemm) split their work this way.
void ForPanels(int64_t m, const PackedMatrix &b,
               const std::function<void(int64_t, int64_t)> &panels);

// C[m, n] = alpha * A[m, k] @ B + beta * C for any m >= 0 (row-major A and
// C), B of any kind (int8: Q diag(scales)); beta 0 ignores C, even NaN in
// it. Threads take whole panels. A kI8x4 B is meant for Int8Gemm
// (kernels/cpu/products_int8_gemm.h), not for this: PackedGemm, PackedGemmAvx2 and
// PackedGemmPortable still compute the product right for one, with plain
// loops (slowly), so that Gemm<float> finding one by address is not wrong.
void PackedGemm(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                float beta, float *c, int64_t ldc);

// PackedGemm's plain-loop path, which CPUs without AVX-512 or AVX2 take; declared
// so that tests check it on every CPU.
void PackedGemmPortable(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                        float beta, float *c, int64_t ldc);

// PackedGemm's AVX2 and FMA path, which CPUs without AVX-512 take; false
// (nothing written) on a CPU without AVX2 and FMA. Declared so that tests
// check it on CPUs that have AVX-512 too. A kI8x4 B takes the plain loops.
bool PackedGemmAvx2(int64_t m, const float *a, int64_t lda, const PackedMatrix &b, float alpha,
                    float beta, float *c, int64_t ldc);

// The packed form of the weight at `b` (op(B) [k, n] with leading dim ldb),
// packing it on first use. Every holder of the returned pointer shares one
// copy; while one is held, Gemm<float> finds the packed form by the
// original's address and runs PackedGemm on it. Null when packing fails.
// Callers guarantee that `b` stays valid and unchanged while they hold it.
// With `narrow`, a weight that a half type holds exactly (ExactHalfElem) is
// packed in that type (PackNarrowed): the same results from half the bytes.
// Without it, a narrowed copy already held is still shared.
std::shared_ptr<const PackedMatrix> AcquirePacked(const float *b, int64_t k, int64_t n, int64_t ldb,
                                                  bool trans, bool narrow = false);
// The same for a bf16 or f16 weight (`elem`), packed in its own type.
// Gemm<float> finds it by the half original's address too: a caller that
// holds one may pass that address as Gemm<float>'s B (with these dims),
// which then never reads B itself (see FindPacked).
std::shared_ptr<const PackedMatrix> AcquirePackedHalf(const uint16_t *b, int64_t k, int64_t n,
                                                      int64_t ldb, bool trans, PackedElem elem);
// The same for an int8 weight with per-column scales (PackedMatrix::PackI8;
// never transposed), found by Gemm<float> by the int8 original's address
// (b, with trans false). Acquiring an address that is held packed as another
// kind, or as int8 with other scales, returns null.
std::shared_ptr<const PackedMatrix> AcquirePackedI8(const int8_t *b, const float *scales, int64_t k,
                                                    int64_t n, int64_t ldb);
// The same for the kI8x4 layout (PackedMatrix::PackI8x4), for Int8Gemm;
// keyed by b with trans false like AcquirePackedI8, so one int8 weight is
// held as kI8 or as kI8x4, not both (the second acquire returns null).
std::shared_ptr<const PackedMatrix> AcquirePackedI8x4(const int8_t *b, const float *scales,
                                                      int64_t k, int64_t n, int64_t ldb);

// The held packed form of B = `b` with these dims, or null. The address is
// only a key: the packed form may hold halves or int8 (PackedMatrix::elem).
const PackedMatrix *FindPacked(const void *b, int64_t k, int64_t n, int64_t ldb, bool trans);

} // namespace kiln::kernels
