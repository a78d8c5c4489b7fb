#include "codegen/lower.h"

#include <algorithm>
#include <limits>
#include <map>

#include "ir/op_schema.h"
#include "ir/ops/params.h"

namespace fusor {

namespace {

bool is_view_op(OpKind op) { return op_family(op) == OpFamily::View; }

// False for a view op a compute group took (an attention's output transpose: its store).
bool is_view_group_node(const FusedGraph& fused, NodeId n) {
  for (const FusionGroup& grp : fused.groups)
    if (grp.kind != GroupKind::View && std::find(grp.nodes.begin(), grp.nodes.end(), n) != grp.nodes.end()) return false;
  return true;
}

// Thrown inside the lowerer when a group cannot be expressed; caught in lower_group.
struct NotLowerable {
  std::string why;
};

// An expression graph under construction over one index space.
struct Builder {
  ExprGraph g;
  std::vector<int64_t> space;
  std::map<ValueId, int32_t> node_of;
};

class Lowerer {
 public:
  Lowerer(const FusedGraph& f, const FusionGroup& grp) : f_(f), g_(f.graph), grp_(grp) {}

  KernelSpec run();

 private:
  const TensorType& type(ValueId v) const { return f_.types[size_t(v)]; }
  bool in_group(const Node& n) const {
    NodeId id = NodeId(&n - g_.nodes().data());
    return std::find(grp_.nodes.begin(), grp_.nodes.end(), id) != grp_.nodes.end();
  }
  int buffer(ValueId root, bool output);
  // The buffer and view a kernel reads v through: v's view chain resolved, or v itself
  // when the chain needs a copy (the runtime then materializes v; see materialized_views).
  void source(ValueId v, ValueId* root, StridedView* view) {
    if (!resolve_view(f_, v, root, view)) {
      *root = v;
      *view = contiguous_view(type(v).shape);
    }
  }
  // How a kernel reads v over `space` (numpy broadcasting; `transposed`: v's two dims swapped).
  StridedAccess access(ValueId v, const std::vector<int64_t>& space, bool transposed = false);
  int32_t add(Builder& b, ScalarExpr e) {
    b.g.nodes.push_back(e);
    return int32_t(b.g.nodes.size() - 1);
  }
  int32_t unary(Builder& b, ScalarOp op, int32_t x, DType t) {
    ScalarExpr e{op, t};
    e.args[0] = x;
    return add(b, e);
  }
  int32_t binary(Builder& b, ScalarOp op, int32_t x, int32_t y, DType t) {
    ScalarExpr e{op, t};
    e.args[0] = x;
    e.args[1] = y;
    return add(b, e);
  }
  int32_t where(Builder& b, int32_t c, int32_t x, int32_t y, DType t) {
    ScalarExpr e{ScalarOp::Where, t};
    e.args[0] = c;
    e.args[1] = x;
    e.args[2] = y;
    return add(b, e);
  }
  int32_t constant(Builder& b, double v, DType t) {
    ScalarExpr e{ScalarOp::Const, t};
    e.value = v;
    return add(b, e);
  }
  // The node holding v's value in b: computed earlier, a scalar constant, or a load.
  int32_t value(Builder& b, ValueId v);
  int32_t load(Builder& b, StridedAccess a);
  // Emits pointwise node n (all its inputs available) and records its output.
  void emit(Builder& b, const Node& n);
  // Stores v's value over b's space: contiguously, or at `strides` (one per dim of the space).
  void store(Builder& b, ValueId v, std::vector<int64_t> strides = {});
  // A Transpose ending a group (an attention group's output transpose): its input's value,
  // stored at the transposed place.
  void emit_transpose(Builder& b, const Node& n);
  // Emits the group's nodes in [from, to) positions of grp_.nodes that are pointwise, in order.
  void emit_range(Builder& b, size_t from, size_t to);
  bool is_group_output(ValueId v) const {
    return std::find(grp_.outputs.begin(), grp_.outputs.end(), v) != grp_.outputs.end();
  }

  void lower_pointwise();
  void lower_contraction();
  void lower_reduction();
  void lower_attention();

