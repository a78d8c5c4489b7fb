// Reading and writing NumPy .npy files (format 1.0-3.0, C order, little-endian), for
// constants and inputs. Layer: ir (std only).
#pragma once

#include <string>

#include "ir/tensor.h"

namespace fusor {

/// Reads an .npy file: <f4 -> f32, <f2 -> f16, <i8 -> i64, <i4 -> i32, |b1 -> bool.
/// Throws Io when unreadable, ParseError when the header or size is malformed or the file
/// is truncated, Unsupported for Fortran order, big-endian data or other dtypes.
Tensor read_npy(const std::string& path);

/// Writes an .npy file (version 1.0); bf16 has no NumPy dtype and is refused (Unsupported).
void write_npy(const std::string& path, const Tensor& t);

}  // namespace fusor
