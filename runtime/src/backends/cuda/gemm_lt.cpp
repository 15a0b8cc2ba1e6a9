// LtGemm (gemm_lt.h): the row-major product as its column-major transpose,
// and the process-wide cache of cuBLASLt plans.
#include "gemm_lt.h"

#include "cuda_util.h"

#include <cublasLt.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace kiln::cuda {
namespace {

// Distinct problems a long-lived backend sees: a few weight shapes times the
// token counts of its steps. Past this many the cache starts over rather
// than grow without bound.
constexpr size_t kMaxCachedPlans = 4096;
// cuBLASLt's largest alignment requirement; pointers at least this aligned
// admit every algorithm.
constexpr uint64_t kMaxAlignment = 256;
// How many of the heuristic's algorithms a plan keeps, and the most rows of
// a product whose plan times them (decode steps of up to 16 sequences).
constexpr int kTuneCandidates = 8;
constexpr int64_t kTuneMaxRows = 16;

// Everything the descriptors, the layouts and the heuristic's choice depend
// on. The device and the handle keep backends on different GPUs apart.
struct PlanKey {
  int device = 0;
  uintptr_t handle = 0;
  uint64_t workspace = 0;
  DType ab = DType::kUndefined, d = DType::kUndefined;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_d = 0;
  LtEpilogue epilogue = LtEpilogue::kNone;
  uint32_t align_a = 0, align_b = 0, align_d = 0, align_bias = 0;

  auto Tie() const {
    return std::tie(device, handle, workspace, ab, d, m, n, k, trans_a, trans_b, lda, ldb, ldd,
                    batch, stride_a, stride_b, stride_d, epilogue, align_a, align_b, align_d,
                    align_bias);
  }
  bool operator<(const PlanKey &o) const { return Tie() < o.Tie(); }
};

// One cached problem. "lt_a" and "lt_b" are cuBLASLt's A and B, which are
// our B and A (the transposed problem); C and D share `lt_d`.
struct LtPlan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t lt_a = nullptr, lt_b = nullptr, lt_d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  // The heuristic's choices, best first; small products time them once.
  std::vector<cublasLtMatmulAlgo_t> candidates;

  LtPlan() = default;
  LtPlan(const LtPlan &) = delete;
  LtPlan &operator=(const LtPlan &) = delete;
  ~LtPlan() {
    // Destroy cannot fail on a descriptor Create returned.
    if (lt_d)
      cublasLtMatrixLayoutDestroy(lt_d);
    if (lt_b)
      cublasLtMatrixLayoutDestroy(lt_b);
    if (lt_a)
      cublasLtMatrixLayoutDestroy(lt_a);
    if (op)
      cublasLtMatmulDescDestroy(op);
  }
};

struct PreferenceGuard {
  cublasLtMatmulPreference_t pref = nullptr;
  ~PreferenceGuard() {
    if (pref)
      cublasLtMatmulPreferenceDestroy(pref);
  }
};

// Leaked on purpose: cached descriptors must not be destroyed at exit, after
// cuBLASLt may already be unloaded.
std::mutex &CacheMutex() {
  static auto *mu = new std::mutex;
  return *mu;
}
std::map<PlanKey, std::unique_ptr<LtPlan>> &Cache() {
  static auto *cache = new std::map<PlanKey, std::unique_ptr<LtPlan>>;
  return *cache;
}

bool IsHalf(DType t) { return t == DType::kF16 || t == DType::kBF16; }

