// The ONNX backend node tests (Debian's libonnx-testdata: ONNX 1.12's
// onnx/backend/test/data/node/<test>/{model.onnx, test_data_set_N/{input,output}_K.pb}) run
// through load_onnx and an Engine on one backend, compared with the expected outputs.
//
//   fusor_onnx_conformance [--backend static|llvm|asmjit] [--data DIR] [--deviations FILE]
//                          [--filter SUBSTRING] [--verbose]
//
// Every test ends in one of four states:
//   passed         every output matches (tolerances below);
//   not supported  fusor says so with Error(Unsupported): an operator, an opset, a dtype
//                  (double, uint8, ...) or a form (a 1-D or 3-D Conv) it does not have;
//   deviation      it does not pass, and the deviations file lists it with the reason;
//   failed         anything else: a wrong value, dtype or shape, or another error.
// The program prints a summary by operator and exits 1 when a test failed or a listed
// deviation passes (the list must not go stale), 77 (skipped) when the data is missing.
//
// Tolerances: |got - want| <= atol + rtol * |want| with f32 rtol 1e-4, atol 1e-5 (fusor's
// exp/tanh/erf approximations are within a few ulp; sums are accumulated in another order);
// f16 and bf16 rtol 1e-2, atol 1e-3 (one rounding of the result); integers and bools exact.
// NaN matches NaN, an infinity matches itself.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/error.h"
#include "jit/engine.h"
#include "onnx/load_onnx.h"

namespace fs = std::filesystem;
using namespace fusor;

namespace {

enum class Status { Passed, NotSupported, Deviation, Failed };

struct Outcome {
  Status status = Status::Passed;
  std::string why;
};

struct Options {
  BackendKind backend = BackendKind::Static;
  std::string data = "/usr/share/libonnx-testdata/data/node";
  std::string deviations;
  std::string filter;
  bool verbose = false;
};

std::string lower_no_underscores(const std::string& s) {
  std::string out;
  for (char c : s)
    if (c != '_') out += char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Files named prefix_<k>.pb in a folder, ordered by k.
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix + "_", 0) != 0 || e.path().extension() != ".pb") continue;
    found.emplace_back(std::atoi(name.c_str() + prefix.size() + 1), e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& [k, p] : found) out.push_back(p);
  return out;
}

bool close_enough(const Tensor& got, const Tensor& want, std::string* why) {
  if (got.dtype() != want.dtype()) {
    *why = "dtype " + std::string(dtype_name(got.dtype())) + ", expected " + std::string(dtype_name(want.dtype()));
    return false;
  }
  if (got.shape() != want.shape()) {
    *why = "shape " + got.shape().str() + ", expected " + want.shape().str();
    return false;
  }
  double rtol = 0, atol = 0;
  if (want.dtype() == DType::F32) rtol = 1e-4, atol = 1e-5;
  else if (is_floating(want.dtype())) rtol = 1e-2, atol = 1e-3;
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.at(i), w = want.at(i);
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      if (first < 0) first = i;
      ++bad;
      worst = std::max(worst, std::fabs(g - w));
    }
  }
  if (!bad) return true;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%lld of %lld values differ (first at %lld: %.9g, expected %.9g; max |diff| %.3g)",
                static_cast<long long>(bad), static_cast<long long>(want.numel()), static_cast<long long>(first),
                got.at(first), want.at(first), worst);
  *why = buf;
  return false;
}

// Strips "<model path>: " from a loader message.
std::string without_source(const std::string& message, const std::string& source) {
  return message.rfind(source + ": ", 0) == 0 ? message.substr(source.size() + 2) : message;
}

struct TestData {
  std::vector<Tensor> inputs, outputs;
  std::vector<std::string> input_names;  // the TensorProtos' names (the ONNX input names)
};

// Which graph inputs run as constants: fusor needs shape-defining operands (Reshape's shape,
// Slice's starts, Range's limits, ReduceSum's axes) as constants, where the ONNX tests feed
// them as inputs. A test that fails for that alone is run again with its integer inputs
// made constants (OnnxOptions::constant_inputs), then with all of them: the operator's
// semantics are tested on the same values.
enum class Freeze { None, Integers, All };

