// Executor: one way of running plans, on this CPU (jit/host_executor.h) or on a device
// (jit/cuda_executor.h), under the Engine's stages. For each run the Engine binds the
// inputs (jit/bind_run.h), makes the plan key (Note [Plan key]), finds the plan in its plan
// cache or has the executor build it, and has the executor execute it. What every executor
// shares (options, threads, the trace and fuse stage, the shared constants, the step times,
// the persistent kernel store) is lent by the ExecutorContext the Engine owns. Which
// executor serves a backend is its line of codegen/backends.def (make_executor). Layer: jit.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "cache/kernel_store.h"
#include "cache/keyed_cache.h"
#include "cache/plan_key.h"
#include "codegen/backends.h"
#include "codegen/compiled_kernel.h"
#include "jit/engine_types.h"
#include "jit/fuse.h"
#include "jit/shared_constants.h"
#include "jit/step_times.h"
#include "jit/thread_pool.h"

namespace fusor {

/// A plan as one executor built it (jit/plan.h's Plan on the host, a CUDA executable on a
/// device); only that executor runs it.
struct ExecutablePlan {
  virtual ~ExecutablePlan() = default;
  uint64_t bytes = 0;  ///< what the plan cache charges for it
};

/// The plan serving a cache entry now: a shared_ptr that one thread may replace while
/// others load it. A mutex guards it rather than std::atomic<std::shared_ptr>, which
/// libstdc++ 12 implements with a lock bit ThreadSanitizer cannot see: its reports of that
/// swap would hide a real race among known ones (issue 20).
class PlanSlot {
 public:
  std::shared_ptr<const ExecutablePlan> load() const {
    std::lock_guard<std::mutex> lk(mu_);
    return plan_;
  }
  /// Replaces the plan; the old one is released after the lock (its runs may still hold it).
  void store(std::shared_ptr<const ExecutablePlan> plan) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      plan_.swap(plan);
    }
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const ExecutablePlan> plan_;
};

/// A latch a background job waits on until the first run of its entry has ended.
/// Every run opens it: once open, that is one atomic load and no lock.
class FirstRunGate {
 public:
  void open() {
    if (open_.load(std::memory_order_acquire)) return;
    {
      std::lock_guard<std::mutex> lk(mu_);
      open_.store(true, std::memory_order_release);
    }
    cv_.notify_all();
  }
  /// Waits until open() or `timeout` has passed.
  void wait(std::chrono::milliseconds timeout) const {
    std::unique_lock<std::mutex> lk(mu_);
    cv_.wait_for(lk, timeout, [&] { return open_.load(std::memory_order_acquire); });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::atomic<bool> open_{false};
};

/// A plan cache entry: the plan serving its key now. A later plan may replace it (Note
/// [Background plans]); a run loads it once and uses that plan throughout.
struct PlanEntry {
  mutable PlanSlot plan;
  /// Opened once the run that built the entry has ended (or at once when no run waits on
  /// it): the entry's final plan starts compiling only then (Note [Background plans]).
  mutable FirstRunGate first_run;
};

/// The plans of an engine, by Note [Plan key].
using PlanCache = KeyedCache<PlanKey, PlanEntry, PlanKeyHash>;

/// What the Engine owns and lends to its executor.
class ExecutorContext {
 public:
  /// `options` with the default warning sink (warn_to_stderr) where none is set. Throws
  /// what ThreadPool throws.
  explicit ExecutorContext(EngineOptions options);
  ExecutorContext(const ExecutorContext&) = delete;
  ExecutorContext& operator=(const ExecutorContext&) = delete;

  const EngineOptions options;
  const uint64_t options_hash;  ///< options.hash(): part of every plan key; computed once
  ThreadPool pool;
  SharedConstants constants;
  Fuser fuser;

  /// Changes what the plan cache charges for `entry` (of `key`) once a later plan replaced
  /// its first one (Note [Background plans]); set by the Engine, a no-op once the plan
  /// cache is gone.
  std::function<void(const PlanKey& key, const PlanEntry& entry, uint64_t bytes)> recharge_plan;

