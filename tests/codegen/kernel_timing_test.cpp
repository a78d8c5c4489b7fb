// codegen/kernel_timing.h: the makespan of tasks on threads, each task's fastest pass, and
// scratch operands of a spec's sizes. No timing is asserted: what a pass takes is the
// machine's; only what was run, and how often, is.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "codegen/kernel_timing.h"

using namespace fusor;

namespace {

// Calls per task of the fake kernel below, and the buffers it saw.
std::vector<int> g_calls;
void** g_seen = nullptr;

void fake_kernel(void** buffers, int64_t begin, int64_t end) {
  g_seen = buffers;
  for (int64_t t = begin; t < end; ++t) ++g_calls[size_t(t)];
}

}  // namespace

TEST_SUITE("codegen/kernel_timing") {
  TEST_CASE("the makespan of tasks taken in order by the first free thread") {
    CHECK(makespan({}, 2) == 0.0);
    CHECK(makespan({3, 1, 1, 1}, 1) == 6.0);
    CHECK(makespan({3, 1, 1, 1}, 2) == 3.0);        // one thread takes 3, the other the three 1s
    CHECK(makespan({1, 1, 1, 1, 1}, 2) == 3.0);     // an odd count leaves one thread a task longer
    CHECK(makespan({2, 2, 2, 2}, 8) == 2.0);        // more threads than tasks
    CHECK(makespan({1, 2}, 0) == 3.0);              // (at least one thread)
  }

  TEST_CASE("each task is run alone, in order, on every pass, and its fastest pass is kept") {
    CompiledKernel k;
    k.fn = fake_kernel;
    k.tasks = 7;
    g_calls.assign(7, 0);
    std::vector<void*> bufs(2, nullptr);
    const std::vector<double> s = task_seconds(k, bufs.data(), 3, 10.0);
    REQUIRE(s.size() == 7);
    for (size_t t = 0; t < 7; ++t) {
      CHECK(g_calls[t] == 3);
      CHECK(s[t] >= 0.0);
      CHECK(s[t] < 1.0);
    }
    g_calls.assign(7, 0);
    task_seconds(k, bufs.data(), 1, 10.0);  // at least two passes: the first warms the caches
    CHECK(g_calls[0] == 2);
    g_calls.assign(7, 0);
    task_seconds(k, bufs.data(), 5, 0.0);   // past its budget after two passes
    CHECK(g_calls[0] == 2);
  }

  TEST_CASE("scratch operands have the spec's sizes, finite small floats in, zeros elsewhere") {
    CompiledKernel k;
    k.fn = fake_kernel;
    k.spec.kind = KernelKind::Pointwise;
    k.spec.buffers = {{"x", DType::F32, 1000, false, false},
                      {"i", DType::I64, 10, false, true},
                      {"e", DType::F32, 0, false, false},
                      {"y", DType::F32, 1000, true, false}};
    ScratchOperands ops(k);
    void** b = ops.buffers();
    const float* x = static_cast<const float*>(b[0]);
    int distinct = 0;
    for (int i = 0; i < 1000; ++i) {
      CHECK(std::isfinite(x[i]));
      CHECK(x[i] >= -0.5f);
      CHECK(x[i] < 0.5f);
      distinct += i > 0 && x[i] != x[i - 1];
    }
    CHECK(distinct > 900);  // a pattern, not a constant
    for (int i = 0; i < 10; ++i) CHECK(static_cast<const int64_t*>(b[1])[i] == 0);
    CHECK(b[2] != nullptr);  // an empty buffer still has an address
    for (int i = 0; i < 1000; ++i) CHECK(static_cast<const float*>(b[3])[i] == 0.0f);
    CHECK(b[4] == nullptr);  // the extent slot of a symbolic kernel
    g_calls.assign(1, 0);
    k.tasks = 1;
    task_seconds(k, b);
    CHECK(g_seen == b);
  }
}
