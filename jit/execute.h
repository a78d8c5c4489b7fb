// The hit path of the host executor: a plan (jit/plan.h) run on a run's inputs. What it
// costs is what DESIGN.md allows a known shape: the values' table, the arena block from the
// pool (recycled), the outputs the caller did not supply, and the launches; no lock is held
// while a kernel runs, no string is built (profiles excepted). bench/ `dispatch/cache_hit`
// measures it with the Engine's bind, key and lookup. Layer: jit.
#pragma once

#include <vector>

#include "codegen/parallel.h"
#include "jit/arena.h"
#include "jit/engine_types.h"
#include "jit/plan.h"
#include "jit/step_times.h"

namespace fusor {

/// Runs `plan` on `feeds` (one per input of the plan's graph, in order) over `parallel`,
/// intermediates in a block of `arenas`. Outputs already in `outputs` are written in place
/// (ShapeMismatch unless they have exactly the inferred type); the others are added, graph
/// inputs and constants returned as outputs as copies. Each step's time goes to `times`
/// when given.
void execute_plan(const Plan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs, Parallel& parallel,
                  ArenaPool& arenas, StepTimes* times);

}  // namespace fusor
