// LlvmJit over ORC LLJIT (LLVM 16). See llvm_jit.h. The only file that sees LLVM's JIT,
// pass and target headers for this layer.
#include "codegen/llvm/llvm_jit.h"

#include "codegen/packing.h"
#include "codegen/precision.h"
#include "codegen/winograd.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <utility>
#include <vector>

#include <llvm/ADT/StringMap.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/MC/SubtargetFeature.h>
#include <llvm/Object/ELF.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CodeGen.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include "ir/error.h"

namespace fusor {

namespace {

// IR longer than this is cut in error messages (the head says what the module is).
constexpr size_t kMaxIrInError = 16 * 1024;

std::string ir_excerpt(const std::string& ir) {
  if (ir.size() <= kMaxIrInError) return ir;
  return ir.substr(0, kMaxIrInError) + "\n... (" + std::to_string(ir.size() - kMaxIrInError) +
         " more bytes of IR)";
}

[[noreturn]] void compile_failed(const std::string& symbol, const std::string& what,
                                 const std::string& ir) {
  fail(ErrorCode::CompileFailed, "LLVM failed to compile '", symbol, "': ", what, "\n--- IR ---\n",
       ir_excerpt(ir));
}

std::string take_message(llvm::Error err) { return llvm::toString(std::move(err)); }

// Materialization runs on the thread that calls lookup() (LLJIT's default in-place
// dispatcher), and ORC reports materialization failures to the session's error reporter,
// not in the lookup's error. Each thread keeps its own so concurrent compiles do not mix
// their messages.
thread_local std::string t_session_errors;

void init_native_target(std::string* why) {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
    ok = !llvm::InitializeNativeTarget() && !llvm::InitializeNativeTargetAsmPrinter() &&
         !llvm::InitializeNativeTargetAsmParser();
  });
  if (!ok) *why = "LLVM has no native target for this host";
}

}  // namespace

struct LlvmJit::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple()};
  std::vector<std::string> enabled_features;  // sorted, "+name"
  std::string cpu;
  std::string triple;
  std::string feature_string;  // the full "+a,-b,..." list given to the target
  llvm::orc::JITDylib* process = nullptr;  // the process and runtime symbols
  std::atomic<uint64_t> next_dylib{0};
  std::atomic<uint64_t> removed{0};  // JITDylibs removed (Note [One JITDylib per function])
};

// Note [One JITDylib per function]
// Each compiled function is linked into a JITDylib of its own (linked against the process
// and runtime symbols), and removing that JITDylib frees its code. So symbols never clash:
// the same relocatable object, e.g. from the disk store, may be loaded any number of
// times, and a cache that evicted a kernel still referenced by a plan can load it again.
// The session's symbol string pool keeps the names of removed symbols until told to drop
// them, so every 256th removal clears its dead entries: over 10,000 shapes (~30,000
// kernels) they were the last thing growing (tests/jit/memory_budget_test.cpp).
struct LlvmJit::CompiledFunction::Tracker {
  std::shared_ptr<LlvmJit::Impl> owner;  // keeps the LLJIT alive while code is live
  llvm::orc::JITDylib* dylib = nullptr;
  llvm::Error remove() {
    llvm::orc::ExecutionSession& es = owner->jit->getExecutionSession();
    llvm::Error err = es.removeJITDylib(*dylib);
    if (owner->removed.fetch_add(1, std::memory_order_relaxed) % 256 == 255) es.getSymbolStringPool()->clearDeadEntries();
    return err;
  }
};

