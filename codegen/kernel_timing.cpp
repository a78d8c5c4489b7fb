#include "codegen/kernel_timing.h"

#include <algorithm>
#include <chrono>

namespace fusor {

ScratchOperands::ScratchOperands(const CompiledKernel& kernel) {
  const KernelSpec& spec = kernel.spec;
  tensors_.reserve(spec.buffers.size() + kernel.prepacks.size());
  for (const BufferSpec& b : spec.buffers) {
    tensors_.push_back(Tensor::zeros(b.dtype, Shape{std::max<int64_t>(b.elements, 1)}));
    if (b.dtype == DType::F32 && !b.output) {
      float* p = tensors_.back().data<float>();
      for (int64_t i = 0; i < b.elements; ++i)  // a multiplicative hash of i, in [-0.5, 0.5)
        p[i] = float((uint32_t(i) * 2654435761u) >> 22) / 1024.0f - 0.5f;
    }
  }
  pointers_.resize(spec.buffers.size() + 1, nullptr);  // + the extent slot of symbolic kernels
  for (size_t i = 0; i < spec.buffers.size(); ++i) pointers_[i] = tensors_[i].raw();
  kernel.bind_packed(pointers_.data(), tensors_);
}

std::vector<double> task_seconds(const CompiledKernel& kernel, void** buffers, int passes, double budget_seconds) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> best(size_t(std::max<int64_t>(kernel.tasks, 0)), 1e30);
  double spent = 0;
  for (int pass = 0; pass < std::max(passes, 2); ++pass) {
    if (pass >= 2 && spent > budget_seconds) break;
    Clock::time_point t0 = Clock::now();
    const Clock::time_point start = t0;
    for (int64_t t = 0; t < kernel.tasks; ++t) {
      kernel.run(buffers, t, t + 1);
      const Clock::time_point t1 = Clock::now();
      best[size_t(t)] = std::min(best[size_t(t)], std::chrono::duration<double>(t1 - t0).count());
      t0 = t1;
    }
    spent += std::chrono::duration<double>(t0 - start).count();
  }
  return best;
}

double makespan(const std::vector<double>& task_seconds, int threads) {
  std::vector<double> free_at(size_t(std::max(threads, 1)), 0.0);
  for (double s : task_seconds) {
    auto next = std::min_element(free_at.begin(), free_at.end());
    *next += s;
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace fusor
