#include "jit/execute.h"

#include <chrono>
#include <cstring>

#include "codegen/static/static_backend.h"
#include "jit/bind_run.h"

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

}  // namespace

void execute_plan(const Plan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs, Parallel& parallel,
                  ArenaPool& arenas, StepTimes* times) {
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
    if (st.kernel) {
      run_kernel_step(st, values, types, parallel);
    } else if (st.alias) {
      const Node& n = g.node(st.node);
      values[size_t(n.outputs[0])] = values[size_t(n.inputs[0])].reshaped(types[size_t(n.outputs[0])].shape);
    } else {
      run_static_step(st, g, values, types, parallel);
    }
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
