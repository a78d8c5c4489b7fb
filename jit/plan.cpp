#include "jit/plan.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "codegen/lower.h"
#include "codegen/precision.h"
#include "ir/passes/group_fusions.h"
#include "jit/arena.h"

namespace fusor {

namespace {

// The kernel step of a group.
Step kernel_step(const Graph& fg, GroupKernel k, SharedConstants& constants) {
  Step st;
  const KernelSpec& spec = k.spec;
  st.kernel = std::move(k.kernel);
  st.extent = k.extent;
  st.tasks = st.kernel->tasks_for(k.extent);
  for (const BufferSpec& b : spec.buffers) {
    ValueId v = fg.find_value(b.name);
    FUSOR_ASSERT(v != kNoValue, "kernel buffer '", b.name, "' is not a value of the plan");
    st.buffers.push_back(v);
    (b.output ? st.writes : st.reads).push_back(v);
  }
  // Constant operands the kernel reads packed: packed once, shared by every plan.
  for (const CompiledKernel::Prepack& pp : st.kernel->prepacks) {
    const Tensor* c = fg.constant_data(st.buffers[size_t(pp.buffer)]);
    FUSOR_ASSERT(c && c->dtype() == DType::F32, "kernel '", spec.name, "' prepacks a buffer that is not an f32 constant");
    st.packed.emplace_back(size_t(pp.buffer), constants.packed(*st.kernel, pp, *c));
  }
  st.label = st.kernel->backend + (k.extent >= 0 ? " symbolic " : " ") + std::string(kernel_kind_name(spec.kind)) + " " +
             spec.name;
  return st;
}

// The static step of node `id`; a reshape that is not a graph output aliases its input.
Step static_step(const Graph& fg, NodeId id, const std::vector<char>& is_output) {
  const Node& n = fg.node(id);
  Step st;
  st.node = id;
  bool reshape_like =
      n.op == OpKind::Reshape || n.op == OpKind::Flatten || n.op == OpKind::Squeeze || n.op == OpKind::Unsqueeze;
  st.alias = reshape_like && !is_output[size_t(n.outputs[0])];
  for (ValueId v : n.inputs)
    if (v != kNoValue) st.reads.push_back(v);
  st.writes = n.outputs;
  st.label = std::string(st.alias ? "view " : "static ") + std::string(op_name(n.op)) + " " + n.name;
  return st;
}

// Counts the reads of every value, and drops each static step whose results nobody reads:
// typically a view that JIT kernels read through strides from its root instead. Backwards,
// so dropping a step can make its producers dead too.
void drop_dead_steps(Plan& plan) {
  plan.uses.assign(plan.fused.graph.values().size(), 0);
  for (const Step& st : plan.steps)
    for (ValueId v : st.reads) ++plan.uses[size_t(v)];
  for (size_t i = plan.steps.size(); i-- > 0;) {
    Step& st = plan.steps[i];
    if (st.kernel) continue;
    bool dead = true;
    for (ValueId o : st.writes) dead &= plan.uses[size_t(o)] == 0 && !plan.is_output[size_t(o)];
    if (!dead) continue;
    for (ValueId v : st.reads) --plan.uses[size_t(v)];
    plan.steps.erase(plan.steps.begin() + std::ptrdiff_t(i));
  }
}

// Lays the plan's intermediates out in one arena by liveness (jit/arena.h). A value lives
// from the step that writes it to the last step that reads it or any reshape view of it;
// graph outputs and views are not placed (outputs go to the caller, views alias).
void plan_arena(Plan& plan) {
  const Graph& g = plan.fused.graph;
  const std::vector<TensorType>& types = plan.fused.types;
  size_t nv = g.values().size();
  std::vector<ValueId> root(nv);
  for (size_t v = 0; v < nv; ++v) root[v] = ValueId(v);
  std::vector<int> first(nv, -1), last(nv, -1);
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Step& st = plan.steps[i];
    if (st.alias) root[size_t(st.writes[0])] = root[size_t(st.reads[0])];
    for (ValueId v : st.reads) last[size_t(root[size_t(v)])] = int(i);
    for (ValueId o : st.writes)
      if (first[size_t(o)] < 0) first[size_t(o)] = int(i);
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
  plan.placed = std::move(placed);
}

// Note [Kernels compiled side by side]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A new shape's plan waits for its kernels, and each group's kernel is independent of the
// others: build_plan asks `choose` for every group before it lays out the steps, on up to
// `compile_threads` threads (the caller and helpers started for this plan alone, not the
// engine's pool, which may be running another request's kernels meanwhile). Each thread
// takes the next group not yet taken, so the long GEMM compiles spread over the threads.
// The kernel source is thread-safe and single-flight, and LLVM compiles each kernel with
// its own TargetMachine (codegen/llvm/llvm_jit.cpp). What a group's `choose` throws is kept
// and rethrown when the steps reach that group, so the error is the first group's in plan
// order, as when they compiled one by one. Fewer than two groups with a kernel kind, one
// thread, or a system that refuses another thread: the groups are chosen on the caller
// alone. The parts of a declined attention (Note [Declined attention]) are chosen the same
// way once it is split.
struct Choice {
  GroupKernel kernel;
  std::exception_ptr error;
};

std::vector<Choice> choose_groups(const FusedGraph& f, size_t first, size_t count, const ChooseKernel& choose,
                                  int compile_threads) {
  std::vector<Choice> out(count);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < count;) {
      try {
        out[i].kernel = choose(f, first + i);
      } catch (...) {
        out[i].error = std::current_exception();
      }
    }
  };
  size_t kernels = 0;
  for (size_t i = first; i < first + count; ++i)
    kernels += f.groups[i].kind != GroupKind::View && f.groups[i].kind != GroupKind::Opaque;
  std::vector<std::thread> helpers;
  const size_t wanted = std::min(size_t(std::max(compile_threads, 1)), kernels);
  for (size_t t = 1; t < wanted; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // the caller does the rest
    }
  }
  work();
  for (std::thread& h : helpers) h.join();
  return out;
}

}  // namespace

