// Running a JIT backend's kernels in tests, for every backend: a kernel run three ways
// (serially, split over a thread pool, by the spec interpreter) and one checker that
// lowers, compiles and compares a kind of group against the static run and the
// interpreter. Never passes silently.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/compiled_kernel.h"
#include "ir/passes/pipeline.h"

namespace fusor::test {

/// A kernel's outputs three ways, for comparison: run serially (outputs start at 0), over
/// test::pool() (outputs start at NaN, so a missed element shows), and by the spec
/// interpreter (when asked). Inputs are the given values of the fused graph.
struct KernelRuns {
  std::vector<Tensor> serial, pooled, interp;  ///< one per spec buffer (inputs shared)
  std::vector<ValueId> outs;                   ///< the output buffers' values, in order
};
/// A symbolic kernel (k.spec.symbolic) runs `spec` (the exact spec it stands for) at outer
/// extent `extent`.
KernelRuns run_kernel(const CompiledKernel& k, const KernelSpec& spec, const FusedGraph& f,
                      const std::vector<Tensor>& values, bool interpret, int64_t extent = -1);

/// Tolerances of a backend's kernel, per element |got - want| <= rel * |want| + abs.
struct Tol {
  double interp_rel = 0, interp_abs = 0;  ///< vs the spec interpreter
  double static_rel = 0, static_abs = 0;  ///< vs the static kernels run node by node
  bool interpret = true;                  ///< false: too big for the double interpreter
  bool against_static = true;             ///< false: the static kernel differs by design
};

/// What check_groups compiled.
struct Checked {
  int kernels = 0;
  int64_t compile_us = 0;
  std::vector<KernelSpec> specs;
  std::vector<std::shared_ptr<const CompiledKernel>> compiled;
};

/// What a kernel is called with, as the engine passes it: `buffers`' addresses, with each
/// constant the kernel reads packed (CompiledKernel::prepacks) replaced by its packed copy,
/// kept in `packed`.
std::vector<void*> kernel_pointers(const CompiledKernel& k, std::vector<Tensor>& buffers, std::vector<Tensor>& packed);

/// Every group of `kind` in f lowered to its spec, in order (REQUIREs that each lowers).
std::vector<KernelSpec> lower_groups(const FusedGraph& f, GroupKind kind);

/// Lowers every group of `kind` in f, compiles it with `be`, runs it serially and split over
/// pool() (the two must agree exactly) and compares its outputs with the static run of f on
/// `inputs` and with the interpreter, with the tolerance tol(spec) gives. `prepare`, when
/// set, changes each lowered spec before it is compiled (e.g. mark_bf16).
Checked check_groups(JitBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs, GroupKind kind,
                     const std::function<Tol(const KernelSpec&)>& tol,
                     const std::function<void(KernelSpec&)>& prepare = {});

}  // namespace fusor::test