// Note [Host features, not the CPU name]
// A CPU name alone is not enough: an LLVM that does not know a new CPU by name would fall
// back to a generic model and silently drop AVX-512. So the target gets the host's full
// feature list (getHostCPUFeatures, which asks cpuid) and the name only for scheduling.
// The same JITTargetMachineBuilder makes the optimizer's target machine and the code
// generator's, so the vectorizers cost the same vectors the backend then emits.
std::unique_ptr<LlvmJit> LlvmJit::create() {
  std::string why;
  init_native_target(&why);
  if (!why.empty()) fail(ErrorCode::DeviceUnavailable, "llvm backend: ", why);

  auto impl = std::make_shared<Impl>();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  impl->triple = triple.str();
  impl->cpu = llvm::sys::getHostCPUName().str();

  llvm::StringMap<bool> host_features;
  if (!llvm::sys::getHostCPUFeatures(host_features)) {
    fail(ErrorCode::DeviceUnavailable,
         "llvm backend: cannot read the host CPU features (getHostCPUFeatures failed)");
  }
  std::vector<std::string> all;
  for (const auto& f : host_features) {
    all.push_back((f.second ? "+" : "-") + f.first().str());
    if (f.second) impl->enabled_features.push_back("+" + f.first().str());
  }
  std::sort(all.begin(), all.end());  // StringMap order is hash order; make it stable
  std::sort(impl->enabled_features.begin(), impl->enabled_features.end());

  llvm::orc::JITTargetMachineBuilder jtmb(triple);
  jtmb.setCPU(impl->cpu);
  jtmb.addFeatures(all);
  jtmb.setCodeGenOptLevel(llvm::CodeGenOpt::Aggressive);
  impl->feature_string = jtmb.getFeatures().getString();
  impl->jtmb = jtmb;

  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(jtmb)
                 // LLJIT's default compiler shares one TargetMachine, which is not safe to
                 // use from several threads; this one makes a TargetMachine per compile.
                 .setCompileFunctionCreator(
                     [](llvm::orc::JITTargetMachineBuilder b)
                         -> llvm::Expected<std::unique_ptr<llvm::orc::IRCompileLayer::IRCompiler>> {
                       return std::make_unique<llvm::orc::ConcurrentIRCompiler>(std::move(b));
                     })
                 .create();
  if (!jit) {
    fail(ErrorCode::DeviceUnavailable, "llvm backend: cannot create the ORC LLJIT: ",
         take_message(jit.takeError()));
  }
  impl->jit = std::move(*jit);
  impl->jit->getExecutionSession().setErrorReporter(
      [](llvm::Error err) { t_session_errors += take_message(std::move(err)) + "\n"; });

  // Kernels may call libm (expf, tanhf) and the optimizer may turn loops into memset or
  // memcpy calls: JIT'd code resolves those from the process. The process symbols live in
  // their own JITDylib behind the main one, so compile()'s lookup, which searches only the
  // main one, never hands back a process function for a symbol the module lacks.
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      impl->jit->getDataLayout().getGlobalPrefix());
  if (!process) {
    fail(ErrorCode::DeviceUnavailable, "llvm backend: cannot search the process for symbols: ",
         take_message(process.takeError()));
  }
  llvm::orc::JITDylib& process_dylib = impl->jit->getExecutionSession().createBareJITDylib("<process>");
  process_dylib.addGenerator(std::move(*process));
  // The runtime routines kernels call (codegen/packing.h) are defined by address: they are
  // not in the process's dynamic symbol table when fusor is linked statically.
  llvm::orc::SymbolMap runtime;
  auto add = [&](const char* name, void* address) {
    runtime[impl->jit->mangleAndIntern(name)] = llvm::JITEvaluatedSymbol(
        llvm::pointerToJITTargetAddress(address), llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable);
  };
  add("fusor_rt_pack_panel", reinterpret_cast<void*>(&fusor_rt_pack_panel));
  add("fusor_rt_pack_a_bf16", reinterpret_cast<void*>(&fusor_rt_pack_a_bf16));
  add("fusor_rt_pack_a_bf16_amx", reinterpret_cast<void*>(&fusor_rt_pack_a_bf16_amx));
  add("fusor_rt_pack_panel_bf16", reinterpret_cast<void*>(&fusor_rt_pack_panel_bf16));
  add("fusor_rt_pack_conv_tile", reinterpret_cast<void*>(&fusor_rt_pack_conv_tile));
  add("fusor_rt_winograd_input", reinterpret_cast<void*>(&fusor_rt_winograd_input));
  add("fusor_rt_winograd_input_bf16", reinterpret_cast<void*>(&fusor_rt_winograd_input_bf16));
  if (llvm::Error err = process_dylib.define(llvm::orc::absoluteSymbols(std::move(runtime)))) {
    fail(ErrorCode::DeviceUnavailable, "llvm backend: cannot define the runtime symbols: ", take_message(std::move(err)));
  }
  impl->process = &process_dylib;
  return std::unique_ptr<LlvmJit>(new LlvmJit(std::move(impl)));
}