void apply_precision(KernelSpec& spec, Precision precision, const JitBackend& backend) {
  // A mark the backend declines (a form it computes in f32 only, or one whose bf16 would be
  // slower here) is taken back.
  if (backend.computes_bf16() && wants_bf16(precision) && mark_bf16(spec) &&
      (!backend.bf16_pays(spec) || !backend.supports(spec, nullptr)))
    clear_bf16(spec);
}

GroupKernel exact_kernel(JitBackend& backend, HostKernelSource& source, const FusedGraph& f, size_t group,
                         Precision precision) {
  const FusionGroup& grp = f.groups[group];
  if (grp.kind == GroupKind::View || grp.kind == GroupKind::Opaque) return {};
  std::string why;
  std::optional<KernelSpec> lowered = lower_group(f, grp, &why);
  if (!lowered) return {};
  // An attention this backend computes faster in bf16 as its parts has no kernel here:
  // build_plan splits it (Note [Declined attention]).
  if (backend.computes_bf16() && wants_bf16(precision) && backend.splits_bf16_attention(*lowered)) return {};
  apply_precision(*lowered, precision, backend);
  if (!backend.supports(*lowered, &why)) return {};
  GroupKernel k;
  k.spec = *lowered;
  k.kernel = source.get(backend, std::move(*lowered));
  return k;
}

// Note [Declined attention]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// The fuser groups attention whole (softmax(Q·Kᵀ ∘ score ops) · V) for the backends that
// compute it in one kernel (llvm). Where the backend declines that group (asmjit, the tier
// that serves a new shape while LLVM compiles), its ops once ran on the static kernels one
// by one: the two batched MatMuls through OpenBLAS, the scale and mask as their own passes
// over the T x T scores, and the Slices and Transposes that feed them copied to memory.
// build_plan instead splits the group (split_attention, ir/passes/group_fusions.h) into a
// contraction with the score ops as its epilogue, the Softmax's row reduction and a
// contraction with the group's epilogue, and offers each to the backend: the products read
// Q, K and V through their views' strides, and the scores are written once. Parts the
// backend also declines run their ops on the static kernels, as before. The plan's fused
// graph holds the parts, so its steps and groups agree (explain, verify).
// The BERT layer at seq 128 on asmjit, a Zen 1, one thread (`fusor run --profile`): the
// attention's twelve static steps took 3.5 ms, its three parts 2.5 ms (Q·Kᵀ with scale and
// mask 0.93, softmax 0.76, P·V with the heads' merge 0.79; LLVM's one kernel: 2.2).
// A backend may also ask for the split where the parts are faster in bf16 than its one
// kernel (JitBackend::splits_bf16_attention: llvm on an AMX CPU whose vdpbf16ps is slow, the
// two products then AMX GEMMs; Note [AMX contractions], codegen/llvm/emit_amx.cpp).

