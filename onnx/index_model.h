// index_model: the checks of an ONNX model that need no conversion and read no weights
// (steps 1-4 of Note [ONNX import] in build_graph.cpp): the opsets, every value defined once
// and every use defined, a topological order without cycles, the nodes graph outputs depend
// on, and the operators fusor supports (all offenders in one Unsupported error).
// Layer: onnx (internal; std and ir only).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "onnx/onnx_model.h"

namespace fusor::onnx_import {

/// What the conversion needs to know of a model's structure, checked.
struct ModelIndex {
  int64_t opset = -1;                         ///< the default domain's opset (-1: not imported)
  std::map<std::string, size_t> initializer;  ///< name -> index in OnnxModel::initializers
  std::set<std::string> declared_inputs;      ///< graph.input names (initializers among them)
  std::map<std::string, size_t> producer;     ///< value name -> index of the node producing it
  std::vector<size_t> order;                  ///< node indices in a topological order
  std::vector<bool> live;                     ///< by node index: some graph output depends on it
  std::map<std::string, int> uses;            ///< uses of each value by live nodes and graph outputs

  /// A graph input proper: declared, and not an initializer (old exporters list those too).
  bool is_graph_input(const std::string& name) const {
    return declared_inputs.count(name) && !initializer.count(name);
  }
  /// True when a live node or a graph output reads `name`.
  bool used(const std::string& name) const { return !name.empty() && uses.count(name); }
};

/// Checks `model` and indexes it. Throws Error naming `source`: Unsupported (opset above
/// kOnnxMaxOpset, operators fusor lacks, sparse initializers), InvalidGraph (duplicate,
/// dangling and cyclic names), ParseError (no default-domain opset for a node that needs it).
ModelIndex index_model(const OnnxModel& model, const std::string& source);

/// "node 'name' (op_type)" ("(unnamed, output y)" for a node without a name): how messages
/// name an ONNX node.
std::string onnx_node_label(const OnnxNode& n);

}  // namespace fusor::onnx_import
