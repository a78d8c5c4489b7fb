// LlvmJit: compiles hand-written LLVM IR for the host, runs it, frees it; checks the target
// carries the host's features and that failures come back as fusor::Error.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <random>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "codegen/llvm/llvm_jit.h"
#include "ir/error.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using fusor::test::error_of;

namespace {

using AddFn = void (*)(const float*, const float*, float*, int64_t);

// void <name>(float* a, float* b, float* c, i64 n): c[i] = a[i] + b[i].
std::string add_ir(const std::string& name) {
  return "define void @" + name + R"((ptr %a, ptr %b, ptr %c, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  %pc = getelementptr inbounds float, ptr %c, i64 %i
  %x = load float, ptr %pa, align 4
  %y = load float, ptr %pb, align 4
  %s = fadd float %x, %y
  store float %s, ptr %pc, align 4
  %next = add nuw nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
)";
}

// The JIT, or nullptr after saying why the test is skipped (a build without LLVM).
std::unique_ptr<LlvmJit> jit_or_skip() {
  try {
    return LlvmJit::create();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    MESSAGE("skipped: " << std::string(e.what()));
    return nullptr;
  }
}

// Whether /proc/cpuinfo lists the flag (e.g. "avx2", "avx512f").
bool host_has(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w;
    while (words >> w)
      if (w == flag) return true;
    return false;
  }
  return false;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs fn on n elements; returns the number of wrong outputs and checks the guard after them.
int64_t run_add(AddFn fn, int64_t n) {
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  std::vector<float> c(static_cast<size_t>(n) + 1, -7.0f);
  for (int64_t i = 0; i < n; ++i) {
    a[size_t(i)] = 0.5f * float(i) - 3.0f;
    b[size_t(i)] = 1.0f / float(i + 1);
  }
  fn(a.data(), b.data(), c.data(), n);
  int64_t wrong = c[size_t(n)] == -7.0f ? 0 : 1;  // nothing written past the end
  for (int64_t i = 0; i < n; ++i) wrong += c[size_t(i)] != a[size_t(i)] + b[size_t(i)];
  return wrong;
}

}  // namespace

