// Resolved parameters of the operators whose kernels need more than their attributes:
// conv and pool geometry, reduction axes, permutations, slices, reshape targets. Shape
// inference and every backend call these same functions, so the two can never disagree.
// Each validates what it reads and throws the node's error. Layer: ir (std only).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace fusor {

/// Geometry of a 2-D convolution over NCHW input and MCkk weights.
struct Conv2dParams {
  int64_t n, c, h, w;            ///< input
  int64_t m, kh, kw;             ///< output channels, kernel
  int64_t group;
  int64_t stride_h, stride_w, dil_h, dil_w;
  int64_t pad_t, pad_l, pad_b, pad_r;
  int64_t oh, ow;                ///< output spatial size
};
/// Resolves Conv attributes against input shape x and weight shape w.
Conv2dParams conv2d_params(const Node& n, const Shape& x, const Shape& w);

/// Structural checks shared by Conv and the pools: auto_pad is a known mode and excludes
/// pads; strides and dilations are >= 1; pads are >= 0.
void check_window_attributes(const Node& n);

/// Geometry of a 2-D pooling window over NCHW input.
struct Pool2dParams {
  int64_t n, c, h, w;
  int64_t kh, kw, stride_h, stride_w, dil_h, dil_w;
  int64_t pad_t, pad_l, pad_b, pad_r;
  int64_t oh, ow;
  bool count_include_pad;        ///< AveragePool only
};
/// Resolves MaxPool/AveragePool attributes against input shape x.
Pool2dParams pool2d_params(const Node& n, const Shape& x);

/// The sorted, distinct, non-negative axes a ReduceMean/ReduceSum node reduces over
/// (from its `axes` attribute or its constant second input). Empty means "no reduction"
/// only when noop_with_empty_axes is set; otherwise all axes are returned.
std::vector<int> reduce_axes(const Node& n, const Shape& x, const Tensor* axes_input);

/// The permutation of a Transpose node (reversed axes by default), validated.
std::vector<int> transpose_perm(const Node& n, int rank);

/// A Slice resolved per axis of the input (axes not sliced have start 0, step 1, full count).
struct SliceParams {
  std::vector<int64_t> start, step, count;
};
/// Resolves Slice's constant starts/ends/axes/steps inputs (ONNX clamping rules).
SliceParams slice_params(const Node& n, const Shape& x, const Tensor& starts, const Tensor& ends,
                         const Tensor* axes, const Tensor* steps);

/// The output shape of Reshape(x, shape) with ONNX's 0 (copy) and -1 (infer) rules.
Shape reshape_target(const Node& n, const Shape& x, const Tensor& shape);

/// The axes a Squeeze/Unsqueeze node names (attribute or constant input), normalized
/// against `rank` (the input rank for Squeeze, the output rank for Unsqueeze), sorted.
std::vector<int> squeeze_axes(const Node& n, const Shape& x, const Tensor* axes_input);
std::vector<int> unsqueeze_axes(const Node& n, int out_rank, const Tensor* axes_input);

/// The dims a Shape node returns for an input of shape x (its start/end attributes,
/// clamped as ONNX says).
std::vector<int64_t> shape_op_dims(const Node& n, const Shape& x);

/// Reads a constant integer vector (i32 or i64, rank 0 or 1).
std::vector<int64_t> int_vector(const Node& n, const Tensor& t, const char* what);

/// a + b and a * b of sizes computed from user attributes or constants, checked: throws
/// InvalidGraph naming the node and `what` (the attribute or input) when the result
/// overflows int64 or leaves [0, kMaxElements].
int64_t checked_size_add(const Node& n, int64_t a, int64_t b, const char* what);
int64_t checked_size_mul(const Node& n, int64_t a, int64_t b, const char* what);

/// The output shape of Expand(x, shape): x and `shape` broadcast both ways (ONNX).
Shape expand_shape(const Node& n, const Shape& x, const Tensor& shape);

/// The output shape of Tile(x, repeats).
Shape tile_shape(const Node& n, const Shape& x, const Tensor& repeats);

/// A Pad resolved per axis of the input: elements added before and after (negative:
/// removed), and the output shape.
struct PadParams {
  std::vector<int64_t> begin, end;
  Shape out;
};
/// Resolves Pad's pads (the constant input, or the opset-2 `pads` attribute when the input
/// is absent) and its optional axes input against input shape x; checks the mode's limits
/// (reflect needs pads < dim, edge and reflect a non-empty axis where they pad).
PadParams pad_params(const Node& n, const Shape& x, const Tensor* pads, const Tensor* axes);

/// The sizes of Split's `count` outputs along its axis: from the constant `split` input,
/// the opset-11 `split` attribute, the opset-18 `num_outputs` attribute (ceil-sized chunks,
/// the last smaller), or equal parts.
std::vector<int64_t> split_sizes(const Node& n, const Shape& x, const Tensor* split, int count, int* axis);

/// The normalized `axis` attribute of a node whose input has rank `rank` (Split, CumSum,
/// ArgMax, GatherElements, ...): InvalidGraph naming `what` when out of range.
int node_axis(const Node& n, int64_t axis, int rank, const char* what);

/// The output shape of GatherND(data, indices) with its batch_dims attribute.
Shape gather_nd_shape(const Node& n, const Shape& data, const Shape& indices);

}  // namespace fusor
