// The pieces every CUDA kernel renderer shares, as text: the device preamble (dtype
// conversions, the scalar math, warp and block reductions), float literals, kernel
// parameter lists, index splitting, strided element offsets, and the rendering of an
// ExprGraph at one index. render_pointwise.cpp, render_reduction.cpp,
// render_contraction.cpp and render_attention.cpp are built from these, so each piece of
// logic is written once. Internal to codegen/cuda. Layer: codegen/cuda.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/kernel_spec.h"

namespace fusor::cuda_src {

/// The device code every kernel starts with (no CUDA headers: conversions through PTX and
/// bit patterns). See Note [CUDA scalar math] in render_expr.cpp for accuracy.
extern const char* const kPreamble;

/// A float as a CUDA literal that converts back to the same float ("0.125f",
/// "__int_as_float(0x7f800000)" for infinity).
std::string float_lit(double v);

/// The element type a buffer of dtype `t` is stored as in device memory ("float",
/// "unsigned short" for f16/bf16, "unsigned char" for bool, "int", "long long").
const char* storage_type(DType t);

/// `expr` (an element of storage_type(t)) converted to float.
std::string to_float(DType t, const std::string& expr);

/// A float `value` converted to storage_type(t).
std::string from_float(DType t, const std::string& value);

/// The kernel's parameter list: one pointer per buffer, b<i>, const for inputs, restrict
/// (a kernel's outputs never alias its inputs).
std::string kernel_params(const KernelSpec& spec);

/// Whether element indices of this spec fit `int` (else kernels index with long long).
bool narrow_index(const KernelSpec& spec);

/// Lines declaring `<prefix><d>` for each dim d of `dims`: the row-major digits of the
/// index `flat` (the first digit without a remainder). Dims of size 1 become 0.
std::string split_index(const std::string& flat, const std::vector<int64_t>& dims, const std::string& prefix,
                        const std::string& indent);

/// "off + i0 * s0 + ..." for access `a` at index names idx (one per dim; "" or "0" skips).
std::string element_expr(const StridedAccess& a, const std::vector<std::string>& idx);

/// What render_expr reads besides the graph.
struct ExprEnv {
  /// Per access of the graph: the element index expression at the current point.
  std::vector<std::string> element;
  /// Per access (optional): a float value already loaded for it (used instead of a load).
  std::vector<std::string> preloaded;
  std::string acc = "acc";         ///< Acc's value
  std::string stat[2] = {"0.f", "0.f"};  ///< RowStat 0 and 1
  std::string prefix = "v";        ///< names of node values: <prefix><node>
};

/// Declares one `const float <prefix><i>` per node of g (loads through env.element), in
/// `indent`. Returns each node's value name.
std::vector<std::string> render_expr(const ExprGraph& g, const ExprEnv& env, std::string& out, const std::string& indent);

/// Renders the stores of g (values from render_expr).
void render_stores(const ExprGraph& g, const ExprEnv& env, const std::vector<std::string>& values, std::string& out,
                   const std::string& indent);

/// Structural checks of g over an index space of rank `rank`: accesses in range with
/// matching rank and dtype, arguments earlier nodes, Acc/RowStat only where allowed, stores
/// only to output buffers. False with *why (prefixed by `what`) when not.
bool check_graph(const KernelSpec& spec, const ExprGraph& g, size_t rank, bool allow_acc, bool allow_row_stat,
                 bool allow_stores, const std::string& what, std::string* why);

/// The spec as a /* */ comment block.
std::string spec_comment(const KernelSpec& spec);

/// prefix followed by the decimal digits of i ("b3"). (Also sidesteps GCC 12's false
/// -Wrestrict on `"b" + std::to_string(i)`.)
inline std::string id(const char* prefix, int64_t i) {
  std::string s(prefix);
  s += std::to_string(i);
  return s;
}

/// Ceiling division.
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace fusor::cuda_src