  /// The step times recorded so far (Engine::profile()).
  StepTimes times;
  /// Where executors record step times: null unless EngineOptions::profile.
  StepTimes* profile() { return options.profile ? &times : nullptr; }
  /// The persistent kernel store, opened by the first call (by an executor whose backend
  /// can load what it stores): the disk store, the remote one, or both layered (Note
  /// [Layered store]); null when neither is asked for or can be used (warned about once).
  /// Not thread-safe: executors call it while built.
  KernelStore* store();
  /// The disk layer, if store() opened one.
  const KernelStore* disk_store() const { return disk_; }
  /// The remote layer, if store() opened one (also when it is disabled: its reason).
  const RedisStore* remote_store() const { return remote_; }

 private:
  std::unique_ptr<KernelStore> store_;
  const KernelStore* disk_ = nullptr;
  const RedisStore* remote_ = nullptr;
  std::unique_ptr<RedisStore> disabled_remote_;  // kept for its reason in stats
  bool store_opened_ = false;
};

/// Runs plans for an Engine. Implementations are thread-safe.
class Executor {
 public:
  virtual ~Executor() = default;
  /// The device the plan keys name.
  virtual Device device() const = 0;
  /// Checks that the bound inputs (graph input order) are tensors this executor can read,
  /// before their plan is looked up.
  virtual void check_inputs(const Graph& g, const std::vector<const Tensor*>& feeds) const = 0;
  /// The plan cache entry of a miss: the plan to run `key` now, with its cost; may queue a
  /// later plan that replaces it in the entry (Note [Background plans]).
  virtual SizedValue<PlanEntry> build(const Graph& g, const PlanKey& key) = 0;
  /// Runs `plan` (one build() of this executor made) on `feeds`: outputs already in
  /// `outputs` are written in place (they must have the inferred type: ShapeMismatch
  /// otherwise), the others added.
  virtual void execute(const ExecutablePlan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs) = 0;
  /// Waits until the later plans queued so far are in place.
  virtual void drain() {}
  /// Waits until the work enqueued on a device is done.
  virtual void synchronize() {}
  /// A device copy of host tensor `t`; InvalidArgument on the host.
  virtual Tensor to_device(const Tensor& t);
  /// A host copy of device tensor `t`; InvalidArgument on the host.
  virtual Tensor to_host(const Tensor& t);
  /// Adds what the plan cache and the context do not count: kernels, store use, compile
  /// times, later plans, device launches and memory.
  virtual void add_stats(EngineStats& s) const = 0;
  /// The most recent verdicts of EngineOptions::verify (Note [Verify mode]), oldest first.
  virtual std::vector<GroupVerdict> verdicts() const { return {}; }
  /// The verdicts of `plan`'s own check (empty before it ran, or with verify off).
  virtual std::vector<GroupVerdict> plan_verdicts(const ExecutablePlan&) const { return {}; }
  /// Why EngineOptions::precision (not Fp32) gives bf16 kernels here, or why it gives f32
  /// ones: one line for explain (Note [bf16 contractions]).
  virtual std::string precision_report(Precision asked) const;

 protected:
  explicit Executor(BackendKind kind) : kind_(kind) {}
  BackendKind kind_;  ///< the backend it runs (for messages)
};

/// The executor of ctx.options.backend, as its line of codegen/backends.def says. Throws
/// DeviceUnavailable (with the reason) when that backend is not in this build or cannot
/// target this machine.
std::unique_ptr<Executor> make_executor(ExecutorContext& ctx);

/// The host JIT backend `kind` (a HostJit line of codegen/backends.def): make_<name>_jit.
/// InvalidArgument for another role; DeviceUnavailable when it cannot be made here.
std::unique_ptr<JitBackend> make_jit_backend(BackendKind kind, const BackendOptions& options = {});

// make_<name>_executor for each DeviceJit line of codegen/backends.def: its executor on
// device EngineOptions::cuda_device, or Error(DeviceUnavailable) naming what is missing.
#define FUSOR_BACKEND_EXECUTOR_Precompiled(name)
#define FUSOR_BACKEND_EXECUTOR_HostJit(name)
#define FUSOR_BACKEND_EXECUTOR_DeviceJit(name) std::unique_ptr<Executor> make_##name##_executor(ExecutorContext& ctx);
#define FUSOR_BACKEND(kind, name, role, summary) FUSOR_BACKEND_EXECUTOR_##role(name)
#include "codegen/backends.def"
#undef FUSOR_BACKEND
#undef FUSOR_BACKEND_EXECUTOR_Precompiled
#undef FUSOR_BACKEND_EXECUTOR_HostJit
#undef FUSOR_BACKEND_EXECUTOR_DeviceJit

}  // namespace fusor
