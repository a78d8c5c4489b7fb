#include "tools/fusor/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "ir/error.h"
#include "ir/npy.h"
#include "ir/text_format.h"
#include "onnx/load_onnx.h"

namespace fusor::cli {

Graph load_model(const std::string& path) {
  OnnxOptions options;
  options.warn = warn_to_stderr;
  return fusor::load_model(path, options);
}

Tensor read_input_file(const std::string& path) {
  if (std::filesystem::path(path).extension() == ".pb") return read_onnx_tensor(path);
  return read_npy(path);
}

Args Args::parse(int argc, char** argv, int first, const std::vector<std::string>& valued,
                 const std::vector<std::string>& switches) {
  Args a;
  auto known = [](const std::vector<std::string>& v, const std::string& s) {
    return std::find(v.begin(), v.end(), s) != v.end();
  };
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      a.positional.push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool inline_value = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    if (known(switches, name)) {
      if (inline_value) throw UsageError{name + " takes no value"};
      a.flags.emplace(name, "");
    } else if (known(valued, name)) {
      if (!inline_value) {
        if (i + 1 >= argc) throw UsageError{name + " needs a value"};
        value = argv[++i];
      }
      a.flags.emplace(name, value);
    } else {
      throw UsageError{"unknown option " + name};
    }
  }
  return a;
}

std::optional<std::string> Args::get(const std::string& flag) const {
  auto range = flags.equal_range(flag);
  if (range.first == range.second) return std::nullopt;
  auto last = range.second;
  --last;
  return last->second;
}

std::vector<std::string> Args::all(const std::string& flag) const {
  std::vector<std::string> v;
  auto range = flags.equal_range(flag);
  for (auto it = range.first; it != range.second; ++it) v.push_back(it->second);
  return v;
}

int64_t Args::get_int(const std::string& flag, int64_t fallback, int64_t lo, int64_t hi) const {
  auto v = get(flag);
  if (!v) return fallback;
  int64_t out = 0;
  auto r = std::from_chars(v->data(), v->data() + v->size(), out);
  if (r.ec != std::errc() || r.ptr != v->data() + v->size())
    throw UsageError{flag + " wants an integer, got '" + *v + "'"};
  if (out < lo || out > hi)
    throw UsageError{flag + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + *v};
  return out;
}

std::pair<std::string, std::string> split_assignment(const std::string& text, const std::string& flag) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw UsageError{flag + " wants NAME=VALUE, got '" + text + "'"};
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::map<std::string, int64_t, std::less<>> parse_dims(const Args& args) {
  std::map<std::string, int64_t, std::less<>> dims;
  for (const std::string& d : args.all("--dim")) {
    auto [name, value] = split_assignment(d, "--dim");
    int64_t v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (r.ec != std::errc() || r.ptr != value.data() + value.size())
      throw UsageError{"--dim " + name + " wants an integer size, got '" + value + "'"};
    if (v < 0) throw UsageError{"--dim " + name + " must be >= 0"};
    dims[name] = v;
  }
  return dims;
}


void apply_cache_flags(const Args& args, EngineOptions* options) {
  if (auto dir = args.get("--cache-dir")) {
    if (dir->empty()) throw UsageError{"--cache-dir needs a folder"};
    options->cache_dir = *dir;
  }
  if (args.has("--no-disk-cache")) options->disk_cache = false;
  if (auto url = args.get("--remote")) {
    if (url->empty()) throw UsageError{"--remote needs a URL: redis://[user:password@]host[:port][/db]"};
    options->remote_store = *url;
  }
  if (auto trust = args.get("--remote-trust")) {
    if (*trust != "authenticated" && *trust != "unauthenticated")
      throw UsageError{"--remote-trust is authenticated or unauthenticated, not '" + *trust + "'"};
    options->remote.trust = parse_remote_trust(*trust);
  }
  if (auto ns = args.get("--remote-namespace")) options->remote.key_namespace = *ns;
  if (args.has("--remote-timeout-ms")) {
    const int ms = int(args.get_int("--remote-timeout-ms", 50, 1, 60000));
    options->remote.timeout_ms = options->remote.connect_timeout_ms = ms;
  }
}

std::string backend_usage(BackendKind fallback, bool jit_only) {
  std::string s = "  --backend NAME       the backend (default " + std::string(backend_name(fallback)) + "):\n";
  std::string host_jit;  // "llvm, asmjit"
  for (const BackendInfo& b : kBackends) {
    if (jit_only && b.role == BackendRole::Precompiled) continue;
    if (b.role == BackendRole::HostJit) (host_jit += host_jit.empty() ? "" : ", ") += b.name;
    std::string name(b.name);
    name.resize(std::max<size_t>(name.size() + 1, 9), ' ');
    s += "                         " + name + std::string(b.summary) + "\n";
  }
  if (!host_jit.empty())
    s += "                       (" + host_jit + ": groups they decline run on the static kernels)\n";
  return s;
}

namespace {

std::string remote_json(const EngineStats& s) {
  if (s.remote_url.empty()) return "null";
  auto u = [](uint64_t v) { return std::to_string(v); };
  return "{\"url\": " + json_string(s.remote_url) + ", \"enabled\": " + (s.remote_enabled ? "true" : "false") +
         ", \"state\": " + json_string(s.remote_state) + ", \"hits\": " + u(s.remote_hits) +
         ", \"misses\": " + u(s.remote_misses) + ", \"writes\": " + u(s.remote_writes) +
         ", \"rejected\": " + u(s.remote_rejected) + ", \"corrupt\": " + u(s.remote_corrupt) +
         ", \"unavailable\": " + u(s.remote_unavailable) + "}";
}

}  // namespace

