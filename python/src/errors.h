// fusor's errors as Python exceptions: fusor.Error (a RuntimeError) and under it one class
// per fusor::ErrorCode, named as error_code_name names the code (fusor.ShapeMismatch, ...).
// InvalidArgument, ShapeMismatch and DTypeMismatch are ValueErrors too. Each carries the
// C++ message as its text, and .code (the name) and .message. Layer: python.
#pragma once

#include <pybind11/pybind11.h>

namespace fusor::python {

/// Adds the exception classes to `m` and translates every fusor::Error thrown through a
/// binding into the class of its code.
void bind_errors(pybind11::module_& m);

}  // namespace fusor::python
