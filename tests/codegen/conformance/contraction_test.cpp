// The contraction kernels of every host JIT backend (tests/support/host_jit.h): every
// Contraction group of small graphs (MatMul and Gemm with transposes, batches and broadcast
// batches, bias / GELU / residual epilogues; Conv2d with strides, padding, dilation and
// groups, BN folded, ReLU and residual epilogues) is lowered, compiled, run serially and
// split over a thread pool, and compared with the static kernels (OpenBLAS, node by node)
// and the spec interpreter (double precision). What only one backend has (its micro-kernel's
// code, its tiling, Winograd, prepacked weights, objects reloaded, bf16, declined sizes) is
// in tests/codegen/llvm/contraction_test.cpp and tests/codegen/asmjit/gemm_test.cpp.
//
// Tolerance (test::contraction_tol, tests/support/contraction_util.h, which reasons it), per
// element |got - want| <= 1e-5 * |want| + 2e-6 * sqrt(k) * s, s the magnitude of the
// products summed. The serial and pooled runs must agree exactly (a tile's sum does not
// depend on the split).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <tuple>

#include "codegen/lower.h"
#include "ir/text_format.h"
#include "tests/support/contraction_util.h"
#include "tests/support/host_jit.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

using test::Checked;
using test::check_contractions;
using test::dims;
using test::with;

