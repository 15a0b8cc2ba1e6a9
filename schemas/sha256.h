// SHA-256 (FIPS 180-4), header-only and dependency-free, so the plan writer
// (which records the source model's hashes) and the runtime-only `kiln
// verify` (which rechecks them) share one implementation without OpenSSL.
// Streaming: Update() any number of times, then HexDigest() once. On x86-64
// CPUs with the SHA extensions the block function uses them (3 to 5 times the
// portable speed, which matters for multi-GB models); results are identical.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KILN_SHA256_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace kiln {

namespace sha256_detail {

inline const uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// FIPS 180-4 section 6.2.2 over `n` 64-byte blocks.
inline void BlocksPortable(uint32_t h[8], const unsigned char *p, uint64_t n) {
  for (; n > 0; --n, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
             (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 =
          hh + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] + w[i];
      uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      hh = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
}

#ifdef KILN_SHA256_X86
inline bool CpuHasShaExtensions() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3))
    return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return false;
  return (b & (1u << 29)) != 0; // CPUID.(EAX=7,ECX=0):EBX.SHA
}

// The same compression with the SHA-NI instructions. The state is kept as
// the (ABEF, CDGH) register pair those instructions work on; each 4-round
// group adds the round constants to four message words, runs two
// sha256rnds2, and extends the message schedule with sha256msg1/msg2.
__attribute__((target("sha,sse4.1,ssse3"))) inline void
BlocksShaNi(uint32_t h[8], const unsigned char *p, uint64_t n) {
  const __m128i kByteSwap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h)), 0xB1);
  __m128i state1 =
      _mm_shuffle_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h + 4)), 0x1B);
  __m128i state0 = _mm_alignr_epi8(tmp, state1, 8); // ABEF
  state1 = _mm_blend_epi16(state1, tmp, 0xF0);      // CDGH
  for (; n > 0; --n, p += 64) {
    const __m128i abef = state0, cdgh = state1;
    __m128i w[4];
    for (int i = 0; i < 4; ++i)
      w[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16 * i)),
                              kByteSwap);
    for (int g = 0; g < 16; ++g) {
      __m128i &cur = w[g & 3], &next = w[(g + 1) & 3], &prev = w[(g + 3) & 3];
      __m128i msg =
          _mm_add_epi32(cur, _mm_loadu_si128(reinterpret_cast<const __m128i *>(kK + 4 * g)));
      state1 = _mm_sha256rnds2_epu32(state1, state0, msg);
      if (g >= 3 && g <= 14) {
        next = _mm_add_epi32(next, _mm_alignr_epi8(cur, prev, 4));
        next = _mm_sha256msg2_epu32(next, cur);
      }
      state0 = _mm_sha256rnds2_epu32(state0, state1, _mm_shuffle_epi32(msg, 0x0E));
      if (g >= 1 && g <= 12)
        prev = _mm_sha256msg1_epu32(prev, cur);
    }
    state0 = _mm_add_epi32(state0, abef);
    state1 = _mm_add_epi32(state1, cdgh);
  }
  tmp = _mm_shuffle_epi32(state0, 0x1B);       // FEBA
  state1 = _mm_shuffle_epi32(state1, 0xB1);    // DCHG
  state0 = _mm_blend_epi16(tmp, state1, 0xF0); // DCBA
  state1 = _mm_alignr_epi8(state1, tmp, 8);    // HGFE
  _mm_storeu_si128(reinterpret_cast<__m128i *>(h), state0);
  _mm_storeu_si128(reinterpret_cast<__m128i *>(h + 4), state1);
}
#endif

using BlockFn = void (*)(uint32_t h[8], const unsigned char *p, uint64_t n);

inline BlockFn FastestBlocks() {
#ifdef KILN_SHA256_X86
  static const BlockFn fn = CpuHasShaExtensions() ? BlocksShaNi : BlocksPortable;
  return fn;
#else
  return BlocksPortable;
#endif
}

} // namespace sha256_detail

class Sha256 {
public:
  // `accelerated` false forces the portable code (tests compare the two).
  explicit Sha256(bool accelerated = true)
      : blocks_(accelerated ? sha256_detail::FastestBlocks() : sha256_detail::BlocksPortable) {
    Reset();
  }
  // Whether this CPU runs the SHA-extension code.
  static bool Accelerated() {
    return sha256_detail::FastestBlocks() != sha256_detail::BlocksPortable;
  }

  void Reset() {
    static const uint32_t kInit[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                      0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    std::memcpy(h_, kInit, sizeof(h_));
    total_ = 0;
    pending_ = 0;
  }

  void Update(const void *data, uint64_t size) {
    const unsigned char *p = static_cast<const unsigned char *>(data);
    total_ += size;
    if (pending_ > 0) {
      uint64_t take = 64 - pending_ < size ? 64 - pending_ : size;
      std::memcpy(buf_ + pending_, p, take);
      pending_ += take;
      p += take;
      size -= take;
      if (pending_ < 64)
        return;
      blocks_(h_, buf_, 1);
      pending_ = 0;
    }
    blocks_(h_, p, size / 64);
    p += size / 64 * 64;
    size %= 64;
    std::memcpy(buf_, p, size);
    pending_ = size;
  }

  // The digest of everything passed to Update, as 32 bytes. Call once.
  void Digest(unsigned char out[32]) {
    uint64_t bits = total_ * 8;
    unsigned char pad[72] = {0x80};
    uint64_t pad_len = (pending_ < 56 ? 56 : 120) - pending_;
    for (int i = 0; i < 8; ++i)
      pad[pad_len + i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    Update(pad, pad_len + 8);
    for (int i = 0; i < 8; ++i)
      for (int b = 0; b < 4; ++b)
        out[4 * i + b] = static_cast<unsigned char>(h_[i] >> (24 - 8 * b));
  }

  // The digest as 64 lowercase hex digits. Call once.
  std::string HexDigest() {
    unsigned char d[32];
    Digest(d);
    static const char kHex[] = "0123456789abcdef";
    std::string s(64, '0');
    for (int i = 0; i < 32; ++i) {
      s[2 * i] = kHex[d[i] >> 4];
      s[2 * i + 1] = kHex[d[i] & 15];
    }
    return s;
  }

private:
  sha256_detail::BlockFn blocks_;
  uint32_t h_[8];
  unsigned char buf_[64];
  uint64_t total_;
  uint64_t pending_;
};

// Hashes the file at `path` with plain read()s into a 1 MB buffer, so a
// multi-GB file costs no resident memory. Returns "" and sets `hex` and
// `size`, or a message naming the file and the error. A set `cancel` stops
// it early (with an error), for a build that failed while it hashed.
inline std::string Sha256File(const std::string &path, std::string *hex, uint64_t *size,
                              const std::atomic<bool> *cancel = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return "cannot open '" + path + "': " + std::strerror(errno);
  Sha256 sha;
  std::vector<unsigned char> buf(1 << 20);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      return "cannot read '" + path + "': " + err;
    }
    if (n == 0)
      break;
    if (cancel && cancel->load(std::memory_order_relaxed)) {
      ::close(fd);
      return "hashing '" + path + "' was cancelled";
    }
    sha.Update(buf.data(), static_cast<uint64_t>(n));
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  *hex = sha.HexDigest();
  *size = total;
  return "";
}

} // namespace kiln
