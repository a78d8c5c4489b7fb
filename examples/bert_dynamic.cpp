// bert_dynamic: fusor's main demo. A BERT-base encoder (hidden 768, 12 heads of 64,
// feed-forward 3072; 2 layers by default, seeded random weights) serves a stream of
// batch-1 requests whose sequence lengths follow a clipped log-normal, as real text does.
// Each request runs on a JIT engine (llvm backend, fused, kernels kept in the persistent
// store) and on the unfused static kernels; the demo prints, per request, the latency of
// both and what the JIT engine's caches did: compiled the new shape, loaded its kernels
// from the store, or found its plan in memory. Run it twice with the same store: the
// second run compiles nothing. Layer: examples (public API only).
//
// With --symbolic the JIT engine serves each new length at once on symbolic kernels
// (compiled once for every length: EngineOptions::symbolic_dim) and specializes it in the
// background between requests.
//
//   bert_dynamic [--requests N] [--cache-dir DIR] [--threads N] [--layers N] [--seed N] [--symbolic]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/error.h"
#include "ir/random.h"
#include "jit/engine.h"

namespace {

using namespace fusor;

constexpr int64_t kHidden = 768, kHeads = 12, kHeadDim = 64, kFfn = 3072;
constexpr int64_t kMinLen = 8, kMaxLen = 256;
constexpr double kMedianLen = 40, kLogSigma = 0.6;

struct Options {
  int requests = 40;
  int layers = 2;
  int threads = 0;
  uint64_t seed = 7;
  std::string cache_dir;  // empty: the engine's default ($FUSOR_CACHE_DIR or ~/.cache/fusor)
  bool symbolic = false;  // serve new lengths on symbolic kernels, specialize between requests
};

const char* const kUsage =
    "usage: bert_dynamic [--requests N] [--cache-dir DIR] [--threads N] [--layers N] [--seed N] [--symbolic]\n"
    "\n"
    "Serves N batch-1 requests (default 40) of random sequence lengths (log-normal, median 40,\n"
    "clipped to 8..256) on a BERT-base encoder (default 2 layers), with fusor's llvm JIT and\n"
    "with the unfused static kernels, and prints latencies and cache events. Kernels are kept\n"
    "in the persistent store (--cache-dir, default $FUSOR_CACHE_DIR or ~/.cache/fusor): a\n"
    "second run compiles nothing. --symbolic: a new length runs at once on symbolic kernels\n"
    "(compiled once for every length) and its exact kernels compile in the background\n"
    "between requests.\n";

// A strict integer in [lo, hi], or exit 2 naming the flag.
int64_t int_flag(const char* flag, const char* text, int64_t lo, int64_t hi) {
  char* end = nullptr;
  long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || v < lo || v > hi) {
    std::fprintf(stderr, "bert_dynamic: %s wants an integer in [%lld, %lld], got '%s'\n%s", flag,
                 static_cast<long long>(lo), static_cast<long long>(hi), text, kUsage);
    std::exit(2);
  }
  return v;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kUsage);
      std::exit(0);
    }
    if (a == "--symbolic") {
      o.symbolic = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bert_dynamic: %s: %s\n%s", a.c_str(),
                   a.rfind("--", 0) == 0 ? "needs a value" : "unexpected argument", kUsage);
      std::exit(2);
    }
    const char* v = argv[++i];
    if (a == "--requests") o.requests = int(int_flag("--requests", v, 1, 100000));
    else if (a == "--layers") o.layers = int(int_flag("--layers", v, 1, 24));
    else if (a == "--threads") o.threads = int(int_flag("--threads", v, 0, 1024));
    else if (a == "--seed") o.seed = uint64_t(int_flag("--seed", v, 0, INT64_MAX));
    else if (a == "--cache-dir") o.cache_dir = v;
    else {
      std::fprintf(stderr, "bert_dynamic: unknown option %s\n%s", a.c_str(), kUsage);
      std::exit(2);
    }
  }
  return o;
}

