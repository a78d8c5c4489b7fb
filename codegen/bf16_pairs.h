// Two vectors of 16 floats as 16 bfloat16 pairs, on AVX512-BF16: the one vector idiom the
// runtime's bf16 packing routines share (codegen/packing.cpp, codegen/winograd.cpp; Note
// [bf16 contractions] in codegen/precision.h). Callers compile it into functions whose
// target has avx512f, avx512bw and avx512bf16, and call those only where the CPU has them.
// Internal to codegen. Layer: codegen.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace fusor {

/// Pair i holds bf16(lo[i]) in its low half and bf16(hi[i]) in its high half (rounded as
/// to_bf16 rounds): one vcvtne2ps2bf16 gives [lo 0..15 | hi 0..15] as bf16, one vpermw
/// interleaves them.
__attribute__((target("avx512f,avx512bw,avx512bf16"), always_inline)) inline __m512i bf16_pairs16(__m512 lo, __m512 hi) {
  alignas(64) static constexpr uint16_t kInterleave[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                           8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  return _mm512_permutexvar_epi16(_mm512_load_si512(kInterleave), (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/// The 16 x 16 matrix of 32-bit elements in r[0..15] (row i in r[i]) transposed in place:
/// for each bit b of the index (8, 4, 2, 1), rows i and i + b (b clear in i) swap their
/// off-diagonal b x b blocks, which swaps that bit between the row and the column index.
/// Two vpermt2d per pair of rows per bit (vpermt2d rather than unpack and shuffle, whose
/// intrinsics leave GCC 12 warning of an uninitialized pass-through).
__attribute__((target("avx512f"), always_inline)) inline void transpose16x16(__m512i r[16]) {
  for (int b = 8; b >= 1; b /= 2) {
    alignas(64) int32_t lo[16], hi[16];
    for (int c = 0; c < 16; ++c) {
      lo[c] = (c & b) ? 16 | (c - b) : c;  // row i keeps its columns without b, takes i + b's
      hi[c] = (c & b) ? 16 | c : c + b;    // row i + b takes i's columns with b, keeps its own
    }
    const __m512i il = _mm512_load_si512(lo), ih = _mm512_load_si512(hi);
    for (int i = 0; i < 16; ++i) {
      if (i & b) continue;
      const __m512i a = r[i];
      r[i] = _mm512_permutex2var_epi32(a, il, r[i + b]);
      r[i + b] = _mm512_permutex2var_epi32(a, ih, r[i + b]);
    }
  }
}

}  // namespace fusor
