#include "jit/engine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <thread>
#include <mutex>
#include <cstring>
#include <unordered_set>

#include "cache/constant_keys.h"
#include "cache/disk_store.h"
#include "cache/keyed_cache.h"
#include "cache/plan_key.h"
#include "cache/kernel_key.h"
#include "codegen/compiled_kernel.h"
#include "codegen/lower.h"
#include "codegen/packing.h"
#include "codegen/symbolic.h"
#include "codegen/static/static_backend.h"
#include "ir/hash.h"
#include "ir/passes/explain.h"
#include "ir/passes/pipeline.h"
#include "ir/verifier.h"
#include "jit/arena.h"
#include "jit/bind_run.h"
#include "jit/cuda_executor.h"
#include "jit/executor.h"
#include "jit/thread_pool.h"

namespace fusor {

uint64_t EngineOptions::hash() const {
  Hasher h;
  h.str("EngineOptions-v1").u64(uint64_t(backend)).u64(fuse).u64(fuse ? fusion.hash() : 0).str(symbolic_dim).u64(specialize);
  return h.digest();
}

namespace {

// Note [Interned constants]
// Tracing makes constants per plan (folded subgraphs of constants). Without care every
// shape's plan would hold its own copy and pack it again. After fusion the engine interns
// them: a constant that neither the user's graph nor the derived cache (Note [Derived
// constants]: merged and folded weights, shared already) holds is looked up by its bytes
// (hash, then a full compare) and replaced by the first equal copy, so all plans share one
// tensor and one packed copy.

// Note [Derived constants]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Passes derive constants per plan (merged Q/K/V weights, BN-folded weights:
// ir/passes/derived_constants.h). The engine keeps each derivation's result keyed by its
// recipe and its sources' storage, which the key keeps alive (so an address is never reused
// while the entry lives): the plan of every later shape gets the same tensors without
// computing or copying them (a BERT layer's merged QKV weights are 7 MiB: copying them into
// fresh pages cost ~4.5 ms per layer per new sequence length), and, their storage being
// shared, packed copies (PackKey) are shared too and interning skips them.
struct DerivedTensors {
  std::vector<Tensor> tensors;
};

// One unit of execution: a static kernel for one node (or a zero-copy reshape), or a JIT
// kernel for a whole group.
struct Step {
  NodeId node = -1;                               // static step: the node
  bool alias = false;                             // static step: a reshape sharing its input's buffer
  std::shared_ptr<const CompiledKernel> kernel;   // JIT step
  int64_t tasks = 1;                              // JIT step: its task range [0, tasks)
  int64_t extent = -1;                            // JIT step of a symbolic kernel: the run's outer extent
  std::vector<ValueId> buffers;                   // JIT step: one value per KernelSpec::buffers entry
  std::vector<std::pair<size_t, std::shared_ptr<const Tensor>>> packed;  // JIT step: constants passed packed
  std::vector<ValueId> reads, writes;             // what the step touches (for liveness)
  std::string label;                              // for profiles
};

// One (graph, input signature)'s schedule: the fused graph, its steps, and where each
// intermediate lives.
struct Plan {
  FusedGraph fused;
  std::vector<Step> steps;
  std::vector<int> uses;              // per value: reads by steps
  std::vector<char> is_output;        // per value
  std::vector<int64_t> arena_offset;  // per value: its place in the run's arena, or -1
  std::vector<ValueId> placed;        // the values with an arena place
  std::vector<ValueId> constants;     // the constants of the fused graph
  int64_t arena_bytes = 0;
  uint64_t bytes = 0;                 // what the plan cache charges for it
};

// Lays the plan's intermediates out in one arena by liveness (jit/arena.h). A value lives
// from the step that writes it to the last step that reads it or any reshape view of it;
// graph outputs and views are not placed (outputs go to the caller, views alias).
void plan_arena(Plan& plan, const Graph& g, const std::vector<TensorType>& types) {
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

FusionOptions effective_fusion(const EngineOptions& o) {
  if (o.fuse) return o.fusion;
  FusionOptions none;
  none.fold_batchnorm = none.recognize_patterns = none.merge_parallel_matmuls = none.group = false;
  return none;
}


// The exact specs of a graph's groups at a reference size of EngineOptions::symbolic_dim,
// by group index (nullopt: a group with no kernel kind), which the plans of other sizes are
// symbolized against (Note [Symbolic kernels]). One per (graph, other dims).
struct ReferenceSpecs {
  std::vector<std::optional<KernelSpec>> specs;
};

// Note [Background plans]
// ~~~~~~~~~~~~~~~~~~~~~~~
// With EngineOptions::background_compile, a never-seen shape must not wait for LLVM: its
// plan is first built with every group on the static kernels (tracing and fusion only,
// milliseconds) and run at once, while a background thread builds the JIT plan (compiling
// or loading its kernels) and then swaps it into the same cache entry. The entry holds the
// current plan in an atomic shared_ptr: a run loads it once and uses that plan throughout,
// so no run ever sees a half-built plan, and a plan being replaced stays alive until the
// runs using it end. Jobs run one at a time, in order; the engine's destructor drops the
// jobs not started and waits for the one running. A job that fails leaves the static plan
// in place and warns. With tiering, each kernel of the final plan is timed against the
// first tier's kernel for the same group (both run on scratch buffers, best of three) and
// the faster one is kept: LLVM's code replaces asmjit's only where it is faster.
struct PlanEntry {
  mutable std::atomic<std::shared_ptr<const Plan>> plan;
};

// True on the thread of BackgroundPlans (so compiles there count as background ones).
thread_local bool tl_background_thread = false;

class BackgroundPlans {
 public:
  // Builds the final plan of a shape, given the plan serving it until then.
  using Build = std::function<std::shared_ptr<const Plan>(const Graph&, const std::vector<TensorType>&, const Plan& first)>;
  BackgroundPlans(Build build, std::function<void(const std::string&)> warn)
      : build_(std::move(build)), warn_(std::move(warn)) {}
  ~BackgroundPlans() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      jobs_.clear();
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void submit(const PlanKey& key, const Graph& g, std::shared_ptr<PlanEntry> entry) {
    std::lock_guard<std::mutex> lk(mu_);
    jobs_.push_back(Job{key, g, std::move(entry)});
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    cv_.notify_all();
  }
  // Waits until every submitted job has finished.
  void drain() {
    std::unique_lock<std::mutex> lk(mu_);
    idle_cv_.wait(lk, [&] { return jobs_.empty() && !busy_; });
  }
  uint64_t swaps() const { return swaps_.load(); }

 private:
  struct Job {
    PlanKey key;
    Graph graph;  // a copy: the caller's graph may be gone when the job runs (tensors share storage)
    std::shared_ptr<PlanEntry> entry;
  };
  void loop() {
    tl_background_thread = true;
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lk.unlock();
      try {
        job.entry->plan.store(build_(job.graph, job.key.inputs, *job.entry->plan.load()));
        swaps_.fetch_add(1);
      } catch (const std::exception& e) {
        warn_(std::string("a background JIT plan failed; its shape stays on the static kernels: ") + e.what());
      }
      lk.lock();
      busy_ = false;
      idle_cv_.notify_all();
    }
  }
  Build build_;
  std::function<void(const std::string&)> warn_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<Job> jobs_;
  bool busy_ = false, stop_ = false;
  std::atomic<uint64_t> swaps_{0};
  std::thread thread_;
};

EngineOptions with_defaults(EngineOptions o) {
  if (!o.warn) o.warn = warn_to_stderr;
  return o;
}

}  // namespace

struct Engine::Impl {
  explicit Impl(EngineOptions o)
      : options(with_defaults(std::move(o))),
        pool(options.num_threads),
        plans({options.plan_cache_bytes, nullptr, nullptr}),
        kernels({options.kernel_cache_bytes, nullptr, nullptr}),
        packed({options.packed_cache_bytes, nullptr, nullptr}),
        interned({options.packed_cache_bytes, nullptr, nullptr}) {
    const BackendRole role = backend_info(options.backend).role;
    if (role == BackendRole::HostJit) {
      jit = make_jit_backend(options.backend, BackendOptions{options.dump_dir});  // throws DeviceUnavailable with the reason
      if (options.tiering && options.backend != BackendKind::Asmjit) {
        try {
          first_tier = make_jit_backend(BackendKind::Asmjit, BackendOptions{options.dump_dir});
        } catch (const Error& e) {
          options.warn(std::string("tiering without its first tier (new shapes start on the static kernels): ") + e.what());
        }
      }
    }
    const bool cuda_backend = role == BackendRole::DeviceJit;
    if ((jit && jit->can_load()) || cuda_backend) {
      if (options.disk_cache) {
        DiskStore::Options so;
        so.dir = options.cache_dir;
        so.warn = options.warn;
        auto disk = std::make_unique<DiskStore>(DiskStore::open(so));  // disabled (with a warning) when unusable
        if (disk->enabled()) store = std::move(disk);
      }
    }
    if (cuda_backend) {
      CudaExecutor::Options co{options.cuda_device, options.dump_dir, store.get(), options_hash, options.plan_cache_bytes,
                               options.kernel_cache_bytes, options.packed_cache_bytes,
                               [this](const Graph& g, const std::vector<TensorType>& t) { return fuse(g, t); }, options.warn};
      cuda = std::make_unique<CudaExecutor>(std::move(co));  // throws DeviceUnavailable with the reason
    }
  }