LlvmJit::LlvmJit(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
LlvmJit::~LlvmJit() = default;

std::string LlvmJit::target_description() const {
  std::string s = impl_->triple + " cpu=" + impl_->cpu + " features=";
  for (size_t i = 0; i < impl_->enabled_features.size(); ++i) {
    if (i) s += ',';
    s += impl_->enabled_features[i];
  }
  return s;
}

namespace {

// Runs the new pass manager's -O3 module pipeline with the host target machine, so the
// loop and SLP vectorizers see the real vector widths and costs.
void optimize_o3(llvm::Module& module, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  tuning.LoopInterleaving = true;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(module, mam);
}

// Functions written without target attributes get the JIT's, so every pass (and the code
// generator, whose subtarget is chosen per function) agrees on the features. With AVX-512
// the vectorizers may use all 512 bits: LLVM's tuning for server x86 prefers 256 (to avoid
// the frequency drop older cores take for zmm), but every contraction already runs zmm
// FMAs, and the loops it vectorizes (epilogues, pointwise, reductions) then run half the
// instructions (Linear+bias+GELU 128x768x3072 on a Xeon: 4.6 -> 4.25 ms).
void set_target_attributes(llvm::Module& module, const std::string& cpu, const std::string& features) {
  const bool avx512 = (features + ",").find("+avx512f,") != std::string::npos;
  for (llvm::Function& f : module) {
    if (f.isDeclaration()) continue;
    if (!f.hasFnAttribute("target-cpu")) f.addFnAttr("target-cpu", cpu);
    if (!f.hasFnAttribute("target-features")) f.addFnAttr("target-features", features);
    if (avx512 && !f.hasFnAttribute("prefer-vector-width")) f.addFnAttr("prefer-vector-width", "512");
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) fail(ErrorCode::Io, "cannot write the LLVM dump '", path, "'");
}

// The dump's assembly comes from a clone: code generation rewrites the IR it runs on, and
// the module handed to the JIT must stay as the optimizer left it.
std::string emit_assembly(const llvm::Module& module, llvm::TargetMachine& tm, std::string* error) {
  std::unique_ptr<llvm::Module> clone = llvm::CloneModule(module);
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_AssemblyFile)) {
    *error = "the target cannot emit assembly";
    return {};
  }
  pm.run(*clone);
  return std::string(buffer.str());
}

}  // namespace

LlvmJit::CompiledFunction LlvmJit::compile(const std::string& llvm_ir_text, const std::string& symbol) {
  return compile(llvm_ir_text, symbol, CompileOptions{});
}

LlvmJit::CompiledFunction LlvmJit::compile(const std::string& llvm_ir_text, const std::string& symbol,
                                           const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Impl& impl = *impl_;

  // A context per module: compiles share nothing but the JIT, so they need no lock here.
  auto context = std::make_unique<llvm::LLVMContext>();
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> module =
      llvm::parseIR(llvm::MemoryBufferRef(llvm_ir_text, symbol + ".ll"), diag, *context);
  if (!module) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("", os, /*ShowColors=*/false);
    compile_failed(symbol, "invalid IR: " + os.str(), llvm_ir_text);
  }
  {
    // The optimizer assumes valid IR and may crash on anything else.
    std::string msg;
    llvm::raw_string_ostream os(msg);
    if (llvm::verifyModule(*module, &os)) compile_failed(symbol, "IR fails verification: " + os.str(), llvm_ir_text);
  }
  module->setTargetTriple(impl.triple);
  module->setDataLayout(impl.jit->getDataLayout());
  set_target_attributes(*module, impl.cpu, impl.feature_string);

  auto tm = impl.jtmb.createTargetMachine();
  if (!tm) compile_failed(symbol, "cannot create the target machine: " + take_message(tm.takeError()), llvm_ir_text);
  optimize_o3(*module, **tm);

  if (!options.dump_dir.empty()) {
    std::string optimized;
    llvm::raw_string_ostream os(optimized);
    module->print(os, nullptr);
    write_file(options.dump_dir + "/" + symbol + ".ll", os.str());
    std::string error;
    std::string assembly = emit_assembly(*module, **tm, &error);
    if (!error.empty()) compile_failed(symbol, error, llvm_ir_text);
    write_file(options.dump_dir + "/" + symbol + ".s", assembly);
  }

  // Code generation to a relocatable object, then linking it (Note [One JITDylib per
  // function]): the object is what the disk store keeps.
  std::string object;
  {
    llvm::SmallString<0> buffer;
    llvm::raw_svector_ostream os(buffer);
    llvm::legacy::PassManager pm;
    if ((*tm)->addPassesToEmitFile(pm, os, nullptr, llvm::CGFT_ObjectFile))
      compile_failed(symbol, "the target cannot emit object files", llvm_ir_text);
    pm.run(*module);
    object.assign(buffer.begin(), buffer.end());
  }
  CompiledFunction fn = load(object, symbol);
  fn.compile_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return fn;
}

