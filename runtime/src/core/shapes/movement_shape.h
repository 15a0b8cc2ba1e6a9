// The dims a Shape op reports, shared by its shape rule
// (core/shapes/movement_shape.cpp) and every backend's kernel.
#pragma once

#include "core/op_attrs.h"

#include <cstdint>

namespace kiln {

// Shape's [start, end) over a rank-`rank` operand: the `start` and `end`
// attributes, negative ones counting from the end, clamped as ONNX
// specifies.
void ShapeRange(const OpAttrs &attrs, int64_t rank, int64_t *start, int64_t *end);

} // namespace kiln
