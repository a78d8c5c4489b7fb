// Lowering is checked by meaning: every group of the reference graphs (and of small
// graphs covering each kernel kind) is lowered to a KernelSpec, the spec is executed by the
// reference interpreter on the buffers the unfused static run produced, and its outputs
// must equal what the static kernels computed for the same values.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <map>

#include "codegen/lower.h"
#include "codegen/static/static_backend.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

std::string load(const char* name) {
  std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name);
  return std::string(std::istreambuf_iterator<char>(f), {});
}


// Lowers and interprets every group; returns how many groups had a spec.
int check_all_groups(const FusedGraph& f, const std::map<std::string, Tensor>& inputs, double tol) {
  std::vector<Tensor> values = test::run_all_static(f, inputs);
  int lowered = 0;
  for (const FusionGroup& grp : f.groups) {
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, grp, &why);
    if (!spec) {
      CHECK_MESSAGE((grp.kind == GroupKind::View || grp.kind == GroupKind::Opaque), "not lowered: ", grp.pattern, ": ", why);
      continue;
    }
    ++lowered;
    INFO(spec->str());
    std::vector<Tensor> bufs;
    std::vector<ValueId> outs;
    for (const BufferSpec& b : spec->buffers) {
      ValueId v = f.graph.find_value(b.name);
      REQUIRE(v != kNoValue);
      if (b.output) {
        bufs.push_back(Tensor::zeros(b.dtype, Shape{b.elements}));
        outs.push_back(v);
      } else {
        bufs.push_back(values[size_t(v)].reshaped(Shape{b.elements}));
      }
    }
    test::interpret(*spec, bufs);
    size_t k = 0;
    for (size_t i = 0; i < spec->buffers.size(); ++i) {
      if (!spec->buffers[i].output) continue;
      const Tensor& want = values[size_t(outs[k++])];
      FUSOR_CHECK_CLOSE(bufs[i].reshaped(want.shape()), want, tol, tol);
    }
  }
  return lowered;
}

}  // namespace

TEST_SUITE("codegen/lower") {
  TEST_CASE("every compute group of the BERT layer lowers and its spec computes the group") {
    for (int64_t t : {5, 16}) {
      FusedGraph f = test::fuse_text(load("bert_layer"), {{"B", 1}, {"T", t}});
      std::map<std::string, Tensor> in{{"x", test::randn({1, t, 768}, 1)}, {"mask", test::uniform({1, 1, 1, t}, 2, -1, 0)}};
      CHECK(check_all_groups(f, in, 2e-4) == 7);
    }
  }

  TEST_CASE("every group of the ResNet bottleneck lowers and computes the group") {
    FusedGraph f = test::fuse_text(load("resnet_bottleneck"), {{"N", 1}, {"H", 5}, {"W", 4}});
    CHECK(check_all_groups(f, {{"x", test::randn({1, 256, 5, 4}, 3)}}, 2e-4) == 3);
  }

  TEST_CASE("pointwise DAGs with broadcasting and views lower to one strided kernel") {
    const char* text = R"(graph g
input x: f32[2, 3, 4]
input b: f32[6]
const st: i64[1] = [0]
const en: i64[1] = [2]
const ax: i64[1] = [2]
const s: i64[2] = [6, 2]
const two: f32[] = [2.0]
sl = Slice(x, st, en, ax)
r = Reshape(sl, s)
t = Transpose(r) {perm=[1, 0]}
a = Add(t, b)
m = Mul(a, two)
y = Gelu(m) {approximate="tanh"}
output y
)";
    FusedGraph f = test::fuse_text(text, {});
    int lowered = check_all_groups(f, {{"x", test::randn({2, 3, 4}, 1)}, {"b", test::randn({6}, 2)}}, 1e-5);
    CHECK(lowered == 1);
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
    REQUIRE(spec);
    // Slice, Reshape and Transpose cost nothing: the kernel reads x itself through strides
    // [1, 4] over its [2, 6] space; the scalar 2.0 is a constant, not a load.
    CHECK(spec->kind == KernelKind::Pointwise);
    CHECK(spec->buffers.size() == 3);
    CHECK(spec->buffers[0].name == "x");
    CHECK(spec->str().find("buf0 f32 strides [1, 4]") != std::string::npos);
    CHECK(spec->str().find("const.f32 2.0") != std::string::npos);
  }

  TEST_CASE("a view that strides cannot express is read from its materialized value") {
    // Transpose then merge of non-adjacent dims needs a copy: the kernel reads r's buffer.
    const char* text = R"(graph g
input x: f32[2, 3, 4]
const s: i64[2] = [6, 4]
t = Transpose(x) {perm=[1, 0, 2]}
r = Reshape(t, s)
y = Relu(r)
output y
)";
    FusedGraph f = test::fuse_text(text, {});
    ValueId root;
    StridedView view;
    CHECK_FALSE(resolve_view(f, f.graph.find_value("r"), &root, &view));
    CHECK(resolve_view(f, f.graph.find_value("t"), &root, &view));
    CHECK(view.strides == std::vector<int64_t>{4, 12, 1});
    CHECK(check_all_groups(f, {{"x", test::randn({2, 3, 4}, 1)}}, 0) == 1);
  }

  TEST_CASE("gemm with transposes alpha beta and an epilogue lowers") {
    const char* text = R"(graph g
input a: f32[5, 3]
input b: f32[4, 5]
input c: f32[4]
h = Gemm(a, b, c) {transA=1, transB=1, alpha=0.5, beta=2.0}
y = Sigmoid(h)
output y
)";
    FusedGraph f = test::fuse_text(text, {});
    CHECK(check_all_groups(f, {{"a", test::randn({5, 3}, 1)}, {"b", test::randn({4, 5}, 2)}, {"c", test::randn({4}, 3)}},
                           1e-5) == 1);
  }

  TEST_CASE("grouped strided conv with bias and a reduce lower") {
    const char* text = R"(graph g
input x: f32[2, 4, 7, 6]
const w: f32[6, 2, 3, 3] = randn(seed=1, std=0.3)
const bias: f32[6] = randn(seed=2, std=0.3)
c = Conv(x, w, bias) {group=2, strides=[2, 1], pads=[1, 0, 1, 2], dilations=[1, 2]}
r = Relu(c)
s = ReduceSum(r) {axes=[-2, -1]}
output s
)";
    FusedGraph f = test::fuse_text(text, {});
    CHECK(check_all_groups(f, {{"x", test::randn({2, 4, 7, 6}, 1)}}, 1e-4) == 2);
  }

  TEST_CASE("spec hashes are deterministic and differ with shapes") {
    FusedGraph a = test::fuse_text(load("resnet_bottleneck"), {{"N", 1}, {"H", 5}, {"W", 4}});
    FusedGraph b = test::fuse_text(load("resnet_bottleneck"), {{"N", 1}, {"H", 5}, {"W", 4}});
    FusedGraph c = test::fuse_text(load("resnet_bottleneck"), {{"N", 1}, {"H", 6}, {"W", 4}});
    std::string why;
    KernelSpec sa = *lower_group(a, a.groups[0], &why), sb = *lower_group(b, b.groups[0], &why),
               sc = *lower_group(c, c.groups[0], &why);
    CHECK(sa.hash() == sb.hash());
    CHECK(sa.same_code(sb));
    CHECK(sa.hash() != sc.hash());
    CHECK_FALSE(sa.same_code(sc));
    CHECK(sa.str().find("conv2d n 1 c 256 5x4 -> m 64 5x4") != std::string::npos);
  }
}

