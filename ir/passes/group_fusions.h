// group_fusions: partitions a traced graph into the groups that become kernels. See
// Note [Grouping rules] in group_fusions.cpp. Layer: ir/passes (std only).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "ir/passes/fusion_options.h"

namespace fusor {

/// What kind of kernel a group becomes.
enum class GroupKind : uint8_t {
  Pointwise,    ///< one N-d index space, an expression DAG of pointwise ops
  Reduction,    ///< row reductions (softmax, layernorm, reduce) with pointwise prologue/epilogue
  Contraction,  ///< GEMM / batched GEMM / Conv with a pointwise epilogue
  Attention,    ///< softmax(Q·Kᵀ ∘ pointwise) · V in one kernel: no T×T matrix in memory
  Opaque,       ///< a single op with its own kernel (pool, gather, concat, ...)
  View,         ///< no kernel: a reshape / transpose / slice seen through strides
};

/// "pointwise", "reduction", "contraction", "opaque", "view".
std::string_view group_kind_name(GroupKind k);

/// One fused group.
struct FusionGroup {
  GroupKind kind = GroupKind::Opaque;
  std::string pattern;            ///< what formed it: "conv+add+relu", "add+layernormalization", ...
  std::vector<NodeId> nodes;      ///< in a valid execution order
  NodeId anchor = -1;             ///< the contraction, reduction or softmax node (-1 otherwise)
  std::vector<ValueId> inputs;    ///< values read from outside the group
  std::vector<ValueId> outputs;   ///< values written by the group (read outside, or graph outputs)
};

/// The groups of g in execution order (dependencies first). With options.group off every
/// node is its own group (the unfused baseline). Declined fusions go to the log.
std::vector<FusionGroup> group_fusions(const Graph& g, const FusionOptions& options, FusionLog* log);

/// The groups an attention group of g becomes where no kernel computes it whole (a backend
/// declines it): a contraction (the QK MatMul, the score ops and their side-input ops as its
/// epilogue), the Softmax's row reduction, and a contraction (the PV MatMul with the group's
/// epilogue and output transpose), in execution order with their inputs and outputs; the
/// scores and the probabilities become intermediates.
std::vector<FusionGroup> split_attention(const Graph& g, const FusionGroup& attention);

/// The group kind a single op has on its own.
GroupKind op_group_kind(OpKind op);

}  // namespace fusor
