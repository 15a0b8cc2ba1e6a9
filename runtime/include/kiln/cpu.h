// Settings of the CPU backend that a host application may change.
#pragma once

namespace kiln {

// Caps the threads the CPU backend's matrix products use; 0 means every core.
// Small products always run on one thread (see kernels/cpu/products_gemm.h).
void SetCpuThreads(int threads);

// Whether executors created from now on repack the weights that matrix
// products read (on by default). Packing is a load-time choice of the
// runtime, not of the plan: it copies each such weight once into the layout
// the product kernels stream (kernels/cpu/products_packed_matrix.h) and hands the
// plan's mapped pages of it back to the kernel. Off, products read the plan's
// mapping in place. The environment variable KILN_CPU_PACK=0 makes off the
// default.
void SetCpuWeightPacking(bool enabled);
bool CpuWeightPacking();

// Whether packing stores an f32 product weight in bf16 or f16 when that
// type holds every one of its values exactly (on by default): a checkpoint
// trained in bf16 or f16 and exported to an f32 ONNX file has such weights,
// and its decode then streams half the bytes for exactly the same results
// (the products widen each value back to the same f32 and compute in f32).
// A weight with any other value is packed in f32. The environment variable
// KILN_CPU_NARROW=0 makes off the default.
void SetCpuExactNarrowing(bool enabled);
bool CpuExactNarrowing();

} // namespace kiln
