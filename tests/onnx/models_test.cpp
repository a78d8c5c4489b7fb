// Whole models: the exports of tests/onnx/models (make_models.py: tiny random-weight HF
// BERT, RoBERTa, DistilBERT, GPT-2, LLaMA and torchvision-style ResNet-50, MobileNetV2 and
// MobileNetV3, Whisper's encoder, wav2vec 2.0 and a CRNN (a bidirectional LSTM and a GRU),
// each from PyTorch's TorchScript exporter at opset 17 and from torch.export at opset 18 (20
// for LLaMA, Whisper, wav2vec 2.0 and the CRNN, its default) with external data) are loaded
// and run at every case of MANIFEST.txt — (batch, sequence) = (1, 1), (1, 7), (2, 7) with a
// padded row, (1, 40); images at batch 1 and 2; Whisper at batch 1 and 2; wav2vec 2.0 at 800
// and 1203 samples; the CRNN at 7, 12 and 1 frames — and compared with
// ONNX Runtime 1.32's outputs, on:
//   static, llvm and asmjit (each shape's exact kernels);
//   llvm with tiering (the first run on asmjit, then the LLVM plan after drain());
//   llvm with symbolic_dim "sequence" and specialize off (text models: one set of symbolic
//   kernels for every length and batch of the model's cases).
// A backend this machine lacks is skipped with the reason. Then, for BERT and ResNet-50 (the
// TorchScript exports), llvm at precision bf16 (Note
// [bf16 contractions]; where this CPU has AVX512-BF16): every output within 1e-2 of its
// scale (max|want|) of ONNX Runtime's f32, and for the image models the top-1 class of every
// image equal; the max and mean errors are printed.
//
// Tolerance, per element |got - want| <= 1e-4 * |want| + 1e-5 * max|want|: fusor and ONNX
// Runtime sum the same products in other orders (blocked GEMMs, Winograd convolutions,
// vector-lane row sums) and use other exp/erf/tanh approximations (about 1 ulp). Measured
// here: at most 1e-6 absolute on the text models' O(1) hidden states (3e-7 of max|want|) and
// 2e-7 of max|want| on the images' outputs, so the bound has a margin of ~30x.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ir/error.h"
#include "ir/npy.h"
#include "jit/engine.h"
#include "onnx/load_onnx.h"
#include "tests/support/test_util.h"

using namespace fusor;

namespace {

const std::string kModels = std::string(FUSOR_SOURCE_DIR) + "/tests/onnx/models";

struct Case {
  std::string name;
  TensorMap inputs, outputs;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);) out.push_back(part);
  return out;
}

// The cases MANIFEST.txt lists for model folder `dir`, their arrays read.
std::vector<Case> cases_of(const std::string& dir) {
  std::ifstream in(kModels + "/MANIFEST.txt");
  REQUIRE_MESSAGE(in, "cannot read " << kModels << "/MANIFEST.txt");
  std::vector<Case> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string model, name, inputs, arrow, outputs;
    ls >> model >> name >> inputs >> arrow >> outputs;
    REQUIRE_MESSAGE(arrow == "->", "malformed manifest line: " << line);
    if (model != dir) continue;
    Case c{name, {}, {}};
    const std::string at = kModels + "/" + dir + "/cases/" + name + "/";
    for (const std::string& i : split(inputs, ',')) c.inputs[i] = read_npy(at + i + ".npy");
    for (const std::string& o : split(outputs, ',')) c.outputs[o] = read_npy(at + o + ".npy");
    out.push_back(std::move(c));
  }
  REQUIRE_MESSAGE(!out.empty(), "MANIFEST.txt lists no case of " << dir);
  return out;
}

void check_outputs(const TensorMap& got, const TensorMap& want) {
  for (const auto& row : want) {
    const auto& name = std::get<0>(row);
    const auto& w = std::get<1>(row);
    CAPTURE(name);
    REQUIRE(got.count(name));
    double scale = 0;
    for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(w.at(i)));
    FUSOR_CHECK_CLOSE(got.at(name), w, 1e-4, 1e-5 * scale);
  }
}

