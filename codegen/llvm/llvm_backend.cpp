#include "codegen/llvm/llvm_backend.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>

#include "codegen/backends.h"
#include "codegen/llvm/emit_amx.h"
#include "codegen/llvm/emit_attention.h"
#include "codegen/llvm/emit_contraction.h"
#include "codegen/precision.h"
#include "codegen/llvm/emit_pointwise.h"
#include "codegen/llvm/emit_reduction.h"
#include "codegen/cpu_rules.h"
#include "codegen/index_math.h"
#include "codegen/kernel_timing.h"
#include "codegen/packing.h"
#include "ir/error.h"

namespace fusor {

struct LlvmBackend::Impl {
  Options options;
  std::unique_ptr<LlvmJit> jit;
  int64_t vector_floats = 8;  // floats per vector register: 16 with AVX-512, else 8 (AVX2)
  bool bf16 = false;          // the target has AVX512-BF16 (ContractionSpec::bf16)
  bool amx = false;           // and AMX-BF16 this process may use (Note [AMX contractions])
  std::string amx_off;        // ",amx=off" where the target has AMX but the OS refused it
  int64_t l2_bytes = kDefaultL2Bytes;  // a core's L2 (contraction_tiling)
};

LlvmBackend::LlvmBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LlvmBackend::~LlvmBackend() = default;

bool llvm_supports(const KernelSpec& spec, std::string* why) {
  switch (spec.kind) {
    case KernelKind::Pointwise: return pointwise_supports(spec, why);
    case KernelKind::RowReduction: return reduction_supports(spec, why);
    case KernelKind::Contraction: return contraction_supports(spec, why);
    case KernelKind::Attention: return attention_supports(spec, why);
  }
  if (why) *why = "an unknown kernel kind";
  return false;
}

bool LlvmBackend::supports(const KernelSpec& spec, std::string* why) const {
  if (is_bf16(spec) && !impl_->bf16) {
    if (why) *why = "bf16 operands on a target without AVX512-BF16";
    return false;
  }
  return llvm_supports(spec, why);
}

bool LlvmBackend::computes_bf16() const { return impl_->bf16; }
bool LlvmBackend::computes_amx() const { return impl_->amx; }
namespace {
// AMX here, and vdpbf16ps slower than f32 FMAs: the bf16 forms AMX does not take stay f32.
bool only_amx_pays(bool amx) { return amx && measured_bf16_speedup() < 1.0; }
}  // namespace

bool LlvmBackend::bf16_pays(const KernelSpec& spec) const {
  return !only_amx_pays(impl_->amx) || amx_applies(spec);
}
bool LlvmBackend::splits_bf16_attention(const KernelSpec& spec) const {
  // Where only AMX pays, the fused attention's products would be f32; split, both run as AMX
  // GEMMs where the head size and the key count fill whole steps (Q·Kᵀ sums over the head,
  // P·V over the keys). Note [AMX contractions].
  if (spec.kind != KernelKind::Attention || spec.symbolic || !only_amx_pays(impl_->amx)) return false;
  const AttentionSpec& a = spec.attention;
  return bf16_applies(spec, nullptr) && llvm_ir::amx_whole_steps(a.d) && llvm_ir::amx_whole_steps(a.tk);
}

std::string LlvmBackend::target_description() const {
  // The L2 size chooses tilings (contraction_tiling), so kernels of other sizes are others.
  return impl_->jit->target_description() + ",l2=" + std::to_string(impl_->l2_bytes) + impl_->amx_off;
}

const LlvmBackend::Options& LlvmBackend::options() const { return impl_->options; }

namespace {

// The kernel's entry symbol: one per spec, so an object from the disk store is found by
// name (each kernel has its own JITDylib, so equal names never clash).
std::string kernel_symbol(const KernelSpec& spec) {
  char symbol[64];
  std::snprintf(symbol, sizeof symbol, "fusor_k%016" PRIx64, spec.hash());
  return symbol;
}

// The kernel takes ownership of the JIT's function: its address, symbol and object.
void adopt(CompiledKernel& kernel, LlvmJit::CompiledFunction function) {
  auto owned = std::make_shared<LlvmJit::CompiledFunction>(std::move(function));
  kernel.fn = owned->as<CompiledKernel::Fn>();
  kernel.symbol = owned->symbol();
  kernel.object = owned->object();
  kernel.code_bytes = int64_t(kernel.object.size());
  kernel.code = std::move(owned);
}

}  // namespace

// What a kernel needs besides its code, derived from the spec alone (so a kernel loaded from
// its object gets the same): the task count and the constants it reads packed. Returns the
// blocking chosen (one line for dumps; empty for kinds without one); *ir, when given, gets
// the module.
std::string LlvmBackend::describe(const KernelSpec& spec, CompiledKernel& kernel, std::string* ir,
                                  const TilingChoice& choice) const {
  std::string why;
  if (!supports(spec, &why)) fail(ErrorCode::Unsupported, "llvm backend: kernel '", spec.name, "': ", why);
  const std::string symbol = kernel_symbol(spec);
  kernel.spec = spec;
  kernel.backend = "llvm";
  kernel.tasks = spec.tasks;
  std::string tiling;
  switch (spec.kind) {
    case KernelKind::RowReduction:
      if (ir) *ir = emit_reduction_ir(spec, symbol);
      if (spec.symbolic) {  // one task per row: S * the other row dims
        const std::vector<int64_t>& shape = spec.reduction.shape;
        kernel.tasks_scale = numel(std::vector<int64_t>(shape.begin() + 1, shape.end() - 1));
      }
      break;
    case KernelKind::Contraction: {
      const ContractionTiling t = contraction_tiling(spec, impl_->vector_floats, choice, impl_->l2_bytes, impl_->amx);
      if (ir) *ir = emit_contraction_ir(spec, symbol, t);
      kernel.tasks = t.tasks();
      if (t.symbolic) {
        kernel.tasks_fixed = t.batches * t.n_chunks;
        kernel.tasks_per = t.mr * t.tiles_per_chunk;
      }
      tiling = t.str();
      if (t.prepack) {
        const int64_t width = prepack_width(t);
        const PackKind kind = prepack_kind(t);
        kernel.prepacks.push_back({spec.contraction.b.buffer, packed_b_floats(spec.contraction, width, kind), width, kind});
      }
      break;
    }
    case KernelKind::Attention: {
      const AttentionTiling t = attention_tiling(spec, impl_->vector_floats, choice);
      if (ir) *ir = emit_attention_ir(spec, symbol, t);
      kernel.tasks = t.tasks();
      if (t.symbolic) {  // batches x ceil(T / rows per task)
        kernel.tasks_fixed = t.batches;
        kernel.tasks_per = t.rows_per_task;
        kernel.max_extent = attention_max_extent(spec);
      }
      tiling = t.str();
      break;
    }
    case KernelKind::Pointwise:
      if (ir) *ir = emit_pointwise_ir(spec, symbol, impl_->vector_floats);
      if (spec.symbolic) {  // pointwise_task_elements() of the S * numel(rest) elements
        const std::vector<int64_t>& shape = spec.pointwise.shape;
        kernel.tasks_scale = numel(std::vector<int64_t>(shape.begin() + 1, shape.end()));
        kernel.tasks_per = pointwise_task_elements(spec);
      }
      break;
  }
  return tiling;
}

namespace {

// The first line of a stored object that records a tuned tiling (Note [Tuned tilings]); an
// object alone starts with ELF's magic, never with this.
constexpr std::string_view kTilingTag = "fusor-tiling ";
// A tiling other than the rules' is kept only when it is this much faster (a fraction of the
// rules' time): a smaller gain is within what repeated timings of one kernel spread by.
constexpr double kTuneMargin = 0.03;

}  // namespace

std::shared_ptr<CompiledKernel> LlvmBackend::compile_tiling(const KernelSpec& spec, const TilingChoice& choice) const {
  FUSOR_CHECK(choice.empty() || spec.kind == KernelKind::Contraction || spec.kind == KernelKind::Attention,
              InvalidArgument, "llvm backend: kernel '", spec.name,
              "': a tiling choice for a kernel that is neither a contraction nor attention");
  const auto start = std::chrono::steady_clock::now();
  const std::string symbol = kernel_symbol(spec);
  auto kernel = std::make_shared<CompiledKernel>();
  std::string ir;
  const std::string tiling = describe(spec, *kernel, &ir, choice);
  LlvmJit::CompileOptions jit_options;
  jit_options.dump_dir = impl_->options.dump_dir;
  if (!jit_options.dump_dir.empty()) {
    const std::string path = jit_options.dump_dir + "/" + symbol + ".spec";
    std::ofstream out(path);
    out << spec.str();
    if (!tiling.empty()) out << tiling << "\n";
    if (!out) fail(ErrorCode::Io, "llvm backend: cannot write the dump '", path, "'");
  }
  adopt(*kernel, impl_->jit->compile(ir, symbol, jit_options));
  if (!choice.empty()) kernel->object = std::string(kTilingTag) + choice.str() + "\n" + kernel->object;
  kernel->compile_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  return kernel;
}

std::shared_ptr<CompiledKernel> LlvmBackend::compile_tuned(const KernelSpec& spec) const {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<TilingChoice> candidates = spec.kind == KernelKind::Attention
                                                   ? attention_candidates(spec, impl_->vector_floats)
                                                   : tiling_candidates(spec, impl_->vector_floats, impl_->l2_bytes, impl_->amx);
  std::shared_ptr<CompiledKernel> best;
  TilingChoice best_choice;
  double best_s = 0, rules_s = 0;
  std::string all;  // every candidate's time, for the dump
  for (const TilingChoice& choice : candidates) {
    std::shared_ptr<CompiledKernel> k = compile_tiling(spec, choice);
    if (candidates.size() == 1) return k;
    ScratchOperands scratch(*k);
    const double s = makespan(task_seconds(*k, scratch.buffers()), impl_->options.tune_threads);
    char timed[96];
    std::snprintf(timed, sizeof timed, "%s%s %.3f ms (%" PRId64 " tasks)", all.empty() ? "" : "; ", choice.str().c_str(),
                  s * 1e3, k->tasks);
    all += timed;
    if (choice.empty()) rules_s = s;
    // Another tiling replaces the rules' (the first) only when clearly faster: within
    // kTuneMargin the two are the same to these timings, and the rules' is the known one.
    if (!best || s < (best_choice.empty() ? best_s * (1.0 - kTuneMargin) : best_s)) {
      best = std::move(k);
      best_choice = choice;
      best_s = s;
    }
  }
  // The dump of the kernel kept: its own spec and tiling again (each candidate overwrote it).
  if (!impl_->options.dump_dir.empty()) best = compile_tiling(spec, best_choice);
  char line[160];
  std::snprintf(line, sizeof line, "tuned: %s %.3f ms, the rules' %.3f ms, %zu tilings timed",
                best_choice.str().c_str(), best_s * 1e3, rules_s * 1e3, candidates.size());
  best->tuning = line;
  if (!impl_->options.dump_dir.empty()) {
    const std::string path = impl_->options.dump_dir + "/" + kernel_symbol(spec) + ".spec";
    std::ofstream out(path, std::ios::app);
    out << best->tuning << "\ntimed: " << all << "\n";
    if (!out) fail(ErrorCode::Io, "llvm backend: cannot write the dump '", path, "'");
  }
  best->compile_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  return best;
}

std::shared_ptr<const CompiledKernel> LlvmBackend::compile(const KernelSpec& spec) {
  std::string why;
  if (impl_->options.tune && (spec.kind == KernelKind::Contraction || spec.kind == KernelKind::Attention) &&
      supports(spec, &why))
    return compile_tuned(spec);
  return compile_tiling(spec, {});
}

std::shared_ptr<const CompiledKernel> LlvmBackend::load(const KernelSpec& spec, const std::string& object) {
  const auto start = std::chrono::steady_clock::now();
  auto kernel = std::make_shared<CompiledKernel>();
  TilingChoice choice;
  std::string_view code = object;
  if (code.substr(0, kTilingTag.size()) == kTilingTag) {
    const size_t eol = code.find('\n');
    const std::optional<TilingChoice> parsed =
        eol == std::string_view::npos ? std::nullopt
                                      : TilingChoice::parse(code.substr(kTilingTag.size(), eol - kTilingTag.size()));
    if (!parsed || (spec.kind != KernelKind::Contraction && spec.kind != KernelKind::Attention))
      fail(ErrorCode::CompileFailed, "llvm backend: kernel '", spec.name, "': a stored tiling that does not read (",
           std::string(code.substr(0, std::min<size_t>(eol, 80))), ")");
    choice = *parsed;
    code.remove_prefix(eol + 1);
  }
  describe(spec, *kernel, nullptr, choice);
  adopt(*kernel, impl_->jit->load(std::string(code), kernel_symbol(spec)));
  kernel->object = object;
  kernel->code_bytes = int64_t(object.size());
  if (!choice.empty()) kernel->tuning = "tuned: " + choice.str() + " (stored)";
  kernel->compile_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  return kernel;
}

std::string tuned_choice(const CompiledKernel& kernel) {
  const std::string& o = kernel.object;
  if (o.compare(0, kTilingTag.size(), kTilingTag) != 0) return "rules";
  const size_t eol = o.find('\n');
  return o.substr(kTilingTag.size(), eol == std::string::npos ? std::string::npos : eol - kTilingTag.size());
}

std::string LlvmBackend::compiler_version() const {
  const std::string v = "llvm-" + LlvmJit::llvm_version();
  return impl_->options.tune ? v + " tuned" : v;
}

std::unique_ptr<LlvmBackend> make_llvm_backend(LlvmBackend::Options options) {
  auto impl = std::make_unique<LlvmBackend::Impl>();
  impl->options = std::move(options);
  impl->jit = LlvmJit::create();  // throws DeviceUnavailable with the reason
  const std::string target = impl->jit->target_description() + ",";
  if (target.find("+avx512f,") != std::string::npos) impl->vector_floats = 16;
  impl->bf16 = impl->vector_floats == 16 && target.find("+avx512bf16,") != std::string::npos;
  // AMX where the compiler targets it and the OS granted its tile state (host_bf16 asks);
  // where it did not, the kernels are vdpbf16ps ones and their key says so.
  const bool amx_target = impl->bf16 && target.find("+amx-bf16,") != std::string::npos &&
                          target.find("+amx-tile,") != std::string::npos;
  impl->amx = amx_target && impl->options.amx && host_bf16().amx_bf16;
  if (amx_target && !impl->amx) impl->amx_off = ",amx=off";
  impl->l2_bytes = host_l2_bytes();
  return std::unique_ptr<LlvmBackend>(new LlvmBackend(std::move(impl)));
}

std::unique_ptr<JitBackend> make_llvm_jit(const BackendOptions& options) {
  LlvmBackend::Options o;
  o.dump_dir = options.dump_dir;
  o.tune = options.tune;
  o.tune_threads = std::max(1, options.tune_threads);
  return make_llvm_backend(std::move(o));
}

}  // namespace fusor
