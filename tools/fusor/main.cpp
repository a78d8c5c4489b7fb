// fusor: the command-line face of the engine. `fusor help` lists the subcommands.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "ir/error.h"
#include "tools/fusor/cli.h"
#include "tools/fusor/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
  const char* const* usage;
};

// The one list of subcommands.
const Command kCommands[] = {
    {"run", "run a graph on random or given inputs; print outputs and timings", fusor::cli::cmd_run,
     &fusor::cli::kRunUsage},
    {"explain", "report how a graph fuses at given dims (groups, declined fusions, kernels)", fusor::cli::cmd_explain,
     &fusor::cli::kExplainUsage},
    {"warmup", "compile a graph's kernels for a range or histogram of shapes into the store",
     fusor::cli::cmd_warmup, &fusor::cli::kWarmupUsage},
    {"store", "what the disk and remote kernel stores hold: stats, ls, verify, prune", fusor::cli::cmd_store,
     &fusor::cli::kStoreUsage},
    {"ops", "list the ONNX operators fusor loads, or those a model uses", fusor::cli::cmd_ops,
     &fusor::cli::kOpsUsage},
};

void print_help() {
  std::printf("fusor %s: a JIT operator-fusion engine for neural-network inference\n\n", FUSOR_VERSION);
  std::printf("usage: fusor <command> [options]   (fusor <command> --help for details)\n\ncommands:\n");
  for (const Command& c : kCommands) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf("\nexit codes: 0 ok, 1 internal error, 2 bad usage, 3 bad input, 4 unavailable,\n"
              "            5 a fused kernel failed --verify strict\n");
}

int exit_code_for(fusor::ErrorCode code) {
  switch (code) {
    case fusor::ErrorCode::Internal: return fusor::cli::kInternal;
    case fusor::ErrorCode::NumericsMismatch: return fusor::cli::kMismatch;
    case fusor::ErrorCode::Unsupported:
    case fusor::ErrorCode::DeviceUnavailable:
    case fusor::ErrorCode::CompileFailed: return fusor::cli::kUnavailable;
    default: return fusor::cli::kBadInput;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    if (argc >= 3 && !std::strcmp(argv[1], "help")) {
      for (const Command& c : kCommands)
        if (!std::strcmp(c.name, argv[2])) {
          std::printf("%s", *c.usage);
          return 0;
        }
    }
    print_help();
    return argc < 2 ? fusor::cli::kUsage : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("fusor %s\n", FUSOR_VERSION);
    return 0;
  }
  for (const Command& c : kCommands) {
    if (std::strcmp(c.name, argv[1]) != 0) continue;
    for (int i = 2; i < argc; ++i)
      if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
        std::printf("%s", *c.usage);
        return 0;
      }
    try {
      return c.run(argc, argv);
    } catch (const fusor::cli::UsageError& e) {
      std::fprintf(stderr, "fusor %s: %s\n\n%s", c.name, e.message.c_str(), *c.usage);
      return fusor::cli::kUsage;
    } catch (const fusor::Error& e) {
      std::fprintf(stderr, "fusor %s: error: %s\n", c.name, e.what());
      return exit_code_for(e.code());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fusor %s: internal error: %s\n", c.name, e.what());
      return fusor::cli::kInternal;
    }
  }
  std::fprintf(stderr, "fusor: unknown command '%s'\n\n", argv[1]);
  print_help();
  return fusor::cli::kUsage;
}