TEST_SUITE("llvm/jit") {
  TEST_CASE("compiled add matches a scalar loop for sizes around the vector width") {
    auto jit = jit_or_skip();
    if (!jit) return;
    LlvmJit::CompiledFunction fn = jit->compile(add_ir("add"), "add");
    REQUIRE(fn);
    CHECK(fn.symbol() == "add");
    CHECK(fn.compile_us() > 0);
    MESSAGE("compile of add: " << fn.compile_us() << " us");
    for (int64_t n : {1, 15, 16, 17, 1000}) {
      CAPTURE(n);
      CHECK(run_add(fn.as<AddFn>(), n) == 0);
    }
  }

  TEST_CASE("the dumped IR and assembly are vectorized on AVX2 and AVX-512 hosts") {
    auto jit = jit_or_skip();
    if (!jit) return;
    if (!host_has("avx2") && !host_has("avx512f")) {
      MESSAGE("skipped: the host has neither avx2 nor avx512f");
      return;
    }
    fusor::test::TempDir dir("llvm-dump");
    LlvmJit::CompileOptions options;
    options.dump_dir = dir.path().string();
    LlvmJit::CompiledFunction fn = jit->compile(add_ir("add_dump"), "add_dump", options);
    CHECK(run_add(fn.as<AddFn>(), 1000) == 0);
    const std::string ll = read_file(dir.file("add_dump.ll"));
    const std::string s = read_file(dir.file("add_dump.s"));
    INFO("optimized IR:\n" << ll << "\nassembly:\n" << s);
    CHECK(ll.find("x float>") != std::string::npos);  // <8 x float> or <16 x float>
    CHECK((s.find("%ymm") != std::string::npos || s.find("%zmm") != std::string::npos));
  }

  TEST_CASE("target_description lists the host features") {
    auto jit = jit_or_skip();
    if (!jit) return;
    const std::string d = jit->target_description();
    INFO(d);
    MESSAGE("target: " << d);
    CHECK(d.find("x86_64") != std::string::npos);
    CHECK(d.find("cpu=") != std::string::npos);
    if (host_has("avx2")) CHECK(d.find("+avx2,") != std::string::npos);
    if (host_has("avx512f")) CHECK(d.find("+avx512f") != std::string::npos);
    if (host_has("avx512bw")) CHECK(d.find("+avx512bw") != std::string::npos);
  }

  TEST_CASE("malformed IR fails with CompileFailed and LLVM's message") {
    auto jit = jit_or_skip();
    if (!jit) return;
    std::string msg;
    CHECK(error_of([&] { jit->compile("define void @broken(ptr %a {\n  ret void\n}\n", "broken"); }, &msg) ==
          ErrorCode::CompileFailed);
    INFO(msg);
    CHECK(msg.find("invalid IR") != std::string::npos);
    CHECK(msg.find("error:") != std::string::npos);              // LLVM's diagnostic
    CHECK(msg.find("define void @broken") != std::string::npos);  // the IR text
  }

  TEST_CASE("IR that parses but fails verification gives CompileFailed") {
    auto jit = jit_or_skip();
    if (!jit) return;
    std::string msg;
    CHECK(error_of([&] { jit->compile("define void @loop() {\nentry:\n  br label %entry\n}\n", "loop"); },
                   &msg) == ErrorCode::CompileFailed);
    INFO(msg);
    CHECK(msg.find("verification") != std::string::npos);
    CHECK(msg.find("Entry block") != std::string::npos);
  }

  TEST_CASE("a symbol the module does not define gives CompileFailed") {
    auto jit = jit_or_skip();
    if (!jit) return;
    std::string msg;
    CHECK(error_of([&] { jit->compile(add_ir("add_present"), "add_absent"); }, &msg) ==
          ErrorCode::CompileFailed);
    INFO(msg);
    CHECK(msg.find("add_absent") != std::string::npos);
    // Process symbols are there for the code to call, not to be looked up as the result.
    CHECK(error_of([&] { jit->compile(add_ir("add_present"), "memcpy"); }) == ErrorCode::CompileFailed);
    // The failed modules were removed: their symbol is free again.
    CHECK(run_add(jit->compile(add_ir("add_present"), "add_present").as<AddFn>(), 17) == 0);
  }

  TEST_CASE("compiled code calls into libm") {
    auto jit = jit_or_skip();
    if (!jit) return;
    const std::string ir =
        "declare float @expf(float)\n"
        "define float @call_exp(float %x) {\n"
        "  %r = call float @expf(float %x)\n"
        "  ret float %r\n"
        "}\n";
    LlvmJit::CompiledFunction fn = jit->compile(ir, "call_exp");
    CHECK(fn.as<float (*)(float)>()(1.0f) == doctest::Approx(2.718281828).epsilon(1e-6));
  }

  TEST_CASE("equal symbols live side by side and release independently") {
    auto jit = jit_or_skip();
    if (!jit) return;
    LlvmJit::CompiledFunction first = jit->compile(add_ir("add_again"), "add_again");
    CHECK(run_add(first.as<AddFn>(), 16) == 0);
    // Each function has its own JITDylib: a second definition of the symbol is no clash.
    LlvmJit::CompiledFunction second = jit->compile(add_ir("add_again"), "add_again");
    CHECK(second.address() != first.address());
    first.release();
    CHECK(!first);
    CHECK(first.address() == nullptr);
    first.release();  // twice is a no-op
    CHECK(run_add(second.as<AddFn>(), 1000) == 0);  // untouched by the other's release
    { LlvmJit::CompiledFunction moved = std::move(second); }  // destruction releases too
    CHECK(run_add(jit->compile(add_ir("add_again"), "add_again").as<AddFn>(), 15) == 0);
  }

  TEST_CASE("a compiled object loads again without compiling") {
    auto jit = jit_or_skip();
    if (!jit) return;
    LlvmJit::CompiledFunction fn = jit->compile(add_ir("add_obj"), "add_obj");
    REQUIRE(!fn.object().empty());
    LlvmJit::CompiledFunction a = jit->load(fn.object(), "add_obj");
    LlvmJit::CompiledFunction b = jit->load(fn.object(), "add_obj");
    fn.release();
    CHECK(run_add(a.as<AddFn>(), 31) == 0);
    CHECK(run_add(b.as<AddFn>(), 64) == 0);
    CHECK(a.object() == b.object());
    // Another process's JIT (a fresh one) links the same bytes.
    auto other = LlvmJit::create();
    CHECK(run_add(other->load(a.object(), "add_obj").as<AddFn>(), 7) == 0);
    std::string msg;
    CHECK(error_of([&] { jit->load("not an object file", "add_obj"); }, &msg) == ErrorCode::CompileFailed);
    CHECK(error_of([&] { jit->load(a.object(), "no_such_symbol"); }, &msg) == ErrorCode::CompileFailed);
    CHECK(msg.find("no_such_symbol") != std::string::npos);
    std::string truncated = a.object().substr(0, a.object().size() / 2);
    CHECK(error_of([&] { jit->load(truncated, "add_obj"); }, &msg) == ErrorCode::CompileFailed);
  }

  TEST_CASE("an object with corrupted headers, tables or relocations is refused, never a crash") {
    // Note [Untrusted objects]: a store entry whose checksum was recomputed after its bytes
    // changed reaches load(). Each mutation is loaded in a child process, so a crash (the
    // linker's abort, a wild read) fails this test instead of ending it. Code bytes may
    // change without notice (they are not checked), but linking must not crash.
    auto jit = jit_or_skip();
    if (!jit) return;
    const std::string ir =
        "declare float @expf(float)\n"
        "define float @call_exp(float %x) {\n"
        "  %a = call float @expf(float %x)\n"
        "  %b = fadd float %a, 0x3FF0000000000000\n"
        "  ret float %b\n"
        "}\n";
    const std::string object = jit->compile(ir, "call_exp").object();
    REQUIRE(object.size() > 64);
    uint64_t shoff = 0;
    std::memcpy(&shoff, object.data() + 0x28, 8);  // e_shoff
    std::mt19937_64 rng(12345);
    int crashes = 0, refused = 0, loaded = 0;
    const int trials = getenv("FUSOR_OBJECT_TRIALS") ? atoi(getenv("FUSOR_OBJECT_TRIALS")) : 300;
    for (int trial = 0; trial < trials; ++trial) {
      std::string bad = object;
      const int edits = 1 + int(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        // Headers and section headers most of the time, anywhere otherwise.
        size_t at = rng() % bad.size();
        const int where = int(rng() % 4);
        if (where == 0) at = rng() % 64;
        if (where == 1 && shoff < bad.size()) at = shoff + rng() % (bad.size() - shoff);
        const uint8_t values[] = {0x00, 0xFF, 0x7F, 0x80, uint8_t(rng())};
        bad[at] = char(values[rng() % 5]);
      }
      pid_t pid = fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        int status = 3;
        try {
          jit->load(bad, "call_exp");
          status = 0;
        } catch (const Error& err) {
          status = err.code() == ErrorCode::CompileFailed ? 1 : 2;
        } catch (...) {
          status = 2;
        }
        _exit(status);
      }
      int status = 0;
      REQUIRE(waitpid(pid, &status, 0) == pid);
      if (!WIFEXITED(status) || WEXITSTATUS(status) >= 2) {
        ++crashes;
        INFO("trial " << trial << ": " << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                               : "exit " + std::to_string(WEXITSTATUS(status))));
        CHECK(false);
      } else {
        (WEXITSTATUS(status) == 0 ? loaded : refused)++;
      }
    }
    MESSAGE(refused << " refused, " << loaded << " linked, " << crashes << " crashed");
    CHECK(refused > 0);
  }

  TEST_CASE("a function outlives the JIT that made it") {
    auto jit = jit_or_skip();
    if (!jit) return;
    LlvmJit::CompiledFunction fn = jit->compile(add_ir("add_orphan"), "add_orphan");
    jit.reset();
    CHECK(run_add(fn.as<AddFn>(), 33) == 0);
  }

  TEST_CASE("eight threads compile and run at once") {
    auto jit = jit_or_skip();
    if (!jit) return;
    constexpr int kThreads = 8;
    std::vector<std::string> errors(kThreads);
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        try {
          for (int round = 0; round < 3; ++round) {
            const std::string name = "add_t" + std::to_string(t);
            LlvmJit::CompiledFunction fn = jit->compile(add_ir(name), name);
            wrong += int(run_add(fn.as<AddFn>(), 1000 + t));
          }  // released each round, so the same name is compiled again
        } catch (const std::exception& e) {
          errors[size_t(t)] = e.what();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      CAPTURE(t);
      CHECK(errors[size_t(t)] == "");
    }
    CHECK(wrong == 0);
  }
}
