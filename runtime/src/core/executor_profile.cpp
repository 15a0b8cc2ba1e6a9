// Executor profiling (Executor::SetProfiling, KILN_PROFILE): Run() with a
// wait after every op, its time charged to the op's type, and the table
// that shows it.
#include "core/executor_impl.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace kiln {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

} // namespace

Status Executor::Impl::ProfiledRun() {
  const Clock::time_point run0 = Clock::now();
  // Input staging, then a wait, so the ops below start on an idle backend.
  const Clock::time_point stage0 = Clock::now();
  KILN_RETURN_IF_ERROR(StageInputs());
  KILN_RETURN_IF_ERROR(backend->Synchronize());
  totals.stage_seconds += Since(stage0);
  ExecContext &ctx = backend->context();
  for (ExecOp &op : ops) {
    if (op.host)
      continue; // evaluated by Bind
    const Clock::time_point t0 = Clock::now();
    Status st = op.kernel->run(ctx, op.attrs, op.in, op.out);
    if (st.ok())
      st = backend->Synchronize();
    if (!st.ok())
      return st.WithContext(op.label);
    OpTime &t = op_times[op.type];
    t.type = op.type;
    t.calls += 1;
    t.seconds += Since(t0);
  }
  totals.runs += 1;
  totals.run_seconds += Since(run0);
  return Status::Ok();
}

void Executor::SetProfiling(bool on) { impl_->profiling = on; }

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
  double op_seconds = 0;
  for (const OpTime &t : p.ops)
    op_seconds += t.seconds;
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line,
                "kiln profile (%s): %lld runs, %lld binds; per run: %.3f ms in Run "
                "(%.3f ms staging inputs), %.3f ms in Bind\n",
                impl_->backend->name(), static_cast<long long>(p.runs),
                static_cast<long long>(p.binds), 1e3 * p.run_seconds / runs,
                1e3 * p.stage_seconds / runs,
                1e3 * p.bind_seconds / std::max<int64_t>(p.binds, 1));
  out += line;
  std::snprintf(line, sizeof line, "%-24s %10s %10s %7s\n", "op type", "calls/run", "ms/run",
                "share");
  out += line;
  for (const OpTime &t : p.ops) {
    std::snprintf(line, sizeof line, "%-24s %10.1f %10.3f %6.1f%%\n", t.type.c_str(),
                  static_cast<double>(t.calls) / runs, 1e3 * t.seconds / runs,
                  op_seconds > 0 ? 100.0 * t.seconds / op_seconds : 0.0);
    out += line;
  }
  return out;
}

} // namespace kiln
