#include "codegen/packing.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "codegen/bf16_pairs.h"
#include "codegen/index_math.h"
#include "codegen/precision.h"
#include "codegen/winograd.h"
#include "ir/error.h"

namespace fusor {

bool b_varies_over_batch(const ContractionSpec& c) {
  if (c.kind != ContractionSpec::Kind::Gemm) return false;
  for (size_t d = 0; d < c.batch.size(); ++d)
    if (c.batch[d] > 1 && c.b.strides[d] != 0) return true;
  return false;
}

int64_t packed_b_batches(const ContractionSpec& c) {
  if (c.kind == ContractionSpec::Kind::Conv2d) return c.conv.group;
  return b_varies_over_batch(c) ? numel(c.batch) : 1;
}

int64_t reduction_length(const ContractionSpec& c) {
  if (c.kind == ContractionSpec::Kind::Conv2d) return c.conv.c / c.conv.group * c.conv.kh * c.conv.kw;
  return c.k;
}

int64_t b_columns(const ContractionSpec& c) {
  return c.kind == ContractionSpec::Kind::Conv2d ? c.conv.m / c.conv.group : c.n;
}

int64_t packed_b_floats(const ContractionSpec& c, int64_t width, PackKind kind) {
  if (kind == PackKind::WinogradWeights || kind == PackKind::Bf16WinogradWeights)
    return winograd_weight_floats(c, width, kind == PackKind::Bf16WinogradWeights);
  const int64_t rows = kind == PackKind::Bf16Panels ? ceil_div(reduction_length(c), 2) : reduction_length(c);
  return packed_b_batches(c) * ceil_div(b_columns(c), width) * rows * width;
}

std::string packed_b_layout(const ContractionSpec& c, int64_t width, PackKind kind) {
  std::vector<int64_t> words{int64_t(c.kind) | int64_t(kind) << 8, width, reduction_length(c), b_columns(c),
                             packed_b_batches(c), c.b.offset};
  words.insert(words.end(), c.b.strides.begin(), c.b.strides.end());
  if (c.kind == ContractionSpec::Kind::Conv2d) {
    const Conv2dParams& p = c.conv;
    words.insert(words.end(), {p.c, p.m, p.kh, p.kw, p.group});
  } else if (b_varies_over_batch(c)) {
    words.insert(words.end(), c.batch.begin(), c.batch.end());
  }
  return std::string(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(int64_t));
}

void pack_b(const ContractionSpec& c, int64_t width, const float* b, float* dst, PackKind kind) {
  FUSOR_ASSERT(width > 0, "pack_b: width");
  if (kind == PackKind::WinogradWeights) return pack_winograd_weights(c, width, b, dst);
  if (kind == PackKind::Bf16WinogradWeights) return pack_winograd_weights_bf16(c, width, b, reinterpret_cast<uint32_t*>(dst));
  FUSOR_ASSERT(kind == PackKind::Panels || kind == PackKind::Bf16Panels, "pack_b: layout");
  const int64_t n = b_columns(c), k = reduction_length(c), blocks = ceil_div(n, width);
  if (c.kind == ContractionSpec::Kind::Conv2d && kind == PackKind::Bf16Panels) {
    // Each [k][MR] block of the f32 layout as pairs of its reduction rows.
    std::vector<float> f32(size_t(packed_b_floats(c, width)));
    pack_b(c, width, b, f32.data());
    for (int64_t blk = 0; blk < c.conv.group * blocks; ++blk)
      fusor_rt_pack_panel_bf16(f32.data() + blk * k * width, width, 1, k, width, width,
                               reinterpret_cast<uint32_t*>(dst) + blk * ceil_div(k, 2) * width);
    return;
  }
  if (c.kind == ContractionSpec::Kind::Conv2d) {
    const Conv2dParams& p = c.conv;
    const int64_t cg = p.c / p.group, mg = p.m / p.group;
    const std::vector<int64_t>& s = c.b.strides;  // over [M, C/group, kh, kw]
    for (int64_t g = 0; g < p.group; ++g)
      for (int64_t tile = 0; tile < blocks; ++tile) {
        const int64_t j0 = tile * width, valid = std::min(width, n - j0);
        float* out = dst + (g * blocks + tile) * k * width;
        for (int64_t y = 0; y < p.kh; ++y)
          for (int64_t x = 0; x < p.kw; ++x)
            for (int64_t ci = 0; ci < cg; ++ci, out += width) {
              const float* src = b + c.b.offset + (g * mg + j0) * s[0] + ci * s[1] + y * s[2] + x * s[3];
              for (int64_t j = 0; j < valid; ++j) out[j] = src[j * s[0]];
              for (int64_t j = valid; j < width; ++j) out[j] = 0.0f;
            }
      }
    return;
  }
  const int64_t nr = width, panels = blocks;
  const size_t r = c.batch.size();
  const int64_t batches = packed_b_batches(c);
  std::vector<int64_t> idx(r, 0);
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t off = c.b.offset;
    if (batches > 1) {
      int64_t rem = bi;
      for (size_t d = r; d-- > 0;) {
        off += (rem % c.batch[d]) * c.b.strides[d];
        rem /= c.batch[d];
      }
    }
    for (int64_t panel = 0; panel < panels; ++panel) {
      const int64_t j0 = panel * nr;
      if (kind == PackKind::Bf16Panels) {
        fusor_rt_pack_panel_bf16(b + off + j0 * c.b.strides[r + 1], c.b.strides[r], c.b.strides[r + 1], k,
                                 std::min(nr, n - j0), nr,
                                 reinterpret_cast<uint32_t*>(dst) + (bi * panels + panel) * ceil_div(k, 2) * nr);
        continue;
      }
      fusor_rt_pack_panel(b + off + j0 * c.b.strides[r + 1], c.b.strides[r], c.b.strides[r + 1], k,
                          std::min(nr, n - j0), nr, dst + (bi * panels + panel) * k * nr);
    }
  }
}

}  // namespace fusor

