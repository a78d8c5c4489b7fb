// The llvm backend's row reduction kernels: every Reduction group of small graphs (softmax
// with scale and mask prologues, layernorm with residual prologues, ReduceSum/Mean/Max) is
// lowered, compiled by LlvmBackend, run over all its rows (serially, then split over a
// thread pool) and compared with BOTH the spec interpreter (the meaning, in double) and the
// static kernels run node by node.
//
// Tolerances, per element |got - want| <= rel * |want| + abs (NaN equals NaN):
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

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include "codegen/cpu_rules.h"
#include "codegen/llvm/emit_reduction.h"
#include "codegen/llvm/llvm_backend.h"
#include "codegen/lower.h"
#include "codegen/static/static_backend.h"
#include "jit/thread_pool.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/temp_dir.h"
#include "tests/support/llvm_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();



using test::Checked;
using test::Tol;

// Every Reduction group of f through the llvm backend, checked (tests/support/llvm_util.h).
Checked check_reduction(LlvmBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs, const Tol& tol) {
  return test::check_groups(be, f, inputs, GroupKind::Reduction, [&](const KernelSpec&) { return tol; });
}

using test::with;

const Tol kSoftmax{2e-5, 1e-30, 2e-6, 1e-30};
const Tol kLayerNorm{1e-5, 1e-5, 1e-5, 1e-5};
const Tol kReduce{1e-5, 1e-5, 1e-5, 1e-5};

// Whether the assembly has a packed single-precision `inst` on a 256- or 512-bit register.
bool has_packed(const std::string& assembly, const std::string& inst) {
  std::istringstream lines(assembly);
  for (std::string l; std::getline(lines, l);)
    if (l.find(inst) != std::string::npos && (l.find("zmm") != std::string::npos || l.find("ymm") != std::string::npos))
      return true;
  return false;
}

}  // namespace