  const FusedGraph& f_;
  const Graph& g_;
  const FusionGroup& grp_;
  KernelSpec spec_;
  std::map<ValueId, int> buffers_;
};

int Lowerer::buffer(ValueId root, bool output) {
  auto it = buffers_.find(root);
  if (it != buffers_.end()) return it->second;
  BufferSpec b;
  b.name = g_.value(root).name;
  b.dtype = type(root).dtype;
  b.elements = type(root).shape.numel();
  b.output = output;
  b.constant = g_.value(root).kind == ValueKind::Constant;
  spec_.buffers.push_back(b);
  int id = int(spec_.buffers.size()) - 1;
  buffers_[root] = id;
  return id;
}

StridedAccess Lowerer::access(ValueId v, const std::vector<int64_t>& space, bool transposed) {
  ValueId root;
  StridedView view;
  source(v, &root, &view);
  if (transposed) view = transpose_view(view, {1, 0});
  StridedAccess a;
  a.buffer = buffer(root, false);
  a.dtype = type(root).dtype;
  a.strides = broadcast_strides_to(view, space);
  a.offset = view.offset;
  return a;
}

int32_t Lowerer::load(Builder& b, StridedAccess a) {
  b.g.accesses.push_back(std::move(a));
  ScalarExpr e{ScalarOp::Load, b.g.accesses.back().dtype};
  e.load = int32_t(b.g.accesses.size() - 1);
  return add(b, e);
}

int32_t Lowerer::value(Builder& b, ValueId v) {
  auto it = b.node_of.find(v);
  if (it != b.node_of.end()) return it->second;
  int32_t node;
  const Tensor* c = g_.constant_data(v);
  if (c && c->numel() == 1 && (is_floating(c->dtype()) || is_integer(c->dtype()))) {
    node = constant(b, c->at(0), c->dtype());
  } else {
    node = load(b, access(v, b.space));
  }
  b.node_of[v] = node;
  return node;
}

void Lowerer::emit(Builder& b, const Node& n) {
  if (n.op == OpKind::Transpose) {
    emit_transpose(b, n);
    return;
  }
  DType t = type(n.outputs[0]).dtype;
  // Operands are materialized in input order (not in C++'s unspecified argument order), so
  // specs and their hashes are the same whichever compiler built fusor.
  std::vector<int32_t> operand;
  if (n.op != OpKind::BatchNormalization)
    for (ValueId v : n.inputs) operand.push_back(v == kNoValue ? -1 : value(b, v));
  auto in = [&](int i) { return i < int(operand.size()) ? operand[size_t(i)] : value(b, n.inputs[size_t(i)]); };
  int32_t out = -1;
  switch (n.op) {
    case OpKind::Add: out = binary(b, ScalarOp::Add, in(0), in(1), t); break;
    case OpKind::Sub: out = binary(b, ScalarOp::Sub, in(0), in(1), t); break;
    case OpKind::Mul: out = binary(b, ScalarOp::Mul, in(0), in(1), t); break;
    case OpKind::Div: out = binary(b, ScalarOp::Div, in(0), in(1), t); break;
    case OpKind::Pow: out = binary(b, ScalarOp::Pow, in(0), in(1), t); break;
    case OpKind::Max:
    case OpKind::Min: {
      out = in(0);
      for (size_t i = 1; i < n.inputs.size(); ++i)
        out = binary(b, n.op == OpKind::Max ? ScalarOp::Max : ScalarOp::Min, out, in(int(i)), t);
      break;
    }
    case OpKind::Relu: out = unary(b, ScalarOp::Relu, in(0), t); break;
    case OpKind::Neg: out = unary(b, ScalarOp::Neg, in(0), t); break;
    case OpKind::Exp: out = unary(b, ScalarOp::Exp, in(0), t); break;
    case OpKind::Tanh: out = unary(b, ScalarOp::Tanh, in(0), t); break;
    case OpKind::Erf: out = unary(b, ScalarOp::Erf, in(0), t); break;
    case OpKind::Sigmoid: out = unary(b, ScalarOp::Sigmoid, in(0), t); break;
    case OpKind::Sqrt: out = unary(b, ScalarOp::Sqrt, in(0), t); break;
    case OpKind::Gelu:
      out = unary(b, attr_string(n, "approximate") == "tanh" ? ScalarOp::GeluTanh : ScalarOp::GeluErf, in(0), t);
      break;
    case OpKind::Abs: out = unary(b, ScalarOp::Abs, in(0), t); break;
    case OpKind::Log: out = unary(b, ScalarOp::Log, in(0), t); break;
    case OpKind::Sin: out = unary(b, ScalarOp::Sin, in(0), t); break;
    case OpKind::Cos: out = unary(b, ScalarOp::Cos, in(0), t); break;
    case OpKind::Floor: out = unary(b, ScalarOp::Floor, in(0), t); break;
    case OpKind::Ceil: out = unary(b, ScalarOp::Ceil, in(0), t); break;
    case OpKind::Round: out = unary(b, ScalarOp::Round, in(0), t); break;
    case OpKind::Reciprocal: {
      int32_t one = constant(b, 1.0, t);
      out = binary(b, ScalarOp::Div, one, in(0), t);
      break;
    }
    case OpKind::Clip: {
      // min(max(x, lo), hi) as the static kernel computes it; an absent bound clips nothing.
      out = in(0);
      const char* names[] = {"", "min", "max"};
      for (int i = 1; i < 3; ++i) {
        int32_t bound = -1;
        if (i < int(n.inputs.size()) && n.inputs[size_t(i)] != kNoValue) bound = in(i);
        else if (has_attr(n, names[i])) bound = constant(b, attr_float(n, names[i]), t);
        if (bound >= 0) out = binary(b, i == 1 ? ScalarOp::Max : ScalarOp::Min, out, bound, t);
      }
      break;
    }
    case OpKind::LeakyRelu: {  // x < 0 ? x * alpha : x
      int32_t zero = constant(b, 0.0, t);
      int32_t neg = binary(b, ScalarOp::Lt, in(0), zero, DType::Bool);
      int32_t alpha = constant(b, double(float(attr_float(n, "alpha"))), t);
      int32_t scaled = binary(b, ScalarOp::Mul, in(0), alpha, t);
      out = where(b, neg, scaled, in(0), t);
      break;
    }
    case OpKind::HardSigmoid:
    case OpKind::HardSwish: {  // max(min(x * alpha + beta, 1), 0) [* x]
      const bool swish = n.op == OpKind::HardSwish;
      double alpha = swish ? double(1.0f / 6) : double(float(attr_float(n, "alpha")));
      double beta = swish ? 0.5 : double(float(attr_float(n, "beta")));
      // One node per statement: the order of nodes (and so the spec's hash) must not depend
      // on the compiler's order of evaluating arguments.
      int32_t ka = constant(b, alpha, t);
      int32_t scaled = binary(b, ScalarOp::Mul, in(0), ka, t);
      int32_t kb = constant(b, beta, t);
      int32_t lin = binary(b, ScalarOp::Add, scaled, kb, t);
      int32_t one = constant(b, 1.0, t);
      int32_t upper = binary(b, ScalarOp::Min, lin, one, t);
      int32_t zero = constant(b, 0.0, t);
      out = binary(b, ScalarOp::Max, upper, zero, t);
      if (swish) out = binary(b, ScalarOp::Mul, in(0), out, t);
      break;
    }
    case OpKind::Equal: out = binary(b, ScalarOp::Eq, in(0), in(1), t); break;
    case OpKind::Less: out = binary(b, ScalarOp::Lt, in(0), in(1), t); break;
    case OpKind::LessOrEqual: out = binary(b, ScalarOp::Le, in(0), in(1), t); break;
    case OpKind::Greater: out = binary(b, ScalarOp::Lt, in(1), in(0), t); break;
    case OpKind::GreaterOrEqual: out = binary(b, ScalarOp::Le, in(1), in(0), t); break;
    case OpKind::And: out = binary(b, ScalarOp::And, in(0), in(1), t); break;
    case OpKind::Or: out = binary(b, ScalarOp::Or, in(0), in(1), t); break;
    case OpKind::Not: out = unary(b, ScalarOp::Not, in(0), t); break;
    case OpKind::IsNaN: {
      int32_t same = binary(b, ScalarOp::Eq, in(0), in(0), t);
      out = unary(b, ScalarOp::Not, same, t);
      break;
    }
    case OpKind::IsInf: {
      const DType ft = type(n.inputs[0]).dtype;
      const bool pos = attr_int(n, "detect_positive") != 0, neg = attr_int(n, "detect_negative") != 0;
      const double inf = std::numeric_limits<double>::infinity();
      if (pos && neg) {
        int32_t mag = unary(b, ScalarOp::Abs, in(0), ft);
        int32_t k = constant(b, inf, ft);
        out = binary(b, ScalarOp::Eq, mag, k, t);
      }
      else if (pos || neg) out = binary(b, ScalarOp::Eq, in(0), constant(b, pos ? inf : -inf, ft), t);
      else out = binary(b, ScalarOp::Lt, in(0), constant(b, -inf, ft), t);  // never true
      break;
    }
    case OpKind::Cast: out = unary(b, ScalarOp::Cast, in(0), t); break;
    case OpKind::Where: out = where(b, in(0), in(1), in(2), t); break;
    case OpKind::BatchNormalization: {
      // y = (x - mean) * scale / sqrt(var + eps) + bias, parameters per channel (axis 1).
      int32_t x = in(0);
      std::vector<int32_t> p;
      for (int i = 1; i <= 4; ++i) {
        ValueId v = n.inputs[size_t(i)];
        StridedAccess a = access(v, {type(v).shape[0]});
        a.strides.assign(b.space.size(), 0);
        if (b.space.size() < 2) throw NotLowerable{"BatchNormalization on rank < 2"};
        a.strides[1] = access(v, {type(v).shape[0]}).strides[0];
        p.push_back(load(b, a));
      }
      int32_t eps = constant(b, attr_float(n, "epsilon"), t);
      int32_t ve = binary(b, ScalarOp::Add, p[3], eps, t);
      int32_t sd = unary(b, ScalarOp::Sqrt, ve, t);
      int32_t s = binary(b, ScalarOp::Div, p[0], sd, t);
      int32_t centered = binary(b, ScalarOp::Sub, x, p[2], t);
      int32_t scaled = binary(b, ScalarOp::Mul, centered, s, t);
      out = binary(b, ScalarOp::Add, scaled, p[1], t);
      break;
    }
    default: throw NotLowerable{std::string(op_name(n.op)) + " is not a pointwise op"};
  }
  b.node_of[n.outputs[0]] = out;
  if (is_group_output(n.outputs[0])) store(b, n.outputs[0]);
}

void Lowerer::store(Builder& b, ValueId v, std::vector<int64_t> strides) {
  if (type(v).shape.dims() != b.space && type(v).shape.numel() != Shape(b.space).numel())
    throw NotLowerable{"output '" + g_.value(v).name + "' does not cover the index space"};
  StridedAccess a;
  a.buffer = buffer(v, true);
  a.dtype = type(v).dtype;
  a.strides = strides.empty() ? Shape(b.space).strides() : std::move(strides);
  b.g.accesses.push_back(a);
  b.g.stores.push_back({b.node_of.at(v), int32_t(b.g.accesses.size() - 1)});
}

void Lowerer::emit_transpose(Builder& b, const Node& n) {
  ValueId in = n.inputs[0], out = n.outputs[0];
  if (type(in).shape.dims() != b.space) throw NotLowerable{"a Transpose whose input is not the group's index space"};
  b.node_of[out] = value(b, in);
  if (!is_group_output(out)) return;
  // Element i of the space lands at the transposed index: out dim d is space dim perm[d].
  const std::vector<int> perm = transpose_perm(n, int(b.space.size()));
  const std::vector<int64_t> out_strides = type(out).shape.strides();
  std::vector<int64_t> strides(b.space.size(), 0);
  for (size_t d = 0; d < perm.size(); ++d) strides[size_t(perm[d])] = out_strides[d];
  store(b, out, std::move(strides));
}

void Lowerer::emit_range(Builder& b, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) emit(b, g_.node(grp_.nodes[i]));
}

// Merges adjacent dims of a pointwise space where every access allows it; drops size-1 dims.
void collapse(PointwiseSpec& p) {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides(p.body.accesses.size());
  for (size_t d = 0; d < p.shape.size(); ++d) {
    if (p.shape[d] == 1) continue;
    bool merge = !shape.empty();
    for (size_t a = 0; merge && a < strides.size(); ++a)
      merge = strides[a].back() == p.body.accesses[a].strides[d] * p.shape[d];
    if (merge) {
      shape.back() *= p.shape[d];
      for (size_t a = 0; a < strides.size(); ++a) strides[a].back() = p.body.accesses[a].strides[d];
    } else {
      shape.push_back(p.shape[d]);
      for (size_t a = 0; a < strides.size(); ++a) strides[a].push_back(p.body.accesses[a].strides[d]);
    }
  }
  if (shape.empty()) {
    shape.push_back(1);
    for (auto& s : strides) s.push_back(0);
  }
  p.shape = shape;
  for (size_t a = 0; a < strides.size(); ++a) p.body.accesses[a].strides = strides[a];
}

void Lowerer::lower_pointwise() {
  spec_.kind = KernelKind::Pointwise;
  Builder b;
  b.space = type(grp_.outputs[0]).shape.dims();
  emit_range(b, 0, grp_.nodes.size());
  spec_.pointwise.body = std::move(b.g);
  spec_.pointwise.shape = b.space;
  collapse(spec_.pointwise);
  int64_t total = Shape(spec_.pointwise.shape).numel();
  spec_.tasks = std::max<int64_t>(1, (total + 16383) / 16384);
}

void Lowerer::lower_contraction() {
  spec_.kind = KernelKind::Contraction;
  const Node& anchor = g_.node(grp_.nodes[0]);
  FUSOR_ASSERT(in_group(anchor), "contraction anchor");
  ContractionSpec& c = spec_.contraction;
  ValueId out = anchor.outputs[0];
  const Shape& os = type(out).shape;
  Builder b;
  b.space = os.dims();
  int32_t acc = add(b, ScalarExpr{ScalarOp::Acc, type(out).dtype});
  if (anchor.op == OpKind::Conv) {
    c.kind = ContractionSpec::Kind::Conv2d;
    c.conv = conv2d_params(anchor, type(anchor.inputs[0]).shape, type(anchor.inputs[1]).shape);
    c.a = access(anchor.inputs[0], type(anchor.inputs[0]).shape.dims());
    c.b = access(anchor.inputs[1], type(anchor.inputs[1]).shape.dims());
    if (anchor.inputs.size() > 2 && anchor.inputs[2] != kNoValue) {
      ValueId bias = anchor.inputs[2];
      StridedAccess a = access(bias, {c.conv.m});
      int64_t st = a.strides[0];
      a.strides.assign(4, 0);
      a.strides[1] = st;
      int32_t bl = load(b, a);
      acc = binary(b, ScalarOp::Add, acc, bl, type(out).dtype);
    }
    spec_.tasks = c.conv.n * c.conv.group;
  } else {
    c.kind = ContractionSpec::Kind::Gemm;
    const Shape& as = type(anchor.inputs[0]).shape;
    const Shape& bs = type(anchor.inputs[1]).shape;
    if (as.rank() < 2 || bs.rank() < 2) throw NotLowerable{"MatMul with a 1-D operand"};
    c.batch.assign(os.dims().begin(), os.dims().end() - 2);
    c.m = os[-2];
    c.n = os[-1];
    bool ta = anchor.op == OpKind::Gemm && attr_int(anchor, "transA");
    bool tb = anchor.op == OpKind::Gemm && attr_int(anchor, "transB");
    c.k = ta ? as[0] : as[-1];
    auto operand = [&](ValueId v, bool trans, int64_t rows, int64_t cols) {
      std::vector<int64_t> space = c.batch;
      space.push_back(rows);
      space.push_back(cols);
      return access(v, space, trans);
    };
    c.a = operand(anchor.inputs[0], ta, c.m, c.k);
    c.b = operand(anchor.inputs[1], tb, c.k, c.n);
    if (anchor.op == OpKind::Gemm) {
      DType t = type(out).dtype;
      double alpha = attr_float(anchor, "alpha");
      if (alpha != 1.0) {
        int32_t a = constant(b, alpha, t);
        acc = binary(b, ScalarOp::Mul, acc, a, t);
      }
      if (anchor.inputs.size() > 2 && anchor.inputs[2] != kNoValue) {
        int32_t cv = value(b, anchor.inputs[2]);
        double beta = attr_float(anchor, "beta");
        if (beta != 1.0) {
          int32_t k = constant(b, beta, t);
          cv = binary(b, ScalarOp::Mul, cv, k, t);
        }
        acc = binary(b, ScalarOp::Add, acc, cv, t);
      }
    }
    int64_t batches = Shape(c.batch).numel();
    spec_.tasks = batches * ((c.m + 63) / 64);
  }
  b.node_of[out] = acc;
  if (is_group_output(out)) store(b, out);
  emit_range(b, 1, grp_.nodes.size());
  c.epilogue = std::move(b.g);
}

void Lowerer::lower_reduction() {
  spec_.kind = KernelKind::RowReduction;
  RowReductionSpec& r = spec_.reduction;
  size_t ai = 0;
  while (ai < grp_.nodes.size() && grp_.nodes[ai] != grp_.anchor) ++ai;
  FUSOR_ASSERT(ai < grp_.nodes.size(), "reduction anchor not in its group");
  const Node& anchor = g_.node(grp_.anchor);
  ValueId x = anchor.inputs[0];
  const Shape& xs = type(x).shape;
  if (xs.rank() == 0) throw NotLowerable{"a reduction of a scalar (rank 0; the static kernel computes it)"};
  int axis = xs.rank() - 1;
  switch (anchor.op) {
    case OpKind::Softmax:
      r.kind = RowReductionSpec::Kind::Softmax;
      normalize_axis(attr_int(anchor, "axis"), xs.rank(), &axis);
      if (axis != xs.rank() - 1) throw NotLowerable{"Softmax over a non-last axis"};
      break;
    case OpKind::LayerNormalization:
      r.kind = RowReductionSpec::Kind::LayerNorm;
      normalize_axis(attr_int(anchor, "axis"), xs.rank(), &axis);
      r.epsilon = attr_float(anchor, "epsilon");
      break;
    default: {
      r.kind = anchor.op == OpKind::ReduceSum ? RowReductionSpec::Kind::Sum
               : anchor.op == OpKind::ReduceMean ? RowReductionSpec::Kind::Mean
                                                 : RowReductionSpec::Kind::Max;
      const Tensor* axes_in = anchor.inputs.size() > 1 && anchor.inputs[1] != kNoValue ? g_.constant_data(anchor.inputs[1]) : nullptr;
      axis = reduce_axes(anchor, xs, axes_in)[0];
      if (ai + 1 != grp_.nodes.size()) throw NotLowerable{"an epilogue after a Reduce op"};
    }
  }
  // The row space: leading dims kept, trailing dims from `axis` merged into one.
  std::vector<int64_t> space(xs.dims().begin(), xs.dims().begin() + axis);
  int64_t cols = 1;
  for (int d = axis; d < xs.rank(); ++d) cols *= xs[d];
  space.push_back(cols);
  r.shape = space;
  // Accesses are built over the full input space, then their trailing dims merged. Size-1
  // dims are skipped: their strides are arbitrary (broadcast_strides_to gives them 0).
  auto merge_trailing = [&](ExprGraph& eg) {
    for (StridedAccess& a : eg.accesses) {
      std::vector<int64_t> s(a.strides.begin(), a.strides.begin() + axis);
      int64_t inner = 0, span = 0;  // span: elements of the merged dims so far (0: none yet)
      for (int d = xs.rank() - 1; d >= axis; --d) {
        if (xs[d] == 1) continue;
        if (span == 0) {
          inner = a.strides[size_t(d)];
          span = 1;
        } else if (a.strides[size_t(d)] != inner * span) {
          throw NotLowerable{"an operand is not contiguous over the normalized dims"};
        }
        span *= xs[d];
      }
      s.push_back(inner);
      a.strides = s;
    }
  };
  Builder pro;
  pro.space = xs.dims();
  emit_range(pro, 0, ai);
  value(pro, x);  // the reduced value: its node is the last one created or loaded
  if (pro.g.nodes.empty() || pro.node_of.at(x) != int32_t(pro.g.nodes.size() - 1))
    pro.g.nodes.push_back(pro.g.nodes[size_t(pro.node_of.at(x))]);
  merge_trailing(pro.g);
  r.prologue = std::move(pro.g);

  Builder epi;
  ValueId out = anchor.outputs[0];
  DType t = type(out).dtype;
  if (r.kind == RowReductionSpec::Kind::Softmax || r.kind == RowReductionSpec::Kind::LayerNorm) {
    epi.space = xs.dims();
    int32_t acc = add(epi, ScalarExpr{ScalarOp::Acc, t});
    if (r.kind == RowReductionSpec::Kind::LayerNorm) {
      int32_t scale = value(epi, anchor.inputs[1]);
      acc = binary(epi, ScalarOp::Mul, acc, scale, t);
      if (anchor.inputs.size() > 2 && anchor.inputs[2] != kNoValue) {
        int32_t bias = value(epi, anchor.inputs[2]);
        acc = binary(epi, ScalarOp::Add, acc, bias, t);
      }
    }
    epi.node_of[out] = acc;
    if (is_group_output(out)) store(epi, out);
    emit_range(epi, ai + 1, grp_.nodes.size());
    merge_trailing(epi.g);
  } else {
    // One result per row: the output is contiguous over the rows, broadcast over the row.
    epi.space = space;
    int32_t acc = add(epi, ScalarExpr{ScalarOp::Acc, t});
    epi.node_of[out] = acc;
    StridedAccess a;
    a.buffer = buffer(out, true);
    a.dtype = t;
    std::vector<int64_t> rows(space.begin(), space.end() - 1);
    a.strides = Shape(rows).strides();
    a.strides.push_back(0);
    epi.g.accesses.push_back(a);
    epi.g.stores.push_back({acc, 0});
  }
  r.epilogue = std::move(epi.g);
  int64_t nrows = Shape(std::vector<int64_t>(space.begin(), space.end() - 1)).numel();
  spec_.tasks = std::max<int64_t>(1, nrows);
}

void Lowerer::lower_attention() {
  spec_.kind = KernelKind::Attention;
  AttentionSpec& at = spec_.attention;
  // The group (in node order): the QK MatMul, the score ops (and side-input ops that may
  // come before the MatMul), the Softmax, the PV MatMul, the epilogue.
  size_t qi = 0;
  while (g_.node(grp_.nodes[qi]).op != OpKind::MatMul) ++qi;
  const Node& qk = g_.node(grp_.nodes[qi]);
  size_t si = qi + 1;
  while (g_.node(grp_.nodes[si]).op != OpKind::Softmax) ++si;
  const Node& pv = g_.node(grp_.nodes[si + 1]);
  const Shape& ss = type(qk.outputs[0]).shape;
  const Shape& os = type(pv.outputs[0]).shape;
  const Shape& qs = type(qk.inputs[0]).shape;
  at.batch.assign(ss.dims().begin(), ss.dims().end() - 2);
  at.tq = ss[-2];
  at.tk = ss[-1];
  at.d = qs[-1];
  at.dv = os[-1];
  auto operand = [&](ValueId v, int64_t rows, int64_t cols) {
    std::vector<int64_t> space = at.batch;
    space.push_back(rows);
    space.push_back(cols);
    return access(v, space);
  };
  at.q = operand(qk.inputs[0], at.tq, at.d);
  at.k = operand(qk.inputs[1], at.d, at.tk);
  at.v = operand(pv.inputs[1], at.tk, at.dv);
  Builder sc;
  sc.space = ss.dims();
  sc.node_of[qk.outputs[0]] = add(sc, ScalarExpr{ScalarOp::Acc, type(qk.outputs[0]).dtype});
  emit_range(sc, 0, qi);
  emit_range(sc, qi + 1, si);
  at.score = std::move(sc.g);
  Builder epi;
  epi.space = os.dims();
  epi.node_of[pv.outputs[0]] = add(epi, ScalarExpr{ScalarOp::Acc, type(pv.outputs[0]).dtype});
  if (is_group_output(pv.outputs[0])) store(epi, pv.outputs[0]);
  emit_range(epi, si + 2, grp_.nodes.size());
  at.epilogue = std::move(epi.g);
  spec_.tasks = Shape(at.batch).numel() * ((at.tq + 15) / 16);
}

KernelSpec Lowerer::run() {
  std::string name;
  for (NodeId n : grp_.nodes) name += (name.empty() ? "" : "_") + g_.node(n).name;
  spec_.name = name;
  switch (grp_.kind) {
    case GroupKind::Pointwise: lower_pointwise(); break;
    case GroupKind::Contraction: lower_contraction(); break;
    case GroupKind::Reduction: lower_reduction(); break;
    case GroupKind::Attention: lower_attention(); break;
    default: throw NotLowerable{std::string(group_kind_name(grp_.kind)) + " groups have no kernel"};
  }
  return std::move(spec_);
}

}  // namespace

