#include "jit/engine.h"

#include <cstring>

#include "cache/keyed_cache.h"
#include "cache/plan_key.h"
#include "codegen/static/static_backend.h"
#include "ir/hash.h"
#include "ir/passes/explain.h"
#include "ir/passes/pipeline.h"
#include "ir/verifier.h"
#include "jit/arena.h"
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

uint64_t EngineOptions::hash() const {
  Hasher h;
  h.str("EngineOptions-v1").u64(uint64_t(backend)).u64(fuse).u64(fuse ? fusion.hash() : 0);
  return h.digest();
}

namespace {

// One (graph, input signature)'s schedule: the fused graph, the node order, and when each
// value may be freed.
struct Plan {
  FusedGraph fused;
  std::vector<NodeId> order;          // every node, group by group
  std::vector<int> uses;              // per value: reads by nodes in `order`
  std::vector<char> is_output;        // per value
  std::vector<char> is_alias;         // per node: runs as a zero-copy reshape
  std::vector<int64_t> arena_offset;  // per value: its place in the run's arena, or -1
  int64_t arena_bytes = 0;
};

// Lays the plan's intermediates out in one arena by liveness (jit/arena.h). A value lives
// from the step that writes it to the last step that reads it or any reshape view of it;
// graph outputs and views are not placed (outputs go to the caller, views alias).
void plan_arena(Plan& plan, const Graph& g, const std::vector<TensorType>& types) {
  size_t nv = g.values().size();
  std::vector<ValueId> root(nv);
  for (size_t v = 0; v < nv; ++v) root[v] = ValueId(v);
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t step = 0; step < plan.order.size(); ++step) {
    const Node& n = g.node(plan.order[step]);
    if (plan.is_alias[size_t(plan.order[step])]) root[size_t(n.outputs[0])] = root[size_t(n.inputs[0])];
    for (ValueId v : n.inputs)
      if (v != kNoValue) last[size_t(root[size_t(v)])] = int(step);
    for (ValueId o : n.outputs)
      if (first[size_t(o)] < 0) first[size_t(o)] = int(step);
  }
  std::vector<ArenaItem> items;
  std::vector<ValueId> placed;
  for (size_t v = 0; v < nv; ++v) {
    if (root[v] != ValueId(v) || plan.is_output[v] || g.values()[v].kind != ValueKind::NodeOutput || first[v] < 0)
      continue;
    int64_t bytes = types[v].shape.numel() * int64_t(dtype_size(types[v].dtype));
    items.push_back(ArenaItem{bytes, first[v], std::max(first[v], last[v])});
    placed.push_back(ValueId(v));
  }
  std::vector<int64_t> offsets;
  plan.arena_bytes = layout_arena(items, &offsets);
  plan.arena_offset.assign(nv, -1);
  for (size_t i = 0; i < placed.size(); ++i) plan.arena_offset[size_t(placed[i])] = offsets[i];
}

FusionOptions effective_fusion(const EngineOptions& o) {
  if (o.fuse) return o.fusion;
  FusionOptions none;
  none.fold_batchnorm = none.recognize_patterns = none.merge_parallel_matmuls = none.group = false;
  return none;
}

std::string list_inputs(const Graph& g) {
  std::string s;
  for (ValueId v : g.inputs()) s += (s.empty() ? "" : ", ") + g.value(v).name;
  return s.empty() ? "none" : s;
}

// Checks the caller's tensors against the graph inputs (names, dtypes, shapes) and returns
// them with their types, in g.inputs() order.
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

struct Engine::Impl {
  explicit Impl(EngineOptions o) : options(o), pool(o.num_threads) {}

  // Runs one node on the static backend (also the trace-time constant evaluator).
  std::vector<Tensor> evaluate(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<TensorType>& types) {
    std::vector<Tensor> outs;
    for (const TensorType& t : types) outs.push_back(Tensor::empty(t.dtype, t.shape));
    StaticKernelArgs args{n, ins, {}, pool};
    for (Tensor& t : outs) args.outputs.push_back(&t);
    run_static_kernel(args);
    return outs;
  }

  FusedGraph fuse(const Graph& g, const std::vector<TensorType>& input_types) {
    verify(g);
    return fuse_graph(g, input_types, effective_fusion(options),
                      [this](const Node& n, const std::vector<const Tensor*>& ins, const std::vector<TensorType>& t) {
                        return evaluate(n, ins, t);
                      });
  }

  std::shared_ptr<const Plan> build_plan(const Graph& g, const std::vector<TensorType>& input_types) {
    auto plan = std::make_shared<Plan>();
    plan->fused = fuse(g, input_types);
    const Graph& fg = plan->fused.graph;
    for (const FusionGroup& grp : plan->fused.groups) plan->order.insert(plan->order.end(), grp.nodes.begin(), grp.nodes.end());
    plan->uses.assign(fg.values().size(), 0);
    for (NodeId n : plan->order)
      for (ValueId v : fg.node(n).inputs)
        if (v != kNoValue) ++plan->uses[size_t(v)];
    plan->is_output.assign(fg.values().size(), 0);
    for (ValueId o : fg.outputs()) plan->is_output[size_t(o)] = 1;
    plan->is_alias.assign(fg.nodes().size(), 0);
    for (size_t i = 0; i < fg.nodes().size(); ++i) {
      OpKind op = fg.nodes()[i].op;
      bool reshape_like = op == OpKind::Reshape || op == OpKind::Flatten || op == OpKind::Squeeze || op == OpKind::Unsqueeze;
      plan->is_alias[i] = reshape_like && !plan->is_output[size_t(fg.nodes()[i].outputs[0])];
    }
    plan_arena(*plan, fg, plan->fused.types);
    return plan;
  }

