// What the GPU kernel benchmarks share (kiln_prefill_bench,
// kiln_decode_bench, kiln_gemv_bench): failing with the program's name,
// checking CUDA calls, and the --iters argument.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln::bench {

// The program's name for messages; main sets it first.
inline const char *&ProgramName() {
  static const char *name = "kiln bench";
  return name;
}

[[noreturn]] inline void Fail(const std::string &what) {
  std::fprintf(stderr, "%s: %s\n", ProgramName(), what.c_str());
  std::exit(1);
}

inline void Check(cudaError_t err, const char *what) {
  if (err != cudaSuccess)
    Fail(std::string(what) + ": " + cudaGetErrorString(err));
}

// Sets the program's name and returns --iters N (fallback without it);
// any other argument fails with the usage.
inline int ParseIters(int argc, char **argv, const char *program, int fallback) {
  ProgramName() = program;
  int iters = fallback;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc)
      iters = std::max(1, std::atoi(argv[++i]));
    else
      Fail(std::string("unknown argument '") + argv[i] + "' (usage: " + program +
           " [--iters N], default " + std::to_string(fallback) + ")");
  }
  return iters;
}

} // namespace kiln::bench
