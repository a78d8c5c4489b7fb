// `fusor explain`: how a graph fuses at given dims — groups, patterns, declined fusions,
// kernel counts and intermediate bytes.
#include <cstdio>

#include "ir/text_format.h"
#include "jit/engine.h"
#include "tools/fusor/cli.h"
#include "tools/fusor/commands.h"

namespace fusor::cli {

const char* const kExplainUsage =
    "usage: fusor explain GRAPH [options]\n"
    "\n"
    "Traces GRAPH (a text graph or an ONNX model) at the given dims, fuses it, and reports\n"
    "every group (kind, pattern, ops, what it writes), the rewrites applied, the fusions\n"
    "declined and why, the kernel count before and after fusion and the bytes of\n"
    "intermediates no longer written.\n"
    "\n"
    "options:\n"
    "  --dim NAME=SIZE   bind a named input dimension (repeatable), e.g. --dim T=128\n"
    "  --no-fuse         report the unfused baseline (one kernel per op)\n"
    "  --json            one JSON object: graph, dims, kernels_before, kernels_after,\n"
    "                    groups [{kind, pattern, ops, inputs, outputs}], passes, declined\n"
    "                    (with --verify: verify, each kernel's verdict)\n"
    "  --backend NAME    with --verify or --precision: the JIT backend whose kernels are\n"
    "                    checked, or whose precision is reported (default llvm)\n"
    "  --precision P     fp32, bf16 or auto: also report what it gives on this backend\n"
    "                    and CPU (json: precision)\n"
    "  --verify MODE     also compile the plan, run it once on seeded random inputs and\n"
    "                    report each fused kernel's check against its ops unfused\n"
    "                    (warn, fallback, strict: see fusor run --help)\n"
    "  --no-disk-cache   with --verify: compile in memory only\n"
    "  --help            this text\n";

int cmd_explain(int argc, char** argv) {
  Args args = Args::parse(argc, argv, 2, {"--dim", "--verify", "--backend", "--precision"}, {"--json", "--no-fuse", "--no-disk-cache"});
  if (args.positional.size() != 1) throw UsageError{"expected exactly one GRAPH file (a text graph or an ONNX model)"};
  DimBindings dims = parse_dims(args);
  Graph graph = load_model(args.positional[0]);
  EngineOptions options;
  options.num_threads = 1;
  options.fuse = !args.has("--no-fuse");
  apply_verify_flag(args, &options);
  apply_precision_flag(args, &options);
  if (options.verify != VerifyMode::Off || options.precision != Precision::Fp32)
    options.backend = parse_backend(args.get("--backend").value_or("llvm"));
  else if (args.get("--backend"))
    throw UsageError{"--backend is for --verify or --precision: explain alone compiles nothing"};
  options.disk_cache = !args.has("--no-disk-cache");
  Engine engine(options);
  std::string report = engine.explain(graph, dims, args.has("--json"));
  std::printf("%s\n", report.c_str());
  return kOk;
}

}  // namespace fusor::cli
