// The CUDA renderer without NVRTC: what the generated source contains, which kernel
// variant each spec gets, that launch configurations cover the index space, and that
// ill-formed specs are declined with a reason.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "codegen/cuda/render_cuda.h"
#include "codegen/cuda/render_expr.h"
#include "tests/codegen/cuda/cuda_cases.h"
#include "tests/codegen/cuda/cuda_test_util.h"

using namespace fusor;

namespace {

KernelSpec case_spec(const std::string& name) {
  for (const test::CudaCase& c : test::cuda_cases())
    if (c.name == name) return test::lower_one(c.text, c.dims, c.kind);
  FAIL("no case named " << name);
  return {};
}

bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_SUITE("cuda/render") {
  TEST_CASE("the source carries the spec as a comment and one extern C kernel per spec") {
    KernelSpec spec = case_spec("pointwise f32 2x3x4");
    CudaSource s = render_cuda(spec, "fusor_test_kernel");
    INFO(s.code);
    CHECK(s.symbol == "fusor_test_kernel");
    CHECK(s.code.rfind("/*\n * kernel ", 0) == 0);
    CHECK(has(s.code, " * " + spec.str().substr(0, spec.str().find('\n'))));
    CHECK(has(s.code, "extern \"C\" __global__ void __launch_bounds__(256) fusor_test_kernel("));
    CHECK(has(s.code, "const float* __restrict__ b0"));
    CHECK_FALSE(has(s.code, "#include"));
  }

  TEST_CASE("pointwise kernels move four elements at a time only where every access allows it") {
    CudaSource v = render_cuda(case_spec("pointwise f32 2x3x4"), "k");
    CHECK(v.variant == "pointwise vec4");
    CHECK(has(v.code, "ld4(b0 + e"));
    CHECK(has(v.code, "st4(b"));
    CHECK(v.alignment == 16);
    CudaSource h = render_cuda(case_spec("pointwise f16 2x3x8"), "k");
    CHECK(h.variant == "pointwise vec4");
    CHECK(has(h.code, "ld4_f16("));
    CudaSource s = render_cuda(case_spec("pointwise f32 3x5x7"), "k");
    CHECK(s.variant == "pointwise scalar");
    CHECK(render_cuda(case_spec("pointwise transposed read"), "k").variant == "pointwise scalar");
  }

  TEST_CASE("launch configurations cover the index space") {
    for (const test::CudaCase& c : test::cuda_cases()) {
      INFO("case: " << c.name);
      KernelSpec spec = test::lower_one(c.text, c.dims, c.kind);
      CudaSource s = render_cuda(spec, "k");
      const CudaLaunchConfig& l = s.launch;
      const int64_t threads = int64_t(l.block[0]) * l.block[1] * l.block[2];
      CHECK(threads % 32 == 0);
      CHECK(threads <= 1024);
      CHECK(l.shared_bytes <= 227 * 1024);
      int64_t out = 0;
      for (const BufferSpec& b : spec.buffers)
        if (b.output) out = std::max(out, b.elements);
      const int64_t blocks = int64_t(l.grid[0]) * l.grid[1] * l.grid[2];
      if (spec.kind == KernelKind::Pointwise) CHECK(blocks * threads * 4 >= out);
      if (spec.kind == KernelKind::RowReduction) {
        int64_t rows = 1;
        for (size_t d = 0; d + 1 < spec.reduction.shape.size(); ++d) rows *= spec.reduction.shape[d];
        CHECK(blocks * threads >= rows * 32);  // at least a warp per row
      }
      if (spec.kind == KernelKind::Attention) CHECK(int64_t(l.grid[0]) * 16 >= spec.attention.tq);
    }
  }

  TEST_CASE("contractions pick tensor cores for f16 and bf16 and SIMT for f32") {
    CHECK(render_cuda(case_spec("matmul bias gelu f32 33x17x65"), "k").variant == "gemm simt f32 64x64x16");
    CudaSource f = render_cuda(case_spec("matmul bias gelu f32 1408x40x1536"), "k");
    CHECK(f.variant == "gemm simt f32 128x128x8 vec4");
    CHECK(f.alignment == 16);
    CHECK(has(f.code, "As[kk + i][o] = h[i];"));                          // A rows: 4 k, spread
    CHECK(has(f.code, "*reinterpret_cast<float4*>(&Bs[kk][o]) = q;"));  // B rows: 4 columns, one store
    CudaSource h = render_cuda(case_spec("matmul bias gelu f16 37x40x50"), "k");
    CHECK(h.variant == "gemm mma.sync f16 64x64x32 vec8");  // A rows of 40: 16-byte loads
    CHECK(has(h.code, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"));
    CHECK(h.alignment == 16);
    CudaSource o = render_cuda(case_spec("matmul bias gelu f16 9x13x11"), "k");
    CHECK(o.variant == "gemm mma.sync f16 64x64x32");  // odd sizes: element loads
    CHECK(o.alignment == 4);
    CudaSource b = render_cuda(case_spec("matmul bias gelu bf16 1408x40x1536"), "k");
    CHECK(b.variant == "gemm mma.sync bf16 128x128x32 vec8");
    CHECK(has(b.code, ".f32.bf16.bf16.f32"));
    // B row-major [K, N]: 8 columns of one k per load, spread over 8 rows of the k-major tile.
    CHECK(has(b.code, "Bs[o + i][kk] = h[i];"));
    // Transposed A: 8 rows of one k per load, spread; transposed B: 8 k per load, one store.
    CudaSource tt = render_cuda(case_spec("gemm f16 both transposed aligned"), "k");
    CHECK(has(tt.code, "As[o + i][kk] = h[i];"));
    CHECK(has(tt.code, "*reinterpret_cast<uint4*>(&Bs[o][kk]) = q;"));
    CudaSource ft = render_cuda(case_spec("gemm f32 both transposed aligned"), "k");
    CHECK(has(ft.code, "*reinterpret_cast<float4*>(&As[kk][o]) = q;"));
    CHECK(has(ft.code, "Bs[kk + i][o] = h[i];"));
    // B given as [N, K] (Gemm transB): 8 k of one column per load, one 16-byte store.
    CudaSource t = render_cuda(case_spec("gemm f16 transposed B"), "k");
    CHECK(has(t.code, "*reinterpret_cast<uint4*>(&Bs[o][kk]) = q;"));
  }

  TEST_CASE("a batch that only A steps through folds into the rows") {
    CudaSource s = render_cuda(case_spec("matmul batch folded into rows"), "k");
    CHECK(s.launch.grid[2] == 1);                 // one GEMM of 4*37 rows
    CHECK(s.launch.grid[1] == (4 * 37 + 63) / 64);
    CudaSource b = render_cuda(case_spec("batched matmul"), "k");
    CHECK(b.launch.grid[2] == 6);                 // B steps through the batch: 6 GEMMs
  }

  TEST_CASE("convolutions are implicit GEMMs except with few channels per group") {
    CHECK(render_cuda(case_spec("conv 3x3 pad 1"), "k").variant == "gemm simt f32 64x64x16");
    CHECK(render_cuda(case_spec("conv grouped"), "k").launch.grid[2] == 2);  // z = group
    CHECK(render_cuda(case_spec("conv depthwise"), "k").variant == "conv direct");
  }

  TEST_CASE("row reductions take a warp per row up to 1024 columns and keep rows in registers to 32768") {
    CHECK(render_cuda(case_spec("softmax scale mask cols 1024"), "k").variant == "row reduction warp/row registers");
    CHECK(render_cuda(case_spec("softmax scale mask cols 1500"), "k").variant == "row reduction block/row registers");
    CHECK(render_cuda(case_spec("residual layernorm cols 3000"), "k").variant == "row reduction block/row registers");
    CudaSource r = render_cuda(case_spec("softmax scale mask cols 40000"), "k");
    CHECK(r.variant == "row reduction block/row recompute");
    CHECK(r.launch.block[0] == 1024);
  }

  TEST_CASE("ill-formed or oversized specs are declined with a reason") {
    KernelSpec spec = case_spec("pointwise f32 2x3x4");
    spec.pointwise.body.accesses[0].buffer = 99;
    std::string why;
    CHECK_FALSE(cuda_supports(spec, &why));
    CHECK(has(why, "buffer out of range"));
    std::string msg;
    CHECK(test::error_of([&] { render_cuda(spec, "k"); }, &msg) == ErrorCode::Unsupported);
    CHECK(has(msg, "buffer out of range"));

    KernelSpec at = case_spec("attention t 5 s 7 d 16 dv 24");
    at.attention.d = 4096;
    CHECK_FALSE(cuda_supports(at, &why));
    CHECK(has(why, "shared memory"));

    KernelSpec red = case_spec("ReduceSum cols 3");
    red.reduction.prologue.nodes.clear();
    CHECK_FALSE(cuda_supports(red, &why));
    CHECK(has(why, "empty prologue"));
  }

  TEST_CASE("float literals convert back to the same float") {
    for (double v : {0.0, 1.0, -2.5, 0.1, 1e-30, 3.4028234663852886e38, 1.401298464324817e-45}) {
      std::string s = cuda_src::float_lit(v);
      INFO(s);
      CHECK(s.back() == 'f');
      CHECK(float(std::strtod(s.c_str(), nullptr)) == float(v));
    }
    CHECK(cuda_src::float_lit(1.0 / 0.0) == "FUSOR_INF");
    CHECK(cuda_src::float_lit(std::nan("")) == "__int_as_float(0x7fffffff)");
  }
}
