// fusor.Graph and the functions that make one: parse_graph (fusor's text format),
// load_graph (a text-format file), load_onnx (an ONNX model's path or bytes) and load_model
// (either, by the file). Layer: python.
#pragma once

#include <memory>

#include <pybind11/pybind11.h>

#include "ir/graph.h"

namespace fusor::python {

/// Adds Graph and its loaders to `m`.
void bind_graph(pybind11::module_& m);

/// The graph `obj` names: a fusor.Graph, or a path (str or os.PathLike) to a model file,
/// loaded once and kept while the file's size and modification time stay the same.
/// TypeError for anything else.
std::shared_ptr<const Graph> graph_of(pybind11::handle obj);

}  // namespace fusor::python
