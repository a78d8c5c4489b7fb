// AsmjitBackend (codegen/asmjit/asmjit_backend.h): host detection, one x86::Compiler per
// kernel, the JitRuntime that owns the code, dumps. Layer: codegen/asmjit.
#include "codegen/asmjit/asmjit_backend.h"

#include <asmjit/x86.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <mutex>

#include "codegen/asmjit/emit_expr.h"
#include "codegen/asmjit/supports.h"
#include "codegen/packing.h"
#include "codegen/backends.h"
#include "ir/error.h"

namespace fusor {

namespace {

// The executable memory of every kernel of one backend. Shared by the backend and each
// kernel's code handle, so a kernel may outlive the backend that made it.
struct Runtime {
  asmjit::JitRuntime rt;
  std::mutex mu;  // JitRuntime's allocator locks too; this keeps add/release simple to reason about
};

// Keeps asmjit's first error (asmjit reports errors as values; the emitter stays usable).
class FirstError : public asmjit::ErrorHandler {
 public:
  void handleError(asmjit::Error err, const char* message, asmjit::BaseEmitter*) override {
    if (error == asmjit::kErrorOk) {
      error = err;
      text = message ? message : asmjit::DebugUtils::errorAsString(err);
    }
  }
  asmjit::Error error = asmjit::kErrorOk;
  std::string text;
};

bool host_has_avx2() {
  using F = asmjit::CpuFeatures::X86;
  const asmjit::CpuInfo& cpu = asmjit::CpuInfo::host();
  return cpu.arch() == asmjit::Arch::kX64 && cpu.hasFeature(F::kAVX2) && cpu.hasFeature(F::kFMA);
}

bool host_has_avx512() {
  using F = asmjit::CpuFeatures::X86;
  const asmjit::CpuInfo& cpu = asmjit::CpuInfo::host();
  return host_has_avx2() && cpu.hasFeature(F::kAVX512_F) && cpu.hasFeature(F::kAVX512_DQ) &&
         cpu.hasFeature(F::kAVX512_BW) && cpu.hasFeature(F::kAVX512_VL) && cpu.hasFeature(F::kBMI2);
}

}  // namespace

// Note [asmjit's debug register checks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Debian's libasmjit.a (0.0~git20221210) is compiled without NDEBUG, which asmjit reads as
// ASMJIT_BUILD_DEBUG: its register allocator then re-verifies the whole register assignment
// (every physical register of every group against its work register) after each assign,
// unassign, swap and spill, RAAssignment::verify. That self-check was half the time of an
// asmjit compile (perf, cpu-clock: 27% of `compile/gemm/asmjit`'s samples, the rest of the
// allocator ~15%), which is the first request's time under tiering. The check is an
// `inline` member of a private header, emitted as a weak symbol and called through it, so a
// strong definition here replaces it at link time; a release build of asmjit has no such
// symbol and this one stays unused. Nothing else changes: the assertions stay, and
// DiagnosticOptions' validation (AsmjitBackend::compile) still rejects invalid instructions.
// The mangled name is spelled out for the ABI namespace asmjit names in its headers.
#define FUSOR_ASMJIT_STR2(x) #x
#define FUSOR_ASMJIT_STR(x) FUSOR_ASMJIT_STR2(x)
static_assert(sizeof(FUSOR_ASMJIT_STR(ASMJIT_ABI_NAMESPACE)) == sizeof("_abi_1_9"),
              "asmjit's ABI namespace changed length: update the mangled name below");
extern "C" void fusor_asmjit_ra_assignment_verify() __asm__(
    "_ZN6asmjit8" FUSOR_ASMJIT_STR(ASMJIT_ABI_NAMESPACE) "12RAAssignment6verifyEv");
extern "C" void fusor_asmjit_ra_assignment_verify() {}
#undef FUSOR_ASMJIT_STR
#undef FUSOR_ASMJIT_STR2

struct AsmjitBackend::Impl {
  Options options;
  bool avx512 = false;
  std::shared_ptr<Runtime> runtime = std::make_shared<Runtime>();
  // Symbols name dump files; two compiles of equal specs differ here.
  std::atomic<uint64_t> next{0};
};

AsmjitBackend::AsmjitBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
AsmjitBackend::~AsmjitBackend() = default;

bool AsmjitBackend::supports(const KernelSpec& spec, std::string* why) const { return asmjit_supports(spec, why); }

std::string AsmjitBackend::target_description() const {
  return impl_->avx512 ? "x86-64 avx512f+dq+bw+vl+bmi2+fma (zmm, 16 lanes)" : "x86-64 avx2+fma (ymm, 8 lanes)";
}

std::string AsmjitBackend::compiler_version() const { return "asmjit-0.0~git20221210"; }

int AsmjitBackend::vector_lanes() const { return impl_->avx512 ? 16 : 8; }

const AsmjitBackend::Options& AsmjitBackend::options() const { return impl_->options; }

std::shared_ptr<const CompiledKernel> AsmjitBackend::compile(const KernelSpec& spec) {
  namespace x86 = asmjit::x86;
  const auto start = std::chrono::steady_clock::now();
  std::string why;
  if (!asmjit_supports(spec, &why)) fail(ErrorCode::Unsupported, "asmjit backend: kernel '", spec.name, "': ", why);
  char symbol[64];
  std::snprintf(symbol, sizeof symbol, "fusor_k%016" PRIx64 "_%" PRIu64, spec.hash(), impl_->next.fetch_add(1));
  const bool dump = !impl_->options.dump_dir.empty();

  asmjit::CodeHolder code;
  code.init(impl_->runtime->rt.environment());
  FirstError errors;
  code.setErrorHandler(&errors);
  asmjit::StringLogger logger;
  if (dump) code.setLogger(&logger);
  x86::Compiler cc(&code);
  // Without validation asmjit encodes some invalid forms silently (a VEX-only instruction
  // on a zmm operand gives wrong lanes, not an error); with it they are CompileFailed. It
  // costs ~5-10% of the compile time.
  cc.addDiagnosticOptions(asmjit::DiagnosticOptions::kValidateIntermediate | asmjit::DiagnosticOptions::kValidateAssembler);
  asmjit::FuncNode* fn =
      cc.addFunc(asmjit::FuncSignatureT<void, void**, int64_t, int64_t>(asmjit::CallConvId::kHost));
  fn->frame().setAvxEnabled();
  if (impl_->avx512) fn->frame().setAvx512Enabled();
  fn->frame().setAvxCleanup();  // vzeroupper before returning to SSE code
  x86::Gp buffers = cc.newIntPtr("buffers"), task_begin = cc.newInt64("task_begin"), task_end = cc.newInt64("task_end");
  fn->setArg(0, buffers);
  fn->setArg(1, task_begin);
  fn->setArg(2, task_end);
  asmjit_emit::VecEmitter e(cc, impl_->avx512);
  switch (spec.kind) {
    case KernelKind::Pointwise: asmjit_emit::emit_pointwise(e, spec, buffers, task_begin, task_end); break;
    case KernelKind::RowReduction: asmjit_emit::emit_reduction(e, spec, buffers, task_begin, task_end); break;
    case KernelKind::Contraction: asmjit_emit::emit_gemm(e, spec, buffers, task_begin, task_end); break;
    case KernelKind::Attention: break;  // declined by asmjit_supports
  }
  cc.ret();
  cc.endFunc();
  cc.finalize();
  auto failed = [&](const char* what) {
    std::string detail = errors.text;
    detail += "\n";
    detail += spec.str();
    if (dump) detail.append(logger.data(), logger.dataSize());
    fail(ErrorCode::CompileFailed, "asmjit backend: kernel '", spec.name, "' (", symbol, "): ", what, ": ", detail);
  };
  if (errors.error != asmjit::kErrorOk) failed("emission failed");

  if (dump) {
    const std::string base = impl_->options.dump_dir + "/" + symbol;
    std::ofstream s(base + ".spec");
    s << spec.str();
    std::ofstream a(base + ".s");
    a << "; " << target_description() << "\n" << std::string(logger.data(), logger.dataSize());
    if (!s || !a) fail(ErrorCode::Io, "asmjit backend: cannot write the dumps '", base, ".{spec,s}'");
  }

  auto kernel = std::make_shared<CompiledKernel>();
  void* entry = nullptr;
  {
    std::lock_guard<std::mutex> lk(impl_->runtime->mu);
    if (impl_->runtime->rt.add(&entry, &code) != asmjit::kErrorOk || !entry) failed("adding the code to the JitRuntime failed");
  }
  std::shared_ptr<Runtime> runtime = impl_->runtime;
  kernel->code = std::shared_ptr<const void>(entry, [runtime](const void* p) {
    std::lock_guard<std::mutex> lk(runtime->mu);
    runtime->rt.release(const_cast<void*>(p));
  });
  kernel->fn = reinterpret_cast<CompiledKernel::Fn>(entry);
  kernel->spec = spec;
  kernel->tasks = spec.tasks;
  if (spec.kind == KernelKind::Contraction) {
    // Tasks over rows and panels, and a constant B packed once (Note [asmjit GEMM kernels]).
    const asmjit_emit::GemmTasks t = asmjit_emit::gemm_tasks(spec, impl_->avx512);
    kernel->tasks = t.tasks();
    if (t.prepack)
      kernel->prepacks.push_back({spec.contraction.b.buffer, packed_b_floats(spec.contraction, t.nb, PackKind::Panels),
                                  t.nb, PackKind::Panels});
  }
  kernel->backend = "asmjit";
  kernel->symbol = symbol;
  kernel->code_bytes = int64_t(code.codeSize());
  kernel->compile_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  return kernel;
}

std::unique_ptr<AsmjitBackend> make_asmjit_backend(AsmjitBackend::Options options) {
  if (!host_has_avx2())
    fail(ErrorCode::DeviceUnavailable, "asmjit backend: the host is not x86-64 with AVX2 and FMA");
  auto impl = std::make_unique<AsmjitBackend::Impl>();
  impl->avx512 = options.isa == AsmjitBackend::Isa::Host && host_has_avx512();
  impl->options = std::move(options);
  return std::unique_ptr<AsmjitBackend>(new AsmjitBackend(std::move(impl)));
}

std::unique_ptr<JitBackend> make_asmjit_jit(const BackendOptions& options) {
  AsmjitBackend::Options o;
  o.dump_dir = options.dump_dir;
  return make_asmjit_backend(std::move(o));
}

}  // namespace fusor
