// BackgroundPlans: the thread that builds a shape's final plan after a first plan served
// it at once, and swaps it into the plan cache's entry. Used by background_compile,
// tiering and symbolic first plans (jit/host_executor.h). Layer: jit.
//
// Note [Background plans]
// ~~~~~~~~~~~~~~~~~~~~~~~
// With EngineOptions::background_compile, a never-seen shape must not wait for LLVM: its
// plan is first built with every group on the static kernels (tracing and fusion only,
// milliseconds) and run at once, while a background thread builds the JIT plan (compiling
// or loading its kernels) and then swaps it into the same cache entry. The entry holds the
// current plan in a mutex-guarded shared_ptr (PlanSlot, jit/executor.h): a run loads it
// once and uses that plan throughout, so no run ever sees a half-built plan, and a plan
// being replaced stays alive until the runs using it end. The plan cache then charges the
// entry for the final plan (its arena and its kernels) instead of the first. A job starts
// only once the run that built its entry has ended (PlanEntry::first_run; Engine::prepare
// opens it at once): compiling beside that run slowed the very request a first plan exists
// to serve, even at a lower priority (the two share caches, memory bandwidth and the
// process's page tables): on a 2-vCPU Zen 5, the BERT layer's first run at a new length
// took 0.2-0.3 ms longer at the median, and up to 23 ms against ~11 in one run of eight.
// Jobs run one at a time, in order; the engine's destructor drops the jobs not started and
// waits for the one running. A job that
// fails leaves the first plan in place and warns. Compiles on this thread count as
// kernels_compiled_background. With tiering the first plan is on asmjit kernels and the
// final one keeps the faster of the two kernels per group (Note [Tiering]); with
// symbolic_dim it is on symbolic kernels (Note [Symbolic first plans]). The thread runs at a
// lower priority than the runs it serves (Note [Background priority], background_plans.cpp).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cache/plan_key.h"
#include "ir/graph.h"
#include "jit/executor.h"

namespace fusor {

/// A queue of final plans to build, one at a time on one thread (started by the first
/// job). Thread-safe.
class BackgroundPlans {
 public:
  /// Builds the final plan of a shape, given the plan serving it until then.
  using Build = std::function<std::shared_ptr<const ExecutablePlan>(const Graph&, const std::vector<TensorType>&,
                                                                    const ExecutablePlan& first)>;
  /// Charges the plan cache for an entry's final plan once it is in (may be empty).
  using Recharge = std::function<void(const PlanKey&, const PlanEntry&, uint64_t bytes)>;
  BackgroundPlans(Build build, Recharge recharge, std::function<void(const std::string&)> warn);
  /// Drops the jobs not started and waits for the one running.
  ~BackgroundPlans();
  BackgroundPlans(const BackgroundPlans&) = delete;
  BackgroundPlans& operator=(const BackgroundPlans&) = delete;

  /// Queues the final plan of `key` (of graph g, copied) to replace what `entry` holds.
  void submit(const PlanKey& key, const Graph& g, std::shared_ptr<PlanEntry> entry);
  /// Waits until every submitted job has finished.
  void drain();
  /// Final plans swapped in so far.
  uint64_t swaps() const { return swaps_.load(); }

 private:
  struct Job {
    PlanKey key;
    Graph graph;  // a copy: the caller's graph may be gone when the job runs (tensors share storage)
    std::shared_ptr<PlanEntry> entry;
  };
  void loop();

  Build build_;
  Recharge recharge_;
  std::function<void(const std::string&)> warn_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Job> jobs_;
  bool busy_ = false, stop_ = false;
  std::atomic<uint64_t> swaps_{0};
  std::thread thread_;
};

}  // namespace fusor
