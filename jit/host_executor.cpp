#include "jit/host_executor.h"

#include <atomic>
#include <cstdio>

#include "cache/checksum.h"
#include "jit/background_plans.h"
#include "jit/execute.h"
#include "jit/kernel_source.h"
#include "jit/plan.h"
#include "jit/symbolic_plans.h"
#include "jit/tiering.h"
#include "jit/verify.h"

namespace fusor {

namespace {

class HostExecutor final : public Executor {
 public:
  HostExecutor(ExecutorContext& ctx, BackendKind backend, std::unique_ptr<JitBackend> jit)
      : Executor(backend),
        ctx_(ctx),
        jit_(std::move(jit)),
        first_tier_(ctx.options.tiering && jit_ && backend != BackendKind::Asmjit ? first_tier(ctx.options) : nullptr),
        kernels_({ctx.options.kernel_cache_bytes, jit_ && jit_->can_load() ? ctx.store() : nullptr, ctx.options.warn}),
        symbolic_(ctx.options.symbolic_dim, ctx.fuser),
        verifier_(ctx.options.verify, ctx.options.verify_tolerance_scale, ctx.options.warn,
                  jit_ && jit_->can_load() ? ctx.store() : nullptr,
                  [this](const CompiledKernel& k) { return verdict_key(k); }) {}

  Device device() const override { return Device::Host; }

  void check_inputs(const Graph& g, const std::vector<const Tensor*>& feeds) const override {
    for (size_t i = 0; i < feeds.size(); ++i)
      FUSOR_CHECK(feeds[i]->device() == Device::Host, DeviceUnavailable, "input '", g.value(g.inputs()[i]).name,
                  "' is on a device this backend cannot read");
  }

  // A miss: with background_compile, tiering or a symbolic dim the plan serving at once
  // is a first plan and the final one is queued (Note [Background plans]).
  SizedValue<PlanEntry> build(const Graph& g, const PlanKey& key) override {
    auto entry = std::make_shared<PlanEntry>();
    std::shared_ptr<const ReferenceSpecs> ref = jit_ ? symbolic_.reference_for(g, key) : nullptr;
    const EngineOptions& o = ctx_.options;
    const bool later = (o.background_compile || o.tiering || ref) && jit_;
    // With a first tier, a symbolic first plan compiles nothing on the request's path (Note
    // [Symbolic kernels compiled behind the first size]).
    std::shared_ptr<const Plan> plan = ref ? symbolic_first_plan(g, key.inputs, ref, first_tier_ != nullptr,
                                                                 request_compile_threads())
                                           : plan_on(g, key.inputs, later ? first_tier_.get() : jit_.get(),
                                                     request_compile_threads());
    if (ref)
      for (const Step& st : plan->steps) symbolic_steps_.fetch_add(st.extent >= 0, std::memory_order_relaxed);
    entry->plan.store(plan);
    if (later && (!ref || o.specialize || plan->symbolic_pending)) background_.submit(key, g, entry);
    return {entry, plan->bytes};
  }

  void execute(const ExecutablePlan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs) override {
    const Plan& p = static_cast<const Plan&>(plan);
    if (verifier_.claim(p))
      verifier_.execute_checked(p, feeds, outputs, ctx_.pool, arenas_, ctx_.profile());  // Note [Verify mode]
    else
      execute_plan(p, feeds, outputs, ctx_.pool, arenas_, ctx_.profile());
  }

  std::vector<GroupVerdict> verdicts() const override { return verifier_.verdicts(); }
  std::vector<GroupVerdict> plan_verdicts(const ExecutablePlan& plan) const override {
    const Plan& p = static_cast<const Plan&>(plan);
    std::lock_guard<std::mutex> lk(p.verdicts_mu);
    return p.verdicts;
  }

  void drain() override { background_.drain(); }

  std::string precision_report(Precision asked) const override {
    const std::string head = std::string(" (asked ") + precision_name(asked) + "): ";
    if (!jit_ || !jit_->computes_bf16()) {
      const HostBf16& cpu = host_bf16();
      if (jit_ && jit_->name() == "llvm" && !cpu.avx512_bf16)
        return "precision fp32" + head + "this CPU has no AVX512-BF16 (bf16 instruction sets: " + cpu.str() + ")";
      return Executor::precision_report(asked);
    }
    char measured[96];
    std::snprintf(measured, sizeof measured, "vdpbf16ps measured %.2fx the f32 FMA rate here", measured_bf16_speedup());
    if (jit_->computes_amx() && wants_bf16(asked))
      return "precision bf16" + head + "GEMMs whose k fills whole AMX steps (k/2 a multiple of 16; 1x1 convolutions "
             "included) on AMX tiles (tdpbf16ps) on backend " + std::string(jit_->name()) + " (this CPU: " +
             host_bf16().str() + "), accumulating in f32; the other bf16 forms (other GEMMs, convolutions, fused "
             "attention's products) " + (measured_bf16_speedup() >= 1.0 ? "on vdpbf16ps (" : "in f32 (") + measured +
             "); softmax and every other kernel in f32" +
             (first_tier_ ? "; tiering's first tier (asmjit) computes in f32" : "");
    if (!wants_bf16(asked))
      return "precision fp32" + head + measured + ", below the " + std::to_string(kBf16AutoSpeedup).substr(0, 3) +
             "x auto asks (precision bf16 forces it)";
    return "precision bf16" + head +
           "GEMMs (1x1 convolutions included), Winograd 3x3 and strided convolutions and fused attention's two products "
           "read bf16 operands on backend " +
           std::string(jit_->name()) + " (AVX512-BF16 vdpbf16ps, " + measured + "; this CPU: " + host_bf16().str() +
           "), accumulating in f32; other convolutions (stride 1 read in place, under 16 output channels per group), "
           "symbolic attention, softmax and every other kernel in f32" +
           (first_tier_ ? "; tiering's first tier (asmjit) computes in f32" : "");
  }

