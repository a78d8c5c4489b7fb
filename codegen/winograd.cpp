#include "codegen/winograd.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "codegen/bf16_pairs.h"
#include "codegen/index_math.h"
#include "codegen/packing.h"
#include "codegen/precision.h"
#include "ir/error.h"

namespace fusor {

bool winograd_applies(const ContractionSpec& c) {
  if (c.kind != ContractionSpec::Kind::Conv2d) return false;
  const Conv2dParams& p = c.conv;
  return p.kh == 3 && p.kw == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dil_h == 1 && p.dil_w == 1 && p.group == 1 &&
         c.a.strides.size() == 4 && c.a.strides[3] == 1 && p.oh > 0 && p.ow > 0;
}

int64_t winograd_tiles(const Conv2dParams& p) { return ceil_div(p.oh, 2) * ceil_div(p.ow, 2); }

int64_t winograd_weight_floats(const ContractionSpec& c, int64_t mr, bool bf16) {
  return 16 * ceil_div(c.conv.m, mr) * (bf16 ? ceil_div(c.conv.c, 2) : c.conv.c) * mr;
}

void pack_winograd_weights(const ContractionSpec& c, int64_t mr, const float* w, float* dst) {
  FUSOR_ASSERT(winograd_applies(c) && mr > 0, "pack_winograd_weights: not a Winograd convolution");
  const Conv2dParams& p = c.conv;
  const int64_t mtiles = ceil_div(p.m, mr);
  const std::vector<int64_t>& s = c.b.strides;  // over [M, C, 3, 3]
  std::fill_n(dst, winograd_weight_floats(c, mr), 0.0f);
  for (int64_t m = 0; m < p.m; ++m)
    for (int64_t ci = 0; ci < p.c; ++ci) {
      // U = G g Gᵀ, in double (then rounded once).
      double g[3][3], t[4][3];
      for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x) g[y][x] = w[c.b.offset + m * s[0] + ci * s[1] + y * s[2] + x * s[3]];
      for (int x = 0; x < 3; ++x) {
        t[0][x] = g[0][x];
        t[1][x] = 0.5 * (g[0][x] + g[1][x] + g[2][x]);
        t[2][x] = 0.5 * (g[0][x] - g[1][x] + g[2][x]);
        t[3][x] = g[2][x];
      }
      for (int a = 0; a < 4; ++a) {
        const double u[4] = {t[a][0], 0.5 * (t[a][0] + t[a][1] + t[a][2]), 0.5 * (t[a][0] - t[a][1] + t[a][2]), t[a][2]};
        for (int b = 0; b < 4; ++b)
          dst[((int64_t(a * 4 + b) * mtiles + m / mr) * p.c + ci) * mr + m % mr] = float(u[b]);
      }
    }
}

namespace {
// [blocks][C][width] floats as [blocks][ceil(C / 2)][width] pairs of channels: each block a
// panel of C rows packed as pairs of rows (codegen/packing.h's routine).
void pair_channels(const float* src, int64_t blocks, int64_t C, int64_t width, uint32_t* dst) {
  for (int64_t blk = 0; blk < blocks; ++blk)
    fusor_rt_pack_panel_bf16(src + blk * C * width, width, 1, C, width, width, dst + blk * ceil_div(C, 2) * width);
}
}  // namespace

void pack_winograd_weights_bf16(const ContractionSpec& c, int64_t mr, const float* w, uint32_t* dst) {
  std::vector<float> u(size_t(winograd_weight_floats(c, mr)));
  pack_winograd_weights(c, mr, w, u.data());
  pair_channels(u.data(), 16 * ceil_div(c.conv.m, mr), c.conv.c, mr, dst);
}

}  // namespace fusor

