#include "ir/passes/fold_batchnorm.h"

#include <cmath>

#include "ir/op_schema.h"
#include "ir/passes/graph_rewriter.h"

namespace fusor {

namespace {

constexpr const char* kPass = "fold_batchnorm";

struct BnParams {
  std::vector<double> scale, shift;  // y = x * scale + shift, per channel
  int floored = 0;
};

// Per-channel scale and shift of a BN, in double, with the variance floor.
BnParams bn_params(const Graph& g, const Node& bn, double floor) {
  const Tensor& gamma = *g.constant_data(bn.inputs[1]);
  const Tensor& beta = *g.constant_data(bn.inputs[2]);
  const Tensor& mean = *g.constant_data(bn.inputs[3]);
  const Tensor& var = *g.constant_data(bn.inputs[4]);
  double eps = attr_float(bn, "epsilon");
  BnParams p;
  for (int64_t c = 0; c < gamma.numel(); ++c) {
    double v = var.at(c) + eps;
    if (!(v >= floor)) {  // also catches NaN
      v = floor;
      ++p.floored;
    }
    double s = gamma.at(c) / std::sqrt(v);
    p.scale.push_back(s);
    p.shift.push_back(beta.at(c) - mean.at(c) * s);
  }
  return p;
}

bool all_finite(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.at(i))) return false;
  return true;
}

// Why P -> BN cannot fold, or "" when it can.
std::string why_not(const Graph& g, const Node& p, const Node& bn, const std::vector<std::vector<NodeId>>& users,
                    const std::vector<char>& is_output) {
  ValueId y = p.outputs[0];
  if (users[size_t(y)].size() != 1) return "multi-consumer: the producer's output has other consumers";
  if (is_output[size_t(y)]) return "the producer's output is a graph output";
  for (int i = 1; i <= 4; ++i)
    if (!g.constant_data(bn.inputs[size_t(i)])) return "BatchNormalization parameters are not constants";
  for (int i = 1; i <= 4; ++i)
    if (g.constant_data(bn.inputs[size_t(i)])->dtype() != DType::F32) return "only f32 is folded";
  if (const Tensor* w = p.inputs.size() > 1 ? g.constant_data(p.inputs[1]) : nullptr; w && w->dtype() != DType::F32)
    return "only f32 is folded";
  switch (p.op) {
    case OpKind::Conv:
      if (!g.constant_data(p.inputs[1])) return "the Conv weight is not a constant";
      if (p.inputs.size() > 2 && p.inputs[2] != kNoValue && !g.constant_data(p.inputs[2]))
        return "the Conv bias is not a constant";
      return "";
    case OpKind::MatMul: {
      const Tensor* w = g.constant_data(p.inputs[1]);
      if (!w) return "the MatMul right operand is not a constant";
      if (w->rank() != 2) return "the MatMul right operand is not 2-D";
      return "";
    }
    case OpKind::Gemm:
      if (!g.constant_data(p.inputs[1])) return "the Gemm B operand is not a constant";
      if (p.inputs.size() > 2 && p.inputs[2] != kNoValue && !g.constant_data(p.inputs[2]))
        return "the Gemm C operand is not a constant";
      return "";
    default: return "unsupported op: BatchNormalization folds into Conv, MatMul and Gemm only";
  }
}

// The producer's folded weight and its folded bias (Conv, MatMul) or C' (Gemm).
struct Folded {
  Tensor weight, bias;
};

