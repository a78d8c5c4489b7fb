// Winograd F(2x2, 3x3) (codegen/winograd.h, Note [Winograd convolutions]): the transformed
// weights' layout, the input transform's vector path against its portable path, and the
// algebra itself — Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A of packed weights and transformed patches
// equals the direct 3x3 correlation, in double, to rounding. The kernels built on them are
// tested against the static convolution in tests/codegen/llvm/contraction_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "codegen/index_math.h"
#include "codegen/precision.h"
#include "codegen/winograd.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// A contiguous [m, c, 3, 3] weight and [1, c, h, w] image convolution spec.
ContractionSpec conv_spec(int64_t c, int64_t m, int64_t h, int64_t w, int64_t pad_t, int64_t pad_l, int64_t pad_b,
                          int64_t pad_r) {
  ContractionSpec s;
  s.kind = ContractionSpec::Kind::Conv2d;
  Conv2dParams& p = s.conv;
  p.n = 1;
  p.c = c;
  p.m = m;
  p.h = h;
  p.w = w;
  p.kh = p.kw = 3;
  p.stride_h = p.stride_w = p.dil_h = p.dil_w = p.group = 1;
  p.pad_t = pad_t;
  p.pad_l = pad_l;
  p.oh = h + pad_t + pad_b - 2;
  p.ow = w + pad_l + pad_r - 2;
  s.a.strides = {c * h * w, h * w, w, 1};
  s.b.strides = {c * 9, 9, 3, 1};
  return s;
}

std::vector<int64_t> geo_of(const ContractionSpec& s) {
  const Conv2dParams& p = s.conv;
  std::vector<int64_t> g(kWgCount);
  g[kWgC] = p.c;
  g[kWgH] = p.h;
  g[kWgW] = p.w;
  g[kWgPadT] = p.pad_t;
  g[kWgPadL] = p.pad_l;
  g[kWgTilesX] = ceil_div(p.ow, 2);
  g[kWgStrideC] = p.h * p.w;
  g[kWgStrideY] = p.w;
  return g;
}

}  // namespace

