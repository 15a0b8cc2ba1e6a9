// What one op must compute and move, estimated from its operands' shapes:
// the floating-point operations of its products (2 per multiply-add) and
// the fewest bytes it must read and write in device memory (each operand
// read once, each result written once; a gather reads only the rows it
// takes). The profiler (executor_profile.cpp)
// divides them by measured time to place each op against the machine's
// peak rates (a roofline). Elementwise and layout ops count bytes only.
#pragma once

#include "core/kernel.h"
#include "core/op_attrs.h"

#include <string_view>

namespace kiln {

struct OpCost {
  double flops = 0;
  double bytes = 0;
};

// paged_attention's key/value traffic depends on context lengths that live
// in device memory; it is estimated from the block tables' width (every
// sequence reads max_blocks * block_size positions), an upper bound by less
// than one block per sequence.
OpCost EstimateOpCost(std::string_view type, const Inputs &in, const Outputs &out);

} // namespace kiln