  EngineOptions options;
  ThreadPool pool;
  KeyedCache<PlanKey, Plan, PlanKeyHash> plans;
  ArenaPool arenas;
};

namespace {
// Holds a run's arena and gives it back to the pool however the run ends.
class ArenaLease {
 public:
  ArenaLease(ArenaPool& pool, int64_t bytes) : pool_(pool), bytes_(bytes), block_(bytes ? pool.acquire(bytes) : nullptr) {}
  ~ArenaLease() {
    if (block_) pool_.release(std::move(block_), bytes_);
  }
  char* base() const { return static_cast<char*>(block_.get()); }

 private:
  ArenaPool& pool_;
  int64_t bytes_;
  std::shared_ptr<void> block_;
};
}  // namespace

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(options)) {}
Engine::~Engine() = default;

const EngineOptions& Engine::options() const { return impl_->options; }

EngineStats Engine::stats() const {
  CacheStats s = impl_->plans.stats();
  return EngineStats{s.hits, s.misses, s.entries};
}

TensorMap Engine::run(const Graph& graph, const TensorMap& inputs) {
  TensorMap outputs;
  run(graph, inputs, outputs);
  return outputs;
}

void Engine::run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs) {
  for (const auto& [name, t] : outputs) {
    bool found = false;
    for (ValueId o : graph.outputs()) found |= graph.value(o).name == name;
    FUSOR_CHECK(found, InvalidArgument, "'", name, "' was supplied as an output but graph '", graph.name(),
                "' has no output of that name");
  }
  std::vector<const Tensor*> feeds;
  PlanKey key;
  key.inputs = bind_inputs(graph, inputs, &feeds);
  key.graph_fingerprint = graph.fingerprint();
  key.options_hash = impl_->options.hash();
  std::shared_ptr<const Plan> plan =
      impl_->plans.get_or_build(key, [&] { return impl_->build_plan(graph, key.inputs); });
  const Graph& g = plan->fused.graph;
  const std::vector<TensorType>& types = plan->fused.types;

  // Every value's tensor: intermediates live in this run's arena (their memory is reused
  // by later values once dead), outputs are allocated for the caller.
  ArenaLease arena(impl_->arenas, plan->arena_bytes);
  std::vector<Tensor> values(g.values().size());
  for (size_t v = 0; v < g.values().size(); ++v)
    if (plan->arena_offset[v] >= 0)
      values[v] = Tensor::borrow(arena.base() + plan->arena_offset[v], types[v].dtype, types[v].shape);
  std::vector<int> uses = plan->uses;
  for (size_t i = 0; i < g.inputs().size(); ++i) values[size_t(g.inputs()[i])] = *feeds[i];
  for (size_t v = 0; v < g.values().size(); ++v)
    if (const Tensor* c = g.constant_data(ValueId(v))) values[v] = *c;

  // Caller-supplied outputs are written in place.
  for (ValueId o : g.outputs()) {
    auto it = outputs.find(g.value(o).name);
    if (it == outputs.end()) continue;
    const TensorType& want = types[size_t(o)];
    const Tensor& t = it->second;
    FUSOR_CHECK(t.defined() && t.dtype() == want.dtype && t.shape() == want.shape, ShapeMismatch, "output '",
                it->first, "' was supplied as ", t.defined() ? t.type_str() : "an undefined tensor", " but is ",
                want.str());
    if (g.value(o).kind == ValueKind::NodeOutput) values[size_t(o)] = t;
  }

  for (NodeId id : plan->order) {
    const Node& n = g.node(id);
    // Reshape-like ops on contiguous tensors are views: the output shares the input's
    // buffer (graph outputs are still copied, so callers never alias inputs or weights).
    if (plan->is_alias[size_t(id)]) {
      values[size_t(n.outputs[0])] = values[size_t(n.inputs[0])].reshaped(types[size_t(n.outputs[0])].shape);
    } else {
      StaticKernelArgs args{n, {}, {}, impl_->pool};
      for (ValueId v : n.inputs) args.inputs.push_back(v == kNoValue ? nullptr : &values[size_t(v)]);
      for (ValueId o : n.outputs) {
        Tensor& t = values[size_t(o)];
        if (!t.defined()) t = Tensor::empty(types[size_t(o)].dtype, types[size_t(o)].shape);
        args.outputs.push_back(&t);
      }
      run_static_kernel(args);
    }
    for (ValueId v : n.inputs) {
      if (v == kNoValue) continue;
      if (--uses[size_t(v)] == 0 && !plan->is_output[size_t(v)] && g.value(v).kind == ValueKind::NodeOutput)
        values[size_t(v)] = Tensor();
    }
  }

  for (ValueId o : g.outputs()) {
    const std::string& name = g.value(o).name;
    auto it = outputs.find(name);
    bool produced = g.value(o).kind == ValueKind::NodeOutput;
    if (it == outputs.end()) {
      // Graph inputs and constants returned as outputs are copies, so the caller never
      // aliases its own input or the graph's weights through an output.
      outputs.emplace(name, produced ? values[size_t(o)] : values[size_t(o)].clone());
    } else if (!produced && it->second.nbytes()) {
      std::memcpy(it->second.raw(), values[size_t(o)].raw(), it->second.nbytes());
    }
  }
}

std::string Engine::explain(const Graph& graph, const DimBindings& dims, bool json) {
  FusedGraph fused = impl_->fuse(graph, input_types_from_dims(graph, dims));
  return json ? explain_json(fused, dims) : explain_text(fused, dims);
}

}  // namespace fusor
