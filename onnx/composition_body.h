// What the bodies of compositions (compositions.h) are written with: reading a node's
// attributes, making attributes, and Body, which appends ONNX nodes with fresh names; and
// the bodies defined outside compositions.cpp, which the one table there registers.
// Layer: onnx (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/tensor.h"
#include "onnx/compositions.h"
#include "onnx/onnx_model.h"

namespace fusor::onnx_import::composition {

const OnnxAttribute* find_attr(const OnnxNode& n, std::string_view name);
double float_attr(const OnnxNode& n, std::string_view name, double fallback);
int64_t int_attr(const OnnxNode& n, std::string_view name, int64_t fallback);
std::string string_attr(const OnnxNode& n, std::string_view name, const std::string& fallback);
std::vector<int64_t> ints_attr(const OnnxNode& n, std::string_view name, std::vector<int64_t> fallback);
OnnxAttribute int_attribute(std::string name, int64_t v);
OnnxAttribute ints_attribute(std::string name, std::vector<int64_t> v);
OnnxAttribute string_attribute(std::string name, std::string v);
/// Cast's `to` for fusor dtype t.
OnnxAttribute cast_to(DType t);
/// n's attributes with `keepdims` set to `keep`.
std::vector<OnnxAttribute> with_keepdims(const OnnxNode& n, int64_t keep);

/// Writes the nodes of one body: checks that n has input 0 and output 0 and that no output
/// past the first `outputs` is used (the body computes those).
class Body {
 public:
  Body(const OnnxNode& n, CompositionContext& cx, size_t outputs = 1);

  const std::string& x() const { return n_.inputs[0]; }
  const std::string& y() const { return n_.outputs[0]; }
  /// Output k's name when a node reads it, else "" (k < the outputs the body computes).
  std::string used_output(size_t k) const;
  /// Input k, which must be given (`what` names it in the error).
  const std::string& input(size_t k, std::string_view what) const;
  /// A scalar of x's floating dtype (f32 when x's is unknown).
  std::string scalar(double v) { return cx_.scalar(v, x()); }
  /// A scalar of x's dtype, integer or floating (f32 when unknown).
  std::string typed_scalar(double v);
  /// Whether x's dtype is known to be an integer (i32 or i64: then *t, when given).
  bool x_is_integer(DType* t = nullptr);

  /// A node of `type`; its output is `out` (n's output) or a fresh name.
  std::string op(std::string_view type, std::vector<std::string> in, std::vector<OnnxAttribute> attrs = {},
                 const std::string& out = "");
  /// Dims [from, to) of shape vector `shape` (a 1-D i64 value).
  std::string dims(const std::string& shape, int64_t from, int64_t to);
  /// The 1-D i64 values joined (Concat along 0).
  std::string concat(std::vector<std::string> parts, const std::string& out = "");

  /// Writes `value` as n's output: the last node's output renamed when it made `value`,
  /// else a copy (Max of one input).
  void finish(const std::string& value);

  std::vector<OnnxNode> done() { return std::move(nodes_); }

 private:
  const OnnxNode& n_;
  CompositionContext& cx_;
  std::vector<OnnxNode> nodes_;
};

// ---- bodies of compositions_math.cpp ------------------------------------------------------
std::vector<OnnxNode> sign(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> logical_xor(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> mod(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> swish(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> tan(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> sinh(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> cosh(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> asinh(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> acosh(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> atanh(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> atan(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> asin(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> acos(const OnnxNode& n, CompositionContext& cx);

// ---- the body of compositions_einsum.cpp -------------------------------------------------
std::vector<OnnxNode> einsum(const OnnxNode& n, CompositionContext& cx);

// ---- bodies of compositions_layout.cpp ----------------------------------------------------
std::vector<OnnxNode> cast_like(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> size(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> arg_min(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> depth_to_space(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> space_to_depth(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> one_hot(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> eye_like(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> hardmax(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> mean_variance_normalization(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> lrn(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> upsample(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> scatter(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> reverse_sequence(const OnnxNode& n, CompositionContext& cx);

// ---- bodies of compositions_norm.cpp ------------------------------------------------------
std::vector<OnnxNode> group_normalization(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> rms_normalization(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> lp_normalization(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> negative_log_likelihood_loss(const OnnxNode& n, CompositionContext& cx);
std::vector<OnnxNode> softmax_cross_entropy_loss(const OnnxNode& n, CompositionContext& cx);

}  // namespace fusor::onnx_import::composition
