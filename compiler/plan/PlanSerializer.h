//===- PlanSerializer.h - plan structs to FlatBuffer bytes -------*- C++ -*-===//

#ifndef KILN_COMPILER_PLAN_PLANSERIALIZER_H
#define KILN_COMPILER_PLAN_PLANSERIALIZER_H

#include "compiler/plan/PlanModel.h"
#include "plan_file.h"

#include <cstdint>
#include <vector>

namespace kiln::plan {

/// The generation defaults the plan records: the build config's
/// max_out_tokens, else the model's generation_config max_new_tokens, else
/// the context length (generate until EOS or a full context, never an
/// arbitrary cut), else the schema default.
int32_t effectiveMaxNewTokens(const PlanExtras &extras);

/// Builds the finished FlatBuffer (root Plan, identifier "KPLN") for the
/// given section placements (one per section; this writer emits only the
/// shared section 0).
std::vector<uint8_t> serializePlan(const GraphDesc &graph, const DecoderDesc &decoder,
                                   const RaggedDesc &ragged,
                                   const PlanExtras &extras,
                                   const std::vector<SectionPlacement> &placements);

} // namespace kiln::plan

#endif // KILN_COMPILER_PLAN_PLANSERIALIZER_H