std::string stats_json(const EngineStats& s) {
  std::string by_backend;
  for (const auto& [name, ms] : s.compile_ms_by_backend)
    by_backend += (by_backend.empty() ? "" : ", ") + json_string(name) + ": " + json_number(ms);
  auto u = [](uint64_t v) { return std::to_string(v); };
  return "{\"hits\": " + u(s.plan_hits) + ", \"misses\": " + u(s.plan_misses) + ", \"compiles\": " +
         u(s.kernels_compiled) + ", \"disk_hits\": " + u(s.disk_hits) + ", \"disk_writes\": " + u(s.disk_writes) +
         ", \"evictions\": " + u(s.evictions()) + ", \"bytes\": " + u(s.bytes()) + ", \"plans\": " + u(s.plans) +
         ", \"kernel_hits\": " + u(s.kernel_hits) + ", \"compile_ms\": " + json_number(s.compile_ms) +
         ", \"compile_ms_by_backend\": {" + by_backend + "}, \"load_ms\": " + json_number(s.load_ms) + ", \"background_swaps\": " + u(s.background_swaps) +
         ", \"first_tier_kept\": " + u(s.first_tier_kept) + ", \"symbolic_steps\": " + u(s.symbolic_steps) +
         ", \"groups_verified\": " + u(s.groups_verified) + ", \"groups_failed\": " + u(s.groups_failed) +
         ", \"groups_unfused\": " + u(s.groups_unfused) + ", \"verify_worst_error\": " + json_number(s.verify_worst_error) +
         ", \"verify_worst_ratio\": " + json_number(s.verify_worst_ratio) +
         ", \"disk\": " + (s.disk_enabled ? json_string(s.disk_dir) : std::string("null")) +
         ", \"remote\": " + remote_json(s) + "}";
}

std::string stats_text(const EngineStats& s) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "  plans: %llu hits, %llu misses, %llu held\n"
                "  kernels: %llu compiled (%.1f ms), %llu from the store (%.1f ms), %llu shared in memory\n"
                "  evictions %llu, cached bytes %llu; store: %s\n",
                (unsigned long long)s.plan_hits, (unsigned long long)s.plan_misses, (unsigned long long)s.plans,
                (unsigned long long)s.kernels_compiled, s.compile_ms, (unsigned long long)s.disk_hits, s.load_ms,
                (unsigned long long)s.kernel_hits, (unsigned long long)s.evictions(), (unsigned long long)s.bytes(),
                s.disk_enabled ? s.disk_dir.c_str() : "off");
  std::string out = buf;
  if (!s.remote_url.empty()) {
    std::snprintf(buf, sizeof buf,
                  "  remote store %s: %llu hits, %llu misses, %llu writes, %llu rejected, %llu corrupt, %llu "
                  "unavailable%s%s\n",
                  s.remote_url.c_str(), (unsigned long long)s.remote_hits, (unsigned long long)s.remote_misses,
                  (unsigned long long)s.remote_writes, (unsigned long long)s.remote_rejected,
                  (unsigned long long)s.remote_corrupt, (unsigned long long)s.remote_unavailable,
                  s.remote_state.empty() ? "" : "; ", s.remote_state.substr(0, 200).c_str());
    out += buf;
  }
  if (s.background_swaps || s.symbolic_steps) {
    std::snprintf(buf, sizeof buf, "  background plans swapped in %llu, symbolic steps %llu, first-tier kernels kept %llu\n",
                  (unsigned long long)s.background_swaps, (unsigned long long)s.symbolic_steps,
                  (unsigned long long)s.first_tier_kept);
    out += buf;
  }
  if (s.groups_verified) {
    std::snprintf(buf, sizeof buf,
                  "  verify: %llu groups checked, %llu failed, %llu unfused; worst error %.3g of scale (%.3g of its "
                  "tolerance)\n",
                  (unsigned long long)s.groups_verified, (unsigned long long)s.groups_failed,
                  (unsigned long long)s.groups_unfused, s.verify_worst_error, s.verify_worst_ratio);
    out += buf;
  }
  return out;
}

void apply_verify_flag(const Args& args, EngineOptions* options) {
  if (auto mode = args.get("--verify")) {
    try {
      options->verify = parse_verify_mode(*mode);
    } catch (const Error& e) {
      throw UsageError{"--verify " + *mode + ": expected warn, strict or fallback"};
    }
  }
}

void apply_tune_flag(const Args& args, EngineOptions* options) {
  if (!args.has("--tune")) return;
  if (options->backend != BackendKind::Llvm)
    throw UsageError{"--tune is for --backend llvm (it chooses the tilings of LLVM's contractions), not " +
                     std::string(backend_name(options->backend))};
  options->tune = true;
}

void apply_precision_flag(const Args& args, EngineOptions* options) {
  if (auto p = args.get("--precision")) {
    try {
      options->precision = parse_precision(*p);
    } catch (const Error& e) {
      throw UsageError{"--precision " + *p + ": expected fp32, bf16 or auto"};
    }
  }
}

}  // namespace fusor::cli
