// Placeholder so the build configures until the build driver lands (compiler
// helper B owns this file and replaces it).
#include "cli.h"

#include <cstdio>

namespace kiln::cli {
int BuildMain(const std::vector<std::string> &) {
  std::fprintf(stderr, "kiln build: not implemented yet\n");
  return kExitFailure;
}
} // namespace kiln::cli
