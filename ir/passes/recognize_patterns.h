// recognize_patterns: collapses decomposed subgraphs into the single ops they spell, so
// later passes and kernels see one Gelu / LayerNormalization / Softmax:
//   GELU    x * 0.5 * (1 + erf(x / sqrt2))           (any association of the products)
//           0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
//   LayerNorm  m = mean(x); d = x - m; v = mean(d^2); (d / sqrt(v + eps)) * gamma + beta
//   Softmax    exp(x [- max(x)]) / sum(exp(...))  over one axis
// A match is taken only when every intermediate value is consumed inside the match and
// is not a graph output. Layer: ir/passes (std only).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/passes/fusion_options.h"
#include "ir/passes/pattern.h"

namespace fusor {

/// One recognized subgraph and the single op that replaces it.
struct PatternMatch {
  std::string pattern;          ///< "gelu_erf", "gelu_tanh", "layernorm", "softmax", ...
  std::vector<NodeId> nodes;    ///< the matched nodes (all removed)
  OpKind op;                    ///< the replacement
  std::vector<ValueId> inputs;  ///< its inputs (values of the old graph)
  Attributes attrs;
  ValueId output;               ///< the old value it produces
};

/// Matchers, each anchored at one node kind (Erf / Tanh, ReduceMean, Exp).
std::optional<PatternMatch> match_gelu(const PatternContext& ctx, const Node& anchor);
std::optional<PatternMatch> match_layernorm(const PatternContext& ctx, const Node& anchor);
std::optional<PatternMatch> match_softmax(const PatternContext& ctx, const Node& anchor);

/// Applies every non-overlapping match. The replacement takes the name of the match's
/// last node and the name of its output value.
Graph recognize_patterns(const Graph& g, const FusionOptions& options, FusionLog* log);

}  // namespace fusor