namespace {

using fusor::WinogradGeo;

// Bᵀ d B of one 4x4 patch d (rows of 4), written to out[ξ] (ξ = a * 4 + b).
template <class T>
inline void input_transform(const T d[4][4], T out[16]) {
  T w[4][4];
  for (int j = 0; j < 4; ++j) {
    w[0][j] = d[0][j] - d[2][j];
    w[1][j] = d[1][j] + d[2][j];
    w[2][j] = d[2][j] - d[1][j];
    w[3][j] = d[1][j] - d[3][j];
  }
  for (int a = 0; a < 4; ++a) {
    out[a * 4 + 0] = w[a][0] - w[a][2];
    out[a * 4 + 1] = w[a][1] + w[a][2];
    out[a * 4 + 2] = w[a][2] - w[a][1];
    out[a * 4 + 3] = w[a][1] - w[a][3];
  }
}

struct Geo {
  int64_t c, h, w, pt, pl, tx, sc, sy;
  explicit Geo(const int64_t* g)
      : c(g[fusor::kWgC]), h(g[fusor::kWgH]), w(g[fusor::kWgW]), pt(g[fusor::kWgPadT]), pl(g[fusor::kWgPadL]),
        tx(g[fusor::kWgTilesX]), sc(g[fusor::kWgStrideC]), sy(g[fusor::kWgStrideY]) {}
};

// One tile at a time (any machine): the patch gathered with bounds checks.
void input_scalar(const float* x, const Geo& g, int64_t t0, int64_t count, int64_t nr, float* v) {
  for (int64_t j = 0; j < count; ++j) {
    const int64_t t = t0 + j, iy0 = 2 * (t / g.tx) - g.pt, ix0 = 2 * (t % g.tx) - g.pl;
    for (int64_t ci = 0; ci < g.c; ++ci) {
      float d[4][4], out[16];
      for (int i = 0; i < 4; ++i)
        for (int k = 0; k < 4; ++k) {
          const int64_t iy = iy0 + i, ix = ix0 + k;
          d[i][k] = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w ? x[ci * g.sc + iy * g.sy + ix] : 0.0f;
        }
      input_transform(d, out);
      for (int xi = 0; xi < 16; ++xi) v[(xi * g.c + ci) * nr + j] = out[xi];
    }
  }
}

// The lanes of a 16-float load at columns [s, s + 16) that fall inside [0, w).
__attribute__((target("avx512f"))) inline __mmask16 column_mask(int64_t s, int64_t w) {
  const int64_t lo = std::clamp<int64_t>(-s, 0, 16), hi = std::clamp<int64_t>(w - s, 0, 16);
  if (hi <= lo) return 0;
  return __mmask16(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}

// Sixteen tiles' transforms of two channels (lo, hi: ξ = 0..15; hi null past an odd C)
// as bf16 pairs, dst[ξ * xi_stride + j] for the lanes in `mask`.
__attribute__((target("avx512f,avx512bw,avx512bf16"), noinline)) void store_pairs(const __m512* lo, const __m512* hi,
                                                                                  __mmask16 mask, int64_t xi_stride,
                                                                                  uint32_t* dst) {
  for (int xi = 0; xi < 16; ++xi)
    _mm512_mask_storeu_epi32(dst + xi * xi_stride, mask, fusor::bf16_pairs16(lo[xi], hi ? hi[xi] : _mm512_setzero_ps()));
}

// Sixteen tiles of one tile row at a time: each patch row is four masked loads whose even
// and odd lanes are the patch's four columns for 16 consecutive tiles. Into v (f32), or
// with `pairs` set into pairs as bf16 (fusor_rt_winograd_input_bf16; v is then unused).
__attribute__((target("avx512f"))) void input_avx512(const float* x, const Geo& g, int64_t t0, int64_t count,
                                                     int64_t nr, float* v, uint32_t* pairs = nullptr) {
  const int64_t c2 = (g.c + 1) / 2;
  __m512 done[2][16];  // bf16: the transforms of the last two channels, ξ = 0..15
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t j = 0; j < count;) {
    const int64_t t = t0 + j, ty = t / g.tx, tx = t % g.tx;
    const int64_t len = std::min<int64_t>({16, g.tx - tx, count - j});
    const int64_t iy0 = 2 * ty - g.pt, s = 2 * tx - g.pl;
    const __mmask16 m0 = column_mask(s, g.w), m1 = column_mask(s + 16, g.w), m2 = column_mask(s + 2, g.w),
                    m3 = column_mask(s + 18, g.w), store = __mmask16((1u << len) - 1u);
    for (int64_t ci = 0; ci < g.c; ++ci) {
      __m512 d[4][4];
      for (int i = 0; i < 4; ++i) {
        const int64_t iy = iy0 + i;
        if (iy < 0 || iy >= g.h) {
          for (int k = 0; k < 4; ++k) d[i][k] = _mm512_setzero_ps();
          continue;
        }
        // Lanes outside the image are masked off (never read), so the row's address may lie
        // before the image's start: computed as an integer, not through pointer arithmetic.
        const float* row = reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(x + ci * g.sc + iy * g.sy) +
                                                          uintptr_t(s * int64_t(sizeof(float))));
        auto at = [&](int64_t k) { return reinterpret_cast<const float*>(reinterpret_cast<uintptr_t>(row) + uintptr_t(k * 4)); };
        const __m512 a = _mm512_maskz_loadu_ps(m0, at(0)), b = _mm512_maskz_loadu_ps(m1, at(16));
        const __m512 c = _mm512_maskz_loadu_ps(m2, at(2)), e = _mm512_maskz_loadu_ps(m3, at(18));
        d[i][0] = _mm512_permutex2var_ps(a, even, b);
        d[i][1] = _mm512_permutex2var_ps(a, odd, b);
        d[i][2] = _mm512_permutex2var_ps(c, even, e);
        d[i][3] = _mm512_permutex2var_ps(c, odd, e);
      }
      __m512 w[4][4];
      for (int k = 0; k < 4; ++k) {
        w[0][k] = _mm512_sub_ps(d[0][k], d[2][k]);
        w[1][k] = _mm512_add_ps(d[1][k], d[2][k]);
        w[2][k] = _mm512_sub_ps(d[2][k], d[1][k]);
        w[3][k] = _mm512_sub_ps(d[1][k], d[3][k]);
      }
      for (int a = 0; a < 4; ++a) {
        const __m512 o[4] = {_mm512_sub_ps(w[a][0], w[a][2]), _mm512_add_ps(w[a][1], w[a][2]),
                             _mm512_sub_ps(w[a][2], w[a][1]), _mm512_sub_ps(w[a][1], w[a][3])};
        for (int b = 0; b < 4; ++b) {
          if (pairs)
            done[ci % 2][a * 4 + b] = o[b];
          else
            _mm512_mask_storeu_ps(v + ((a * 4 + b) * g.c + ci) * nr + j, store, o[b]);
        }
      }
      if (pairs && (ci % 2 == 1 || ci + 1 == g.c))
        store_pairs(done[0], ci % 2 ? done[1] : nullptr, store, c2 * nr, pairs + (ci / 2) * nr + j);
    }
    j += len;
  }
}

}  // namespace

