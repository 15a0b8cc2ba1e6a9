// The op oracle's driver: runs one op case on a backend, through the seam
// every backend implements (core/backend.h, core/kernel.h, core/shape_table.h),
// and compares the results with the reference backend's, or, on the
// reference backend itself, with the plain references (references.h).
#pragma once

#include "core/backend.h"
#include "op_case.h"
#include "references.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::oracle {

// The backend every other one is compared with; it is compared with the
// plain references.
inline constexpr const char *kReferenceBackend = "cpu";

// The case's operands for `seed` (the same on every backend).
std::vector<HostTensor> MakeInputs(const OpCase &c, uint32_t seed);

// The results' dtypes and shapes from the backend-neutral shape table.
StatusOr<std::vector<TensorView>> InferResults(const OpCase &c,
                                               const std::vector<HostTensor> &inputs);

// Runs c's kernel from `kernels` (normally backend.kernels()) with the
// backend's context, every operand and result in the backend's memory
// (c.host_inputs stay on the host). Results are poisoned (all bytes 0xFF: NaN
// for floats) before the run so unwritten elements show. Returns the results,
// then the in-place operands, copied back to the host.
StatusOr<std::vector<HostTensor>> RunOnBackend(Backend &backend, const KernelTable &kernels,
                                               const OpCase &c,
                                               const std::vector<HostTensor> &inputs);

// The plain reference's results and in-place operands, rounded to the
// dtypes the run produced (`like`).
StatusOr<std::vector<HostTensor>> RunReference(const OpCase &c,
                                               const std::vector<HostTensor> &inputs,
                                               const std::vector<HostTensor> &like);

// Empty when `got` is within `tol` of `want` (raised to the half floors for
// f16/bf16 results); else what differs: shape, or the error measures and the
// worst element with its index.
std::string Compare(const HostTensor &got, const HostTensor &want, Tolerance tol);

// Runs case `c` with `seed` on `backend` (kernels from `kernels`) and checks
// it: against the plain references when `reference` is null, else against
// the same case run on `reference`. Empty when it passes; else a report that
// names the op, the case, the backend, the seed, the operands and the worst
// element.
std::string CheckCase(Backend &backend, const KernelTable &kernels, const OpCase &c, uint32_t seed,
                      Backend *reference);

// One backend instance per name for the whole test program (creating a
// device backend is slow); nullptr with `error` set when it cannot be made.
Backend *SharedBackend(const std::string &name, std::string *error);

} // namespace kiln::oracle
