// The extension module fusor._fusor, which the fusor package (python/fusor/) re-exports:
// the errors, the Graph and its loaders, the Engine. Layer: python.
#include <pybind11/pybind11.h>

#include "codegen/backends.h"
#include "arrays.h"
#include "engine.h"
#include "errors.h"
#include "graph.h"

PYBIND11_MODULE(_fusor, m) {
  m.doc() = "fusor: a JIT operator-fusion engine for neural-network inference";
  fusor::python::bind_errors(m);
  fusor::python::bind_graph(m);
  fusor::python::bind_engine(m);
  pybind11::list backends;
  for (const fusor::BackendInfo& b : fusor::kBackends) backends.append(pybind11::str(std::string(b.name)));
  m.attr("backends") = backends;
  m.attr("__version__") = FUSOR_VERSION_STRING;
  // For the tests: whether a run would read `obj` in place (python/src/arrays.h).
  m.def("_borrows", [](pybind11::handle obj) { return !fusor::python::to_feed(obj, "x").copied; });
}
