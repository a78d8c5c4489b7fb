// The runtime's panel packing (codegen/packing.h, Note [Packed layouts]) on operands read
// transposed (k contiguous, columns apart: attention's Kᵀ, a MatMul of a transposed
// activation), where the bf16 vector path loads each column's run and transposes 16 x 16
// blocks of pairs (f32 packs them by its scalar loop):
// every element of the panel, zeros past the valid columns and the pairs' odd-k halves
// included, against the layout's definition, in f32 and in bf16 pairs. Sizes around the
// 16-wide blocks: k and the valid columns at 1, 15-17, 32-33, and panels 16-64 wide.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "codegen/packing.h"
#include "codegen/precision.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

struct PanelShape {
  int64_t k, n_valid, nr, sn;
};

std::vector<PanelShape> shapes() {
  std::vector<PanelShape> s;
  for (int64_t k : {1, 2, 15, 16, 17, 33, 64, 100})
    for (int64_t nr : {16, 48, 64})
      for (int64_t n_valid : {1, 15, 16, 17, 48, 64})
        if (n_valid <= nr) s.push_back({k, n_valid, nr, k + 3});
  s.push_back({64, 48, 48, 2304});  // a head of merged QKV: keys 2304 floats apart
  return s;
}

}  // namespace

TEST_SUITE("codegen/packing") {
  TEST_CASE("an f32 panel of a transposed operand holds every column's run, zeros past the valid columns") {
    for (const PanelShape& z : shapes()) {
      CAPTURE(z.k);
      CAPTURE(z.n_valid);
      CAPTURE(z.nr);
      const std::vector<float> src = test::normal_floats(size_t(z.n_valid * z.sn), uint32_t(z.k * 100 + z.n_valid));
      std::vector<float> got(size_t(z.k * z.nr), -7.0f), want(got.size(), 0.0f);
      for (int64_t kk = 0; kk < z.k; ++kk)
        for (int64_t j = 0; j < z.n_valid; ++j) want[size_t(kk * z.nr + j)] = src[size_t(j * z.sn + kk)];
      fusor_rt_pack_panel(src.data(), 1, z.sn, z.k, z.n_valid, z.nr, got.data());
      CHECK(got == want);
    }
  }

  TEST_CASE("a bf16 panel of a transposed operand holds every column's pairs of k, rounded as to_bf16") {
    for (const PanelShape& z : shapes()) {
      CAPTURE(z.k);
      CAPTURE(z.n_valid);
      CAPTURE(z.nr);
      const std::vector<float> src = test::normal_floats(size_t(z.n_valid * z.sn), uint32_t(z.k * 100 + z.n_valid + 1));
      const int64_t k2 = (z.k + 1) / 2;
      std::vector<uint32_t> got(size_t(k2 * z.nr), 0xdeadbeefu), want(got.size(), 0u);
      for (int64_t q = 0; q < k2; ++q)
        for (int64_t j = 0; j < z.n_valid; ++j)
          want[size_t(q * z.nr + j)] =
              bf16_pair(src[size_t(j * z.sn + 2 * q)], 2 * q + 1 < z.k ? src[size_t(j * z.sn + 2 * q + 1)] : 0.0f);
      fusor_rt_pack_panel_bf16(src.data(), 1, z.sn, z.k, z.n_valid, z.nr, got.data());
      CHECK(got == want);
    }
  }
}
