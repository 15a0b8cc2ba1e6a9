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
inline constexpr uint32_t kPlanFormatMinor = 5; // 1: Plan.ragged, 2: Plan.pooling, 3: Plan.provenance,
                                                 // 4: Plan.tensor_parallel, Tensor.shard,
                                                 // 5: Plan.source_graph
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
// PlanChecksumStream computes the same value over bytes fed piece by piece,
// so a writer can checksum a section while it streams it to disk.
class PlanChecksumStream {
public:
  void Update(const void *data, uint64_t size) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    total_ += size;
    if (pending_ > 0) {
      uint64_t take = 32 - pending_ < size ? 32 - pending_ : size;
      std::memcpy(buf_ + pending_, p, take);
      pending_ += take;
      p += take;
      size -= take;
      if (pending_ < 32)
        return;
      Block(buf_);
      pending_ = 0;
    }
    for (; size >= 32; p += 32, size -= 32)
      Block(p);
    std::memcpy(buf_, p, size);
    pending_ = size;
  }

  // The checksum of everything passed to Update (which may continue after).
  uint64_t Final() const {
    uint64_t h = Rotl(lane_[0], 1) + Rotl(lane_[1], 7) + Rotl(lane_[2], 12) + Rotl(lane_[3], 18);
    uint64_t i = 0;
    for (; i + 8 <= pending_; i += 8) {
      uint64_t w;
      std::memcpy(&w, buf_ + i, 8);
      h = Rotl(h ^ Round(0, w), 27) * kP1 + kP2;
    }
    // The last pending_ - i (< 8) bytes one at a time. A fixed trip count:
    // with a loop bounded by pending_, gcc's loop analysis warns
    // (-Waggressive-loop-optimizations) where PlanChecksum is inlined on a
    // known size, although pending_ < 32 always.
    for (uint64_t j = 0; j < 8; ++j)
      if (i + j < pending_)
        h = Rotl(h ^ (buf_[(i + j) & 31] * kP1), 11) * kP2;
    h ^= total_;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    return h;
  }

private:
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ULL;
  static constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4FULL;
  static uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t Round(uint64_t acc, uint64_t in) { return Rotl(acc + in * kP2, 31) * kP1; }
  void Block(const unsigned char *p) {
    for (int l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, p + 8 * l, 8);
      lane_[l] = Round(lane_[l], w);
    }
  }

  uint64_t lane_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  unsigned char buf_[32] = {};
  uint64_t pending_ = 0;
  uint64_t total_ = 0;
};

inline uint64_t PlanChecksum(const void *data, uint64_t size) {
  PlanChecksumStream s;
  s.Update(data, size);
  return s.Final();
}

inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace kiln
