// CUDA plans run with their real kernels where there is no GPU: every launch of the plan is
// rendered, compiled for the host against host_emulation.h (tests/codegen/cuda/
// emulation_util.h) and run in a host arena laid out as the device's, so the generated
// code meets the executor's plan (aliases with offsets, copies of views, buffers that share
// arena bytes) as it would on the device; the outputs must match the static engine. Part
// of the emulation suite, which the GPU machine leaves out (it runs the real thing, in
// cuda_engine_test.cpp). Skips with a reason without a host compiler.
#include <doctest/doctest.h>

#include <memory>

#include "codegen/cuda/cuda_backend.h"
#include "codegen/cuda/render_cuda.h"
#include "jit/cuda_plan.h"
#include "tests/codegen/cuda/emulation_util.h"
#include "tests/jit/cuda_plan_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

// Plans `text` at `dims`, runs the plan's rendered kernels under emulation and compares the
// outputs with the static engine.
void check_emulated(const std::string& text, const DimBindings& dims, const std::map<std::string, Tensor>& inputs,
                    double rtol, double atol) {
  const std::string why = test::emulation_unavailable();
  if (!why.empty()) {
    MESSAGE("skipped (" << why << ")");
    return;
  }
  CudaPlan plan = plan_cuda(test::fuse_text(text, dims));
  test::check_plan(plan);
  test::TempDir dir("cuda-plan-emulation");
  std::vector<std::unique_ptr<test::EmulatedKernel>> kernels;
  for (size_t i = 0; i < plan.launches.size(); ++i) {
    const KernelSpec& spec = plan.launches[i].spec;
    INFO(plan.launches[i].label);
    kernels.push_back(std::make_unique<test::EmulatedKernel>(spec, render_cuda(spec, cuda_symbol(spec)), dir.path().string(),
                                                             "launch" + std::to_string(i)));
  }
  std::vector<Tensor> got = test::run_on_host(plan, inputs, [&](size_t i, const CudaLaunch&, std::vector<Tensor>& bufs) {
    std::vector<void*> pointers;
    for (Tensor& t : bufs) pointers.push_back(t.raw());
    kernels[i]->run(pointers.data());
  });
  std::vector<Tensor> want = test::run_static(text, inputs);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) FUSOR_CHECK_CLOSE(got[i], want[i], rtol, atol);
  MESSAGE(plan.launches.size() << " launches emulated");
}

}  // namespace

TEST_SUITE("cuda/emulation") {
  TEST_CASE("the BERT layer plan runs its rendered kernels under host emulation like the static engine") {
    Tensor mask = Tensor::zeros(DType::F32, Shape{2, 1, 1, 9});
    for (int64_t j = 6; j < 9; ++j) mask.set(9 + j, -10000.0);  // the second sequence is 6 long
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{2, 9, 768}, 4)}, {"mask", mask}};
    check_emulated(test::example_text("bert_layer"), {{"B", 2}, {"T", 9}}, in, 1e-3, 1e-3);
  }

  TEST_CASE("the bottleneck plan runs its rendered kernels under host emulation like the static engine") {
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{2, 256, 5, 7}, 5)}};
    check_emulated(test::example_text("resnet_bottleneck"), {{"N", 2}, {"H", 5}, {"W", 7}}, in, 1e-3, 1e-3);
  }

  TEST_CASE("view copies and aliases run their rendered kernels under host emulation like the static engine") {
    const std::string text =
        "graph g\ninput x: f32[2, 3, 4]\nconst shape: i64[2] = [3, 8]\nconst flat: i64[1] = [24]\n"
        "t = Transpose(x) {perm=[1, 2, 0]}\ny = Reshape(t, shape)\nz = Relu(y)\nr = Reshape(x, flat)\n"
        "e = Exp(z)\noutput e, r, x, z\n";
    check_emulated(text, {}, {{"x", test::randn(Shape{2, 3, 4}, 6)}}, 1e-6, 1e-7);
  }
}
