// The attention kernels' optional score settings (docs/fused-ops.md),
// shared by both kernel trees: Gemma 2's soft-cap and the sliding window.
#pragma once

#include "kernels/host_device.h"

#include <cmath>
#include <cstdint>

namespace kiln::kernels {

// A scaled score soft-capped to cap * tanh(s / cap); cap 0: unchanged.
KILN_HD float SoftCap(float s, float cap) { return cap > 0 ? cap * tanhf(s / cap) : s; }

// The first position a token at position p reads with sliding window w:
// p - w + 1, or 0 (also when w is 0, no window).
KILN_HD int64_t WindowStart(int64_t p, int64_t w) { return w > 0 && p - w + 1 > 0 ? p - w + 1 : 0; }

} // namespace kiln::kernels