Folded fold(const Graph& g, const Node& p, const BnParams& bn) {
  int64_t channels = int64_t(bn.scale.size());
  Tensor w = g.constant_data(p.inputs[1])->clone();
  auto optional_input = [&](size_t i) {
    return p.inputs.size() > i && p.inputs[i] != kNoValue ? g.constant_data(p.inputs[i]) : nullptr;
  };
  if (p.op == OpKind::Conv) {
    // W[m, ...] *= s[m];  b'[m] = b[m] * s[m] + shift[m]  (b = 0 when absent).
    const Tensor* b = optional_input(2);
    int64_t per = w.numel() / channels;
    Tensor nb = Tensor::empty(w.dtype(), Shape{channels});
    for (int64_t m = 0; m < channels; ++m) {
      for (int64_t k = 0; k < per; ++k) w.set(m * per + k, w.at(m * per + k) * bn.scale[size_t(m)]);
      nb.set(m, (b ? b->at(m) : 0.0) * bn.scale[size_t(m)] + bn.shift[size_t(m)]);
    }
    return {std::move(w), std::move(nb)};
  }
  if (p.op == OpKind::MatMul) {
    // W[k, c] *= s[c]; the shift becomes a bias Add.
    int64_t k_dim = w.shape()[0];
    Tensor nb = Tensor::empty(w.dtype(), Shape{channels});
    for (int64_t k = 0; k < k_dim; ++k)
      for (int64_t c = 0; c < channels; ++c) w.set(k * channels + c, w.at(k * channels + c) * bn.scale[size_t(c)]);
    for (int64_t c = 0; c < channels; ++c) nb.set(c, bn.shift[size_t(c)]);
    return {std::move(w), std::move(nb)};
  }
  // Gemm: y = alpha op(A) op(B) + beta C. Scale op(B)'s columns (B's rows when transB);
  // C' = beta * C * s + shift over [M?, N], keeping C's rows when it has them.
  bool tb = attr_int(p, "transB") != 0;
  int64_t rows = w.shape()[0], cols = w.shape()[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) w.set(r * cols + c, w.at(r * cols + c) * bn.scale[size_t(tb ? r : c)]);
  double beta = attr_float(p, "beta");
  const Tensor* c = optional_input(2);
  Shape cshape = c && c->rank() == 2 ? Shape{c->shape()[0], channels} : Shape{channels};
  Tensor nc = Tensor::empty(w.dtype(), cshape);
  int64_t crows = cshape.rank() == 2 ? cshape[0] : 1;
  for (int64_t r = 0; r < crows; ++r)
    for (int64_t n2 = 0; n2 < channels; ++n2) {
      double cv = 0;
      if (c) {  // C under numpy broadcasting to [crows, channels]
        const Shape& s = c->shape();
        int64_t ci = s.rank() == 0   ? 0
                     : s.rank() == 1 ? (s[0] == 1 ? 0 : n2)
                                     : (s[0] == 1 ? 0 : r) * s[1] + (s[1] == 1 ? 0 : n2);
        cv = c->at(ci);
      }
      nc.set(r * channels + n2, beta * cv * bn.scale[size_t(n2)] + bn.shift[size_t(n2)]);
    }
  return {std::move(w), std::move(nc)};
}

}  // namespace