// (A transposed operand, sk == 1, packs by this scalar loop too: a 16 x 16 vector transpose
// measured no faster on attention's Kᵀ at seq 384, whose cost is the rows' cache misses.)
extern "C" void fusor_rt_pack_panel(const float* src, int64_t sk, int64_t sn, int64_t k, int64_t n_valid, int64_t nr,
                                    float* dst) {
  for (int64_t kk = 0; kk < k; ++kk, src += sk, dst += nr) {
    if (sn == 1) {
      std::memcpy(dst, src, size_t(n_valid) * sizeof(float));
    } else {
      for (int64_t j = 0; j < n_valid; ++j) dst[j] = src[j * sn];
    }
    for (int64_t j = n_valid; j < nr; ++j) dst[j] = 0.0f;
  }
}

namespace {

#if defined(__x86_64__)
// Contiguous columns: per pair of rows, 16 columns at a time as 16 pairs (bf16_pairs16).
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_pairs_avx512(const float* src, int64_t sk,
                                                                              int64_t k, int64_t n_valid, int64_t nr,
                                                                              uint32_t* dst) {
  for (int64_t q = 0; q < (k + 1) / 2; ++q, dst += nr) {
    const float* lo = src + 2 * q * sk;
    const bool has_hi = 2 * q + 1 < k;
    for (int64_t j = 0; j < nr; j += 16) {
      const int64_t left = n_valid - j;
      const __mmask16 m = __mmask16(left >= 16 ? 0xffff : left <= 0 ? 0 : (1u << left) - 1);
      const __m512 a = _mm512_maskz_loadu_ps(m, lo + j);
      const __m512 b = has_hi ? _mm512_maskz_loadu_ps(m, lo + sk + j) : _mm512_setzero_ps();
      _mm512_mask_storeu_epi32(dst + j, __mmask16(nr - j >= 16 ? 0xffff : (1u << (nr - j)) - 1), fusor::bf16_pairs16(a, b));
    }
  }
}

__attribute__((target("avx512f"))) inline __mmask16 first_lanes(int64_t n) {
  return __mmask16(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

// Contiguous k (sk == 1), columns apart (a transposed operand, e.g. Kᵀ of attention), as
// pairs: each column's run of 32 k rounded by one vcvtne2ps2bf16 of its halves (which keeps
// k's order: pair q is k 2q, 2q + 1), then 16 columns x 16 pairs transposed (columns past
// n_valid are zeros, as the panel holds there). nr must be a multiple of 16. Against the
// scalar pairs, attention at seq 384 in bf16 (12 heads, d 64, one thread on a Zen 5) took
// 2.06-2.09 ms, 1.67-1.78 with this.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void pack_pairs_transposed_avx512(const float* src, int64_t sn,
                                                                                         int64_t k, int64_t n_valid,
                                                                                         int64_t nr, uint32_t* dst) {
  const int64_t k2 = (k + 1) / 2;
  for (int64_t j = 0; j < nr; j += 16) {
    for (int64_t kk = 0; kk < k; kk += 32) {
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i) {
        if (j + i >= n_valid) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        const float* col = src + (j + i) * sn + kk;
        const __m512 a = _mm512_maskz_loadu_ps(first_lanes(k - kk), col);
        const __m512 b = _mm512_maskz_loadu_ps(first_lanes(k - kk - 16), col + 16);
        // [a | b] as bf16 in k order: pair q is (k 2q, 2q + 1) of this run.
        r[i] = (__m512i)_mm512_cvtne2ps_pbh(b, a);
      }
      fusor::transpose16x16(r);
      for (int64_t i = 0; i < 16 && kk / 2 + i < k2; ++i)
        _mm512_storeu_si512(dst + (kk / 2 + i) * nr + j, r[i]);
    }
  }
}
#endif

}  // namespace

