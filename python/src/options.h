// EngineOptions as Python keywords: fusor.Engine(backend="llvm", threads=2, tiering=True,
// ...) takes one keyword per EngineOptions field, under the field's name (num_threads also
// as threads; fusion as a dict of FusionOptions fields). Enumerations are their names
// ("llvm", "strict", "bf16"), warn a callable taking the message. Layer: python.
#pragma once

#include <pybind11/pybind11.h>

#include "jit/engine_types.h"

namespace fusor::python {

/// The options the keywords say, defaults for the rest. TypeError naming every unknown
/// keyword (and the known ones); InvalidArgument for a bad value.
EngineOptions engine_options(const pybind11::kwargs& kwargs);

/// Every field of `o` by its keyword (warn: whether one is set).
pybind11::dict options_dict(const EngineOptions& o);

}  // namespace fusor::python
