// Executor profiling (Executor::SetProfiling, KILN_PROFILE): Run() with each
// op timed (device marks between ops where the backend has them, else a
// wait after every op and the host clock), its time and estimated cost
// (core/op_cost.h) charged to the op's type, and the table that shows it.
#include "core/executor_impl.h"
#include "core/op_cost.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string Dims(const Shape &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "x" : "") + std::to_string(s[i]);
  return out.empty() ? "scalar" : out;
}

// A product as rows x K x N (gated_mlp: rows x K x F), anything else by its
// first result's shape.
std::string ShapeKey(const ExecOp &op) {
  const bool gated = op.type == "gated_mlp" || op.type == "gated_mlp_q8";
  const bool product = op.type == "linear" || op.type == "linear_q8" || op.type == "matmul" ||
                       op.type == "gemm" || gated;
  if (product && op.in.size() >= 2 && op.in[0] && op.in[1] && !op.in[0]->shape.empty() &&
      !op.in[1]->shape.empty()) {
    const int64_t k = op.in[0]->shape.back();
    const int64_t rows = k > 0 ? op.in[0]->numel() / k : 0;
    int64_t n = op.in[1]->shape.back();
    if (gated)
      n /= 2;
    return std::to_string(rows) + "x" + std::to_string(k) + "x" + std::to_string(n);
  }
  if (!op.out.empty())
    return Dims(op.out[0].shape);
  return "";
}

// A peak rate from the environment (KILN_PEAK_GBPS, KILN_PEAK_TFLOPS), or 0.
double PeakFromEnv(const char *name) {
  const char *v = std::getenv(name);
  if (!v || !*v)
    return 0;
  char *end = nullptr;
  const double x = std::strtod(v, &end);
  return end && *end == '\0' && x > 0 ? x : 0;
}

} // namespace

void Executor::Impl::ChargeOp(const ExecOp &op, double seconds) {
  const std::string key = profile_shapes ? op.type + " " + ShapeKey(op) : op.type;
  OpTime &t = op_times[key];
  const OpCost cost = EstimateOpCost(op.type, op.in, op.out);
  t.type = key;
  t.calls += 1;
  t.seconds += seconds;
  t.flops += cost.flops;
  t.bytes += cost.bytes;
}

StatusOr<bool> Executor::Impl::BeginProfiledRun() {
  // Input staging, then a wait, so what follows starts on an idle backend.
  const Clock::time_point stage0 = Clock::now();
  KILN_RETURN_IF_ERROR(StageInputs());
  KILN_RETURN_IF_ERROR(backend->Synchronize());
  totals.stage_seconds += Since(stage0);
  Status mark = backend->Mark(0);
  if (!mark.ok() && mark.code() != StatusCode::kUnimplemented)
    return mark.WithContext("profiling");
  totals.device_timing = mark.ok();
  return mark.ok();
}

Status Executor::Impl::ProfiledRun() {
  const Clock::time_point run0 = Clock::now();
  // Device marks when the backend has them: op i runs between marks i and
  // i + 1, and nothing waits until the last op is enqueued.
  KILN_ASSIGN_OR_RETURN(const bool marks, BeginProfiledRun());
  ExecContext &ctx = backend->context();
  std::vector<const ExecOp *> timed;
  for (ExecOp &op : ops) {
    if (op.host)
      continue; // evaluated by Bind
    const Clock::time_point t0 = Clock::now();
    Status st = op.kernel->run(ctx, op.attrs, op.in, op.out);
    if (st.ok())
      st = marks ? backend->Mark(static_cast<int>(timed.size()) + 1) : backend->Synchronize();
    if (!st.ok())
      return st.WithContext(op.label);
    if (!marks)
      ChargeOp(op, Since(t0));
    timed.push_back(&op);
  }
  if (marks) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> at,
                          backend->MarkSeconds(static_cast<int>(timed.size()) + 1));
    KILN_RETURN_IF_ERROR(backend->Synchronize()); // a failed kernel reports here
    for (size_t i = 0; i < timed.size(); ++i)
      ChargeOp(*timed[i], at[i + 1] - at[i]);
  }
  totals.runs += 1;
  totals.run_seconds += Since(run0);
  return Status::Ok();
}

