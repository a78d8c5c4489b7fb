#include "ir/passes/pipeline.h"

#include "ir/passes/fold_batchnorm.h"
#include "ir/passes/fold_gemm_reshapes.h"
#include "ir/passes/graph_rewriter.h"
#include "ir/passes/merge_parallel_matmuls.h"
#include "ir/passes/normalize_attention.h"
#include "ir/passes/pattern.h"
#include "ir/passes/recognize_patterns.h"
#include "ir/passes/sink_squeezes.h"
#include "ir/verifier.h"

namespace fusor {

namespace {

int64_t intermediate_bytes(const Graph& g, const std::vector<TensorType>& types, const std::vector<ValueId>& values) {
  std::vector<char> is_output(g.values().size(), 0);
  for (ValueId o : g.outputs()) is_output[size_t(o)] = 1;
  int64_t bytes = 0;
  for (ValueId v : values)
    if (!is_output[size_t(v)]) bytes += types[size_t(v)].shape.numel() * int64_t(dtype_size(types[size_t(v)].dtype));
  return bytes;
}

// Every pass's result is verified, in all builds: it costs O(nodes) once per plan.
void check(const Graph& g) { verify(g); }

}  // namespace

int FusedGraph::kernels_after() const {
  int k = 0;
  for (const FusionGroup& grp : groups) k += grp.kind != GroupKind::View;
  return k;
}

int64_t FusedGraph::intermediate_bytes_after() const {
  std::vector<ValueId> written;
  for (const FusionGroup& grp : groups)
    if (grp.kind != GroupKind::View) written.insert(written.end(), grp.outputs.begin(), grp.outputs.end());
  return intermediate_bytes(graph, types, written);
}

FusedGraph fuse_graph(const Graph& g, const std::vector<TensorType>& input_types, const FusionOptions& options,
                      const ConstantEvaluator& evaluate, const DeriveConstants& derive) {
  FusedGraph out;
  // 1. Trace first: every later pass matches on concrete shapes and constant values, and
  //    shape computations (Shape, Range, Reshape targets) must already be constants.
  TracedGraph traced = trace(g, input_types, evaluate);
  out.folded_nodes = traced.folded_nodes;
  out.kernels_before = int(traced.graph.nodes().size());
  {
    std::vector<ValueId> produced;
    for (const Node& n : traced.graph.nodes()) produced.insert(produced.end(), n.outputs.begin(), n.outputs.end());
    out.intermediate_bytes_before = intermediate_bytes(traced.graph, traced.types, produced);
  }
  Graph cur = std::move(traced.graph);
  check(cur);
  // 2. Collapse decomposed GELU / LayerNorm / Softmax before anything else rewrites the
  //    subgraphs they are made of, so grouping sees one reduction op, not a chain.
  cur = recognize_patterns(cur, options, &out.log);
  check(cur);
  // 2b. Attention in the exporters' forms becomes Q·Kᵀ -> pointwise -> Softmax -> ·V
  //     (after the Softmax recognizer, whose output the NaN guard reads), before merging
  //     MatMuls, which must not see the scaled Q and K as separate projections' users.
  cur = normalize_attention(cur, options, &out.log);
  check(cur);
  //     Gemm between flattening reshapes becomes a MatMul of the model's shape, so that its
  //     epilogue (after a Reshape until now) fuses; before merging, which takes MatMuls.
  cur = fold_gemm_reshapes(cur, options, &out.log);
  check(cur);
  //     A Squeeze after a contraction (a 1-D convolution's) moves below its pointwise
  //     consumers, so that BN folds and the epilogue fuses; before folding BN.
  cur = sink_squeezes(cur, options, &out.log);
  check(cur);
  // 3. Fold BatchNorm into its producer's weights before merging MatMuls, so merged
  //    weights already carry the folded scale.
  cur = fold_batchnorm(cur, options, &out.log, derive);
  check(cur);
  // 4. Merge sibling MatMuls (QKV) once their weights are final.
  cur = merge_parallel_matmuls(cur, options, &out.log, derive);
  check(cur);
  // 5. Drop what the rewrites left unused (old weights, the max of a collapsed softmax).
  cur = eliminate_dead_nodes(cur);
  check(cur);
  // 6. Group last: it partitions the final graph and changes nothing in it.
  out.types = concrete_types(cur);
  out.groups = group_fusions(cur, options, &out.log);
  out.graph = std::move(cur);
  return out;
}

}  // namespace fusor