bool resolve_view(const FusedGraph& fused, ValueId v, ValueId* root, StridedView* view) {
  return resolve_view(fused, v, nullptr, root, view);
}

bool resolve_view(const FusedGraph& fused, ValueId v, const std::function<bool(ValueId)>& stop, ValueId* root,
                  StridedView* view) {
  const Graph& g = fused.graph;
  std::vector<std::pair<const Node*, int>> chain;  // view nodes and the output taken
  ValueId cur = v;
  for (;;) {
    const Value& val = g.value(cur);
    if (val.kind != ValueKind::NodeOutput || (cur != v && stop && stop(cur))) break;
    const Node& p = g.node(val.producer);
    // A view op a compute group took (an attention's output transpose) is that kernel's store.
    if (!is_view_op(p.op) || !is_view_group_node(fused, val.producer)) break;
    chain.emplace_back(&p, val.producer_output);
    cur = p.inputs[0];
  }
  // Apply the chain from the root outwards; stop at the first view strides cannot express.
  StridedView sv = contiguous_view(fused.types[size_t(cur)].shape);
  for (size_t i = chain.size(); i-- > 0;) {
    const Node& n = *chain[i].first;
    const Shape& out_shape = fused.types[size_t(n.outputs[size_t(chain[i].second)])].shape;
    StridedView next;
    bool ok = true;
    if (n.op == OpKind::Split) {
      // Output k is a slice of the input along the axis, after the outputs before it.
      int axis;
      const Tensor* split = n.inputs.size() > 1 && n.inputs[1] != kNoValue ? g.constant_data(n.inputs[1]) : nullptr;
      std::vector<int64_t> sizes = split_sizes(n, Shape(sv.shape), split, int(n.outputs.size()), &axis);
      SliceParams p{std::vector<int64_t>(sv.shape.size(), 0), std::vector<int64_t>(sv.shape.size(), 1), sv.shape};
      for (int k = 0; k < chain[i].second; ++k) p.start[size_t(axis)] += sizes[size_t(k)];
      p.count[size_t(axis)] = sizes[size_t(chain[i].second)];
      next = slice_view(sv, p);
    } else if (n.op == OpKind::Transpose) {
      next = transpose_view(sv, transpose_perm(n, int(sv.shape.size())));
    } else if (n.op == OpKind::Slice) {
      const Tensor* axes = n.inputs.size() > 3 && n.inputs[3] != kNoValue ? g.constant_data(n.inputs[3]) : nullptr;
      const Tensor* steps = n.inputs.size() > 4 && n.inputs[4] != kNoValue ? g.constant_data(n.inputs[4]) : nullptr;
      next = slice_view(sv, slice_params(n, Shape(sv.shape), *g.constant_data(n.inputs[1]), *g.constant_data(n.inputs[2]),
                                         axes, steps));
    } else {
      ok = reshape_view(sv, out_shape.dims(), &next);
    }
    if (!ok) return false;  // the chain needs a copy somewhere: v must be materialized
    sv = std::move(next);
  }
  *root = cur;
  *view = std::move(sv);
  return true;
}

