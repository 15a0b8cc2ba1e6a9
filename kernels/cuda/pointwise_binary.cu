// Broadcasting binary arithmetic, Pow, comparisons, logic and Where
// (declared in pointwise.h). Each op is a functor run by the broadcast loop
// of broadcast.cuh; the op is a kernel argument, the same for every thread.
#include "kernels/cuda/broadcast.cuh"

namespace kiln::kernels::cuda {

// ---- Broadcast layout (host) ------------------------------------------------

bool MakeBroadcast(const std::vector<std::vector<int64_t>> &inputs, const std::vector<int64_t> &out,
                   Broadcast *b) {
  const int n = static_cast<int>(inputs.size());
  if (n < 1 || n > Broadcast::kMaxInputs)
    return false;
  const int rank = static_cast<int>(out.size());
  *b = Broadcast();
  b->num_inputs = n;
  b->numel = 1;
  for (int64_t d : out)
    b->numel *= d;
  // Right-aligned strides of each input over the output's dims (0 where
  // broadcast), innermost first.
  std::vector<std::vector<int64_t>> strides(n, std::vector<int64_t>(rank, 0));
  for (int k = 0; k < n; ++k) {
    const int in_rank = static_cast<int>(inputs[k].size());
    if (in_rank > rank)
      return false;
    int64_t stride = 1, count = 1;
    for (int j = 0; j < rank; ++j) {
      const int d = rank - 1 - j; // output dim, from the innermost
      const int src = d - (rank - in_rank);
      const int64_t dim = src >= 0 ? inputs[k][src] : 1;
      if (dim != out[d] && dim != 1)
        return false;
      strides[k][j] = dim == 1 ? 0 : stride;
      stride *= dim;
      count *= dim;
    }
    // An input with as many elements as the output is laid out like it.
    if (count != b->numel)
      b->same_shape = false;
  }
  if (b->numel == 0)
    return true;
  // Drop unit dims; merge a dim into the one inside it when every input
  // steps over both as one (both contiguous, or both broadcast).
  for (int j = 0; j < rank; ++j) {
    const int64_t dim = out[rank - 1 - j];
    if (dim == 1)
      continue;
    bool merge = b->rank > 0;
    for (int k = 0; k < n && merge; ++k)
      merge = strides[k][j] == b->strides[k][b->rank - 1] * b->dims[b->rank - 1];
    if (merge) {
      b->dims[b->rank - 1] *= dim;
      continue;
    }
    if (b->rank == Broadcast::kMaxRank)
      return false;
    b->dims[b->rank] = dim;
    for (int k = 0; k < n; ++k)
      b->strides[k][b->rank] = strides[k][j];
    ++b->rank;
  }
  return true;
}

namespace {

// ---- Scalar rules -----------------------------------------------------------

template <typename C> __device__ __forceinline__ C SafeDiv(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0)
      return 0;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1)
        return WrapNeg(a); // avoids MIN / -1 overflow
    }
    return static_cast<C>(a / b);
  } else {
    return a / b;
  }
}

// Pow in float or double. The exponents transformer graphs use (x^2, x^3,
// x^0.5 in norms and GELU) take the closed forms the CPU takes.
template <typename C> __device__ __forceinline__ C PowFloat(C x, C y) {
  if (y == C(2))
    return x * x;
  if (y == C(3))
    return x * x * x;
  if (y == C(1))
    return x;
  if constexpr (std::is_same_v<C, float>) {
    if (y == 0.5f)
      return sqrtf(x);
    return powf(x, y);
  } else {
    if (y == 0.5)
      return sqrt(x);
    return pow(x, y);
  }
}

// A double truncated toward zero and saturated to T; NaN gives 0.
template <typename T> __device__ __forceinline__ T SaturateFromDouble(double v) {
  if (isnan(v))
    return 0;
  constexpr double lo = static_cast<double>(::cuda::std::numeric_limits<T>::min());
  constexpr double hi = static_cast<double>(::cuda::std::numeric_limits<T>::max());
  if (v <= lo)
    return ::cuda::std::numeric_limits<T>::min();
  if (v >= hi)
    return ::cuda::std::numeric_limits<T>::max();
  return static_cast<T>(v);
}

// Integer Pow: the CPU's pow(double(a), double(b)) truncated and saturated
// to T. pow of integers is exact in double while it fits, so the power is
// formed exactly in 64 bits (a device pow() may be an ulp off) and rounded
// to double once, as pow() rounds it.
template <typename T> __device__ __forceinline__ T IntPow(T a_in, T b_in) {
  const int64_t a = a_in, b = b_in;
  if (b < 0) {
    // |a|^b for b < 0: 1/0 = inf for a = 0, +-1 for |a| = 1, else below 1.
    if (a == 0)
      return ::cuda::std::numeric_limits<T>::max();
    if (a == 1)
      return 1;
    if (a == -1)
      return static_cast<T>((b & 1) ? -1 : 1);
    return 0;
  }
  uint64_t base = a < 0 ? uint64_t{0} - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t mag = 1, e = static_cast<uint64_t>(b);
  bool overflow = false;
  while (e != 0) {
    if (e & 1) {
      if (__umul64hi(mag, base) != 0) {
        overflow = true;
        break;
      }
      mag *= base;
    }
    e >>= 1;
    if (e != 0) {
      // Another factor of at least base^2 is still to come.
      if (__umul64hi(base, base) != 0) {
        overflow = true;
        break;
      }
      base *= base;
    }
  }
  const double m =
      overflow ? ::cuda::std::numeric_limits<double>::infinity() : static_cast<double>(mag);
  return SaturateFromDouble<T>(a < 0 && (b & 1) ? -m : m);
}