Outcome run_set(Engine& engine, const std::string& model, const TestData& data, Freeze freeze, const std::string& set) {
  OnnxOptions options{.warn = [](const std::string&) {}};
  for (size_t k = 0; k < data.inputs.size(); ++k)
    if (freeze == Freeze::All || (freeze == Freeze::Integers && is_integer(data.inputs[k].dtype())))
      options.constant_inputs[data.input_names[k]] = data.inputs[k];
  Graph graph;
  try {
    graph = load_onnx(model, options);
  } catch (const Error& e) {
    return {e.code() == ErrorCode::Unsupported ? Status::NotSupported : Status::Failed,
            "load: " + std::string(error_code_name(e.code())) + ": " + without_source(e.message(), model)};
  }
  if (data.outputs.size() != graph.outputs().size())
    return {Status::Failed, set + ": " + std::to_string(data.outputs.size()) + " output files for " +
                                std::to_string(graph.outputs().size()) + " graph outputs"};
  TensorMap inputs;
  for (size_t k = 0; k < data.inputs.size(); ++k) {
    if (options.constant_inputs.count(data.input_names[k])) continue;
    ValueId v = graph.find_value(data.input_names[k]);
    if (v == kNoValue || graph.value(v).kind != ValueKind::Input)
      return {Status::Failed, set + ": input file " + std::to_string(k) + " names '" + data.input_names[k] +
                                  "', which is not a graph input"};
    inputs[data.input_names[k]] = data.inputs[k];
  }
  TensorMap outputs;
  try {
    outputs = engine.run(graph, inputs);
  } catch (const std::exception& x) {
    const Error* fe = dynamic_cast<const Error*>(&x);
    if (!fe) return {Status::Failed, "run: not a fusor::Error: " + std::string(x.what())};
    const Error& e = *fe;
    bool needs_constants = e.code() == ErrorCode::Unsupported && e.message().find("must be a constant") != std::string::npos;
    if (needs_constants && freeze != Freeze::All)
      return run_set(engine, model, data, freeze == Freeze::None ? Freeze::Integers : Freeze::All, set);
    return {e.code() == ErrorCode::Unsupported ? Status::NotSupported : Status::Failed,
            "run: " + std::string(error_code_name(e.code())) + ": " + e.message()};
  }
  for (size_t k = 0; k < data.outputs.size(); ++k) {
    const std::string& name = graph.value(graph.outputs()[k]).name;
    std::string why;
    if (!close_enough(outputs.at(name), data.outputs[k], &why))
      return {Status::Failed, set + ": output '" + name + "': " + why};
  }
  return {};
}

Outcome run_test(Engine& engine, const fs::path& dir) {
  const std::string model = (dir / "model.onnx").string();
  try {  // a model fusor refuses is reported as such before its data is read
    load_onnx(model, {.warn = [](const std::string&) {}});
  } catch (const Error& e) {
    return {e.code() == ErrorCode::Unsupported ? Status::NotSupported : Status::Failed,
            "load: " + std::string(error_code_name(e.code())) + ": " + without_source(e.message(), model)};
  }
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Status::Failed, "no test_data_set_* folder"};
  for (const fs::path& set : sets) {
    TestData data;
    try {
      for (const fs::path& f : numbered(set, "input")) {
        std::string name;
        data.inputs.push_back(read_onnx_tensor(f.string(), &name));
        data.input_names.push_back(name);
      }
      for (const fs::path& f : numbered(set, "output")) data.outputs.push_back(read_onnx_tensor(f.string()));
    } catch (const Error& e) {
      return {e.code() == ErrorCode::Unsupported ? Status::NotSupported : Status::Failed,
              "test data: " + std::string(error_code_name(e.code())) + ": " + e.message()};
    }
    Outcome o = run_set(engine, model, data, Freeze::None, set.filename().string());
    if (o.status != Status::Passed) return o;
  }
  return {};
}

