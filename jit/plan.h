// The host plan of one (graph, input signature): Step, Plan and build_plan, which turns a
// fused graph into steps (a JIT kernel per group where the kernel policy gives one, the
// static kernel of each node elsewhere), drops the static steps nobody reads and lays the
// intermediates out in one arena by liveness. What a step's kernel is, is the caller's
// policy (ChooseKernel): the exact kernels of one backend (exact_kernel), the first tier,
// or the symbolic first plans' (jit/symbolic_plans.h). Layer: jit.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "codegen/compiled_kernel.h"
#include "codegen/precision.h"
#include "ir/passes/pipeline.h"
#include "jit/executor.h"
#include "jit/fuse.h"
#include "jit/kernel_source.h"
#include "jit/shared_constants.h"

namespace fusor {

/// A flag a step of a serving plan may have set once (relaxed: it is read once per run of
/// the step); copies with the step while the plan is built.
class StepFlag {
 public:
  StepFlag() = default;
  StepFlag(const StepFlag& o) : v_(o.get()) {}
  StepFlag& operator=(const StepFlag& o) {
    v_.store(o.get(), std::memory_order_relaxed);
    return *this;
  }
  bool get() const { return v_.load(std::memory_order_relaxed); }
  void set() const { v_.store(true, std::memory_order_relaxed); }

 private:
  mutable std::atomic<bool> v_{false};
};

struct ReferenceSpecs;

/// One unit of execution: a static kernel for one node (or a zero-copy reshape), or a JIT
/// kernel for a whole group.
struct Step {
  NodeId node = -1;                               ///< static step: the node
  bool alias = false;                             ///< static step: a reshape sharing its input's buffer
  std::shared_ptr<const CompiledKernel> kernel;   ///< JIT step
  int64_t tasks = 1;                              ///< JIT step: its task range [0, tasks)
  int64_t extent = -1;                            ///< JIT step of a symbolic kernel: the run's outer extent
  std::vector<ValueId> buffers;                   ///< JIT step: one value per KernelSpec::buffers entry
  std::vector<std::pair<size_t, std::shared_ptr<const Tensor>>> packed;  ///< JIT step: constants passed packed
  std::vector<ValueId> reads, writes;             ///< what the step touches (for liveness)
  std::string label;                              ///< for profiles
  int group = -1;                                 ///< JIT step: its group of the plan's fused graph
  /// JIT step: its group runs unfused on the static kernels instead of the kernel, since
  /// the kernel failed its check (Note [Verify mode]).
  StepFlag unfused;
};

/// One (graph, input signature)'s schedule on the host: the fused graph, its steps, and
/// where each intermediate lives. `bytes` (what the plan cache charges, charge()) is
/// `own_bytes`, its arena and the small constants it holds alone, and its kernels: a plan
/// keeps its kernels alive after the kernel cache evicted them, so the plan budget has to
/// bound them too (a kernel shared by several plans is charged to each).
struct Plan final : ExecutablePlan {
  FusedGraph fused;
  /// Claimed by the one run that checks the plan's kernels (Note [Verify mode]).
  mutable std::atomic<bool> verify_claimed{false};
  /// That run's verdicts, once it finished (Executor::plan_verdicts).
  mutable std::mutex verdicts_mu;
  mutable std::vector<GroupVerdict> verdicts;
  std::vector<Step> steps;
  std::vector<int> uses;              ///< per value: reads by steps
  std::vector<char> is_output;        ///< per value
  std::vector<int64_t> arena_offset;  ///< per value: its place in the run's arena, or -1
  std::vector<ValueId> placed;        ///< the values with an arena place
  std::vector<ValueId> constants;     ///< the constants of the fused graph
  int64_t arena_bytes = 0;
  uint64_t own_bytes = 0;
  /// A symbolic first plan that ran groups on the first tier because their llvm kernels
  /// were not compiled yet: the reference its background job compiles them against (Note
  /// [Symbolic kernels compiled behind the first size], jit/symbolic_plans.h); else null.
  std::shared_ptr<const ReferenceSpecs> symbolic_pending;
};

/// Sets plan.bytes from its own bytes and the resident bytes of each distinct kernel its
/// steps hold.
void charge(Plan& plan);

/// A group's kernel in a plan being built: null for a group on the static kernels; `spec`
/// is the group's own lowered spec (a cached kernel may have been compiled for another
/// group with the same code, so its spec's buffer names are not this group's values);
/// `extent` the run's outer extent of a symbolic kernel (else -1).
struct GroupKernel {
  std::shared_ptr<const CompiledKernel> kernel;
  KernelSpec spec;
  int64_t extent = -1;
};

/// The kernel policy of a plan: group `group` of `f`'s kernel.
using ChooseKernel = std::function<GroupKernel(const FusedGraph& f, size_t group)>;

/// Group `group`'s exact kernel on `backend` from `source`, or none when the group has no
/// kernel kind or the backend declines its spec.
GroupKernel exact_kernel(JitBackend& backend, HostKernelSource& source, const FusedGraph& f, size_t group,
                         Precision precision);

/// Marks `spec` bf16 (mark_bf16) when `precision` asks for bf16 and `backend` computes that
/// spec in bf16 here (Note [bf16 contractions]); otherwise leaves it f32.
void apply_precision(KernelSpec& spec, Precision precision, const JitBackend& backend);

/// The plan of g at `input_types`: traced and fused by `fuser`, its pass-made constants
/// interned and packed operands shared through `constants`, each group on the kernel
/// `choose` gives (null `choose`: every group on the static kernels). `choose` is called for
/// the groups on up to `compile_threads` threads at once (Note [Kernels compiled side by
/// side], plan.cpp): above 1 it must be thread-safe.
std::shared_ptr<Plan> build_plan(const Graph& g, const std::vector<TensorType>& input_types, const Fuser& fuser,
                                 SharedConstants& constants, const ChooseKernel& choose, int compile_threads = 1);

}  // namespace fusor
