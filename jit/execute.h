// The hit path of the host executor: a plan (jit/plan.h) run on a run's inputs. What it
// costs is what DESIGN.md allows a known shape: the values' table, the arena block from the
// pool (recycled), the outputs the caller did not supply, and the launches; no lock is held
// while a kernel runs, no string is built (profiles excepted). bench/ `dispatch/cache_hit`
// measures it with the Engine's bind, key and lookup. Layer: jit.
#pragma once

#include <functional>
#include <vector>

#include "codegen/parallel.h"
#include "jit/arena.h"
#include "jit/engine_types.h"
#include "jit/plan.h"
#include "jit/step_times.h"

namespace fusor {

/// Called after each JIT step of a run, with the run's values (jit/verify.h).
using StepCheck = std::function<void(const Step&, std::vector<Tensor>& values)>;

/// Group `group` of `fused` run op by op on the static kernels, on the values of a run
/// (the values outside the group; the views a plan dropped, because its kernels read their
/// roots through strides, are computed again): the group's outputs, in FusionGroup::outputs
/// order. A BatchNormalization folded into an op of the group is undone: that value is
/// computed from the ops as written, in double (jit/reference_f64.h), and `undone` (when
/// given) receives a line for each fold undone.
std::vector<Tensor> run_group_unfused(const FusedGraph& fused, size_t group, const std::vector<Tensor>& values,
                                      Parallel& parallel, std::vector<std::string>* undone = nullptr);

/// Runs `plan` on `feeds` (one per input of the plan's graph, in order) over `parallel`,
/// intermediates in a block of `arenas`. Outputs already in `outputs` are written in place
/// (ShapeMismatch unless they have exactly the inferred type); the others are added, graph
/// inputs and constants returned as outputs as copies. Each step's time goes to `times`
/// when given; `check`, when given, sees each JIT step's values right after it ran. A JIT
/// step whose `unfused` flag is set runs its group on the static kernels instead.
void execute_plan(const Plan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs, Parallel& parallel,
                  ArenaPool& arenas, StepTimes* times, const StepCheck* check = nullptr);

}  // namespace fusor
