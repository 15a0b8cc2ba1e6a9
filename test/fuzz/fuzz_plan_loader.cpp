// libFuzzer target: the plan loader, then what `kiln inspect` (its report,
// kiln/plan_report.h) and the executor do with a plan that loads. Mutations
// are resealed (plan_mutator.h) so they reach the FlatBuffers verifier and
// the checks behind it.
//
// A finding is a crash (an exception the report throws included), a
// sanitizer report, or a broken promise: a refusal without a message.
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "kiln/plan_report.h"
#include "plan_mutator.h"

#include <nlohmann/json.hpp>

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
                                          unsigned int seed) {
  return kiln::fuzz::MutatePlan(data, size, max_size, seed);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  auto plan = kiln::LoadPlanFromBytes(data, size, "fuzz.plan");
  if (!plan.ok()) {
    if (plan.status().message().empty())
      __builtin_trap(); // every refusal must say what is wrong
    return 0;
  }
  // The loader promises the executor a plan it can build without further
  // structural checks; Create resolves kernels and decodes attributes.
  (void)kiln::Executor::Create(**plan);
  // Inspect's report, printed as `kiln inspect --json --ops` prints it.
  const nlohmann::ordered_json report = kiln::PlanReport(**plan, /*with_ops=*/true);
  const std::string text =
      report.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  if (text.empty())
    __builtin_trap();
  return 0;
}