// The deviations file: "test_name  reason" per line; '#' starts a comment.
std::map<std::string, std::string> read_deviations(const std::string& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "conformance: cannot read the deviations file %s\n", path.c_str());
    std::exit(2);
  }
  std::string line;
  while (std::getline(in, line)) {
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    size_t e = line.find_first_of(" \t", b);
    std::string name = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    std::string reason = e == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", e));
    out[name] = reason;
  }
  return out;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "conformance: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--backend") o.backend = parse_backend(value());
    else if (a == "--data") o.data = value();
    else if (a == "--deviations") o.deviations = value();
    else if (a == "--filter") o.filter = value();
    else if (a == "--verbose" || a == "-v") o.verbose = true;
    else {
      std::fprintf(stderr, "conformance: unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) try {
  Options opt = parse_args(argc, argv);
  if (!fs::is_directory(opt.data)) {
    std::printf("skipped: no ONNX node tests at %s (install libonnx-testdata)\n", opt.data.c_str());
    return 77;
  }
  std::map<std::string, std::string> deviations = read_deviations(opt.deviations);
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(opt.data))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx") &&
        e.path().filename().string().find(opt.filter) != std::string::npos)
      tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());

  // Each test is counted under its operator: the one non-Constant op_type of its model, or
  // for a composite model (an "_expanded" function body) the op_type its name starts with.
  std::vector<std::vector<OnnxOperatorUse>> used(tests.size());
  std::set<std::string> vocabulary;
  for (size_t i = 0; i < tests.size(); ++i) {
    try {
      used[i] = onnx_operators_used((tests[i] / "model.onnx").string());
    } catch (const Error&) {
    }
    std::set<std::string> ops;
    for (const auto& u : used[i])
      if (u.op_type != "Constant") ops.insert(u.op_type);
    if (ops.size() == 1) vocabulary.insert(*ops.begin());
  }
  auto operator_of = [&](size_t i) {
    std::set<std::string> ops;
    for (const auto& u : used[i])
      if (u.op_type != "Constant") ops.insert(u.domain.empty() ? u.op_type : u.domain + "." + u.op_type);
    if (ops.size() == 1) return *ops.begin();
    if (ops.empty() && !used[i].empty()) return std::string("Constant");
    std::string name = lower_no_underscores(tests[i].filename().string().substr(5));
    std::string best;
    for (const std::string& op : vocabulary)
      if (name.rfind(lower_no_underscores(op), 0) == 0 && op.size() > best.size()) best = op;
    return best.empty() ? std::string("(composite)") : best;
  };

  EngineOptions eo;
  eo.backend = opt.backend;
  eo.num_threads = 1;
  eo.disk_cache = false;
  eo.warn = [](const std::string&) {};
  Engine engine(eo);

  struct Row {
    int counts[4] = {0, 0, 0, 0};
  };
  std::map<std::string, Row> rows;
  std::map<Status, std::vector<std::string>> details;
  std::set<std::string> seen_deviations;
  int failures = 0;
  for (size_t i = 0; i < tests.size(); ++i) {
    const std::string name = tests[i].filename().string();
    Outcome o = run_test(engine, tests[i]);
    auto dev = deviations.find(name);
    if (dev != deviations.end()) {
      seen_deviations.insert(name);
      if (o.status == Status::Passed) {
        o = {Status::Failed, "listed as a deviation (" + dev->second + ") but passes: remove it from the list"};
      } else if (o.status == Status::Failed) {
        o = {Status::Deviation, dev->second + " [" + o.why + "]"};
      }
    }
    if (o.status == Status::Failed) ++failures;
    rows[operator_of(i)].counts[int(o.status)]++;
    if (o.status != Status::Passed) details[o.status].push_back(name + ": " + o.why);
    if (opt.verbose)
      std::printf("%-60s %s%s%s\n", name.c_str(),
                  o.status == Status::Passed         ? "passed"
                  : o.status == Status::NotSupported ? "not supported"
                  : o.status == Status::Deviation    ? "deviation"
                                                     : "FAILED",
                  o.why.empty() ? "" : ": ", o.why.c_str());
  }
  for (const auto& [name, reason] : deviations)
    if (!seen_deviations.count(name) && opt.filter.empty()) {
      details[Status::Failed].push_back(name + ": listed as a deviation but there is no such test");
      ++failures;
    }

  int total[4] = {0, 0, 0, 0};
  std::printf("ONNX node tests on backend %s (%s)\n\n", std::string(backend_name(opt.backend)).c_str(), opt.data.c_str());
  std::printf("| operator | passed | failed | deviation | not supported |\n| --- | --- | --- | --- | --- |\n");
  for (const auto& [op, r] : rows) {
    std::printf("| %s | %d | %d | %d | %d |\n", op.c_str(), r.counts[0], r.counts[3], r.counts[2], r.counts[1]);
    for (int k = 0; k < 4; ++k) total[k] += r.counts[k];
  }
  std::printf("| **all %zu tests** | %d | %d | %d | %d |\n\n", tests.size(), total[0], total[3], total[2], total[1]);
  if (!details[Status::Deviation].empty()) {
    std::printf("deviations (listed in %s):\n", opt.deviations.c_str());
    for (const std::string& d : details[Status::Deviation]) std::printf("  %s\n", d.c_str());
  }
  if (opt.verbose || !details[Status::NotSupported].empty()) {
    std::printf("not supported:\n");
    for (const std::string& d : details[Status::NotSupported]) std::printf("  %s\n", d.c_str());
  }
  if (!details[Status::Failed].empty()) {
    std::printf("FAILED:\n");
    for (const std::string& d : details[Status::Failed]) std::printf("  %s\n", d.c_str());
  }
  std::printf("\n%d passed, %d failed, %d deviations, %d not supported\n", total[0], failures, total[2], total[1]);
  return failures ? 1 : 0;
} catch (const Error& e) {
  std::fprintf(stderr, "conformance: %s\n", e.what());
  return 2;
}