  // Runs one node on the static backend (also the trace-time constant evaluator).
  std::vector<Tensor> evaluate(const Node& n, const std::vector<const Tensor*>& ins, const std::vector<TensorType>& types) {
    std::vector<Tensor> outs;
    for (const TensorType& t : types) outs.push_back(Tensor::empty(t.dtype, t.shape));
    StaticKernelArgs args{n, ins, {}, pool};
    for (Tensor& t : outs) args.outputs.push_back(&t);
    run_static_kernel(args);
    return outs;
  }

  // Traces and fuses g; the constants the passes derive come from the derived cache (Note
  // [Derived constants]), and their storage is added to *shared when given.
  FusedGraph fuse(const Graph& g, const std::vector<TensorType>& input_types,
                  std::unordered_set<const void*>* shared = nullptr) {
    verify(g);
    auto derive = [this, shared](const ConstantDerivation& d, const std::function<std::vector<Tensor>()>& make) {
      std::shared_ptr<const DerivedTensors> r = derived.get_or_build(DerivedKey{d}, [&] {
        auto v = std::make_shared<DerivedTensors>();
        v->tensors = make();
        uint64_t bytes = sizeof(DerivedTensors);
        for (const Tensor& t : v->tensors) bytes += t.nbytes();
        return SizedValue<DerivedTensors>{v, bytes};
      });
      if (shared)
        for (const Tensor& t : r->tensors) shared->insert(t.raw());
      return r->tensors;
    };
    return fuse_graph(
        g, input_types, effective_fusion(options),
        [this](const Node& n, const std::vector<const Tensor*>& ins, const std::vector<TensorType>& t) {
          return evaluate(n, ins, t);
        },
        derive);
  }

