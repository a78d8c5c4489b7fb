// Timing a compiled kernel apart from any plan: scratch operands of its spec's sizes, each
// task's fastest time over a few passes, and the makespan of those tasks on some threads.
// What a tuned compile measures its candidate tilings with (Note [Tuned tilings],
// codegen/llvm/emit_contraction.cpp). Layer: codegen.
#pragma once

#include <cstdint>
#include <vector>

#include "codegen/compiled_kernel.h"
#include "ir/tensor.h"

namespace fusor {

/// Operands for running `kernel` on nothing in particular: every buffer of its spec at its
/// size, f32 ones holding a fixed pattern of values in [-0.5, 0.5) (no NaN, infinity or
/// denormal to slow a pass), others zero (valid indices, false conditions), its prepacked
/// constants packed from those. The outputs are written by the runs and read by nobody.
class ScratchOperands {
 public:
  explicit ScratchOperands(const CompiledKernel& kernel);
  /// The buffer array the kernel is called with.
  void** buffers() { return pointers_.data(); }

 private:
  std::vector<Tensor> tensors_;
  std::vector<void*> pointers_;
};

/// Seconds of each task of `kernel` over [0, kernel.tasks), run in order on the calling
/// thread (so the caches hold what a thread's consecutive tasks share, as in a real run)
/// for `passes` passes (at least 2; fewer once a pass took more than `budget_seconds` in
/// all): each task's fastest pass. Another process's work only ever slows a pass, so the
/// minimum is the kernel's own time even on a busy machine.
std::vector<double> task_seconds(const CompiledKernel& kernel, void** buffers, int passes = 3,
                                 double budget_seconds = 0.25);

/// The time `threads` threads take to run tasks of these durations when each takes the next
/// task as soon as it finishes one (the thread pool's claims, task by task).
double makespan(const std::vector<double>& task_seconds, int threads);

}  // namespace fusor
