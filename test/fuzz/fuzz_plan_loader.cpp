// libFuzzer target: the plan loader, then what `kiln inspect` and the
// executor do with a plan that loads. Mutations are resealed (plan_mutator.h)
// so they reach the FlatBuffers verifier and the checks behind it.
//
// A finding is a crash, a sanitizer report, or a broken promise: a refusal
// without a message, or a plan that loads from memory but that `kiln inspect`
// fails on.
#include "cli.h"
#include "kiln/executor.h"
#include "kiln/plan.h"
#include "plan_mutator.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

std::string g_plan_path; // `kiln inspect` reads a file

bool WriteFile(const std::string &path, const uint8_t *data, size_t size) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  bool ok = size == 0 || std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *tmp = std::getenv("TMPDIR");
  g_plan_path = std::string(tmp ? tmp : "/tmp") + "/kiln-fuzz-plan-" + std::to_string(getpid());
  // Inspect's report goes to stdout; libFuzzer reports on stderr.
  if (!std::freopen("/dev/null", "w", stdout))
    std::abort();
  return 0;
}

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
  if (!WriteFile(g_plan_path, data, size))
    std::abort();
  int rc = kiln::cli::InspectMain({g_plan_path, "--json", "--ops"});
  std::remove(g_plan_path.c_str());
  if (rc != kiln::cli::kExitOk)
    __builtin_trap(); // it loaded from memory, so inspect must show it
  return 0;
}
