// Tiering (EngineOptions::tiering): which of two kernels of one group a final plan keeps.
// Layer: jit.
//
// Note [Tiering]
// ~~~~~~~~~~~~~~
// With tiering (backend llvm), a never-seen shape's first plan runs its groups on asmjit
// kernels, compiled in microseconds, and the LLVM plan is built behind it (Note [Background
// plans]). LLVM's code is not the faster one for every kernel, so before the swap each
// kernel of the LLVM plan is timed
// against the first plan's kernel for the same group (the same buffers, the same code):
// both run on scratch buffers (constants and packed weights as the plans have them, other
// inputs a fixed pattern), best of three, and the faster one is kept. first_tier_kept
// counts the asmjit kernels kept; profiles and compile_ms_by_backend say which tier serves.
#pragma once

#include <cstdint>
#include <functional>

#include "jit/plan.h"

namespace fusor {

/// Seconds step `st` of `plan` takes.
using StepTimer = std::function<double(const Plan& plan, const Step& st)>;

/// Each kernel step of `final` that `first` also ran as a kernel (the same group) keeps
/// whichever of the two runs faster (Note [Tiering]): its kernel, task count, extent and
/// packed operands. Returns how many of `first`'s kernels were kept. `timer` (tests): how
/// steps are timed; null: best of three runs on scratch buffers.
uint64_t keep_faster(const Plan& first, Plan& final, const StepTimer& timer = nullptr);

}  // namespace fusor
