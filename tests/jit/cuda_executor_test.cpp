// The CUDA engine's plans (jit/cuda_plan.h, Note [CUDA plans]), checked without a
// device: the BERT layer and the ResNet bottleneck plan every group as a CUDA launch whose
// spec NVRTC compiles for sm_90 (skips with a reason without NVRTC); a plan's places are
// consistent (read after written, aligned, no two live buffers overlapping); and a plan
// executed on the host (each launch by the spec interpreter, in one host arena laid out as
// the device's) computes what the static engine does, views, aliases and copies included.
// Groups without a CUDA kernel are Error(Unsupported) naming the node.
#include <doctest/doctest.h>

#include "jit/cuda_plan.h"
#include "tests/codegen/cuda/cuda_test_util.h"
#include "tests/jit/cuda_plan_util.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

void check_on_host(const std::string& text, const DimBindings& dims, const std::map<std::string, Tensor>& inputs,
                   double rtol, double atol) {
  CudaPlan plan = plan_cuda(test::fuse_text(text, dims));
  test::check_plan(plan);
  std::vector<Tensor> got = test::run_on_host(plan, inputs);
  std::vector<Tensor> want = test::run_static(text, inputs);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) FUSOR_CHECK_CLOSE(got[i], want[i], rtol, atol);
}

// The launches of `plan` that are not view copies.
size_t group_launches(const CudaPlan& plan) {
  size_t n = 0;
  for (const CudaLaunch& l : plan.launches) n += l.label.rfind("copy ", 0) != 0;
  return n;
}

// Compiles every launch's spec for sm_90 with NVRTC; no warnings.
void compile_all(CudaCompiler& nvrtc, const CudaPlan& plan) {
  int64_t us = 0;
  for (const CudaLaunch& l : plan.launches) {
    INFO(l.label);
    CudaBinary b = nvrtc.compile(l.spec, "sm_90");
    CHECK(b.cubin.compare(0, 4, "\x7f" "ELF") == 0);
    CHECK_MESSAGE(b.log.empty(), "NVRTC warned:\n", b.log);
    us += b.compile_us;
  }
  MESSAGE(plan.launches.size() << " launches compiled for sm_90 in " << us / 1000 << " ms");
}

}  // namespace

TEST_SUITE("cuda/plan") {
  TEST_CASE("the BERT layer plans every group as a CUDA launch that NVRTC compiles for sm_90") {
    const std::string text = test::example_text("bert_layer");
    for (const auto& row : {std::pair<int64_t, int64_t>{8, 37}, {8, 128}}) {
      const auto& b = std::get<0>(row);
      const auto& t = std::get<1>(row);
      INFO("B " << b << " T " << t);
      FusedGraph fused = test::fuse_text(text, {{"B", b}, {"T", t}});
      const int kernels = fused.kernels_after();
      CudaPlan plan = plan_cuda(std::move(fused));
      test::check_plan(plan);
      // One launch per kernel group; the head merge (a transpose strides cannot reshape)
      // is materialized by one copy.
      CHECK(group_launches(plan) == size_t(kernels));
      CHECK(plan.launches.size() - group_launches(plan) <= 1);
      bool attention = false;
      for (const CudaLaunch& l : plan.launches) attention |= l.spec.kind == KernelKind::Attention;
      CHECK(attention);
      if (CudaCompiler* nvrtc = test::nvrtc_or_skip()) compile_all(*nvrtc, plan);
    }
  }

  TEST_CASE("the BERT layer in f16 and bf16 plans every group as a CUDA launch that NVRTC compiles for sm_90") {
    for (const char* dt : {"f16", "bf16"}) {
      INFO(std::string(dt));
      const std::string text = test::with(test::example_text("bert_layer"), {{": f32[", std::string(": ") + dt + "["}});
      FusedGraph fused = test::fuse_text(text, {{"B", 8}, {"T", 128}});
      const int kernels = fused.kernels_after();
      CudaPlan plan = plan_cuda(std::move(fused));
      test::check_plan(plan);
      CHECK(group_launches(plan) == size_t(kernels));
      for (const CudaLaunch& l : plan.launches)
        for (const BufferSpec& b : l.spec.buffers) CHECK(b.dtype != DType::F32);
      if (CudaCompiler* nvrtc = test::nvrtc_or_skip()) compile_all(*nvrtc, plan);
    }
  }

  TEST_CASE("the ResNet bottleneck plans every group as a CUDA launch that NVRTC compiles for sm_90") {
    FusedGraph fused = test::fuse_text(test::example_text("resnet_bottleneck"), {{"N", 32}, {"H", 56}, {"W", 56}});
    const int kernels = fused.kernels_after();
    CudaPlan plan = plan_cuda(std::move(fused));
    test::check_plan(plan);
    CHECK(plan.launches.size() == size_t(kernels));
    CHECK(kernels == 3);  // three convolutions, BN, ReLU and the residual in their epilogues
    if (CudaCompiler* nvrtc = test::nvrtc_or_skip()) compile_all(*nvrtc, plan);
  }

  TEST_CASE("the BERT layer plan run on the host by the interpreter matches the static engine") {
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{2, 7, 768}, 1)},
                                           {"mask", Tensor::zeros(DType::F32, Shape{2, 1, 1, 7})}};
    check_on_host(test::example_text("bert_layer"), {{"B", 2}, {"T", 7}}, in, 1e-4, 1e-4);
  }

  TEST_CASE("the bottleneck plan run on the host by the interpreter matches the static engine") {
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{1, 256, 5, 6}, 2)}};
    check_on_host(test::example_text("resnet_bottleneck"), {{"N", 1}, {"H", 5}, {"W", 6}}, in, 1e-4, 1e-4);
  }

  TEST_CASE("views a kernel reads as buffers are aliases or copies and outputs never alias") {
    // y: a transpose then a reshape strides cannot express (a copy, then an alias); r: a
    // reshape of an input returned as an output (a copy of its own); x itself is an output
    // too (a copy, not the caller's input), and so is the constant c.
    const std::string text =
        "graph g\ninput x: f32[2, 3, 4]\nconst shape: i64[2] = [3, 8]\nconst flat: i64[1] = [24]\n"
        "t = Transpose(x) {perm=[1, 2, 0]}\ny = Reshape(t, shape)\nz = Relu(y)\nr = Reshape(x, flat)\n"
        "e = Exp(z)\nconst c: f32[3] = [1.0, 2.0, 3.0]\noutput e\noutput r\noutput x\noutput z\noutput c\n";
    const std::map<std::string, Tensor> in{{"x", test::randn(Shape{2, 3, 4}, 3)}};
    CudaPlan plan = plan_cuda(test::fuse_text(text, {}));
    INFO(test::group_summary(plan.fused));
    test::check_plan(plan);
    int copies = 0;
    for (const CudaLaunch& l : plan.launches) copies += l.label.rfind("copy ", 0) == 0;
    CHECK(copies == 4);  // t (then y is an alias of it), r, x and c
    check_on_host(text, {}, in, 1e-6, 1e-7);  // copies are exact; Exp is computed in double by the interpreter
  }

  TEST_CASE("an op without a CUDA kernel is Unsupported naming the node") {
    const std::string text = "graph g\ninput a: f32[2, 3]\nb = Relu(a)\ncat = Concat(b, a) {axis=0}\noutput cat\n";
    std::string msg;
    CHECK(test::error_of([&] { plan_cuda(test::fuse_text(text, {})); }, &msg) == ErrorCode::Unsupported);
    CHECK(msg.find("Concat") != std::string::npos);
    CHECK(msg.find("'cat'") != std::string::npos);
  }
}
