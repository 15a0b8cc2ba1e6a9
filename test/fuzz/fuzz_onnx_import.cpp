// libFuzzer target: `kiln build`'s import and cleanup phases, in process, on
// ONNX ModelProto bytes. The bytes go to a file because the importer resolves
// external data relative to the model's folder (a fuzzed model may name a
// file there; the importer refuses paths that leave it).
//
// A finding is a crash, a sanitizer report, an LLVM fatal error (out of
// memory included), or a failure that kiln calls its own (an InternalError:
// a phase failed without saying why).
#include "compiler/driver/BuildDriver.h"
#include "compiler/support/BuildError.h"
#include "passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace {

std::string g_dir;
kiln::compiler::Phase g_phase = kiln::compiler::Phase::Cleanup;

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  kiln::registerKilnPasses(); // the driver finds them by name
  kiln::registerKilnPipelines();
  const char *tmp = std::getenv("TMPDIR");
  g_dir = std::string(tmp ? tmp : "/tmp") + "/kiln-fuzz-onnx-" + std::to_string(getpid());
  std::remove((g_dir + "/model.onnx").c_str());
  ::rmdir(g_dir.c_str());
  if (::mkdir(g_dir.c_str(), 0700) != 0)
    std::abort();
  // Long runs may go further down the pipeline (docs/testing.md).
  if (const char *phase = std::getenv("KILN_FUZZ_PHASE")) {
    auto parsed = kiln::compiler::parsePhase(phase);
    if (!parsed) {
      std::fprintf(stderr, "KILN_FUZZ_PHASE: unknown phase '%s' (phases: %s)\n", phase,
                   kiln::compiler::phaseNames().c_str());
      std::exit(2);
    }
    g_phase = *parsed;
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = g_dir + "/model.onnx";
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || (size && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0)
    std::abort();
  kiln::compiler::BuildRequest request;
  request.modelPath = path;
  request.compileTo = g_phase;
  request.quiet = true;
  llvm::Error err = kiln::compiler::runBuild(request, llvm::nulls(), llvm::nulls());
  bool internal = err.isA<kiln::compiler::InternalError>();
  if (internal)
    llvm::errs() << "internal error: " << llvm::toString(std::move(err)) << "\n";
  else
    llvm::consumeError(std::move(err));
  if (internal)
    __builtin_trap(); // kiln failed without blaming the input
  return 0;
}
