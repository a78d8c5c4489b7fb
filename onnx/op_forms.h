// How ONNX operators differ across opsets, and what the loader makes of each difference:
// the lowest opset at which fusor implements an operator's semantics, the operands given
// as an input in some opsets and as an attribute in others, the integer attributes that
// hold an ONNX dtype, and the attributes the loader may drop. One table each, keyed by
// op_type (a table may name an operator fusor does not have yet: it applies once
// ir/ops.def lists it). Layer: onnx (internal; std only).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace fusor::onnx_import {

/// The lowest default-domain opset at which fusor implements `op_type` as ONNX defines it
/// (13 for an operator the table does not list: the oldest opset fusor supports as a whole).
int64_t op_since_opset(std::string_view op_type);

/// What sets `op_type` apart in the loader's operator list (empty for most).
const char* op_note(std::string_view op_type);

/// An operand that is input `input` of the operator in some opsets and attribute `attr` in
/// others (Squeeze's axes: attribute before 13, input from 13; Split's split; Clip's min
/// and max; Pad's pads; Slice's starts/ends/axes before 10; ...).
struct InputAttributeForm {
  std::string_view op_type;
  int input;
  std::string_view attr;
};

/// The input-or-attribute operands of `op_type`, in input order (empty for most operators).
std::span<const InputAttributeForm> input_attribute_forms(std::string_view op_type);

/// True when the INT attribute `attr` of `op_type` holds a TensorProto.DataType (Cast's
/// `to`) that fusor's schema takes as a dtype name ("f16").
bool is_dtype_attribute(std::string_view op_type, std::string_view attr);

/// When fusor's schema of `op_type` has no attribute `attr` but dropping it keeps ONNX's
/// semantics for the integer value `value` (or for any value when `any_value`), the reason
/// (for messages); else null.
const char* droppable_attribute(std::string_view op_type, std::string_view attr, bool is_int, int64_t value);

/// When the TENSOR attribute `attr` of `op_type` becomes a number in fusor's schema
/// (ConstantOfShape's value), the String attribute of fusor's schema that receives the
/// tensor's dtype ("dtype"); else null.
const char* tensor_dtype_attribute(std::string_view op_type, std::string_view attr);

/// How the dtype of an operator's (first) output follows from its node, for the loader's
/// own dtype tracking (shape inference proper happens later, per shape). DtypeAttribute:
/// the fusor dtype name in the attribute dtype_attribute_of() names (f32 when absent).
enum class OutputDType { Unknown, Input0, Input1, Bool, Int64, DtypeAttribute };

/// The dtype rule of `op_type` (Unknown for an operator the table does not list).
OutputDType output_dtype_rule(std::string_view op_type);

/// For a DtypeAttribute rule: the attribute holding the output's dtype (Cast's "to").
const char* dtype_attribute_of(std::string_view op_type);

}  // namespace fusor::onnx_import
