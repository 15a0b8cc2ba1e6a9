// Broadcasting binary arithmetic, Pow, comparisons, logic and Where
// (declared in pointwise.h). Each op is a functor run by the broadcast loop
// of broadcast.cuh; the op is a kernel argument, the same for every thread.
#include "kernels/cuda/pointwise_broadcast.cuh"

namespace kiln::kernels::cuda {

namespace {

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
