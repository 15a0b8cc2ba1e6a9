// PackedMatrix storage and packing, and the table of held packed weights
// that Gemm<float> consults.
#include "kernels/cpu/products_packed_matrix.h"

#include "kernels/cpu/pointwise_cast.h"
#include "kernels/cpu/parallel.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <type_traits>
#include <utility>

namespace kiln::kernels {
namespace {

// Huge-page size on x86-64. Aligning the storage to it lets the kernel back
// it with huge pages, so streaming a weight costs one TLB entry per 2 MiB.
constexpr size_t kHugePage = size_t{2} << 20;

// Rows of op(B) per packing task: enough to amortise a task, few enough that
// both threads get work on small weights.
constexpr int64_t kPackRowGrain = 64;

// Storage for `bytes` of panels, 64-byte aligned, or null. Huge pages only
// for weights of a huge page or more; small ones would waste most of one.
void *AllocPanels(size_t bytes) {
  const bool huge = bytes >= kHugePage;
  const size_t align = huge ? kHugePage : 64;
  const size_t alloc = (bytes + align - 1) / align * align;
  void *data = std::aligned_alloc(align, alloc);
  // A hint: without huge pages the product is still right, only slower.
  if (data != nullptr && huge)
    ::madvise(data, alloc, MADV_HUGEPAGE);
  return data;
}

// Whether f32 `bits` is an f16 value: zero, an infinity, or a finite value
// in f16's range with no more significant bits than f16 keeps there.
bool F16Exact(uint32_t bits) {
  const uint32_t a = bits & 0x7fffffffu;
  if (a == 0 || a == 0x7f800000u)
    return true;
  const int e = static_cast<int>(a >> 23) - 127; // f32 subnormals and NaN fail below
  if (e > 15 || e < -24 || (a >> 23) == 0 || (a >> 23) == 0xff)
    return false;
  // f16 keeps 10 fraction bits for normals (e >= -14); a subnormal is a
  // multiple of 2^-24, so 10 - (-14 - e) of them.
  const int keep = e >= -14 ? 10 : 10 - (-14 - e);
  return (a & ((1u << (23 - keep)) - 1)) == 0;
}

bool Bf16Exact(uint32_t bits) { return (bits & 0xffffu) == 0; }

// Whether every value of op(B) passes `exact`, over threads, stopping all of
// them at the first failure.
template <typename Exact>
bool AllExact(const float *b, int64_t k, int64_t n, int64_t ldb, bool trans, Exact exact) {
  const int64_t rows = trans ? n : k, cols = trans ? k : n;
  std::atomic<bool> ok{true};
  ParallelFor(rows, kPackRowGrain, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1 && ok.load(std::memory_order_relaxed); ++r) {
      const float *row = b + r * ldb;
      bool row_ok = true;
      for (int64_t c = 0; c < cols; ++c) {
        uint32_t bits;
        std::memcpy(&bits, row + c, sizeof(bits));
        row_ok &= exact(bits);
      }
      if (!row_ok)
        ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

// Whether `elem` (kBF16 or kF16) holds every value of op(B) exactly.
bool HoldsExactly(const float *b, int64_t k, int64_t n, int64_t ldb, bool trans, PackedElem elem) {
  return elem == PackedElem::kBF16 ? AllExact(b, k, n, ldb, trans, Bf16Exact)
                                   : AllExact(b, k, n, ldb, trans, F16Exact);
}

// f32 -> the bf16 or f16 bits of an exactly representable value.
struct ToBf16 {
  uint16_t operator()(float v) const {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    return static_cast<uint16_t>(bits >> 16);
  }
};
struct ToF16 {
  uint16_t operator()(float v) const { return FloatToHalf(v); }
};
struct Identity {
  template <typename S> S operator()(S v) const { return v; }
};

// Row-major B [k, n]: rows [p0, p1) of every panel. The source is read
// front to back; each panel's rows are written in order.
template <typename T, typename S, typename Conv>
void PackRows(const S *b, int64_t n, int64_t ldb, int64_t k, int64_t p0, int64_t p1, T *dst,
              Conv conv) {
  const int64_t panels = (n + kPanelCols - 1) / kPanelCols;
  for (int64_t p = p0; p < p1; ++p) {
    const S *src = b + p * ldb;
    for (int64_t j = 0; j < panels; ++j) {
      T *out = dst + (j * k + p) * kPanelCols;
      const int64_t cols = std::min(kPanelCols, n - j * kPanelCols);
      if constexpr (std::is_same_v<T, S>)
        std::memcpy(out, src + j * kPanelCols, static_cast<size_t>(cols) * sizeof(T));
      else
        for (int64_t c = 0; c < cols; ++c)
          out[c] = conv(src[j * kPanelCols + c]);
      std::fill(out + cols, out + kPanelCols, T(0));
    }
  }
}

// B stored [n, k] (op(B) = B^T): rows [p0, p1) of every panel, gathered a
// column of op(B), i.e. a contiguous row of B, at a time.
template <typename T, typename S, typename Conv>
void PackRowsTransposed(const S *b, int64_t n, int64_t ldb, int64_t k, int64_t p0, int64_t p1,
                        T *dst, Conv conv) {
  const int64_t panels = (n + kPanelCols - 1) / kPanelCols;
  for (int64_t j = 0; j < panels; ++j) {
    T *out = dst + j * k * kPanelCols;
    const int64_t cols = std::min(kPanelCols, n - j * kPanelCols);
    for (int64_t p = p0; p < p1; ++p)
      std::fill(out + p * kPanelCols + cols, out + (p + 1) * kPanelCols, T(0));
    for (int64_t c = 0; c < cols; ++c) {
      const S *src = b + (j * kPanelCols + c) * ldb;
      for (int64_t p = p0; p < p1; ++p)
        out[p * kPanelCols + c] = conv(src[p]);
    }
  }
}

// Packed weights by the address of the original and whether it is read
// transposed. Entries live exactly as long as some holder keeps the packed
// copy (the shared_ptr's deleter removes them).
class Registry {
public:
  const PackedMatrix *Find(const void *b, bool trans, int64_t k, int64_t n, int64_t ldb) {
    if (live_.load(std::memory_order_acquire) == 0)
      return nullptr; // nothing packed: no lock on the product path
    std::shared_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find({b, trans});
    if (it == entries_.end())
      return nullptr;
    const Entry &e = it->second;
    return e.packed->k() == k && e.packed->n() == n && e.ldb == ldb ? e.packed : nullptr;
  }

  // `pack` makes the copy when there is none (PackedMatrix::Pack, PackHalf
  // or PackI8 of b); `scales` are an int8 weight's (null for the others).
  template <typename Packer>
  std::shared_ptr<const PackedMatrix> Acquire(const void *b, int64_t k, int64_t n, int64_t ldb,
                                              bool trans, PackedElem elem, const float *scales,
                                              Packer &&pack) {
    // One packer at a time, so two holders of one weight share one copy.
    std::lock_guard<std::mutex> packing(pack_mu_);
    {
      std::shared_lock<std::shared_mutex> lock(mu_);
      auto it = entries_.find({b, trans});
      // An entry whose last holder is going (its deleter not yet run) is
      // replaced whatever it holds.
      if (it != entries_.end())
        if (auto held = it->second.holder.lock()) {
          if (!Same(*held, it->second.ldb, k, n, ldb, elem, scales))
            return nullptr; // one address, two readings: leave it unpacked
          return held;
        }
    }
    std::unique_ptr<PackedMatrix> packed = pack();
    if (!packed)
      return nullptr;
    const Key key{b, trans};
    std::shared_ptr<const PackedMatrix> held(packed.release(), [this, key](const PackedMatrix *p) {
      Remove(key, p);
      delete p;
    });
    std::unique_lock<std::shared_mutex> lock(mu_);
    entries_[key] = Entry{held.get(), held, ldb};
    live_.store(static_cast<int>(entries_.size()), std::memory_order_release);
    return held;
  }

private:
  using Key = std::pair<const void *, bool>;

  // Whether `p` (packed with `held_ldb`) is b read with these dims, kind
  // and, for int8, scales.
  static bool Same(const PackedMatrix &p, int64_t held_ldb, int64_t k, int64_t n, int64_t ldb,
                   PackedElem elem, const float *scales) {
    if (p.k() != k || p.n() != n || held_ldb != ldb || p.source_elem() != elem)
      return false;
    return (elem != PackedElem::kI8 && elem != PackedElem::kI8x4) ||
           (scales != nullptr &&
            std::memcmp(p.scales(), scales, static_cast<size_t>(n) * sizeof(float)) == 0);
  }

  struct Entry {
    const PackedMatrix *packed;
    std::weak_ptr<const PackedMatrix> holder;
    int64_t ldb;
  };

  void Remove(const Key &key, const PackedMatrix *p) {
    std::unique_lock<std::shared_mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.packed == p)
      entries_.erase(it);
    live_.store(static_cast<int>(entries_.size()), std::memory_order_release);
  }

  std::mutex pack_mu_;
  std::shared_mutex mu_;
  std::map<Key, Entry> entries_;
  std::atomic<int> live_{0};
};

Registry &TheRegistry() {
  // Never destroyed: a holder may release its copy during static destruction.
  static Registry *registry = new Registry();
  return *registry;
}

} // namespace

template <typename S, typename T>
std::unique_ptr<PackedMatrix> PackedMatrix::PackAs(const S *b, int64_t k, int64_t n, int64_t ldb,
                                                   bool trans, PackedElem elem) {
  if (b == nullptr || k <= 0 || n <= 0 || ldb < (trans ? k : n))
    return nullptr;
  const int64_t panels = (n + kPanelCols - 1) / kPanelCols;
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(panels * kPanelCols), static_cast<size_t>(k),
                             &bytes) ||
      __builtin_mul_overflow(bytes, sizeof(T), &bytes) || bytes > (size_t{1} << 46))
    return nullptr;
  auto *data = static_cast<T *>(AllocPanels(bytes));
  if (data == nullptr)
    return nullptr;
  auto pack = [&](auto conv) {
    ParallelFor(k, kPackRowGrain, [&](int64_t p0, int64_t p1) {
      if (trans)
        PackRowsTransposed(b, n, ldb, k, p0, p1, data, conv);
      else
        PackRows(b, n, ldb, k, p0, p1, data, conv);
    });
  };
  if constexpr (std::is_same_v<T, S>)
    pack(Identity{});
  else if (elem == PackedElem::kBF16)
    pack(ToBf16{});
  else
    pack(ToF16{});
  std::unique_ptr<PackedMatrix> packed(new PackedMatrix(data, bytes, k, n, elem));
  if constexpr (!std::is_same_v<T, S>)
    packed->source_elem_ = PackedElem::kF32;
  return packed;
}

