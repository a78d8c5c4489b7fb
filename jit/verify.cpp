#include "jit/verify.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cache/checksum.h"
#include "codegen/precision.h"
#include "ir/passes/fold_batchnorm.h"
#include "ir/json.h"
#include "ir/op_schema.h"
#include "ir/random.h"

namespace fusor {

namespace {

// Unit roundoff of a floating dtype (0 for integer and bool: those compare exactly).
double unit_roundoff(DType t) {
  switch (t) {
    case DType::F32: return std::ldexp(1.0, -24);
    case DType::F16: return std::ldexp(1.0, -11);
    case DType::BF16: return std::ldexp(1.0, -8);
    default: return 0;
  }
}

// The terms one output element of node n sums (Note [Verify tolerances]); 0 elementwise.
int64_t terms_of(const Graph& g, const std::vector<TensorType>& types, const Node& n) {
  auto shape = [&](int i) -> const Shape& { return types[size_t(n.inputs[size_t(i)])].shape; };
  auto numel_ratio = [&] {
    const int64_t out = types[size_t(n.outputs[0])].shape.numel();
    return out > 0 ? shape(0).numel() / out : 0;
  };
  auto dims_from = [&](const Shape& s, int64_t axis) {
    const int64_t rank = s.rank();
    if (axis < 0) axis += rank;
    int64_t t = 1;
    for (int64_t d = std::clamp<int64_t>(axis, 0, rank); d < rank; ++d) t *= s[int(d)];
    return t;
  };
  switch (n.op) {
    case OpKind::MatMul: return shape(0).rank() ? shape(0)[shape(0).rank() - 1] : 1;
    case OpKind::Gemm: return shape(0).rank() == 2 ? shape(0)[attr_int(n, "transA") ? 0 : 1] : 1;
    case OpKind::Conv: return shape(1).rank() && shape(1)[0] ? shape(1).numel() / shape(1)[0] : 1;
    case OpKind::LayerNormalization: return dims_from(shape(0), attr_int(n, "axis"));
    case OpKind::Softmax: {
      const int64_t rank = shape(0).rank();
      int64_t axis = attr_int(n, "axis");
      if (axis < 0) axis += rank;
      return axis >= 0 && axis < rank ? shape(0)[int(axis)] : 1;
    }
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ReduceProd:
    case OpKind::GlobalAveragePool:
    case OpKind::AveragePool: return numel_ratio();
    default: (void)g; return 0;
  }
}

// Element i of a host tensor as a double.
inline double element(const Tensor& t, const float* f, int64_t i) { return f ? double(f[i]) : t.at(i); }

std::string outputs_str(const FusedGraph& f, const FusionGroup& grp) {
  std::string s;
  for (ValueId o : grp.outputs) {
    if (!s.empty()) s += ", ";
    s += f.graph.value(o).name + ": " + f.types[size_t(o)].str();
  }
  return s;
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

}  // namespace

double verify_tolerance(const FusedGraph& f, size_t group, const KernelSpec& spec) {
  const FusionGroup& grp = f.groups[group];
  double u = 0;
  for (ValueId o : grp.outputs) u = std::max(u, unit_roundoff(f.types[size_t(o)].dtype));
  int64_t terms = 0;
  for (NodeId id : grp.nodes) terms += terms_of(f.graph, f.types, f.graph.node(id));
  const bool bf16 = is_bf16(spec);
  return u * 8.0 * (double(grp.nodes.size()) + std::sqrt(double(terms))) + (bf16 ? kBf16ContractionTolerance : 0.0);
}

void compare_output(const Tensor& got, const Tensor& ref, double tolerance, GroupVerdict& v) {
  FUSOR_ASSERT(got.dtype() == ref.dtype() && got.numel() == ref.numel(), "verify compares ", got.type_str(), " with ",
               ref.type_str());
  const int64_t n = ref.numel();
  if (!is_floating(ref.dtype())) {
    int64_t unequal = 0;
    for (int64_t i = 0; i < n; ++i) unequal += got.at(i) != ref.at(i);
    v.mismatched += unequal;
    if (unequal) {
      v.error = std::max(v.error, 1.0);
      v.passed = false;
    }
    return;
  }
  const float* gf = got.dtype() == DType::F32 ? static_cast<const float*>(got.raw()) : nullptr;
  const float* rf = ref.dtype() == DType::F32 ? static_cast<const float*>(ref.raw()) : nullptr;
  double scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double r = element(ref, rf, i);
    if (std::isfinite(r)) scale = std::max(scale, std::fabs(r));
  }
  if (scale == 0) scale = 1;  // an all-zero reference: absolute errors
  double max_abs = 0, max_rel = 0;
  int64_t over = 0, nonfinite = 0;
  const double bound = tolerance * scale;
  for (int64_t i = 0; i < n; ++i) {
    const double r = element(ref, rf, i), x = element(got, gf, i);
    if (std::isnan(r)) continue;  // Note [Verify tolerances]: NaN propagation differs by ISA
    if (std::isinf(r)) {
      over += x != r;
      continue;
    }
    if (!std::isfinite(x)) {
      ++nonfinite;
      continue;
    }
    const double d = std::fabs(x - r);
    max_abs = std::max(max_abs, d);
    if (std::fabs(r) >= 1e-3 * scale) max_rel = std::max(max_rel, d / std::fabs(r));
    over += d > bound;
  }
  const double error = max_abs / scale;
  if (error >= v.error) {
    v.error = error;
    v.max_abs = max_abs;
    v.scale = scale;
  }
  v.max_rel = std::max(v.max_rel, max_rel);
  v.new_nonfinite += nonfinite;
  v.mismatched += over + nonfinite;
  if (over || nonfinite) v.passed = false;
}

std::string GroupVerdict::json() const {
  std::string o;
  for (const std::string& op : ops) o += (o.empty() ? "" : ", ") + json_string(op);
  auto b = [](bool x) { return std::string(x ? "true" : "false"); };
  std::string g, w;
  for (const std::string& x : guards) g += (g.empty() ? "" : ", ") + json_string(x);
  for (const std::string& x : as_written) w += (w.empty() ? "" : ", ") + json_string(x);
  return "{\"kernel\": " + json_string(kernel) + ", \"pattern\": " + json_string(pattern) + ", \"ops\": [" + o +
         "], \"outputs\": " + json_string(outputs) + ", \"passed\": " + b(passed) + ", \"error\": " +
         json_number(error) + ", \"tolerance\": " + json_number(tolerance) + ", \"scale\": " + json_number(scale) +
         ", \"max_abs\": " + json_number(max_abs) + ", \"max_rel\": " + json_number(max_rel) +
         ", \"new_nonfinite\": " + std::to_string(new_nonfinite) + ", \"mismatched\": " + std::to_string(mismatched) +
         ", \"unfused\": " + b(unfused) + ", \"remembered\": " + b(remembered) + ", \"guards\": [" + g + "], \"as_written\": [" + w + "]}";
}

std::string verdicts_json(const std::vector<GroupVerdict>& verdicts) {
  std::string out;
  for (const GroupVerdict& v : verdicts) out += (out.empty() ? "" : ", ") + v.json();
  return "[" + out + "]";
}

namespace {

// A digest of what a fold was made from (its ops' constants and attributes), as hex: a
// verdict against the ops as written holds for those constants only.
std::string fold_digest(const FoldedBatchNorm& fold) {
  uint64_t h = checksum64(fold.producer.name.data(), fold.producer.name.size());
  auto add = [&](const Tensor& t) {
    if (t.defined()) h = checksum64(t.raw(), t.nbytes(), h);
    h = checksum64(&h, sizeof h, uint64_t(t.numel()));
  };
  for (const Tensor& t : fold.producer_constants) add(t);
  for (const Tensor& t : fold.bn_constants) add(t);
  for (const double d : {attr_float(fold.batchnorm, "epsilon"), fold.variance_floor}) h = checksum64(&d, sizeof d, h);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// A stored verdict: "FVD1", then error, tolerance, scale, max_abs, max_rel as f64, then
// new_nonfinite and mismatched as i64, then passed as one byte (little-endian, as written).
constexpr char kVerdictMagic[4] = {'F', 'V', 'D', '1'};
constexpr size_t kVerdictBytes = sizeof kVerdictMagic + 5 * sizeof(double) + 2 * sizeof(int64_t) + 1;

}  // namespace

std::vector<uint8_t> encode_verdict(const GroupVerdict& v) {
  std::vector<uint8_t> out(kVerdictBytes);
  uint8_t* p = out.data();
  auto put = [&](const void* src, size_t n) {
    std::memcpy(p, src, n);
    p += n;
  };
  put(kVerdictMagic, sizeof kVerdictMagic);
  for (double d : {v.error, v.tolerance, v.scale, v.max_abs, v.max_rel}) put(&d, sizeof d);
  for (int64_t i : {v.new_nonfinite, v.mismatched}) put(&i, sizeof i);
  const uint8_t passed = v.passed;
  put(&passed, 1);
  return out;
}

std::optional<GroupVerdict> decode_verdict(std::span<const uint8_t> bytes) {
  if (bytes.size() != kVerdictBytes || std::memcmp(bytes.data(), kVerdictMagic, sizeof kVerdictMagic) != 0)
    return std::nullopt;
  const uint8_t* p = bytes.data() + sizeof kVerdictMagic;
  auto get = [&](void* dst, size_t n) {
    std::memcpy(dst, p, n);
    p += n;
  };
  GroupVerdict v;
  for (double* d : {&v.error, &v.tolerance, &v.scale, &v.max_abs, &v.max_rel}) get(d, sizeof *d);
  for (int64_t* i : {&v.new_nonfinite, &v.mismatched}) get(i, sizeof *i);
  uint8_t passed = 0;
  get(&passed, 1);
  if (passed > 1) return std::nullopt;
  v.passed = passed;
  for (double d : {v.error, v.tolerance, v.scale, v.max_abs, v.max_rel})
    if (!(d >= 0)) return std::nullopt;  // negative or NaN: not a verdict fusor wrote
  return v;
}

std::string GroupVerdict::str() const {
  std::string s = kernel + ": " + (passed ? "passed" : "FAILED") + ", error " + num(error) + " of scale " + num(scale) +
                  " (tolerance " + num(tolerance) + "), max abs " + num(max_abs) + ", max rel " + num(max_rel);
  if (new_nonfinite) s += ", " + std::to_string(new_nonfinite) + " new NaN/Inf";
  if (mismatched) s += ", " + std::to_string(mismatched) + " elements beyond";
  if (unfused) s += "; runs unfused from now on";
  if (remembered) s += " (remembered: this kernel passed before)";
  for (size_t i = 0; i < guards.size(); ++i) s += (i ? "; " : "; guarded: ") + guards[i];
  for (size_t i = 0; i < as_written.size(); ++i) s += (i ? "; " : "; against ") + as_written[i];
  std::string o;
  for (const std::string& op : ops) o += (o.empty() ? "" : ", ") + op;
  return s + " [" + pattern + ": " + o + " -> " + outputs + "]";
}

TensorMap verify_inputs(const Graph& g, const std::vector<TensorType>& types) {
  TensorMap inputs;
  for (size_t i = 0; i < types.size(); ++i) {
    const RandomRecipe r = is_floating(types[i].dtype) ? RandomRecipe::normal(1000 + i, 1.0)
                                                       : RandomRecipe::uniform(1000 + i, 0.0, 2.0);
    inputs.emplace(g.value(g.inputs()[i]).name, make_random(types[i].dtype, types[i].shape, r));
  }
  return inputs;
}

VerifyMode parse_verify_mode(const std::string& name) {
  for (VerifyMode m : {VerifyMode::Off, VerifyMode::Warn, VerifyMode::Strict, VerifyMode::Fallback})
    if (name == verify_mode_name(m)) return m;
  fail(ErrorCode::InvalidArgument, "unknown verify mode '", name, "' (off, warn, strict or fallback)");
}

const char* verify_mode_name(VerifyMode mode) {
  switch (mode) {
    case VerifyMode::Off: return "off";
    case VerifyMode::Warn: return "warn";
    case VerifyMode::Strict: return "strict";
    case VerifyMode::Fallback: return "fallback";
  }
  return "?";
}

Verifier::Verifier(VerifyMode mode, double tolerance_scale, std::function<void(const std::string&)> warn,
                   KernelStore* store, std::function<std::string(const CompiledKernel&)> key_of)
    : mode_(mode), scale_(tolerance_scale), warn_(std::move(warn)), store_(store), key_of_(std::move(key_of)) {
  FUSOR_CHECK(std::isfinite(tolerance_scale) && tolerance_scale >= 0, InvalidArgument,
              "verify_tolerance_scale must be finite and >= 0, not ", tolerance_scale);
}

bool Verifier::claim(const Plan& plan) const {
  // Claimed once whatever the plan holds, so that a later run of it costs one load.
  if (mode_ == VerifyMode::Off || plan.verify_claimed.load(std::memory_order_relaxed) ||
      plan.verify_claimed.exchange(true))
    return false;
  for (const Step& st : plan.steps)
    if (st.kernel) return true;
  return false;
}

void Verifier::execute_checked(const Plan& plan, const std::vector<const Tensor*>& feeds, TensorMap& outputs,
                               Parallel& parallel, ArenaPool& arenas, StepTimes* times) {
  const FusedGraph& f = plan.fused;
  std::vector<GroupVerdict> verdicts;
  const StepCheck check = [&](const Step& st, std::vector<Tensor>& values) {
    const FusionGroup& grp = f.groups[size_t(st.group)];
    GroupVerdict v;
    v.kernel = st.label;
    v.pattern = grp.pattern;
    std::string folds;  // what the folds in this group were made from (their verdict depends on it)
    for (NodeId id : grp.nodes) {
      const Node& n = f.graph.node(id);
      v.ops.emplace_back(op_name(n.op));
      for (const PassNote& note : f.log.applied) {
        if (note.node != n.name) continue;
        if (!note.guard.empty()) v.guards.push_back(note.guard);
        if (note.folded) folds.append(":").append(fold_digest(*note.folded));
      }
    }
    v.outputs = outputs_str(f, grp);
    v.tolerance = scale_ * verify_tolerance(f, size_t(st.group), st.kernel->spec);
    // Note [Verdicts kept with the kernel]: a kernel that passed before is not run again.
    std::string key = key_of_ ? key_of_(*st.kernel) : std::string();
    if (!key.empty()) key = "verdict:" + num(scale_) + folds + ":" + key;
    if (std::optional<GroupVerdict> known = key.empty() ? std::nullopt : remembered(key)) {
      v.error = known->error;
      v.scale = known->scale;
      v.max_abs = known->max_abs;
      v.max_rel = known->max_rel;
      v.remembered = true;
      verdicts.push_back(std::move(v));
      return;
    }
    std::vector<Tensor> ref = run_group_unfused(f, size_t(st.group), values, parallel, &v.as_written);
    // Each fold the reference undid rounds once more in the kernel's evaluation.
    v.tolerance += scale_ * 8.0 * unit_roundoff(DType::F32) * double(v.as_written.size());
    for (size_t i = 0; i < grp.outputs.size(); ++i)
      compare_output(values[size_t(grp.outputs[i])], ref[i], v.tolerance, v);
    if (!v.passed && mode_ != VerifyMode::Warn) {
      // The run carries on with the unfused results, and so do later runs.
      for (size_t i = 0; i < grp.outputs.size(); ++i) {
        Tensor& t = values[size_t(grp.outputs[i])];
        std::memcpy(t.raw(), ref[i].raw(), t.nbytes());
      }
      st.unfused.set();
      v.unfused = true;
    }
    if (v.passed && !key.empty()) remember(key, v);
    verdicts.push_back(std::move(v));
  };
  execute_plan(plan, feeds, outputs, parallel, arenas, times, &check);
  record(plan, verdicts);
  if (mode_ != VerifyMode::Strict) return;
  for (const GroupVerdict& v : verdicts)
    if (!v.passed) fail(ErrorCode::NumericsMismatch, "verify: ", v.str());
}

std::optional<GroupVerdict> Verifier::remembered(const std::string& key) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = known_.find(key);
    if (it != known_.end()) return it->second;
  }
  if (!store_) return std::nullopt;
  std::optional<std::vector<uint8_t>> bytes = store_->get(key);
  std::optional<GroupVerdict> v = bytes ? decode_verdict(*bytes) : std::nullopt;
  if (!v || !v->passed) return std::nullopt;  // a failure is checked again
  std::lock_guard<std::mutex> lk(mu_);
  if (known_.size() >= kKnown) known_.clear();
  known_.emplace(key, *v);
  return v;
}