extern "C" void fusor_rt_pack_panel_bf16(const float* src, int64_t sk, int64_t sn, int64_t k, int64_t n_valid,
                                         int64_t nr, uint32_t* dst) {
#if defined(__x86_64__)
  static const bool vector = fusor::host_bf16().avx512_bf16 && __builtin_cpu_supports("avx512bw");
  if (vector && sn == 1) return pack_pairs_avx512(src, sk, k, n_valid, nr, dst);
  if (vector && sk == 1 && nr % 16 == 0) return pack_pairs_transposed_avx512(src, sn, k, n_valid, nr, dst);
#endif
  using fusor::bf16_pair;
  for (int64_t q = 0; q < (k + 1) / 2; ++q, dst += nr) {
    const float* lo = src + 2 * q * sk;
    const float* hi = 2 * q + 1 < k ? lo + sk : nullptr;
    for (int64_t j = 0; j < n_valid; ++j) dst[j] = bf16_pair(lo[j * sn], hi ? hi[j * sn] : 0.0f);
    for (int64_t j = n_valid; j < nr; ++j) dst[j] = 0;
  }
}

extern "C" void fusor_rt_pack_conv_tile(const float* x, const int64_t* geo, int64_t oh, int64_t ow0, int64_t mr_valid,
                                        int64_t mr, float* dst) {
  using namespace fusor;
  const int64_t c = geo[kGeoC], h = geo[kGeoH], w = geo[kGeoW];
  const int64_t sc = geo[kGeoStrideC], sy = geo[kGeoStrideY], sx = geo[kGeoStrideX];
  const int64_t iy0 = oh * geo[kGeoStrideH] - geo[kGeoPadT];
  for (int64_t ky = 0; ky < geo[kGeoKh]; ++ky) {
    const int64_t iy = iy0 + ky * geo[kGeoDilH];
    const bool row_in = iy >= 0 && iy < h;
    for (int64_t kx = 0; kx < geo[kGeoKw]; ++kx) {
      // The tile's columns whose input column is inside the image: [lo, hi).
      const int64_t ix0 = ow0 * geo[kGeoStrideW] - geo[kGeoPadL] + kx * geo[kGeoDilW], step = geo[kGeoStrideW];
      int64_t lo = 0, hi = row_in ? mr_valid : 0;
      while (lo < hi && ix0 + lo * step < 0) ++lo;
      while (hi > lo && ix0 + (hi - 1) * step >= w) --hi;
      for (int64_t ci = 0; ci < c; ++ci, dst += mr) {
        for (int64_t i = 0; i < lo; ++i) dst[i] = 0.0f;
        if (hi > lo) {
          const float* s = x + ci * sc + iy * sy + (ix0 + lo * step) * sx;  // in the image
          for (int64_t i = lo; i < hi; ++i) dst[i] = s[(i - lo) * step * sx];
        }
        for (int64_t i = hi; i < mr; ++i) dst[i] = 0.0f;
      }
    }
  }
}
