// A slow, obviously-correct executor of KernelSpecs (double precision, plain loops): the
// definition of what a spec means, against which lowering is checked (spec executed vs the
// unfused graph) and every backend's kernels will be.
#pragma once

#include <vector>

#include "codegen/kernel_spec.h"
#include "ir/tensor.h"

namespace fusor::test {

/// Runs `spec` on `buffers` (one tensor per KernelSpec::buffers entry, outputs allocated).
void interpret(const KernelSpec& spec, std::vector<Tensor>& buffers);

}  // namespace fusor::test
