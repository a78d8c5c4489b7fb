// Every generated kernel compiles: each case of cuda_cases.h is lowered, rendered and
// compiled by NVRTC for sm_90 (no GPU needed, so CI checks every spec kind), and the
// variant the renderer picked is the one the case is about, with no NVRTC warning. Also: NVRTC's rejection
// surfaces as Error(CompileFailed) carrying the source and the log. Skips with a reason
// where NVRTC is missing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "codegen/cuda/cuda_backend.h"
#include "tests/codegen/cuda/cuda_cases.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;

TEST_SUITE("cuda/nvrtc") {
  TEST_CASE("every case of every kernel kind compiles for sm_90") {
    CudaCompiler* nvrtc = test::nvrtc_or_skip();
    if (!nvrtc) return;
    MESSAGE("NVRTC " << nvrtc->nvrtc_version() << " from " << nvrtc->nvrtc_path());
    std::map<std::string, std::pair<int, int64_t>> per_kind;  // kind -> (kernels, total us)
    std::map<std::string, int> variants;
    for (const test::CudaCase& c : test::cuda_cases()) {
      INFO("case: " << c.name);
      KernelSpec spec = test::lower_one(c.text, c.dims, c.kind);
      CudaBinary b = nvrtc->compile(spec, "sm_90");
      CHECK(b.arch == "sm_90");
      CHECK(b.cubin.size() > 256);
      // An ELF image (cubin), not PTX text.
      CHECK(b.cubin.compare(0, 4, "\x7f" "ELF") == 0);
      CHECK_MESSAGE(b.log.empty(), "NVRTC warned:\n", b.log);  // generated code is warning-free
      auto& k = per_kind[kernel_kind_name(spec.kind)];
      k.first++;
      k.second += b.compile_us;
      variants[b.source.variant.substr(0, b.source.variant.find_first_of("0123456789"))]++;
    }
    for (const auto& [kind, v] : per_kind)
      MESSAGE(kind << ": " << v.first << " kernels, NVRTC " << v.second / v.first / 1000 << " ms each on average");
    // The sweep reaches every kernel the renderer has.
    for (const char* v : {"pointwise vec", "pointwise scalar", "row reduction warp/row registers",
                          "row reduction block/row registers", "row reduction block/row recompute", "gemm simt f",
                          "gemm mma.sync f", "gemm mma.sync bf", "conv direct", "attention flash f"})
      CHECK_MESSAGE(variants.count(v) == 1, "no case renders the variant '", v, "'");
  }

  TEST_CASE("a source NVRTC rejects throws CompileFailed with the log and the source") {
    CudaCompiler* nvrtc = test::nvrtc_or_skip();
    if (!nvrtc) return;
    CudaSource src;
    src.symbol = "fusor_broken";
    src.code = "extern \"C\" __global__ void fusor_broken(float* b0) { b0[0] = undeclared_name; }\n";
    std::string msg;
    CHECK(test::error_of([&] { nvrtc->compile(src, "sm_90"); }, &msg) == ErrorCode::CompileFailed);
    CHECK(msg.find("fusor_broken") != std::string::npos);
    CHECK(msg.find("undeclared_name") != std::string::npos);   // NVRTC's log names it
    CHECK(msg.find("--- source ---") != std::string::npos);
    CHECK(msg.find("b0[0] = undeclared_name;") != std::string::npos);
  }

  TEST_CASE("an architecture NVRTC does not know throws CompileFailed") {
    CudaCompiler* nvrtc = test::nvrtc_or_skip();
    if (!nvrtc) return;
    KernelSpec spec = test::lower_one(test::cuda_cases()[0].text, test::cuda_cases()[0].dims, KernelKind::Pointwise);
    std::string msg;
    CHECK(test::error_of([&] { nvrtc->compile(spec, "sm_1"); }, &msg) == ErrorCode::CompileFailed);
    CHECK(msg.find("sm_1") != std::string::npos);
  }

  TEST_CASE("the dump folder receives the source and the cubin of each kernel") {
    if (!test::nvrtc_or_skip()) return;
    test::TempDir dir("cuda-dump");
    std::unique_ptr<CudaCompiler> nvrtc = make_cuda_compiler({dir.path().string()});
    const test::CudaCase c = test::cuda_cases().front();
    KernelSpec spec = test::lower_one(c.text, c.dims, c.kind);
    CudaBinary b = nvrtc->compile(spec, "sm_90");
    const std::string symbol = cuda_symbol(spec);
    CHECK(b.source.symbol == symbol);
    std::ifstream cu(dir.file(symbol + ".cu"));
    CHECK(std::string(std::istreambuf_iterator<char>(cu), {}) == b.source.code);
    CHECK(std::filesystem::file_size(dir.file(symbol + ".cubin")) == b.cubin.size());
    std::unique_ptr<CudaCompiler> nowhere = make_cuda_compiler({dir.file("missing/folder")});
    CHECK(test::error_of([&] { nowhere->compile(spec, "sm_90"); }) == ErrorCode::Io);
  }
}
