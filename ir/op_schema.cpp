#include "ir/op_schema.h"

#include <array>

namespace fusor {

namespace {
const std::array<const OpSchema*, kNumOpKinds> kSchemas = {
#define FUSOR_OP(kind, family) &k##kind##Schema,
#include "ir/ops.def"
#undef FUSOR_OP
};
}  // namespace

const OpSchema& op_schema(OpKind op) {
  FUSOR_ASSERT(size_t(op) < kSchemas.size(), "op kind ", int(op));
  return *kSchemas[size_t(op)];
}

std::string_view op_name(OpKind op) { return op_schema(op).name; }

bool parse_op_kind(std::string_view name, OpKind* out) {
  for (size_t i = 0; i < kSchemas.size(); ++i) {
    if (kSchemas[i]->name == name) {
      *out = OpKind(i);
      return true;
    }
  }
  return false;
}

std::string TensorType::str() const { return std::string(dtype_name(dtype)) + shape.str(); }

std::string node_label(const Node& n) {
  return detail::cat("node '", n.name, "' (", op_name(n.op), ")");
}

const Attribute& node_attr(const Node& n, std::string_view name) {
  auto it = n.attrs.find(name);
  if (it != n.attrs.end()) return it->second;
  for (const AttrSpec& spec : op_schema(n.op).attrs) {
    if (spec.name == name) {
      FUSOR_ASSERT(!spec.required, node_label(n), " lacks required attribute ", name,
                   " (the verifier should have caught it)");
      return spec.fallback;
    }
  }
  FUSOR_ASSERT(false, "attribute '", name, "' is not in the schema of ", op_name(n.op));
  __builtin_unreachable();
}

const TensorType& InferContext::input(int i) const {
  FUSOR_ASSERT(has_input(i), node_label(node_), " input ", i, " is absent");
  return *inputs_[size_t(i)];
}

const Tensor& InferContext::require_constant(int i, std::string_view what) const {
  const Tensor* t = constant(i);
  if (!t) fail(ErrorCode::Unsupported, what, " (input ", i, ") must be a constant");
  return *t;
}

void InferContext::set_output(int i, DType dtype, Shape shape) {
  FUSOR_ASSERT(i >= 0 && size_t(i) < outputs_->size(), node_label(node_), " output ", i);
  checked_numel_by(shape.dims(), [&] { return node_label(node_) + " output " + std::to_string(i) + " " + shape.str(); });
  (*outputs_)[size_t(i)] = TensorType{dtype, std::move(shape)};
}

std::string InferContext::describe_input(int i) const {
  if (!has_input(i)) return detail::cat("input ", i, " (absent)");
  return detail::cat("input ", i, " '", graph_.value(node_.inputs[size_t(i)]).name, "' ", input(i).str());
}

void InferContext::expect_dtype(int i, DType t) const {
  if (input(i).dtype != t)
    fail(ErrorCode::DTypeMismatch, describe_input(i), " must be ", dtype_name(t));
}

void InferContext::expect_floating(int i) const {
  if (!is_floating(input(i).dtype))
    fail(ErrorCode::DTypeMismatch, describe_input(i), " must be floating point");
}

void InferContext::expect_same_dtype(int i, int j) const {
  if (input(i).dtype != input(j).dtype)
    fail(ErrorCode::DTypeMismatch, describe_input(i), " and ", describe_input(j), " differ in dtype");
}

void InferContext::expect_rank(int i, int r) const {
  if (input(i).shape.rank() != r)
    fail(ErrorCode::ShapeMismatch, describe_input(i), " must have rank ", r);
}

}  // namespace fusor