  // The JIT kernel for a group, or nullptr when the group runs on the static kernels
  // (static backend, no kernel kind for it, or a spec the backend declines). *spec gets the
  // group's own lowered spec: a cached kernel may have been compiled for another group with
  // the same code, so its spec's buffer names are not this group's values.
  std::shared_ptr<const CompiledKernel> kernel_for(JitBackend& be, const FusedGraph& f, const FusionGroup& grp,
                                                   KernelSpec* spec) {
    if (grp.kind == GroupKind::View || grp.kind == GroupKind::Opaque) return nullptr;
    std::string why;
    std::optional<KernelSpec> lowered = lower_group(f, grp, &why);
    if (!lowered || !be.supports(*lowered, &why)) return nullptr;
    *spec = *lowered;
    return cached_kernel(be, std::move(*lowered));
  }

  // The kernel of `spec` on `be`: from memory, the persistent store, or compiled.
  std::shared_ptr<const CompiledKernel> cached_kernel(JitBackend& be, KernelSpec spec) {
    KernelKey key{std::move(spec), std::string(be.name()), be.target_description(), be.compiler_version()};
    return kernels.get_or_build(key, [&] { return kernel(be, key); });
  }

  // Group i's kernel in the first plan of a size of symbolic_dim (Note [Symbolic kernels]):
  // jit's symbolic kernel when the group has a symbolic form, jit's exact kernel when the
  // group does not depend on the dim (the same for every size), else `fallback`'s (the
  // first tier) or none (static). *spec gets the group's exact spec; *extent the run's
  // outer extent for a symbolic kernel.
  std::shared_ptr<const CompiledKernel> first_kernel_for(const FusedGraph& f, size_t i, const ReferenceSpecs& ref,
                                                         JitBackend* fallback, KernelSpec* spec, int64_t* extent) {
    const FusionGroup& grp = f.groups[i];
    if (grp.kind == GroupKind::View || grp.kind == GroupKind::Opaque) return nullptr;
    std::optional<KernelSpec> lowered = lower_group(f, grp, nullptr);  // once, for every path below
    if (!lowered) return nullptr;
    if (ref.specs.size() == f.groups.size() && ref.specs[i]) {
      const KernelSpec& other = *ref.specs[i];
      if (lowered->same_code(other) && jit->supports(*lowered, nullptr)) {
        *spec = *lowered;
        return cached_kernel(*jit, std::move(*lowered));
      }
      std::optional<SymbolicSpec> sym = symbolize(*lowered, other, nullptr);
      if (sym && jit->supports(sym->spec, nullptr)) {
        std::shared_ptr<const CompiledKernel> k = cached_kernel(*jit, std::move(sym->spec));
        if (sym->extent <= k->max_extent) {  // (symbolic attention serves lengths up to its scratch)
          *spec = std::move(*lowered);
          *extent = sym->extent;
          return k;
        }
      }
    }
    if (!fallback || !fallback->supports(*lowered, nullptr)) return nullptr;
    *spec = *lowered;
    return cached_kernel(*fallback, std::move(*lowered));
  }

