// On-device sampling (sampling.h): one block per sampled row.
#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/sampling.h"

#include <cuda/std/cmath>
#include <cuda/std/limits>

namespace kiln::kernels::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kPenaltyThreads = 256;
constexpr int kDigitBits = 8;
constexpr int kBins = 1 << kDigitBits;
constexpr int kDigitsPerLane = kBins / kWarp;
constexpr unsigned kFullMask = 0xffffffffu;

struct RowShared {
  uint64_t bins[kBins];
  uint64_t reduce_u64[kWarp];
  double reduce_f64[kWarp];
  int digit;
  uint64_t before;
};

// The CPU's candidate order as one integer, larger first: the logit's bits
// mapped so that unsigned order is float order (-0 taken as +0, which
// compares equal to it there), then the id reversed, so that the lower id
// wins a tie. Every key is > 0, so 0 stands for "none".
__device__ __forceinline__ uint64_t OrderKey(float v, int64_t id) {
  uint32_t b = v == 0.0f ? 0u : __float_as_uint(v);
  b = (b & 0x80000000u) ? ~b : (b | 0x80000000u);
  return (static_cast<uint64_t>(b) << 32) | (0xffffffffu - static_cast<uint32_t>(id));
}

__device__ __forceinline__ int32_t IdOf(uint64_t key) {
  return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(key));
}

struct MaxU64 {
  __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const {
    return a > b ? a : b;
  }
};
struct SumU64 {
  __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const { return a + b; }
};
struct SumF64 {
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
};

// Sum over the row's non-NaN logits of weight(logit, key).
template <typename W>
__device__ uint64_t SumWeights(const float *x, int64_t vocab, W weight, RowShared &sh) {
  uint64_t s = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float l = x[i];
    if (!::cuda::std::isnan(l))
      s += weight(l, OrderKey(l, i));
  }
  return BlockAllReduce(s, SumU64{}, uint64_t{0}, sh.reduce_u64);
}

// The key of the first candidate, in order, whose inclusive running sum of
// weight(logit, key) exceeds `target`; the weights must sum to more than
// `target`. A radix descent over the key, kDigitBits at a time: each pass
// sums the weights of the keys under the prefix chosen so far per next
// digit, then takes the digit where the running sum crosses the target.
template <typename W>
__device__ uint64_t Select(const float *x, int64_t vocab, W weight, uint64_t target,
                           RowShared &sh) {
  uint64_t prefix = 0, before = 0;
  const int lane = threadIdx.x % kWarp;
  for (int shift = 64 - kDigitBits; shift >= 0; shift -= kDigitBits) {
    const uint64_t high = shift + kDigitBits >= 64 ? 0 : ~uint64_t{0} << (shift + kDigitBits);
    for (int i = threadIdx.x; i < kBins; i += blockDim.x)
      sh.bins[i] = 0;
    __syncthreads();
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
      const float l = x[i];
      if (::cuda::std::isnan(l))
        continue;
      const uint64_t key = OrderKey(l, i);
      if ((key & high) != prefix)
        continue;
      const uint64_t w = weight(l, key);
      if (w != 0)
        atomicAdd(reinterpret_cast<unsigned long long *>(&sh.bins[(key >> shift) & (kBins - 1)]),
                  static_cast<unsigned long long>(w));
    }
    __syncthreads();
    if (threadIdx.x < kWarp) {
      // Lane j holds digits kBins-1-j*8 down to kBins-8-j*8: the best first.
      const int top = kBins - 1 - lane * kDigitsPerLane;
      uint64_t part = 0;
      for (int j = 0; j < kDigitsPerLane; ++j)
        part += sh.bins[top - j];
      uint64_t incl = part;
      for (int o = 1; o < kWarp; o <<= 1) {
        const uint64_t n = __shfl_up_sync(kFullMask, incl, o);
        if (lane >= o)
          incl += n;
      }
      const unsigned crossing = __ballot_sync(kFullMask, before + incl > target);
      const int first = crossing ? __ffs(crossing) - 1 : kWarp - 1;
      if (lane == first) {
        uint64_t acc = before + incl - part;
        int d = top;
        for (int j = 0; j < kDigitsPerLane - 1; ++j, --d) {
          if (acc + sh.bins[d] > target)
            break;
          acc += sh.bins[d];
        }
        sh.digit = d;
        sh.before = acc;
      }
    }
    __syncthreads();
    prefix |= static_cast<uint64_t>(sh.digit) << shift;
    before = sh.before;
  }
  __syncthreads(); // the next call may reset the bins and the digit
  return prefix;
}

