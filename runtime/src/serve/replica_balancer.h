// The --replicas front end's choice of replica: the one with the fewest
// requests in flight among those up, ties taken in turn (round robin), so
// equal replicas share a steady load evenly and a slow one gets less.
// Thread-safe: handler threads acquire and release, the supervisor marks
// replicas up and down.
#pragma once

#include <mutex>
#include <vector>

namespace kiln::serve {

class LeastLoaded {
public:
  explicit LeastLoaded(int replicas);

  // A replica chosen for one request, and where it listens.
  struct Pick {
    int index = -1; // -1: no replica is up (or every one is excluded)
    int port = 0;
    int pid = 0;
  };
  // Chooses among the replicas that are up and not in `exclude` (indexed
  // like the replicas; shorter means not excluded), and counts the request
  // against the one chosen until Release.
  Pick Acquire(const std::vector<bool> &exclude = {});
  void Release(int index);

  // The supervisor's view: replica `index` serves on `port` as process
  // `pid`, or is down (it gets no requests until it is up again).
  void SetUp(int index, int port, int pid);
  void SetDown(int index);

  int size() const { return static_cast<int>(replicas_.size()); }
  int up_count() const;
  bool up(int index) const;
  int in_flight(int index) const;

private:
  struct Replica {
    bool up = false;
    int port = 0, pid = 0;
    int in_flight = 0;
  };
  mutable std::mutex mu_;
  std::vector<Replica> replicas_;
  int next_ = 0; // where the search for a tie starts: the one after the last pick
};

} // namespace kiln::serve
