// Checks shared by the fused transformer ops' shape rules and kernels
// (docs/fused-ops.md): required attributes, the f32-family dtype rule and
// exact shape matches, each with a message that names the op and the operand.
#pragma once

#include "core/op_attrs.h"
#include "core/shapes/operand_checks.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

// The fused ops' attributes are always written by the compiler, so a missing
// or mistyped one means a malformed plan rather than a default.
StatusOr<float> RequiredFloat(std::string_view op, const OpAttrs &attrs, const char *name);
StatusOr<int64_t> RequiredInt(std::string_view op, const OpAttrs &attrs, const char *name);
StatusOr<std::string> RequiredString(std::string_view op, const OpAttrs &attrs, const char *name);
// The attention ops' optional settings (docs/fused-ops.md): `softcap`, a
// finite positive float, 0 when absent; `window`, a positive integer, 0
// when absent.
StatusOr<float> SoftCapOf(std::string_view op, const OpAttrs &attrs);
StatusOr<int64_t> WindowOf(std::string_view op, const OpAttrs &attrs);
// A required integer attribute that must be 0 or 1.
StatusOr<bool> RequiredFlag(std::string_view op, const OpAttrs &attrs, const char *name);

// Fused kernels compute in f32; f16/bf16 operands are seen as f32 by the
// shape table (and widened by the CPU's half-via-f32 path), so the message
// lists all three.
Status CheckFloatOperand(std::string_view op, const char *name, const TensorView &t);

// Operand `name` must have rank >= min_rank.
Status CheckMinRank(std::string_view op, const char *name, const TensorView &t, size_t min_rank);
// Operand `name` must have exactly shape `want`; `want_text` describes it
// symbolically (e.g. "[D]").
Status CheckExactShape(std::string_view op, const char *name, const TensorView &t,
                       const Shape &want, const char *want_text);

} // namespace kiln