// exp((l - max) / t) in double, as the CPU sampler computes it.
__device__ __forceinline__ double Prob(float l, float max, double t) {
  return exp((static_cast<double>(l) - static_cast<double>(max)) / t);
}

__device__ __forceinline__ uint64_t Mass(double p) {
  return __double2ull_rn(p * static_cast<double>(uint64_t{1} << kMassBits));
}

// Greedy or the draw; `count` non-NaN logits, `best` the best's key.
__device__ void Choose(const float *x, int64_t vocab, const SampleRow &row, uint64_t best,
                       uint64_t count, RowShared &sh, SampleResult &res) {
  res.token = 0;
  res.drew = 0;
  if (count == 0)
    return;
  res.token = IdOf(best);
  const float max = x[res.token];
  if (row.temperature == 0.0f || row.top_k == 1 || ::cuda::std::isinf(max))
    return;
  const double t = row.temperature;
  uint64_t lo = 0; // candidates are the keys >= lo
  if (row.top_k > 0 && static_cast<uint64_t>(row.top_k) < count)
    lo = Select(
        x, vocab, [](float, uint64_t) -> uint64_t { return 1; },
        static_cast<uint64_t>(row.top_k) - 1, sh);
  if (row.top_p < 1.0f) {
    auto kept = [&](float l, uint64_t key) -> uint64_t {
      return key >= lo ? Mass(Prob(l, max, t)) : 0;
    };
    const uint64_t total = SumWeights(x, vocab, kept, sh);
    // The shortest prefix whose mass reaches top_p of the total.
    const double want = ceil(static_cast<double>(row.top_p) * static_cast<double>(total));
    uint64_t target = want >= 1.0 ? static_cast<uint64_t>(want) - 1 : 0;
    target = target < total ? target : total - 1;
    lo = Select(x, vocab, kept, target, sh);
  }
  const double floor = row.min_p;
  auto drawn = [&](float l, uint64_t key) -> uint64_t {
    if (key < lo)
      return 0;
    const double p = Prob(l, max, t);
    return row.min_p > 0.0f && !(p >= floor) ? 0 : Mass(p);
  };
  const uint64_t total = SumWeights(x, vocab, drawn, sh);
  // floor(u * total) with u = bits * 2^-53, exactly.
  uint64_t target = __umul64hi(row.uniform_bits << 11, total);
  target = target < total ? target : total - 1;
  const int32_t drawn_id = IdOf(Select(x, vocab, drawn, target, sh));
  // Always a candidate when the masses add up, as they must; never an id
  // outside the row if they did not.
  if (drawn_id >= 0 && drawn_id < vocab)
    res.token = drawn_id;
  res.drew = 1;
}

// The log-softmax of the logits over the temperature (1 when greedy) at the
// chosen token and at the row.logprobs best, as the CPU's FillLogprobs.
__device__ void Logprobs(const float *x, int64_t vocab, const SampleRow &row, uint64_t best,
                         uint64_t count, RowShared &sh, SampleResult &res) {
  const float inf = ::cuda::std::numeric_limits<float>::infinity();
  res.num_top = 0;
  if (count == 0) {
    res.logprob = -inf;
    return;
  }
  const double t = row.temperature > 0.0f ? row.temperature : 1.0;
  const float max = x[IdOf(best)];
  const bool inf_max = ::cuda::std::isinf(max);
  double log_total = 0;
  if (inf_max) {
    const uint64_t holders = SumWeights(
        x, vocab, [&](float l, uint64_t) -> uint64_t { return l == max ? 1 : 0; }, sh);
    log_total = log(static_cast<double>(holders > 0 ? holders : 1));
  } else {
    double s = 0;
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
      const float l = x[i];
      if (!::cuda::std::isnan(l))
        s += Prob(l, max, t);
    }
    log_total = log(BlockAllReduce(s, SumF64{}, 0.0, sh.reduce_f64));
  }
  auto logprob = [&](float l) -> float {
    if (::cuda::std::isnan(l))
      return -inf;
    if (inf_max)
      return l == max ? static_cast<float>(-log_total) : -inf;
    return static_cast<float>((static_cast<double>(l) - static_cast<double>(max)) / t - log_total);
  };
  res.logprob = logprob(x[res.token]);
  const int n =
      static_cast<int>(count < static_cast<uint64_t>(row.logprobs) ? count : row.logprobs);
  uint64_t prev = ~uint64_t{0};
  for (int j = 0; j < n && j < kMaxTopLogprobs; ++j) {
    uint64_t k = 0;
    for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
      const float l = x[i];
      if (::cuda::std::isnan(l))
        continue;
      const uint64_t key = OrderKey(l, i);
      if (key < prev && key > k)
        k = key;
    }
    k = BlockAllReduce(k, MaxU64{}, uint64_t{0}, sh.reduce_u64);
    res.top_tokens[j] = IdOf(k);
    res.top_logprobs[j] = logprob(x[IdOf(k)]);
    prev = k;
  }
  res.num_top = n < kMaxTopLogprobs ? n : kMaxTopLogprobs;
}