// bf16 outputs against f32 ones (the header's bf16 bounds); top1: each row's argmax equal.
// Returns the worst max error and mean error, in units of each output's scale.
std::pair<double, double> check_bf16_outputs(const TensorMap& got, const TensorMap& want, bool top1) {
  double worst = 0, mean = 0;
  for (const auto& row : want) {
    const auto& name = std::get<0>(row);
    const auto& w = std::get<1>(row);
    CAPTURE(name);
    REQUIRE(got.count(name));
    const Tensor& g = got.at(name);
    REQUIRE(g.numel() == w.numel());
    double scale = 0, err = 0, sum = 0;
    for (int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(w.at(i)));
    for (int64_t i = 0; i < w.numel(); ++i) {
      const double e = std::abs(g.at(i) - w.at(i));
      err = std::max(err, e);
      sum += e;
    }
    scale = scale > 0 ? scale : 1;
    CHECK(err / scale <= 1e-2);
    worst = std::max(worst, err / scale);
    mean = std::max(mean, sum / double(std::max<int64_t>(1, w.numel())) / scale);
    if (top1 && w.shape().rank() == 2) {
      const int64_t rows = w.shape()[0], cols = w.shape()[1];
      for (int64_t r = 0; r < rows; ++r) {
        int64_t a = 0, b = 0;
        for (int64_t c = 1; c < cols; ++c) {
          if (g.at(r * cols + c) > g.at(r * cols + a)) a = c;
          if (w.at(r * cols + c) > w.at(r * cols + b)) b = c;
        }
        CAPTURE(r);
        CHECK(a == b);
      }
    }
  }
  return {worst, mean};
}

// An engine with `o`, or null with a "skipped" message when this machine lacks its backend.
std::unique_ptr<Engine> engine_or_skip(EngineOptions o, const char* what) {
  o.num_threads = 2;
  o.disk_cache = false;
  try {
    return std::make_unique<Engine>(o);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::DeviceUnavailable) throw;
    MESSAGE("skipped (" << what << "): " << e.what());
    return nullptr;
  }
}

void run_model(const std::string& dir, bool text, bool bf16 = false) {
  std::vector<std::string> notes;
  OnnxOptions lo;
  lo.warn = [&](const std::string& m) { notes.push_back(m); };
  const Graph g = load_onnx(kModels + "/" + dir + "/model.onnx", lo);
  for (const std::string& n : notes) MESSAGE(dir << ": " << n);
  const std::vector<Case> cases = cases_of(dir);

  struct Config {
    const char* name;
    EngineOptions options;
  };
  std::vector<Config> configs = {{"static", EngineOptions{.backend = BackendKind::Static}},
                                 {"llvm", EngineOptions{.backend = BackendKind::Llvm}},
                                 {"asmjit", EngineOptions{.backend = BackendKind::Asmjit}}};
  EngineOptions tiering{.backend = BackendKind::Llvm};
  tiering.tiering = true;
  configs.push_back({"llvm tiering", tiering});
  if (text) {
    EngineOptions sym{.backend = BackendKind::Llvm};
    sym.symbolic_dim = "sequence";
    sym.specialize = false;
    configs.push_back({"llvm symbolic sequence", sym});
  }
  for (const Config& cfg : configs) {
    const std::string cfg_name = cfg.name;
    CAPTURE(cfg_name);
    std::unique_ptr<Engine> e = engine_or_skip(cfg.options, cfg.name);
    if (!e) continue;
    for (const Case& c : cases) {
      CAPTURE(c.name);
      check_outputs(e->run(g, c.inputs), c.outputs);
      if (cfg.options.tiering) {  // the first run was asmjit's; now LLVM's plan
        e->drain();
        check_outputs(e->run(g, c.inputs), c.outputs);
      }
    }
    const EngineStats s = e->stats();
    if (cfg.options.backend != BackendKind::Static) CHECK(s.kernels_compiled > 0);
    if (!cfg.options.symbolic_dim.empty()) {
      CHECK(s.symbolic_steps > 0);
      CHECK(s.background_swaps == 0);  // specialize off: the symbolic kernels serve every case
    }
  }
  // bf16 (the header): against the f32 outputs of ONNX Runtime.
  if (!bf16) return;
  if (!host_bf16().avx512_bf16) {
    MESSAGE("skipped (llvm bf16): this CPU has no AVX512-BF16");
    return;
  }
  EngineOptions bf{.backend = BackendKind::Llvm};
  bf.precision = Precision::Bf16;
  std::unique_ptr<Engine> e = engine_or_skip(bf, "llvm bf16");
  if (!e) return;
  double worst = 0, mean = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const auto [w, m] = check_bf16_outputs(e->run(g, c.inputs), c.outputs, !text);
    worst = std::max(worst, w);
    mean = std::max(mean, m);
  }
  MESSAGE(dir << " in bf16 against ONNX Runtime's f32: max error " << worst << " of scale, mean " << mean
              << std::string(text ? "" : "; every image's top-1 class equal"));
}

}  // namespace

