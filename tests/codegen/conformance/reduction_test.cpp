// The row reduction kernels of every host JIT backend (tests/support/host_jit.h): every
// Reduction group of small graphs (softmax with scale and mask prologues, layernorm with
// residual prologues, ReduceSum/Mean/Max) is lowered, compiled, run over all its rows
// (serially, then split over a thread pool) and compared with BOTH the spec interpreter
// (the meaning, in double) and the static kernels run node by node. What only one backend
// has (its code, its scratch rows, its declines) is in tests/codegen/<backend>/reduction_test.cpp.
//
// Tolerances, per element |got - want| <= rel * |want| + abs (NaN equals NaN); the backends'
// kernels are the same passes, only the order of the float lane sums differs (Note [asmjit
// row reductions]):
//   split          exact: a row is one task, its sums do not depend on the split.
//   softmax        vs interpreter rel 2e-5: exp's 1.1 ulp, the float x - max (half an ulp
//                  of |x - max| carried through exp: |x - max| ulp, below 20 here), the
//                  prologue's float rounding carried the same way, the float lane sums
//                  (Note [Row statistics]: a few ulp), 1/Σ rounded to float; abs 1e-30
//                  for the underflowed tail. vs static rel 2e-6: the same exp on the same
//                  floats, only the sums' order differs (static: 32 lanes, blocks of 1024).
//   layernorm      vs interpreter rel 1e-5, abs 1e-5: the output is (x - mean) * rstd with
//                  |output| up to ~4 here; mean and rstd carry a few ulp of the float sums
//                  and the float products an ulp each (abs: outputs near 0 whose x - mean
//                  cancels). vs static the same (the static kernel fuses *gamma + beta and
//                  does not correct its mean).
//   sum / mean     vs interpreter and static rel 1e-5, abs 1e-5 (float lanes within blocks
//                  of 256, double across blocks; static: double).
//   max            exact.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <map>

#include "codegen/cpu_rules.h"
#include "codegen/lower.h"
#include "tests/support/host_jit.h"
#include "tests/support/kernel_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

using test::Checked;
using test::Tol;
using test::with;

// Every Reduction group of f through `be`, checked (tests/support/kernel_util.h).
Checked check_reduction(JitBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs, const Tol& tol) {
  Checked c = test::check_groups(be, f, inputs, GroupKind::Reduction, [&](const KernelSpec&) { return tol; });
  for (const KernelSpec& s : c.specs) CHECK(s.kind == KernelKind::RowReduction);
  return c;
}

const Tol kSoftmax{2e-5, 1e-30, 2e-6, 1e-30};
const Tol kLayerNorm{1e-5, 1e-5, 1e-5, 1e-5};
const Tol kReduce{1e-5, 1e-5, 1e-5, 1e-5};

}  // namespace

