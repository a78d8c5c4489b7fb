#include "onnx/onnx_dtype.h"

#include <string_view>

namespace fusor::onnx_import {

namespace {

// TensorProto.DataType, as onnx.proto numbers it (1.12 stops at BFLOAT16 = 16; the later
// float8 and 4-bit types are named so that messages read well).
constexpr std::string_view kNames[] = {"UNDEFINED", "FLOAT",     "UINT8",         "INT8",        "UINT16",
                                       "INT16",     "INT32",     "INT64",         "STRING",      "BOOL",
                                       "FLOAT16",   "DOUBLE",    "UINT32",        "UINT64",      "COMPLEX64",
                                       "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                       "FLOAT8E5M2FNUZ", "UINT4", "INT4",         "FLOAT4E2M1"};

struct Mapping {
  int32_t onnx;
  DType dtype;
};
constexpr Mapping kMappings[] = {{1, DType::F32},  {10, DType::F16}, {16, DType::BF16},
                                 {7, DType::I64},  {6, DType::I32},  {9, DType::Bool}};

}  // namespace

std::string onnx_dtype_name(int32_t onnx_type) {
  if (onnx_type >= 0 && size_t(onnx_type) < std::size(kNames)) return std::string(kNames[onnx_type]);
  return "unknown type " + std::to_string(onnx_type);
}

bool is_known_onnx_dtype(int32_t onnx_type) { return onnx_type > 0 && size_t(onnx_type) < std::size(kNames); }

bool fusor_dtype_of(int32_t onnx_type, DType* out) {
  for (const Mapping& m : kMappings)
    if (m.onnx == onnx_type) {
      *out = m.dtype;
      return true;
    }
  return false;
}

int32_t onnx_dtype_of(DType t) {
  for (const Mapping& m : kMappings)
    if (m.dtype == t) return m.onnx;
  return 0;
}

std::string supported_onnx_dtypes() {
  std::string out;
  for (const Mapping& m : kMappings)
    out += (out.empty() ? "" : ", ") + std::string(dtype_name(m.dtype)) + " (" + onnx_dtype_name(m.onnx) + ")";
  return out;
}

}  // namespace fusor::onnx_import
