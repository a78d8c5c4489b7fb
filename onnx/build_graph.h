// build_graph: an OnnxModel (onnx_model.h) becomes a verified fusor Graph (Note [ONNX
// import] in build_graph.cpp). Layer: onnx (internal; std and ir only).
#pragma once

#include <functional>
#include <map>
#include <string>

#include "ir/graph.h"
#include "onnx/onnx_model.h"

namespace fusor::onnx_import {

/// What build_graph needs besides the model.
struct BuildOptions {
  /// The model's name; every message starts with it.
  std::string source;
  /// The graph's name when the model gives none (the file's stem).
  std::string fallback_name = "onnx";
  /// Receives warnings (never null).
  std::function<void(const std::string&)> warn;
  /// Graph inputs made constants (OnnxOptions::constant_inputs).
  const std::map<std::string, Tensor, std::less<>>* constant_inputs = nullptr;
};

/// Converts `model` into a Graph, decoding the tensors it uses through `tensors`. Throws
/// Error naming the source, the node and the reason (see onnx/load_onnx.h).
Graph build_graph(const OnnxModel& model, const TensorSource& tensors, const BuildOptions& options);

}  // namespace fusor::onnx_import
