#include "jit/engine.h"

#include <cstring>
#include <mutex>

#include "codegen/static/static_backend.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "jit/thread_pool.h"

namespace fusor {

std::string_view backend_name(BackendKind b) {
  switch (b) {
    case BackendKind::Static: return "static";
  }
  return "?";
}

BackendKind parse_backend(std::string_view name) {
  if (name == "static") return BackendKind::Static;
  fail(ErrorCode::InvalidArgument, "unknown backend '", name, "' (this build has: static)");
}

struct Engine::Impl {
  explicit Impl(EngineOptions o) : options(o), pool(o.num_threads) {}
  EngineOptions options;
  ThreadPool pool;
  std::mutex run_mu;  // one run at a time until plans are immutable and shareable
};

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(options)) {}
Engine::~Engine() = default;

const EngineOptions& Engine::options() const { return impl_->options; }

TensorMap Engine::run(const Graph& graph, const TensorMap& inputs) {
  TensorMap outputs;
  run(graph, inputs, outputs);
  return outputs;
}

namespace {

std::string list_inputs(const Graph& g) {
  std::string s;
  for (ValueId v : g.inputs()) s += (s.empty() ? "" : ", ") + g.value(v).name;
  return s.empty() ? "none" : s;
}

// Binds the caller's tensors to the graph inputs (checking names, dtypes and shapes) and
// returns the input types in g.inputs() order.
std::vector<TensorType> bind_inputs(const Graph& g, const TensorMap& inputs, std::vector<const Tensor*>* feeds) {
  for (const auto& [name, t] : inputs) {
    ValueId v = g.find_value(name);
    FUSOR_CHECK(v != kNoValue && g.value(v).kind == ValueKind::Input, InvalidArgument, "graph '", g.name(),
                "' has no input named '", name, "' (its inputs: ", list_inputs(g), ")");
    FUSOR_CHECK(t.defined(), InvalidArgument, "input '", name, "' is an undefined tensor");
    FUSOR_CHECK(t.device() == Device::Host, DeviceUnavailable, "input '", name,
                "' is on a device this backend cannot read");
  }
  DimBindings dims;
  std::vector<TensorType> types;
  for (ValueId v : g.inputs()) {
    const std::string& name = g.value(v).name;
    auto it = inputs.find(name);
    FUSOR_CHECK(it != inputs.end(), InvalidArgument, "input '", name, "' of graph '", g.name(),
                "' was not given (its inputs: ", list_inputs(g), ")");
    TensorType t{it->second.dtype(), it->second.shape()};
    bind_input(g, v, t, &dims);
    types.push_back(std::move(t));
    feeds->push_back(&it->second);
  }
  return types;
}

}  // namespace

void Engine::run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs) {
  std::lock_guard<std::mutex> lk(impl_->run_mu);
  verify(graph);
  for (const auto& [name, t] : outputs) {
    bool found = false;
    for (ValueId o : graph.outputs()) found |= graph.value(o).name == name;
    FUSOR_CHECK(found, InvalidArgument, "'", name, "' was supplied as an output but graph '", graph.name(),
                "' has no output of that name");
  }
  std::vector<const Tensor*> feeds;
  std::vector<TensorType> input_types = bind_inputs(graph, inputs, &feeds);
  std::vector<TensorType> types = infer_types(graph, input_types);

  // Every value's tensor; intermediates are released after their last use.
  std::vector<Tensor> values(graph.values().size());
  std::vector<int> uses(graph.values().size(), 0);
  for (const Node& n : graph.nodes())
    for (ValueId v : n.inputs)
      if (v != kNoValue) ++uses[size_t(v)];
  std::vector<char> is_output(graph.values().size(), 0);
  for (ValueId o : graph.outputs()) is_output[size_t(o)] = 1;
  for (size_t i = 0; i < graph.inputs().size(); ++i) values[size_t(graph.inputs()[i])] = *feeds[i];
  for (size_t v = 0; v < graph.values().size(); ++v)
    if (const Tensor* c = graph.constant_data(ValueId(v))) values[v] = *c;

  // Caller-supplied outputs are written in place.
  for (ValueId o : graph.outputs()) {
    auto it = outputs.find(graph.value(o).name);
    if (it == outputs.end()) continue;
    const TensorType& want = types[size_t(o)];
    const Tensor& t = it->second;
    FUSOR_CHECK(t.defined() && t.dtype() == want.dtype && t.shape() == want.shape, ShapeMismatch, "output '",
                it->first, "' was supplied as ", t.defined() ? t.type_str() : "an undefined tensor", " but is ",
                want.str());
    if (graph.value(o).kind == ValueKind::NodeOutput) values[size_t(o)] = t;
  }

  for (const Node& n : graph.nodes()) {
    StaticKernelArgs args{n, {}, {}, impl_->pool};
    for (ValueId v : n.inputs) args.inputs.push_back(v == kNoValue ? nullptr : &values[size_t(v)]);
    for (ValueId o : n.outputs) {
      Tensor& t = values[size_t(o)];
      if (!t.defined()) t = Tensor::empty(types[size_t(o)].dtype, types[size_t(o)].shape);
      args.outputs.push_back(&t);
    }
    run_static_kernel(args);
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      if (--uses[size_t(v)] == 0 && !is_output[size_t(v)] && graph.value(v).kind == ValueKind::NodeOutput)
        values[size_t(v)] = Tensor();
    }
  }

  for (ValueId o : graph.outputs()) {
    const std::string& name = graph.value(o).name;
    auto it = outputs.find(name);
    if (it == outputs.end()) {
      // Graph inputs and constants returned as outputs are copied, so the caller never
      // aliases its own input or the graph's weights through an output.
      ValueKind k = graph.value(o).kind;
      outputs.emplace(name, k == ValueKind::NodeOutput ? values[size_t(o)] : values[size_t(o)].clone());
    } else if (graph.value(o).kind != ValueKind::NodeOutput && it->second.nbytes()) {
      std::memcpy(it->second.raw(), values[size_t(o)].raw(), it->second.nbytes());
    }
  }
}

}  // namespace fusor