cudaDataType_t CudaType(DType t) {
  switch (t) {
  case DType::kF16:
    return CUDA_R_16F;
  case DType::kBF16:
    return CUDA_R_16BF;
  case DType::kF64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

cublasLtEpilogue_t LtEpilogueOf(LtEpilogue e) {
  switch (e) {
  case LtEpilogue::kBias:
    return CUBLASLT_EPILOGUE_BIAS;
  case LtEpilogue::kRelu:
    return CUBLASLT_EPILOGUE_RELU;
  case LtEpilogue::kReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case LtEpilogue::kGeluTanh:
    return CUBLASLT_EPILOGUE_GELU;
  case LtEpilogue::kGeluTanhBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case LtEpilogue::kNone:
    break;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool HasBias(LtEpilogue e) {
  return e == LtEpilogue::kBias || e == LtEpilogue::kReluBias || e == LtEpilogue::kGeluTanhBias;
}

// The largest power of two (at most 256) dividing the address of every
// matrix of the batch: the base pointer and, when batched, the stride.
uint32_t AlignmentOf(const void *p, int64_t stride, DType t, int64_t batch) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | kMaxAlignment;
  if (batch > 1)
    bits |= static_cast<uint64_t>(stride) * DTypeSize(t);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

std::string Describe(const LtGemmShape &s) {
  return std::string(DTypeName(s.ab)) + " -> " + DTypeName(s.d) + " M=" + std::to_string(s.m) +
         " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) +
         " transA=" + std::to_string(s.trans_a) + " transB=" + std::to_string(s.trans_b) +
         " lda=" + std::to_string(s.lda) + " ldb=" + std::to_string(s.ldb) +
         " ldd=" + std::to_string(s.ldd) + " batch=" + std::to_string(s.batch) +
         " epilogue=" + std::to_string(static_cast<int>(s.epilogue));
}

Status CheckShape(const LtGemmShape &s, const LtGemmArgs &args) {
  const auto bad = [&](const std::string &why) {
    return InvalidArgument("cuBLASLt GEMM (" + Describe(s) + "): " + why);
  };
  if (s.ab != DType::kF32 && s.ab != DType::kF64 && !IsHalf(s.ab))
    return bad("operands must be f32, f64, f16 or bf16");
  if (s.d != s.ab && !(IsHalf(s.ab) && s.d == DType::kF32))
    return bad("the result must have the operands' type, or f32 for half operands");
  if (s.m <= 0 || s.n <= 0 || s.k <= 0 || s.batch <= 0)
    return bad("M, N, K and the batch must be positive");
  if (s.batch > std::numeric_limits<int32_t>::max())
    return bad("the batch exceeds cuBLASLt's 32-bit batch count");
  if (s.lda < (s.trans_a ? s.m : s.k) || s.ldb < (s.trans_b ? s.k : s.n) || s.ldd < s.n)
    return bad("a leading dimension is shorter than its row");
  if (s.stride_a < 0 || s.stride_b < 0 || s.stride_d < 0)
    return bad("batch strides must not be negative");
  if (!args.a || !args.b || !args.d)
    return bad("a matrix pointer is null");
  if (HasBias(s.epilogue) && !LtBiasAligned(args.bias))
    return bad("the epilogue's bias is null or not 16-byte aligned");
  return Status::Ok();
}

Status SetLayoutBatch(cublasLtMatrixLayout_t layout, int64_t batch, int64_t stride) {
  if (batch <= 1)
    return Status::Ok();
  const int32_t count = static_cast<int32_t>(batch);
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutSetAttribute(
      layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  return Status::Ok();
}

// Descriptors and layouts of the transposed problem: cuBLASLt computes
// D^T [N, M] = op(B)^T [N, K] x op(A)^T [K, M], each matrix described as
// stored (a row-major [r, c] with leading dim ld is a column-major [c, r]).
Status BuildDescriptors(const LtGemmShape &s, const void *bias, LtPlan &plan) {
  const bool f64 = s.ab == DType::kF64;
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescCreate(
      &plan.op, f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, f64 ? CUDA_R_64F : CUDA_R_32F));
  const int32_t op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  KILN_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
  KILN_CUBLAS_RETURN_IF_ERROR(
      cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
  const uint32_t epilogue = LtEpilogueOf(s.epilogue);
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                             &epilogue, sizeof(epilogue)));
  if (HasBias(s.epilogue))
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));

  const cudaDataType_t ab = CudaType(s.ab), d = CudaType(s.d);
  // Our B, stored [K, N] (or [N, K] transposed), is cuBLASLt's A.
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan.lt_a, ab, s.trans_b ? s.k : s.n,
                                                         s.trans_b ? s.n : s.k, s.ldb));
  // Our A, stored [M, K] (or [K, M] transposed), is cuBLASLt's B.
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan.lt_b, ab, s.trans_a ? s.m : s.k,
                                                         s.trans_a ? s.k : s.m, s.lda));
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatrixLayoutCreate(&plan.lt_d, d, s.n, s.m, s.ldd));
  KILN_RETURN_IF_ERROR(SetLayoutBatch(plan.lt_a, s.batch, s.stride_b));
  KILN_RETURN_IF_ERROR(SetLayoutBatch(plan.lt_b, s.batch, s.stride_a));
  KILN_RETURN_IF_ERROR(SetLayoutBatch(plan.lt_d, s.batch, s.stride_d));
  return Status::Ok();
}

