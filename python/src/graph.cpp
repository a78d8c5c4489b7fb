#include "graph.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "arrays.h"
#include "ir/error.h"
#include "ir/text_format.h"
#include "jit/fuse.h"
#include "onnx/load_onnx.h"
#include "options.h"

namespace fusor::python {

namespace py = pybind11;

namespace {

/// Graphs loaded from files by path, reloaded when the file changes.
struct LoadedGraphs {
  struct Entry {
    std::filesystem::file_time_type mtime;
    uintmax_t size = 0;
    std::shared_ptr<const Graph> graph;
  };
  std::mutex mu;
  std::map<std::string, Entry, std::less<>> by_path;
};

LoadedGraphs& loaded_graphs() {
  static auto* graphs = new LoadedGraphs;  // never destroyed: used until the process exits
  return *graphs;
}

OnnxOptions onnx_options(py::handle warn, const py::dict& constant_inputs) {
  OnnxOptions o;
  if (!warn.is_none()) {
    py::kwargs kw;
    kw["warn"] = warn;
    o.warn = engine_options(kw).warn;  // the same GIL-safe sink the Engine's warn uses
  }
  for (auto [k, v] : constant_inputs) {
    const std::string name = py::str(k);
    Feed feed = to_feed(v, name);
    o.constant_inputs.emplace(name, feed.tensor.clone());
  }
  return o;
}

py::object dim_value(const Dim& d) { return d.is_symbolic() ? py::object(py::str(d.symbol)) : py::object(py::int_(d.size)); }

std::string fspath(py::handle path) { return py::str(py::module_::import("os").attr("fspath")(path)); }

}  // namespace

std::shared_ptr<const Graph> graph_of(py::handle obj) {
  if (py::isinstance<Graph>(obj)) return obj.cast<std::shared_ptr<Graph>>();
  if (!py::isinstance<py::str>(obj) && !py::hasattr(obj, "__fspath__")) {
    throw py::type_error("fusor: expected a fusor.Graph or the path of a model file, not " +
                         py::str(py::type::handle_of(obj).attr("__name__")).cast<std::string>());
  }
  const std::string path = fspath(obj);
  std::error_code ec;
  const auto mtime = std::filesystem::last_write_time(path, ec);
  const auto size = ec ? 0 : std::filesystem::file_size(path, ec);
  LoadedGraphs& graphs = loaded_graphs();
  if (!ec) {
    std::lock_guard<std::mutex> lock(graphs.mu);
    auto it = graphs.by_path.find(path);
    if (it != graphs.by_path.end() && it->second.mtime == mtime && it->second.size == size) return it->second.graph;
  }
  std::shared_ptr<const Graph> g;
  {
    py::gil_scoped_release release;
    g = std::make_shared<const Graph>(load_model(path));
  }
  if (!ec) {
    std::lock_guard<std::mutex> lock(graphs.mu);
    graphs.by_path[path] = {mtime, size, g};
  }
  return g;
}

void bind_graph(py::module_& m) {
  py::class_<Graph, std::shared_ptr<Graph>>(m, "Graph",
                                            "A dataflow graph: named inputs (fixed or named dims), constants, nodes, outputs.")
      .def_property_readonly("name", &Graph::name)
      .def_property_readonly(
          "inputs",
          [](const Graph& g) {
            py::list out;
            for (ValueId v : g.inputs()) {
              const Value& val = g.value(v);
              py::list dims;
              for (const Dim& d : val.dims) dims.append(dim_value(d));
              out.append(py::make_tuple(val.name, std::string(dtype_name(val.dtype)), dims));
            }
            return out;
          },
          "[(name, dtype, dims)] of the graph inputs; a dim is an int or the name it is bound by")
      .def_property_readonly(
          "outputs",
          [](const Graph& g) {
            py::list out;
            for (ValueId v : g.outputs()) out.append(g.value(v).name);
            return out;
          },
          "the names of the graph outputs")
      .def_property_readonly("num_nodes", [](const Graph& g) { return g.nodes().size(); })
      .def_property_readonly("fingerprint", &Graph::fingerprint)
      .def(
          "output_types",
          [](const Graph& g, const DimBindings& dims) {
            std::vector<TensorType> types;
            {
              py::gil_scoped_release release;
              types = output_types(g, dims);
            }
            py::list out;
            for (size_t i = 0; i < types.size(); ++i) {
              out.append(py::make_tuple(g.value(g.outputs()[i]).name, std::string(dtype_name(types[i].dtype)),
                                        types[i].shape.dims()));
            }
            return out;
          },
          py::arg("dims") = DimBindings{},
          "[(name, dtype, shape)] of the outputs with the named input dims bound to `dims`")
      .def("__str__", [](const Graph& g) { return print_graph(g); })
      .def("__repr__", [](const Graph& g) {
        return "<fusor.Graph '" + g.name() + "': " + std::to_string(g.inputs().size()) + " inputs, " +
               std::to_string(g.nodes().size()) + " nodes, " + std::to_string(g.outputs().size()) + " outputs>";
      });

  m.def(
      "parse_graph",
      [](const std::string& text, const std::string& base_dir, const std::string& source) {
        return std::make_shared<Graph>(parse_graph(text, base_dir, source));
      },
      py::arg("text"), py::arg("base_dir") = ".", py::arg("source") = "<text>",
      "A graph from fusor's text format (`name = Op(args) {attrs}` lines); fusor.ParseError when it does not parse");
  m.def(
      "load_graph", [](py::handle path) { return std::make_shared<Graph>(load_graph(fspath(path))); }, py::arg("path"),
      "A graph from a file in fusor's text format");
  m.def(
      "load_onnx",
      [](py::handle model, py::handle warn, py::dict constant_inputs) {
        OnnxOptions o = onnx_options(warn, constant_inputs);
        if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model)) {
          std::string bytes = py::isinstance<py::bytes>(model)
                                  ? std::string(py::reinterpret_borrow<py::bytes>(model))
                                  : std::string(py::reinterpret_borrow<py::bytearray>(model));
          py::gil_scoped_release release;
          return std::make_shared<Graph>(load_onnx_bytes(bytes, o));
        }
        const std::string path = fspath(model);
        py::gil_scoped_release release;
        return std::make_shared<Graph>(load_onnx(path, o));
      },
      py::arg("model"), py::kw_only(), py::arg("warn") = py::none(), py::arg("constant_inputs") = py::dict(),
      "A graph from an ONNX model: its path, or the bytes of a serialized ModelProto. warn receives the loader's "
      "notes (generated dim names, renamed values; default: standard error); constant_inputs fixes graph inputs "
      "to the given arrays");
  m.def(
      "load_model",
      [](py::handle path) {
        const std::string p = fspath(path);
        py::gil_scoped_release release;
        return std::make_shared<Graph>(load_model(p));
      },
      py::arg("path"), "A graph from a model file: ONNX when it is one, else fusor's text format");
}

}  // namespace fusor::python
