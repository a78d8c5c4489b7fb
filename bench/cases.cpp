#include "bench/cases.h"

#include <cmath>

#include "ir/builder.h"
#include "ir/text_format.h"

namespace fusor::bench {

namespace {

Tensor randn(Shape s, uint64_t seed) { return make_random(DType::F32, s, RandomRecipe::normal(seed, 1.0)); }

// Conv (no bias) + BatchNormalization (+ residual Add) + Relu, batch 1.
void conv_bn_relu(Graph* g, TensorMap* in, int64_t cin, int64_t cout, int64_t k, int64_t hw, bool residual) {
  GraphBuilder b(residual ? "conv_bn_add_relu" : "conv_bn_relu");
  ValueId x = b.input("x", DType::F32, {1, cin, hw, hw});
  ValueId w = b.randn("w", {cout, cin, k, k}, 1, std::sqrt(2.0 / double(cin * k * k)));
  ConvOptions o;
  o.pads = {k / 2, k / 2, k / 2, k / 2};
  ValueId y = b.conv(x, w, kNoValue, o);
  y = b.batchnorm(y, b.uniform("g", {cout}, 2, 0.5, 1.5), b.randn("beta", {cout}, 3, 0.1),
                  b.randn("mu", {cout}, 4, 0.1), b.uniform("var", {cout}, 5, 0.5, 1.5));
  if (residual) y = b.add(y, b.input("r", DType::F32, {1, cout, hw, hw}));
  b.output(b.op(OpKind::Relu, {y}, {}, "y"));
  *g = b.build();
  (*in)["x"] = randn({1, cin, hw, hw}, 10);
  if (residual) (*in)["r"] = randn({1, cout, hw, hw}, 11);
}

void matmul_bias(Graph* g, TensorMap* in, int64_t m, int64_t k, int64_t n, bool gelu) {
  GraphBuilder b(gelu ? "matmul_bias_gelu" : "matmul_bias");
  ValueId x = b.input("x", DType::F32, {m, k});
  ValueId y = b.add(b.matmul(x, b.randn("w", {k, n}, 1, 0.02)), b.randn("b", {n}, 2, 0.02));
  if (gelu) y = b.gelu(y);
  b.output(y);
  *g = b.build();
  (*in)["x"] = randn({m, k}, 10);
}

Graph load_example(const char* name) { return load_graph(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name); }

std::vector<BenchCase> make_cases() {
  std::vector<BenchCase> c;
  c.push_back({"conv3x3_bn_relu_64x56x56", 2.0 * 64 * 64 * 9 * 56 * 56, 4.0 * 2 * 64 * 56 * 56,
               [](Graph* g, TensorMap* in) { conv_bn_relu(g, in, 64, 64, 3, 56, false); }});
  c.push_back({"conv1x1_bn_add_relu_256x56x56", 2.0 * 64 * 256 * 56 * 56, 4.0 * (64 + 256 + 256) * 56 * 56,
               [](Graph* g, TensorMap* in) { conv_bn_relu(g, in, 64, 256, 1, 56, true); }});
  c.push_back({"resnet_bottleneck_256x56x56",
               2.0 * 56 * 56 * (256 * 64 + 64 * 64 * 9 + 64 * 256), 4.0 * 2 * 256 * 56 * 56,
               [](Graph* g, TensorMap* in) {
                 *g = load_example("resnet_bottleneck");
                 (*in)["x"] = randn({1, 256, 56, 56}, 10);
               }});
  c.push_back({"matmul_bias_128x768x2304", 2.0 * 128 * 768 * 2304, 4.0 * (128 * 768 + 768 * 2304 + 128 * 2304),
               [](Graph* g, TensorMap* in) { matmul_bias(g, in, 128, 768, 2304, false); }});
  c.push_back({"matmul_bias_gelu_128x768x3072", 2.0 * 128 * 768 * 3072, 4.0 * (128 * 768 + 768 * 3072 + 128 * 3072),
               [](Graph* g, TensorMap* in) { matmul_bias(g, in, 128, 768, 3072, true); }});
  c.push_back({"residual_layernorm_128x768", 0, 4.0 * 3 * 128 * 768, [](Graph* g, TensorMap* in) {
                 GraphBuilder b("residual_layernorm");
                 ValueId x = b.input("x", DType::F32, {128, 768});
                 ValueId r = b.input("r", DType::F32, {128, 768});
                 b.output(b.layernorm(b.add(x, r), b.fill("g", {768}, 1.0), b.fill("b", {768}, 0.0), 1e-12));
                 *g = b.build();
                 (*in)["x"] = randn({128, 768}, 10);
                 (*in)["r"] = randn({128, 768}, 11);
               }});
  c.push_back({"scale_mask_softmax_12x128x128", 0, 4.0 * (2 * 12 * 128 * 128 + 128), [](Graph* g, TensorMap* in) {
                 GraphBuilder b("scale_mask_softmax");
                 ValueId s = b.input("scores", DType::F32, {1, 12, 128, 128});
                 ValueId m = b.input("mask", DType::F32, {1, 1, 1, 128});
                 b.output(b.softmax(b.add(b.mul(s, b.fill("scale", {}, 0.125)), m)));
                 *g = b.build();
                 (*in)["scores"] = randn({1, 12, 128, 128}, 10);
                 (*in)["mask"] = Tensor::zeros(DType::F32, Shape{1, 1, 1, 128});
               }});
  c.push_back({"eltwise_chain5_16M", 0, 4.0 * 2 * (1 << 24), [](Graph* g, TensorMap* in) {
                 GraphBuilder b("eltwise_chain5");
                 ValueId x = b.input("x", DType::F32, {1 << 24});
                 ValueId y = b.mul(x, b.fill("a", {}, 0.5));
                 y = b.add(y, b.fill("b", {}, 0.25));
                 y = b.op(OpKind::Tanh, {y});
                 y = b.mul(y, b.fill("c", {}, 2.0));
                 b.output(b.add(y, b.fill("d", {}, -1.0)));
                 *g = b.build();
                 (*in)["x"] = randn({1 << 24}, 10);
               }});
  for (int64_t t : {16, 64, 128, 384}) {
    // FLOPs of one BERT-base layer at batch 1: 4 projections + 2 FFN GEMMs + attention.
    double flops = 2.0 * double(t) * 768 * 768 * 4 + 2.0 * double(t) * 768 * 3072 * 2 + 2.0 * 2 * 12 * double(t * t) * 64;
    c.push_back({"bert_layer_seq" + std::to_string(t), flops, 4.0 * (2 * double(t) * 768 + 4 * 768 * 768 + 2 * 768 * 3072),
                 [t](Graph* g, TensorMap* in) {
                   *g = load_example("bert_layer");
                   (*in)["x"] = randn({1, t, 768}, 10);
                   (*in)["mask"] = Tensor::zeros(DType::F32, Shape{1, 1, 1, t});
                 }});
  }
  return c;
}

}  // namespace

const std::vector<BenchCase>& bench_cases() {
  static const std::vector<BenchCase> cases = make_cases();  // immutable table, built once
  return cases;
}

}  // namespace fusor::bench
