#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/run_command.h"

namespace {

using Result = fusor::test::CommandResult;

// Runs the fusor tool with arguments (shell-quoted by the caller where needed).
Result run_fusor(const std::string& args) {
  return fusor::test::run_command(std::string(FUSOR_BINARY_DIR) + "/tools/fusor/fusor " + args);
}

std::string example(const char* name) { return std::string(FUSOR_SOURCE_DIR) + "/examples/graphs/" + name; }

std::string temp_file(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "fusor_cli_test";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_SUITE("tools/fusor") {
  TEST_CASE("help and version") {
    Result r = run_fusor("--help");
    CHECK(r.code == 0);
    CHECK(has(r.out, "run"));
    r = run_fusor("run --help");
    CHECK(r.code == 0);
    CHECK(has(r.out, "--dim NAME=SIZE"));
    CHECK(run_fusor("--version").code == 0);
    CHECK(run_fusor("").code == 2);
  }

  TEST_CASE("bad usage exits 2") {
    CHECK(run_fusor("frobnicate").code == 2);
    CHECK(run_fusor("run").code == 2);
    Result r = run_fusor("run " + example("bert_layer") + " --bogus");
    CHECK(r.code == 2);
    CHECK(has(r.out, "unknown option --bogus"));
    r = run_fusor("run " + example("bert_layer") + " --dim T");
    CHECK(r.code == 2);
    r = run_fusor("run " + example("bert_layer") + " --dim T=abc");
    CHECK(r.code == 2);
    CHECK(run_fusor("run " + example("bert_layer") + " --repeat 0").code == 2);
  }

  TEST_CASE("bad input exits 3 with the reason") {
    Result r = run_fusor("run /nonexistent/graph");
    CHECK(r.code == 3);
    CHECK(has(r.out, "/nonexistent/graph"));
    r = run_fusor("run " + example("bert_layer") + " --dim B=1");
    CHECK(r.code == 3);
    CHECK(has(r.out, "'T'"));
    std::string bad = temp_file("bad_graph", "graph g\ninput x: f32[4]\ny = Relu(x\noutput y\n");
    r = run_fusor("run " + bad);
    CHECK(r.code == 3);
    CHECK(has(r.out, "ParseError"));
    CHECK(has(r.out, ":3:"));
    CHECK(run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=4 --backend tpu").code == 3);
  }

  TEST_CASE("runs the BERT layer") {
    Result r = run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=8");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "f32[1, 8, 768]"));
    r = run_fusor("run " + example("bert_layer") + " --dim B=2 --dim T=5 --json --threads 2");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"outputs\": [{\"name\": \"y\", \"dtype\": \"f32\", \"shape\": [2, 5, 768]"));
    CHECK(has(r.out, "\"nonfinite\": 0"));
  }

  TEST_CASE("runs the BERT layer on the llvm backend with the same checksum") {
    Result a = run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=9 --json --no-fuse");
    Result b = run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=9 --json --backend llvm");
    INFO(a.out << "\n" << b.out);
    CHECK(a.code == 0);
    if (b.code == 4) {  // this build has no LLVM: the tool says so and exits "unavailable"
      CHECK(has(b.out, "DeviceUnavailable"));
      return;
    }
    CHECK(b.code == 0);
    auto abs_sum = [](const std::string& out) { return std::stod(out.substr(out.find("\"abs_sum\": ") + 11)); };
    CHECK(abs_sum(b.out) == doctest::Approx(abs_sum(a.out)).epsilon(1e-5));
  }

  TEST_CASE("--verify checks every fused kernel and reports each verdict, as text and JSON") {
    Result r = run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=9 --backend asmjit --verify warn --stats");
    INFO(r.out);
    if (r.code == 4) return;  // no asmjit in this build
    CHECK(r.code == 0);
    // Nine: asmjit runs the attention group as its three parts (Note [Declined attention]).
    CHECK(has(r.out, "verify (warn): 9 fused groups checked against their ops unfused"));
    CHECK(has(r.out, "asmjit contraction ff1_proj_ff1_ff1_act: passed, error "));
    CHECK(has(r.out, "[matmul+add+gelu: MatMul, Add, Gelu -> ff1_act: f32[1, 9, 3072]]"));
    CHECK(has(r.out, "[matmul+mul+add: MatMul, Mul, Add -> masked: f32[1, 12, 9, 9]]"));
    CHECK(has(r.out, "  verify: 9 groups checked, 0 failed, 0 unfused; worst error "));
    r = run_fusor("run " + example("resnet_bottleneck") + " --dim N=1 --dim H=7 --dim W=7 --backend asmjit --json --verify strict");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"verify\": [{\"kernel\": \"asmjit contraction conv1_relu1\", \"pattern\": \"conv+relu\", "
                     "\"ops\": [\"Conv\", \"Relu\"], \"outputs\": \"relu1: f32[1, 64, 7, 7]\", \"passed\": true"));
    r = run_fusor("run " + example("bert_layer") + " --verify loud");
    CHECK(r.code == 2);
    CHECK(has(r.out, "--verify loud: expected warn, strict or fallback"));
    r = run_fusor("explain " + example("resnet_bottleneck") +
                  " --dim N=1 --dim H=7 --dim W=7 --backend asmjit --verify warn --json --no-disk-cache");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"groups\": ["));
    CHECK(has(r.out, "\"verify\": [{\"kernel\": \"asmjit contraction conv1_relu1\""));
    CHECK(run_fusor("explain " + example("resnet_bottleneck") + " --dim N=1 --dim H=7 --dim W=7 --backend asmjit").code == 2);
  }

  TEST_CASE("--precision sets the engine's precision, explain says what it gives, bad names are usage errors") {
    Result r = run_fusor("explain " + example("bert_layer") + " --dim B=1 --dim T=9 --precision bf16 --backend asmjit");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "precision fp32 (asked bf16): backend asmjit computes in f32 only"));
    r = run_fusor("explain " + example("bert_layer") + " --dim B=1 --dim T=9 --precision auto --json --backend static");
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"precision\": \"precision fp32 (asked auto): backend static computes in f32 only\""));
    // A run in bf16 (f32 where llvm or AVX512-BF16 is missing) has the f32 run's output type.
    r = run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=9 --backend llvm --precision bf16 --no-disk-cache");
    if (r.code != 4) {
      CHECK(r.code == 0);
      CHECK(has(r.out, "output y            f32[1, 9, 768]"));
    }
    for (const char* cmd : {"run", "warmup", "explain"}) {
      r = run_fusor(std::string(cmd) + " " + example("bert_layer") + " --dim B=1 --dim T=9 --precision half");
      CAPTURE(cmd);
      CHECK(r.code == 2);
      CHECK(has(r.out, "--precision half: expected fp32, bf16 or auto"));
    }
  }

  TEST_CASE("--symbolic-dim runs a new length on symbolic kernels with the same checksum") {
    Result a = run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=11 --json --no-fuse");
    Result b = run_fusor("run " + example("bert_layer") +
                         " --dim B=1 --dim T=11 --json --backend llvm --symbolic-dim T --no-disk-cache --stats");
    INFO(a.out << "\n" << b.out);
    CHECK(a.code == 0);
    if (b.code == 4) {
      CHECK(has(b.out, "DeviceUnavailable"));
      return;
    }
    CHECK(b.code == 0);
    CHECK(has(b.out, "\"symbolic_steps\": 7"));  // 4 GEMMs, 2 LayerNorms and the attention
    auto abs_sum = [](const std::string& out) { return std::stod(out.substr(out.find("\"abs_sum\": ") + 11)); };
    CHECK(abs_sum(b.out) == doctest::Approx(abs_sum(a.out)).epsilon(1e-5));
    CHECK(run_fusor("run " + example("bert_layer") + " --dim B=1 --dim T=3 --symbolic-dim").code == 2);
  }

  TEST_CASE("runs the ResNet bottleneck") {
    Result r = run_fusor("run " + example("resnet_bottleneck") + " --dim N=1 --dim H=9 --dim W=7 --repeat 2");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "f32[1, 256, 9, 7]"));
  }

  TEST_CASE("inputs from npy and outputs saved") {
    auto dir = std::filesystem::temp_directory_path() / "fusor_cli_test" / "saved";
    std::filesystem::remove_all(dir);
    std::string g = temp_file("neg_graph", "graph neg\ninput x: f32[N]\ny = Neg(x)\noutput y\n");
    Result r = run_fusor("run " + g + " --dim N=6 --save " + dir.string());
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(std::filesystem::exists(dir / "y.npy"));
    // Feed the saved output back as an input: its shape binds N.
    r = run_fusor("run " + g + " --input x=" + (dir / "y.npy").string() + " --json");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"N\": 6"));
    r = run_fusor("run " + g + " --input nope=" + (dir / "y.npy").string());
    CHECK(r.code == 3);
  }

  TEST_CASE("--save into a folder that cannot be made and --input from a FIFO are Io errors (exit 3)") {
    // (issue 20: the first was an internal error, exit 1; the second blocked forever)
    std::string g = temp_file("neg_graph2", "graph neg\ninput x: f32[N]\ny = Neg(x)\noutput y\n");
    const std::string file = temp_file("a_regular_file", "not a folder");
    Result r = run_fusor("run " + g + " --dim N=3 --save " + file + "/out");
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(has(r.out, "Io"));
    CHECK(has(r.out, "--save"));
    const auto fifo = std::filesystem::temp_directory_path() / "fusor_cli_test" / "x.fifo";
    std::filesystem::remove(fifo);
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    r = run_fusor("run " + g + " --input x=" + fifo.string());
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(has(r.out, "not a regular file"));
    r = run_fusor("run " + fifo.string() + " --dim N=3");  // a graph file too
    INFO(r.out);
    CHECK(r.code == 3);
    CHECK(has(r.out, "not a regular file"));
    std::filesystem::remove(fifo);
  }
}

TEST_SUITE("tools/fusor") {
  TEST_CASE("explain reports groups as text and JSON") {
    Result r = run_fusor("explain " + example("resnet_bottleneck") + " --dim N=1 --dim H=56 --dim W=56");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "10 unfused -> 3 fused"));
    CHECK(has(r.out, "contraction  conv+add+relu"));
    r = run_fusor("explain " + example("bert_layer") + " --dim B=1 --dim T=128 --json");
    INFO(r.out);
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"groups\": [{\"kind\": \"contraction\", \"pattern\": \"matmul+add\", \"ops\": ["));
    CHECK(has(r.out, "\"kernels_before\": 30"));
    CHECK(has(r.out, "\"kernels_after\": 7"));
    r = run_fusor("explain " + example("bert_layer") + " --dim B=1 --dim T=8 --no-fuse --json");
    CHECK(r.code == 0);
    CHECK(has(r.out, "\"kernels_after\": 22"));  // 30 ops of which 8 are views
    CHECK(run_fusor("explain " + example("bert_layer") + " --dim B=1").code == 3);
    CHECK(run_fusor("explain").code == 2);
    CHECK(run_fusor("explain --help").code == 0);
  }
}