// One post-LayerNorm BERT encoder layer, as examples/graphs/bert_layer writes it.
// `out` names the layer's output ("" for a fresh name).
ValueId bert_layer(GraphBuilder& b, ValueId x, ValueId mask, int layer, const std::string& out) {
  const std::string p = "l" + std::to_string(layer) + "_";
  uint64_t seed = 1000 * uint64_t(layer + 1);
  auto w = [&](const char* name, Shape shape) { return b.randn(p + name, std::move(shape), ++seed, 0.02); };
  auto proj = [&](ValueId in, const char* wname, const char* bname, int64_t n) {
    return b.add(b.matmul(in, w(wname, {kHidden, n})), w(bname, {n}));
  };
  auto heads = [&](ValueId v, std::vector<int64_t> perm) {
    return b.transpose(b.reshape(v, {0, 0, kHeads, kHeadDim}), std::move(perm));
  };
  ValueId q = heads(proj(x, "wq", "bq", kHidden), {0, 2, 1, 3});  // [B, 12, T, 64]
  ValueId k = heads(proj(x, "wk", "bk", kHidden), {0, 2, 3, 1});  // [B, 12, 64, T]
  ValueId v = heads(proj(x, "wv", "bv", kHidden), {0, 2, 1, 3});  // [B, 12, T, 64]
  ValueId scores = b.mul(b.matmul(q, k), b.fill(p + "scale", Shape{}, 1.0 / std::sqrt(double(kHeadDim))));
  ValueId probs = b.softmax(b.add(scores, mask));
  ValueId context = b.reshape(b.transpose(b.matmul(probs, v), {0, 2, 1, 3}), {0, 0, kHidden});
  ValueId attn = proj(context, "wo", "bo", kHidden);
  ValueId ln1 = b.layernorm(b.add(attn, x), b.fill(p + "ln1_scale", {kHidden}, 1.0), b.fill(p + "ln1_bias", {kHidden}, 0.0),
                            1e-12);
  ValueId ff = b.gelu(b.add(b.matmul(ln1, w("w1", {kHidden, kFfn})), w("b1", {kFfn})));
  ValueId ff2 = b.add(b.matmul(ff, w("w2", {kFfn, kHidden})), w("b2", {kHidden}));
  return b.op(OpKind::LayerNormalization,
              {b.add(ff2, ln1), b.fill(p + "ln2_scale", {kHidden}, 1.0), b.fill(p + "ln2_bias", {kHidden}, 0.0)},
              {{"epsilon", 1e-12}, {"axis", int64_t(-1)}}, out);
}

Graph bert_encoder(int layers) {
  GraphBuilder b("bert_encoder" + std::to_string(layers));
  ValueId x = b.input("x", DType::F32, {"B", "T", kHidden});
  ValueId mask = b.input("mask", DType::F32, {"B", 1, 1, "T"});  // additive: 0 attends, -10000 masks
  for (int l = 0; l < layers; ++l) x = bert_layer(b, x, mask, l, l + 1 == layers ? "y" : "");
  b.output(x);
  return b.build();
}

// Sequence lengths: log-normal around kMedianLen, clipped to [kMinLen, kMaxLen]. Box-Muller
// over mt19937_64 (whose output the standard fixes), so every platform draws the same.
std::vector<int64_t> draw_lengths(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (double(rng() >> 11) + 0.5) / 9007199254740992.0; };  // (0, 1)
  std::vector<int64_t> lengths;
  while (int(lengths.size()) < n) {
    double u1 = uniform(), u2 = uniform();
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    double len = std::exp(std::log(kMedianLen) + kLogSigma * z);
    lengths.push_back(std::clamp<int64_t>(int64_t(std::lround(len)), kMinLen, kMaxLen));
  }
  return lengths;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::nan("");
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double time_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// What one request did on the JIT engine, from its stats before and after the run.
struct Served {
  int64_t t = 0;
  double jit_ms = 0, static_ms = 0;
  uint64_t compiled = 0, loaded = 0;  // kernels compiled / linked from the store
  double compile_ms = 0;
  bool plan_hit = false;
  bool symbolic = false;     // served on symbolic kernels (a new length, --symbolic)
  uint64_t specialized = 0;  // --symbolic: exact kernels compiled in the background after it
};