  void add_stats(EngineStats& s) const override {
    kernels_.add_stats(s);
    s.background_swaps += background_.swaps();
    s.first_tier_kept += first_tier_kept_.load();
    s.symbolic_steps += symbolic_steps_.load();
    verifier_.add_stats(s);
  }

 private:
  // Tiering's first tier, asmjit; none (new shapes start on the static kernels) when it
  // cannot be made here.
  static std::unique_ptr<JitBackend> first_tier(const EngineOptions& o) {
    try {
      return make_jit_backend(BackendKind::Asmjit, BackendOptions{o.dump_dir});
    } catch (const Error& e) {
      o.warn(std::string("tiering without its first tier (new shapes start on the static kernels): ") + e.what());
      return nullptr;
    }
  }

  // Kernel k's KernelKey (Note [Kernel key]) as bytes and a checksum of its object: the
  // verdicts' key (Note [Verdicts kept with the kernel]); empty for a kernel of neither
  // backend.
  std::string verdict_key(const CompiledKernel& k) const {
    for (JitBackend* be : {jit_.get(), first_tier_.get()})
      if (be && be->name() == k.backend)
        return KernelKey{k.spec, k.backend, be->target_description(), be->compiler_version()}.serialize() + ":" +
               std::to_string(checksum64(k.object.data(), k.object.size()));
    return {};
  }

  // The threads that compile the kernels of a plan a request waits for: the engine's
  // (Note [Kernels compiled side by side], jit/plan.cpp), except when compiles are tuned,
  // whose timings another compile beside them would disturb. Background plans compile on
  // their one thread.
  int request_compile_threads() const { return ctx_.options.tune ? 1 : ctx_.pool.num_threads(); }

  // The plan of g with its groups on `be`'s exact kernels where it takes them and the
  // static kernels elsewhere (be null: all static, no compile), compiled on
  // `compile_threads` threads.
  std::shared_ptr<Plan> plan_on(const Graph& g, const std::vector<TensorType>& types, JitBackend* be,
                                int compile_threads) {
    ChooseKernel choose;
    if (be)
      choose = [this, be](const FusedGraph& f, size_t i) { return exact_kernel(*be, kernels_, f, i, ctx_.options.precision); };
    return build_plan(g, types, ctx_.fuser, ctx_.constants, choose, compile_threads);
  }

  // The first plan of a size of the symbolic dim (Note [Symbolic first plans]): with
  // `only_compiled`, on the llvm kernels that need no compile and the first tier elsewhere,
  // the reference kept in symbolic_pending when some were missing; else compiling what it
  // needs on `compile_threads` threads.
  std::shared_ptr<Plan> symbolic_first_plan(const Graph& g, const std::vector<TensorType>& types,
                                            const std::shared_ptr<const ReferenceSpecs>& ref, bool only_compiled,
                                            int compile_threads) {
    JitBackend* fallback = first_tier_.get();
    std::atomic<bool> missing{false};
    std::shared_ptr<Plan> plan =
        build_plan(g, types, ctx_.fuser, ctx_.constants, [&](const FusedGraph& f, size_t i) {
          return symbolic_first_kernel(f, i, *ref, *jit_, fallback, kernels_, ctx_.options.precision,
                                       only_compiled ? &missing : nullptr);
        }, compile_threads);
    if (missing.load()) plan->symbolic_pending = ref;
    return plan;
  }

  // The final plan that replaces `first` (Note [Background plans]); with tiering, each
  // kernel the faster of the two tiers' (Note [Tiering]).
  std::shared_ptr<const ExecutablePlan> final_plan(const Graph& g, const std::vector<TensorType>& types,
                                                   const ExecutablePlan& first) {
    const Plan& first_plan = static_cast<const Plan&>(first);
    std::shared_ptr<Plan> plan;
    if (first_plan.symbolic_pending) {
      // The symbolic kernels the first plan lacked, compiled here (Note [Symbolic kernels
      // compiled behind the first size]); that plan is the final one without specialize.
      plan = symbolic_first_plan(g, types, first_plan.symbolic_pending, false, 1);
    }
    if (!plan || ctx_.options.specialize) plan = plan_on(g, types, jit_.get(), 1);
    if (first_tier_) {
      const uint64_t kept = keep_faster(static_cast<const Plan&>(first), *plan);
      first_tier_kept_.fetch_add(kept, std::memory_order_relaxed);
      charge(*plan);  // it holds other kernels now
    }
    return plan;
  }

  ExecutorContext& ctx_;
  std::unique_ptr<JitBackend> jit_;         // the engine's backend (null: static)
  std::unique_ptr<JitBackend> first_tier_;  // tiering: asmjit, serving new shapes until jit_'s plan is ready
  HostKernelSource kernels_;
  SymbolicReferences symbolic_;
  Verifier verifier_;
  ArenaPool arenas_{ctx_.options.plan_cache_bytes};  // its stock bounded like the plans that charge for it
  std::atomic<uint64_t> first_tier_kept_{0}, symbolic_steps_{0};
  // Last: destroyed first, so a running job still sees the kernels and the backends.
  BackgroundPlans background_{[this](const Graph& g, const std::vector<TensorType>& t,
                                     const ExecutablePlan& first) { return final_plan(g, t, first); },
                              ctx_.recharge_plan, ctx_.options.warn};
};

}  // namespace

std::unique_ptr<Executor> make_host_executor(ExecutorContext& ctx, BackendKind backend,
                                            std::unique_ptr<JitBackend> jit) {
  return std::make_unique<HostExecutor>(ctx, backend, std::move(jit));
}

}  // namespace fusor