namespace {

// Note [Untrusted objects]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// An object handed to load() comes from the persistent store: bytes on disk that passed a
// checksum, which anyone who could write the file could also have recomputed. The JIT's
// linker trusts its input (malformed headers, section or symbol indices end in
// report_fatal_error, an abort, or in reads and writes out of bounds), so before the linker
// sees an object it is parsed here through LLVM's error-returning ELF reader: an x86-64
// ELF relocatable; every section's contents inside the file; every symbol table's entries,
// names and section indices valid; every relocation's symbol inside its table and its
// offset inside its target section; the kernel's symbol defined in an executable section.
// Anything else is a bad entry (CompileFailed: the engine compiles the kernel again and
// overwrites the entry). Code bytes themselves cannot be checked: a store must be private
// (cache/disk_store.h) or authenticated.
std::string object_problem(const std::string& object, const std::string& symbol) {
  using Elf = llvm::object::ELF64LEFile;
  llvm::Expected<Elf> file = Elf::create(llvm::StringRef(object.data(), object.size()));
  if (!file) return "not an ELF object: " + take_message(file.takeError());
  const auto& header = file->getHeader();
  if (header.e_type != llvm::ELF::ET_REL || header.e_machine != llvm::ELF::EM_X86_64)
    return "not an x86-64 relocatable object";
  auto sections = file->sections();
  if (!sections) return "bad section headers: " + take_message(sections.takeError());
  const size_t count = sections->size();
  bool defined = false;
  for (const auto& sec : *sections) {
    if (sec.sh_flags & llvm::ELF::SHF_TLS) return "a thread-local section (kernels have none)";
    if (sec.sh_type != llvm::ELF::SHT_NOBITS) {
      auto contents = file->getSectionContents(sec);
      if (!contents) return "a section outside the file: " + take_message(contents.takeError());
    }
    if (sec.sh_type == llvm::ELF::SHT_SYMTAB) {
      auto symbols = file->symbols(&sec);
      if (!symbols) return "a bad symbol table: " + take_message(symbols.takeError());
      auto strings = file->getStringTableForSymtab(sec);
      if (!strings) return "a bad string table: " + take_message(strings.takeError());
      for (const auto& sym : *symbols) {
        auto name = sym.getName(*strings);
        if (!name) return "a bad symbol name: " + take_message(name.takeError());
        const uint16_t index = sym.st_shndx;
        if (index != llvm::ELF::SHN_UNDEF && index < llvm::ELF::SHN_LORESERVE && index >= count)
          return "symbol '" + name->str() + "' in a section that does not exist";
        if (sym.getType() == llvm::ELF::STT_TLS) return "a thread-local symbol (kernels have none)";
        if (*name == symbol && index != llvm::ELF::SHN_UNDEF && index < count &&
            ((*sections)[index].sh_flags & llvm::ELF::SHF_EXECINSTR) && sym.st_value < (*sections)[index].sh_size)
          defined = true;
      }
    }
    if (sec.sh_type == llvm::ELF::SHT_RELA || sec.sh_type == llvm::ELF::SHT_REL) {
      if (sec.sh_link >= count || (*sections)[sec.sh_link].sh_type != llvm::ELF::SHT_SYMTAB)
        return "relocations without a symbol table";
      if (sec.sh_info >= count) return "relocations of a section that does not exist";
      auto symbols = file->symbols(&(*sections)[sec.sh_link]);
      if (!symbols) return "a bad symbol table: " + take_message(symbols.takeError());
      const uint64_t target = (*sections)[sec.sh_info].sh_size;
      auto check = [&](uint64_t offset, uint32_t sym, uint32_t type) -> std::string {
        if (sym >= symbols->size()) return "a relocation against a symbol that does not exist";
        // The types the linker implements (it aborts on any other).
        switch (type) {
          case llvm::ELF::R_X86_64_NONE: case llvm::ELF::R_X86_64_64: case llvm::ELF::R_X86_64_PC32:
          case llvm::ELF::R_X86_64_32: case llvm::ELF::R_X86_64_32S: case llvm::ELF::R_X86_64_PC64:
          case llvm::ELF::R_X86_64_GOTPCREL: case llvm::ELF::R_X86_64_GOTPCRELX:
          case llvm::ELF::R_X86_64_REX_GOTPCRELX: case llvm::ELF::R_X86_64_PLT32: case llvm::ELF::R_X86_64_GOTOFF64:
          case llvm::ELF::R_X86_64_GOTPC32: case llvm::ELF::R_X86_64_GOTPC64: case llvm::ELF::R_X86_64_GOT64:
            break;
          default:
            return "a relocation of type " + std::to_string(type) + " the linker does not implement";
        }
        const uint64_t width = type == llvm::ELF::R_X86_64_64 || type == llvm::ELF::R_X86_64_PC64 ? 8 : 4;
        if (offset >= target || target - offset < width) return "a relocation outside its section";
        return "";
      };
      if (sec.sh_type == llvm::ELF::SHT_RELA) {
        auto relas = file->relas(sec);
        if (!relas) return "bad relocations: " + take_message(relas.takeError());
        for (const auto& r : *relas)
          if (std::string why = check(r.r_offset, r.getSymbol(false), r.getType(false)); !why.empty()) return why;
      } else {
        auto rels = file->rels(sec);
        if (!rels) return "bad relocations: " + take_message(rels.takeError());
        for (const auto& r : *rels)
          if (std::string why = check(r.r_offset, r.getSymbol(false), r.getType(false)); !why.empty()) return why;
      }
    }
  }
  if (!defined) return "the object does not define '" + symbol + "' in a code section";
  return "";
}

}  // namespace