  // The reference specs the plans of key's size of symbolic_dim are symbolized against:
  // g's groups lowered at size 64 of that dim (65 when key is at 64). nullptr when
  // symbolic_dim is off or g has no dim of that name.
  std::shared_ptr<const ReferenceSpecs> reference_for(const Graph& g, const PlanKey& key) {
    if (options.symbolic_dim.empty()) return nullptr;
    DimBindings dims;
    for (size_t i = 0; i < g.inputs().size() && i < key.inputs.size(); ++i) bind_input(g, g.inputs()[i], key.inputs[i], &dims);
    auto it = dims.find(options.symbolic_dim);
    if (it == dims.end()) return nullptr;
    constexpr int64_t kReferenceSize = 64;
    it->second = it->second == kReferenceSize ? kReferenceSize + 1 : kReferenceSize;
    PlanKey ref_key = key;
    ref_key.inputs = input_types_from_dims(g, dims);
    return references.get_or_build(ref_key, [&] {
      auto ref = std::make_shared<ReferenceSpecs>();
      const FusedGraph f = fuse(g, ref_key.inputs);
      uint64_t bytes = sizeof(ReferenceSpecs);
      for (const FusionGroup& grp : f.groups) {
        const bool kernel_kind = grp.kind != GroupKind::View && grp.kind != GroupKind::Opaque;
        ref->specs.push_back(kernel_kind ? lower_group(f, grp, nullptr) : std::nullopt);
        if (ref->specs.back()) bytes += ref->specs.back()->key_bytes().size();
      }
      return SizedValue<ReferenceSpecs>{ref, bytes};
    });
  }

  // A kernel not in memory: linked from the persistent store when it holds one, else
  // compiled (and saved there).
  SizedValue<CompiledKernel> kernel(JitBackend& be, const KernelKey& key) {
    std::shared_ptr<const CompiledKernel> k;
    std::string key_bytes;
    if (store && be.can_load()) {
      key_bytes = key.serialize();
      if (std::optional<std::vector<uint8_t>> object = store->get(key_bytes)) {
        try {
          k = be.load(key.spec, std::string(object->begin(), object->end()));
          disk_hits.fetch_add(1, std::memory_order_relaxed);
          load_us.fetch_add(uint64_t(k->compile_us), std::memory_order_relaxed);
        } catch (const Error& e) {
          options.warn(std::string("a kernel from the persistent store in ") + store->stats().location +
                       " cannot be linked; compiling it again (" + e.what() + ")");
        }
      }
    }
    if (!k) {
      k = be.compile(key.spec);
      compiled.fetch_add(1, std::memory_order_relaxed);
      if (tl_background_thread) compiled_background.fetch_add(1, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> lk(by_backend_mu);
        compile_us_by_backend[std::string(be.name())] += uint64_t(k->compile_us);
      }
      const std::string& object = k->object;
      if (store && be.can_load() && !object.empty() && store->put(key_bytes, std::span(reinterpret_cast<const uint8_t*>(object.data()), object.size())))
        disk_writes.fetch_add(1, std::memory_order_relaxed);
    }
    return {k, uint64_t(k->code_bytes) + sizeof(CompiledKernel)};
  }

