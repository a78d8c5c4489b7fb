// OpKind: the enumeration of fusor's operators, generated from ir/ops.def.
// Layer: ir (std only).
#pragma once

#include <cstdint>
#include <string_view>

namespace fusor {

/// One operator kind per line of ir/ops.def.
enum class OpKind : uint16_t {
#define FUSOR_OP(kind, family) kind,
#include "ir/ops.def"
#undef FUSOR_OP
};

/// How the fusion passes and the lowering treat an operator (ir/ops.def says why).
enum class OpFamily : uint8_t { Contraction, Pointwise, Normalization, Reduction, Pool, View, Movement, Shape, Recurrent };

/// The family of `op`, from its line of ir/ops.def.
constexpr OpFamily op_family(OpKind op) {
  switch (op) {
#define FUSOR_OP(kind, family) \
  case OpKind::kind:           \
    return OpFamily::family;
#include "ir/ops.def"
#undef FUSOR_OP
  }
  return OpFamily::Movement;
}

/// Number of operator kinds.
inline constexpr int kNumOpKinds = 0
#define FUSOR_OP(kind, family) +1
#include "ir/ops.def"
#undef FUSOR_OP
    ;

/// The ONNX op_type of a kind ("Conv", "MatMul", ...).
std::string_view op_name(OpKind op);
/// Parses an op_type; returns false when unknown.
bool parse_op_kind(std::string_view name, OpKind* out);

}  // namespace fusor