KernelSpec lower_view_copy(const FusedGraph& fused, ValueId v, ValueId root, const StridedView& view) {
  const Graph& g = fused.graph;
  const TensorType& out = fused.types[size_t(v)];
  const TensorType& in = fused.types[size_t(root)];
  FUSOR_ASSERT(view.shape == out.shape.dims() && in.dtype == out.dtype, "copy of '", g.value(v).name, "' from '",
               g.value(root).name, "': the view does not match the value");
  KernelSpec spec;
  spec.kind = KernelKind::Pointwise;
  spec.name = "copy_" + g.value(v).name;
  spec.buffers.push_back({g.value(root).name, in.dtype, in.shape.numel(), false, g.value(root).kind == ValueKind::Constant});
  spec.buffers.push_back({g.value(v).name, out.dtype, out.shape.numel(), true, false});
  PointwiseSpec& p = spec.pointwise;
  p.shape = out.shape.dims();
  p.body.accesses.push_back(StridedAccess{0, in.dtype, view.strides, view.offset});
  p.body.accesses.push_back(StridedAccess{1, out.dtype, out.shape.strides(), 0});
  ScalarExpr load{ScalarOp::Load, in.dtype};
  load.load = 0;
  p.body.nodes.push_back(load);
  p.body.stores.push_back({0, 1});
  collapse(p);
  spec.tasks = std::max<int64_t>(1, (Shape(p.shape).numel() + 16383) / 16384);
  return spec;
}

std::optional<KernelSpec> lower_group(const FusedGraph& fused, const FusionGroup& group, std::string* why) {
  try {
    return Lowerer(fused, group).run();
  } catch (const NotLowerable& e) {
    if (why) *why = e.why;
    return std::nullopt;
  }
}

}  // namespace fusor