  // Seconds of the best of three runs of step st's kernel on scratch buffers (constants and
  // packed weights as the plan has them; other inputs a fixed pattern).
  double time_step(const Plan& plan, const Step& st) {
    const CompiledKernel& k = *st.kernel;
    std::vector<Tensor> scratch;
    std::vector<void*> bufs(st.buffers.size() + 1);
    for (size_t i = 0; i < st.buffers.size(); ++i) {
      const BufferSpec& b = k.spec.buffers[i];
      const int64_t elements = plan.fused.types[size_t(st.buffers[i])].shape.numel();  // a symbolic spec has 0
      if (const Tensor* c = plan.fused.graph.constant_data(st.buffers[i])) {
        bufs[i] = const_cast<void*>(c->raw());
      } else {
        scratch.push_back(Tensor::zeros(b.dtype, Shape{elements}));
        if (b.dtype == DType::F32 && !b.output) std::fill_n(scratch.back().data<float>(), elements, 0.5f);
        bufs[i] = scratch.back().raw();
      }
    }
    for (const auto& [i, packed] : st.packed) bufs[i] = const_cast<void*>(packed->raw());
    bufs[st.buffers.size()] = const_cast<int64_t*>(&st.extent);
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      k.run(bufs.data(), 0, st.tasks);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return best;
  }

  // Tiering: each kernel of `final` that the first tier's plan also ran as a kernel (the same
  // group: the same values, the same code) keeps whichever of the two runs faster.
  void keep_faster(const Plan& first, Plan& final) {
    for (Step& st : final.steps) {
      if (!st.kernel) continue;
      for (const Step& old : first.steps) {
        if (!old.kernel || old.buffers != st.buffers || !old.kernel->spec.same_code(st.kernel->spec)) continue;
        if (time_step(first, old) < time_step(final, st)) {
          st.kernel = old.kernel;
          st.packed = old.packed;
          st.label = old.label;
          first_tier_kept.fetch_add(1, std::memory_order_relaxed);
        }
        break;
      }
    }
  }

  // Note [Interned constants]: fg's constants that the user's graph does not hold (their
  // storage not in `users`) become shared copies.
  void intern_constants(const std::unordered_set<const void*>& users, Graph& fg) {
    for (size_t v = 0; v < fg.values().size(); ++v) {
      const Tensor* c = fg.constant_data(ValueId(v));
      if (!c || users.count(c->raw()) || c->nbytes() < kInternMinBytes) continue;
      InternKey key{*c, content_hash(*c)};
      std::shared_ptr<const Tensor> shared = interned.get_or_build(key, [&] {
        return SizedValue<Tensor>{std::make_shared<Tensor>(*c), uint64_t(c->nbytes())};
      });
      if (shared->raw() != c->raw()) fg.share_constant_data(ValueId(v), *shared);
    }
  }

  // The packed copy of constant `c` that kernel k reads (shared across plans).
  std::shared_ptr<const Tensor> packed_constant(const CompiledKernel& k, const CompiledKernel::Prepack& pp, const Tensor& c) {
    PackKey key{c, k.layout(pp)};
    return packed.get_or_build(key, [&] {
      auto t = std::make_shared<Tensor>(Tensor::empty(DType::F32, Shape{pp.floats}));
      k.pack(pp, c.data<float>(), t->data<float>());
      return SizedValue<Tensor>{t, uint64_t(t->nbytes())};
    });
  }

