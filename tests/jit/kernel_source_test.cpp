// The kernel source (jit/kernel_source.h, Note [Kernel source]) on its own, with a fake host
// JIT backend and an in-memory store, so every path is seen without a compiler: memory, then
// the store, then the compiler (and saving); a stored payload the backend refuses is warned
// about and compiled again; a failed compile is not cached; a backend that cannot load never
// touches the store; compiles on a background builder's thread count as background ones.
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "codegen/compiled_kernel.h"
#include "ir/error.h"
#include "jit/kernel_source.h"

using namespace fusor;

namespace {

// Compiles any spec whose `tasks` is not kFails into a kernel whose object names it; loads
// any object but one starting with "bad".
class FakeBackend final : public JitBackend {
 public:
  static constexpr int64_t kFails = 99;
  explicit FakeBackend(bool loads) : loads_(loads) {}
  std::string_view name() const override { return "fake"; }
  bool supports(const KernelSpec&, std::string*) const override { return true; }
  std::shared_ptr<const CompiledKernel> compile(const KernelSpec& spec) override {
    compiles.fetch_add(1);
    if (spec.tasks == kFails) fail(ErrorCode::CompileFailed, "the fake compiler rejects tasks = ", kFails);
    std::string object = "object ";
    object += std::to_string(spec.tasks);
    return kernel(spec, std::move(object), 1500);
  }
  bool can_load() const override { return loads_; }
  std::shared_ptr<const CompiledKernel> load(const KernelSpec& spec, const std::string& object) override {
    loads.fetch_add(1);
    if (object.rfind("bad", 0) == 0) fail(ErrorCode::CompileFailed, "the fake linker refuses '", object, "'");
    return kernel(spec, object, 250);
  }
  std::string target_description() const override { return "fake-target"; }
  std::string compiler_version() const override { return "fake-1"; }

  std::atomic<int> compiles{0}, loads{0};

 private:
  static std::shared_ptr<const CompiledKernel> kernel(const KernelSpec& spec, std::string object, int64_t us) {
    auto k = std::make_shared<CompiledKernel>();
    k->spec = spec;
    k->backend = "fake";
    k->object = std::move(object);
    k->code_bytes = int64_t(k->object.size());
    k->compile_us = us;
    return k;
  }
  bool loads_;
};

// A store in memory.
class MemoryStore final : public KernelStore {
 public:
  std::optional<std::vector<uint8_t>> get(std::string_view key) override {
    std::lock_guard<std::mutex> lk(mu_);
    ++gets;
    auto it = entries.find(std::string(key));
    if (it == entries.end()) return std::nullopt;
    return std::vector<uint8_t>(it->second.begin(), it->second.end());
  }
  bool put(std::string_view key, std::span<const uint8_t> payload) override {
    std::lock_guard<std::mutex> lk(mu_);
    ++puts;
    entries[std::string(key)] = std::string(payload.begin(), payload.end());
    return true;
  }
  StoreStats stats() const override {
    StoreStats s;
    s.location = "memory";
    s.entries = entries.size();
    return s;
  }

  std::map<std::string, std::string> entries;
  int gets = 0, puts = 0;

 private:
  std::mutex mu_;
};

KernelSpec spec_of(int64_t tasks) {
  KernelSpec s;
  s.name = "fake_kernel";  // not part of the key
  s.tasks = tasks;
  return s;
}

std::string key_of(const FakeBackend& be, const KernelSpec& spec) {
  return KernelKey{spec, std::string(be.name()), be.target_description(), be.compiler_version()}.serialize();
}

}  // namespace

TEST_SUITE("jit/kernel_source") {
  TEST_CASE("a kernel source compiles a spec once, keeps it in memory and saves it to the store") {
    FakeBackend be(true);
    MemoryStore store;
    HostKernelSource source({0, &store, nullptr});
    std::shared_ptr<const CompiledKernel> a = source.get(be, spec_of(3));
    std::shared_ptr<const CompiledKernel> b = source.get(be, spec_of(3));
    CHECK(a == b);
    CHECK(be.compiles.load() == 1);
    CHECK(be.loads.load() == 0);
    CHECK(store.puts == 1);
    CHECK(store.entries.at(key_of(be, spec_of(3))) == "object 3");
    source.get(be, spec_of(4));  // another spec: another compile
    CHECK(be.compiles.load() == 2);
    EngineStats s;
    source.add_stats(s);
    CHECK(s.kernels_compiled == 2);
    CHECK(s.kernels_compiled_background == 0);
    CHECK(s.kernel_hits == 1);
    CHECK(s.disk_writes == 2);
    CHECK(s.disk_hits == 0);
    CHECK(s.compile_ms_by_backend.at("fake") == doctest::Approx(3.0));
    CHECK(s.compile_ms == doctest::Approx(3.0));
    CHECK(s.load_ms == 0);
  }

  TEST_CASE("a kernel source loads a stored kernel instead of compiling it, and compiles again what the backend refuses") {
    FakeBackend be(true);
    MemoryStore store;
    HostKernelSource({0, &store, nullptr}).get(be, spec_of(5));
    store.entries[key_of(be, spec_of(6))] = "bad bytes";
    std::string warnings;
    HostKernelSource source({0, &store, [&](const std::string& w) { warnings += w + "\n"; }});
    be.compiles = 0;

    CHECK(source.get(be, spec_of(5))->object == "object 5");  // loaded
    CHECK(be.compiles.load() == 0);
    CHECK(warnings.empty());

    CHECK(source.get(be, spec_of(6))->object == "object 6");  // refused, then compiled and saved over
    CHECK(be.compiles.load() == 1);
    CHECK(be.loads.load() == 2);
    CHECK(warnings.find("a fake kernel from the persistent store in memory cannot be loaded") != std::string::npos);
    CHECK(warnings.find("bad bytes") != std::string::npos);
    CHECK(store.entries.at(key_of(be, spec_of(6))) == "object 6");

    EngineStats s;
    source.add_stats(s);
    CHECK(s.disk_hits == 1);
    CHECK(s.kernels_compiled == 1);
    CHECK(s.load_ms == doctest::Approx(0.25));
  }

  TEST_CASE("a kernel source caches no failed compile, and a backend that cannot load never touches the store") {
    FakeBackend be(false);
    MemoryStore store;
    HostKernelSource source({0, &store, nullptr});
    std::string message;
    try {
      source.get(be, spec_of(FakeBackend::kFails));
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK(message.find("rejects tasks = 99") != std::string::npos);
    CHECK_THROWS_AS(source.get(be, spec_of(FakeBackend::kFails)), Error);
    CHECK(be.compiles.load() == 2);  // asked again, compiled again
    source.get(be, spec_of(7));
    CHECK(store.gets == 0);
    CHECK(store.puts == 0);
    EngineStats s;
    source.add_stats(s);
    CHECK(s.kernels_compiled == 1);  // the successful one
    CHECK(s.disk_writes == 0);
  }

  TEST_CASE("kernels compiled on a thread marked as a background builder count as background compiles") {
    FakeBackend be(false);
    HostKernelSource source({0, nullptr, nullptr});
    source.get(be, spec_of(8));
    std::thread builder([&] {
      count_compiles_as_background();
      source.get(be, spec_of(9));
      source.get(be, spec_of(8));  // in memory: no compile
    });
    builder.join();
    EngineStats s;
    source.add_stats(s);
    CHECK(s.kernels_compiled == 2);
    CHECK(s.kernels_compiled_background == 1);
    CHECK(s.kernel_hits == 1);
  }
}
