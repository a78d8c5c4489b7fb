#include "errors.h"

#include <array>
#include <exception>
#include <string>

#include "ir/error.h"

namespace fusor::python {

namespace py = pybind11;

namespace {

constexpr int kCodes = int(ErrorCode::Internal) + 1;

// The classes live as long as the process: the interpreter holds them through the module,
// and these references are never released, so a translation during shutdown still finds them.
std::array<PyObject*, kCodes> g_classes{};

bool is_value_error(ErrorCode c) {
  return c == ErrorCode::InvalidArgument || c == ErrorCode::ShapeMismatch || c == ErrorCode::DTypeMismatch;
}

void raise(const Error& e) {
  PyObject* cls = g_classes[size_t(e.code())];
  py::object instance = py::reinterpret_borrow<py::object>(cls)(e.message());
  instance.attr("code") = std::string(error_code_name(e.code()));
  instance.attr("message") = e.message();
  PyErr_SetObject(cls, instance.ptr());
}

}  // namespace

void bind_errors(py::module_& m) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "fusor.Error", "Every failure fusor reports: .code names its kind, .message says what was wrong.",
      PyExc_RuntimeError, nullptr);
  if (base == nullptr) throw py::error_already_set();
  m.attr("Error") = py::handle(base);
  for (int i = 0; i < kCodes; ++i) {
    const auto code = ErrorCode(i);
    const std::string name(error_code_name(code));
    py::tuple bases = is_value_error(code) ? py::tuple(py::make_tuple(py::handle(base), py::handle(PyExc_ValueError)))
                                           : py::tuple(py::make_tuple(py::handle(base)));
    PyObject* cls = PyErr_NewException(("fusor." + name).c_str(), bases.ptr(), nullptr);
    if (cls == nullptr) throw py::error_already_set();
    g_classes[size_t(i)] = cls;
    m.attr(name.c_str()) = py::handle(cls);
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      raise(e);
    }
  });
}

}  // namespace fusor::python
