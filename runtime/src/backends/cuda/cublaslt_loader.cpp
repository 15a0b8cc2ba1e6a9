// cuBLASLt, opened on first use (core/lazy_library.h): the cuBLASLt functions the
// runtime calls, defined here as forwarders, so nothing links libcublasLt
// and a CUDA-enabled kiln starts (and runs on the CPU) without it.
// KILN_CUBLASLT_LIBRARY names another file to open.
#include "backends/cuda/cublaslt_loader.h"
#include "core/lazy_library.h"

#include <cublasLt.h>

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

#ifndef KILN_CUDA_LIBRARY_DIR
#define KILN_CUDA_LIBRARY_DIR ""
#endif

namespace {

using kiln::SymbolSlot;

// The real functions, resolved by Load(); a pointer of each one's own type.
struct Table {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetStatusName) status_name = nullptr;
  decltype(&cublasLtGetStatusString) status_string = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
};

// Both live for the whole process (never destroyed), so a handle destroyed
// during exit still finds them.
Table &T() {
  static Table *t = new Table;
  return *t;
}

kiln::LazyLibrary &Lib() {
  static auto *lib = new kiln::LazyLibrary(
      "cuBLASLt", "KILN_CUBLASLT_LIBRARY", "libcublasLt.so." KILN_STR(CUBLAS_VER_MAJOR),
      KILN_CUDA_LIBRARY_DIR,
      {SymbolSlot("cublasLtCreate", T().create), SymbolSlot("cublasLtDestroy", T().destroy),
       SymbolSlot("cublasLtGetStatusName", T().status_name),
       SymbolSlot("cublasLtGetStatusString", T().status_string),
       SymbolSlot("cublasLtMatmul", T().matmul),
       SymbolSlot("cublasLtMatmulAlgoGetHeuristic", T().heuristic),
       SymbolSlot("cublasLtMatmulDescCreate", T().desc_create),
       SymbolSlot("cublasLtMatmulDescDestroy", T().desc_destroy),
       SymbolSlot("cublasLtMatmulDescSetAttribute", T().desc_set),
       SymbolSlot("cublasLtMatmulPreferenceCreate", T().pref_create),
       SymbolSlot("cublasLtMatmulPreferenceDestroy", T().pref_destroy),
       SymbolSlot("cublasLtMatmulPreferenceSetAttribute", T().pref_set),
       SymbolSlot("cublasLtMatrixLayoutCreate", T().layout_create),
       SymbolSlot("cublasLtMatrixLayoutDestroy", T().layout_destroy),
       SymbolSlot("cublasLtMatrixLayoutSetAttribute", T().layout_set)});
  return *lib;
}

constexpr cublasStatus_t kNotLoaded = CUBLAS_STATUS_NOT_INITIALIZED;

} // namespace

namespace kiln::cuda {
const Status &LoadCublasLt() { return Lib().Load(); }
} // namespace kiln::cuda

// The forwarders: cublasLt.h's declarations (extern "C"), defined here.
cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  return Lib().Loaded() ? T().create(handle) : kNotLoaded;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  return Lib().Loaded() ? T().destroy(handle) : kNotLoaded;
}

const char *cublasLtGetStatusName(cublasStatus_t status) {
  return Lib().Loaded() ? T().status_name(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

const char *cublasLtGetStatusString(cublasStatus_t status) {
  return Lib().Loaded() ? T().status_string(status) : "libcublasLt could not be loaded";
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *a, cublasLtMatrixLayout_t a_desc, const void *b,
                              cublasLtMatrixLayout_t b_desc, const void *beta, const void *c,
                              cublasLtMatrixLayout_t c_desc, void *d, cublasLtMatrixLayout_t d_desc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  return Lib().Loaded() ? T().matmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d,
                                     d_desc, algo, workspace, workspace_bytes, stream)
                        : kNotLoaded;
}

cublasStatus_t
cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                               cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                               cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                               cublasLtMatmulPreference_t pref, int requested,
                               cublasLtMatmulHeuristicResult_t results[], int *returned) {
  return Lib().Loaded() ? T().heuristic(handle, desc, a_desc, b_desc, c_desc, d_desc, pref,
                                        requested, results, returned)
                        : kNotLoaded;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  return Lib().Loaded() ? T().desc_create(desc, compute, scale) : kNotLoaded;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  return Lib().Loaded() ? T().desc_destroy(desc) : kNotLoaded;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t bytes) {
  return Lib().Loaded() ? T().desc_set(desc, attr, buf, bytes) : kNotLoaded;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  return Lib().Loaded() ? T().pref_create(pref) : kNotLoaded;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return Lib().Loaded() ? T().pref_destroy(pref) : kNotLoaded;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t bytes) {
  return Lib().Loaded() ? T().pref_set(pref, attr, buf, bytes) : kNotLoaded;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  return Lib().Loaded() ? T().layout_create(layout, type, rows, cols, ld) : kNotLoaded;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  return Lib().Loaded() ? T().layout_destroy(layout) : kNotLoaded;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t bytes) {
  return Lib().Loaded() ? T().layout_set(layout, attr, buf, bytes) : kNotLoaded;
}
