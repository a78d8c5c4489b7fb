// The graphs of real PyTorch exports (examples/graphs/*_export_*: BERT and GPT-2 from both
// exporters, MobileNetV2/V3) run fused on static, llvm and asmjit and must match the
// unfused static run: integer input_ids, attention masks with padding, batch 1 and 2, a
// length of 1, an odd one and a long one. And they fuse as the hand-written layers do:
// every traced shape/mask computation folds, and each encoder layer is at most 8 kernels.
//
// Tolerance 1e-4 relative and absolute: the fused graphs reassociate (merged GEMMs,
// LayerNorm and softmax as single kernels, scales moved behind the product) over K <= 128
// with O(1) activations.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tests/support/pass_util.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

std::string load(const std::string& name) {
  std::ifstream f(std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

const char* const kTextModels[] = {"bert_export_ts", "bert_export_dynamo", "gpt2_export_ts", "gpt2_export_dynamo"};

TensorMap text_inputs(int64_t b, int64_t t, uint64_t seed) {
  Tensor ids = test::uniform({b, t}, seed, 0, 100, DType::I64);
  Tensor mask = Tensor::empty(DType::I64, {b, t});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < t; ++j) mask.set(i * t + j, i == 0 || j < (t + 1) / 2 ? 1 : 0);  // row 1 padded
  return {{"input_ids", ids}, {"attention_mask", mask}};
}

std::vector<std::unique_ptr<Engine>> fused_engines() {
  std::vector<std::unique_ptr<Engine>> out;
  out.push_back(std::make_unique<Engine>(EngineOptions{.num_threads = 2}));
  for (BackendKind k : {BackendKind::Llvm, BackendKind::Asmjit}) {
    try {
      out.push_back(std::make_unique<Engine>(EngineOptions{.backend = k, .num_threads = 2, .disk_cache = false}));
    } catch (const Error& e) {
      MESSAGE("skipped (" << e.what() << ")");
    }
  }
  return out;
}

void check(const Graph& g, const TensorMap& in) {
  Engine reference(EngineOptions{.num_threads = 2, .fuse = false});
  TensorMap want = reference.run(g, in);
  int engine = 0;
  for (auto& e : fused_engines()) {
    INFO("engine " << engine++ << " (static, llvm, asmjit)");
    TensorMap got = e->run(g, in);
    for (const auto& row : want) {
      const auto& name = std::get<0>(row);
      const auto& t = std::get<1>(row);
      INFO("output " << name);
      FUSOR_CHECK_CLOSE(got.at(name), t, 1e-4, 1e-4);
    }
  }
}

// Kernels (non-view groups) of the fused graph.
int kernels(const std::string& text, const DimBindings& dims) { return test::fuse_text(text, dims).kernels_after(); }

}  // namespace

TEST_SUITE("jit/export_graphs") {
  TEST_CASE("BERT and GPT-2 exports fused match the unfused static run") {
    for (const char* name : kTextModels) {
      Graph g = parse_graph(load(name));
      for (const auto& row : {std::pair<int64_t, int64_t>{1, 1}, {2, 7}, {1, 64}}) {
        const auto& b = std::get<0>(row);
        const auto& t = std::get<1>(row);
        INFO(std::string(name) << " B=" << b << " T=" << t);
        check(g, text_inputs(b, t, uint64_t(b * 100 + t)));
      }
    }
  }

  TEST_CASE("MobileNet exports fused match the unfused static run") {
    check(parse_graph(load("mobilenet_v2_export_ts")), {{"x", test::randn({2, 3, 64, 64}, 1)}});
    check(parse_graph(load("mobilenet_v3_export_dynamo")), {{"x", test::randn({1, 3, 64, 64}, 2)}});
  }

  TEST_CASE("each encoder layer of the exports is at most 8 kernels and the masks fold") {
    for (const char* name : kTextModels) {
      const std::string text = load(name);
      FusedGraph f = test::fuse_text(text, {{"B", 1}, {"T", 16}});
      int attention = 0, layer_norms = 0;
      for (const FusionGroup& grp : f.groups) {
        attention += grp.kind == GroupKind::Attention;
        layer_norms += grp.pattern.find("layernormalization") != std::string::npos;
      }
      INFO(std::string(name) << ": " << f.kernels_after() << " kernels");
      CHECK(attention == 2);  // every layer's attention is one kernel, mask and NaN guard inside
      // Every LayerNorm is one kernel: two per layer, and the embeddings' (BERT) or the
      // final one (GPT-2).
      CHECK(layer_norms == 5);
      CHECK(f.folded_nodes > 30);
      // The model outside its layers (embedding gathers, add, LayerNorm, the padding mask)
      // takes at most 8 kernels; each layer at most 8.
      CHECK(f.kernels_after() <= 8 + 2 * 8);
    }
    // torch.export, 7 per layer: GPT-2's two LayerNorms, QKV, attention, projection +
    // residual, FFN up + GELU, FFN down + residual; BERT's as the hand-written layer.
    CHECK(kernels(load("gpt2_export_dynamo"), {{"B", 1}, {"T", 16}}) <= 8 + 2 * 7);
    CHECK(kernels(load("bert_export_dynamo"), {{"B", 1}, {"T", 16}}) <= 6 + 2 * 7);
  }
}
