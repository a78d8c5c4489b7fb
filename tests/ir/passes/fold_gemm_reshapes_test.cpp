#include <doctest/doctest.h>

#include "ir/passes/fold_gemm_reshapes.h"
#include "ir/text_format.h"
#include "tests/support/pass_util.h"

using namespace fusor;

TEST_SUITE("ir/passes/fold_gemm_reshapes") {
  TEST_CASE("GPT-2's Conv1D Gemm between reshapes becomes a MatMul whose epilogue fuses") {
    const char* text = R"(
graph conv1d
input x: f32[2, T, 8]
const w: f32[8, 16] = randn(seed=1, std=0.1)
const b: f32[16] = randn(seed=2, std=0.1)
const flat: i64[2] = [-1, 8]
const back: i64[3] = [2, -1, 16]
xf = Reshape(x, flat)
y = Gemm(xf, w, b) {alpha=1.0, beta=1.0}
yr = Reshape(y, back)
z = Gelu(yr) {approximate="tanh"}
output z
)";
    Graph before = test::trace_text(text, {{"T", 5}});
    FusionLog log;
    Graph after = fold_gemm_reshapes(before, FusionOptions{}, &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("yr_mm = MatMul(x, w)\n"
                                   "yr = Add(yr_mm, b)\n"
                                   "z = Gelu(yr)\n"
                                   "output z"));
    CHECK(log.applied.size() == 1);
    FusedGraph f = test::fuse_text(text, {{"T", 5}});
    CHECK(test::group_summary(f).find("contraction matmul+add+gelu") != std::string::npos);
  }

  TEST_CASE("transB alpha beta and a 4-d operand") {
    const char* text = R"(
graph g
input x: f32[1, T, 2, 4]
const w: f32[16, 8] = randn(seed=1, std=0.1)
const b: f32[1, 16] = randn(seed=2, std=0.1)
const flat: i64[2] = [-1, 8]
const back: i64[3] = [1, -1, 16]
xf = Reshape(x, flat)
y = Gemm(xf, w, b) {alpha=0.5, beta=2.0, transB=1}
yr = Reshape(y, back)
output yr
)";
    Graph before = test::trace_text(text, {{"T", 3}});
    FusionLog log;
    Graph after = fold_gemm_reshapes(before, FusionOptions{}, &log);
    FUSOR_CHECK_GOLDEN(test::structure(before), test::structure(after),
                       std::string("yr_bt = Transpose(w)\n"
                                   "yr_in = Reshape(x, yr_rows)\n"
                                   "yr_mm = MatMul(yr_in, yr_bt)\n"
                                   "yr_scaled = Mul(yr_mm, yr_alpha)\n"
                                   "yr_c = Mul(b, yr_beta)\n"
                                   "yr = Add(yr_scaled, yr_c)\n"
                                   "output yr"));
  }

  TEST_CASE("transA or a Gemm output used elsewhere stays") {
    const char* text = R"(
graph g
input x: f32[1, 3, 8]
const w: f32[8, 16] = randn(seed=1, std=0.1)
const flat: i64[2] = [-1, 8]
const back: i64[3] = [1, -1, 16]
xf = Reshape(x, flat)
y = Gemm(xf, w)
yr = Reshape(y, back)
output yr, y
)";
    FusionLog log;
    Graph before = test::trace_text(text, {});
    CHECK(test::structure(fold_gemm_reshapes(before, FusionOptions{}, &log)) == test::structure(before));
    CHECK(log.applied.empty());
  }
}
