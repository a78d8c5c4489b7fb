// The explain report of one (graph, shapes): every group, the pattern that formed it, the
// fusions declined and why, kernel counts and intermediate bytes before and after.
// Layer: ir/passes (std only).
#pragma once

#include <string>

#include "ir/passes/pipeline.h"
#include "ir/shape_inference.h"

namespace fusor {

/// Renders the report as text for people.
std::string explain_text(const FusedGraph& fused, const DimBindings& dims);

/// Renders the report as one JSON object: graph, dims, kernels_before, kernels_after,
/// compute_groups, folded_nodes, intermediate_bytes_before/after, passes [{pass, node,
/// message}], groups [{kind, pattern, ops [{name, op}], inputs, outputs [{name, type}]}],
/// declined [{producer, consumer, reason, detail}].
std::string explain_json(const FusedGraph& fused, const DimBindings& dims);

}  // namespace fusor
