// LazyLibrary (lazy_library.h): dlopen on first use, every symbol resolved
// at once.
#include "core/lazy_library.h"

#include <dlfcn.h>

#include <cstdlib>

namespace kiln {

LazyLibrary::LazyLibrary(std::string what, std::string env, std::string soname,
                         std::string fallback_dir,
                         std::vector<std::pair<const char *, void **>> symbols)
    : what_(std::move(what)), env_(std::move(env)), soname_(std::move(soname)),
      fallback_dir_(std::move(fallback_dir)), symbols_(std::move(symbols)) {}

const Status &LazyLibrary::Load() {
  std::call_once(once_, [this] { status_ = Open(); });
  return status_;
}

Status LazyLibrary::Open() {
  // Where to look: the variable's value alone when it is set (a user who
  // names a file means that file), else the loader's search, then where the
  // build found the library.
  std::vector<std::string> tries;
  const char *over = std::getenv(env_.c_str());
  if (over != nullptr && *over != '\0') {
    tries.push_back(over);
  } else {
    tries.push_back(soname_);
    if (!fallback_dir_.empty())
      tries.push_back(fallback_dir_ + "/" + soname_);
  }
  std::string why;
  void *handle = nullptr;
  for (const std::string &name : tries) {
    // RTLD_LOCAL: kiln reaches the library only through dlsym, and no other
    // library loaded later binds to its symbols by name.
    handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      path_ = name;
      break;
    }
    const char *err = dlerror();
    why += std::string(why.empty() ? "" : "; ") + (err != nullptr ? err : name + ": not found");
  }
  if (handle == nullptr) {
    std::string hint;
    if (over != nullptr && *over != '\0') {
      hint = env_ + " names " + over;
    } else {
      hint = "searched for " + soname_ + " on LD_LIBRARY_PATH and in the loader's folders";
      if (!fallback_dir_.empty())
        hint += " and " + fallback_dir_;
      hint += "; set " + env_ + " to its path";
    }
    return NotFound(what_ + " could not be loaded (" + hint + "): " + why);
  }
  for (auto &[name, slot] : symbols_) {
    dlerror();
    void *fn = dlsym(handle, name);
    if (fn == nullptr) {
      const char *err = dlerror();
      const std::string opened = std::move(path_);
      path_.clear();
      // The handle stays open: the library may hold state of its own.
      return NotFound(what_ + " at " + opened + " has no " + name + " (" +
                      (err != nullptr ? err : "null") + "): an older version than the " + soname_ +
                      " kiln was built for?");
    }
    *slot = fn;
  }
  return Status::Ok();
}

} // namespace kiln
