// The fusion pipeline: trace, then the rewriting passes in one fixed order, then grouping.
// This is the one place the pass order is written down, with the reason for each step at
// its call site (pipeline.cpp). Layer: ir/passes (std only).
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/op_schema.h"
#include "ir/passes/derived_constants.h"
#include "ir/passes/fusion_options.h"
#include "ir/passes/group_fusions.h"
#include "ir/passes/trace.h"

namespace fusor {

/// A graph traced for one shape signature, rewritten and partitioned into groups.
struct FusedGraph {
  Graph graph;                        ///< the traced, rewritten graph the groups refer to
  std::vector<TensorType> types;      ///< type of every value of `graph`
  std::vector<FusionGroup> groups;    ///< in execution order
  FusionLog log;                      ///< what the passes did and declined
  int folded_nodes = 0;               ///< nodes trace folded into constants
  int kernels_before = 0;             ///< ops of the traced graph: kernels when unfused
  int64_t intermediate_bytes_before = 0;  ///< bytes of intermediates the unfused graph writes
  /// Kernels after fusion (groups that are not views).
  int kernels_after() const;
  /// Bytes of intermediates the fused graph still writes (non-view group outputs that are
  /// not graph outputs).
  int64_t intermediate_bytes_after() const;
};

/// Traces g for the input types (g.inputs() order) and fuses it. The graph is verified
/// after every pass (a failure is an Internal error: a pass bug). Constants the passes
/// derive (merged and folded weights) come through `derive` when given.
FusedGraph fuse_graph(const Graph& g, const std::vector<TensorType>& input_types, const FusionOptions& options,
                      const ConstantEvaluator& evaluate, const DeriveConstants& derive = {});

}  // namespace fusor