void Verifier::remember(const std::string& key, const GroupVerdict& v) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (known_.size() >= kKnown) known_.clear();
    known_[key] = v;
  }
  if (store_) store_->put(key, encode_verdict(v));
}

void Verifier::record(const Plan& plan, const std::vector<GroupVerdict>& verdicts) {
  {
    std::lock_guard<std::mutex> lk(plan.verdicts_mu);
    plan.verdicts = verdicts;
  }
  std::vector<std::string> reports;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (const GroupVerdict& v : verdicts) {
      ++verified_;
      remembered_ += v.remembered;
      failed_ += !v.passed;
      unfused_ += v.unfused;
      worst_error_ = std::max(worst_error_, v.error);
      if (v.tolerance > 0) worst_ratio_ = std::max(worst_ratio_, v.error / v.tolerance);
      else if (!v.passed) worst_ratio_ = INFINITY;
      if (!v.passed && mode_ != VerifyMode::Strict) reports.push_back("verify: " + v.str());  // Strict throws it
      recent_.push_back(v);
      if (recent_.size() > kKept) recent_.pop_front();
    }
  }
  if (warn_)
    for (const std::string& r : reports) warn_(r);
}

std::vector<GroupVerdict> Verifier::verdicts() const {
  std::lock_guard<std::mutex> lk(mu_);
  return {recent_.begin(), recent_.end()};
}

void Verifier::add_stats(EngineStats& s) const {
  std::lock_guard<std::mutex> lk(mu_);
  s.groups_verified += verified_;
  s.groups_failed += failed_;
  s.groups_unfused += unfused_;
  s.verify_remembered += remembered_;
  s.verify_worst_error = std::max(s.verify_worst_error, worst_error_);
  s.verify_worst_ratio = std::max(s.verify_worst_ratio, worst_ratio_);
}

}  // namespace fusor