LlvmJit::CompiledFunction LlvmJit::load(const std::string& object, const std::string& symbol) {
  const auto start = std::chrono::steady_clock::now();
  Impl& impl = *impl_;
  // Note [Untrusted objects]: checked before the linker sees it.
  if (std::string why = object_problem(object, symbol); !why.empty()) compile_failed(symbol, "a malformed object: " + why, "");
  llvm::orc::ExecutionSession& es = impl.jit->getExecutionSession();
  llvm::orc::JITDylib& dylib = es.createBareJITDylib("<" + symbol + "#" + std::to_string(impl.next_dylib++) + ">");
  dylib.addToLinkOrder(*impl.process);
  auto tracker = std::make_unique<CompiledFunction::Tracker>(CompiledFunction::Tracker{impl_, &dylib});
  auto drop = [&tracker] { llvm::consumeError(tracker->remove()); };
  if (llvm::Error err = impl.jit->addObjectFile(
          dylib, llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), symbol + ".o"))) {
    drop();
    compile_failed(symbol, "cannot add the object: " + take_message(std::move(err)), "");
  }
  t_session_errors.clear();
  auto address = impl.jit->lookup(dylib, symbol);  // linking happens here
  if (!address) {
    std::string msg = take_message(address.takeError());
    if (!t_session_errors.empty()) msg += "\n" + t_session_errors;
    t_session_errors.clear();
    drop();
    compile_failed(symbol, msg, "");
  }
  CompiledFunction fn;
  fn.tracker_ = std::move(tracker);
  fn.address_ = address->toPtr<void*>();
  fn.symbol_ = symbol;
  fn.object_ = object;
  fn.compile_us_ = std::chrono::duration_cast<std::chrono::microseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  return fn;
}

std::string LlvmJit::llvm_version() { return LLVM_VERSION_STRING; }

LlvmJit::CompiledFunction::CompiledFunction() = default;
LlvmJit::CompiledFunction::CompiledFunction(CompiledFunction&& other) noexcept
    : tracker_(std::move(other.tracker_)),
      address_(std::exchange(other.address_, nullptr)),
      symbol_(std::move(other.symbol_)),
      object_(std::move(other.object_)),
      compile_us_(other.compile_us_) {}

LlvmJit::CompiledFunction& LlvmJit::CompiledFunction::operator=(CompiledFunction&& other) noexcept {
  if (this != &other) {
    if (tracker_) llvm::consumeError(tracker_->remove());
    tracker_ = std::move(other.tracker_);
    address_ = std::exchange(other.address_, nullptr);
    symbol_ = std::move(other.symbol_);
    object_ = std::move(other.object_);
    compile_us_ = other.compile_us_;
  }
  return *this;
}

LlvmJit::CompiledFunction::~CompiledFunction() {
  if (tracker_) llvm::consumeError(tracker_->remove());
}

void LlvmJit::CompiledFunction::release() {
  if (!tracker_) return;
  std::unique_ptr<Tracker> t = std::move(tracker_);
  address_ = nullptr;
  if (llvm::Error err = t->remove()) {
    fail(ErrorCode::Internal, "llvm backend: cannot remove the code of '", symbol_, "': ",
         take_message(std::move(err)));
  }
}

}  // namespace fusor