__global__ void __launch_bounds__(kThreads)
    SampleKernel(const float *logits, int64_t vocab, const SampleRow *rows, SampleResult *results) {
  __shared__ RowShared sh;
  const SampleRow row = rows[blockIdx.x];
  const float *x = logits + row.logits_row * vocab;
  uint64_t best = 0, count = 0;
  for (int64_t i = threadIdx.x; i < vocab; i += blockDim.x) {
    const float l = x[i];
    if (::cuda::std::isnan(l))
      continue;
    const uint64_t key = OrderKey(l, i);
    best = key > best ? key : best;
    ++count;
  }
  best = BlockAllReduce(best, MaxU64{}, uint64_t{0}, sh.reduce_u64);
  count = BlockAllReduce(count, SumU64{}, uint64_t{0}, sh.reduce_u64);
  // Every thread computes the same values; thread 0's copy is written.
  SampleResult mine;
  Choose(x, vocab, row, best, count, sh, mine);
  mine.logprob = 0;
  mine.num_top = 0;
  if (row.logprobs > 0)
    Logprobs(x, vocab, row, best, count, sh, mine);
  if (threadIdx.x == 0)
    results[blockIdx.x] = mine;
}

__global__ void __launch_bounds__(kPenaltyThreads)
    PenaltyKernel(float *logits, int64_t vocab, const SampleRow *rows,
                  const PenaltyEntry *entries) {
  const SampleRow row = rows[blockIdx.x];
  float *x = logits + row.logits_row * vocab;
  for (int32_t e = row.penalty_begin + static_cast<int32_t>(threadIdx.x); e < row.penalty_end;
       e += blockDim.x) {
    const PenaltyEntry p = entries[e];
    if (p.token < 0 || p.token >= vocab)
      continue;
    float l = x[p.token];
    // The CPU's f32 arithmetic, each step rounded (no fused multiply-add).
    if (p.flags & kPenaltyRepeated)
      l = l > 0 ? __fdiv_rn(l, row.repetition_penalty) : __fmul_rn(l, row.repetition_penalty);
    if (row.counted && p.generated > 0)
      l = __fsub_rn(l, __fadd_rn(row.presence_penalty, __fmul_rn(row.frequency_penalty,
                                                                 static_cast<float>(p.generated))));
    if (p.flags & kPenaltySuppressed)
      l = -::cuda::std::numeric_limits<float>::infinity();
    x[p.token] = l;
  }
}

} // namespace

cudaError_t ApplyPenalties(float *logits, int64_t vocab, const SampleRow *rows, int64_t num_rows,
                           const PenaltyEntry *entries, cudaStream_t stream) {
  if (num_rows <= 0)
    return cudaSuccess;
  PenaltyKernel<<<static_cast<unsigned>(num_rows), kPenaltyThreads, 0, stream>>>(logits, vocab,
                                                                                 rows, entries);
  return cudaGetLastError();
}

cudaError_t SampleRows(const float *logits, int64_t vocab, const SampleRow *rows, int64_t num_rows,
                       SampleResult *results, cudaStream_t stream) {
  if (num_rows <= 0)
    return cudaSuccess;
  SampleKernel<<<static_cast<unsigned>(num_rows), kThreads, 0, stream>>>(logits, vocab, rows,
                                                                         results);
  return cudaGetLastError();
}

} // namespace kiln::kernels::cuda
