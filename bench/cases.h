// The benchmark cases of ../shared/BENCH.md ("The cases fusor's benchmarks report"), each a
// graph plus inputs plus the work it does, in one list that every benchmark binary iterates.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "ir/graph.h"
#include "ir/passes/group_fusions.h"
#include "jit/engine.h"

namespace fusor::bench {

/// One case: how to build its graph and inputs, and the work one run does.
struct BenchCase {
  std::string name;       ///< e.g. "matmul_bias_gelu_128x768x3072"
  double flops;           ///< floating-point operations of one run (0 for memory-bound cases)
  double bytes;           ///< bytes a perfect fused kernel must move (inputs + outputs)
  std::function<void(Graph*, TensorMap*)> make;
};

/// Every case, in report order.
const std::vector<BenchCase>& bench_cases();

/// The spec of the first group of `kind` in bench case `name`, lowered as the engine would
/// (Error(Internal) when it has none).
KernelSpec spec_of_case(const std::string& name, GroupKind kind);

/// The cases of the GPU benchmarks (bench/gpu_bench.cpp), at the batch sizes a GPU serves:
/// the BERT-base layer at batch 8 (sequence 37, 128, 384; f32 and f16), the ResNet
/// bottleneck at batch 32 (56x56), Linear+bias+GELU at 4096x768x3072 (f32 and f16) and a
/// 5-op elementwise chain over 128M floats. Names end in the dtype.
const std::vector<BenchCase>& gpu_bench_cases();

}  // namespace fusor::bench