  // The plan of g at input_types with its groups on `be`'s kernels where it takes them and
  // the static kernels elsewhere (be null: all static, no compile). With `ref`, a first plan
  // of a size of symbolic_dim: jit's symbolic kernels where groups have them, `be` (the
  // first tier) elsewhere (first_kernel_for).
  std::shared_ptr<Plan> build_plan(const Graph& g, const std::vector<TensorType>& input_types, JitBackend* be,
                                   const ReferenceSpecs* ref = nullptr) {
    auto plan = std::make_shared<Plan>();
    std::unordered_set<const void*> users;  // storage shared already: the user's constants, derived ones
    for (const Constant& c : g.constants()) users.insert(c.data.raw());
    plan->fused = fuse(g, input_types, &users);
    intern_constants(users, plan->fused.graph);
    const FusedGraph& f = plan->fused;
    const Graph& fg = f.graph;
    plan->is_output.assign(fg.values().size(), 0);
    for (ValueId o : fg.outputs()) plan->is_output[size_t(o)] = 1;
    for (size_t gi = 0; gi < f.groups.size(); ++gi) {
      const FusionGroup& grp = f.groups[gi];
      KernelSpec spec;
      int64_t extent = -1;
      std::shared_ptr<const CompiledKernel> kernel =
          ref ? first_kernel_for(f, gi, *ref, be, &spec, &extent) : be ? kernel_for(*be, f, grp, &spec) : nullptr;
      if (kernel) {
        Step st;
        st.kernel = kernel;
        st.extent = extent;
        st.tasks = kernel->tasks_for(extent);
        if (extent >= 0) symbolic_steps.fetch_add(1, std::memory_order_relaxed);
        for (const BufferSpec& b : spec.buffers) {
          ValueId v = fg.find_value(b.name);
          FUSOR_ASSERT(v != kNoValue, "kernel buffer '", b.name, "' is not a value of the plan");
          st.buffers.push_back(v);
          (b.output ? st.writes : st.reads).push_back(v);
        }
        // Constant operands the kernel reads packed: packed once, shared by every plan.
        for (const CompiledKernel::Prepack& pp : kernel->prepacks) {
          const Tensor* c = fg.constant_data(st.buffers[size_t(pp.buffer)]);
          FUSOR_ASSERT(c && c->dtype() == DType::F32, "kernel '", spec.name, "' prepacks a buffer that is not an f32 constant");
          st.packed.emplace_back(size_t(pp.buffer), packed_constant(*kernel, pp, *c));
        }
        st.label = kernel->backend + (extent >= 0 ? " symbolic " : " ") + std::string(kernel_kind_name(spec.kind)) + " " +
                   spec.name;
        plan->steps.push_back(std::move(st));
        continue;
      }
      for (NodeId id : grp.nodes) {
        const Node& n = fg.node(id);
        Step st;
        st.node = id;
        bool reshape_like = n.op == OpKind::Reshape || n.op == OpKind::Flatten || n.op == OpKind::Squeeze ||
                            n.op == OpKind::Unsqueeze;
        st.alias = reshape_like && !plan->is_output[size_t(n.outputs[0])];
        for (ValueId v : n.inputs)
          if (v != kNoValue) st.reads.push_back(v);
        st.writes = n.outputs;
        st.label = std::string(st.alias ? "view " : "static ") + std::string(op_name(n.op)) + " " + n.name;
        plan->steps.push_back(std::move(st));
      }
    }
    // A static step whose results nobody reads is dropped: typically a view that JIT
    // kernels read through strides from its root instead. Backwards, so dropping a step
    // can make its producers dead too.
    plan->uses.assign(fg.values().size(), 0);
    for (const Step& st : plan->steps)
      for (ValueId v : st.reads) ++plan->uses[size_t(v)];
    for (size_t i = plan->steps.size(); i-- > 0;) {
      Step& st = plan->steps[i];
      if (st.kernel) continue;
      bool dead = true;
      for (ValueId o : st.writes) dead &= plan->uses[size_t(o)] == 0 && !plan->is_output[size_t(o)];
      if (!dead) continue;
      for (ValueId v : st.reads) --plan->uses[size_t(v)];
      plan->steps.erase(plan->steps.begin() + std::ptrdiff_t(i));
    }
    plan_arena(*plan, fg, f.types);
    // The plan's own memory: its arena, and the small constants the passes made that the
    // user's graph does not hold.
    plan->bytes = uint64_t(plan->arena_bytes) + sizeof(Plan);
    for (size_t v = 0; v < fg.values().size(); ++v) {
      const Tensor* c = fg.constant_data(ValueId(v));
      if (!c) continue;
      plan->constants.push_back(ValueId(v));
      if (!users.count(c->raw()) && c->nbytes() < kInternMinBytes)
        plan->bytes += uint64_t(c->nbytes());  // larger ones are interned (counted as packed_bytes)
    }
    return plan;
  }

  // The plan to run for key: the cache's entry, built on a miss. With background_compile or
  // tiering a miss builds a first plan at once (static kernels, or the asmjit tier) and
  // queues the JIT plan (Note [Background plans]).
  std::shared_ptr<const Plan> plan_for(const Graph& g, const PlanKey& key) {
    std::shared_ptr<const PlanEntry> entry = plans.get_or_build(key, [&] {
      auto e = std::make_shared<PlanEntry>();
      std::shared_ptr<const ReferenceSpecs> ref = jit ? reference_for(g, key) : nullptr;
      const bool later = (options.background_compile || options.tiering || ref) && jit;
      std::shared_ptr<const Plan> p = build_plan(g, key.inputs, later ? first_tier.get() : jit.get(), ref.get());
      e->plan.store(p);
      if (later && (!ref || options.specialize)) background.submit(key, g, e);
      return SizedValue<PlanEntry>{e, p->bytes};
    });
    return entry->plan.load();
  }

