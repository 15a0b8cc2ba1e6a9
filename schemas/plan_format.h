// Byte-level framing of a kiln .plan file, shared by the plan writer
// (compiler/) and the plan loader (runtime/). Header-only, no dependencies.
// The full layout is documented at the top of schemas/plan.fbs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln {

inline constexpr char kPlanMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'A', 'N'};
inline constexpr uint32_t kPlanFormatMajor = 1;
inline constexpr uint32_t kPlanFormatMinor = 2; // 1: Plan.ragged, 2: Plan.pooling
inline constexpr uint64_t kPlanHeaderSize = 64;
inline constexpr uint64_t kSectionAlign = 4096;
inline constexpr uint64_t kTensorAlign = 64;

struct PlanHeader {
  char magic[8];
  uint32_t format_major;
  uint32_t format_minor;
  uint64_t flatbuffer_offset;
  uint64_t flatbuffer_size;
  uint64_t flatbuffer_checksum;
  uint64_t file_size;
  uint64_t header_checksum;  // of bytes [0, 48)
  uint64_t reserved;
};
static_assert(sizeof(PlanHeader) == kPlanHeaderSize, "PlanHeader must be 64 bytes");

// 64-bit checksum: four independent multiply-rotate lanes over 8-byte words
// (fast enough for multi-GB weight sections), folded with the length. It
// detects truncation, bit flips and reordering; it is not cryptographic.
inline uint64_t PlanChecksum(const void *data, uint64_t size) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
  constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto round = [&](uint64_t acc, uint64_t in) { return rotl(acc + in * kP2, 31) * kP1; };
  const unsigned char *p = static_cast<const unsigned char *>(data);
  uint64_t lane[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint64_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * l, 8);
      lane[l] = round(lane[l], w);
    }
  }
  uint64_t h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18);
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = rotl(h ^ round(0, w), 27) * kP1 + kP2;
  }
  for (; i < size; ++i) h = rotl(h ^ (p[i] * kP1), 11) * kP2;
  h ^= size;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  return h;
}

inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace kiln
