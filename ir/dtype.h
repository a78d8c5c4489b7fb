// Element types of fusor tensors, their sizes and names, and the f16/bf16 conversions.
// Layer: ir (std only).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fusor {

/// The X-macro list of element types: FUSOR_DTYPE(Enum, name, c_type, bytes).
#define FUSOR_DTYPES(X)         \
  X(F32, "f32", float, 4)       \
  X(F16, "f16", uint16_t, 2)    \
  X(BF16, "bf16", uint16_t, 2)  \
  X(I64, "i64", int64_t, 8)     \
  X(I32, "i32", int32_t, 4)     \
  X(Bool, "bool", uint8_t, 1)

/// An element type.
enum class DType : uint8_t {
#define FUSOR_X(e, n, t, b) e,
  FUSOR_DTYPES(FUSOR_X)
#undef FUSOR_X
};

/// Number of element types.
inline constexpr int kNumDTypes = 6;

/// Bytes per element.
constexpr size_t dtype_size(DType t) {
  switch (t) {
#define FUSOR_X(e, n, ty, b) \
  case DType::e: return b;
    FUSOR_DTYPES(FUSOR_X)
#undef FUSOR_X
  }
  return 0;
}

/// The short name used by the text format: "f32", "i64", ...
std::string_view dtype_name(DType t);
/// Parses a short name; returns false when the name is unknown.
bool parse_dtype(std::string_view name, DType* out);
/// True for f32, f16 and bf16.
constexpr bool is_floating(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
/// True for i32 and i64.
constexpr bool is_integer(DType t) { return t == DType::I32 || t == DType::I64; }

/// Converts IEEE half bits to float (exact).
inline float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    int e = -1;
    do {
      ++e;
      man <<= 1;
    } while ((man & 0x400u) == 0);
    bits = sign | (uint32_t(112 - e) << 23) | ((man & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

/// Converts float to IEEE half bits, rounding to nearest even; overflow gives inf.
inline uint16_t f32_to_f16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan (keep nan quiet and non-zero)
    return uint16_t(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
  }
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (absx < 0x38800000u) {                                  // result is subnormal or zero
    if (absx < 0x33000000u) return uint16_t(sign);           // < 2^-25: rounds to zero
    uint32_t man = (absx & 0x7fffffu) | 0x800000u;
    int shift = 126 - int(absx >> 23);  // 14..24
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t r = absx + 0xfffu + ((absx >> 13) & 1u);  // round to nearest even at bit 13
  return uint16_t(sign | ((r - 0x38000000u) >> 13));
}

/// Converts bfloat16 bits to float (exact).
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }

/// Converts float to bfloat16 bits, rounding to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

}  // namespace fusor