std::unique_ptr<PackedMatrix> PackedMatrix::Pack(const float *b, int64_t k, int64_t n, int64_t ldb,
                                                 bool trans) {
  return PackAs(b, k, n, ldb, trans, PackedElem::kF32);
}

std::unique_ptr<PackedMatrix> PackedMatrix::PackHalf(const uint16_t *b, int64_t k, int64_t n,
                                                     int64_t ldb, bool trans, PackedElem elem) {
  if (elem != PackedElem::kBF16 && elem != PackedElem::kF16)
    return nullptr;
  return PackAs(b, k, n, ldb, trans, elem);
}

std::unique_ptr<PackedMatrix> PackedMatrix::PackNarrowed(const float *b, int64_t k, int64_t n,
                                                         int64_t ldb, bool trans, PackedElem elem) {
  if ((elem != PackedElem::kBF16 && elem != PackedElem::kF16) || b == nullptr || k <= 0 || n <= 0 ||
      ldb < (trans ? k : n) || !HoldsExactly(b, k, n, ldb, trans, elem))
    return nullptr;
  return PackAs<float, uint16_t>(b, k, n, ldb, trans, elem);
}

std::unique_ptr<PackedMatrix> PackedMatrix::PackI8(const int8_t *b, const float *scales, int64_t k,
                                                   int64_t n, int64_t ldb) {
  if (scales == nullptr)
    return nullptr;
  std::unique_ptr<PackedMatrix> packed = PackAs(b, k, n, ldb, false, PackedElem::kI8);
  if (!packed)
    return nullptr;
  const size_t count = static_cast<size_t>(packed->panels() * kPanelCols);
  auto *s = static_cast<float *>(std::aligned_alloc(64, count * sizeof(float)));
  if (s == nullptr)
    return nullptr;
  std::memcpy(s, scales, static_cast<size_t>(n) * sizeof(float));
  std::fill(s + n, s + count, 0.0f);
  packed->scales_ = s;
  return packed;
}

