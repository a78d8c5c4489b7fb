// What the host planner (jit/plan.h) needs besides a graph, for tests that build plans
// without an Engine: the engine's options, a thread pool, the shared constants, the fuser
// and a kernel source.
#pragma once

#include "jit/engine_types.h"
#include "jit/fuse.h"
#include "jit/kernel_source.h"
#include "jit/shared_constants.h"
#include "jit/thread_pool.h"

namespace fusor::test {

struct Planner {
  explicit Planner(EngineOptions o = {}, int threads = 2) : options(std::move(o)), pool(threads) {}
  EngineOptions options;
  ThreadPool pool;
  SharedConstants constants{0};
  Fuser fuser{options, pool, constants};
  HostKernelSource kernels{{0, nullptr, nullptr}};
};

}  // namespace fusor::test
