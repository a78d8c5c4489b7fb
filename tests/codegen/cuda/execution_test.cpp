// The cuda backend on the device: every case of cuda_cases.h is lowered, compiled for the
// device's architecture, run on buffers of seeded random values (outputs pre-filled with
// NaN bytes, so a missed element shows) and compared with the spec interpreter (double).
// Skips with a visible reason where there is no libcuda or no device (CI machines).
//
// Tolerances (per case, in cuda_cases.h), |got - want| <= rtol |want| + atol:
//   pointwise f32   CUDA's expf/tanhf/erff/erfcf are within 2-4 ulp (Note [CUDA scalar
//                   math]); a chain of ten ops, so 2e-5 relative, 2e-6 absolute.
//   f16 / bf16      one rounding of the output: 2^-11 / 2^-8 relative, with slack.
//   reductions      float sums in a different order from the double reference.
//   contractions    float accumulation over K (f16/bf16 operands are exact in f32, their
//                   products too; the output rounding dominates).
#include <doctest/doctest.h>

#include <limits>

#include "codegen/cuda/cuda_backend.h"
#include "tests/codegen/cuda/cuda_cases.h"
#include "tests/codegen/cuda/cuda_test_util.h"

using namespace fusor;

TEST_SUITE("cuda/execute") {
  TEST_CASE("every case runs on the device and matches the interpreter") {
    CudaBackend* be = test::cuda_backend_or_skip();
    if (!be) return;
    for (const test::CudaCase& c : test::cuda_cases()) {
      INFO("case: " << c.name);
      test::check_on_device(*be, test::lower_one(c.text, c.dims, c.kind), c.rtol, c.atol);
    }
  }

  TEST_CASE("infinities signed zeros and denormals pass through pointwise kernels") {
    CudaBackend* be = test::cuda_backend_or_skip();
    if (!be) return;
    KernelSpec spec = test::lower_one("graph g\ninput x: f32[8]\ny = Relu(x)\nz = Max(y, x)\noutput z\n", {},
                                      KernelKind::Pointwise);
    std::shared_ptr<const CudaKernel> k = be->compile(spec);
    // (NaN is left out: the interpreter's Relu maps it to 0, the kernels propagate it.)
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<Tensor> in = {test::make(DType::F32, Shape{8}, {0, -0.0, 1, -1, inf, -inf, -1e-40, 1e-40}),
                              Tensor::zeros(DType::F32, Shape{8})};
    std::vector<Tensor> got = test::run_on_device(*be, *k, in);
    std::vector<Tensor> want = in;
    test::interpret(spec, want);
    FUSOR_CHECK_CLOSE(got[1], want[1], 0, 0);
  }

  TEST_CASE("launch checks the buffer count and alignment") {
    CudaBackend* be = test::cuda_backend_or_skip();
    if (!be) return;
    KernelSpec spec = test::lower_one("graph g\ninput x: f32[16]\ny = Relu(x)\noutput y\n", {}, KernelKind::Pointwise);
    std::shared_ptr<const CudaKernel> k = be->compile(spec);
    DeviceBuffer a = be->alloc(128), b = be->alloc(128);
    CHECK(test::error_of([&] { be->launch(*k, {a.address()}); }) == ErrorCode::InvalidArgument);
    std::string msg;
    CHECK(test::error_of([&] { be->launch(*k, {a.address() + 4, b.address()}); }, &msg) == ErrorCode::InvalidArgument);
    CHECK(msg.find("aligned") != std::string::npos);
    be->launch(*k, {a.address(), b.address()});
    be->synchronize();
  }

  TEST_CASE("compile and load times are reported") {
    CudaBackend* be = test::cuda_backend_or_skip();
    if (!be) return;
    const test::CudaCase c = test::cuda_cases().front();
    std::shared_ptr<const CudaKernel> k = be->compile(test::lower_one(c.text, c.dims, c.kind));
    CHECK(k->binary.compile_us > 0);
    CHECK(k->binary.arch == be->arch());
    MESSAGE("NVRTC " << k->binary.compile_us / 1000.0 << " ms, cuModuleLoadData " << k->load_us / 1000.0 << " ms");
  }
}
