// Padding decode steps to bucketed shapes (step_buckets.h).
#include "engine/step_buckets.h"

namespace kiln::engine {
namespace {

int64_t NextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n && p < (int64_t{1} << 62))
    p <<= 1;
  return p;
}

} // namespace

bool IsDecodeOnly(const Step &step) {
  if (step.chunks.empty())
    return false;
  for (const ScheduledChunk &c : step.chunks)
    if (c.num_tokens != 1 || !c.samples)
      return false;
  return true;
}

int64_t DecodeBucket(int64_t n, int64_t cap) {
  const int64_t p = NextPowerOfTwo(n);
  if (cap > 0 && p > cap)
    return cap > n ? cap : n;
  return p;
}

int64_t TableBucket(int64_t width) { return NextPowerOfTwo(width); }

bool PadDecodeStep(StepArrays &a, int64_t seqs, int64_t width) {
  const int64_t n = a.seqs();
  const auto size = [](const std::vector<int64_t> &v) { return static_cast<int64_t>(v.size()); };
  if (seqs < n || width < a.width || a.width < 1 || size(a.ids) != n || size(a.pos) != n ||
      size(a.slots) != n || size(a.qstart) != n + 1 || size(a.rows) != n ||
      size(a.tables) != n * a.width)
    return false;
  for (int64_t s = 0; s < n; ++s)
    if (a.qstart[s] != s || a.rows[s] != s)
      return false;
  if (a.qstart[n] != n)
    return false;
  if (width != a.width) {
    std::vector<int64_t> wide(static_cast<size_t>(seqs * width), 0);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t j = 0; j < a.width; ++j)
        wide[s * width + j] = a.tables[s * a.width + j];
    a.tables = std::move(wide);
    a.width = width;
  } else {
    a.tables.resize(static_cast<size_t>(seqs * width), 0);
  }
  for (int64_t s = n; s < seqs; ++s) {
    a.ids.push_back(0);
    a.pos.push_back(0);
    a.slots.push_back(-1); // stores nothing
    a.qstart.push_back(s + 1);
    a.ctx.push_back(1); // block 0 (its row of the table is zeros), position 0
    a.rows.push_back(s);
  }
  return true;
}

} // namespace kiln::engine
