//===- SourcePages.cpp - drop read model-file pages from RSS --------------===//

#include "compiler/support/SourcePages.h"

#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln::compiler {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<uintptr_t, uint64_t> mappings; // begin -> size
};

Registry &registry() {
  static Registry r;
  return r;
}

/// MADV_DONTNEED on [begin, end) widened to whole pages inside the mapping
/// [lo, hi): a private, never-written file mapping refaults from the page
/// cache, so this only unmaps pages and never loses data.
void dropPages(uintptr_t begin, uintptr_t end, uintptr_t lo, uintptr_t hi) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t first = begin / page * page;
  uintptr_t last = (end + page - 1) / page * page;
  if (first < lo)
    first += page; // the mapping starts page-aligned, so this stays inside it
  if (last > hi)
    last -= page;
  if (last > first)
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

} // namespace

void registerMappedFile(const void *begin, uint64_t size) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.mappings[reinterpret_cast<uintptr_t>(begin)] = size;
}

void unregisterMappedFile(const void *begin) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.mappings.erase(reinterpret_cast<uintptr_t>(begin));
}

void releaseSourcePages(const void *data, uint64_t size) {
  if (size == 0)
    return;
  uintptr_t begin = reinterpret_cast<uintptr_t>(data), end = begin + size;
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.mappings.upper_bound(begin);
  if (it == r.mappings.begin())
    return;
  --it;
  uintptr_t lo = it->first, hi = it->first + it->second;
  if (begin >= lo && end <= hi)
    dropPages(begin, end, lo, hi);
}

void releaseAllSourcePages() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto [begin, size] : r.mappings)
    dropPages(begin, begin + size, begin, begin + size);
}

} // namespace kiln::compiler
