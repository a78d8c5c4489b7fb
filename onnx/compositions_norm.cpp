// Normalizations and losses fusor writes as its own operators (Note [Compositions]):
// GroupNormalization, RMSNormalization, LpNormalization, NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss.
#include "ir/error.h"
#include "onnx/composition_body.h"

namespace fusor::onnx_import::composition {

namespace {

const std::vector<OnnxAttribute> keep_all{int_attribute("keepdims", 0)};

// The loss of each element, -input[n, target[n, d..], d..] times its class weight, 0 where
// the target is ignore_index; then summed, averaged over the weights of the kept targets,
// or returned as is. `input` is [N, C, d..] (log-probabilities), `target` [N, d..].
void nll(Body& b, const OnnxNode& n, CompositionContext& cx, const std::string& input, const std::string& target,
         const std::string& weight) {
  const std::string reduction = string_attr(n, "reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    cx.fail(ErrorCode::InvalidGraph, "reduction \"" + reduction + "\" is not none, sum or mean");
  const std::string t = b.op("Cast", {target}, {cast_to(DType::I64)});
  const bool ignoring = find_attr(n, "ignore_index") != nullptr;
  std::string kept, safe = t;
  if (ignoring) {
    kept = b.op("Not", {b.op("Equal", {t, cx.int_scalar(int_attr(n, "ignore_index", 0))})});
    safe = b.op("Where", {kept, t, cx.int_scalar(0)});  // an index in range where ignored
  }
  const std::vector<OnnxAttribute> channel{ints_attribute("axes", {1})};
  const std::string picked = b.op("GatherElements", {input, b.op("Unsqueeze", {safe}, channel)}, {int_attribute("axis", 1)});
  std::string loss = b.op("Neg", {b.op("Squeeze", {picked}, channel)});
  std::string w;  // the weight of each element, when there are weights or ignored targets
  if (!weight.empty()) {
    w = b.op("Gather", {weight, safe});
    loss = b.op("Mul", {loss, w});
  }
  if (ignoring) {
    const std::string zero = cx.scalar(0.0, input);
    loss = b.op("Where", {kept, loss, zero});
    w = w.empty() ? b.op("Where", {kept, cx.scalar(1.0, input), zero}) : b.op("Where", {kept, w, zero});
  }
  if (reduction == "none") {
    b.finish(loss);
  } else if (reduction == "sum") {
    b.op("ReduceSum", {loss}, keep_all, b.y());
  } else if (w.empty()) {
    b.op("ReduceMean", {loss}, keep_all, b.y());
  } else {
    b.op("Div", {b.op("ReduceSum", {loss}, keep_all), b.op("ReduceSum", {w}, keep_all)}, {}, b.y());
  }
}

std::string optional_input(const OnnxNode& n, size_t k) { return n.inputs.size() > k ? n.inputs[k] : ""; }

}  // namespace

// x viewed as [N, G, C / G, L]: each (image, group) normalized over its C / G x L elements,
// then scale and bias, per group (opset 18's [G]) or per channel (opset 21's [C]): both
// reshaped to [1, G, -1, 1], which broadcasts either way.
std::vector<OnnxNode> group_normalization(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string& scale = b.input(1, "scale");
  const std::string& bias = b.input(2, "bias");
  const int64_t groups = int_attr(n, "num_groups", 0);
  if (groups < 1) cx.fail(ErrorCode::InvalidGraph, "num_groups must be given and >= 1, got " + std::to_string(groups));
  const std::string s = b.op("Shape", {b.x()});
  const std::string spatial = b.op("ReduceProd", {b.dims(s, 2, int64_t(1) << 40)}, {int_attribute("keepdims", 1)});
  const std::string x4 = b.op("Reshape", {b.x(), b.concat({b.dims(s, 0, 1), cx.ints({groups, -1}), spatial})});
  const std::vector<OnnxAttribute> group{ints_attribute("axes", {2, 3}), int_attribute("keepdims", 1)};
  const std::string d = b.op("Sub", {x4, b.op("ReduceMean", {x4}, group)});
  const std::string var = b.op("ReduceMean", {b.op("Mul", {d, d})}, group);
  const std::string normed = b.op("Div", {d, b.op("Sqrt", {b.op("Add", {var, b.scalar(float_attr(n, "epsilon", 1e-5))})})});
  const std::string per = cx.ints({1, groups, -1, 1});
  const std::string y4 = b.op("Add", {b.op("Mul", {normed, b.op("Reshape", {scale, per})}), b.op("Reshape", {bias, per})});
  b.op("Reshape", {y4, s}, {}, b.y());
  return b.done();
}

// x / sqrt(mean(x^2 over axis and the dims after it) + epsilon) * scale (opset 23; computed
// in f32, as stash_type's default).
std::vector<OnnxNode> rms_normalization(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const std::string& scale = b.input(1, "scale");
  int64_t axis = int_attr(n, "axis", -1);
  if (axis >= 0) {
    const int rank = cx.known_rank(b.x());
    if (rank < 0) cx.fail(ErrorCode::Unsupported, "a non-negative axis for an input of unknown rank (fusor needs its rank)");
    if (axis >= rank) cx.fail(ErrorCode::InvalidGraph, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    axis -= rank;
  }
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < 0; ++a) axes.push_back(a);
  const std::string ms = b.op("ReduceMean", {b.op("Mul", {b.x(), b.x()})}, {ints_attribute("axes", axes), int_attribute("keepdims", 1)});
  const std::string rms = b.op("Sqrt", {b.op("Add", {ms, b.scalar(float_attr(n, "epsilon", 1e-5))})});
  b.op("Mul", {b.op("Div", {b.x(), rms}), scale}, {}, b.y());
  return b.done();
}

// x / ||x||_p along axis (p 1 or 2); a zero vector stays zero.
std::vector<OnnxNode> lp_normalization(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  const int64_t p = int_attr(n, "p", 2);
  if (p != 1 && p != 2) cx.fail(ErrorCode::InvalidGraph, "p must be 1 or 2, got " + std::to_string(p));
  const std::vector<OnnxAttribute> along{ints_attribute("axes", {int_attr(n, "axis", -1)}), int_attribute("keepdims", 1)};
  const std::string norm = p == 1 ? b.op("ReduceSum", {b.op("Abs", {b.x()})}, along)
                                  : b.op("Sqrt", {b.op("ReduceSum", {b.op("Mul", {b.x(), b.x()})}, along)});
  const std::string safe = b.op("Where", {b.op("Equal", {norm, b.scalar(0.0)}), b.scalar(1.0), norm});
  b.op("Div", {b.x(), safe}, {}, b.y());
  return b.done();
}

std::vector<OnnxNode> negative_log_likelihood_loss(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx);
  nll(b, n, cx, b.x(), b.input(1, "target"), optional_input(n, 2));
  return b.done();
}

// NegativeLogLikelihoodLoss of LogSoftmax(scores) along the classes (axis 1), which is
// output 1 (log_prob) when a node reads it.
std::vector<OnnxNode> softmax_cross_entropy_loss(const OnnxNode& n, CompositionContext& cx) {
  Body b(n, cx, 2);
  const std::string log_prob = b.op("LogSoftmax", {b.x()}, {int_attribute("axis", 1)}, b.used_output(1));
  nll(b, n, cx, log_prob, b.input(1, "labels"), optional_input(n, 2));
  return b.done();
}

}  // namespace fusor::onnx_import::composition