TEST_SUITE("codegen/winograd") {
  TEST_CASE("applies to 3x3 stride-1 undilated ungrouped convolutions only") {
    ContractionSpec s = conv_spec(16, 16, 8, 8, 1, 1, 1, 1);
    CHECK(winograd_applies(s));
    ContractionSpec strided = s;
    strided.conv.stride_w = 2;
    CHECK_FALSE(winograd_applies(strided));
    ContractionSpec dilated = s;
    dilated.conv.dil_h = 2;
    CHECK_FALSE(winograd_applies(dilated));
    ContractionSpec grouped = s;
    grouped.conv.group = 2;
    CHECK_FALSE(winograd_applies(grouped));
    ContractionSpec k5 = s;
    k5.conv.kh = 5;
    CHECK_FALSE(winograd_applies(k5));
    ContractionSpec gemm;
    CHECK_FALSE(winograd_applies(gemm));
    CHECK(winograd_tiles(conv_spec(1, 1, 7, 9, 1, 1, 1, 1).conv) == 4 * 5);
  }

  TEST_CASE("the vector input transform matches the portable one on every tile and edge") {
    // Odd sizes, asymmetric and no padding, panels that start mid tile-row and run across
    // rows, partial panels (zero tails), images narrower than a vector of tiles.
    struct Case {
      int64_t c, h, w, pt, pl, pb, pr;
    };
    for (const Case& k : {Case{3, 9, 11, 1, 1, 1, 1}, Case{2, 7, 7, 0, 0, 0, 0}, Case{4, 12, 40, 1, 2, 0, 1},
                          Case{1, 5, 3, 1, 1, 1, 1}, Case{5, 33, 35, 1, 1, 1, 1}, Case{2, 4, 70, 2, 0, 1, 2}}) {
      CAPTURE(k.h);
      CAPTURE(k.w);
      const ContractionSpec s = conv_spec(k.c, 1, k.h, k.w, k.pt, k.pl, k.pb, k.pr);
      const std::vector<int64_t> geo = geo_of(s);
      const std::vector<float> x = test::normal_floats(size_t(k.c * k.h * k.w), 7);
      const int64_t tiles = winograd_tiles(s.conv);
      for (int64_t nr : {16, 48}) {
        for (int64_t t0 = 0; t0 < tiles; t0 += nr / 2 + 1) {
          const int64_t count = std::min(nr, tiles - t0);
          std::vector<float> fast(size_t(16 * k.c * nr), -1.0f), slow(size_t(16 * k.c * nr), -2.0f);
          fusor_rt_winograd_input(x.data(), geo.data(), t0, count, nr, fast.data());
          fusor_rt_winograd_input_portable(x.data(), geo.data(), t0, count, nr, slow.data());
          CHECK(std::memcmp(fast.data(), slow.data(), fast.size() * sizeof(float)) == 0);
        }
      }
    }
  }

  TEST_CASE("the bf16 input transform is the f32 one rounded to pairs of channels") {
    // Odd and even channel counts (the last pair's high half 0), partial panels (zero
    // tails), panels across tile rows. Bit for bit: the vector path (vcvtne2ps2bf16 where
    // the CPU has AVX512-BF16) rounds as to_bf16 does.
    struct Case {
      int64_t c, h, w;
    };
    for (const Case& k : {Case{1, 5, 7}, Case{2, 9, 11}, Case{3, 12, 40}, Case{5, 33, 35}, Case{16, 8, 8}}) {
      CAPTURE(k.c);
      CAPTURE(k.w);
      const ContractionSpec s = conv_spec(k.c, 1, k.h, k.w, 1, 1, 1, 1);
      const std::vector<int64_t> geo = geo_of(s);
      const std::vector<float> x = test::normal_floats(size_t(k.c * k.h * k.w), 5);
      const int64_t tiles = winograd_tiles(s.conv), c2 = (k.c + 1) / 2;
      for (int64_t nr : {16, 48}) {
        for (int64_t t0 = 0; t0 < tiles; t0 += nr - 3) {
          const int64_t count = std::min(nr, tiles - t0);
          std::vector<float> f32(size_t(16 * k.c * nr));
          fusor_rt_winograd_input_portable(x.data(), geo.data(), t0, count, nr, f32.data());
          std::vector<uint32_t> want(size_t(16 * c2 * nr)), got(want.size(), 0xdeadbeefu);
          for (int64_t xi = 0; xi < 16; ++xi)
            for (int64_t q = 0; q < c2; ++q)
              for (int64_t j = 0; j < nr; ++j)
                want[size_t((xi * c2 + q) * nr + j)] =
                    bf16_pair(f32[size_t((xi * k.c + 2 * q) * nr + j)],
                              2 * q + 1 < k.c ? f32[size_t((xi * k.c + 2 * q + 1) * nr + j)] : 0.0f);
          fusor_rt_winograd_input_bf16(x.data(), geo.data(), t0, count, nr, got.data());
          CHECK(got == want);
        }
      }
    }
  }

  TEST_CASE("the bf16 transformed weights are the f32 ones as pairs of channels") {
    for (int64_t c : {1, 4, 7}) {
      CAPTURE(c);
      const int64_t m = 5, mr = 4, mtiles = ceil_div(m, mr), c2 = (c + 1) / 2;
      const ContractionSpec s = conv_spec(c, m, 6, 6, 1, 1, 1, 1);
      const std::vector<float> wt = test::normal_floats(size_t(m * c * 9), 6);
      std::vector<float> u(size_t(winograd_weight_floats(s, mr)));
      pack_winograd_weights(s, mr, wt.data(), u.data());
      REQUIRE(winograd_weight_floats(s, mr, true) == 16 * mtiles * c2 * mr);
      std::vector<uint32_t> pairs(size_t(winograd_weight_floats(s, mr, true)), 0xdeadbeefu);
      pack_winograd_weights_bf16(s, mr, wt.data(), pairs.data());
      for (int64_t blk = 0; blk < 16 * mtiles; ++blk)
        for (int64_t q = 0; q < c2; ++q)
          for (int64_t i = 0; i < mr; ++i) {
            const uint32_t p = pairs[size_t((blk * c2 + q) * mr + i)];
            const uint32_t lo = p & 0xffffu;
            CHECK(lo == to_bf16(u[size_t((blk * c + 2 * q) * mr + i)]));
            const uint32_t hi = 2 * q + 1 < c ? to_bf16(u[size_t((blk * c + 2 * q + 1) * mr + i)]) : 0u;
            const uint32_t top = p >> 16;
            CHECK(top == hi);
          }
    }
  }

  TEST_CASE("transformed weights times transformed patches give the direct convolution") {
    const int64_t c = 3, m = 5, h = 6, w = 7, mr = 4;
    const ContractionSpec s = conv_spec(c, m, h, w, 1, 1, 1, 1);
    const Conv2dParams& p = s.conv;
    const std::vector<float> x = test::normal_floats(size_t(c * h * w), 3), wt = test::normal_floats(size_t(m * c * 9), 4);
    std::vector<float> u(size_t(winograd_weight_floats(s, mr)));
    pack_winograd_weights(s, mr, wt.data(), u.data());
    const int64_t tiles = winograd_tiles(p), mtiles = ceil_div(m, mr), nr = 16;
    // Rows past M are zero.
    for (int64_t xi = 0; xi < 16; ++xi)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t i = m % mr; i < mr; ++i) CHECK(u[size_t(((xi * mtiles + mtiles - 1) * c + ci) * mr + i)] == 0.0f);
    const std::vector<int64_t> geo = geo_of(s);
    std::vector<float> v(size_t(16 * c * nr));
    fusor_rt_winograd_input_portable(x.data(), geo.data(), 0, tiles, nr, v.data());
    for (int64_t mo = 0; mo < m; ++mo)
      for (int64_t t = 0; t < tiles; ++t) {
        double mm[16] = {};
        for (int xi = 0; xi < 16; ++xi)
          for (int64_t ci = 0; ci < c; ++ci)
            mm[xi] += double(u[size_t(((xi * mtiles + mo / mr) * c + ci) * mr + mo % mr)]) * double(v[size_t((xi * c + ci) * nr + t)]);
        double r[2][4];
        for (int b = 0; b < 4; ++b) {
          r[0][b] = mm[b] + mm[4 + b] + mm[8 + b];
          r[1][b] = mm[4 + b] - mm[8 + b] - mm[12 + b];
        }
        const int64_t ty = t / ceil_div(p.ow, 2), tx = t % ceil_div(p.ow, 2);
        for (int a = 0; a < 2; ++a)
          for (int b = 0; b < 2; ++b) {
            const int64_t oy = 2 * ty + a, ox = 2 * tx + b;
            if (oy >= p.oh || ox >= p.ow) continue;
            const double got = b == 0 ? r[a][0] + r[a][1] + r[a][2] : r[a][1] - r[a][2] - r[a][3];
            double want = 0, scale = 0;
            for (int64_t ci = 0; ci < c; ++ci)
              for (int ky = 0; ky < 3; ++ky)
                for (int kx = 0; kx < 3; ++kx) {
                  const int64_t iy = oy - p.pad_t + ky, ix = ox - p.pad_l + kx;
                  if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                  const double term = double(wt[size_t(((mo * c + ci) * 3 + ky) * 3 + kx)]) * double(x[size_t((ci * h + iy) * w + ix)]);
                  want += term;
                  scale += std::fabs(term);
                }
            CAPTURE(mo);
            CAPTURE(oy);
            CAPTURE(ox);
            CHECK(std::fabs(got - want) <= 1e-5 * (scale + 1));  // the transforms' float roundings
          }
      }
  }
}
