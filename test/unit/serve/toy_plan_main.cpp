// Writes the toy decoder plan of serve_http_test.cpp to a file, for trying
// `kiln serve` by hand in a runtime-only build (which cannot build models):
//   kiln_serve_toy_plan toy.plan && kiln serve toy.plan --allow-no-auth true
#include "test/unit/runtime/test_models.h"
#include "test/unit/runtime/test_plan.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln_serve_toy_plan OUT.plan\n");
    return 2;
  }
  kiln::test::TestPlan toy = kiln::test::BuildSumDecoder(/*with_kv=*/true, 512);
  toy.tokenizer_json = kiln::test::AngleTokenizerJson(512);
  toy.context_length = 4096;
  const std::string err = toy.Write(argv[1]);
  if (!err.empty()) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return 0;
}
