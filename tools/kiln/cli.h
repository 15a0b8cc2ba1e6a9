// Subcommands of the `kiln` tool. Each is a thin main() over library calls.
// Exit codes: 0 success, 1 internal failure, 2 bad input (arguments, model,
// plan or config).
#pragma once

#include <string>
#include <vector>

namespace kiln::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// args excludes the program name and the subcommand.
int BuildMain(const std::vector<std::string> &args);   // cmd_build.cpp (compiler builds only)
int ReshardMain(const std::vector<std::string> &args); // cmd_reshard.cpp (compiler builds only)
int RunMain(const std::vector<std::string> &args);     // cmd_run.cpp
int ExecMain(const std::vector<std::string> &args);    // cmd_exec.cpp
int InspectMain(const std::vector<std::string> &args); // cmd_inspect.cpp
int BenchMain(const std::vector<std::string> &args);   // cmd_bench.cpp
// `kiln bench latency` (cmd_bench_latency.cpp); BenchMain passes it on.
int BenchLatencyMain(const std::vector<std::string> &args);
// `kiln bench serve` (cmd_bench_serve.cpp): a running server, over HTTP.
int BenchServeMain(const std::vector<std::string> &args);
// `kiln tokenize` (cmd_tokenize.cpp): a plan's tokenizer, text to ids and back.
int TokenizeMain(const std::vector<std::string> &args);
int EmbedMain(const std::vector<std::string> &args);   // cmd_embed.cpp
// `kiln eval ppl` (cmd_eval.cpp): perplexity over a text (kiln/perplexity.h).
int EvalMain(const std::vector<std::string> &args);
int VerifyMain(const std::vector<std::string> &args);  // cmd_verify.cpp
int ServeMain(const std::vector<std::string> &args);   // cmd_serve.cpp
int KeysMain(const std::vector<std::string> &args);    // cmd_serve.cpp

}  // namespace kiln::cli