// The heuristic's choices within the workspace and the operands' actual
// alignments (its first in plan.algo), accumulating in f32 throughout for
// half results.
Status ChooseAlgorithm(cublasLtHandle_t handle, const PlanKey &key, const LtGemmShape &s,
                       LtPlan &plan) {
  PreferenceGuard pref;
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceCreate(&pref.pref));
  const uint64_t workspace = key.workspace;
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
      pref.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  const struct {
    cublasLtMatmulPreferenceAttributes_t attr;
    uint32_t bytes;
  } aligns[] = {{CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key.align_b},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key.align_a},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key.align_d},
                {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key.align_d}};
  for (const auto &a : aligns)
    KILN_CUBLAS_RETURN_IF_ERROR(
        cublasLtMatmulPreferenceSetAttribute(pref.pref, a.attr, &a.bytes, sizeof(a.bytes)));
  if (IsHalf(s.d)) {
    // Split-K partial sums must add up in f32: the in-place and output-type
    // schemes would round them to the half output on every step.
    const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulPreferenceSetAttribute(
        pref.pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes, sizeof(schemes)));
  }
  cublasLtMatmulHeuristicResult_t results[kTuneCandidates] = {};
  int count = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(handle, plan.op, plan.lt_a, plan.lt_b, plan.lt_d, plan.lt_d,
                                     pref.pref, kTuneCandidates, results, &count);
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || (st == CUBLAS_STATUS_SUCCESS && count == 0))
    return Unimplemented("cuBLASLt has no algorithm for the GEMM " + Describe(s));
  KILN_CUBLAS_RETURN_IF_ERROR(st);
  plan.candidates.clear();
  for (int i = 0; i < count; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      plan.candidates.push_back(results[i].algo);
  if (plan.candidates.empty())
    return Unimplemented("cuBLASLt has no algorithm for the GEMM " + Describe(s));
  plan.algo = plan.candidates.front();
  return Status::Ok();
}

// Read once per process: KILN_LT_TUNE=1 times small products' candidates.
// Off by default until it has run on the device (docs/gpu.md, "Pending
// kernels").
bool TuneOn() {
  static const bool on = EnvSwitch("KILN_LT_TUNE", false);
  return on;
}

// Whether this call may time the plan's candidates: a product of few rows
// (a decode step's, where the heuristic's choice streams the weights at
// 50-70% of the bandwidth and a split-K candidate does better), more than
// one candidate, D not read (beta 0: the runs overwrite it), and the stream
// not being captured (a capture cannot wait for events).
bool ShouldTune(const LtGemmShape &s, const LtGemmArgs &args, const LtPlan &plan,
                cudaStream_t stream) {
  if (!TuneOn() || s.m > kTuneMaxRows || args.beta != 0 || plan.candidates.size() < 2)
    return false;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess)
    return false;
  return capture == cudaStreamCaptureStatusNone;
}

struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  ~EventPair() {
    if (start)
      cudaEventDestroy(start);
    if (stop)
      cudaEventDestroy(stop);
  }
};

// Times each candidate on the call's own operands (the fastest of a few
// runs, each after a pass over a buffer larger than L2, so the weights come
// from HBM as in a decode step) and keeps the fastest. A candidate that
// fails to run is skipped. The real call follows and rewrites D.
Status TuneAlgorithm(cublasLtHandle_t handle, LtPlan &plan, const void *alpha, const void *beta,
                     const LtGemmArgs &args, void *workspace, uint64_t workspace_bytes,
                     cudaStream_t stream) {
  constexpr size_t kFlushBytes = 128ull << 20; // over the H200's 50 MB of L2, with room
  constexpr int kRuns = 5;
  void *flush = nullptr;
  if (cudaMalloc(&flush, kFlushBytes) != cudaSuccess) {
    cudaGetLastError();
    return Status::Ok(); // no room to flush L2: keep the heuristic's choice
  }
  EventPair ev;
  KILN_CUDA_RETURN_IF_ERROR(cudaEventCreate(&ev.start));
  KILN_CUDA_RETURN_IF_ERROR(cudaEventCreate(&ev.stop));
  float best = std::numeric_limits<float>::infinity();
  cublasLtMatmulAlgo_t chosen = plan.algo;
  Status status = Status::Ok();
  for (const cublasLtMatmulAlgo_t &algo : plan.candidates) {
    float fastest = std::numeric_limits<float>::infinity();
    for (int r = 0; r <= kRuns && status.ok(); ++r) {
      if (cudaMemsetAsync(flush, r, kFlushBytes, stream) != cudaSuccess ||
          cudaEventRecord(ev.start, stream) != cudaSuccess) {
        status = Internal("cuBLASLt tuning: could not enqueue the timing");
        break;
      }
      const cublasStatus_t st =
          cublasLtMatmul(handle, plan.op, alpha, args.b, plan.lt_a, args.a, plan.lt_b, beta, args.d,
                         plan.lt_d, args.d, plan.lt_d, &algo, workspace, workspace_bytes, stream);
      if (cudaEventRecord(ev.stop, stream) != cudaSuccess ||
          cudaEventSynchronize(ev.stop) != cudaSuccess) {
        status = Internal("cuBLASLt tuning: a timed run failed on the device");
        break;
      }
      if (st != CUBLAS_STATUS_SUCCESS)
        break; // this candidate does not run here
      float ms = 0;
      if (r > 0 && cudaEventElapsedTime(&ms, ev.start, ev.stop) == cudaSuccess)
        fastest = std::min(fastest, ms);
    }
    if (!status.ok())
      break;
    if (fastest < best) {
      best = fastest;
      chosen = algo;
    }
  }
  cudaFree(flush);
  if (!status.ok()) {
    cudaGetLastError();
    return status;
  }
  plan.algo = chosen;
  return Status::Ok();
}

} // namespace

