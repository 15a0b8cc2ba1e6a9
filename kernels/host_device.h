// KILN_HD marks the scalar rules that both kernel trees share (wrap_arith.h,
// unary_math.h): host-device and inlined under nvcc, plain inline functions
// in a host compiler. Host tests check them without a GPU.
#pragma once

#ifdef __CUDACC__
#define KILN_HD __host__ __device__ __forceinline__
#else
#define KILN_HD inline
#endif