  EngineOptions options;
  uint64_t options_hash = options.hash();  // part of every plan key; computed once
  ThreadPool pool;
  std::unique_ptr<JitBackend> jit;         // the backend of options.backend (none for static)
  std::unique_ptr<JitBackend> first_tier;  // tiering: asmjit, serving new shapes until jit's plan is ready
  std::unique_ptr<KernelStore> store;  // the persistent kernel store, when in use
  std::unique_ptr<CudaExecutor> cuda;  // backend cuda: runs every plan (jit/cuda_executor.h)
  KeyedCache<PlanKey, PlanEntry, PlanKeyHash> plans;
  KeyedCache<KernelKey, CompiledKernel, KernelKeyHash> kernels;
  KeyedCache<PackKey, Tensor, PackKeyHash> packed;
  KeyedCache<InternKey, Tensor, InternKeyHash> interned;
  KeyedCache<DerivedKey, DerivedTensors, DerivedKeyHash> derived{{options.packed_cache_bytes, nullptr, nullptr}};
  KeyedCache<PlanKey, ReferenceSpecs, PlanKeyHash> references{{uint64_t(64) << 20, nullptr, nullptr}};
  static constexpr size_t kInternMinBytes = 4096;  // small constants are cheaper to keep per plan
  std::atomic<uint64_t> compiled{0}, disk_hits{0}, disk_writes{0}, load_us{0};
  std::atomic<uint64_t> first_tier_kept{0}, symbolic_steps{0}, compiled_background{0};
  std::mutex by_backend_mu;
  std::map<std::string, uint64_t> compile_us_by_backend;  // compile time per backend
  ArenaPool arenas;
  std::mutex profile_mu;
  std::map<std::string, StepProfile, std::less<>> profile;
  // Last: destroyed first, so a running job still sees the caches and the backend.
  BackgroundPlans background{[this](const Graph& g, const std::vector<TensorType>& t, const Plan& first) {
                               std::shared_ptr<Plan> p = build_plan(g, t, jit.get());
                               if (first_tier) keep_faster(first, *p);
                               return std::shared_ptr<const Plan>(std::move(p));
                             },
                             options.warn};
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

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Engine::~Engine() = default;

const EngineOptions& Engine::options() const { return impl_->options; }

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  CacheStats p = m.plans.stats(), k = m.kernels.stats(), w = m.packed.stats();
  EngineStats s;
  s.plan_hits = p.hits;
  s.plan_misses = p.misses;
  s.plans = p.entries;
  s.plan_evictions = p.evictions;
  s.plan_bytes = p.bytes;
  s.kernel_hits = k.hits;
  s.kernels_compiled = m.compiled.load();
  s.kernels_compiled_background = m.compiled_background.load();
  s.disk_hits = m.disk_hits.load();
  s.disk_writes = m.disk_writes.load();
  s.kernel_evictions = k.evictions;
  s.kernel_bytes = k.bytes;
  s.packed_bytes = w.bytes + m.interned.stats().bytes + m.derived.stats().bytes;
  {
    std::lock_guard<std::mutex> lk(impl_->by_backend_mu);
    for (const auto& [name, us] : m.compile_us_by_backend) {
      s.compile_ms_by_backend[name] = double(us) / 1000.0;
      s.compile_ms += double(us) / 1000.0;
    }
  }
  s.load_ms = double(m.load_us.load()) / 1000.0;
  s.background_swaps = m.background.swaps();
  s.first_tier_kept = m.first_tier_kept.load();
  s.symbolic_steps = m.symbolic_steps.load();
  if (m.cuda) m.cuda->add_stats(s);
  s.disk_enabled = m.store != nullptr;
  if (m.store) {
    const StoreStats st = m.store->stats();
    s.disk_dir = st.location;
    s.disk_entries = st.entries;
    s.disk_bytes = st.bytes;
  }
  return s;
}

TensorMap Engine::run(const Graph& graph, const TensorMap& inputs) {
  TensorMap outputs;
  run(graph, inputs, outputs);
  return outputs;
}

void Engine::run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs) {
  if (impl_->cuda) return impl_->cuda->run(graph, inputs, outputs);
  std::vector<const Tensor*> feeds;
  PlanKey key;
  key.inputs = bind_run(graph, inputs, outputs, &feeds);
  for (size_t i = 0; i < feeds.size(); ++i)
    FUSOR_CHECK(feeds[i]->device() == Device::Host, DeviceUnavailable, "input '", graph.value(graph.inputs()[i]).name,
                "' is on a device this backend cannot read");
  key.graph_fingerprint = graph.fingerprint();
  key.options_hash = impl_->options_hash;
  std::shared_ptr<const Plan> plan = impl_->plan_for(graph, key);
  const Graph& g = plan->fused.graph;
  const std::vector<TensorType>& types = plan->fused.types;

  // Every value's tensor: intermediates live in this run's arena (their memory is reused
  // by later values once dead), outputs are allocated for the caller.
  ArenaLease arena(impl_->arenas, plan->arena_bytes);
  std::vector<Tensor> values(g.values().size());
  for (ValueId v : plan->placed)
    values[size_t(v)] = Tensor::borrow(arena.base() + plan->arena_offset[size_t(v)], types[size_t(v)].dtype,
                                       types[size_t(v)].shape);
  std::vector<int> uses = plan->uses;
  for (size_t i = 0; i < g.inputs().size(); ++i) values[size_t(g.inputs()[i])] = *feeds[i];
  for (ValueId v : plan->constants) values[size_t(v)] = *g.constant_data(v);

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

  const bool profiling = impl_->options.profile;
  for (const Step& st : plan->steps) {
    const auto step_start = profiling ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (st.kernel) {
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
      impl_->pool.parallel_for(st.tasks, 1, [&](int64_t b, int64_t e) { k.run(bufs, b, e); });
    } else if (st.alias) {
      const Node& n = g.node(st.node);
      values[size_t(n.outputs[0])] = values[size_t(n.inputs[0])].reshaped(types[size_t(n.outputs[0])].shape);
    } else {
      const Node& n = g.node(st.node);
      StaticKernelArgs args{n, {}, {}, impl_->pool};
      for (ValueId v : n.inputs) args.inputs.push_back(v == kNoValue ? nullptr : &values[size_t(v)]);
      for (ValueId o : n.outputs) {
        Tensor& t = values[size_t(o)];
        if (!t.defined()) t = Tensor::empty(types[size_t(o)].dtype, types[size_t(o)].shape);
        args.outputs.push_back(&t);
      }
      run_static_kernel(args);
    }
    for (ValueId v : st.reads)
      if (--uses[size_t(v)] == 0 && !plan->is_output[size_t(v)] && g.value(v).kind == ValueKind::NodeOutput)
        values[size_t(v)] = Tensor();
    if (profiling) {
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start).count();
      std::lock_guard<std::mutex> lk(impl_->profile_mu);
      StepProfile& p = impl_->profile[st.label];
      p.step = st.label;
      ++p.calls;
      p.total_ms += ms;
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

std::vector<StepProfile> Engine::profile() const {
  std::lock_guard<std::mutex> lk(impl_->profile_mu);
  std::vector<StepProfile> out;
  for (const auto& [label, p] : impl_->profile) out.push_back(p);
  std::sort(out.begin(), out.end(), [](const StepProfile& a, const StepProfile& b) { return a.total_ms > b.total_ms; });
  return out;
}

void Engine::drain() { impl_->background.drain(); }

void Engine::prepare(const Graph& graph, const DimBindings& dims) {
  PlanKey key;
  key.inputs = input_types_from_dims(graph, dims);
  key.graph_fingerprint = graph.fingerprint();
  key.options_hash = impl_->options_hash;
  if (impl_->cuda) return impl_->cuda->prepare(graph, key.inputs);
  impl_->plan_for(graph, key);
  impl_->background.drain();  // the final plan, not the one serving until it is ready
}

void Engine::synchronize() {
  if (impl_->cuda) impl_->cuda->synchronize();
}

Tensor Engine::to_device(const Tensor& t) {
  FUSOR_CHECK(impl_->cuda, InvalidArgument, "Engine::to_device needs an engine with backend cuda (this one is ",
              backend_name(impl_->options.backend), ")");
  return impl_->cuda->to_device(t);
}

Tensor Engine::to_host(const Tensor& t) {
  FUSOR_CHECK(impl_->cuda, InvalidArgument, "Engine::to_host needs an engine with backend cuda (this one is ",
              backend_name(impl_->options.backend), ")");
  return impl_->cuda->to_host(t);
}

std::string Engine::explain(const Graph& graph, const DimBindings& dims, bool json) {
  FusedGraph fused = impl_->fuse(graph, input_types_from_dims(graph, dims));
  return json ? explain_json(fused, dims) : explain_text(fused, dims);
}

}  // namespace fusor
