// The static backend: one precompiled, shape-generic, unfused kernel per operator (the
// "static kernels" the JIT is measured against, and the numerical reference of the
// backends). GEMM goes through OpenBLAS; the rest is vectorized C++. Layer: codegen/static.
#pragma once

#include <vector>

#include "codegen/parallel.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace fusor {

/// What a static kernel gets: the node (attributes), its input tensors (nullptr for an
/// omitted optional input; constant inputs included), its output tensors (already
/// allocated with the inferred dtype and shape), and the threads to use.
struct StaticKernelArgs {
  const Node& node;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;
  Parallel& parallel;

  const Tensor& in(int i) const { return *inputs[size_t(i)]; }
  bool has(int i) const { return size_t(i) < inputs.size() && inputs[size_t(i)] != nullptr; }
  Tensor& out(int i = 0) const { return *outputs[size_t(i)]; }
};

/// Runs one node on the static backend. The caller has run shape inference: output shapes
/// are set. Throws the node's error for data-dependent failures (e.g. a Gather index out of
/// range) and Unsupported for dtypes the kernel does not implement.
void run_static_kernel(StaticKernelArgs& args);

}  // namespace fusor
