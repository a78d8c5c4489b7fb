// The `fusor` tool on ONNX models: run, explain, warmup and ops take MODEL.onnx as they take
// a text graph, with --dim for named and generated dims, --input from .npy or .pb files, and
// valid random integer inputs; bad models exit 3 (4 when unsupported) naming the file.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "ir/npy.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

using namespace fusor;
using namespace fusor::test;

namespace {

CommandResult fusor_cli(const std::string& args) {
  return run_command(std::string(FUSOR_BINARY_DIR) + "/tools/fusor/fusor " + args);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// logits = Gather(table, input_ids) @ w, input_ids i64[batch, seq]; and a second input whose
// dim has no name.
OnnxBuilder token_model() {
  OnnxBuilder b(18);
  b.input("input_ids", kInt64, {"batch", "seq"});
  b.input("bias", kFloat, {""});
  std::vector<float> table(4 * 3);
  for (size_t i = 0; i < table.size(); ++i) table[i] = float(i);
  b.initializer("table", {4, 3}, table);
  b.initializer("w", {3, 2}, {1, 0, 0, 1, 1, 1});
  b.node("Gather", {"table", "input_ids"}, {"emb"});
  b.node("MatMul", {"emb", "w"}, {"mm"});
  b.node("Add", {"mm", "bias"}, {"logits"});
  b.output("logits");
  return b;
}

}  // namespace

TEST_SUITE("onnx/fusor tool") {
  TEST_CASE("run MODEL.onnx with named and generated dims") {
    TempDir dir("onnx-cli-run");
    token_model().save(dir.file("model.onnx"));
    CommandResult r = fusor_cli("run " + dir.file("model.onnx") + " --dim batch=2 --dim seq=5 --dim bias_d0=2");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "logits"));
    CHECK(has(r.out, "f32[2, 5, 2]"));
    CHECK(has(r.out, "warning"));
    CHECK(has(r.out, "bias_d0"));
    // Without a size for the generated dim, the error says which dim to bind.
    r = fusor_cli("run " + dir.file("model.onnx") + " --dim batch=2 --dim seq=5");
    CHECK(r.code == 3);
    CHECK(has(r.out, "bias_d0"));
  }

  TEST_CASE("random integer inputs are small non-negative values: valid token ids") {
    TempDir dir("onnx-cli-ints");
    token_model().save(dir.file("model.onnx"));
    // The table has 4 rows: ids from [0, 4) are valid, and so are the default [0, 2).
    for (const char* extra : {"", " --int-high 4", " --seed 3 --int-high 4"}) {
      CommandResult r =
          fusor_cli("run " + dir.file("model.onnx") + " --dim batch=3 --dim seq=7 --dim bias_d0=2" + extra);
      INFO(extra << ": " << r.out);
      CHECK(r.code == 0);
    }
    CHECK(fusor_cli("run " + dir.file("model.onnx") + " --dim batch=1 --dim seq=1 --dim bias_d0=2 --int-high 0").code == 2);
  }

  TEST_CASE("--input reads .npy and ONNX .pb tensors") {
    TempDir dir("onnx-cli-input");
    token_model().save(dir.file("model.onnx"));
    write_npy(dir.file("ids.npy"), make(DType::I64, {1, 2}, {3, 1}));
    std::ofstream(dir.file("bias.pb"), std::ios::binary) << float_tensor("bias", {2}, {100, 200}).SerializeAsString();
    CommandResult r = fusor_cli("run " + dir.file("model.onnx") + " --input input_ids=" + dir.file("ids.npy") +
                                " --input bias=" + dir.file("bias.pb") + " --save " + dir.file("out"));
    INFO(r.out);
    REQUIRE(r.code == 0);
    Tensor logits = read_npy(dir.file("out/logits.npy"));
    // row 3 of the table is [9, 10, 11]: @ w = [9 + 11, 10 + 11] = [20, 21]; row 1: [3 + 5, 4 + 5]
    REQUIRE(logits.shape() == Shape{1, 2, 2});
    CHECK(logits.at(0) == 120);
    CHECK(logits.at(1) == 221);
    CHECK(logits.at(2) == 108);
    CHECK(logits.at(3) == 209);
  }

  TEST_CASE("explain and warmup take ONNX models") {
    TempDir dir("onnx-cli-explain");
    token_model().save(dir.file("model.onnx"));
    CommandResult r = fusor_cli("explain " + dir.file("model.onnx") + " --dim batch=1 --dim seq=4 --dim bias_d0=2");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "group"));
    r = fusor_cli("warmup " + dir.file("model.onnx") + " --dim batch=1 --dim seq=2..3 --dim bias_d0=2 --jobs 1 --quiet" +
                  " --cache-dir " + dir.file("store"));
    INFO(r.out);
    if (has(r.out, "llvm backend is not available") || has(r.out, "DeviceUnavailable")) {
      MESSAGE("skipped: " << r.out);
      return;
    }
    CHECK(r.code == 0);
    CHECK(has(r.out, "2 shapes"));
  }

  TEST_CASE("a model with a ModelProto's first byte is found whatever its name") {
    TempDir dir("onnx-cli-detect");
    token_model().save(dir.file("model.bin"));
    CommandResult r = fusor_cli("run " + dir.file("model.bin") + " --dim batch=1 --dim seq=1 --dim bias_d0=2");
    INFO(r.out);
    CHECK(r.code == 0);
  }

  TEST_CASE("bad and unsupported models exit 3 and 4 naming the file") {
    TempDir dir("onnx-cli-bad");
    std::ofstream(dir.file("garbage.onnx")) << "not a model";
    CommandResult r = fusor_cli("run " + dir.file("garbage.onnx"));
    CHECK(r.code == 3);
    CHECK(has(r.out, dir.file("garbage.onnx")));
    CHECK(has(r.out, "ParseError"));
    OnnxBuilder b = token_model();
    b.node("NonZero", {"logits"}, {"nz"}, "nonzero");
    b.graph().mutable_output(0)->set_name("nz");
    b.save(dir.file("unsupported.onnx"));
    r = fusor_cli("run " + dir.file("unsupported.onnx"));
    CHECK(r.code == 4);
    CHECK(has(r.out, "NonZero"));
    r = fusor_cli("ops " + dir.file("unsupported.onnx"));
    CHECK(r.code == 4);
    CHECK(has(r.out, "NonZero"));
    CHECK(has(r.out, "NOT SUPPORTED"));
  }

  TEST_CASE("ops lists the operators fusor loads") {
    CommandResult r = fusor_cli("ops");
    CHECK(r.code == 0);
    CHECK(has(r.out, "MatMul"));
    CHECK(has(r.out, "Identity"));
    r = fusor_cli("ops --markdown");
    CHECK(r.code == 0);
    CHECK(has(r.out, "| ONNX operator | opsets |"));
  }

  // The README's list of supported operators is generated from the op list itself: this
  // test fails when ir/ops.def (or the loader's opsets) change without the README.
  TEST_CASE("the README's operator list is fusor ops --markdown") {
    std::ifstream in(std::string(FUSOR_SOURCE_DIR) + "/README.md");
    std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::string begin = "<!-- fusor ops --markdown -->\n", end = "<!-- end of fusor ops -->";
    size_t b = readme.find(begin), e = readme.find(end);
    REQUIRE_MESSAGE(b != std::string::npos, "README.md has no line " << begin);
    REQUIRE(e != std::string::npos);
    std::string listed = readme.substr(b + begin.size(), e - b - begin.size());
    CommandResult r = fusor_cli("ops --markdown");
    REQUIRE(r.code == 0);
    INFO("replace the README's table with `build/tools/fusor/fusor ops --markdown`:\n" << r.out);
    CHECK(listed == r.out);
  }
}
