// The host planner (jit/plan.h) and the hit path (jit/execute.h) on their own, without an
// Engine: build_plan gives a static step per node, a reshape that is not an output aliases
// its input, the steps a kernel policy leaves dead are dropped, and the arena places only
// intermediates, never two live ones on the same bytes; execute_plan then computes what
// the graph means.
#include <doctest/doctest.h>

#include <cmath>

#include "ir/text_format.h"
#include "jit/execute.h"
#include "jit/plan.h"
#include "jit/thread_pool.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// a = Relu(x); r = Reshape(a) (a view); e = Exp(r) (the output); n = Neg(x) (read by nobody).
const char* const kText =
    "graph g\ninput x: f32[4, 6]\nconst flat: i64[1] = [24]\n"
    "a = Relu(x)\nr = Reshape(a, flat)\ne = Exp(r)\nn = Neg(x)\noutput e\n";

struct Planner {
  EngineOptions options = [] {
    EngineOptions o;
    o.fuse = false;  // one node per group: one static step per node
    return o;
  }();
  ThreadPool pool{1};
  SharedConstants constants{0};
  Fuser fuser{options, pool, constants};
};

ValueId value(const Plan& p, const char* name) {
  ValueId v = p.fused.graph.find_value(name);
  REQUIRE(v != kNoValue);
  return v;
}

}  // namespace

TEST_SUITE("jit/plan") {
  TEST_CASE("a static plan: a step per node, reshapes alias, only intermediates in the arena") {
    Planner m;
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

  TEST_CASE("execute_plan runs a plan on its inputs and writes supplied outputs in place") {
    Planner m;
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
}
