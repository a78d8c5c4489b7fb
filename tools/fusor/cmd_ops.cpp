// `fusor ops`: the ONNX operators fusor loads, or those a model uses and whether fusor
// supports each.
#include <algorithm>
#include <cstdio>
#include <string>

#include "onnx/load_onnx.h"
#include "tools/fusor/cli.h"
#include "tools/fusor/commands.h"

namespace fusor::cli {

const char* const kOpsUsage =
    "usage: fusor ops [MODEL.onnx] [--markdown]\n"
    "\n"
    "Without a model: the ONNX operators fusor loads (fusor's operators, ir/ops.def, those\n"
    "the loader writes as fusor's, and those it resolves itself), each with the first\n"
    "default-domain opset whose semantics fusor implements; a model's opset may be\n"
    "anything from there to 18.\n"
    "With a model: the operators it uses, their node counts, and whether fusor supports\n"
    "each (exit 4 when one is not).\n"
    "\n"
    "options:\n"
    "  --markdown   print the list as the README's table\n"
    "  --help       this text\n";

int cmd_ops(int argc, char** argv) {
  Args args = Args::parse(argc, argv, 2, {}, {"--markdown"});
  if (args.positional.size() > 1) throw UsageError{"expected at most one MODEL file"};
  const std::vector<OnnxOperator> ops = onnx_operators();
  if (args.positional.empty()) {
    const bool md = args.has("--markdown");
    if (md) std::printf("| ONNX operator | opsets | |\n| --- | --- | --- |\n");
    for (const OnnxOperator& op : ops) {
      if (md)
        std::printf("| %s | %lld-%lld | %s |\n", op.op_type.c_str(), static_cast<long long>(op.since_opset),
                    static_cast<long long>(kOnnxMaxOpset), op.note.c_str());
      else
        std::printf("%-20s opsets %lld-%lld%s%s\n", op.op_type.c_str(), static_cast<long long>(op.since_opset),
                    static_cast<long long>(kOnnxMaxOpset), op.note.empty() ? "" : "  ", op.note.c_str());
    }
    return kOk;
  }
  const std::vector<OnnxOperatorUse> used = onnx_operators_used(args.positional[0]);
  int missing = 0;
  for (const OnnxOperatorUse& u : used) {
    auto it = std::find_if(ops.begin(), ops.end(), [&](const OnnxOperator& o) { return o.op_type == u.op_type; });
    const bool ok = u.domain.empty() && it != ops.end();
    missing += !ok;
    std::string name = u.domain.empty() ? u.op_type : u.domain + "." + u.op_type;
    std::printf("%-28s %5lld node%s  %s\n", name.c_str(), static_cast<long long>(u.nodes), u.nodes == 1 ? " " : "s",
                ok ? ("supported (opsets " + std::to_string(it->since_opset) + "-" + std::to_string(kOnnxMaxOpset) + ")").c_str()
                   : "NOT SUPPORTED");
  }
  std::printf("%zu operators, %d not supported\n", used.size(), missing);
  return missing ? kUnavailable : kOk;
}

}  // namespace fusor::cli