std::string cache_event(const Served& s) {
  char buf[64];
  if (s.symbolic && s.compiled)
    std::snprintf(buf, sizeof buf, "symbolic: compiled %llu", static_cast<unsigned long long>(s.compiled));
  else if (s.symbolic)
    std::snprintf(buf, sizeof buf, "symbolic kernels");
  else if (s.compiled)
    std::snprintf(buf, sizeof buf, "compiled %llu (%.0f ms)", static_cast<unsigned long long>(s.compiled), s.compile_ms);
  else if (s.loaded)
    std::snprintf(buf, sizeof buf, "store: %llu loaded", static_cast<unsigned long long>(s.loaded));
  else
    std::snprintf(buf, sizeof buf, "%s", s.plan_hit ? "memory hit" : "memory (new plan)");
  return buf;
}

void print_header(const Options& o, const EngineStats& s) {
  std::printf("bert_dynamic: BERT-base encoder, %d layer%s (hidden %lld, %lld heads, FFN %lld), batch 1\n", o.layers,
              o.layers == 1 ? "" : "s", static_cast<long long>(kHidden), static_cast<long long>(kHeads),
              static_cast<long long>(kFfn));
  std::printf("  %d requests, sequence lengths log-normal (median %.0f) clipped to %lld..%lld, seed %llu\n",
              o.requests, kMedianLen, static_cast<long long>(kMinLen), static_cast<long long>(kMaxLen),
              static_cast<unsigned long long>(o.seed));
  std::printf("  jit:    llvm backend, fused%s; kernel store %s\n",
              o.symbolic ? ", new lengths on symbolic kernels (exact ones compile between requests)" : "",
              s.disk_enabled ? s.disk_dir.c_str() : "off (memory only: see the warning above)");
  std::printf("  static: unfused precompiled kernels (the baseline)\n\n");
  std::printf("  req     T   jit ms  jit cache               static ms  static/jit\n");
}

