// What a plan holds, without running it (kiln inspect): format, model
// metadata, tokenizer, generation defaults, pooling, build config,
// provenance, injection report, graph interface, inputs and outputs with
// their symbolic shapes, op counts, memory plan, weight sections, weights by
// dtype, the KV cache's dtype, and which of this runtime's backends have a
// kernel for every op.
#pragma once

#include <nlohmann/json_fwd.hpp>

namespace kiln {

class Plan; // kiln/plan.h

// One JSON object (docs/cli.md, kiln inspect --json); with_ops adds "ops",
// every op with its operand and result tensor names. Strings come from the
// plan as they are, so print with a replacing error handler.
nlohmann::ordered_json PlanReport(const Plan &plan, bool with_ops);

} // namespace kiln
