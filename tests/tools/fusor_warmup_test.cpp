// Tests of `fusor warmup` (tools/fusor/cmd_warmup.cpp, tools/fusor/shape_list.cpp): shape
// ranges, lists and histograms, progress lines, the JSON summary, a second warmup loading
// everything from the store, and the exit code and message of each user error. Every test
// keeps its store in a fresh temp folder (--cache-dir) and warms a tiny graph.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"

namespace {

using fusor::test::CommandResult;
using fusor::test::TempDir;

// A matmul + bias + ReLU over [B, T, 16]: one small JIT kernel per shape.
const char* const kTinyGraph =
    "graph tiny\n"
    "input x: f32[B, T, 16]\n"
    "const w: f32[16, 8] = randn(seed=1, std=0.1)\n"
    "const b: f32[8] = fill(0.5)\n"
    "h = MatMul(x, w)\n"
    "y = Add(h, b)\n"
    "z = Relu(y)\n"
    "output z\n";

CommandResult fusor_tool(const std::string& args) {
  return fusor::test::run_command(std::string(FUSOR_BINARY_DIR) + "/tools/fusor/fusor " + args);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// The unsigned integer after "key": in a JSON object (-1 when absent).
long long json_int(const std::string& out, const std::string& key) {
  auto at = out.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::stoll(out.substr(at + key.size() + 4));
}

// The progress lines, in order: "warmup: i/n LABEL (...)" -> "i/n LABEL".
std::vector<std::string> progress(const std::string& out) {
  std::vector<std::string> lines;
  size_t at = 0;
  while ((at = out.find("warmup: ", at)) != std::string::npos) {
    size_t end = out.find('\n', at);
    std::string line = out.substr(at + 8, end - at - 8);
    at = end;
    if (line.find('/') == std::string::npos || line.find(" (") == std::string::npos) continue;
    if (line.find(" shape") != std::string::npos) continue;  // the header and the summary
    lines.push_back(line.substr(0, line.find(" (")));
  }
  return lines;
}

// True when this build has the llvm backend; otherwise says why the test is skipped.
bool llvm_available(const CommandResult& r) {
  if (r.code != 4) return true;
  CHECK(has(r.out, "DeviceUnavailable"));
  MESSAGE("skipped: this build has no llvm backend (" << r.out << ")");
  return false;
}

}  // namespace

TEST_SUITE("tools/fusor warmup") {
  TEST_CASE("warmup is listed and has help") {
    CommandResult r = fusor_tool("--help");
    CHECK(has(r.out, "warmup"));
    r = fusor_tool("warmup --help");
    CHECK(r.code == 0);
    CHECK(has(r.out, "--dim NAME=SPEC"));
    CHECK(has(r.out, "--shapes FILE"));
    CHECK(has(r.out, "--jobs N"));
  }

  TEST_CASE("a range warms every shape and a second warmup compiles nothing") {
    TempDir dir("warmup-range");
    std::string graph = write(dir, "tiny", kTinyGraph), store = dir.file("store");
    const std::string cmd = "warmup " + graph + " --dim B=1 --dim T=1..6 --jobs 2 --json --cache-dir " + store;
    CommandResult first = fusor_tool(cmd);
    INFO(first.out);
    if (!llvm_available(first)) return;
    REQUIRE(first.code == 0);
    CHECK(json_int(first.out, "shapes") == 6);
    CHECK(json_int(first.out, "jobs") == 2);
    const long long compiled = json_int(first.out, "kernels_compiled");
    CHECK(compiled >= 6);  // at least one kernel per T
    CHECK(json_int(first.out, "disk_hits") == 0);
    CHECK(json_int(first.out, "store_entries") == compiled);
    CHECK(json_int(first.out, "store_bytes") > 0);
    CHECK(has(first.out, "\"store_dir\": \"" + store + "\""));
    CHECK(has(first.out, "\"seconds\": "));
    CHECK(progress(first.out).size() == 6);

    CommandResult second = fusor_tool(cmd);
    INFO(second.out);
    REQUIRE(second.code == 0);
    CHECK(json_int(second.out, "kernels_compiled") == 0);
    CHECK(json_int(second.out, "disk_hits") == compiled);
    CHECK(json_int(second.out, "store_entries") == compiled);

    // The text summary says the same in words.
    CommandResult text = fusor_tool("warmup " + graph + " --dim B=1 --dim T=1..6 --cache-dir " + store);
    INFO(text.out);
    CHECK(text.code == 0);
    CHECK(has(text.out, "warmup: 6 shapes of tiny on llvm"));
    CHECK(has(text.out, "kernels: 0 compiled"));
    CHECK(has(text.out, "store: " + store + " holds " + std::to_string(compiled) + " kernels"));
    CHECK(has(text.out, "(0 new kernels, 1 from the store)"));
  }

  TEST_CASE("--tune warms tuned kernels one shape at a time; a tuned run then compiles nothing, an untuned one does") {
    TempDir dir("warmup-tune");
    std::string graph = write(dir, "tiny", kTinyGraph), store = dir.file("store");
    CommandResult first = fusor_tool("warmup " + graph + " --dim B=1 --dim T=40,70 --tune --json --cache-dir " + store);
    INFO(first.out);
    if (!llvm_available(first)) return;
    REQUIRE(first.code == 0);
    CHECK(json_int(first.out, "jobs") == 1);  // tuning times kernels: no shapes side by side
    CHECK(json_int(first.out, "kernels_compiled") == 2);
    // T=70 once more with and without --tune: (compiled, loaded from the store).
    auto run_t70 = [&](const std::string& tune, long long compiles, long long disk_hits) {
      CommandResult r = fusor_tool("run " + graph + " --dim B=1 --dim T=70 --backend llvm --threads 1 --stats --json " +
                                   tune + " --cache-dir " + store);
      INFO(r.out);
      REQUIRE(r.code == 0);
      CHECK(json_int(r.out, "compiles") == compiles);
      CHECK(json_int(r.out, "disk_hits") == disk_hits);
      return r;
    };
    CommandResult run = run_t70("--tune", 0, 1);    // the tuned kernel warmup stored
    CommandResult plain = run_t70("", 1, 0);        // the rules' kernel has its own key
    auto checksum = [](const std::string& out) { return out.substr(out.find("\"sum\": "), 40); };
    CHECK(checksum(plain.out) == checksum(run.out));  // any tiling computes the same floats
    CommandResult bad = fusor_tool("warmup " + graph + " --dim B=1 --dim T=4 --tune --backend asmjit --cache-dir " + store);
    CHECK(bad.code == 2);
    CHECK(has(bad.out, "--tune is for --backend llvm"));
  }

  TEST_CASE("ranges and lists expand to their cartesian product in order") {
    TempDir dir("warmup-product");
    std::string graph = write(dir, "tiny", kTinyGraph);
    CommandResult r = fusor_tool("warmup " + graph + " --dim B=1..2 --dim T=3,1..2 --dim T=2,5 --jobs 1 --cache-dir " +
                            dir.file("store"));
    INFO(r.out);
    if (!llvm_available(r)) return;
    REQUIRE(r.code == 0);
    // T's list merges both flags in order, dropping the repeated 2; B is outermost.
    std::vector<std::string> want{"1/8 B=1 T=3", "2/8 B=1 T=1", "3/8 B=1 T=2", "4/8 B=1 T=5",
                                  "5/8 B=2 T=3", "6/8 B=2 T=1", "7/8 B=2 T=2", "8/8 B=2 T=5"};
    CHECK(progress(r.out) == want);
    // A dim that does not vary is left out of the progress lines.
    r = fusor_tool("warmup " + graph + " --dim B=1 --dim T=4..5 --jobs 1 --cache-dir " + dir.file("store"));
    CHECK(progress(r.out) == std::vector<std::string>{"1/2 T=4", "2/2 T=5"});
  }

  TEST_CASE("a histogram file is warmed most frequent shape first") {
    TempDir dir("warmup-histogram");
    std::string graph = write(dir, "tiny", kTinyGraph);
    std::string shapes = write(dir, "shapes.txt",
                               "# observed shapes\n"
                               "5 T=8\n"
                               "\n"
                               "100 T=3   # the most common\n"
                               "5 T=2\n"
                               "7 T=8 B=1\n"  // the same shape as line 2 once B=1 is filled in: counts add
                               "5 T=4 B=2\n");
    CommandResult r = fusor_tool("warmup " + graph + " --shapes " + shapes + " --dim B=1 --jobs 1 --json --cache-dir " +
                            dir.file("store"));
    INFO(r.out);
    if (!llvm_available(r)) return;
    REQUIRE(r.code == 0);
    CHECK(json_int(r.out, "shapes") == 4);
    std::vector<std::string> want{"1/4 B=1 T=3", "2/4 B=1 T=8", "3/4 B=1 T=2", "4/4 B=2 T=4"};
    CHECK(progress(r.out) == want);
  }

  TEST_CASE("bad usage exits 2 and says what to fix") {
    TempDir dir("warmup-usage");
    std::string graph = write(dir, "tiny", kTinyGraph), store = " --cache-dir " + dir.file("store");
    struct Case {
      std::string args, says;
    };
    std::vector<Case> cases{
        {"warmup", "expected exactly one GRAPH file"},
        {"warmup " + graph, "no shapes: give --dim"},
        {"warmup " + graph + " --dim B=1 --dim T=6..1", "the range 6..1 is empty (LO > HI); write 1..6"},
        {"warmup " + graph + " --dim B=1 --dim T=x", "'x' is not a size"},
        {"warmup " + graph + " --dim B=1 --dim T=1..", "'1..' is not a range"},
        {"warmup " + graph + " --dim B=1 --dim T", "--dim wants NAME=VALUE"},
        {"warmup " + graph + " --dim B=1 --dim T=-1", "sizes must be >= 0"},
        {"warmup " + graph + " --dim B=1 --dim T=1,", "an empty item"},
        {"warmup " + graph + " --dim B=1 --dim T=1..100000000", "more than 1000000 sizes"},
        {"warmup " + graph + " --dim B=1 --dim T=1 --bogus", "unknown option --bogus"},
        {"warmup " + graph + " --dim B=1 --dim T=1 --jobs 0", "--jobs must be in"},
        {"warmup " + graph + " --dim B=1 --dim T=1 --backend static", "Use --backend llvm (the default)"},
        {"warmup " + graph + " --dim B=1..2 --shapes x", "--dim B must be one size"},
    };
    for (const Case& c : cases) {
      CommandResult r = fusor_tool(c.args + store);
      INFO(c.args << "\n" << r.out);
      CHECK(r.code == 2);
      CHECK(has(r.out, c.says));
      CHECK(has(r.out, "usage: fusor warmup"));
    }
  }

  TEST_CASE("bad input exits 3 and says what to fix") {
    TempDir dir("warmup-input");
    std::string graph = write(dir, "tiny", kTinyGraph), store = " --cache-dir " + dir.file("store");
    std::string bad_line = write(dir, "bad_line.txt", "5 T=8\nmany T=3\n");
    std::string bad_dim = write(dir, "bad_dim.txt", "5 T=8\n3 T=3 Q=4\n");
    std::string empty = write(dir, "empty.txt", "# nothing observed yet\n");
    struct Case {
      std::string args, says;
    };
    std::vector<Case> cases{
        {"warmup " + dir.file("missing_graph") + " --dim T=1", "missing_graph"},
        {"warmup " + write(dir, "broken", "graph g\ninput x: f32[T]\ny = Relu(x\noutput y\n") + " --dim T=1",
         "ParseError"},
        {"warmup " + graph + " --dim T=1..3", "no size for dimension 'B' of graph 'tiny' (its inputs use B, T): add --dim B="},
        {"warmup " + graph + " --dim B=1 --dim T=1 --dim X=2", "--dim X: graph 'tiny' has no dimension named 'X'"},
        {"warmup " + graph + " --shapes " + dir.file("nope.txt"), "nope.txt: cannot read the file"},
        {"warmup " + graph + " --dim B=1 --shapes " + bad_line, "bad_line.txt:2: a line starts with a positive count"},
        {"warmup " + graph + " --dim B=1 --shapes " + bad_dim, "bad_dim.txt:2: graph 'tiny' has no dimension named 'Q'"},
        {"warmup " + graph + " --shapes " + bad_dim, "bad_dim.txt:1: no size for dimension 'B'"},
        {"warmup " + graph + " --dim B=1 --shapes " + empty, "the file holds no shape"},
        {"warmup " + graph + " --dim B=1 --dim T=1 --backend tpu", "unknown backend 'tpu'"},
        // A range ending at INT64_MAX is two sizes, not an endless loop (issue 20); both
        // are refused as too many elements.
        {"warmup " + graph + " --dim B=1 --dim T=9223372036854775806..9223372036854775807", "element count overflows"},
    };
    for (const Case& c : cases) {
      CommandResult r = fusor_tool(c.args + store);
      INFO(c.args << "\n" << r.out);
      CHECK(r.code == 3);
      CHECK(has(r.out, c.says));
    }
  }

  TEST_CASE("a store others may write is refused: warmup would keep nothing") {
    TempDir dir("warmup-unsafe");
    std::string graph = write(dir, "tiny", kTinyGraph), store = dir.file("store");
    std::filesystem::create_directories(store);
    REQUIRE(chmod(store.c_str(), 0777) == 0);
    CommandResult r = fusor_tool("warmup " + graph + " --dim B=1 --dim T=1 --cache-dir " + store);
    INFO(r.out);
    if (!llvm_available(r)) return;
    CHECK(r.code == 3);
    CHECK(has(r.out, "the persistent kernel store cannot be used, so warmup would keep nothing"));
    CHECK(has(r.out, "--cache-dir"));
  }
}
