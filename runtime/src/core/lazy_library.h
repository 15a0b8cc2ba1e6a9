// A shared library opened on first use (dlopen), so that a runtime built
// with a vendor library does not need it to start: cuBLASLt
// (backends/cuda/cublaslt_loader.cpp) and NCCL (comm/nccl_loader.cpp) are
// loaded this way. Their functions are defined by
// kiln as forwarders to the library's, resolved once, so callers include the
// vendor header and call them as usual; a forwarder called when the library
// could not be loaded returns the library's "not initialized" error, and
// Load() says why (docs/gpu.md#cuda-libraries).
#pragma once

#include "kiln/status.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace kiln {

class LazyLibrary {
public:
  // `what` names the library in messages ("cuBLASLt"); `env` is the variable
  // that overrides where it is opened from (a path or a file name);
  // `soname` is the file name the dynamic loader searches for (its
  // LD_LIBRARY_PATH, cache and default folders); `fallback_dir`, where not
  // empty, is where the build found it, tried last. `symbols` pairs each
  // function name with the pointer that receives it; every one must resolve.
  LazyLibrary(std::string what, std::string env, std::string soname, std::string fallback_dir,
              std::vector<std::pair<const char *, void **>> symbols);
  LazyLibrary(const LazyLibrary &) = delete;
  LazyLibrary &operator=(const LazyLibrary &) = delete;

  // Opens the library and resolves the symbols, once per process (also
  // when it failed: the Status is kept and returned again).
  const Status &Load();
  bool Loaded() { return Load().ok(); }

  // The file the library was opened from (empty before a successful Load).
  const std::string &path() const { return path_; }

private:
  Status Open();

  std::string what_, env_, soname_, fallback_dir_;
  std::vector<std::pair<const char *, void **>> symbols_;
  std::once_flag once_;
  Status status_;
  std::string path_;
};

// One entry of a LazyLibrary's symbol list: `name`, resolved into `fn`, a
// pointer of the function's own type (decltype(&name)).
template <typename F> std::pair<const char *, void **> SymbolSlot(const char *name, F *&fn) {
  return {name, reinterpret_cast<void **>(&fn)};
}

} // namespace kiln
