// `fusor warmup`: compiles a graph's kernels for a list, range or histogram of shapes into
// the persistent kernel store ahead of traffic, in parallel, with progress and a summary.
// Layer: tools (public API only).
//
// Note [Warmup jobs]
// ~~~~~~~~~~~~~~~~~~
// --jobs worker threads share ONE Engine and take the next shape from a common counter.
// Sharing the engine matters: its kernel cache is single-flight, so two shapes that need
// the same kernel (the same spec) compile it once, and the packed weights are made once
// for all shapes. Each job runs the engine's kernels on one thread by default (--threads):
// warmup parallelizes over shapes, not inside kernels. The first shape that fails stops
// the jobs (after the shapes in flight finish) and is reported with its dims.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ir/error.h"
#include "ir/text_format.h"
#include "jit/engine.h"
#include "tools/fusor/cli.h"
#include "tools/fusor/commands.h"
#include "tools/fusor/shape_list.h"

namespace fusor::cli {

namespace {
const std::string kWarmupUsageText =
    "usage: fusor warmup GRAPH [--dim NAME=SPEC]... [--shapes FILE] [options]\n"
    "\n"
    "Compiles the kernels of GRAPH (a text graph or an ONNX model) for every given shape\n"
    "into the persistent kernel store, so that a later process runs those shapes without\n"
    "compiling. Shapes run in parallel on one shared engine: a kernel that several shapes\n"
    "need is compiled once.\n"
    "\n"
    "shapes:\n"
    "  --dim NAME=SPEC      sizes of a named input dimension (repeatable); SPEC is SIZE,\n"
    "                       LO..HI (inclusive) or a comma list of them, e.g. --dim T=1..512\n"
    "                       or --dim T=8,16,32..64. The shapes are every combination.\n"
    "  --shapes FILE        a histogram of observed shapes, one per line:\n"
    "                         COUNT NAME=SIZE NAME=SIZE...     e.g.  120 B=1 T=64\n"
    "                       ('#' starts a comment); compiled most frequent first. --dim\n"
    "                       NAME=SIZE then binds the dims the lines leave out.\n"
    "\n"
    "options:\n"
    "  --jobs N             shapes compiled at once (default: one per core; 1 with --tune,\n"
    "                       whose timings would disturb each other)\n"
    "  --threads N          kernel threads of the engine (default 1)\n" +
    backend_usage(BackendKind::Llvm, true) +
    "  --cache-dir DIR      the persistent kernel store (default: $FUSOR_CACHE_DIR, else\n"
    "                       ~/.cache/fusor); created if missing\n" +
    std::string(kRemoteHelp) + kVerifyHelp + kPrecisionHelp +
    "                       (on seeded random inputs, once per shape; each kernel that\n"
    "                       passes is kept as passed in the store: not checked again)\n" +
    kTuneHelp +
    "  --json               print the summary as one JSON object: graph, backend, shapes,\n"
    "                       jobs, threads, seconds, kernels_compiled, disk_hits,\n"
    "                       kernel_hits, compile_ms, store_dir, store_entries,\n"
    "                       store_bytes, stats\n"
    "  --quiet              no progress (the summary is still printed)\n"
    "  --help               this text\n"
    "\n"
    "Progress goes to standard error: a progress bar with ETA on a terminal, else one line\n"
    "per shape (\"warmup: 17/512 T=17 (3 new kernels)\": the kernels compiled since the\n"
    "previous line, which with several jobs may include another shape's). The summary goes\n"
    "to standard output. Run it twice: the second run loads every kernel from the store\n"
    "(0 compiled).\n";
}  // namespace

const char* const kWarmupUsage = kWarmupUsageText.c_str();

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string human_duration(double s) {
  char buf[32];
  if (s < 10) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, int(s) % 3600 / 60);
  return buf;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b < 1024) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(b));
  else if (b < (uint64_t(1) << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", double(b) / 1024);
  else if (b < (uint64_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.1f MiB", double(b) / (1 << 20));
  else std::snprintf(buf, sizeof buf, "%.2f GiB", double(b) / (1 << 30));
  return buf;
}

// Progress on standard error, shared by the jobs: a bar redrawn in place on a terminal,
// one line per finished shape otherwise. Warnings go through it too, so they do not land
// in the middle of the bar.
class Progress {
 public:
  Progress(size_t total, bool quiet, std::vector<std::string> label_dims)
      : total_(total), quiet_(quiet), tty_(isatty(fileno(stderr)) != 0), label_dims_(std::move(label_dims)) {}

  void start(const EngineStats& s) {
    std::lock_guard lock(mu_);
    t0_ = Clock::now();
    first_compiled_ = last_compiled_ = s.kernels_compiled;
    last_loaded_ = s.disk_hits;
    if (tty_ && !quiet_) draw_bar("");
  }

  // A shape finished; `s` is the engine's counters after it. "New kernels" are those
  // compiled since the previous line: with several jobs a kernel is counted on the line of
  // the shape that finished next, which may not be the shape that needed it.
  void shape_done(const WarmShape& shape, const EngineStats& s) {
    std::lock_guard lock(mu_);
    ++done_;
    uint64_t compiled = s.kernels_compiled - std::min(s.kernels_compiled, last_compiled_);
    uint64_t loaded = s.disk_hits - std::min(s.disk_hits, last_loaded_);
    last_compiled_ = std::max(last_compiled_, s.kernels_compiled);
    last_loaded_ = std::max(last_loaded_, s.disk_hits);
    if (quiet_) return;
    const std::string label = shape_label(shape, label_dims_);
    if (tty_) {
      draw_bar(label);
      return;
    }
    std::fprintf(stderr, "warmup: %zu/%zu %s (%llu new kernel%s", done_, total_, label.c_str(),
                 static_cast<unsigned long long>(compiled), compiled == 1 ? "" : "s");
    if (loaded) std::fprintf(stderr, ", %llu from the store", static_cast<unsigned long long>(loaded));
    std::fprintf(stderr, ")\n");
  }

  void warn(const std::string& message) {
    std::lock_guard lock(mu_);
    if (tty_ && bar_shown_) std::fprintf(stderr, "\r\033[K");
    std::fprintf(stderr, "fusor warmup: warning: %s\n", message.c_str());
    bar_shown_ = false;
  }

  // Ends the bar's line (so what follows starts on a fresh one).
  void finish() {
    std::lock_guard lock(mu_);
    if (tty_ && bar_shown_) std::fprintf(stderr, "\n");
    bar_shown_ = false;
  }

 private:
  void draw_bar(const std::string& label) {
    constexpr int kWidth = 30;
    const double frac = total_ ? double(done_) / double(total_) : 1.0;
    const int filled = int(frac * kWidth);
    std::string bar(size_t(filled), '#');
    bar.resize(kWidth, '.');
    const double elapsed = seconds_since(t0_);
    std::string eta = done_ == total_ ? "done in " + human_duration(elapsed)
                      : done_ == 0    ? std::string("ETA ?")
                                      : "ETA " + human_duration(elapsed / double(done_) * double(total_ - done_));
    const unsigned long long kernels = last_compiled_ - first_compiled_;
    std::fprintf(stderr, "\r\033[Kwarmup [%s] %zu/%zu %3d%%  %s%s%llu kernel%s  %s", bar.c_str(), done_, total_,
                 int(frac * 100.0), label.c_str(), label.empty() ? "" : "  ", kernels, kernels == 1 ? "" : "s",
                 eta.c_str());
    std::fflush(stderr);
    bar_shown_ = true;
  }

  std::mutex mu_;
  const size_t total_;
  const bool quiet_;
  const bool tty_;
  const std::vector<std::string> label_dims_;
  Clock::time_point t0_ = Clock::now();
  size_t done_ = 0;
  uint64_t first_compiled_ = 0, last_compiled_ = 0, last_loaded_ = 0;
  bool bar_shown_ = false;
};

// The symbolic dims the graph's inputs declare, sorted.
std::set<std::string> graph_dims(const Graph& g) {
  std::set<std::string> names;
  for (ValueId v : g.inputs())
    for (const Dim& d : g.value(v).dims)
      if (d.is_symbolic()) names.insert(d.symbol);
  return names;
}

std::string join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

// Checks, before anything compiles, that every shape binds exactly the graph's dims, and
// says which flag or line to fix.
void check_shapes(const Graph& g, const std::vector<WarmShape>& shapes) {
  const std::set<std::string> want = graph_dims(g);
  for (const WarmShape& s : shapes) {
    for (const auto& kv : s.dims)
      FUSOR_CHECK(want.count(kv.first), InvalidArgument, s.where.empty() ? "--dim " + kv.first : s.where,
                  ": graph '", g.name(), "' has no dimension named '", kv.first, "' (its inputs use ", join(want), ")");
    for (const std::string& name : want)
      FUSOR_CHECK(s.dims.count(name), InvalidArgument, s.where.empty() ? "" : s.where + ": ", "no size for dimension '",
                  name, "' of graph '", g.name(), "' (its inputs use ", join(want), "): ",
                  s.where.empty() ? "add --dim " + name + "=SIZE or LO..HI"
                                  : "add " + name + "=SIZE to the line or give --dim " + name + "=SIZE");
    input_types_from_dims(g, s.dims);  // the declared fixed sizes and dtypes still fit
  }
}

// The shapes of the command line: the --dim product, or the histogram with --dim sizes
// filling the dims its lines leave out (Note [Warmup shape lists]).
std::vector<WarmShape> shapes_from_args(const Args& args) {
  std::vector<DimValues> dims = parse_dim_specs(args.all("--dim"));
  auto file = args.get("--shapes");
  if (!file) {
    if (dims.empty())
      throw UsageError{"no shapes: give --dim NAME=SIZE or NAME=LO..HI (e.g. --dim B=1 --dim T=1..512), "
                       "or --shapes FILE"};
    return cartesian_shapes(dims);
  }
  if (args.all("--shapes").size() > 1) throw UsageError{"--shapes is given more than once; merge the files"};
  for (const DimValues& d : dims)
    if (d.second.size() != 1)
      throw UsageError{"with --shapes, --dim " + d.first +
                       " must be one size (it binds the dims the file's lines leave out)"};
  DimBindings defaults;
  for (const DimValues& d : dims) defaults[d.first] = d.second.front();
  return read_shape_histogram(*file, defaults);
}

// Prepares every shape on `jobs` threads sharing `engine` (Note [Warmup jobs]). The first
// failure stops the jobs and is rethrown naming its shape.
void prepare_all(Engine& engine, const Graph& graph, const std::vector<WarmShape>& shapes, int64_t jobs,
                 Progress& progress) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex error_mu;
  std::exception_ptr error;
  size_t error_shape = 0;
  auto job = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t i = next.fetch_add(1);
      if (i >= shapes.size()) return;
      try {
        engine.prepare(graph, shapes[i].dims);
      } catch (...) {
        std::lock_guard lock(error_mu);
        if (!error) {
          error = std::current_exception();
          error_shape = i;
        }
        stop = true;
        return;
      }
      progress.shape_done(shapes[i], engine.stats());
    }
  };
  std::vector<std::thread> workers;
  for (int64_t j = 1; j < jobs; ++j) workers.emplace_back(job);
  job();
  for (std::thread& w : workers) w.join();
  progress.finish();
  if (!error) return;
  const WarmShape& s = shapes[error_shape];
  const std::string at = "shape " + shape_label(s) + (s.where.empty() ? "" : " (" + s.where + ")") + ": ";
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    throw Error(e.code(), at + e.message());
  }
}

