#include "onnx/convert_attribute.h"

#include <cstdint>
#include <vector>

#include "onnx/onnx_dtype.h"
#include "onnx/op_forms.h"

namespace fusor::onnx_import {

Attribute convert_attribute(const OnnxNode& n, const OnnxAttribute& a, const AttrSpec& spec, const std::string& at,
                            const std::function<Tensor()>& decode) {
  const std::string what = "attribute '" + a.name + "'";
  if (a.type == OnnxAttrType::Undefined) fail(ErrorCode::ParseError, at, ": attribute '", a.name, "' has no type");
  switch (spec.type) {
    case AttrType::Int:
      if (a.type == OnnxAttrType::Int) return a.i;
      if (a.type == OnnxAttrType::Tensor) return attribute_from_tensor(n, decode(), spec, what, at);
      break;
    case AttrType::Float:
      if (a.type == OnnxAttrType::Float) return a.f;
      if (a.type == OnnxAttrType::Int) return double(a.i);
      if (a.type == OnnxAttrType::Tensor) return attribute_from_tensor(n, decode(), spec, what, at);
      break;
    case AttrType::Ints:
      if (a.type == OnnxAttrType::Ints) return a.ints;
      break;
    case AttrType::Floats:
      if (a.type == OnnxAttrType::Floats) return a.floats;
      if (a.type == OnnxAttrType::Ints) return std::vector<double>(a.ints.begin(), a.ints.end());
      break;
    case AttrType::String:
      if (a.type == OnnxAttrType::String) return a.s;
      if (a.type == OnnxAttrType::Strings) {  // one string, the entries joined by commas
        std::string joined;
        for (const std::string& e : a.strings) {
          if (e.find(',') != std::string::npos)
            fail(ErrorCode::InvalidGraph, at, ": attribute '", a.name, "' has the entry \"", e, "\" with a comma");
          joined += (joined.empty() ? "" : ",") + e;
        }
        return joined;
      }
      if (a.type == OnnxAttrType::Int && is_dtype_attribute(n.op_type, a.name)) {
        DType t;
        if (a.i > INT32_MAX || a.i < INT32_MIN || !fusor_dtype_of(int32_t(a.i), &t))
          fail(ErrorCode::Unsupported, at, ": attribute '", a.name, "' = ",
               onnx_dtype_name(a.i > INT32_MAX || a.i < INT32_MIN ? -1 : int32_t(a.i)),
               ": fusor does not support that dtype (it takes ", supported_onnx_dtypes(), ")");
        return std::string(dtype_name(t));
      }
      break;
  }
  fail(ErrorCode::InvalidGraph, at, ": attribute '", a.name, "' is ", onnx_attr_type_name(a.type), " but ", n.op_type,
       " takes ", attr_type_name(spec.type));
}

Attribute attribute_from_tensor(const OnnxNode& n, const Tensor& t, const AttrSpec& spec, std::string_view what,
                                const std::string& at) {
  const bool integral = is_integer(t.dtype());
  auto integer_at = [&](int64_t i) {
    return t.dtype() == DType::I64 ? t.data<int64_t>()[i] : int64_t(t.data<int32_t>()[i]);
  };
  const char* want = "a string";
  switch (spec.type) {
    case AttrType::Int:
      if (integral && t.numel() == 1) return integer_at(0);
      want = "one integer";
      break;
    case AttrType::Float:
      if (t.numel() == 1) return t.at(0);  // (a bool one is 0 or 1: ConstantOfShape's value of a mask)
      want = "one number";
      break;
    case AttrType::Ints:
      if (integral && t.rank() <= 1) {
        std::vector<int64_t> v(size_t(t.numel()));
        for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = integer_at(i);
        return v;
      }
      want = "a 1-D integer tensor";
      break;
    case AttrType::Floats:
      if (t.rank() <= 1 && t.dtype() != DType::Bool) {
        std::vector<double> v(size_t(t.numel()));
        for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.at(i);
        return v;
      }
      want = "a 1-D tensor of numbers";
      break;
    case AttrType::String: break;
  }
  fail(ErrorCode::InvalidGraph, at, ": ", what, " is ", t.type_str(), "; fusor's ", n.op_type, " wants ", want);
}

}  // namespace fusor::onnx_import
