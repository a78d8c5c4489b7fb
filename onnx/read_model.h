// Parsing of the protobuf messages of ONNX files (ModelProto, TensorProto) into the plain
// types of onnx_model.h and into fusor tensors. The only place that sees protobuf.
// Layer: onnx (internal; the header is std and ir only).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "onnx/onnx_model.h"

namespace fusor::onnx_import {

class ExternalFiles;

/// A parsed model: its structure and the decoder of its tensors.
class ModelReader : public TensorSource {
 public:
  /// Parses a serialized ModelProto. Throws ParseError naming `source` when the bytes are
  /// not an ONNX model (garbage, truncated, another message). External data is read through
  /// `external` (which must outlive the reader; null refuses external data).
  ModelReader(std::string_view bytes, const std::string& source, ExternalFiles* external);
  ~ModelReader() override;

  /// The model's structure.
  const OnnxModel& model() const;
  Tensor decode(const TensorRef& ref, const std::string& what) const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Parses a serialized TensorProto into a tensor (external data refused); `name` receives
/// its name field when not null.
Tensor parse_tensor_proto(std::string_view bytes, const std::string& source, std::string* name);

}  // namespace fusor::onnx_import
