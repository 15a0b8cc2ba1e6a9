// The rendezvous store of a tensor-parallel run: a small key-value store
// through which the ranks exchange their connection data (gloo's addresses,
// NCCL's unique id). Two kinds (docs/tp-runtime.md):
//   - a directory every rank can write (a local temp dir, or a shared
//     filesystem across hosts): FileStore, one file per key;
//   - tcp://HOST:PORT: rank 0 serves the keys on that address and every rank
//     (rank 0 included) is a client, as torchrun's TCP store; hosts need no
//     shared filesystem. The port must be reachable only by the run's hosts:
//     the store has no authentication.
// Get waits for a key until the deadline.
#pragma once

#include "kiln/status.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace kiln::comm {

class Store {
public:
  virtual ~Store() = default;
  virtual Status Set(const std::string &key, const std::vector<char> &value) = 0;
  // An error naming the key (and where it was looked for) after `timeout`.
  virtual StatusOr<std::vector<char>> Get(const std::string &key,
                                          std::chrono::milliseconds timeout) = 0;
  // The store's address, for messages.
  virtual std::string Where() const = 0;
};

// True for "tcp://HOST:PORT" (what OpenStore takes as a TCP store).
bool IsTcpAddress(const std::string &address);
// Splits "tcp://HOST:PORT" (HOST may be [v6]); InvalidArgument otherwise.
Status ParseTcpAddress(const std::string &address, std::string *host, int *port);

// `address` is a directory or tcp://HOST:PORT. With TCP, rank 0 starts the
// store's server on HOST:PORT first; it serves until the process exits, so
// every rank can finish its rendezvous whenever rank 0 finished its own.
StatusOr<std::unique_ptr<Store>> OpenStore(const std::string &address, int rank,
                                           std::chrono::milliseconds timeout);

} // namespace kiln::comm
