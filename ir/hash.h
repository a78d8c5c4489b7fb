// Hasher: a fast, deterministic 64-bit hash for fingerprints and cache keys (the same
// bytes give the same hash on every run and machine). Layer: ir (std only).
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace fusor {

/// Accumulates values into a 64-bit hash. Not cryptographic.
class Hasher {
 public:
  explicit Hasher(uint64_t seed = 0x243F6A8885A308D3ull) : h_(seed) {}

  /// Mixes one 64-bit word.
  Hasher& u64(uint64_t v) {
    h_ = mix(h_ ^ (v * 0x9E3779B97F4A7C15ull));
    return *this;
  }
  Hasher& i64(int64_t v) { return u64(uint64_t(v)); }
  Hasher& f64(double v) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return u64(b);
  }
  /// Mixes a length-prefixed string (so "ab"+"c" differs from "a"+"bc").
  Hasher& str(std::string_view s) {
    u64(s.size());
    return bytes(s.data(), s.size());
  }
  /// Mixes raw bytes, eight at a time.
  Hasher& bytes(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {  // four independent lanes keep large constants fast
      uint64_t w[4];
      std::memcpy(w, p + i, 32);
      h_ = mix(h_ ^ (w[0] * 0x9E3779B97F4A7C15ull)) + mix(w[1] ^ 0xC2B2AE3D27D4EB4Full) +
           mix(w[2] + 0x165667B19E3779F9ull) + mix(w[3] ^ h_);
    }
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      u64(w);
    }
    uint64_t tail = 0;
    if (i < n) {
      std::memcpy(&tail, p + i, n - i);
      u64(tail ^ (uint64_t(n - i) << 56));
    }
    return *this;
  }
  uint64_t digest() const { return mix(h_ ^ 0x85EBCA6B); }

 private:
  static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t h_;
};

}  // namespace fusor
