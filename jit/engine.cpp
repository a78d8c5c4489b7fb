#include "jit/engine.h"

#include "ir/json.h"
#include "ir/passes/explain.h"
#include "jit/bind_run.h"
#include "jit/executor.h"
#include "jit/heap_release.h"
#include "jit/verify.h"

namespace fusor {

// The Engine is the stages of a run in order: bind the inputs (jit/bind_run.h), make the
// plan key (Note [Plan key]), find the plan or have the executor build it (the plan cache:
// cache/keyed_cache.h; the executor: jit/executor.h), execute it.
struct Engine::Impl {
  explicit Impl(EngineOptions o)
      : context(std::move(o)),
        heap(HeapRelease::threshold_for(context.options.plan_cache_bytes)),
        plans(std::make_shared<PlanCache>(PlanCache::Options{
            context.options.plan_cache_bytes, nullptr,
            [this](const PlanKey&, const std::shared_ptr<const PlanEntry>& e) { heap.evicted(e->plan.load()->bytes); }})) {
    std::weak_ptr<PlanCache> weak = plans;
    context.recharge_plan = [weak](const PlanKey& k, const PlanEntry& e, uint64_t bytes) {
      if (std::shared_ptr<PlanCache> p = weak.lock()) p->recharge(k, &e, bytes);
    };
    executor = make_executor(context);
  }

  // The key of g's plan at `input_types` on this engine's executor.
  PlanKey key(const Graph& g, std::vector<TensorType> input_types) const {
    PlanKey k;
    k.inputs = std::move(input_types);
    k.graph_fingerprint = g.fingerprint();
    k.device = executor->device();
    k.options_hash = context.options_hash;
    return k;
  }

  // The entry serving `key`, built on a miss (Note [Background plans]: perhaps a first plan).
  std::shared_ptr<const PlanEntry> entry(const Graph& g, const PlanKey& k) {
    return plans->get_or_build(k, [&] {
      heap.maybe_release();  // Note [Releasing evicted memory]
      return executor->build(g, k);
    });
  }

  ExecutorContext context;
  HeapRelease heap;
  // Before the plans: the plans (their kernels, device arenas and constants) are released
  // before the executor that made them, and a background plan still running when the
  // engine goes holds its own cache entry, so it needs the executor and the context only
  // (its recharge finds the plan cache gone: context.recharge_plan holds it weakly).
  std::unique_ptr<Executor> executor;
  std::shared_ptr<PlanCache> plans;
};

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Engine::~Engine() = default;

const EngineOptions& Engine::options() const { return impl_->context.options; }

TensorMap Engine::run(const Graph& graph, const TensorMap& inputs) {
  TensorMap outputs;
  run(graph, inputs, outputs);
  return outputs;
}

void Engine::run(const Graph& graph, const TensorMap& inputs, TensorMap& outputs) {
  Impl& m = *impl_;
  std::vector<const Tensor*> feeds;
  std::vector<TensorType> types = bind_run(graph, inputs, outputs, &feeds);
  m.executor->check_inputs(graph, feeds);
  const PlanKey key = m.key(graph, std::move(types));
  std::shared_ptr<const PlanEntry> entry = m.entry(graph, key);
  // However the run ends, its entry's final plan may start compiling (Note [Background plans]).
  struct OpenGate {
    const PlanEntry& e;
    ~OpenGate() { e.first_run.open(); }
  } open_gate{*entry};
  m.executor->execute(*entry->plan.load(), feeds, outputs);
}

void Engine::prepare(const Graph& graph, const DimBindings& dims) {
  std::vector<TensorType> types = input_types_from_dims(graph, dims);
  impl_->entry(graph, impl_->key(graph, types))->first_run.open();  // no run waits on it
  impl_->executor->drain();  // the final plan, not the one serving until it is ready
  if (impl_->context.options.verify != VerifyMode::Off) run(graph, verify_inputs(graph, types));
}

void Engine::drain() { impl_->executor->drain(); }

void Engine::synchronize() { impl_->executor->synchronize(); }

Tensor Engine::to_device(const Tensor& t) { return impl_->executor->to_device(t); }

Tensor Engine::to_host(const Tensor& t) { return impl_->executor->to_host(t); }

namespace {

// Adds "name": value (JSON text) as the last member of the JSON object `object`.
void add_member(std::string& object, const char* name, const std::string& value) {
  const size_t close = object.rfind('}');
  FUSOR_ASSERT(close != std::string::npos, "explain_json returned no object");
  object = object.substr(0, close) + ", \"" + name + "\": " + value + object.substr(close);
}

}  // namespace

std::string Engine::explain(const Graph& graph, const DimBindings& dims, bool json) {
  const std::vector<TensorType> types = input_types_from_dims(graph, dims);
  FusedGraph fused = impl_->context.fuser.fuse(graph, types);
  std::string report = json ? explain_json(fused, dims) : explain_text(fused, dims);
  const Precision precision = impl_->context.options.precision;
  if (precision != Precision::Fp32) {  // Note [bf16 contractions]: what it gives here, and why
    const std::string line = impl_->executor->precision_report(precision);
    if (json) {
      add_member(report, "precision", json_string(line));
    } else {
      report += line + "\n";
    }
  }
  if (impl_->context.options.verify == VerifyMode::Off) return report;
  // Note [Verify mode]: the plan of these dims, checked (on seeded inputs when no run has
  // checked it yet), and its verdicts beside the groups.
  prepare(graph, dims);
  const std::vector<GroupVerdict> verdicts =
      impl_->executor->plan_verdicts(*impl_->entry(graph, impl_->key(graph, types))->plan.load());
  if (json) {
    add_member(report, "verify", verdicts_json(verdicts));
    return report;
  }
  report += "verify (" + std::string(verify_mode_name(impl_->context.options.verify)) + "): " +
            std::to_string(verdicts.size()) + " fused kernels checked against their ops unfused\n";
  for (const GroupVerdict& v : verdicts) report += "  " + v.str() + "\n";
  return report;
}

std::vector<GroupVerdict> Engine::verdicts() const { return impl_->executor->verdicts(); }

std::vector<StepProfile> Engine::profile() const { return impl_->context.times.snapshot(); }

EngineStats Engine::stats() const {
  const Impl& m = *impl_;
  const CacheStats p = m.plans->stats();
  EngineStats s;
  s.plan_hits = p.hits;
  s.plan_misses = p.misses;
  s.plans = p.entries;
  s.plan_evictions = p.evictions;
  s.plan_bytes = p.bytes;
  s.packed_bytes = m.context.constants.bytes();
  m.executor->add_stats(s);
  if (const KernelStore* disk = m.context.disk_store()) {
    const StoreStats st = disk->stats();
    s.disk_enabled = true;
    s.disk_dir = st.location;
    s.disk_entries = st.entries;
    s.disk_bytes = st.bytes;
  }
  if (const RedisStore* remote = m.context.remote_store()) {
    const StoreStats st = remote->stats();
    s.remote_url = st.location;
    s.remote_enabled = remote->enabled();
    s.remote_state = st.state;
    s.remote_hits = st.hits;
    s.remote_misses = st.misses;
    s.remote_writes = st.writes;
    s.remote_rejected = st.rejected;
    s.remote_corrupt = st.corrupt;
    s.remote_unavailable = st.unavailable;
  }
  return s;
}

}  // namespace fusor