std::shared_ptr<Plan> build_plan(const Graph& g, const std::vector<TensorType>& input_types, const Fuser& fuser,
                                 SharedConstants& constants, const ChooseKernel& choose, int compile_threads) {
  auto plan = std::make_shared<Plan>();
  SharedStorage shared;  // the user's constants, then derived and interned ones
  for (const Constant& c : g.constants()) shared.insert(c.data.raw());
  plan->fused = fuser.fuse(g, input_types, &shared);
  constants.intern(&shared, plan->fused.graph);
  FusedGraph& f = plan->fused;
  const Graph& fg = f.graph;
  plan->is_output.assign(fg.values().size(), 0);
  for (ValueId o : fg.outputs()) plan->is_output[size_t(o)] = 1;
  // Every group's kernel first, side by side (Note [Kernels compiled side by side]).
  std::vector<Choice> chosen =
      choose ? choose_groups(f, 0, f.groups.size(), choose, compile_threads) : std::vector<Choice>(f.groups.size());
  for (size_t gi = 0; gi < f.groups.size(); ++gi) {
    if (chosen[gi].error) std::rethrow_exception(chosen[gi].error);
    GroupKernel k = std::move(chosen[gi].kernel);
    if (!k.kernel && choose && f.groups[gi].kind == GroupKind::Attention) {
      // Note [Declined attention]: its parts, each offered to the backend in turn.
      std::vector<FusionGroup> parts = split_attention(fg, f.groups[gi]);
      f.log.note("plan", fg.node(f.groups[gi].anchor).name,
                 "attention '" + f.groups[gi].pattern + "' has no kernel on this backend: run as " +
                     parts[0].pattern + ", " + parts[1].pattern + " and " + parts[2].pattern);
      f.groups.erase(f.groups.begin() + std::ptrdiff_t(gi));
      f.groups.insert(f.groups.begin() + std::ptrdiff_t(gi), parts.begin(), parts.end());
      std::vector<Choice> part_kernels = choose_groups(f, gi, parts.size(), choose, compile_threads);
      chosen.erase(chosen.begin() + std::ptrdiff_t(gi));
      chosen.insert(chosen.begin() + std::ptrdiff_t(gi), std::make_move_iterator(part_kernels.begin()),
                    std::make_move_iterator(part_kernels.end()));
      --gi;
      continue;
    }
    if (k.kernel) {
      plan->steps.push_back(kernel_step(fg, std::move(k), constants));
      plan->steps.back().group = int(gi);
      continue;
    }
    for (NodeId id : f.groups[gi].nodes) plan->steps.push_back(static_step(fg, id, plan->is_output));
  }
  drop_dead_steps(*plan);
  plan_arena(*plan);
  // The plan's own memory: its arena, and the small constants the passes made that no
  // other plan shares.
  plan->own_bytes = uint64_t(plan->arena_bytes) + sizeof(Plan);
  for (size_t v = 0; v < fg.values().size(); ++v) {
    const Tensor* c = fg.constant_data(ValueId(v));
    if (!c) continue;
    plan->constants.push_back(ValueId(v));
    if (!shared.count(c->raw())) plan->own_bytes += uint64_t(c->nbytes());  // shared ones count as packed_bytes
  }
  charge(*plan);
  return plan;
}

void charge(Plan& plan) {
  std::unordered_set<const CompiledKernel*> kernels;
  plan.bytes = plan.own_bytes;
  for (const Step& st : plan.steps)
    if (st.kernel && kernels.insert(st.kernel.get()).second) plan.bytes += st.kernel->resident_bytes();
}

}  // namespace fusor