std::unique_ptr<PackedMatrix> PackedMatrix::PackI8x4(const int8_t *b, const float *scales,
                                                     int64_t k, int64_t n, int64_t ldb) {
  if (b == nullptr || scales == nullptr || k <= 0 || n <= 0 || ldb < n)
    return nullptr;
  const int64_t panels = (n + kPanelCols - 1) / kPanelCols, groups = (k + 3) / 4;
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(panels * kPanelCols), static_cast<size_t>(groups),
                             &bytes) ||
      __builtin_mul_overflow(bytes, size_t{4}, &bytes) || bytes > (size_t{1} << 46))
    return nullptr;
  auto *data = static_cast<int8_t *>(AllocPanels(bytes));
  if (data == nullptr)
    return nullptr;
  std::unique_ptr<PackedMatrix> packed(new PackedMatrix(data, bytes, k, n, PackedElem::kI8x4));
  const size_t count = static_cast<size_t>(panels * kPanelCols);
  auto *s = static_cast<float *>(std::aligned_alloc(64, count * sizeof(float)));
  auto *sums = static_cast<int32_t *>(std::aligned_alloc(64, count * sizeof(int32_t)));
  packed->scales_ = s;
  packed->col_sums_ = sums;
  if (s == nullptr || sums == nullptr)
    return nullptr;
  std::memcpy(s, scales, static_cast<size_t>(n) * sizeof(float));
  std::fill(s + n, s + count, 0.0f);
  // Groups [g0, g1) of every panel; a group reads 4 rows of B.
  ParallelFor(groups, kPackRowGrain / 4, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g)
      for (int64_t j = 0; j < panels; ++j) {
        int8_t *out = data + (j * groups + g) * 4 * kPanelCols;
        const int64_t cols = std::min(kPanelCols, n - j * kPanelCols);
        std::memset(out, 0, 4 * kPanelCols);
        for (int64_t i = 0; i < 4 && 4 * g + i < k; ++i) {
          const int8_t *src = b + (4 * g + i) * ldb + j * kPanelCols;
          for (int64_t c = 0; c < cols; ++c)
            out[c * 4 + i] = src[c];
        }
      }
  });
  // Column sums, a panel's columns at a time, and whether any value is -128.
  std::atomic<bool> has_min{false};
  ParallelFor(panels, 1, [&](int64_t j0, int64_t j1) {
    bool min_seen = false;
    for (int64_t j = j0; j < j1; ++j) {
      int32_t *sum = sums + j * kPanelCols;
      std::fill(sum, sum + kPanelCols, 0);
      const int64_t cols = std::min(kPanelCols, n - j * kPanelCols);
      for (int64_t p = 0; p < k; ++p) {
        const int8_t *src = b + p * ldb + j * kPanelCols;
        for (int64_t c = 0; c < cols; ++c) {
          sum[c] += src[c];
          min_seen |= src[c] == INT8_MIN;
        }
      }
    }
    if (min_seen)
      has_min.store(true, std::memory_order_relaxed);
  });
  packed->has_int8_min_ = has_min.load();
  return packed;
}

