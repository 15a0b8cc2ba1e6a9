#include "serve/replica_balancer.h"

namespace kiln::serve {

LeastLoaded::LeastLoaded(int replicas) : replicas_(static_cast<size_t>(replicas)) {}

LeastLoaded::Pick LeastLoaded::Acquire(const std::vector<bool> &exclude) {
  std::lock_guard<std::mutex> l(mu_);
  const int n = size();
  int best = -1;
  // Scanning from next_ and keeping the first minimum takes ties in turn.
  for (int k = 0; k < n; ++k) {
    const int i = (next_ + k) % n;
    const Replica &r = replicas_[static_cast<size_t>(i)];
    if (!r.up || (static_cast<size_t>(i) < exclude.size() && exclude[static_cast<size_t>(i)]))
      continue;
    if (best < 0 || r.in_flight < replicas_[static_cast<size_t>(best)].in_flight)
      best = i;
  }
  if (best < 0)
    return {};
  Replica &r = replicas_[static_cast<size_t>(best)];
  ++r.in_flight;
  next_ = (best + 1) % n;
  return {best, r.port, r.pid};
}

void LeastLoaded::Release(int index) {
  std::lock_guard<std::mutex> l(mu_);
  if (index >= 0 && index < size() && replicas_[static_cast<size_t>(index)].in_flight > 0)
    --replicas_[static_cast<size_t>(index)].in_flight;
}

void LeastLoaded::SetUp(int index, int port, int pid) {
  std::lock_guard<std::mutex> l(mu_);
  Replica &r = replicas_.at(static_cast<size_t>(index));
  r.up = true;
  r.port = port;
  r.pid = pid;
}

void LeastLoaded::SetDown(int index) {
  std::lock_guard<std::mutex> l(mu_);
  replicas_.at(static_cast<size_t>(index)).up = false;
}

int LeastLoaded::up_count() const {
  std::lock_guard<std::mutex> l(mu_);
  int up = 0;
  for (const Replica &r : replicas_)
    up += r.up ? 1 : 0;
  return up;
}

bool LeastLoaded::up(int index) const {
  std::lock_guard<std::mutex> l(mu_);
  return replicas_.at(static_cast<size_t>(index)).up;
}

int LeastLoaded::in_flight(int index) const {
  std::lock_guard<std::mutex> l(mu_);
  return replicas_.at(static_cast<size_t>(index)).in_flight;
}

} // namespace kiln::serve
