// The host planner (jit/plan.h) and the hit path (jit/execute.h) on their own, without an
// Engine: build_plan gives a static step per node, a reshape that is not an output aliases
// its input, the steps a kernel policy leaves dead are dropped, and the arena places only
// intermediates, never two live ones on the same bytes; execute_plan then computes what
// the graph means.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "codegen/lower.h"
#include "ir/text_format.h"
#include "jit/execute.h"
#include "jit/executor.h"
#include "jit/kernel_source.h"
#include "jit/plan.h"
#include "jit/thread_pool.h"
#include "tests/support/planner.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// a = Relu(x); r = Reshape(a) (a view); e = Exp(r) (the output); n = Neg(x) (read by nobody).
const char* const kText =
    "graph g\ninput x: f32[4, 6]\nconst flat: i64[1] = [24]\n"
    "a = Relu(x)\nr = Reshape(a, flat)\ne = Exp(r)\nn = Neg(x)\noutput e\n";

// One node per group: one static step per node.
test::Planner unfused() { return test::Planner(EngineOptions{.fuse = false}, 1); }

ValueId value(const Plan& p, const char* name) {
  ValueId v = p.fused.graph.find_value(name);
  REQUIRE(v != kNoValue);
  return v;
}

}  // namespace

TEST_SUITE("jit/plan") {
  TEST_CASE("a static plan: a step per node, reshapes alias, only intermediates in the arena") {
    test::Planner m = unfused();
    const Graph g = parse_graph(kText);
    std::shared_ptr<Plan> plan = build_plan(g, {TensorType{DType::F32, Shape{4, 6}}}, m.fuser, m.constants, nullptr);
    std::string labels;
    for (const Step& st : plan->steps) labels += st.label + "; ";
    INFO(labels);
    // Neg's output is neither read nor an output: its step is dead and dropped.
    REQUIRE(plan->steps.size() == 3);
    CHECK(plan->steps[0].label == "static Relu a");
    CHECK(plan->steps[1].alias);
    CHECK(plan->steps[1].label == "view Reshape r");
    CHECK(plan->steps[2].label == "static Exp e");
    for (const Step& st : plan->steps) CHECK(!st.kernel);
    const ValueId a = value(*plan, "a"), r = value(*plan, "r"), e = value(*plan, "e");
    CHECK(plan->arena_offset[size_t(a)] >= 0);  // the intermediate
    CHECK(plan->arena_offset[size_t(r)] == -1);  // a view of it
    CHECK(plan->arena_offset[size_t(e)] == -1);  // the output goes to the caller
    CHECK(plan->arena_bytes >= 24 * 4);
    CHECK(plan->is_output[size_t(e)]);
    CHECK(plan->uses[size_t(a)] == 1);  // read by the reshape only
    CHECK(plan->bytes >= uint64_t(plan->arena_bytes));
  }

  TEST_CASE("an attention group the backend declines runs as its parts on that backend (Note [Declined attention])") {
    std::unique_ptr<JitBackend> asmjit;
    try {
      asmjit = make_jit_backend(BackendKind::Asmjit);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable && e.code() != ErrorCode::Unsupported) throw;
      MESSAGE("skipped: " << e.what());
      return;
    }
    // Q, K and V are slices of one projection (views the products read through strides),
    // 13 keys and values of 7: edge tiles everywhere.
    const char* text = R"(graph g
input x: f32[1, 13, 21]
input mask: f32[1, 1, 1, 13]
const rs: i64[4] = [1, 13, 3, 7]
const scale: f32[] = [0.37]
const i0: i64[1] = [0]
const i1: i64[1] = [1]
const i2: i64[1] = [2]
const i3: i64[1] = [3]
x4 = Reshape(x, rs)
h = Transpose(x4) {perm=[0, 2, 1, 3]}
q = Slice(h, i0, i1, i1)
k = Slice(h, i1, i2, i1)
v = Slice(h, i2, i3, i1)
kt = Transpose(k) {perm=[0, 1, 3, 2]}
s = MatMul(q, kt)
m = Mul(s, scale)
a = Add(m, mask)
p = Softmax(a) {axis=-1}
c = MatMul(p, v)
y = Transpose(c) {perm=[0, 2, 1, 3]}
output y
)";
    test::Planner m;
    const Graph g = parse_graph(text);
    const std::vector<TensorType> types{TensorType{DType::F32, Shape{1, 13, 21}}, TensorType{DType::F32, Shape{1, 1, 1, 13}}};
    const FusedGraph fused = m.fuser.fuse(g, types);  // one attention group, which asmjit declines
    int attention = 0;
    for (const FusionGroup& grp : fused.groups) {
      if (grp.kind != GroupKind::Attention) continue;
      ++attention;
      std::optional<KernelSpec> spec = lower_group(fused, grp, nullptr);
      REQUIRE(spec);
      CHECK_FALSE(asmjit->supports(*spec, nullptr));
    }
    REQUIRE(attention == 1);
    std::shared_ptr<Plan> plan = build_plan(g, types, m.fuser, m.constants, [&](const FusedGraph& f, size_t i) {
      return exact_kernel(*asmjit, m.kernels, f, i, Precision::Fp32);
    });
    std::string labels;
    for (const Step& st : plan->steps) labels += st.label + "; ";
    INFO(labels);
    int kernel_steps = 0;
    for (const Step& st : plan->steps) {
      CHECK(st.label.rfind("static", 0) != 0);  // no op on the static kernels
      if (!st.kernel) continue;
      ++kernel_steps;
      REQUIRE(st.group >= 0);
      CHECK(plan->fused.groups[size_t(st.group)].kind != GroupKind::Attention);
    }
    CHECK(kernel_steps == 3);  // Q·Kᵀ with scale and mask, softmax, P·V with the heads' merge
    bool noted = false;
    for (const PassNote& n : plan->fused.log.applied) noted |= n.pass == "plan" && n.message.find("attention") == 0;
    CHECK(noted);

    std::shared_ptr<Plan> reference = build_plan(g, types, m.fuser, m.constants, nullptr);  // static kernels
    const Tensor x = test::randn(Shape{1, 13, 21}, 3), mask = test::randn(Shape{1, 1, 1, 13}, 4);
    ArenaPool arenas;
    TensorMap got, want;
    execute_plan(*plan, {&x, &mask}, got, m.pool, arenas, nullptr);
    execute_plan(*reference, {&x, &mask}, want, m.pool, arenas, nullptr);
    REQUIRE(got.at("y").shape() == Shape{1, 13, 1, 7});
    for (int64_t i = 0; i < got.at("y").numel(); ++i)
      CHECK(got.at("y").data<float>()[i] == doctest::Approx(want.at("y").data<float>()[i]).epsilon(1e-5).scale(1e-5));
  }

  TEST_CASE("execute_plan runs a plan on its inputs and writes supplied outputs in place") {
    test::Planner m = unfused();
    const Graph g = parse_graph(kText);
    std::shared_ptr<Plan> plan = build_plan(g, {TensorType{DType::F32, Shape{4, 6}}}, m.fuser, m.constants, nullptr);
    const Tensor x = test::randn(Shape{4, 6}, 11);
    ArenaPool arenas;
    StepTimes times;
    for (int run = 0; run < 2; ++run) {  // the second run reuses the first one's arena block
      TensorMap out;
      execute_plan(*plan, {&x}, out, m.pool, arenas, &times);
      REQUIRE(out.count("e") == 1);
      const Tensor& e = out.at("e");
      CHECK(e.shape() == Shape{24});
      for (int64_t i = 0; i < 24; ++i)
        CHECK(e.data<float>()[i] == doctest::Approx(std::exp(std::max(0.0f, x.data<float>()[i]))).epsilon(1e-6));
    }
    CHECK(times.snapshot().size() == 3);
    CHECK(times.snapshot()[0].calls == 2);

    Tensor mine = Tensor::zeros(DType::F32, Shape{24});
    TensorMap out{{"e", mine}};
    execute_plan(*plan, {&x}, out, m.pool, arenas, nullptr);
    CHECK(out.at("e").raw() == mine.raw());
    CHECK(mine.data<float>()[0] == doctest::Approx(std::exp(std::max(0.0f, x.data<float>()[0]))).epsilon(1e-6));

    TensorMap wrong{{"e", Tensor::zeros(DType::F32, Shape{4, 6})}};
    CHECK_THROWS_AS(execute_plan(*plan, {&x}, wrong, m.pool, arenas, nullptr), Error);
  }

  TEST_CASE("a plan's kernels are chosen side by side on its compile threads (Note [Kernels compiled side by side])") {
    test::Planner m = unfused();  // Relu, Exp and Neg: three groups with a kernel kind, and a view
    const Graph g = parse_graph(kText);
    const std::vector<TensorType> types{TensorType{DType::F32, Shape{4, 6}}};
    std::mutex mu;
    std::condition_variable cv;
    int active = 0, most = 0;
    std::set<std::thread::id> threads;
    // Each call waits (up to 10 s) for another one to be under way, so two threads overlap
    // whenever the plan gives its groups to two.
    auto rendezvous = [&](const FusedGraph& f, size_t i) {
      std::unique_lock<std::mutex> lk(mu);
      threads.insert(std::this_thread::get_id());
      most = std::max(most, ++active);
      cv.notify_all();
      cv.wait_for(lk, std::chrono::seconds(10), [&] { return most >= 2; });
      --active;
      (void)f;
      (void)i;
      return GroupKernel{};
    };
    std::shared_ptr<Plan> side = build_plan(g, types, m.fuser, m.constants, rendezvous, 2);
    CHECK(most >= 2);
    CHECK(threads.size() == 2);
    // One thread: every group on the caller, one at a time.
    threads.clear();
    int calls = 0;
    std::shared_ptr<Plan> turn = build_plan(g, types, m.fuser, m.constants, [&](const FusedGraph&, size_t) {
      threads.insert(std::this_thread::get_id());
      ++calls;
      return GroupKernel{};
    }, 1);
    CHECK(calls == 3);  // every group is asked, the view included (Neg, read by nobody, is not traced)
    REQUIRE(threads.size() == 1);
    CHECK(*threads.begin() == std::this_thread::get_id());
    // The same plan either way.
    REQUIRE(side->steps.size() == turn->steps.size());
    for (size_t i = 0; i < side->steps.size(); ++i) CHECK(side->steps[i].label == turn->steps[i].label);
  }

  TEST_CASE("a group whose kernel fails throws the first failing group's error in plan order, whatever ends first") {
    test::Planner m = unfused();
    const Graph g = parse_graph(kText);
    const std::vector<TensorType> types{TensorType{DType::F32, Shape{4, 6}}};
    for (int threads : {1, 3}) {
      CAPTURE(threads);
      // Relu's group (first in plan order) fails late, Exp's at once.
      auto choose = [](const FusedGraph& f, size_t i) -> GroupKernel {
        const Node& first = f.graph.node(f.groups[i].nodes.front());
        const std::string& anchor = f.graph.value(first.outputs.front()).name;
        if (anchor == "a") {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          fail(ErrorCode::CompileFailed, "kernel of a");
        }
        if (anchor == "e") fail(ErrorCode::Unsupported, "kernel of e");
        return GroupKernel{};
      };
      try {
        build_plan(g, types, m.fuser, m.constants, choose, threads);
        FAIL("no error");
      } catch (const Error& e) {
        INFO(e.what());
        CHECK(e.code() == ErrorCode::CompileFailed);
        CHECK(std::string(e.what()).find("kernel of a") != std::string::npos);
      }
    }
  }
}