template <typename T> __device__ __forceinline__ T PowOf(T x, T y) {
  if constexpr (std::is_integral_v<T>) {
    return IntPow(x, y);
  } else {
    return PowFloat(x, y);
  }
}

// ---- Functors of the broadcast loop -------------------------------------

template <typename T> struct ArithFn {
  BinaryOp op;
  const T *a;
  const T *b;
  T *out;
  __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const {
    using C = Compute<T>;
    const C x = Load(a[off[0]]), y = Load(b[off[1]]);
    C r;
    switch (op) {
    case BinaryOp::kAdd:
      r = WrapAdd(x, y);
      break;
    case BinaryOp::kSub:
      r = WrapSub(x, y);
      break;
    case BinaryOp::kMul:
      r = WrapMul(x, y);
      break;
    case BinaryOp::kDiv:
      r = SafeDiv(x, y);
      break;
    case BinaryOp::kMax:
      r = MaxOf(x, y);
      break;
    default: // kMin; kPow runs PowFn
      r = MinOf(x, y);
      break;
    }
    out[i] = Store<T>(r);
  }
};

// Pow on its own: its slow path would weigh on every other op's registers.
template <typename T, typename E> struct PowFn {
  const T *a;
  const E *e;
  T *out;
  __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const {
    out[i] = Store<T>(PowOf(Load(a[off[0]]), Load(e[off[1]])));
  }
};

template <typename T> struct CompareFn {
  CompareOp op;
  const T *a;
  const T *b;
  uint8_t *out;
  __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const {
    const Compute<T> x = Load(a[off[0]]), y = Load(b[off[1]]);
    bool r;
    switch (op) {
    case CompareOp::kEqual:
      r = x == y;
      break;
    case CompareOp::kLess:
      r = x < y;
      break;
    case CompareOp::kGreater:
      r = x > y;
      break;
    case CompareOp::kLessOrEqual:
      r = x <= y;
      break;
    default:
      r = x >= y;
      break;
    }
    out[i] = r;
  }
};

struct LogicFn {
  LogicOp op;
  const uint8_t *a;
  const uint8_t *b;
  uint8_t *out;
  __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const {
    const bool x = a[off[0]] != 0, y = b[off[1]] != 0;
    bool r;
    switch (op) {
    case LogicOp::kAnd:
      r = x && y;
      break;
    case LogicOp::kOr:
      r = x || y;
      break;
    case LogicOp::kXor:
      r = x != y;
      break;
    default:
      r = x == y;
      break;
    }
    out[i] = r;
  }
};

template <typename U> struct WhereFn {
  const uint8_t *cond;
  const U *x;
  const U *y;
  U *out;
  __device__ __forceinline__ void operator()(int64_t i, const int64_t *off) const {
    out[i] = cond[off[0]] ? x[off[1]] : y[off[2]];
  }
};

} // namespace

// ---- Launchers ----------------------------------------------------------------

cudaError_t Binary(BinaryOp op, ElemType t, const Broadcast &b, const void *a, const void *bv,
                   void *out, cudaStream_t stream) {
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T *pa = static_cast<const T *>(a);
    const T *pb = static_cast<const T *>(bv);
    T *po = static_cast<T *>(out);
    if (op == BinaryOp::kPow)
      return LaunchBroadcast<2>(b, PowFn<T, T>{pa, pb, po}, stream);
    return LaunchBroadcast<2>(b, ArithFn<T>{op, pa, pb, po}, stream);
  });
}

cudaError_t Compare(CompareOp op, ElemType t, const Broadcast &b, const void *a, const void *bv,
                    uint8_t *out, cudaStream_t stream) {
  if (t == ElemType::kBool) {
    if (op != CompareOp::kEqual)
      return cudaErrorInvalidValue;
    return Logic(LogicOp::kEqual, b, static_cast<const uint8_t *>(a),
                 static_cast<const uint8_t *>(bv), out, stream);
  }
  return DispatchNumeric(t, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return LaunchBroadcast<2>(
        b, CompareFn<T>{op, static_cast<const T *>(a), static_cast<const T *>(bv), out}, stream);
  });
}

cudaError_t Logic(LogicOp op, const Broadcast &b, const uint8_t *a, const uint8_t *bv, uint8_t *out,
                  cudaStream_t stream) {
  return LaunchBroadcast<2>(b, LogicFn{op, a, bv, out}, stream);
}

cudaError_t Where(size_t elem_size, const Broadcast &b, const uint8_t *cond, const void *x,
                  const void *y, void *out, cudaStream_t stream) {
  auto run = [&](auto tag) {
    using U = typename decltype(tag)::type;
    return LaunchBroadcast<3>(b,
                              WhereFn<U>{cond, static_cast<const U *>(x), static_cast<const U *>(y),
                                         static_cast<U *>(out)},
                              stream);
  };
  switch (elem_size) {
  case 1:
    return run(TypeTag<uint8_t>{});
  case 2:
    return run(TypeTag<uint16_t>{});
  case 4:
    return run(TypeTag<uint32_t>{});
  case 8:
    return run(TypeTag<uint64_t>{});
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace kiln::kernels::cuda
