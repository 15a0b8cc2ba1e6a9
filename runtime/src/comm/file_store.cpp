// FileStore: one file per key, published by rename so a reader never sees
// a partial value.
#include "comm/file_store.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <unistd.h>

namespace kiln::comm {

std::string FileStore::Path(const std::string &key) const {
  // Keys are kiln's own ("gloo/0", "nccl_id"); '/' would name a directory.
  std::string name = key;
  for (char &c : name)
    if (c == '/')
      c = '_';
  return dir_ + "/" + name;
}

Status FileStore::Set(const std::string &key, const std::vector<char> &value) {
  const std::string path = Path(key);
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    if (!out.good())
      return Internal("rendezvous: cannot write '" + tmp + "' (is " + dir_ +
                      " a writable directory every rank reaches?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Internal("rendezvous: cannot rename '" + tmp + "': " + std::strerror(errno));
  return Status::Ok();
}

StatusOr<std::vector<char>> FileStore::Get(const std::string &key,
                                           std::chrono::milliseconds timeout) {
  const std::string path = Path(key);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::ifstream in(path, std::ios::binary);
    if (in.good())
      return std::vector<char>(std::istreambuf_iterator<char>(in),
                               std::istreambuf_iterator<char>());
    if (std::chrono::steady_clock::now() >= deadline)
      return Internal("rendezvous: no rank published '" + key + "' in " + dir_ + " within " +
                      std::to_string(timeout.count()) +
                      " ms (a rank did not start, or the ranks use different rendezvous dirs)");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace kiln::comm
