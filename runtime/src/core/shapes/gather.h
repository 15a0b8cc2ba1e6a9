// ScatterND's `reduction` attribute, shared by its shape rule
// (core/shapes/gather.cpp) and every backend's kernel.
#pragma once

#include "core/op_attrs.h"
#include "kiln/status.h"

namespace kiln {

enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };

// none (the default), add, mul, max or min; any other name is an error that
// lists them.
StatusOr<ScatterReduction> ScatterReductionOf(const OpAttrs &attrs);

} // namespace kiln
