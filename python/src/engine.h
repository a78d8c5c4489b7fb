// fusor.Engine: Engine::run and the rest of the C++ Engine for Python, numpy arrays in and
// out. A run releases the GIL while it executes, so Python threads share one Engine; the
// inputs are read in place where they can be (python/src/arrays.h) and the outputs are
// numpy arrays over the engine's own tensors. Layer: python.
#pragma once

#include <pybind11/pybind11.h>

namespace fusor::python {

/// Adds Engine to `m`.
void bind_engine(pybind11::module_& m);

}  // namespace fusor::python
