// `fusor run`: load a graph, bind its dims, feed seeded-random (or .npy) inputs, run it on
// the chosen backend, print output shapes, checksums and timings.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "ir/npy.h"
#include "ir/random.h"
#include "ir/shape_inference.h"
#include "ir/text_format.h"
#include "jit/engine.h"
#include "tools/fusor/cli.h"
#include "tools/fusor/commands.h"

namespace fusor::cli {

namespace {
const std::string kRunUsageText =
    "usage: fusor run GRAPH [options]\n"
    "\n"
    "Runs GRAPH (fusor's text format, or an ONNX model: MODEL.onnx) and prints each\n"
    "output's type and checksum, and timings.\n"
    "\n"
    "options:\n"
    "  --dim NAME=SIZE      bind a named input dimension (repeatable), e.g. --dim T=128\n"
    "  --input NAME=FILE    read input NAME from a .npy file or an ONNX TensorProto (.pb);\n"
    "                       the others are seeded-random\n"
    "  --seed N             seed of the random inputs (default 0): floats ~ N(0,1),\n"
    "                       integers uniform in [0, --int-high), bools uniform\n"
    "  --int-high N         bound of random integer inputs (default 2): 0..N-1. Valid token\n"
    "                       ids, attention masks (0/1) and token types for any model; give\n"
    "                       the vocabulary size to draw ids from all of it\n" +
    backend_usage(BackendKind::Static, false) +
    "  --no-fuse            run every op as its own kernel (the unfused baseline)\n"
    "  --threads N          kernel threads (default: one per core)\n"
    "  --repeat N           timed runs after one warm-up run (default 1)\n"
    "  --save DIR           write every output to DIR/NAME.npy\n"
    "  --dump DIR           write each JIT kernel's spec, LLVM IR and assembly to DIR\n"
    "  --stats              print the cache statistics (with --json: an object \"stats\")\n"
    "  --profile            time every step of the timed runs and print them, longest first\n"
    "  --background-compile run a new shape at once on the static kernels while its JIT\n"
    "                       kernels compile in the background (first run never waits)\n"
    "  --tiering            (llvm) run a new shape at once on asmjit kernels while LLVM\n"
    "                       compiles in the background\n"
    "  --symbolic-dim NAME  (llvm) a new size of dim NAME runs at once on symbolic kernels\n"
    "                       (compiled once for every size) while exact ones compile in\n"
    "                       the background\n"
    "  --cache-dir DIR      the persistent kernel store (default: $FUSOR_CACHE_DIR, else\n"
    "                       ~/.cache/fusor)\n"
    "  --no-disk-cache      compile in memory only, without the persistent store\n" +
    std::string(kRemoteHelp) + kVerifyHelp + kPrecisionHelp + kTuneHelp +
    "  --json               print one JSON object instead of text\n"
    "  --help               this text\n";
}  // namespace

const char* const kRunUsage = kRunUsageText.c_str();

namespace {

struct Checksum {
  double sum = 0, abs_sum = 0;
  int64_t nonfinite = 0;
};

Checksum checksum(const Tensor& t) {
  Checksum c;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.at(i);
    if (!std::isfinite(v)) {
      ++c.nonfinite;
      continue;
    }
    c.sum += v;
    c.abs_sum += std::fabs(v);
  }
  return c;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int cmd_run(int argc, char** argv) {
  std::vector<std::string> valued{"--dim",  "--input", "--seed",         "--backend", "--threads", "--repeat",
                                   "--save", "--dump",  "--symbolic-dim", "--int-high", "--verify", "--precision"};
  std::vector<std::string> switches{"--json", "--no-fuse", "--stats", "--profile", "--background-compile", "--tiering", "--tune"};
  valued.insert(valued.end(), kCacheValued.begin(), kCacheValued.end());
  switches.insert(switches.end(), kCacheSwitches.begin(), kCacheSwitches.end());
  Args args = Args::parse(argc, argv, 2, valued, switches);
  if (args.positional.size() != 1) throw UsageError{"expected exactly one GRAPH file (a text graph or an ONNX model)"};
  EngineOptions options;
  options.backend = parse_backend(args.get("--backend").value_or("static"));
  options.num_threads = int(args.get_int("--threads", 0, 0, 1024));
  options.fuse = !args.has("--no-fuse");
  apply_cache_flags(args, &options);
  const bool stats = args.has("--stats");
  options.profile = args.has("--profile");
  options.background_compile = args.has("--background-compile");
  options.tiering = args.has("--tiering");
  options.symbolic_dim = args.get("--symbolic-dim").value_or("");
  apply_verify_flag(args, &options);
  apply_precision_flag(args, &options);
  apply_tune_flag(args, &options);
  if (auto dir = args.get("--dump")) {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    if (ec) fail(ErrorCode::Io, "--dump ", *dir, ": cannot create the folder: ", ec.message());
    options.dump_dir = *dir;
  }
  if (options.num_threads == 0) options.num_threads = int(std::max(1u, std::thread::hardware_concurrency()));
  int64_t repeat = args.get_int("--repeat", 1, 1, 1000000);
  uint64_t seed = uint64_t(args.get_int("--seed", 0, 0, INT64_MAX));
  const int64_t int_high = args.get_int("--int-high", 2, 1, int64_t(1) << 53);
  bool json = args.has("--json");

  Graph graph = load_model(args.positional[0]);

  DimBindings dims = parse_dims(args);

  // Inputs: from files where given (their shapes bind dims too), random otherwise.
  TensorMap inputs;
  for (const std::string& spec : args.all("--input")) {
    auto [name, path] = split_assignment(spec, "--input");
    ValueId v = graph.find_value(name);
    if (v == kNoValue || graph.value(v).kind != ValueKind::Input)
      fail(ErrorCode::InvalidArgument, "--input ", name, ": graph '", graph.name(), "' has no input of that name");
    Tensor t = read_input_file(path);
    bind_input(graph, v, TensorType{t.dtype(), t.shape()}, &dims);
    inputs[name] = std::move(t);
  }
  std::vector<TensorType> types = input_types_from_dims(graph, dims);
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const std::string& name = graph.value(graph.inputs()[i]).name;
    if (inputs.count(name)) continue;
    const TensorType& t = types[i];
    // Integers draw from [0, int_high): make_random rounds toward zero, so high stays out.
    RandomRecipe r = is_floating(t.dtype) ? RandomRecipe::normal(seed * 1000 + i, 1.0)
                                          : RandomRecipe::uniform(seed * 1000 + i, 0.0, double(int_high));
    inputs[name] = make_random(t.dtype, t.shape, r);
  }