Status Executor::Impl::ProfiledGraphRun() {
  const Clock::time_point run0 = Clock::now();
  const int replays = stats.graph_replays, captures = stats.graph_captures;
  KILN_ASSIGN_OR_RETURN(const bool marks, BeginProfiledRun());
  const Clock::time_point t0 = Clock::now();
  KILN_RETURN_IF_ERROR(GraphOps());
  double seconds = 0;
  if (marks) {
    KILN_RETURN_IF_ERROR(backend->Mark(1));
    KILN_ASSIGN_OR_RETURN(std::vector<double> at, backend->MarkSeconds(2));
    KILN_RETURN_IF_ERROR(backend->Synchronize());
    seconds = at[1] - at[0];
  } else {
    KILN_RETURN_IF_ERROR(backend->Synchronize());
    seconds = Since(t0);
  }
  const char *what = stats.graph_captures > captures ? "graph capture"
                     : stats.graph_replays > replays ? "graph replay"
                                                     : "graph eager run";
  OpTime &t = op_times[what];
  t.type = what;
  t.calls += 1;
  t.seconds += seconds;
  for (const ExecOp &op : ops) {
    if (op.host)
      continue;
    const OpCost cost = EstimateOpCost(op.type, op.in, op.out);
    t.flops += cost.flops;
    t.bytes += cost.bytes;
  }
  totals.runs += 1;
  totals.run_seconds += Since(run0);
  return Status::Ok();
}

void Executor::SetProfiling(bool on, bool whole_graphs) {
  impl_->profiling = on;
  impl_->profile_graphs = whole_graphs;
}

Executor::Profile Executor::profile() const {
  Profile p = impl_->totals;
  p.ops.clear();
  for (const auto &[type, t] : impl_->op_times)
    p.ops.push_back(t);
  std::stable_sort(p.ops.begin(), p.ops.end(),
                   [](const OpTime &a, const OpTime &b) { return a.seconds > b.seconds; });
  return p;
}

std::string Executor::ProfileTable() const {
  const Profile p = profile();
  const double runs = static_cast<double>(std::max<int64_t>(p.runs, 1));
  const double peak_gbps = PeakFromEnv("KILN_PEAK_GBPS");
  const double peak_tflops = PeakFromEnv("KILN_PEAK_TFLOPS");
  double op_seconds = 0;
  size_t width = 24;
  for (const OpTime &t : p.ops) {
    op_seconds += t.seconds;
    width = std::max(width, t.type.size() + 1);
  }
  std::string out;
  char line[320];
  std::snprintf(
      line, sizeof line,
      "kiln profile (%s, %s): %lld runs, %lld binds; per run: %.3f ms in Run "
      "(%.3f ms staging inputs), %.3f ms in Bind\n",
      impl_->backend->name(), p.device_timing ? "ops timed on the device" : "a wait after each op",
      static_cast<long long>(p.runs), static_cast<long long>(p.binds), 1e3 * p.run_seconds / runs,
      1e3 * p.stage_seconds / runs, 1e3 * p.bind_seconds / std::max<int64_t>(p.binds, 1));
  out += line;
  if (impl_->stats.packed_weights > 0) {
    // The table's GB/s counts the plan's bytes of each weight; a narrowed
    // one streams half of them.
    std::snprintf(line, sizeof line,
                  "weights packed for the products: %d (%.1f MB held), %d of them f32 held "
                  "exactly in bf16 or f16\n",
                  impl_->stats.packed_weights, impl_->stats.packed_bytes / 1e6,
                  impl_->stats.narrowed_weights);
    out += line;
  }
  const int w = static_cast<int>(width);
  std::snprintf(line, sizeof line, "%-*s %10s %10s %7s %9s %6s %9s %6s\n", w, "op", "calls/run",
                "ms/run", "share", "GB/s", "%bw", "TFLOP/s", "%peak");
  out += line;
  for (const OpTime &t : p.ops) {
    const double gbps = t.seconds > 0 ? t.bytes / t.seconds / 1e9 : 0;
    const double tflops = t.seconds > 0 ? t.flops / t.seconds / 1e12 : 0;
    char bw[16] = "-", fl[16] = "-", bwp[16] = "-", flp[16] = "-";
    if (t.bytes > 0)
      std::snprintf(bw, sizeof bw, "%.1f", gbps);
    if (t.flops > 0)
      std::snprintf(fl, sizeof fl, "%.2f", tflops);
    if (t.bytes > 0 && peak_gbps > 0)
      std::snprintf(bwp, sizeof bwp, "%.0f%%", 100 * gbps / peak_gbps);
    if (t.flops > 0 && peak_tflops > 0)
      std::snprintf(flp, sizeof flp, "%.0f%%", 100 * tflops / peak_tflops);
    std::snprintf(line, sizeof line, "%-*s %10.1f %10.3f %6.1f%% %9s %6s %9s %6s\n", w,
                  t.type.c_str(), static_cast<double>(t.calls) / runs, 1e3 * t.seconds / runs,
                  op_seconds > 0 ? 100.0 * t.seconds / op_seconds : 0.0, bw, bwp, fl, flp);
    out += line;
  }
  return out;
}

} // namespace kiln