TEST_SUITE("onnx/models") {
  TEST_CASE("BERT (TorchScript exporter, opset 17)") { run_model("bert_ts", true, true); }
  TEST_CASE("BERT (torch.export, opset 18)") { run_model("bert_dynamo", true); }
  TEST_CASE("RoBERTa (TorchScript exporter, opset 17)") { run_model("roberta_ts", true); }
  TEST_CASE("RoBERTa (torch.export, opset 18)") { run_model("roberta_dynamo", true); }
  TEST_CASE("DistilBERT (TorchScript exporter, opset 17)") { run_model("distilbert_ts", true); }
  TEST_CASE("DistilBERT (torch.export, opset 18)") { run_model("distilbert_dynamo", true); }
  TEST_CASE("GPT-2 (TorchScript exporter, opset 17)") { run_model("gpt2_ts", true); }
  TEST_CASE("GPT-2 (torch.export, opset 18)") { run_model("gpt2_dynamo", true); }
  TEST_CASE("ResNet-50 (TorchScript exporter, opset 17)") { run_model("resnet50_ts", false, true); }
  TEST_CASE("ResNet-50 (torch.export, opset 18)") { run_model("resnet50_dynamo", false); }
  TEST_CASE("MobileNetV2 (TorchScript exporter, opset 17)") { run_model("mobilenet_v2_ts", false); }
  TEST_CASE("MobileNetV2 (torch.export, opset 18)") { run_model("mobilenet_v2_dynamo", false); }
  TEST_CASE("MobileNetV3 (TorchScript exporter, opset 17)") { run_model("mobilenet_v3_ts", false); }
  TEST_CASE("MobileNetV3 (torch.export, opset 18)") { run_model("mobilenet_v3_dynamo", false); }
  TEST_CASE("LLaMA (TorchScript exporter, opset 17)") { run_model("llama_ts", true); }
  TEST_CASE("LLaMA (torch.export, opset 20)") { run_model("llama_dynamo", true); }
  TEST_CASE("Whisper encoder (TorchScript exporter, opset 17)") { run_model("whisper_enc_ts", false); }
  TEST_CASE("Whisper encoder (torch.export, opset 20)") { run_model("whisper_enc_dynamo", false); }
  TEST_CASE("wav2vec 2.0 (TorchScript exporter, opset 17)") { run_model("wav2vec2_ts", false); }
  TEST_CASE("wav2vec 2.0 (torch.export, opset 20)") { run_model("wav2vec2_dynamo", false); }
  TEST_CASE("CRNN: bidirectional LSTM and GRU (TorchScript exporter, opset 17)") { run_model("crnn_ts", false); }
  TEST_CASE("CRNN: bidirectional LSTM and GRU (torch.export, opset 20)") { run_model("crnn_dynamo", false); }

  TEST_CASE("every model folder has a case in the manifest and a test above") {
    // A model added by make_models.py without a test here fails this list.
    const std::vector<std::string> tested = {"bert_ts",         "bert_dynamo",        "roberta_ts",
                                             "roberta_dynamo",  "distilbert_ts",      "distilbert_dynamo",
                                             "gpt2_ts",         "gpt2_dynamo",        "resnet50_ts",
                                             "resnet50_dynamo", "mobilenet_v2_ts",    "mobilenet_v2_dynamo",
                                             "mobilenet_v3_ts", "mobilenet_v3_dynamo", "llama_ts",
                                             "llama_dynamo",    "whisper_enc_ts",     "whisper_enc_dynamo",
                                             "wav2vec2_ts",     "wav2vec2_dynamo",    "crnn_ts",
                                             "crnn_dynamo"};
    std::ifstream in(kModels + "/MANIFEST.txt");
    REQUIRE(in);
    std::vector<std::string> listed;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const std::string dir = line.substr(0, line.find(' '));
      if (std::find(listed.begin(), listed.end(), dir) == listed.end()) listed.push_back(dir);
    }
    std::vector<std::string> a = tested, b = listed;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
  }
}
