// ONNX protobuf messages to plain types and tensors. Debian's libonnx ships the generated
// onnx-ml.pb.h (ONNX 1.12's onnx.proto); fields of newer ONNX versions are kept by protobuf
// as unknown fields and do not disturb parsing. onnx_pb.h must be included, not
// onnx-ml.pb.h directly: it defines the ONNX_API export macro the generated header uses.
#include "onnx/read_model.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <vector>

#define ONNX_ML 1
#include <onnx/onnx_pb.h>

#include "ir/error.h"
#include "onnx/model_files.h"
#include "onnx/onnx_dtype.h"

namespace fusor::onnx_import {

static_assert(std::endian::native == std::endian::little, "ONNX raw_data is little-endian; so must the host be");

std::string onnx_attr_type_name(OnnxAttrType t) {
  static constexpr const char* kNames[] = {"UNDEFINED", "FLOAT",   "INT",    "STRING",        "TENSOR",
                                           "GRAPH",     "FLOATS",  "INTS",   "STRINGS",       "TENSORS",
                                           "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
                                           "TYPE_PROTOS"};
  int32_t v = int32_t(t);
  if (v >= 0 && size_t(v) < std::size(kNames)) return kNames[v];
  return "type " + std::to_string(v);
}

namespace {

// The element count of a tensor's dims, checked: ParseError for a negative dim or a count
// beyond kMaxElements (no product is formed that could overflow).
int64_t checked_count(const std::vector<int64_t>& dims, const std::string& at) {
  int64_t n = 1;
  bool zero = false;
  for (int64_t d : dims) {
    if (d < 0) fail(ErrorCode::ParseError, at, ": negative dimension ", d);
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (int64_t d : dims) {
    if (n > kMaxElements / d) fail(ErrorCode::ParseError, at, ": more than ", kMaxElements, " elements");
    n *= d;
  }
  return n;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// A decimal external_data value (offset, length).
int64_t parse_decimal(const std::string& text, const std::string& at, const std::string& key) {
  int64_t v = 0;
  auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 0)
    fail(ErrorCode::ParseError, at, ": external_data ", key, " '", text, "' is not a non-negative integer");
  return v;
}

void normalize_bools(Tensor& t) {
  if (t.dtype() != DType::Bool) return;
  uint8_t* p = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = p[i] != 0;
}

// Which typed field of a TensorProto holds `dtype`'s values, by ONNX's rules.
enum class Field { Float, Int32, Int64 };
Field field_of(DType t) {
  switch (t) {
    case DType::F32: return Field::Float;
    case DType::I64: return Field::Int64;
    default: return Field::Int32;  // INT32, BOOL, FLOAT16 and BFLOAT16 (as uint16 bits)
  }
}

Tensor decode_tensor(const onnx::TensorProto& t, const std::string& at, const std::string& what,
                     ExternalFiles* external) {
  const int32_t type = t.data_type();
  if (type == 0) fail(ErrorCode::ParseError, at, ": no data_type (UNDEFINED)");
  DType dtype;
  if (!fusor_dtype_of(type, &dtype))
    fail(ErrorCode::Unsupported, at, ": dtype ", onnx_dtype_name(type), " is not supported (fusor takes ",
         supported_onnx_dtypes(), ")");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const int64_t count = checked_count(dims, at + " " + shape_text(dims));
  const uint64_t nbytes = uint64_t(count) * dtype_size(dtype);
  if (t.has_segment()) fail(ErrorCode::Unsupported, at, ": segmented tensors are not supported");

  const size_t n_float = size_t(t.float_data_size()), n_i32 = size_t(t.int32_data_size()),
               n_i64 = size_t(t.int64_data_size()), n_other = size_t(t.double_data_size()) +
                                                             size_t(t.uint64_data_size()) +
                                                             size_t(t.string_data_size());
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string location;
    int64_t offset = 0, length = -1;
    bool has_location = false;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") {
        location = kv.value();
        has_location = true;
      } else if (kv.key() == "offset") {
        offset = parse_decimal(kv.value(), at, "offset");
      } else if (kv.key() == "length") {
        length = parse_decimal(kv.value(), at, "length");
      }
    }
    if (!has_location) fail(ErrorCode::ParseError, at, ": external data without a location");
    if (!external) fail(ErrorCode::Io, at, ": external data '", location, "' cannot be read here (no model folder)");
    external->check(location, offset, length, nbytes, what);
    Tensor out = Tensor::empty(dtype, Shape(dims));
    external->read(location, offset, length, out.raw(), nbytes, what);
    normalize_bools(out);
    return out;
  }