// Warmup with --remote fills the shared store or fails: a fleet that deploys on its result
// must not believe a store is warm when the server was down or refused the writes.
int remote_filled(const EngineStats& before, const EngineStats& after) {
  if (!after.remote_enabled) return kOk;
  const uint64_t lost = after.remote_unavailable - before.remote_unavailable;
  FUSOR_CHECK(lost == 0 && after.remote_state.empty(), Io, "the remote kernel store ", after.remote_url,
              " was not filled: ", lost, " reads or writes did not reach it",
              after.remote_state.empty() ? std::string() : " (" + after.remote_state + ")",
              "; the kernels are in the local store. Run warmup again when the server is back");
  return kOk;
}

}  // namespace

int cmd_warmup(int argc, char** argv) {
  std::vector<std::string> valued{"--dim", "--shapes", "--jobs", "--threads", "--backend", "--verify", "--precision"};
  valued.insert(valued.end(), kCacheValued.begin(), kCacheValued.end());
  Args args = Args::parse(argc, argv, 2, valued, {"--json", "--quiet", "--tune"});
  if (args.positional.size() != 1) throw UsageError{"expected exactly one GRAPH file (a text graph or an ONNX model)"};

  EngineOptions options;
  options.backend = parse_backend(args.get("--backend").value_or("llvm"));
  if (backend_info(options.backend).role == BackendRole::Precompiled)
    throw UsageError{"--backend " + std::string(backend_name(options.backend)) +
                     " has nothing to warm up: its kernels are compiled ahead of time and never stored. Use "
                     "--backend llvm (the default)"};
  options.num_threads = int(args.get_int("--threads", 1, 1, 1024));
  apply_cache_flags(args, &options);
  apply_verify_flag(args, &options);
  apply_precision_flag(args, &options);
  apply_tune_flag(args, &options);
  const int64_t max_jobs = 1024;
  // Tuning times kernels: shapes compiled side by side would disturb each other's timings.
  const int64_t default_jobs = options.tune ? 1 : int64_t(std::max(1u, std::thread::hardware_concurrency()));
  int64_t jobs = args.get_int("--jobs", default_jobs, 1, max_jobs);
  const bool json = args.has("--json");
  std::vector<WarmShape> shapes = shapes_from_args(args);  // usage errors before reading the graph

  Graph graph = load_model(args.positional[0]);
  check_shapes(graph, shapes);
  jobs = std::min<int64_t>(jobs, int64_t(shapes.size()));

  // Warnings raised while the engine opens its store are kept: an unusable store is an
  // error here (warmup into memory only would keep nothing).
  Progress progress(shapes.size(), args.has("--quiet"), varying_dims(shapes));
  std::mutex warn_mu;
  std::vector<std::string> early_warnings;
  bool started = false;
  options.warn = [&](const std::string& message) {
    {
      std::lock_guard lock(warn_mu);
      if (!started) {
        early_warnings.push_back(message);
        return;
      }
    }
    progress.warn(message);
  };
  Engine engine(options);
  const EngineStats before = engine.stats();
  std::string early;
  for (const std::string& w : early_warnings) early += (early.empty() ? "" : "; ") + w;
  if (!before.remote_url.empty() && !before.remote_enabled)
    fail(ErrorCode::Io, "the remote kernel store cannot be used, so warmup would not fill it (", before.remote_state, ")");
  if (!before.disk_enabled && !before.remote_enabled)
    fail(ErrorCode::Io, "the persistent kernel store cannot be used, so warmup would keep nothing",
         early.empty() ? std::string() : " (" + early + ")", ". Fix the folder or choose another with --cache-dir DIR");
  // Where the kernels go: the disk store's folder, the remote store, or both.
  const std::string where = before.disk_enabled && before.remote_enabled ? before.disk_dir + " and " + before.remote_url
                            : before.disk_enabled                        ? before.disk_dir
                                                                         : before.remote_url;
  {
    std::lock_guard lock(warn_mu);
    started = true;
  }
  for (const std::string& w : early_warnings) progress.warn(w);

  if (!args.has("--quiet"))
    std::fprintf(stderr, "warmup: %zu shape%s of graph %s on %s, %lld job%s, store %s\n", shapes.size(),
                 shapes.size() == 1 ? "" : "s", graph.name().c_str(), std::string(backend_name(options.backend)).c_str(),
                 static_cast<long long>(jobs), jobs == 1 ? "" : "s", where.c_str());

  const auto t0 = Clock::now();
  progress.start(before);
  prepare_all(engine, graph, shapes, jobs, progress);
  const double seconds = seconds_since(t0);

  const EngineStats after = engine.stats();
  const uint64_t compiled = after.kernels_compiled - before.kernels_compiled;
  const uint64_t loaded = after.disk_hits - before.disk_hits;
  const uint64_t shared = after.kernel_hits - before.kernel_hits;
  // The store's size as its manifest lists it (every graph's kernels, not only these).
  const uint64_t store_entries = after.disk_entries, store_bytes = after.disk_bytes;

  if (json) {
    std::printf(
        "{\"graph\": %s, \"backend\": %s, \"shapes\": %zu, \"jobs\": %lld, \"threads\": %d, \"seconds\": %s, "
        "\"kernels_compiled\": %llu, \"disk_hits\": %llu, \"kernel_hits\": %llu, \"compile_ms\": %s, "
        "\"store_dir\": %s, \"store_entries\": %llu, \"store_bytes\": %llu, \"stats\": %s}\n",
        json_string(graph.name()).c_str(), json_string(std::string(backend_name(options.backend))).c_str(),
        shapes.size(), static_cast<long long>(jobs), options.num_threads, json_number(seconds).c_str(),
        static_cast<unsigned long long>(compiled), static_cast<unsigned long long>(loaded),
        static_cast<unsigned long long>(shared), json_number(after.compile_ms - before.compile_ms).c_str(),
        json_string(after.disk_dir).c_str(), static_cast<unsigned long long>(store_entries),
        static_cast<unsigned long long>(store_bytes),
        stats_json(after).c_str());
    return remote_filled(before, after);
  }
  std::printf("warmup: %zu shape%s of %s on %s in %.1f s (%lld job%s)\n", shapes.size(), shapes.size() == 1 ? "" : "s",
              graph.name().c_str(), std::string(backend_name(options.backend)).c_str(), seconds,
              static_cast<long long>(jobs), jobs == 1 ? "" : "s");
  std::printf("  kernels: %llu compiled (%.0f ms of compile time), %llu loaded from the store, %llu shared in memory\n",
              static_cast<unsigned long long>(compiled), after.compile_ms - before.compile_ms,
              static_cast<unsigned long long>(loaded), static_cast<unsigned long long>(shared));
  if (after.groups_verified)
    std::printf("  verify: %llu fused groups checked, %llu failed; worst error %.3g of scale (%.3g of its tolerance)\n",
                static_cast<unsigned long long>(after.groups_verified),
                static_cast<unsigned long long>(after.groups_failed), after.verify_worst_error,
                after.verify_worst_ratio);
  if (after.disk_enabled)
    std::printf("  store: %s holds %llu kernel%s, %s (%llu bytes)\n", after.disk_dir.c_str(),
                static_cast<unsigned long long>(store_entries), store_entries == 1 ? "" : "s",
                human_bytes(store_bytes).c_str(), static_cast<unsigned long long>(store_bytes));
  if (after.remote_enabled)
    std::printf("  remote store: %s: %llu entries written, %llu read\n", after.remote_url.c_str(),
                static_cast<unsigned long long>(after.remote_writes - before.remote_writes),
                static_cast<unsigned long long>(after.remote_hits - before.remote_hits));
  return remote_filled(before, after);
}

}  // namespace fusor::cli