TEST_SUITE("llvm/reduction") {
  TEST_CASE("softmax over the last axis across row lengths") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    for (int64_t cols : {1, 7, 15, 16, 17, 128, 1000, 4097, 10000}) {
      CAPTURE(cols);
      FusedGraph f = test::fuse_text(
          with("graph g\ninput x: f32[3, @C@]\ny = Softmax(x) {axis=-1}\noutput y\n", {{"@C@", std::to_string(cols)}}), {});
      Checked c = check_reduction(*be, f, {{"x", test::randn({3, cols}, uint64_t(cols), 3.0)}}, kSoftmax);
      CHECK(c.kernels == 1);
    }
  }

  TEST_CASE("scale and broadcast masks fuse into the softmax kernel") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    // An additive [B, 1, 1, T] mask (BERT), a [T, T] additive causal mask of -inf and a bool
    // [1, 1, T, T] mask through Where. (Rows beyond the scratch limit are covered by the
    // plain softmax test: here T x T masks would make them gigabytes.)
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
      Tol tol = kSoftmax;
      tol.interpret = t < 1000;
      Checked c = check_reduction(*be, f, in, tol);
      CHECK(c.kernels == 3);
      for (const KernelSpec& s : c.specs) {
        CHECK(s.reduction.prologue.nodes.size() > 1);  // the scale and mask are in the kernel
        CHECK(reduction_uses_scratch(s) == (t <= 8192));
      }
    }
  }

  TEST_CASE("softmax of huge values and of -inf rows matches the static kernel") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    // Row 0: huge finite values; row 1: -inf masks among finite values (exactly 0); row 2:
    // all -inf: max is -inf, x - max NaN, so the row is NaN as on the static kernel (and the
    // interpreter); row 3: one NaN, which reaches the whole row through exp; row 4: +inf
    // (inf - inf is NaN); row 5: -3e38 and 3e38 (x - max overflows to -inf: exactly 0).
    const double inf = double(kInf), nan = std::numeric_limits<double>::quiet_NaN();
    const int64_t cols = 19;
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
      Checked c = check_reduction(*be, f, in, kSoftmax);
      CHECK(c.kernels == 1);
      // The all -inf row is NaN (the definition of the static kernel).
      std::vector<Tensor> values = test::run_all_static(f, in, test::pool());
      const Tensor& y = values[size_t(f.graph.find_value("y"))];
      for (int64_t j = 0; j < cols; ++j) CHECK(std::isnan(y.at(2 * cols + j)));
    }
  }

  TEST_CASE("layernorm with and without bias and a residual prologue") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    for (int64_t cols : {1, 7, 16, 17, 768, 1000, 9000}) {
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
              *be, f, {{"x", x}, {"r", r}, {"g", test::uniform({cols}, 3, 0.5, 1.5)}, {"b", test::randn({cols}, 4)}},
              kLayerNorm);
          CHECK(c.kernels == 1);
          CHECK(reduction_uses_scratch(c.specs[0]) == (variant == 2 && cols <= 8192));
        }
      }
    }
  }

  TEST_CASE("layernorm of constant rows with inexact sums is exact") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
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
    tol.against_static = false;
    tol.interp_rel = 1e-6;
    tol.interp_abs = 1e-6;
    Checked c = check_reduction(*be, f, {{"x", x}, {"g", test::uniform({768}, 3, 0.5, 1.5)}, {"b", test::randn({768}, 4)}}, tol);
    CHECK(c.kernels == 1);
  }

  TEST_CASE("reduce sum mean and max over trailing axes") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
      for (const char* axes : {"[-1]", "[-2, -1]", "[1, 2]"}) {
        for (int keep = 0; keep < 2; ++keep) {
          for (int64_t cols : {1, 17, 300}) {
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
            Tol tol = kReduce;
            if (op_text == "ReduceMax") tol = Tol{0, 0, 0, 0};
            Checked c = check_reduction(*be, f, {{"x", test::randn({4, 5, cols}, uint64_t(cols))}}, tol);
            CHECK(c.kernels == 2);
          }
        }
      }
    }
  }

  TEST_CASE("reduce max of NaN and -inf rows") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
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
    Checked c = check_reduction(*be, f, {{"x", test::make(DType::F32, Shape{4, 40}, v)}}, tol);
    CHECK(c.kernels == 1);
  }

  TEST_CASE("the row loops are vectorized") {
    LlvmBackend* be0 = test::llvm_backend_or_skip();
    if (!be0) return;
    test::TempDir dir("llvm-reduction");
    LlvmBackend::Options options;
    options.dump_dir = dir.path().string();
    std::unique_ptr<LlvmBackend> be = make_llvm_backend(options);
    struct Case {
      const char* graph;
      std::vector<const char*> packed;  // instructions that must appear on ymm/zmm
    };
    const std::vector<Case> cases = {
        {"s = Mul(x, k)\ny = Softmax(s) {axis=-1}\n", {"vmaxps", "vaddps", "vfmadd", "vmulps"}},
        {"y = Softmax(x) {axis=-1}\n", {"vmaxps", "vaddps", "vmulps"}},
        {"s = Add(x, k)\ny = LayerNormalization(s, g, b) {axis=-1, epsilon=1e-5}\n", {"vaddps", "vsubps", "vmulps"}},
        {"y = LayerNormalization(x, g, b) {axis=-1, epsilon=1e-5}\n", {"vaddps", "vsubps", "vmulps"}},
        {"y = ReduceSum(x) {axes=[-1], keepdims=0}\n", {"vaddps"}},
        {"y = ReduceMax(x) {axes=[-1], keepdims=0}\n", {"vmaxps"}},
    };
    for (const Case& k : cases) {
      const std::string graph = k.graph;
      CAPTURE(graph);
      for (int64_t cols : {768, 20000}) {
        CAPTURE(cols);
        FusedGraph f = test::fuse_text(with("graph g\ninput x: f32[8, @C@]\ninput k: f32[@C@]\ninput g: f32[@C@]\n"
                                            "input b: f32[@C@]\n" + graph + "output y\n",
                                            {{"@C@", std::to_string(cols)}}),
                                       {});
        std::optional<KernelSpec> spec;
        for (const FusionGroup& grp : f.groups) {
          std::string why;
          if (grp.kind == GroupKind::Reduction) spec = lower_group(f, grp, &why);
        }
        REQUIRE(spec);
        std::shared_ptr<const CompiledKernel> kernel = be->compile(*spec);
        std::ifstream s(dir.file(kernel->symbol) + ".s");
        REQUIRE(s.good());
        std::stringstream ss;
        ss << s.rdbuf();
        INFO(be->target_description());
        for (const char* inst : k.packed) {
          const std::string inst_text = inst;
          CAPTURE(inst_text);
          CHECK(has_packed(ss.str(), inst));
        }
        // No libm call, every pass inlined.
        std::string call_line;
        std::istringstream lines(ss.str());
        for (std::string l; call_line.empty() && std::getline(lines, l);)
          if (l.find("call") != std::string::npos) call_line = l;
        INFO(call_line);
        CHECK(call_line.empty());
      }
    }
  }

  TEST_CASE("declined specs say why") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    FusedGraph f = test::fuse_text("graph g\ninput x: f32[4, 8]\ny = Softmax(x) {axis=-1}\noutput y\n", {});
    std::string why;
    KernelSpec spec = *lower_group(f, f.groups.back(), &why);
    REQUIRE(be->supports(spec, &why));
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
      CHECK_FALSE(be->supports(*s, &reason));
      CHECK_FALSE(reason.empty());
      std::string msg;
      CHECK(test::error_of([&] { be->compile(*s); }, &msg) == ErrorCode::Unsupported);
      CHECK(msg.find(reason) != std::string::npos);
    }
  }

  TEST_CASE("compile time and bandwidth of BERT-sized kernels") {
    LlvmBackend* be = test::llvm_backend_or_skip();
    if (!be) return;
    ThreadPool threads(0);
    struct Bench {
      const char* name;
      const char* text;
      std::map<std::string, Tensor> inputs;
    };
    const std::vector<Bench> benches = {
        {"residual+layernorm 128x768", R"(graph g
input x: f32[128, 768]
input r: f32[128, 768]
input g: f32[768]
input b: f32[768]
s = Add(x, r)
y = LayerNormalization(s, g, b) {axis=-1, epsilon=1e-12}
output y
)",
         {{"x", test::randn({128, 768}, 1)}, {"r", test::randn({128, 768}, 2)}, {"g", test::randn({768}, 3)},
          {"b", test::randn({768}, 4)}}},
        {"scale+mask+softmax 12x128x128", R"(graph g
input s: f32[1, 12, 128, 128]
input m: f32[1, 1, 1, 128]
const scale: f32[] = [0.125]
a = Mul(s, scale)
b = Add(a, m)
y = Softmax(b) {axis=-1}
output y
)",
         {{"s", test::randn({1, 12, 128, 128}, 1, 8.0)}, {"m", test::uniform({1, 1, 1, 128}, 2, -3, 0)}}},
    };
    for (const Bench& bench : benches) {
      const std::string name = bench.name;
      CAPTURE(name);
      FusedGraph f = test::fuse_text(bench.text, {});
      std::optional<KernelSpec> spec;
      for (const FusionGroup& grp : f.groups) {
        std::string why;
        if (grp.kind == GroupKind::Reduction) spec = lower_group(f, grp, &why);
      }
      REQUIRE(spec);
      std::shared_ptr<const CompiledKernel> k = be->compile(*spec);
      std::vector<Tensor> bufs;
      std::vector<void*> ptrs;
      double bytes = 0;
      for (const BufferSpec& b : spec->buffers) {
        bufs.push_back(b.output ? Tensor::zeros(DType::F32, Shape{b.elements}) : bench.inputs.at(b.name).reshaped(Shape{b.elements}));
        ptrs.push_back(bufs.back().raw());
        bytes += double(b.elements) * 4;
      }
      auto best_of = [&](auto&& run) {
        double best = 1e30;
        for (int rep = 0; rep < 20; ++rep) {
          auto t0 = std::chrono::steady_clock::now();
          run();
          best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        return best;
      };
      double serial = best_of([&] { k->run(ptrs.data(), 0, spec->tasks); });
      double pooled = best_of([&] {
        threads.parallel_for(spec->tasks, 1, [&](int64_t b, int64_t e) { k->run(ptrs.data(), b, e); });
      });
      double unfused = best_of([&] { test::run_all_static(f, bench.inputs, test::pool()); });
      MESSAGE(name << " (" << spec->tasks << " rows, scratch " << reduction_uses_scratch(*spec) << "): compile "
                   << k->compile_us / 1000.0 << " ms; serial " << bytes / serial / 1e9 << " GB/s (" << serial * 1e6
                   << " us), " << threads.num_threads() << " threads " << bytes / pooled / 1e9 << " GB/s (" << pooled * 1e6
                   << " us); static kernels unfused " << unfused * 1e6 << " us");
      std::vector<Tensor> values = test::run_all_static(f, bench.inputs, test::pool());
      for (size_t i = 0; i < spec->buffers.size(); ++i)
        if (spec->buffers[i].output)
          FUSOR_CHECK_CLOSE(bufs[i], values[size_t(f.graph.find_value(spec->buffers[i].name))].reshaped(Shape{spec->buffers[i].elements}),
                            1e-5, 1e-5);
    }
  }
}
