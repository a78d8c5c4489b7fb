// LlvmJit in a build without LLVM (FUSOR_WITH_LLVM=OFF): everything links, create() says
// why the backend is unavailable, and no handle can ever own code.
#include "codegen/llvm/llvm_jit.h"

#include <utility>

#include "ir/error.h"

#ifndef FUSOR_LLVM_UNAVAILABLE_REASON
#define FUSOR_LLVM_UNAVAILABLE_REASON "fusor was built without LLVM"
#endif

namespace fusor {

struct LlvmJit::Impl {};
struct LlvmJit::CompiledFunction::Tracker {};

std::unique_ptr<LlvmJit> LlvmJit::create() {
  fail(ErrorCode::DeviceUnavailable, "llvm backend: not built in (", FUSOR_LLVM_UNAVAILABLE_REASON, ")");
}

LlvmJit::LlvmJit(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
LlvmJit::~LlvmJit() = default;

LlvmJit::CompiledFunction LlvmJit::compile(const std::string&, const std::string&, const CompileOptions&) {
  fail(ErrorCode::DeviceUnavailable, "llvm backend: not built in");
}
LlvmJit::CompiledFunction LlvmJit::compile(const std::string& ir, const std::string& symbol) {
  return compile(ir, symbol, CompileOptions{});
}
LlvmJit::CompiledFunction LlvmJit::load(const std::string&, const std::string&) {
  fail(ErrorCode::DeviceUnavailable, "llvm backend: not built in");
}
std::string LlvmJit::llvm_version() { return "none"; }
std::string LlvmJit::target_description() const { return "llvm backend not built in"; }

LlvmJit::CompiledFunction::CompiledFunction() = default;
LlvmJit::CompiledFunction::CompiledFunction(CompiledFunction&& other) noexcept
    : tracker_(std::move(other.tracker_)),
      address_(std::exchange(other.address_, nullptr)),
      symbol_(std::move(other.symbol_)),
      object_(std::move(other.object_)),
      compile_us_(other.compile_us_) {}
LlvmJit::CompiledFunction& LlvmJit::CompiledFunction::operator=(CompiledFunction&& other) noexcept {
  tracker_ = std::move(other.tracker_);
  address_ = std::exchange(other.address_, nullptr);
  symbol_ = std::move(other.symbol_);
  object_ = std::move(other.object_);
  compile_us_ = other.compile_us_;
  return *this;
}
LlvmJit::CompiledFunction::~CompiledFunction() = default;
void LlvmJit::CompiledFunction::release() {
  tracker_.reset();
  address_ = nullptr;
}

}  // namespace fusor
