// ONNX element types (TensorProto.DataType) and how they map to fusor's dtypes.
// Layer: onnx (internal; std and ir only).
#pragma once

#include <cstdint>
#include <string>

#include "ir/dtype.h"

namespace fusor::onnx_import {

/// The ONNX name of a TensorProto.DataType value ("FLOAT", "INT64", "DOUBLE"; "unknown
/// type 42" for a value ONNX does not define).
std::string onnx_dtype_name(int32_t onnx_type);

/// True for a value ONNX defines (UNDEFINED, 0, is not one).
bool is_known_onnx_dtype(int32_t onnx_type);

/// The fusor dtype of an ONNX type; false when fusor has none (DOUBLE, UINT8, STRING, ...).
bool fusor_dtype_of(int32_t onnx_type, DType* out);

/// The ONNX type of a fusor dtype.
int32_t onnx_dtype_of(DType t);

/// "f32 (FLOAT), f16 (FLOAT16), ...": what fusor takes, for messages.
std::string supported_onnx_dtypes();

}  // namespace fusor::onnx_import
