// Conversion of ONNX node attributes to the types fusor's operator schemas give them: ONNX
// INT where fusor takes a float, an ONNX dtype enum where fusor takes a dtype name (Cast's
// `to`), a one-element TENSOR where fusor takes a number (ConstantOfShape's value), and
// constant tensors given as inputs where fusor takes an attribute (op_forms.h).
// Layer: onnx (internal; std and ir only).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "ir/attribute.h"
#include "ir/op_schema.h"
#include "onnx/onnx_model.h"

namespace fusor::onnx_import {

/// ONNX attribute `a` of node `n` as the attribute fusor's schema describes (`spec`).
/// `decode` reads the data of a TENSOR attribute; `at` starts every message ("model.onnx:
/// node 'x' (Op)"). Throws InvalidGraph for a type that does not fit, Unsupported for a
/// dtype fusor lacks, ParseError for an attribute without a type.
Attribute convert_attribute(const OnnxNode& n, const OnnxAttribute& a, const AttrSpec& spec, const std::string& at,
                            const std::function<Tensor()>& decode);

/// Constant tensor `t` (described by `what` in messages) as the attribute `spec`: one
/// integer or number, or a 1-D tensor of them. InvalidGraph when it does not fit.
Attribute attribute_from_tensor(const OnnxNode& n, const Tensor& t, const AttrSpec& spec, std::string_view what,
                                const std::string& at);

}  // namespace fusor::onnx_import
