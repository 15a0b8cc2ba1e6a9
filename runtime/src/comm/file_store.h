// The rendezvous store over a directory every rank can reach (a local temp
// dir, or a shared filesystem across hosts; store.h). Set writes a key
// atomically (a temp file renamed into place); Get polls for it.
#pragma once

#include "comm/store.h"

#include <chrono>
#include <string>
#include <vector>

namespace kiln::comm {

class FileStore : public Store {
public:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  Status Set(const std::string &key, const std::vector<char> &value) override;
  StatusOr<std::vector<char>> Get(const std::string &key,
                                  std::chrono::milliseconds timeout) override;
  std::string Where() const override { return dir_; }

private:
  std::string Path(const std::string &key) const;
  std::string dir_;
};

} // namespace kiln::comm
