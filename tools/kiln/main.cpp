// kiln: build engine plans from ONNX and run them.
#include "cli.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Command {
  const char *name;
  const char *summary;
  int (*main)(const std::vector<std::string> &);
};

const Command kCommands[] = {
#ifdef KILN_HAVE_COMPILER
    {"build", "compile an ONNX model into an engine plan", kiln::cli::BuildMain},
    {"reshard", "re-partition a plan for another tensor-parallel rank count", kiln::cli::ReshardMain},
#endif
    {"run", "generate text from a plan", kiln::cli::RunMain},
    {"exec", "run a plan's graph once on TensorProto inputs", kiln::cli::ExecMain},
    {"embed", "embed texts with an encoder plan (one pooled vector each)", kiln::cli::EmbedMain},
    {"eval", "`kiln eval ppl`: a plan's perplexity over a text, by sliding windows", kiln::cli::EvalMain},
    {"inspect", "print a plan's metadata, ops, shapes and memory", kiln::cli::InspectMain},
    {"tokenize", "encode text with a plan's tokenizer (or decode ids): what the model sees", kiln::cli::TokenizeMain},
    {"verify", "recheck a plan's checksums and, given the ONNX, its source", kiln::cli::VerifyMain},
    {"serve", "serve a plan over HTTP with the OpenAI API (docs/serve.md)", kiln::cli::ServeMain},
    {"keys", "`kiln keys new NAME`: a fresh API key for kiln serve", kiln::cli::KeysMain},
    {"bench", "benchmark the engine: `kiln bench offline` (throughput), `kiln bench latency` (batch 1), `kiln bench serve` (a server)", kiln::cli::BenchMain},
};

void PrintUsage(FILE *out) {
  std::fprintf(out, "usage: kiln <command> [options]\n\ncommands:\n");
  for (const Command &c : kCommands) std::fprintf(out, "  %-8s %s\n", c.name, c.summary);
#ifndef KILN_HAVE_COMPILER
  std::fprintf(out, "  (build and reshard are not available: this kiln was built with KILN_BUILD_COMPILER=OFF)\n");
#endif
  std::fprintf(out, "\nRun 'kiln <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    PrintUsage(stderr);
    return kiln::cli::kExitBadInput;
  }
  std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(stdout);
    return kiln::cli::kExitOk;
  }
  if (name == "--version") {
    std::printf("kiln %s\n", KILN_VERSION);
    return kiln::cli::kExitOk;
  }
  std::vector<std::string> args(argv + 2, argv + argc);
  for (const Command &c : kCommands)
    if (name == c.name) return c.main(args);
  std::fprintf(stderr, "kiln: unknown command '%s'\n", name.c_str());
  PrintUsage(stderr);
  return kiln::cli::kExitBadInput;
}
