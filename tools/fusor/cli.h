// Shared pieces of the `fusor` command-line tool: exit codes, argument parsing, JSON
// output. Layer: tools (public API only).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/json.h"
#include "jit/engine.h"

namespace fusor::cli {

/// Exit codes of every subcommand.
enum Exit : int {
  kOk = 0,
  kInternal = 1,   ///< a bug or an unexpected failure inside fusor
  kUsage = 2,      ///< bad command line
  kBadInput = 3,   ///< the graph, the shapes, the files or the inputs are wrong
  kUnavailable = 4, ///< the request is valid but this build or machine cannot serve it
  kMismatch = 5     ///< --verify strict: a fused kernel's results differ from its ops' unfused
};

/// Thrown for command-line mistakes; main prints it with the subcommand's usage.
struct UsageError {
  std::string message;
};

/// A parsed command line: positional arguments and --flags (repeatable ones keep every
/// value). Flags listed in `switches` take no value.
struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> flags;

  /// Parses argv[first..]; unknown flags (not in `valued` or `switches`) are a UsageError.
  static Args parse(int argc, char** argv, int first, const std::vector<std::string>& valued,
                    const std::vector<std::string>& switches);
  bool has(const std::string& flag) const { return flags.count(flag) != 0; }
  std::optional<std::string> get(const std::string& flag) const;
  std::vector<std::string> all(const std::string& flag) const;
  /// An integer flag in [lo, hi], or `fallback` when absent; UsageError otherwise.
  int64_t get_int(const std::string& flag, int64_t fallback, int64_t lo, int64_t hi) const;
};

/// Parses "NAME=VALUE"; UsageError naming `flag` when malformed.
std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& flag);

/// The --dim NAME=SIZE bindings of a command line (UsageError when malformed).
std::map<std::string, int64_t, std::less<>> parse_dims(const Args& args);

/// Loads the graph every subcommand takes: an ONNX model (onnx/load_onnx.h: a ".onnx" file,
/// or one that starts as a ModelProto does) or a graph in fusor's text format. The ONNX
/// loader's warnings (generated dim names, renamed inputs) go to standard error.
Graph load_model(const std::string& path);

/// Reads an input tensor for --input NAME=FILE: a .npy file, or an ONNX TensorProto (.pb).
Tensor read_input_file(const std::string& path);

/// The cache options every engine-making subcommand takes: --cache-dir DIR (the persistent
/// kernel store's folder), --no-disk-cache (memory only), and the remote store's --remote
/// URL, --remote-trust, --remote-namespace and --remote-timeout-ms.
void apply_cache_flags(const Args& args, EngineOptions* options);
/// The flags apply_cache_flags reads, for Args::parse: valued and switches.
inline const std::vector<std::string> kCacheValued{"--cache-dir", "--remote", "--remote-trust", "--remote-namespace",
                                                   "--remote-timeout-ms"};
inline const std::vector<std::string> kCacheSwitches{"--no-disk-cache"};
/// The help lines of the remote store's flags.
inline constexpr const char* kRemoteHelp =
    "  --remote URL         also keep kernels in a Redis server the fleet shares:\n"
    "                       redis://[user:password@]host[:port][/db] (password also from\n"
    "                       $FUSOR_REDIS_PASSWORD); entries are signed with the key file\n"
    "                       $FUSOR_STORE_KEY_FILE (mode 0600)\n"
    "  --remote-trust T     authenticated (default: entries must carry a valid HMAC) or\n"
    "                       unauthenticated (no key: trust whoever can write to the server)\n"
    "  --remote-namespace P prefix of the remote store's names (default fusor:)\n"
    "  --remote-timeout-ms N  the most one remote operation or connect waits (default 50)\n";

/// The --backend option of a usage text: the backends of codegen/backends.def (with
/// `jit_only`, those that compile kernels), one a line with its summary, `fallback` named
/// as the default.
std::string backend_usage(BackendKind fallback, bool jit_only);

/// An engine's cache statistics as one JSON object: hits, misses, compiles, disk_hits,
/// disk_writes, evictions, bytes, plans, kernel_hits, compile_ms (and per backend),
/// load_ms, disk (the store's folder or null).
std::string stats_json(const EngineStats& s);
/// The same as indented text lines.
std::string stats_text(const EngineStats& s);
/// --verify MODE (warn, strict, fallback) into options->verify; UsageError for another mode.
void apply_verify_flag(const Args& args, EngineOptions* options);
/// The help line of --verify.
inline constexpr const char* kVerifyHelp =
    "  --verify MODE        check each fused kernel once against its ops unfused on the\n"
    "                       static kernels (jit/verify.h): warn (report), fallback (report,\n"
    "                       serve the group unfused) or strict (exit 5 on a mismatch)\n";
/// --precision P (fp32, bf16, auto) into options->precision; UsageError for another.
void apply_precision_flag(const Args& args, EngineOptions* options);
/// Sets options->tune from --tune (llvm only: UsageError on another backend).
void apply_tune_flag(const Args& args, EngineOptions* options);
/// The help line of --tune.
inline constexpr const char* kTuneHelp =
    "  --tune               (llvm) time a few tilings of each contraction on this machine and\n"
    "                       keep the fastest; kept with the kernel in the store, so it is\n"
    "                       timed once per machine (a contraction compiles ~5x longer)\n";
/// The help line of --precision.
inline constexpr const char* kPrecisionHelp =
    "  --precision P        fp32 (default), bf16 or auto: bf16 and auto run the GEMMs with\n"
    "                       constant weights on bf16 operands (f32 sums) where the backend\n"
    "                       and CPU can (llvm, AVX512-BF16); explain says what it gives\n";


}  // namespace fusor::cli