namespace {
void zero_tail(const Geo& g, int64_t count, int64_t nr, float* v) {
  if (count < nr)
    for (int64_t r = 0; r < 16 * g.c; ++r) std::memset(v + r * nr + count, 0, size_t(nr - count) * sizeof(float));
}
}  // namespace

extern "C" void fusor_rt_winograd_input(const float* x, const int64_t* geo, int64_t t0, int64_t count, int64_t nr,
                                        float* v) {
  const Geo g(geo);
  if (__builtin_cpu_supports("avx512f")) {
    input_avx512(x, g, t0, count, nr, v);
  } else {
    input_scalar(x, g, t0, count, nr, v);
  }
  zero_tail(g, count, nr, v);
}

extern "C" void fusor_rt_winograd_input_bf16(const float* x, const int64_t* geo, int64_t t0, int64_t count, int64_t nr,
                                             uint32_t* v) {
  const Geo g(geo);
  const int64_t c2 = (g.c + 1) / 2;
  static const bool vector = fusor::host_bf16().avx512_bf16 && __builtin_cpu_supports("avx512bw");
  if (vector) {
    input_avx512(x, g, t0, count, nr, nullptr, v);
  } else {  // (bf16 kernels run only where the vector path does; this keeps the entry total)
    std::vector<float> f(size_t(16 * g.c * nr));
    input_scalar(x, g, t0, count, nr, f.data());
    fusor::pair_channels(f.data(), 16, g.c, nr, v);
  }
  if (count < nr)
    for (int64_t r = 0; r < 16 * c2; ++r) std::memset(v + r * nr + count, 0, size_t(nr - count) * sizeof(uint32_t));
}

extern "C" void fusor_rt_winograd_input_portable(const float* x, const int64_t* geo, int64_t t0, int64_t count,
                                                 int64_t nr, float* v) {
  const Geo g(geo);
  input_scalar(x, g, t0, count, nr, v);
  zero_tail(g, count, nr, v);
}
