// The generated kernels' logic, checked where there is no GPU: every case of cuda_cases.h
// is rendered, turned into host C++ (the preamble's two cvt instructions and mma.sync
// rewritten to the stand-ins of host_emulation.h, dynamic shared memory mapped to a host
// buffer), compiled by the build's C++ compiler into a shared object, run under
// host_emulation.h (threads, barriers, shuffles) on seeded random buffers, and compared with
// the spec interpreter with the case's tolerances. This checks indexing, tiling, guards,
// reductions and the online softmax; the GPU suite (execution_test.cpp) checks the real
// thing. Skips with a reason when no host compiler is found.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "codegen/cuda/render_cuda.h"
#include "codegen/cuda/render_expr.h"
#include "tests/codegen/cuda/cuda_cases.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;

namespace {

// The C++ compiler this build used (from its CMakeCache.txt), or "" when it is not there.
std::string host_compiler() {
  std::ifstream cache(std::string(FUSOR_BINARY_DIR) + "/CMakeCache.txt");
  const std::string key = "CMAKE_CXX_COMPILER:FILEPATH=";
  for (std::string line; std::getline(cache, line);)
    if (line.rfind(key, 0) == 0) {
      std::string path = line.substr(key.size());
      return std::ifstream(path).good() ? path : "";
    }
  return "";
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += to.size()) s.replace(p, from.size(), to);
}

// The rendered kernel as host C++ with an entry point fusor_emulate(void** buffers).
std::string host_source(const KernelSpec& spec, const CudaSource& src) {
  std::string s = src.code;
  replace_all(s, "asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));", "f = fusor_emu::f16_to_f32(h);");
  replace_all(s, "asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));", "h = fusor_emu::f32_to_f16(f);");
  replace_all(s, "extern __shared__ float smem[];", "float* smem = fusor_emu::dynamic_shared;");
  if (size_t m = s.find("  asm volatile(\"mma.sync"); m != std::string::npos) {
    const size_t e = s.find(");\n}", m);
    REQUIRE(e != std::string::npos);
    const bool bf16 = s.find(".bf16.bf16", m) < e;
    s.replace(m, e + 2 - m, std::string("  fusor_emu::mma_16816(c, a, b, ") + (bf16 ? "true" : "false") + ");");
  }
  REQUIRE_MESSAGE(s.find("asm") == std::string::npos, "inline PTX the emulation has no stand-in for:\n", s);
  std::string call = src.symbol + "(";
  for (size_t i = 0; i < spec.buffers.size(); ++i)
    call += std::string(i ? ", " : "") + "(" + (spec.buffers[i].output ? "" : "const ") +
            cuda_src::storage_type(spec.buffers[i].dtype) + "*)buffers[" + std::to_string(i) + "]";
  const CudaLaunchConfig& l = src.launch;
  return "#include \"tests/codegen/cuda/host_emulation.h\"\n" + s +
         "extern \"C\" void fusor_emulate(void** buffers) {\n  fusor_emu::launch(" + std::to_string(l.grid[0]) + ", " +
         std::to_string(l.grid[1]) + ", " + std::to_string(l.grid[2]) + ", " + std::to_string(l.block[0]) + ", " +
         std::to_string(l.shared_bytes) + ", [&] { " + call + "); });\n}\n";
}

// Compiles, runs and checks every case of `kind` whose variant does (tensor_cores) or does
// not contain "mma"; skips with a reason without a compiler.
void check_kind(KernelKind kind, bool tensor_cores = false) {
  const std::string cxx = host_compiler();
  if (cxx.empty()) {
    MESSAGE("skipped (no host C++ compiler recorded in " << FUSOR_BINARY_DIR << "/CMakeCache.txt)");
    return;
  }
  if (!std::ifstream(std::string(FUSOR_SOURCE_DIR) + "/tests/codegen/cuda/host_emulation.h")) {
    MESSAGE("skipped (the sources are not at " << FUSOR_SOURCE_DIR << ")");
    return;
  }
  test::TempDir dir("cuda-emulation");
  int checked = 0;
  for (const test::CudaCase& c : test::cuda_cases()) {
    if (c.kind != kind) continue;
    INFO("case: " << c.name);
    KernelSpec spec = test::lower_one(c.text, c.dims, c.kind);
    CudaSource src = render_cuda(spec, "fusor_emulated");
    if ((src.variant.find("mma") != std::string::npos) != tensor_cores) continue;
    INFO("variant: " << src.variant);
    const std::string cpp = dir.file("k" + std::to_string(checked) + ".cpp"), so = dir.file("k" + std::to_string(checked) + ".so"),
                      log = dir.file("k" + std::to_string(checked) + ".log");
    std::ofstream(cpp) << host_source(spec, src);
    const std::string cmd = cxx + " -std=c++20 -O1 -w -fPIC -shared -pthread -I" + FUSOR_SOURCE_DIR + " -o " + so + " " +
                            cpp + " > " + log + " 2>&1";
    if (std::system(cmd.c_str()) != 0) {
      std::ifstream l(log);
      FAIL("the host compiler rejected the emulated kernel:\n" << std::string(std::istreambuf_iterator<char>(l), {}));
    }
    std::unique_ptr<void, int (*)(void*)> lib(dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL), dlclose);
    REQUIRE_MESSAGE(lib != nullptr, std::string(dlerror()));
    auto run = reinterpret_cast<void (*)(void**)>(dlsym(lib.get(), "fusor_emulate"));
    REQUIRE_MESSAGE(bool(run), "no fusor_emulate in ", so);
    std::vector<Tensor> in = test::random_buffers(spec, 1), got = in, want = in;
    std::vector<void*> pointers;
    for (size_t i = 0; i < got.size(); ++i) {
      if (spec.buffers[i].output) {  // NaN bytes: a missed element shows
        got[i] = Tensor::empty(spec.buffers[i].dtype, Shape{spec.buffers[i].elements});
        std::memset(got[i].raw(), 0xff, got[i].nbytes());
      }
      pointers.push_back(got[i].raw());
    }
    run(pointers.data());
    test::interpret(spec, want);
    for (size_t i = 0; i < spec.buffers.size(); ++i)
      if (spec.buffers[i].output) FUSOR_CHECK_CLOSE(got[i], want[i], c.rtol, c.atol);
    ++checked;
  }
  CHECK(checked > 0);
}

}  // namespace

TEST_SUITE("cuda/emulation") {
  TEST_CASE("pointwise kernels compute their specs under host emulation") { check_kind(KernelKind::Pointwise); }
  TEST_CASE("row reduction kernels compute their specs under host emulation") { check_kind(KernelKind::RowReduction); }
  TEST_CASE("SIMT and direct contraction kernels compute their specs under host emulation") {
    check_kind(KernelKind::Contraction);
  }
  TEST_CASE("tensor-core GEMM kernels compute their specs under host emulation") {
    check_kind(KernelKind::Contraction, true);
  }
  TEST_CASE("attention kernels compute their specs under host emulation") { check_kind(KernelKind::Attention); }
}
