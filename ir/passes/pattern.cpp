#include "ir/passes/pattern.h"

#include <cmath>
#include <limits>

#include "ir/passes/graph_rewriter.h"
#include "ir/shape_inference.h"

namespace fusor {

PatternContext::PatternContext(const Graph& g)
    : g_(g), users_(value_consumers(g)), is_output_(g.values().size(), 0), types_(concrete_types(g)) {
  for (ValueId o : g.outputs()) is_output_[size_t(o)] = 1;
}

const Node* PatternContext::producer(ValueId v) const {
  if (v == kNoValue) return nullptr;
  const Value& val = g_.value(v);
  return val.kind == ValueKind::NodeOutput ? &g_.node(val.producer) : nullptr;
}

const Node* PatternContext::producer_of(ValueId v, OpKind op) const {
  const Node* p = producer(v);
  return p && p->op == op ? p : nullptr;
}

const Node* PatternContext::sole_consumer(ValueId v) const {
  if (users_[size_t(v)].size() != 1 || is_output(v)) return nullptr;
  return &g_.node(users_[size_t(v)][0]);
}

std::vector<TensorType> concrete_types(const Graph& g) { return infer_types(g, input_types_from_dims(g, {})); }

double PatternContext::scalar_value(ValueId v) const {
  const Tensor* t = v == kNoValue ? nullptr : g_.constant_data(v);
  if (!t || t->numel() != 1) return std::numeric_limits<double>::quiet_NaN();
  return t->at(0);
}

bool PatternContext::is_scalar(ValueId v, double x, double rtol) const {
  double s = scalar_value(v);
  return std::isfinite(s) && std::fabs(s - x) <= rtol * std::fabs(x);
}

ValueId PatternContext::other_operand(const Node& n, ValueId known) {
  if (n.inputs.size() != 2) return kNoValue;
  if (n.inputs[0] == known) return n.inputs[1];
  if (n.inputs[1] == known) return n.inputs[0];
  return kNoValue;
}

}  // namespace fusor
