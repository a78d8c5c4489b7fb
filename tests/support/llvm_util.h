// The llvm backend for tests: shared by every llvm suite, or nullptr after saying why the
// test is skipped (a build without LLVM). Never passes silently.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/llvm_backend.h"
#include "ir/passes/pipeline.h"

namespace fusor::test {

inline LlvmBackend* llvm_backend_or_skip() {
  static std::unique_ptr<LlvmBackend> backend;  // one JIT for the test process
  static std::string why;
  if (!backend && why.empty()) {
    try {
      backend = make_llvm_backend();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      why = e.what();
    }
  }
  if (!backend) MESSAGE("skipped: " << why);
  return backend.get();
}

/// A kernel's outputs three ways, for comparison: run serially (outputs start at 0), over
/// test::pool() (outputs start at NaN, so a missed element shows), and by the spec
/// interpreter (when asked). Inputs are the given values of the fused graph.
struct KernelRuns {
  std::vector<Tensor> serial, pooled, interp;  ///< one per spec buffer (inputs shared)
  std::vector<ValueId> outs;                   ///< the output buffers' values, in order
};
KernelRuns run_kernel(const CompiledKernel& k, const KernelSpec& spec, const FusedGraph& f,
                      const std::vector<Tensor>& values, bool interpret);

}  // namespace fusor::test
