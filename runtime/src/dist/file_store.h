// The rendezvous store of a run: a key-value store over a directory every
// rank can reach (a local temp dir, or a shared filesystem across hosts).
// Set writes a key atomically (a temp file renamed into place); Get waits
// for a key until the deadline. Both the gloo and the NCCL communicator
// exchange their connection data through it.
#pragma once

#include "kiln/status.h"

#include <chrono>
#include <string>
#include <vector>

namespace kiln::dist {

class FileStore {
public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  Status Set(const std::string &key, const std::vector<char> &value);
  // DeadlineExceeded naming the key after `timeout`.
  StatusOr<std::vector<char>> Get(const std::string &key, std::chrono::milliseconds timeout);
  const std::string &dir() const { return dir_; }

private:
  std::string Path(const std::string &key) const;
  std::string dir_;
};

} // namespace kiln::dist
