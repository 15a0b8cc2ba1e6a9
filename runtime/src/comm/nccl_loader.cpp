// NCCL, opened on first use (core/lazy_library.h): the NCCL
// functions the communicator calls, defined here as forwarders, so nothing
// links libnccl and a CUDA-enabled kiln starts without it; only --comm nccl
// needs it. KILN_NCCL_LIBRARY names another file to open (pip's
// nvidia-nccl-cu13 puts one under site-packages/nvidia/nccl/lib).
#include "comm/nccl_loader.h"
#include "core/lazy_library.h"

#include <nccl.h>

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

#ifndef KILN_NCCL_LIBRARY_DIR
#define KILN_NCCL_LIBRARY_DIR ""
#endif

namespace {

using kiln::SymbolSlot;

struct Table {
  decltype(&ncclAllReduce) all_reduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclCommAbort) abort = nullptr;
  decltype(&ncclCommDestroy) destroy = nullptr;
  decltype(&ncclCommFinalize) finalize = nullptr;
  decltype(&ncclCommGetAsyncError) async_error = nullptr;
  decltype(&ncclCommInitRankConfig) init = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  decltype(&ncclGetLastError) last_error = nullptr;
  decltype(&ncclGetUniqueId) unique_id = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
};

// Both live for the whole process (never destroyed).
Table &T() {
  static Table *t = new Table;
  return *t;
}

kiln::LazyLibrary &Lib() {
  static auto *lib = new kiln::LazyLibrary(
      "NCCL", "KILN_NCCL_LIBRARY", "libnccl.so." KILN_STR(NCCL_MAJOR), KILN_NCCL_LIBRARY_DIR,
      {SymbolSlot("ncclAllReduce", T().all_reduce), SymbolSlot("ncclBroadcast", T().broadcast),
       SymbolSlot("ncclCommAbort", T().abort), SymbolSlot("ncclCommDestroy", T().destroy),
       SymbolSlot("ncclCommFinalize", T().finalize),
       SymbolSlot("ncclCommGetAsyncError", T().async_error),
       SymbolSlot("ncclCommInitRankConfig", T().init),
       SymbolSlot("ncclGetErrorString", T().error_string),
       SymbolSlot("ncclGetLastError", T().last_error), SymbolSlot("ncclGetUniqueId", T().unique_id),
       SymbolSlot("ncclGroupEnd", T().group_end), SymbolSlot("ncclGroupStart", T().group_start)});
  return *lib;
}

constexpr ncclResult_t kNotLoaded = ncclSystemError;

} // namespace

namespace kiln::cuda {
const Status &LoadNccl() { return Lib().Load(); }
} // namespace kiln::cuda

// The forwarders: nccl.h's declarations (extern "C"), defined here.
ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return Lib().Loaded() ? T().all_reduce(send, recv, count, type, op, comm, stream) : kNotLoaded;
}

ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
  return Lib().Loaded() ? T().broadcast(send, recv, count, type, root, comm, stream) : kNotLoaded;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return Lib().Loaded() ? T().abort(comm) : kNotLoaded;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return Lib().Loaded() ? T().destroy(comm) : kNotLoaded;
}

ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return Lib().Loaded() ? T().finalize(comm) : kNotLoaded;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async_error) {
  return Lib().Loaded() ? T().async_error(comm, async_error) : kNotLoaded;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config) {
  return Lib().Loaded() ? T().init(comm, nranks, id, rank, config) : kNotLoaded;
}

const char *ncclGetErrorString(ncclResult_t result) {
  return Lib().Loaded() ? T().error_string(result) : "libnccl could not be loaded";
}

const char *ncclGetLastError(ncclComm_t comm) {
  return Lib().Loaded() ? T().last_error(comm) : "libnccl could not be loaded";
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  return Lib().Loaded() ? T().unique_id(id) : kNotLoaded;
}

ncclResult_t ncclGroupEnd() { return Lib().Loaded() ? T().group_end() : kNotLoaded; }

ncclResult_t ncclGroupStart() { return Lib().Loaded() ? T().group_start() : kNotLoaded; }