TEST_SUITE("conformance/reduction") {
  FUSOR_HOST_JIT_TEST_CASE("softmax over the last axis across row lengths") {
    JitBackend& be = *jit.backend;
    for (int64_t cols : {1, 7, 8, 9, 15, 16, 17, 128, 255, 256, 257, 1000, 4097, 10000}) {
      CAPTURE(cols);
      FusedGraph f = test::fuse_text(
          with("graph g\ninput x: f32[3, @C@]\ny = Softmax(x) {axis=-1}\noutput y\n", {{"@C@", std::to_string(cols)}}), {});
      Checked c = check_reduction(be, f, {{"x", test::randn({3, cols}, uint64_t(cols), 3.0)}}, kSoftmax);
      CHECK(c.kernels == 1);
      CHECK(reduction_uses_scratch(c.specs[0]) == (cols <= 8192));  // codegen/cpu_rules.h, both x86 backends
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("scale and broadcast masks fuse into the softmax kernel") {
    JitBackend& be = *jit.backend;
    for (int64_t t : {1, 17, 128}) {
      CAPTURE(t);
      const std::string text = with(R"(graph g
input s: f32[2, 3, @T@, @T@]
input m: f32[2, 1, 1, @T@]
input causal: f32[@T@, @T@]
input keep: bool[1, 1, @T@, @T@]
const scale: f32[] = [0.125]
const neg: f32[] = [-10000.0]
a = Mul(s, scale)
b = Add(a, m)
p = Softmax(b) {axis=-1}
c = Add(a, causal)
q = Softmax(c) {axis=-1}
w = Where(keep, a, neg)
r = Softmax(w) {axis=-1}
output p
output q
output r
)",
                                    {{"@T@", std::to_string(t)}});
      FusedGraph f = test::fuse_text(text, {});
      std::vector<double> causal(size_t(t * t)), keep(size_t(t * t));
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < t; ++j) {
          causal[size_t(i * t + j)] = j <= i ? 0.0 : -double(kInf);
          keep[size_t(i * t + j)] = (i + 2 * j) % 3 != 0 || j == 0;
        }
      std::map<std::string, Tensor> in{{"s", test::randn({2, 3, t, t}, 1, 8.0)},
                                       {"m", test::uniform({2, 1, 1, t}, 2, -3, 0)},
                                       {"causal", test::make(DType::F32, Shape{t, t}, causal)},
                                       {"keep", test::make(DType::Bool, Shape{1, 1, t, t}, keep)}};
      Checked c = check_reduction(be, f, in, kSoftmax);
      CHECK(c.kernels == 3);
      for (const KernelSpec& s : c.specs) {
        CHECK(s.reduction.prologue.nodes.size() > 1);  // the scale and mask are in the kernel
        CHECK(reduction_uses_scratch(s) == (t <= 8192));
        CHECK(reduction_keeps_x(s));
      }
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("softmax of huge values and of -inf rows matches the static kernel") {
    JitBackend& be = *jit.backend;
    // Row 0: huge finite values; row 1: -inf masks among finite values (exactly 0); row 2:
    // all -inf: max is -inf, x - max NaN, so the row is NaN as on the static kernel (and the
    // interpreter); row 3: one NaN, which reaches the whole row through exp; row 4: +inf
    // (inf - inf is NaN); row 5: -3e38 and 3e38 (x - max overflows to -inf: exactly 0).
    const double inf = double(kInf), nan = std::numeric_limits<double>::quiet_NaN();
    for (int64_t cols : {19, 40}) {
      CAPTURE(cols);
      std::vector<double> v;
      for (int64_t j = 0; j < cols; ++j) v.push_back(j % 3 == 0 ? 1e30 : j % 3 == 1 ? -1e30 : 1e29 * double(j));
      for (int64_t j = 0; j < cols; ++j) v.push_back(j % 2 ? -inf : double(j) * 0.25);
      for (int64_t j = 0; j < cols; ++j) v.push_back(-inf);
      for (int64_t j = 0; j < cols; ++j) v.push_back(j == 5 ? nan : double(j));
      for (int64_t j = 0; j < cols; ++j) v.push_back(j == 3 ? inf : double(j));
      for (int64_t j = 0; j < cols; ++j) v.push_back(j % 2 ? -3e38 : 3e38);
      const int64_t rows = int64_t(v.size()) / cols;
      for (const char* mask : {"", "mask"}) {
        const std::string m = mask;
        CAPTURE(m);
        std::string text = "graph g\ninput x: f32[@R@, @C@]\ninput k: f32[@C@]\n";
        text += m.empty() ? "y = Softmax(x) {axis=-1}\n" : "a = Add(x, k)\ny = Softmax(a) {axis=-1}\n";
        text += "output y\n";
        FusedGraph f = test::fuse_text(with(text, {{"@R@", std::to_string(rows)}, {"@C@", std::to_string(cols)}}), {});
        std::vector<double> k(size_t(cols), 0.0);
        for (int64_t j = 0; j < cols; j += 4) k[size_t(j)] = -inf;
        k[1] = 0.5;
        std::map<std::string, Tensor> in{{"x", test::make(DType::F32, Shape{rows, cols}, v)},
                                         {"k", test::make(DType::F32, Shape{cols}, k)}};
        CHECK(check_reduction(be, f, in, kSoftmax).kernels == 1);
        // The all -inf row is NaN (the definition of the static kernel).
        std::vector<Tensor> values = test::run_all_static(f, in, test::pool());
        const Tensor& y = values[size_t(f.graph.find_value("y"))];
        for (int64_t j = 0; j < cols; ++j) CHECK(std::isnan(y.at(2 * cols + j)));
      }
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("layernorm with and without bias and a residual prologue") {
    JitBackend& be = *jit.backend;
    for (int64_t cols : {1, 7, 8, 16, 17, 768, 1000, 9000}) {
      for (const char* eps : {"1e-12", "1e-05"}) {
        for (int variant = 0; variant < 3; ++variant) {  // plain, no bias, residual
          CAPTURE(cols);
          const std::string eps_text = eps;
          CAPTURE(eps_text);
          CAPTURE(variant);
          std::string text = "graph g\ninput x: f32[5, @C@]\ninput r: f32[5, @C@]\ninput g: f32[@C@]\ninput b: f32[@C@]\n";
          if (variant == 0) text += "y = LayerNormalization(x, g, b) {axis=-1, epsilon=@E@}\n";
          if (variant == 1) text += "y = LayerNormalization(x, g) {axis=-1, epsilon=@E@}\n";
          if (variant == 2) text += "s = Add(x, r)\ny = LayerNormalization(s, g, b) {axis=-1, epsilon=@E@}\n";
          text += "output y\n";
          FusedGraph f = test::fuse_text(with(text, {{"@C@", std::to_string(cols)}, {"@E@", eps}}), {});
          // Rows 0..3 random around an offset (the mean matters); row 4 constant 3.0 (exact
          // float sums: the static kernel's uncorrected mean is exact too).
          Tensor x = test::randn({5, cols}, 1, 2.0);
          for (int64_t j = 0; j < cols; ++j) {
            for (int64_t i = 0; i < 4; ++i) x.set(i * cols + j, x.at(i * cols + j) + 10.0);
            x.set(4 * cols + j, 3.0);
          }
          Tensor r = test::randn({5, cols}, 2, 0.5);
          for (int64_t j = 0; j < cols; ++j) r.set(4 * cols + j, 0.0);
          Checked c = check_reduction(
              be, f, {{"x", x}, {"r", r}, {"g", test::uniform({cols}, 3, 0.5, 1.5)}, {"b", test::randn({cols}, 4)}},
              kLayerNorm);
          CHECK(c.kernels == 1);
          CHECK(reduction_uses_scratch(c.specs[0]) == (variant == 2 && cols <= 8192));
        }
      }
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("softmax and layernorm of transposed views read with strides") {
    JitBackend& be = *jit.backend;
    for (int64_t cols : {1, 9, 17, 40}) {
      CAPTURE(cols);
      const std::string text = with(R"(graph g
input x: f32[@C@, 6]
input g: f32[5]
input b: f32[5]
input z: f32[5, @C@]
t = Transpose(x) {perm=[1, 0]}
p = Softmax(t) {axis=-1}
zt = Transpose(z) {perm=[1, 0]}
q = LayerNormalization(zt, g, b) {axis=-1, epsilon=1e-5}
u = ReduceSum(t) {axes=[-1], keepdims=0}
output p
output q
output u
)",
                                    {{"@C@", std::to_string(cols)}});
      FusedGraph f = test::fuse_text(text, {});
      std::map<std::string, Tensor> in{{"x", test::randn({cols, 6}, 1, 2.0)}, {"g", test::uniform({5}, 2, 0.5, 1.5)},
                                       {"b", test::randn({5}, 3)}, {"z", test::randn({5, cols}, 4)}};
      Tol tol{2e-5, 1e-5, 1e-5, 1e-5};
      Checked c = check_reduction(be, f, in, tol);
      CHECK(c.kernels >= 2);
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("layernorm of constant rows with inexact sums is exact") {
    JitBackend& be = *jit.backend;
    // 0.1f summed 768 times rounds; the corrected mean (Note [Row statistics]) is still
    // exactly 0.1f, so x - mean is 0 and the output is the bias even with eps 1e-12 (an ulp
    // in the mean would be amplified a millionfold). Checked against the interpreter only:
    // the static kernel's uncorrected float mean is off by ulps here.
    FusedGraph f = test::fuse_text(R"(graph g
input x: f32[3, 768]
input g: f32[768]
input b: f32[768]
y = LayerNormalization(x, g, b) {axis=-1, epsilon=1e-12}
output y
)",
                                   {});
    Tensor x = Tensor::empty(DType::F32, Shape{3, 768});
    for (int64_t j = 0; j < 768; ++j) {
      x.set(j, 0.1);
      x.set(768 + j, -7.3);
      x.set(2 * 768 + j, 1e-3);
    }
    Tol tol = kLayerNorm;
    tol.against_static = false;  // the static kernel's uncorrected float mean is off by ulps
    tol.interp_rel = 1e-6;
    tol.interp_abs = 1e-6;
    CHECK(check_reduction(be, f, {{"x", x}, {"g", test::uniform({768}, 3, 0.5, 1.5)}, {"b", test::randn({768}, 4)}}, tol)
              .kernels == 1);
  }

  FUSOR_HOST_JIT_TEST_CASE("reduce sum mean and max over trailing axes") {
    JitBackend& be = *jit.backend;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
      for (const char* axes : {"[-1]", "[-2, -1]", "[1, 2]"}) {
        for (int keep = 0; keep < 2; ++keep) {
          for (int64_t cols : {1, 8, 17, 300}) {
            const std::string op_text = op, axes_text = axes;
            CAPTURE(op_text);
            CAPTURE(axes_text);
            CAPTURE(keep);
            CAPTURE(cols);
            const std::string text = with(R"(graph g
input x: f32[4, 5, @C@]
y = @OP@(x) {axes=@AX@, keepdims=@K@}
r = Relu(x)
z = @OP@(r) {axes=@AX@, keepdims=@K@}
output y
output z
)",
                                          {{"@C@", std::to_string(cols)}, {"@OP@", op}, {"@AX@", axes}, {"@K@", std::to_string(keep)}});
            FusedGraph f = test::fuse_text(text, {});
            Tol tol = op_text == "ReduceMax" ? Tol{0, 0, 0, 0} : kReduce;
            CHECK(check_reduction(be, f, {{"x", test::randn({4, 5, cols}, uint64_t(cols))}}, tol).kernels == 2);
          }
        }
      }
    }
  }

  FUSOR_HOST_JIT_TEST_CASE("reduce max of NaN and -inf rows") {
    JitBackend& be = *jit.backend;
    const double inf = double(kInf), nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v;
    for (int64_t j = 0; j < 40; ++j) v.push_back(-inf);
    for (int64_t j = 0; j < 40; ++j) v.push_back(j == 33 ? nan : -double(j));
    for (int64_t j = 0; j < 40; ++j) v.push_back(j == 0 ? nan : 1e30);
    for (int64_t j = 0; j < 40; ++j) v.push_back(j == 39 ? inf : -1e30);
    FusedGraph f = test::fuse_text("graph g\ninput x: f32[4, 40]\ny = ReduceMax(x) {axes=[-1], keepdims=0}\noutput y\n", {});
    // The interpreter's max skips NaN (std::max); the static kernel's ReduceMax is NaN.
    Tol tol{0, 0, 0, 0};
    tol.interpret = false;
    CHECK(check_reduction(be, f, {{"x", test::make(DType::F32, Shape{4, 40}, v)}}, tol).kernels == 1);
  }

  FUSOR_HOST_JIT_TEST_CASE("malformed row reduction specs are declined with the reason") {
    JitBackend& be = *jit.backend;
    FusedGraph f = test::fuse_text("graph g\ninput x: f32[4, 8]\ny = Softmax(x) {axis=-1}\noutput y\n", {});
    std::string why;
    KernelSpec spec = *lower_group(f, f.groups.back(), &why);
    REQUIRE(be.supports(spec, &why));
    KernelSpec stat_in_prologue = spec;
    ScalarExpr stat{ScalarOp::RowStat, DType::F32};
    stat_in_prologue.reduction.prologue.nodes.push_back(stat);
    KernelSpec no_value = spec;
    no_value.reduction.prologue = ExprGraph{};
    KernelSpec reads_output = spec;
    reads_output.reduction.prologue.accesses[0].buffer = reads_output.reduction.epilogue.accesses[0].buffer;
    reads_output.reduction.prologue.accesses[0].dtype = DType::F32;
    for (const KernelSpec* s : {&stat_in_prologue, &no_value, &reads_output}) {
      std::string reason;
      CHECK_FALSE(be.supports(*s, &reason));
      CHECK_FALSE(reason.empty());
      std::string msg;
      CHECK(test::error_of([&] { be.compile(*s); }, &msg) == ErrorCode::Unsupported);
      CHECK(msg.find(reason) != std::string::npos);
    }
  }
}