  Engine engine(options);
  auto t0 = std::chrono::steady_clock::now();
  TensorMap outputs = engine.run(graph, inputs);
  double first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> times;
  for (int64_t r = 0; r < repeat; ++r) {
    auto s = std::chrono::steady_clock::now();
    engine.run(graph, inputs, outputs);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  double med = median(times), best = *std::min_element(times.begin(), times.end());

  if (auto dir = args.get("--save")) {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    if (ec) fail(ErrorCode::Io, "--save ", *dir, ": cannot create the folder: ", ec.message());
    for (const auto& [name, t] : outputs) {
      std::string safe = name;
      std::replace(safe.begin(), safe.end(), '/', '_');
      write_npy((std::filesystem::path(*dir) / (safe + ".npy")).string(), t);
    }
  }

  if (json) {
    std::printf("{\"graph\": %s, \"backend\": %s, \"threads\": %d, \"dims\": {", json_string(graph.name()).c_str(),
                json_string(std::string(backend_name(options.backend))).c_str(), options.num_threads);
    bool first = true;
    for (const auto& [k, v] : dims) {
      std::printf("%s%s: %lld", first ? "" : ", ", json_string(k).c_str(), static_cast<long long>(v));
      first = false;
    }
    std::printf("}, \"outputs\": [");
    first = true;
    for (const auto& [name, t] : outputs) {
      Checksum c = checksum(t);
      std::printf("%s{\"name\": %s, \"dtype\": %s, \"shape\": [", first ? "" : ", ", json_string(name).c_str(),
                  json_string(std::string(dtype_name(t.dtype()))).c_str());
      for (int i = 0; i < t.rank(); ++i)
        std::printf("%s%lld", i ? ", " : "", static_cast<long long>(t.shape().dims()[size_t(i)]));
      std::printf("], \"sum\": %s, \"abs_sum\": %s, \"nonfinite\": %lld}", json_number(c.sum).c_str(),
                  json_number(c.abs_sum).c_str(), static_cast<long long>(c.nonfinite));
      first = false;
    }
    std::printf("], \"first_run_ms\": %s, \"repeat\": %lld, \"median_ms\": %s, \"min_ms\": %s",
                json_number(first_ms).c_str(), static_cast<long long>(repeat), json_number(med).c_str(),
                json_number(best).c_str());
    if (stats) std::printf(", \"stats\": %s", stats_json(engine.stats()).c_str());
    if (options.verify != VerifyMode::Off) std::printf(", \"verify\": %s", verdicts_json(engine.verdicts()).c_str());
    std::printf("}\n");
    return kOk;
  }
  std::printf("graph %s on %s (%d threads)", graph.name().c_str(), std::string(backend_name(options.backend)).c_str(),
              options.num_threads);
  for (const auto& [k, v] : dims) std::printf(" %s=%lld", k.c_str(), static_cast<long long>(v));
  std::printf("\n");
  for (const auto& [name, t] : outputs) {
    Checksum c = checksum(t);
    std::printf("  output %-12s %-20s sum %.6g  abs_sum %.6g%s\n", name.c_str(), t.type_str().c_str(), c.sum,
                c.abs_sum, c.nonfinite ? "  (has NaN/Inf)" : "");
  }
  std::printf("  first run %.3f ms; %lld timed runs: median %.3f ms, min %.3f ms\n", first_ms,
              static_cast<long long>(repeat), med, best);
  if (stats) std::printf("cache:\n%s", stats_text(engine.stats()).c_str());
  if (options.verify != VerifyMode::Off) {
    const std::vector<GroupVerdict> verdicts = engine.verdicts();
    std::printf("verify (%s): %zu fused groups checked against their ops unfused\n", verify_mode_name(options.verify),
                verdicts.size());
    for (const GroupVerdict& v : verdicts) std::printf("  %s\n", v.str().c_str());
  }
  if (options.profile) {
    std::vector<StepProfile> steps = engine.profile();
    double total = 0;
    for (const StepProfile& p : steps) total += p.total_ms;
    std::printf("profile (per run, all %lld runs):\n", static_cast<long long>(repeat + 1));
    for (const StepProfile& p : steps)
      std::printf("  %8.3f ms %5.1f%%  %s\n", p.total_ms / double(repeat + 1), total > 0 ? 100.0 * p.total_ms / total : 0.0,
                  p.step.c_str());
  }
  return kOk;
}

}  // namespace fusor::cli