bool LtBiasAligned(const void *bias) {
  return bias != nullptr && reinterpret_cast<uintptr_t>(bias) % 16 == 0;
}

Status LtGemm(ExecContext &ctx, const LtGemmShape &s, const LtGemmArgs &args) {
  KILN_RETURN_IF_ERROR(CheckShape(s, args));
  cublasLtHandle_t handle = Blas(ctx);
  if (!handle)
    return Internal("cuBLASLt GEMM: the execution context has no handle");
  PlanKey key;
  KILN_CUDA_RETURN_IF_ERROR(cudaGetDevice(&key.device));
  key.handle = reinterpret_cast<uintptr_t>(handle);
  key.workspace = ctx.workspace.data ? ctx.workspace.bytes : 0;
  key.ab = s.ab;
  key.d = s.d;
  key.m = s.m;
  key.n = s.n;
  key.k = s.k;
  key.trans_a = s.trans_a;
  key.trans_b = s.trans_b;
  key.lda = s.lda;
  key.ldb = s.ldb;
  key.ldd = s.ldd;
  key.batch = s.batch;
  // Strides of a single product never reach cuBLASLt; zero keeps one plan.
  key.stride_a = s.batch > 1 ? s.stride_a : 0;
  key.stride_b = s.batch > 1 ? s.stride_b : 0;
  key.stride_d = s.batch > 1 ? s.stride_d : 0;
  key.epilogue = s.epilogue;
  key.align_a = AlignmentOf(args.a, key.stride_a, s.ab, s.batch);
  key.align_b = AlignmentOf(args.b, key.stride_b, s.ab, s.batch);
  key.align_d = AlignmentOf(args.d, key.stride_d, s.d, s.batch);
  key.align_bias = HasBias(s.epilogue) ? AlignmentOf(args.bias, 0, s.d, 1) : 0;

  // Scales in the descriptor's scale type, read from the host at enqueue.
  const float alpha32 = static_cast<float>(args.alpha), beta32 = static_cast<float>(args.beta);
  const bool f64 = s.ab == DType::kF64;
  const void *alpha = f64 ? static_cast<const void *>(&args.alpha) : &alpha32;
  const void *beta = f64 ? static_cast<const void *>(&args.beta) : &beta32;

  // One lock over lookup and launch (a plan's bias pointer is set per
  // call), but not over making a plan: its tuning waits for the stream,
  // which may wait on a collective that another rank's thread reaches only
  // after its own product.
  std::unique_lock<std::mutex> lock(CacheMutex());
  auto &cache = Cache();
  auto it = cache.find(key);
  if (it == cache.end()) {
    lock.unlock();
    auto plan = std::make_unique<LtPlan>();
    KILN_RETURN_IF_ERROR(BuildDescriptors(s, args.bias, *plan));
    KILN_RETURN_IF_ERROR(ChooseAlgorithm(handle, key, s, *plan));
    if (ShouldTune(s, args, *plan, Stream(ctx)))
      KILN_RETURN_IF_ERROR(TuneAlgorithm(handle, *plan, alpha, beta, args, ctx.workspace.data,
                                         key.workspace, Stream(ctx)));
    lock.lock();
    it = cache.find(key); // another thread may have made one meanwhile
    if (it == cache.end()) {
      if (cache.size() >= kMaxCachedPlans)
        cache.clear();
      it = cache.emplace(key, std::move(plan)).first;
    }
  }
  LtPlan &plan = *it->second;
  if (HasBias(s.epilogue))
    KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmulDescSetAttribute(
        plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &args.bias, sizeof(args.bias)));
  KILN_CUBLAS_RETURN_IF_ERROR(cublasLtMatmul(
      handle, plan.op, alpha, args.b, plan.lt_a, args.a, plan.lt_b, beta, args.d, plan.lt_d, args.d,
      plan.lt_d, &plan.algo, ctx.workspace.data, key.workspace, Stream(ctx)));
  return Status::Ok();
}

} // namespace kiln::cuda