  if (t.has_raw_data()) {
    if (n_float + n_i32 + n_i64 + n_other)
      fail(ErrorCode::ParseError, at, ": both raw_data and typed data fields");
    const std::string& raw = t.raw_data();
    if (raw.size() != nbytes)
      fail(ErrorCode::ParseError, at, ": raw_data has ", raw.size(), " bytes but ", onnx_dtype_name(type),
           shape_text(dims), " needs ", nbytes);
    Tensor out = Tensor::empty(dtype, Shape(dims));
    if (nbytes) std::memcpy(out.raw(), raw.data(), nbytes);
    normalize_bools(out);
    return out;
  }

  const Field want = field_of(dtype);
  const char* names[] = {"float_data", "int32_data", "int64_data"};
  const size_t sizes[] = {n_float, n_i32, n_i64};
  for (int f = 0; f < 3; ++f)
    if (sizes[f] && Field(f) != want)
      fail(ErrorCode::DTypeMismatch, at, ": dtype ", onnx_dtype_name(type), " but its values are in ", names[f],
           " (", onnx_dtype_name(type), " goes in ", names[int(want)], ")");
  if (n_other)
    fail(ErrorCode::DTypeMismatch, at, ": dtype ", onnx_dtype_name(type),
         " but its values are in double_data, uint64_data or string_data");
  const size_t have = sizes[int(want)];
  if (have != uint64_t(count))
    fail(ErrorCode::ParseError, at, ": ", names[int(want)], " has ", have, " values but ", onnx_dtype_name(type),
         shape_text(dims), " has ", count, " elements");
  Tensor out = Tensor::empty(dtype, Shape(dims));
  switch (dtype) {
    case DType::F32:
      if (count) std::memcpy(out.raw(), t.float_data().data(), nbytes);
      break;
    case DType::I64:
      if (count) std::memcpy(out.raw(), t.int64_data().data(), nbytes);
      break;
    case DType::I32:
      if (count) std::memcpy(out.raw(), t.int32_data().data(), nbytes);
      break;
    case DType::Bool: {
      uint8_t* p = static_cast<uint8_t*>(out.raw());
      for (int64_t i = 0; i < count; ++i) p[i] = t.int32_data(int(i)) != 0;
      break;
    }
    case DType::F16:
    case DType::BF16: {
      uint16_t* p = static_cast<uint16_t*>(out.raw());
      for (int64_t i = 0; i < count; ++i) {
        int32_t v = t.int32_data(int(i));
        if (v < 0 || v > 0xffff)
          fail(ErrorCode::ParseError, at, ": int32_data[", i, "] = ", v, " is not the 16 bits of a ",
               onnx_dtype_name(type));
        p[i] = uint16_t(v);
      }
      break;
    }
  }
  return out;
}

std::string domain_of(const std::string& d) { return d == "ai.onnx" ? std::string() : d; }

OnnxValueInfo value_info(const onnx::ValueInfoProto& v) {
  OnnxValueInfo out;
  out.name = v.name();
  if (!v.has_type()) return out;
  out.has_type = true;
  if (!v.type().has_tensor_type()) return out;
  out.is_tensor = true;
  const auto& tt = v.type().tensor_type();
  out.elem_type = tt.elem_type();
  out.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    OnnxDim dim;
    if (d.has_dim_value()) {
      dim.has_value = true;
      dim.value = d.dim_value();
    } else if (d.has_dim_param()) {
      dim.param = d.dim_param();
    }
    out.dims.push_back(std::move(dim));
  }
  return out;
}

}  // namespace

struct ModelReader::Impl {
  std::string source;
  ExternalFiles* external = nullptr;
  onnx::ModelProto proto;
  OnnxModel model;
  std::vector<const onnx::TensorProto*> tensors;  // by TensorRef::index

  TensorRef add_tensor(const onnx::TensorProto& t) {
    TensorRef r;
    r.name = t.name();
    r.data_type = t.data_type();
    r.dims.assign(t.dims().begin(), t.dims().end());
    r.external = t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL;
    r.index = int32_t(tensors.size());
    tensors.push_back(&t);
    return r;
  }
};

