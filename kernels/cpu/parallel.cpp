// ParallelFor's pool: workers start on first use and live for the process.
//
// A worker that finishes spins for a short while (kSpinDefaultUs, or
// KILN_SPIN_US) watching for the next job before it sleeps on a condition
// variable, and the caller spins likewise for the workers' last ranges. A
// decode step is a chain of products a few hundred microseconds apart; waking
// a sleeping worker (and the caller) through the kernel cost 6-7 us a job on
// the development machine's virtual CPUs, which the spin saves. The spin is bounded,
// so an idle engine, or a machine with other work, does not keep a core busy.
#include "kernels/cpu/parallel.h"

#include "kernels/cpu/products_gemm.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::kernels {
namespace {

thread_local bool t_in_range = false;

constexpr int64_t kSpinDefaultUs = 100;
constexpr int64_t kMaxParts = 0xffff; // a job's ranges fit 16 bits of Pool::state_
constexpr int64_t kSpinMaxUs = 1000000;

// KILN_SPIN_US, read once: a whole number of microseconds from 0 to a
// second; anything else leaves the default, with a warning on stderr.
int64_t SpinFromEnv() {
  const char *env = std::getenv("KILN_SPIN_US");
  if (!env || !*env)
    return kSpinDefaultUs;
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(env, &end, 10);
  if (errno != 0 || !end || *end != '\0' || v < 0 || v > kSpinMaxUs) {
    std::fprintf(stderr,
                 "kiln: KILN_SPIN_US=%s is not a whole number of microseconds from 0 to %lld; "
                 "the CPU threads spin %lld us\n",
                 env, static_cast<long long>(kSpinMaxUs), static_cast<long long>(kSpinDefaultUs));
    return kSpinDefaultUs;
  }
  return v;
}

std::atomic<int64_t> g_spin_us{-1}; // -1: not read yet

int64_t SpinMicros() {
  int64_t us = g_spin_us.load(std::memory_order_relaxed);
  if (us < 0) {
    us = SpinFromEnv();
    int64_t unset = -1;
    if (!g_spin_us.compare_exchange_strong(unset, us, std::memory_order_relaxed))
      us = unset; // SetPoolSpinMicros got there first
  }
  return us;
}

// Spins until done() or `us` microseconds pass; true when done() held.
template <typename Done> bool SpinUntil(int64_t us, Done done) {
  if (done())
    return true;
  if (us <= 0)
    return false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (done())
        return true;
#if defined(__x86_64__) || defined(__i386__)
      _mm_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= until)
      return done();
  }
}

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
    job_.store(&range, std::memory_order_relaxed);
    pending_.store(count, std::memory_order_relaxed);
    {
      // The new generation with its count and next range 0, published under
      // mu_ so that a worker going to sleep either sees it or is woken.
      std::lock_guard<std::mutex> lock(mu_);
      generation_ = (Generation(state_.load(std::memory_order_relaxed)) + 1) & 0xffffffffu;
      state_.store(generation_ << 32 | static_cast<uint64_t>(count) << 16,
                   std::memory_order_release);
      if (sleepers_ > 0)
        wake_.notify_all();
    }
    RunClaimed(generation_);
    if (!SpinUntil(SpinMicros(), [&] { return pending_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
    }
    return true;
  }

private:
  // state_'s fields: the job's generation, its range count, the next
  // unclaimed range.
  static uint64_t Generation(uint64_t s) { return s >> 32; }
  static int Count(uint64_t s) { return static_cast<int>((s >> 16) & 0xffffu); }
  static int Next(uint64_t s) { return static_cast<int>(s & 0xffffu); }

  void Work() {
    uint64_t seen = 0;
    for (;;) {
      auto fresh = [&] { return Generation(state_.load(std::memory_order_acquire)) != seen; };
      if (!SpinUntil(SpinMicros(), fresh)) {
        std::unique_lock<std::mutex> lock(mu_);
        ++sleepers_;
        wake_.wait(lock, fresh);
        --sleepers_;
      }
      seen = Generation(state_.load(std::memory_order_acquire));
      RunClaimed(seen);
    }
  }

  // Claims and runs ranges of generation `gen` until none is left (or a
  // later job has replaced it, which means this one is done). The count is
  // read from the same word as the generation, so a thread that saw an
  // older job never claims a range of the next one, nor past its own count.
  void RunClaimed(uint64_t gen) {
    for (;;) {
      uint64_t s = state_.load(std::memory_order_acquire);
      do {
        if (Generation(s) != gen || Next(s) >= Count(s))
          return;
      } while (!state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                             std::memory_order_acquire));
      // Claimed: the job cannot end, nor another start, before the pending
      // count below reaches zero, so job_ is this job's.
      t_in_range = true;
      (*job_.load(std::memory_order_relaxed))(Next(s));
      t_in_range = false;
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_.notify_all();
      }
    }
  }

  // The current job's generation (bits 32-63), range count (16-31) and next
  // unclaimed range (0-15), on a cache line of its own: the threads that
  // claim and spin on it do not also bounce the locks' line.
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) const int workers_;
  std::mutex run_mu_; // one job at a time
  std::mutex mu_;     // sleeping and waking
  std::condition_variable wake_, done_;
  int sleepers_ = 0;        // guarded by mu_
  uint64_t generation_ = 0; // the caller's copy of the current generation
  std::atomic<const std::function<void(int)> *> job_{nullptr};
  std::atomic<int> pending_{0};
};

Pool *GetPool() {
  // Never destroyed: detached workers may still wait on it at exit.
  static Pool *pool =
      new Pool(std::max(0, static_cast<int>(std::thread::hardware_concurrency()) - 1));
  return pool;
}

std::atomic<int> g_max_threads{0}; // 0: not set, use every core

} // namespace

void SetGemmThreads(int threads) { g_max_threads.store(threads > 0 ? threads : 0); }

int GemmThreads() {
  if (const int set = g_max_threads.load(); set > 0)
    return set;
  // hardware_concurrency() reads /sys on every call (microseconds): once.
  static const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return hw;
}

void SetPoolSpinMicros(int64_t us) {
  g_spin_us.store(us < 0 ? kSpinDefaultUs : std::min(us, kSpinMaxUs), std::memory_order_relaxed);
}

int64_t PoolSpinMicros() { return SpinMicros(); }

void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0)
    return;
  const int64_t threads = std::min<int64_t>(GemmThreads(), GetPool()->workers() + 1);
  // A few ranges per thread, so whoever is running takes up the slack of
  // whoever is not; none smaller than the grain.
  const int64_t parts =
      std::min<int64_t>({4 * threads, n / std::max<int64_t>(grain, 1), kMaxParts});
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