Graph fold_batchnorm(const Graph& g, const FusionOptions& options, FusionLog* log, const DeriveConstants& derive) {
  if (!options.fold_batchnorm) return g;
  auto users = value_consumers(g);
  std::vector<char> is_output(g.values().size(), 0);
  for (ValueId o : g.outputs()) is_output[size_t(o)] = 1;

  // First decide which (producer, BN) pairs fold, so the rewrite is one ordered walk.
  std::vector<NodeId> fold_into(g.nodes().size(), -1);  // BN node -> producer node
  std::vector<char> folded_producer(g.nodes().size(), 0);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& bn = g.nodes()[i];
    if (bn.op != OpKind::BatchNormalization) continue;
    const Value& x = g.value(bn.inputs[0]);
    if (x.kind != ValueKind::NodeOutput) {
      log->decline("", bn.name, "no producer", "the BatchNormalization input is a graph input or constant");
      continue;
    }
    const Node& p = g.node(x.producer);
    std::string reason = why_not(g, p, bn, users, is_output);
    if (!reason.empty()) {
      log->decline(p.name, bn.name, reason);
      continue;
    }
    if (p.op == OpKind::MatMul) {
      // The BN channel axis is 1; for a rank-2 MatMul output that is the column axis.
      // (Shapes are concrete after tracing; the weight's column count must match C.)
      const Tensor& w = *g.constant_data(p.inputs[1]);
      if (w.shape()[1] != g.constant_data(bn.inputs[1])->numel()) {
        log->decline(p.name, bn.name, "shape mismatch", "BN channels are not the MatMul columns");
        continue;
      }
    }
    fold_into[i] = x.producer;
    folded_producer[size_t(x.producer)] = 1;
  }

  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (folded_producer[i]) continue;  // emitted when its BN is reached
    if (n.op != OpKind::BatchNormalization || fold_into[i] < 0) {
      rw.copy_node(n);
      continue;
    }
    const Node& p = g.node(fold_into[i]);
    // The fold reads P's constants and the BN's; the recipe carries every parameter.
    ConstantDerivation d;
    d.recipe = "fold_batchnorm " + std::string(op_name(p.op)) + " floor=" + format_double(options.bn_variance_floor) +
               " eps=" + format_double(attr_float(n, "epsilon"));
    if (p.op == OpKind::Gemm)
      d.recipe += " transB=" + std::to_string(attr_int(p, "transB")) + " beta=" + format_double(attr_float(p, "beta"));
    for (const Node* src : {&p, &n})
      for (size_t k = 1; k < src->inputs.size(); ++k) {
        const Tensor* c = src->inputs[k] == kNoValue ? nullptr : g.constant_data(src->inputs[k]);
        d.sources.push_back(c ? *c : Tensor());  // an absent input stays a placeholder: positions differ
      }
    const BnParams bn = bn_params(g, n, options.bn_variance_floor);  // per channel: cheap, and the log needs it
    std::vector<Tensor> made = derive_constants(derive, d, [&] {
      Folded folded = fold(g, p, bn);
      return std::vector<Tensor>{std::move(folded.weight), std::move(folded.bias)};
    });
    Folded f{made.at(0), made.at(1)};
    if (!all_finite(f.weight) || !all_finite(f.bias)) {
      log->decline(p.name, n.name, "overflow", "folded weights are not finite in f32");
      rw.copy_node(p);
      rw.copy_node(n);
      continue;
    }
    const std::string& out_name = g.value(n.outputs[0]).name;
    ValueId wv = rw.add_constant(p.name + ".w_folded", std::move(f.weight));
    ValueId bv = rw.add_constant(p.name + (p.op == OpKind::Gemm ? ".c_folded" : ".b_folded"), std::move(f.bias));
    ValueId x = rw.mapped(p.inputs[0]);
    ValueId new_out;
    if (p.op == OpKind::Conv) {
      new_out = rw.emit(OpKind::Conv, {x, wv, bv}, p.attrs, out_name, p.name);
    } else if (p.op == OpKind::MatMul) {
      ValueId mm = rw.emit(OpKind::MatMul, {x, wv}, {}, rw.graph().unique_name(p.name + ".mm"), p.name);
      new_out = rw.emit(OpKind::Add, {mm, bv}, {}, out_name, rw.graph().unique_name(p.name + ".bias"));
    } else {
      Attributes attrs = p.attrs;
      attrs["beta"] = 1.0;  // beta is folded into C'
      new_out = rw.emit(OpKind::Gemm, {x, wv, bv}, attrs, out_name, p.name);
    }
    rw.map(n.outputs[0], new_out);
    std::string msg = "folded " + n.name + " into " + std::string(op_name(p.op)) + " " + p.name;
    std::string guard;
    if (bn.floored) {
      guard = "BatchNorm variance floor " + format_double(options.bn_variance_floor) + " applied to " +
              std::to_string(bn.floored) + " channels of " + n.name;
      msg += " (" + guard + ")";
    }
    auto folded = std::make_shared<FoldedBatchNorm>();
    folded->producer = p;
    folded->batchnorm = n;
    for (size_t k = 1; k < p.inputs.size(); ++k)
      folded->producer_constants.push_back(p.inputs[k] == kNoValue ? Tensor() : *g.constant_data(p.inputs[k]));
    for (size_t k = 1; k <= 4; ++k) folded->bn_constants.push_back(*g.constant_data(n.inputs[k]));
    folded->output = out_name;
    folded->variance_floor = options.bn_variance_floor;
    log->note(kPass, p.name, msg, guard, std::move(folded));
  }
  return rw.finish();
}

}  // namespace fusor
