// The ONNX reader of a build without protobuf and libonnx (FUSOR_WITH_ONNX=OFF): every
// model is refused with the reason, and the rest of the loader still links.
#include "onnx/read_model.h"

#include "ir/error.h"

namespace fusor::onnx_import {

namespace {
[[noreturn]] void unavailable(const std::string& source) {
  fail(ErrorCode::Unsupported, source,
       ": this build of fusor reads no ONNX files (configured without protobuf and libonnx: install "
       "libprotobuf-dev and libonnx-dev, scripts/install-deps.sh, and rebuild)");
}
}  // namespace

std::string onnx_attr_type_name(OnnxAttrType t) { return "type " + std::to_string(int32_t(t)); }

struct ModelReader::Impl {};

ModelReader::ModelReader(std::string_view, const std::string& source, ExternalFiles*) { unavailable(source); }
ModelReader::~ModelReader() = default;
const OnnxModel& ModelReader::model() const { unavailable("ONNX"); }
Tensor ModelReader::decode(const TensorRef&, const std::string&) const { unavailable("ONNX"); }

Tensor parse_tensor_proto(std::string_view, const std::string& source, std::string*) { unavailable(source); }

}  // namespace fusor::onnx_import