TEST_SUITE("codegen/lower") {
  TEST_CASE("Split outputs are views: consumers read the parts through offsets") {
    const char* text = R"(graph g
input x: f32[2, 5, 12]
const sizes: i64[3] = [4, 4, 4]
q, k, v = Split(x, sizes) {axis=2}
a = Add(q, k)
y = Mul(a, v)
output y
)";
    FusedGraph f = test::fuse_text(text, {});
    CHECK(f.kernels_after() == 1);  // the Split costs nothing
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, f.groups.back(), &why);
    REQUIRE_MESSAGE(spec, why);
    INFO(spec->str());
    CHECK(spec->buffers.size() == 2);  // x once, y
    CHECK(spec->str().find("+4") != std::string::npos);
    CHECK(spec->str().find("+8") != std::string::npos);
    CHECK(check_all_groups(f, {{"x", test::randn({2, 5, 12}, 1)}}, 1e-6) == 1);  // f32 vs the double interpreter
  }

  TEST_CASE("the new pointwise ops and bool results lower and compute their groups") {
    const char* text = R"(graph g
input x: f32[3, 17]
input y: f32[3, 17]
input m: bool[3, 17]
const six: f32[] = [6.0]
const zero: f32[] = [0.0]
c = Clip(x, zero, six)
l = LeakyRelu(c) {alpha=0.2}
h = HardSwish(y)
s = Add(l, h)
g = Greater(s, x)
a = And(g, m)
n = Not(a)
i = IsInf(y) {detect_positive=0}
o = Or(n, i)
output o
)";
    FusedGraph f = test::fuse_text(text, {});
    CHECK(f.kernels_after() == 1);
    Tensor m = Tensor::empty(DType::Bool, {3, 17});
    for (int64_t e = 0; e < m.numel(); ++e) m.set(e, e % 3 == 0);
    CHECK(check_all_groups(f, {{"x", test::randn({3, 17}, 1)}, {"y", test::randn({3, 17}, 2, 4.0)}, {"m", m}}, 0) == 1);
  }
}
