// ParallelFor's pool: workers start on first use and live for the process.
#include "kernels/cpu/parallel.h"

#include "kernels/cpu/gemm.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::kernels {
namespace {

thread_local bool t_in_range = false;

class Pool {
public:
  explicit Pool(int workers) : workers_(workers) {
    for (int i = 0; i < workers; ++i)
      std::thread([this] { Work(); }).detach();
  }
  int workers() const { return workers_; }

  // Runs ranges 0..count-1 of the job. The caller takes ranges too, one at a
  // time from a shared counter, so a worker that is slow to wake (a busy
  // machine) only delays the range it claimed, never the others. False,
  // running nothing, when another thread's job holds the pool.
  bool TryRun(int count, const std::function<void(int)> &range) {
    std::unique_lock<std::mutex> busy(run_mu_, std::try_to_lock);
    if (!busy.owns_lock())
      return false;
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &range;
    next_ = 0;
    count_ = count;
    pending_ = count;
    ++generation_;
    lock.unlock();
    wake_.notify_all();
    lock.lock();
    RunClaimed(lock);
    done_.wait(lock, [&] { return pending_ == 0; });
    job_ = nullptr;
    return true;
  }

private:
  void Work() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return generation_ != seen && job_ && next_ < count_; });
      seen = generation_;
      RunClaimed(lock);
    }
  }

  // Claims and runs ranges until none is left; `lock` holds mu_.
  void RunClaimed(std::unique_lock<std::mutex> &lock) {
    while (job_ && next_ < count_) {
      const int index = next_++;
      const std::function<void(int)> *job = job_;
      lock.unlock();
      t_in_range = true;
      (*job)(index);
      t_in_range = false;
      lock.lock();
      if (--pending_ == 0)
        done_.notify_all();
    }
  }

  const int workers_;
  std::mutex run_mu_; // one job at a time
  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *job_ = nullptr;
  int next_ = 0, count_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
};

Pool *GetPool() {
  // Never destroyed: detached workers may still wait on it at exit.
  static Pool *pool =
      new Pool(std::max(0, static_cast<int>(std::thread::hardware_concurrency()) - 1));
  return pool;
}

} // namespace

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  const int64_t threads = std::min<int64_t>(GemmThreads(), GetPool()->workers() + 1);
  // A few ranges per thread, so whoever is running takes up the slack of
  // whoever is not; none smaller than the grain.
  const int64_t parts = std::min<int64_t>(4 * threads, n / std::max<int64_t>(grain, 1));
  if (threads <= 1 || parts <= 1 || t_in_range) {
    fn(0, n);
    return;
  }
  Pool *pool = GetPool();
  auto range = [&](int i) {
    const int64_t begin = n * i / parts, end = n * (i + 1) / parts;
    if (begin < end)
      fn(begin, end);
  };
  if (!pool->TryRun(static_cast<int>(parts), range))
    fn(0, n); // another thread's job has the workers
}

} // namespace kiln::kernels