TEST_SUITE("conformance/contraction") {
  FUSOR_HOST_JIT_TEST_CASE("matmul with a bias across sizes around the tiles") {
    JitBackend& be = *jit.backend;
    for (const auto& s : test::kMatmulSweep) {
      const int64_t m = s[0], k = s[1], n = s[2];
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(test::matmul_bias_graph(1, m, k, n), {});
      CHECK(check_contractions(be, f, {{"a", test::randn({1, m, k}, uint64_t(m * 1000 + n))}}).kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("matmul with gelu and residual epilogues") {
    JitBackend& be = *jit.backend;
    FusedGraph f = test::fuse_text(R"(graph g
input a: f32[2, 19, 40]
input r: f32[2, 19, 70]
const w: f32[40, 70] = randn(seed=1, std=0.3)
const bias: f32[70] = randn(seed=2, std=0.1)
m = MatMul(a, w)
h = Add(m, bias)
g = Gelu(h)
y = Add(g, r)
z = Relu(y)
output z
)",
                                   {});
    CHECK(check_contractions(be, f, {{"a", test::randn({2, 19, 40}, 1)}, {"r", test::randn({2, 19, 70}, 2)}}, 0.3).kernels == 1);
  }

  FUSOR_HOST_JIT_TEST_CASE("cheap epilogues on the accumulator registers with strided and broadcast operands") {
    JitBackend& be = *jit.backend;
    // Full tiles (m a multiple of 6 and 4, n of 32 and 16) take the in-register epilogue,
    // the others mix it with the tile path. The residual is read transposed (n-stride m),
    // the row bias broadcast along n (n-stride 0).
    for (const auto& row : {std::pair<int64_t, int64_t>{24, 64}, {12, 32}, {25, 70}, {6, 33}}) {
      const auto& m = std::get<0>(row);
      const auto& n = std::get<1>(row);
      CAPTURE(m);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(with(R"(graph g
input a: f32[2, @M@, 40]
input r: f32[2, @N@, @M@]
const w: f32[40, @N@] = randn(seed=1, std=0.3)
const bias: f32[@N@] = randn(seed=2, std=0.1)
const rowb: f32[@M@, 1] = randn(seed=3, std=0.1)
const half: f32[] = [0.5]
rt = Transpose(r) {perm=[0, 2, 1]}
m = MatMul(a, w)
h = Add(m, bias)
h2 = Add(h, rowb)
s = Mul(h2, half)
y = Add(s, rt)
z = Relu(y)
output z
)",
                                          {{"@M@", std::to_string(m)}, {"@N@", std::to_string(n)}}),
                                     {});
      CHECK(check_contractions(be, f, {{"a", test::randn({2, m, 40}, 1)}, {"r", test::randn({2, n, m}, 2)}}, 0.3).kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("batched matmul of two activations with transposes and broadcast batches") {
    JitBackend& be = *jit.backend;
    // Q·Kᵀ: B's columns are strided (gathered); B is not constant, the kernel packs its
    // panels itself. k 1100: panels beyond asmjit's packing limit, gathered in place.
    // (Plain ints, not a structured binding: clang 14 does not let CAPTURE's lambda see one.)
    for (const std::tuple<int64_t, int64_t, int64_t>& mkn : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 9, 33},
                                                             {16, 64, 17}, {33, 31, 65}, {5, 1100, 37}}) {
      const int64_t m = std::get<0>(mkn), k = std::get<1>(mkn), n = std::get<2>(mkn);
      CAPTURE(m);
      CAPTURE(k);
      CAPTURE(n);
      FusedGraph f = test::fuse_text(test::batched_qkt_graph(m, k, n), {});
      Checked c = check_contractions(be, f, {{"q", test::randn({2, 3, m, k}, 1)}, {"kt", test::randn({2, 3, n, k}, 2)}});
      CHECK(c.kernels == 1);
      for (const auto& kernel : c.compiled) CHECK(kernel->prepacks.empty());  // B is not constant: nothing to pack ahead
    }
    // A 2-D weight broadcast over a batch of 4, and a batch-1 operand broadcast.
    FusedGraph f = test::fuse_text(R"(graph g
input a: f32[4, 1, 11, 13]
input b: f32[1, 3, 13, 21]
y = MatMul(a, b)
output y
)",
                                   {});
    CHECK(check_contractions(be, f, {{"a", test::randn({4, 1, 11, 13}, 3)}, {"b", test::randn({1, 3, 13, 21}, 4)}}).kernels == 1);
  }

  // A case of its own because a backend may decline it (llvm: "k too long for a stack
  // panel"), which skips the whole case; asmjit must take it (tests/codegen/asmjit/gemm_test.cpp).
  FUSOR_HOST_JIT_TEST_CASE("batched matmul of two activations whose k is beyond a stack panel") {
    JitBackend& be = *jit.backend;
    const int64_t m = 9, k = 2100, n = 19;
    FusedGraph f = test::fuse_text(test::batched_qkt_graph(m, k, n), {});
    if (!test::takes_or_skip(jit, f, GroupKind::Contraction)) return;
    Checked c = check_contractions(be, f, {{"q", test::randn({2, 3, m, k}, 1)}, {"kt", test::randn({2, 3, n, k}, 2)}});
    CHECK(c.kernels == 1);
    for (const auto& kernel : c.compiled) CHECK(kernel->prepacks.empty());
  }

  FUSOR_HOST_JIT_TEST_CASE("gemm with transposes alpha beta and C") {
    JitBackend& be = *jit.backend;
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        CAPTURE(ta);
        CAPTURE(tb);
        const int64_t m = 23, k = 37, n = 41;
        std::string a_shape = ta ? dims({k, m}) : dims({m, k}), b_shape = tb ? dims({n, k}) : dims({k, n});
        FusedGraph f = test::fuse_text("graph g\ninput a: f32[" + a_shape + "]\nconst b: f32[" + b_shape +
                                           "] = randn(seed=3, std=1)\nconst c: f32[" + dims({n}) +
                                           "] = randn(seed=4, std=1)\ny = Gemm(a, b, c) {alpha=0.5, beta=2.0, transA=" +
                                           std::to_string(ta) + ", transB=" + std::to_string(tb) + "}\noutput y\n",
                                       {});
        CHECK(check_contractions(be, f, {{"a", ta ? test::randn({k, m}, 5) : test::randn({m, k}, 5)}}).kernels == 1);
      }
  }

  FUSOR_HOST_JIT_TEST_CASE("convolutions with strides padding dilation and groups") {
    JitBackend& be = *jit.backend;
    for (const test::ConvCase& v : test::kConvSweep) {
      CAPTURE(test::conv_case_str(v));
      FusedGraph f = test::fuse_text(test::conv_case_graph(v), {});
      CHECK(check_contractions(be, f, {{"x", test::randn({v.n, v.c, v.h, v.w}, 9)}}).kernels == 1);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("the resnet bottleneck's convolutions with folded batchnorm and the residual") {
    JitBackend& be = *jit.backend;
    Graph g = load_graph(FUSOR_SOURCE_DIR "/examples/graphs/resnet_bottleneck");
    for (const auto& row : {std::pair<int64_t, int64_t>{9, 9}, {14, 11}, {56, 56}}) {
      const auto& h = std::get<0>(row);
      const auto& w = std::get<1>(row);
      CAPTURE(h);
      CAPTURE(w);
      FusedGraph f = test::fuse_text(print_graph(g), {{"N", 1}, {"H", h}, {"W", w}});
      CHECK(check_contractions(be, f, {{"x", test::randn({1, 256, h, w}, 11)}}, 1.0, h < 20).kernels == 3);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("a convolution with a gelu and residual epilogue") {
    JitBackend& be = *jit.backend;
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[2, 6, 9, 11]
input r: f32[2, 10, 9, 11]
const w: f32[10, 6, 3, 3] = randn(seed=1, std=0.15)
const b: f32[10] = randn(seed=2, std=0.1)
c = Conv(x, w, b) {pads=[1, 1, 1, 1]}
g = Gelu(c)
y = Add(g, r)
output y
)",
                                   {});
    CHECK(check_contractions(be, f, {{"x", test::randn({2, 6, 9, 11}, 1)}, {"r", test::randn({2, 10, 9, 11}, 2)}}).kernels == 1);
  }

}
