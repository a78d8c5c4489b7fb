#include "jit/fuse.h"

#include "codegen/static/static_backend.h"
#include "ir/passes/trace.h"
#include "ir/verifier.h"

namespace fusor {

FusionOptions effective_fusion(const EngineOptions& o) {
  if (o.fuse) return o.fusion;
  FusionOptions none;
  none.fold_batchnorm = none.recognize_patterns = none.merge_parallel_matmuls = none.group = false;
  return none;
}

ConstantEvaluator static_constant_evaluator(Parallel& parallel) {
  return [&parallel](const Node& n, const std::vector<const Tensor*>& ins, const std::vector<TensorType>& types) {
    std::vector<Tensor> outs;
    for (const TensorType& t : types) outs.push_back(Tensor::empty(t.dtype, t.shape));
    StaticKernelArgs args{n, ins, {}, parallel};
    for (Tensor& t : outs) args.outputs.push_back(&t);
    run_static_kernel(args);
    return outs;
  };
}

std::vector<TensorType> output_types(const Graph& g, const DimBindings& dims) {
  verify(g);
  TracedGraph t = trace(g, input_types_from_dims(g, dims), static_constant_evaluator(serial_parallel()));
  std::vector<TensorType> out;
  for (ValueId o : t.graph.outputs()) out.push_back(t.types[size_t(o)]);
  return out;
}

Fuser::Fuser(const EngineOptions& options, Parallel& parallel, SharedConstants& constants)
    : fusion_(effective_fusion(options)), parallel_(parallel), constants_(constants) {}

FusedGraph Fuser::fuse(const Graph& g, const std::vector<TensorType>& input_types, SharedStorage* shared) const {
  verify(g);
  auto derive = [this, shared](const ConstantDerivation& d, const std::function<std::vector<Tensor>()>& make) {
    return constants_.derive(d, make, shared);
  };
  return fuse_graph(g, input_types, fusion_, static_constant_evaluator(parallel_), derive);
}

}  // namespace fusor
