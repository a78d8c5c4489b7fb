#include "jit/execute.h"

#include <chrono>
#include <cstring>
#include <functional>
#include <map>

#include "codegen/static/static_backend.h"
#include "jit/bind_run.h"
#include "jit/reference_f64.h"

namespace fusor {

namespace {

// Runs a JIT step's kernel over its tasks. A plan's steps rarely have more than a few
// buffers: their addresses live on the stack.
void run_kernel_step(const Step& st, std::vector<Tensor>& values, const std::vector<TensorType>& types,
                     Parallel& parallel) {
  void* ptrs[64];
  std::vector<void*> heap;
  void** bufs = ptrs;
  if (st.buffers.size() + 1 > 64) {
    heap.resize(st.buffers.size() + 1);
    bufs = heap.data();
  }
  for (size_t i = 0; i < st.buffers.size(); ++i) {
    ValueId v = st.buffers[i];
    Tensor& t = values[size_t(v)];
    if (!t.defined()) t = Tensor::empty(types[size_t(v)].dtype, types[size_t(v)].shape);
    bufs[i] = t.raw();
  }
  for (const auto& [i, packed] : st.packed) bufs[i] = const_cast<void*>(packed->raw());  // read only
  bufs[st.buffers.size()] = const_cast<int64_t*>(&st.extent);  // read by symbolic kernels only
  const CompiledKernel& k = *st.kernel;
  parallel.parallel_for(st.tasks, 1, [&](int64_t b, int64_t e) { k.run(bufs, b, e); });
}

// Runs a static step's node.
void run_static_step(const Step& st, const Graph& g, std::vector<Tensor>& values, const std::vector<TensorType>& types,
                     Parallel& parallel) {
  const Node& n = g.node(st.node);
  StaticKernelArgs args{n, {}, {}, parallel};
  for (ValueId v : n.inputs) args.inputs.push_back(v == kNoValue ? nullptr : &values[size_t(v)]);
  for (ValueId o : n.outputs) {
    Tensor& t = values[size_t(o)];
    if (!t.defined()) t = Tensor::empty(types[size_t(o)].dtype, types[size_t(o)].shape);
    args.outputs.push_back(&t);
  }
  run_static_kernel(args);
}

// A JIT step whose kernel failed its check (Note [Verify mode]): its group on the static
// kernels, the results where the kernel would have written them.
void run_unfused_step(const Plan& plan, const Step& st, std::vector<Tensor>& values, Parallel& parallel) {
  const FusionGroup& grp = plan.fused.groups[size_t(st.group)];
  std::vector<Tensor> outs = run_group_unfused(plan.fused, size_t(st.group), values, parallel);
  for (size_t i = 0; i < grp.outputs.size(); ++i) {
    Tensor& t = values[size_t(grp.outputs[i])];
    if (t.defined())
      std::memcpy(t.raw(), outs[i].raw(), t.nbytes());
    else
      t = std::move(outs[i]);
  }
}

}  // namespace

std::vector<Tensor> run_group_unfused(const FusedGraph& fused, size_t group, const std::vector<Tensor>& values,
                                      Parallel& parallel, std::vector<std::string>* undone) {
  const Graph& g = fused.graph;
  const FusionGroup& grp = fused.groups[group];
  std::vector<char> inside(g.nodes().size(), 0);
  for (NodeId id : grp.nodes) inside[size_t(id)] = 1;
  std::vector<Tensor> local(values.size());
  // The folds whose nodes are in this group, by the value they make.
  std::map<std::string, const FoldedBatchNorm*, std::less<>> folds;
  for (const PassNote& note : fused.log.applied)
    if (note.folded) folds.emplace(note.folded->output, note.folded.get());
  // The folded value `v` from the ops as written, or nullopt when it has no double path or
  // the fold's first node ran in another group.
  std::function<const Tensor*(ValueId)> get;
  auto as_written = [&](ValueId v, const FoldedBatchNorm& f) -> std::optional<Tensor> {
    const Node* first = &g.node(g.value(v).producer);
    if (f.producer.op == OpKind::MatMul && first->op == OpKind::Add) {  // MatMul, then the Add of its folded bias
      const Value& mm = g.value(first->inputs[0]);
      if (mm.kind != ValueKind::NodeOutput || !inside[size_t(mm.producer)]) return std::nullopt;
      first = &g.node(mm.producer);
    }
    if (first->op != f.producer.op || first->inputs.empty()) return std::nullopt;
    const Tensor* x = get(first->inputs[0]);
    std::optional<Tensor> t = batchnorm_as_written_f64(f, *x, fused.types[size_t(v)].shape);
    if (t && undone)
      undone->push_back(std::string(op_name(f.batchnorm.op)) + " " + f.batchnorm.name + " as written after " +
                        std::string(op_name(f.producer.op)) + " " + f.producer.name + ", in f64 (before fold_batchnorm)");
    return t;
  };
  // A value as the unfused group reads it: computed here when a node of the group makes it
  // (never the kernel's), else the run's, else (a view the plan dropped) computed again.
  get = [&](ValueId v) -> const Tensor* {
    if (local[size_t(v)].defined()) return &local[size_t(v)];
    const Value& val = g.value(v);
    const bool ours = val.kind == ValueKind::NodeOutput && inside[size_t(val.producer)];
    if (!ours && values[size_t(v)].defined()) return &values[size_t(v)];
    if (const Tensor* c = g.constant_data(v)) return c;
    FUSOR_ASSERT(val.kind == ValueKind::NodeOutput, "value '", val.name, "' of group ", group, " has no tensor");
    if (auto f = folds.find(val.name); f != folds.end() && fused.types[size_t(v)].dtype == DType::F32)
      if (std::optional<Tensor> t = as_written(v, *f->second)) {
        local[size_t(v)] = std::move(*t);
        return &local[size_t(v)];
      }
    const Node& n = g.node(val.producer);
    StaticKernelArgs args{n, {}, {}, parallel};
    for (ValueId in : n.inputs) args.inputs.push_back(in == kNoValue ? nullptr : get(in));
    for (ValueId o : n.outputs) {
      local[size_t(o)] = Tensor::empty(fused.types[size_t(o)].dtype, fused.types[size_t(o)].shape);
      args.outputs.push_back(&local[size_t(o)]);
    }
    run_static_kernel(args);
    return &local[size_t(v)];
  };
  for (NodeId id : grp.nodes) get(g.node(id).outputs[0]);
  std::vector<Tensor> outs;
  for (ValueId o : grp.outputs) outs.push_back(*get(o));
  return outs;
}

void execute_plan(const Plan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs, Parallel& parallel,
                  ArenaPool& arenas, StepTimes* times, const StepCheck* check) {
  const Graph& g = plan.fused.graph;
  const std::vector<TensorType>& types = plan.fused.types;

  // Every value's tensor: intermediates live in this run's arena (their memory is reused
  // by later values once dead), outputs are allocated for the caller.
  ArenaLease arena(arenas, plan.arena_bytes);
  std::vector<Tensor> values(g.values().size());
  for (ValueId v : plan.placed)
    values[size_t(v)] = Tensor::borrow(arena.base() + plan.arena_offset[size_t(v)], types[size_t(v)].dtype,
                                       types[size_t(v)].shape);
  std::vector<int> uses = plan.uses;
  for (size_t i = 0; i < g.inputs().size(); ++i) values[size_t(g.inputs()[i])] = *feeds[i];
  for (ValueId v : plan.constants) values[size_t(v)] = *g.constant_data(v);

  // Caller-supplied outputs are written in place.
  for (ValueId o : g.outputs()) {
    auto it = outputs.find(g.value(o).name);
    if (it == outputs.end()) continue;
    check_supplied_output(it->first, it->second, types[size_t(o)]);
    if (g.value(o).kind == ValueKind::NodeOutput) values[size_t(o)] = it->second;
  }

  for (const Step& st : plan.steps) {
    const auto step_start = times ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (st.kernel && !st.unfused.get()) {
      run_kernel_step(st, values, types, parallel);
    } else if (st.kernel) {
      run_unfused_step(plan, st, values, parallel);
    } else if (st.alias) {
      const Node& n = g.node(st.node);
      values[size_t(n.outputs[0])] = values[size_t(n.inputs[0])].reshaped(types[size_t(n.outputs[0])].shape);
    } else {
      run_static_step(st, g, values, types, parallel);
    }
    if (check && st.kernel) (*check)(st, values);
    for (ValueId v : st.reads)
      if (--uses[size_t(v)] == 0 && !plan.is_output[size_t(v)] && g.value(v).kind == ValueKind::NodeOutput)
        values[size_t(v)] = Tensor();
    if (times)
      times->add(st.label, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start).count());
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

}  // namespace fusor
