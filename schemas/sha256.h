// SHA-256 (FIPS 180-4), header-only and dependency-free, so the plan writer
// (which records the source model's hashes) and the runtime-only `kiln
// verify` (which rechecks them) share one implementation without OpenSSL.
// Streaming: Update() any number of times, then HexDigest() once.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace kiln {

class Sha256 {
public:
  Sha256() { Reset(); }

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
      Block(buf_);
      pending_ = 0;
    }
    for (; size >= 64; p += 64, size -= 64)
      Block(p);
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
  static uint32_t Rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

  void Block(const unsigned char *p) {
    static const uint32_t kK[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) |
             (uint32_t(p[4 * i + 2]) << 8) | uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = Rotr(w[i - 15], 7) ^ Rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = Rotr(w[i - 2], 17) ^ Rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6],
             h = h_[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (Rotr(e, 6) ^ Rotr(e, 11) ^ Rotr(e, 25)) + ((e & f) ^ (~e & g)) + kK[i] +
                    w[i];
      uint32_t t2 = (Rotr(a, 2) ^ Rotr(a, 13) ^ Rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h_[0] += a;
    h_[1] += b;
    h_[2] += c;
    h_[3] += d;
    h_[4] += e;
    h_[5] += f;
    h_[6] += g;
    h_[7] += h;
  }

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