ModelReader::ModelReader(std::string_view bytes, const std::string& source, ExternalFiles* external)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.source = source;
  m.external = external;
  if (bytes.size() > kMaxModelBytes)
    fail(ErrorCode::Unsupported, source, ": ", bytes.size(), " bytes is more than protobuf parses (2 GiB)");
  if (bytes.empty()) fail(ErrorCode::ParseError, source, ": not an ONNX model (the file is empty)");
  if (!m.proto.ParseFromArray(bytes.data(), int(bytes.size())))
    fail(ErrorCode::ParseError, source,
         ": not an ONNX model (the protobuf does not parse: truncated, corrupt, or another kind of file)");
  const onnx::ModelProto& p = m.proto;
  if (p.ir_version() <= 0 || !p.has_graph())
    fail(ErrorCode::ParseError, source, ": not an ONNX model (", p.ir_version() <= 0 ? "no ir_version" : "no graph",
         "; is it another protobuf message, such as a TensorProto?)");
  OnnxModel& out = m.model;
  out.ir_version = p.ir_version();
  out.producer = p.producer_name() + (p.producer_version().empty() ? "" : " " + p.producer_version());
  for (const auto& o : p.opset_import()) {
    std::string d = domain_of(o.domain());
    auto [it, inserted] = out.opsets.emplace(d, o.version());
    if (!inserted && it->second != o.version())
      fail(ErrorCode::ParseError, source, ": opset_import lists domain '", d.empty() ? "ai.onnx" : d, "' twice (",
           it->second, " and ", o.version(), ")");
  }
  const onnx::GraphProto& g = p.graph();
  out.graph_name = g.name();
  for (const auto& v : g.input()) out.inputs.push_back(value_info(v));
  for (const auto& v : g.output()) out.outputs.push_back(value_info(v));
  for (const auto& t : g.initializer()) out.initializers.push_back(m.add_tensor(t));
  out.has_sparse_initializers = g.sparse_initializer_size() > 0;
  for (const auto& f : p.functions()) out.functions.emplace_back(domain_of(f.domain()), f.name());
  out.nodes.reserve(size_t(g.node_size()));
  for (const auto& n : g.node()) {
    OnnxNode node;
    node.op_type = n.op_type();
    node.domain = domain_of(n.domain());
    node.name = n.name();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    for (const auto& a : n.attribute()) {
      OnnxAttribute attr;
      attr.name = a.name();
      attr.type = OnnxAttrType(a.type());
      attr.ref_attr_name = a.ref_attr_name();
      attr.i = a.i();
      attr.f = a.f();
      attr.s = a.s();
      attr.ints.assign(a.ints().begin(), a.ints().end());
      attr.floats.assign(a.floats().begin(), a.floats().end());
      attr.strings.assign(a.strings().begin(), a.strings().end());
      if (a.has_t()) attr.tensor = m.add_tensor(a.t());
      node.attrs.push_back(std::move(attr));
    }
    out.nodes.push_back(std::move(node));
  }
}

ModelReader::~ModelReader() = default;

const OnnxModel& ModelReader::model() const { return impl_->model; }

Tensor ModelReader::decode(const TensorRef& ref, const std::string& what) const {
  FUSOR_ASSERT(ref.index >= 0 && size_t(ref.index) < impl_->tensors.size(), "tensor index ", ref.index);
  return decode_tensor(*impl_->tensors[size_t(ref.index)], impl_->source + ": " + what, what, impl_->external);
}

Tensor parse_tensor_proto(std::string_view bytes, const std::string& source, std::string* name) {
  onnx::TensorProto t;
  if (bytes.size() > kMaxModelBytes)
    fail(ErrorCode::Unsupported, source, ": ", bytes.size(), " bytes is more than protobuf parses (2 GiB)");
  if (!t.ParseFromArray(bytes.data(), int(bytes.size())))
    fail(ErrorCode::ParseError, source, ": not an ONNX TensorProto (the protobuf does not parse)");
  if (name) *name = t.name();
  const std::string what = "tensor '" + t.name() + "'";
  return decode_tensor(t, source + ": " + what, what, nullptr);
}

}  // namespace fusor::onnx_import
