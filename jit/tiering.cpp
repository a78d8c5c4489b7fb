#include "jit/tiering.h"

#include <algorithm>
#include <chrono>
#include <vector>

namespace fusor {

namespace {

// Seconds of the best of three runs of step st's kernel on scratch buffers (constants and
// packed weights as the plan has them; other inputs a fixed pattern).
double time_step(const Plan& plan, const Step& st) {
  const CompiledKernel& k = *st.kernel;
  std::vector<Tensor> scratch;
  std::vector<void*> bufs(st.buffers.size() + 1);
  for (size_t i = 0; i < st.buffers.size(); ++i) {
    const BufferSpec& b = k.spec.buffers[i];
    const int64_t elements = plan.fused.types[size_t(st.buffers[i])].shape.numel();  // a symbolic spec has 0
    if (const Tensor* c = plan.fused.graph.constant_data(st.buffers[i])) {
      bufs[i] = const_cast<void*>(c->raw());
    } else {
      scratch.push_back(Tensor::zeros(b.dtype, Shape{elements}));
      if (b.dtype == DType::F32 && !b.output) std::fill_n(scratch.back().data<float>(), elements, 0.5f);
      bufs[i] = scratch.back().raw();
    }
  }
  for (const auto& [i, packed] : st.packed) bufs[i] = const_cast<void*>(packed->raw());
  bufs[st.buffers.size()] = const_cast<int64_t*>(&st.extent);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    k.run(bufs.data(), 0, st.tasks);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

uint64_t keep_faster(const Plan& first, Plan& final, const StepTimer& timer) {
  const StepTimer time = timer ? timer : StepTimer(time_step);
  uint64_t kept = 0;
  for (Step& st : final.steps) {
    if (!st.kernel) continue;
    for (const Step& old : first.steps) {
      if (!old.kernel || old.buffers != st.buffers || !old.kernel->spec.same_code(st.kernel->spec)) continue;
      if (time(first, old) < time(final, st)) {
        // Everything the step's kernel decides comes with it: its task count above all (an
        // asmjit convolution splits into more tasks than LLVM's, and run with LLVM's count it
        // left most of its output unwritten).
        st.kernel = old.kernel;
        st.tasks = old.tasks;
        st.extent = old.extent;
        st.packed = old.packed;
        st.label = old.label;
        ++kept;
      }
      break;
    }
  }
  return kept;
}

}  // namespace fusor