int run(const Options& o) {
  const Graph graph = bert_encoder(o.layers);
  const std::vector<int64_t> lengths = draw_lengths(o.requests, o.seed);

  EngineOptions jit_options;
  jit_options.backend = BackendKind::Llvm;
  jit_options.num_threads = o.threads;
  jit_options.cache_dir = o.cache_dir;
  if (o.symbolic) jit_options.symbolic_dim = "T";
  EngineOptions static_options;
  static_options.backend = BackendKind::Static;
  static_options.fuse = false;
  static_options.num_threads = o.threads;
  Engine jit(jit_options);  // throws DeviceUnavailable when this build has no LLVM
  Engine baseline(static_options);
  const EngineStats s0 = jit.stats();
  print_header(o, s0);

  // Serve the stream: each request on both engines, as a server would see it (the JIT's
  // latency includes whatever its caches had to do for a new length).
  std::vector<Served> served;
  std::vector<TensorMap> inputs;
  double worst_diff = 0;
  for (int r = 0; r < o.requests; ++r) {
    Served s;
    s.t = lengths[size_t(r)];
    const RandomRecipe recipe = RandomRecipe::normal(o.seed * 100003 + uint64_t(r), 1.0);
    inputs.push_back({{"x", make_random(DType::F32, Shape{1, s.t, kHidden}, recipe)},
                      {"mask", Tensor::zeros(DType::F32, Shape{1, 1, 1, s.t})}});  // attend everywhere
    const EngineStats before = jit.stats();
    TensorMap jit_out, static_out;
    s.jit_ms = time_ms([&] { jit_out = jit.run(graph, inputs.back()); });
    const EngineStats after = jit.stats();
    s.static_ms = time_ms([&] { static_out = baseline.run(graph, inputs.back()); });
    // Kernels this request waited for (not those a background plan compiled meanwhile).
    s.compiled = (after.kernels_compiled - after.kernels_compiled_background) -
                 (before.kernels_compiled - before.kernels_compiled_background);
    s.loaded = after.disk_hits - before.disk_hits;
    s.compile_ms = after.compile_ms - before.compile_ms;
    s.plan_hit = after.plan_hits > before.plan_hits;
    s.symbolic = after.symbolic_steps > before.symbolic_steps;
    if (o.symbolic) {  // the idle time between requests: the background specialization finishes
      jit.drain();
      s.specialized = jit.stats().kernels_compiled_background - before.kernels_compiled_background;
    }
    const Tensor& a = jit_out.at("y");
    const Tensor& b = static_out.at("y");
    for (int64_t i = 0; i < a.numel(); ++i) worst_diff = std::max(worst_diff, std::fabs(a.at(i) - b.at(i)));

    char ratio[16] = "-";
    if (!s.compiled) std::snprintf(ratio, sizeof ratio, "%.2fx", s.static_ms / s.jit_ms);
    std::printf("  %3d  %4lld  %7.1f  %-22s  %9.1f  %10s\n", r + 1, static_cast<long long>(s.t), s.jit_ms,
                cache_event(s).c_str(), s.static_ms, ratio);
    std::fflush(stdout);
    served.push_back(s);
  }

  // The steady state: the same requests again, every plan now in memory on both engines.
  std::vector<double> replay_jit, replay_static, replay_ratios, store_overhead;
  for (size_t r = 0; r < inputs.size(); ++r) {
    const double j = time_ms([&] { jit.run(graph, inputs[r]); });
    const double st = time_ms([&] { baseline.run(graph, inputs[r]); });
    replay_jit.push_back(j);
    replay_static.push_back(st);
    replay_ratios.push_back(st / j);
    if (!served[r].compiled && served[r].loaded) store_overhead.push_back(served[r].jit_ms - j);
  }

  int compile_events = 0, store_hits = 0, memory_hits = 0;
  uint64_t kernels_compiled = 0, kernels_loaded = 0;
  std::vector<double> jit_ms, static_ms, ratios;
  for (const Served& s : served) {
    compile_events += s.compiled ? 1 : 0;
    store_hits += !s.compiled && s.loaded ? 1 : 0;
    memory_hits += !s.compiled && !s.loaded ? 1 : 0;
    kernels_compiled += s.compiled;
    kernels_loaded += s.loaded;
    jit_ms.push_back(s.jit_ms);
    static_ms.push_back(s.static_ms);
    if (!s.compiled) ratios.push_back(s.static_ms / s.jit_ms);
  }
  const EngineStats s = jit.stats();
  std::printf("\nsummary:\n");
  std::printf("  requests %d, distinct lengths %zu\n", o.requests,
              std::set<int64_t>(lengths.begin(), lengths.end()).size());
  std::printf("  compile events %d (%llu kernels, %.1f s compiling%s), store hits %d (%llu kernels, %.0f ms linking),"
              " memory hits %d\n",
              compile_events, static_cast<unsigned long long>(kernels_compiled), (s.compile_ms - s0.compile_ms) / 1000.0,
              o.symbolic ? " in all, the background's included" : "",
              store_hits, static_cast<unsigned long long>(kernels_loaded), s.load_ms - s0.load_ms, memory_hits);
  if (o.symbolic) {
    uint64_t specialized = 0, symbolic_requests = 0;
    for (const Served& sv : served) {
      specialized += sv.specialized;
      symbolic_requests += sv.symbolic;
    }
    std::printf("  symbolic: %llu requests of new lengths served on symbolic kernels; %llu exact kernels compiled in"
                " the background between requests\n",
                static_cast<unsigned long long>(symbolic_requests), static_cast<unsigned long long>(specialized));
  }
  std::printf("  cache hit rate %.1f%% (requests served without compiling)\n",
              100.0 * double(o.requests - compile_events) / double(o.requests));
  std::printf("  median latency: jit %.1f ms, static %.1f ms (all requests)\n", median(jit_ms), median(static_ms));
  if (ratios.empty())
    std::printf("  speedup over static kernels: - (every request compiled; see the steady state below)\n");
  else
    std::printf("  speedup over static kernels: %.2fx (median of static/jit over the %zu requests that did not compile)\n",
                median(ratios), ratios.size());
  std::printf("  steady state (the %zu requests replayed, every plan in memory): jit %.1f ms, static %.1f ms median;"
              " speedup %.2fx\n",
              inputs.size(), median(replay_jit), median(replay_static), median(replay_ratios));
  if (!store_overhead.empty())
    std::printf("  a store hit costs %.1f ms more than a memory hit (median): the new shape's plan is still built\n",
                median(store_overhead));
  std::printf("  jit and static outputs agree: max |difference| %.2g\n", worst_diff);
  if (s.disk_enabled)
    std::printf("  kernel store: %s%s\n", s.disk_dir.c_str(),
                compile_events ? " (run again: every kernel comes from here, nothing compiles)" : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  try {
    return run(o);
  } catch (const Error& e) {
    std::fprintf(stderr, "bert_dynamic: %s\n", e.what());
    return e.code() == ErrorCode::DeviceUnavailable ? 4 : 1;
  }
}
