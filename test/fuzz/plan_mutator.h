// Mutation of kiln plans that keeps their checksums valid, so that a fuzzer
// gets past the header and checksum checks to the FlatBuffers verifier and
// the structural checks behind it (runtime/src/plan_loader.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace kiln::fuzz {

// Rewrites, in this order, whatever of these the bytes still have room for:
// each section's checksum in the FlatBuffer (when the FlatBuffer verifies
// and the section lies inside the file), the FlatBuffer's checksum, the
// header's file size, and the header's own checksum.
void ResealPlan(uint8_t *data, size_t size);

// One mutation of a plan in `data` (size bytes, room for max_size): mostly of
// the FlatBuffer alone, keeping the weight sections where they are, at
// times of the whole file (header fields, sections, length); half of the
// FlatBuffer mutations set one stored integer (a field or a vector element,
// found through the schema) to a boundary value. Returns the new
// size; the result is resealed.
size_t MutatePlan(uint8_t *data, size_t size, size_t max_size, unsigned seed);

} // namespace kiln::fuzz
