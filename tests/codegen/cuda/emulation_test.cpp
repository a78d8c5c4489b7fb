// The generated kernels' logic, checked where there is no GPU: every case of cuda_cases.h
// is rendered, turned into host C++ (the preamble's two cvt instructions and mma.sync
// rewritten to the stand-ins of host_emulation.h, dynamic shared memory mapped to a host
// buffer), compiled by the build's C++ compiler into a shared object, run under
// host_emulation.h (threads, barriers, shuffles) on seeded random buffers, and compared with
// the spec interpreter with the case's tolerances. This checks indexing, tiling, guards,
// reductions and the online softmax; the GPU suite (execution_test.cpp) checks the real
// thing. Skips with a reason when no host compiler is found.
#include <doctest/doctest.h>

#include <cstring>

#include "codegen/cuda/render_cuda.h"
#include "tests/codegen/cuda/cuda_cases.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/codegen/cuda/emulation_util.h"
#include "tests/support/temp_dir.h"

using namespace fusor;

namespace {

// Compiles, runs and checks every case of `kind` whose variant does (tensor_cores) or does
// not contain "mma"; skips with a reason without a compiler.
void check_kind(KernelKind kind, bool tensor_cores = false) {
  const std::string why = test::emulation_unavailable();
  if (!why.empty()) {
    MESSAGE("skipped (" << why << ")");
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
    test::EmulatedKernel kernel(spec, src, dir.path().string(), "k" + std::to_string(checked));
    std::vector<Tensor> in = test::random_buffers(spec, 1), got = in, want = in;
    std::vector<void*> pointers;
    for (size_t i = 0; i < got.size(); ++i) {
      if (spec.buffers[i].output) {  // NaN bytes: a missed element shows
        got[i] = Tensor::empty(spec.buffers[i].dtype, Shape{spec.buffers[i].elements});
        std::memset(got[i].raw(), 0xff, got[i].nbytes());
      }
      pointers.push_back(got[i].raw());
    }
    kernel.run(pointers.data());
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