void ForPanels(int64_t m, const PackedMatrix &b,
               const std::function<void(int64_t, int64_t)> &panels) {
  if (m <= 0)
    return;
  const int64_t grain =
      std::max<int64_t>(1, (int64_t{1} << 19) / (2 * std::min<int64_t>(m, 64) * b.k() * 64));
  ParallelFor(b.panels(), grain, panels);
}

PackedMatrix::~PackedMatrix() {
  std::free(data_);
  std::free(scales_);
  std::free(col_sums_);
}

std::shared_ptr<const PackedMatrix> AcquirePacked(const float *b, int64_t k, int64_t n, int64_t ldb,
                                                  bool trans, bool narrow) {
  return TheRegistry().Acquire(b, k, n, ldb, trans, PackedElem::kF32, nullptr, [&] {
    if (narrow)
      for (PackedElem half : {PackedElem::kBF16, PackedElem::kF16})
        if (auto packed = PackedMatrix::PackNarrowed(b, k, n, ldb, trans, half))
          return packed;
    return PackedMatrix::Pack(b, k, n, ldb, trans);
  });
}

std::shared_ptr<const PackedMatrix> AcquirePackedHalf(const uint16_t *b, int64_t k, int64_t n,
                                                      int64_t ldb, bool trans, PackedElem elem) {
  return TheRegistry().Acquire(b, k, n, ldb, trans, elem, nullptr,
                               [&] { return PackedMatrix::PackHalf(b, k, n, ldb, trans, elem); });
}

std::shared_ptr<const PackedMatrix> AcquirePackedI8(const int8_t *b, const float *scales, int64_t k,
                                                    int64_t n, int64_t ldb) {
  return TheRegistry().Acquire(b, k, n, ldb, false, PackedElem::kI8, scales,
                               [&] { return PackedMatrix::PackI8(b, scales, k, n, ldb); });
}

std::shared_ptr<const PackedMatrix> AcquirePackedI8x4(const int8_t *b, const float *scales,
                                                      int64_t k, int64_t n, int64_t ldb) {
  return TheRegistry().Acquire(b, k, n, ldb, false, PackedElem::kI8x4, scales,
                               [&] { return PackedMatrix::PackI8x4(b, scales, k, n, ldb); });
}

PackedElem ExactHalfElem(const float *b, int64_t k, int64_t n, int64_t ldb, bool trans) {
  if (b == nullptr || k <= 0 || n <= 0 || ldb < (trans ? k : n))
    return PackedElem::kF32;
  for (PackedElem half : {PackedElem::kBF16, PackedElem::kF16})
    if (HoldsExactly(b, k, n, ldb, trans, half))
      return half;
  return PackedElem::kF32;
}

const PackedMatrix *FindPacked(const void *b, int64_t k, int64_t n, int64_t ldb, bool trans) {
  return TheRegistry().Find(b, trans, k, n, ldb);
}

} // namespace kiln::kernels
