// kiln run --prompts-file: a JSONL file of requests, run batched.
#pragma once

#include "cli_args.h"
#include "kiln/pipeline.h"

#include <string>
#include <vector>

namespace kiln::cli {

// Reads JSONL requests over `defaults`; InvalidArgument "FILE:LINE: ..." for
// the first bad line. Blank lines are skipped.
StatusOr<std::vector<Request>> ReadRequestsFile(const std::string &path,
                                                const RequestParams &defaults);

// Runs every request of --prompts-file through `pipe` at once, writing JSONL
// events and responses to stdout.
Status RunBatch(const ParsedArgs &a, Pipeline &pipe, const RequestParams &defaults);

} // namespace kiln::cli
