// The one list of graphs the cuda suites sweep: every kernel kind over shapes around the
// kernels' tile and vector sizes (1, odd sizes, multiples of 4 and of the tiles),
// broadcasting, transposed operands, batched and folded GEMMs, f16/bf16 tensor-core GEMMs,
// strided / dilated / grouped / depthwise convolutions and attention. The NVRTC suite
// compiles every case for sm_90 (no GPU needed); the execution suite runs every case on
// the device against the spec interpreter.
#pragma once

#include <string>
#include <vector>

#include "codegen/kernel_spec.h"
#include "ir/shape_inference.h"
#include "tests/support/onnx_op_graphs.h"

namespace fusor::test {

/// One graph and the kind of its group under test, with the tolerance of its outputs
/// against the double interpreter (|got - want| <= rtol |want| + atol).
struct CudaCase {
  std::string name;
  std::string text;
  DimBindings dims;
  KernelKind kind;
  double rtol = 1e-5, atol = 1e-5;
};

namespace cases_detail {

inline std::string pointwise_chain(const std::string& dtype) {
  return "graph g\ninput x: " + dtype + "[A, B, C]\ninput b: " + dtype + "[C]\ninput r: " + dtype +
         "[A, 1, C]\n"
         "const two: " + dtype + "[] = [2.0]\n"
         "a = Add(x, b)\nm = Mul(a, two)\ns0 = Add(m, r)\ng1 = Gelu(s0) {approximate=\"none\"}\nt = Tanh(g1)\n"
         "e = Erf(t)\ns = Sigmoid(e)\nmx = Max(s, x)\nrl = Relu(mx)\nq = Sqrt(rl)\nng = Neg(q)\nex = Exp(ng)\n"
         "y = Sub(ex, b)\noutput y\n";
}

// The BERT pattern: MatMul(Q, K^T) * scale + mask -> Softmax -> MatMul(., V).
inline std::string attention(const std::string& dtype) {
  return "graph g\ninput q: " + dtype + "[B, H, T, D]\ninput k: " + dtype + "[B, H, D, S]\ninput v: " + dtype +
         "[B, H, S, E]\ninput mask: " + dtype + "[B, 1, 1, S]\nconst scale: " + dtype +
         "[] = [0.125]\n"
         "s = MatMul(q, k)\nsc = Mul(s, scale)\nm = Add(sc, mask)\np = Softmax(m) {axis=-1}\no = MatMul(p, v)\n"
         "y = Relu(o)\noutput y\n";
}

inline std::string matmul_bias_gelu(const std::string& dtype) {
  return "graph g\ninput a: " + dtype + "[M, K]\ninput w: " + dtype + "[K, N]\ninput b: " + dtype +
         "[N]\nmm = MatMul(a, w)\nh = Add(mm, b)\ny = Gelu(h) {approximate=\"tanh\"}\noutput y\n";
}

inline std::string conv(const std::string& attrs, int64_t m, int64_t cg, int64_t kh, int64_t kw) {
  return "graph g\ninput x: f32[N, C, H, W]\nconst w: f32[" + std::to_string(m) + ", " + std::to_string(cg) + ", " +
         std::to_string(kh) + ", " + std::to_string(kw) + "] = randn(seed=3, std=0.3)\nconst bias: f32[" +
         std::to_string(m) + "] = randn(seed=4, std=0.3)\nc = Conv(x, w, bias) {" + attrs +
         "}\ny = Relu(c)\noutput y\n";
}

}  // namespace cases_detail

/// Every case, in a fixed order.
inline std::vector<CudaCase> cuda_cases() {
  using namespace cases_detail;
  using K = KernelKind;
  std::vector<CudaCase> c;
  // Pointwise: vector (C % 4 == 0) and scalar paths, broadcasting, 1 element.
  for (auto [a, b, cc] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {2, 3, 4}, {3, 5, 7}, {2, 1, 1024}, {5, 33, 36}})
    c.push_back({"pointwise f32 " + std::to_string(a) + "x" + std::to_string(b) + "x" + std::to_string(cc),
                 pointwise_chain("f32"), {{"A", a}, {"B", b}, {"C", cc}}, K::Pointwise, 2e-5, 2e-6});
  c.push_back({"pointwise f16 2x3x8", pointwise_chain("f16"), {{"A", 2}, {"B", 3}, {"C", 8}}, K::Pointwise, 2e-3, 2e-3});
  c.push_back({"pointwise bf16 3x5x7", pointwise_chain("bf16"), {{"A", 3}, {"B", 5}, {"C", 7}}, K::Pointwise, 1e-2, 1e-2});
  c.push_back({"pointwise transposed read",
               "graph g\ninput x: f32[6, 10]\ninput y: f32[10, 6]\ninput mk: bool[10, 6]\nt = Transpose(x) {perm=[1, 0]}\n"
               "z = Mul(t, y)\no = Where(mk, z, y)\noutput o\n",
               {}, K::Pointwise, 1e-6, 1e-6});
  // The ops added for ONNX exports: bool values, comparisons, logic, Log, the activations.
  for (auto [a, b] : std::vector<std::array<int64_t, 2>>{{1, 1}, {3, 7}, {2, 36}}) {
    std::string dims = std::to_string(a);  // appended, not concatenated: GCC 12's false -Wrestrict
    dims.append("x").append(std::to_string(b));
    c.push_back({std::string("pointwise onnx ops ").append(dims), onnx_pointwise_graph(), {{"A", a}, {"B", b}},
                 K::Pointwise, 1e-5, 1e-5});
    c.push_back({std::string("pointwise onnx compare ").append(dims), onnx_compare_graph(), {{"A", a}, {"B", b}},
                 K::Pointwise, 0, 0});
  }
  // Row reductions: warp per row (<= 1024), block per row with registers, recomputed.
  for (int64_t t : {1, 7, 32, 33, 200, 1024, 1500, 5000, 40000})
    c.push_back({"softmax scale mask cols " + std::to_string(t),
                 "graph g\ninput x: f32[R, T]\ninput mask: f32[T]\nconst s: f32[] = [0.5]\n"
                 "a = Mul(x, s)\nb = Add(a, mask)\ny = Softmax(b) {axis=-1}\noutput y\n",
                 {{"R", t > 4096 ? 3 : 9}, {"T", t}}, K::RowReduction, 2e-5, 1e-7});
  for (int64_t t : {5, 768, 3000, 40000})
    c.push_back({"residual layernorm cols " + std::to_string(t),
                 "graph g\ninput x: f32[R, T]\ninput r: f32[R, T]\ninput gamma: f32[T]\ninput beta: f32[T]\n"
                 "a = Add(x, r)\ny = LayerNormalization(a, gamma, beta) {axis=-1, epsilon=1e-5}\noutput y\n",
                 {{"R", 5}, {"T", t}}, K::RowReduction, 1e-4, 1e-4});
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax"})
    for (int64_t t : {3, 700, 5000, 40000})
      c.push_back({std::string(op) + " cols " + std::to_string(t),
                   "graph g\ninput x: f32[R, T]\ny = " + std::string(op) + "(x) {axes=[-1], keepdims=0}\noutput y\n",
                   {{"R", 6}, {"T", t}}, K::RowReduction, 1e-4, 1e-4});
  // GEMM: SIMT tiles (64 and 128), edges, the fused epilogue.
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {5, 3, 4}, {33, 17, 65}, {64, 64, 64}, {300, 96, 200},
                                                          {1408, 40, 1536}})
    c.push_back({"matmul bias gelu f32 " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
                 matmul_bias_gelu("f32"), {{"M", m}, {"K", k}, {"N", n}}, K::Contraction, 1e-4, 1e-4});
  c.push_back({"gemm transposes alpha beta",
               "graph g\ninput a: f32[37, 29]\ninput b: f32[41, 37]\ninput c: f32[41]\n"
               "h = Gemm(a, b, c) {transA=1, transB=1, alpha=0.5, beta=2.0}\ny = Tanh(h)\noutput y\n",
               {}, K::Contraction, 1e-4, 1e-4});
  // Both operands transposed with aligned sizes: A read along m, B along k, 16 bytes at a time.
  for (const char* t : {"f32", "f16"})
    c.push_back({std::string("gemm ") + t + " both transposed aligned",
                 std::string("graph g\ninput a: ") + t + "[32, 48]\ninput b: " + t +
                     "[40, 32]\nh = Gemm(a, b) {transA=1, transB=1}\ny = Relu(h)\noutput y\n",
                 {}, K::Contraction, t[1] == '3' ? 1e-4 : 1e-2, t[1] == '3' ? 1e-4 : 1e-2});
  c.push_back({"batched matmul",
               "graph g\ninput a: f32[3, 2, 19, 23]\ninput b: f32[3, 2, 23, 31]\ny = MatMul(a, b)\noutput y\n", {},
               K::Contraction, 1e-4, 1e-4});
  c.push_back({"matmul batch folded into rows",
               "graph g\ninput a: f32[4, 37, 64]\ninput b: f32[64, 96]\ninput r: f32[4, 37, 96]\n"
               "mm = MatMul(a, b)\ny = Add(mm, r)\noutput y\n",
               {}, K::Contraction, 1e-4, 1e-4});
  // Tensor cores: f16 / bf16 operands, f32 accumulation, edges and the 128 tile.
  for (auto [m, k, n] :
       std::vector<std::array<int64_t, 3>>{{1, 16, 8}, {9, 13, 11}, {37, 40, 50}, {128, 64, 128}, {1408, 40, 1536}}) {
    std::string sz = std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    c.push_back({"matmul bias gelu f16 " + sz, matmul_bias_gelu("f16"), {{"M", m}, {"K", k}, {"N", n}}, K::Contraction,
                 1e-2, 1e-2});
    c.push_back({"matmul bias gelu bf16 " + sz, matmul_bias_gelu("bf16"), {{"M", m}, {"K", k}, {"N", n}},
                 K::Contraction, 3e-2, 3e-2});
  }
  c.push_back({"gemm f16 transposed B",
               "graph g\ninput a: f16[70, 48]\ninput b: f16[90, 48]\nh = Gemm(a, b) {transB=1}\noutput h\n", {},
               K::Contraction, 1e-2, 1e-2});
  // Conv2d: implicit GEMM and the direct kernel (few channels per group).
  const DimBindings img{{"N", 2}, {"C", 8}, {"H", 9}, {"W", 7}};
  c.push_back({"conv 3x3 pad 1", conv("pads=[1, 1, 1, 1]", 16, 8, 3, 3), img, K::Contraction, 1e-4, 1e-4});
  c.push_back({"conv strided dilated asymmetric pads", conv("strides=[2, 1], pads=[1, 0, 2, 1], dilations=[1, 2]", 24, 8, 3, 2),
               img, K::Contraction, 1e-4, 1e-4});
  c.push_back({"conv grouped", conv("group=2, pads=[1, 1, 1, 1]", 32, 4, 3, 3), img, K::Contraction, 1e-4, 1e-4});
  c.push_back({"conv depthwise", conv("group=8, pads=[1, 1, 1, 1]", 8, 1, 3, 3), img, K::Contraction, 1e-4, 1e-4});
  c.push_back({"conv 1x1", conv("", 64, 8, 1, 1), img, K::Contraction, 1e-4, 1e-4});
  c.push_back({"conv relu6 clip", onnx_conv_epilogue_graph(), {{"N", 2}, {"H", 9}, {"W", 11}}, K::Contraction, 1e-4, 1e-4});
  // Attention: odd lengths, a key tile and a half, d != dv.
  for (auto [t, s, d, e] : std::vector<std::array<int64_t, 4>>{{1, 1, 8, 8}, {5, 7, 16, 24}, {37, 37, 64, 64}, {20, 50, 32, 40}})
    c.push_back({"attention t " + std::to_string(t) + " s " + std::to_string(s) + " d " + std::to_string(d) + " dv " +
                     std::to_string(e),
                 attention("f32"), {{"B", 2}, {"H", 3}, {"T", t}, {"S", s}, {"D", d}, {"E", e}}, K::Attention, 1e-4, 1e-5});
  c.push_back({"attention f16", attention("f16"), {{"B", 1}, {"H", 2}, {"T", 9}, {"S", 9}, {"D", 16}, {"E", 16}},
               K::Attention, 2e-2, 2e-2});
  // An exported mask: Where(bool [B, 1, T, T], 0, -big) computed in the score expression.
  c.push_back({"attention bool mask",
               "graph g\ninput q: f32[1, 2, T, 16]\ninput k: f32[1, 2, 16, T]\ninput v: f32[1, 2, T, 16]\n"
               "input m: bool[1, 1, T, T]\nconst big: f32[] = [-3.4e38]\nconst zero: f32[] = [0.0]\n"
               "s = MatMul(q, k)\nw = Where(m, zero, big)\na = Add(s, w)\np = Softmax(a) {axis=-1}\no = MatMul(p, v)\n"
               "output o\n",
               {{"T", 37}}, K::Attention, 1e-4, 1e-4});
  return c;
}

}  // namespace fusor::test
