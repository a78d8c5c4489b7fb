// Arrays across the Python boundary: numpy arrays (or anything numpy.asarray takes: the
// buffer protocol, nested lists) in as fusor Tensors, borrowed when they can be and copied
// when not; tensors out as numpy arrays that own them, without a copy. Layer: python (the
// extension module; pybind11 and the public C++ API only).
#pragma once

#include <string>

#include <pybind11/numpy.h>

#include "ir/tensor.h"

namespace fusor::python {

namespace py = pybind11;

/// A run's input: the tensor the engine reads, and the array that holds its memory (the
/// caller's own array when borrowed, a private copy otherwise), which outlives the run.
struct Feed {
  Tensor tensor;
  py::array keep;
  bool copied = false;  ///< the caller's array could not be read in place
};

/// The DType of elements of numpy dtype `dt`; DTypeMismatch naming `what` when fusor has
/// none. bf16 is numpy's uint16 (its bit patterns; numpy has no bfloat16) or ml_dtypes'
/// bfloat16.
DType dtype_from_numpy(const py::dtype& dt, const std::string& what);

/// The numpy dtype a tensor of `t` comes out as (bf16: uint16 bit patterns).
py::dtype numpy_dtype(DType t);

/// `obj` as the engine input `name`. Borrowed when it is a C-contiguous array of native
/// byte order whose address is aligned to its element size; copied into a new array
/// otherwise (strided views, misaligned buffers, big-endian data).
Feed to_feed(py::handle obj, const std::string& name);

/// Host tensor `t` as a numpy array over the same buffer, which the array keeps alive (it
/// outlives the engine). A tensor that does not own its memory is copied first.
py::array to_numpy(const Tensor& t);

}  // namespace fusor::python
