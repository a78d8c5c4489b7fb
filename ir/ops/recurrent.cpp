// Schemas of the recurrent operators: LSTM, GRU and RNN (ONNX opset 14), one layer each,
// forward, reverse or bidirectional, layout 0 ([T, B, ...]) or 1 ([B, T, ...]). Every
// output is always made (Y, Y_h and, for LSTM, Y_c; an ONNX node that leaves one out gets
// an unused value). `activations` is one string, the names joined by commas (the loader
// joins ONNX's list of strings); the static kernel (codegen/static/recurrent.cpp) reads them.
#include <cctype>
#include <utility>

#include "ir/op_schema.h"
#include "ir/ops/params.h"
#include "ir/ops/recurrent.h"

namespace fusor {

namespace {

// ONNX's names of the activations (compared case-insensitively).
constexpr std::pair<std::string_view, RecurrentActivation> kActivationNames[] = {
    {"Relu", RecurrentActivation::Relu},           {"Tanh", RecurrentActivation::Tanh},
    {"Sigmoid", RecurrentActivation::Sigmoid},     {"Affine", RecurrentActivation::Affine},
    {"LeakyRelu", RecurrentActivation::LeakyRelu}, {"ThresholdedRelu", RecurrentActivation::ThresholdedRelu},
    {"ScaledTanh", RecurrentActivation::ScaledTanh}, {"HardSigmoid", RecurrentActivation::HardSigmoid},
    {"Elu", RecurrentActivation::Elu},             {"Softsign", RecurrentActivation::Softsign},
    {"Softplus", RecurrentActivation::Softplus}};

// The names n's `activations` attribute lists (empty when it is not given).
std::vector<std::string> listed_activations(const Node& n) {
  std::vector<std::string> names;
  const std::string& joined = attr_string(n, "activations");
  size_t start = 0;
  while (start < joined.size()) {
    size_t comma = joined.find(',', start);
    if (comma == std::string::npos) comma = joined.size();
    names.push_back(joined.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

int directions(const Node& n) { return attr_string(n, "direction") == "bidirectional" ? 2 : 1; }

}  // namespace

bool parse_recurrent_activation(std::string_view name, RecurrentActivation* out) {
  auto lower = [](std::string_view s) {
    std::string l(s);
    for (char& c : l) c = char(std::tolower(static_cast<unsigned char>(c)));
    return l;
  };
  for (const auto& [key, kind] : kActivationNames)
    if (lower(name) == lower(key)) {
      *out = kind;
      return true;
    }
  return false;
}

std::vector<std::string> recurrent_activation_names(const Node& n) {
  std::vector<std::string> names = listed_activations(n);
  if (!names.empty()) return names;
  const std::vector<std::string> one = n.op == OpKind::LSTM  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                       : n.op == OpKind::GRU ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                             : std::vector<std::string>{"Tanh"};
  for (int d = 0; d < directions(n); ++d) names.insert(names.end(), one.begin(), one.end());
  return names;
}

int recurrent_gates(OpKind op) { return op == OpKind::LSTM ? 4 : op == OpKind::GRU ? 3 : 1; }

int recurrent_activations(OpKind op) { return op == OpKind::LSTM ? 3 : op == OpKind::GRU ? 2 : 1; }

namespace {

void check_recurrent(const Node& n) {
  const std::string& dir = attr_string(n, "direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    node_fail(n, ErrorCode::InvalidGraph, "direction \"", dir, "\" is not forward, reverse or bidirectional");
  if (attr_int(n, "layout") != 0 && attr_int(n, "layout") != 1)
    node_fail(n, ErrorCode::InvalidGraph, "layout must be 0 or 1, got ", attr_int(n, "layout"));
  if (has_attr(n, "clip") && !(attr_float(n, "clip") > 0))
    node_fail(n, ErrorCode::InvalidGraph, "clip must be positive, got ", attr_float(n, "clip"));
  const std::vector<std::string> names = listed_activations(n);
  const size_t want = size_t(recurrent_activations(n.op) * directions(n));
  if (!names.empty() && names.size() != want)
    node_fail(n, ErrorCode::InvalidGraph, "activations lists ", names.size(), " functions; ", op_name(n.op), " takes ",
              want, " (", recurrent_activations(n.op), " per direction)");
  for (const std::string& name : names)
    if (!recurrent_activation_known(name)) {
      std::string known;
      for (const auto& [key, kind] : kActivationNames) known += (known.empty() ? "" : ", ") + std::string(key);
      node_fail(n, ErrorCode::Unsupported, "activation \"", name, "\" (fusor has ", known, ")");
    }
  for (const char* flag : {"input_forget", "linear_before_reset"})
    if (has_attr(n, flag) && attr_int(n, flag) != 0 && attr_int(n, flag) != 1)
      node_fail(n, ErrorCode::InvalidGraph, flag, " must be 0 or 1, got ", attr_int(n, flag));
}

// Input k, when given, must have `dims`.
void expect_dims(InferContext& ctx, int k, const std::vector<int64_t>& dims, const char* what) {
  if (!ctx.has_input(k)) return;
  if (ctx.input(k).shape != Shape(dims))
    ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(k), " (", what, ") must have shape ", Shape(dims).str());
}

void infer_recurrent(InferContext& ctx) {
  const Node& n = ctx.node();
  const DType t = ctx.input(0).dtype;
  if (t != DType::F32 && t != DType::F16 && t != DType::BF16)
    ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(0), ": ", op_name(n.op), " takes f32, f16 or bf16");
  for (int k : {1, 2, 3, 5, 6, 7})
    if (k < ctx.num_inputs() && ctx.has_input(k)) ctx.expect_same_dtype(0, k);
  const Shape& x = ctx.input(0).shape;
  const Shape& r = ctx.input(2).shape;
  if (x.rank() != 3) ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(0), " (X) must have rank 3");
  const bool batch_first = attr_int(n, "layout") == 1;
  const int64_t steps = batch_first ? x[1] : x[0], batch = batch_first ? x[0] : x[1], in = x[2];
  const int64_t d = directions(n), g = recurrent_gates(n.op);
  if (r.rank() != 3) ctx.fail(ErrorCode::ShapeMismatch, ctx.describe_input(2), " (R) must have rank 3");
  const int64_t h = r[2];
  if (has_attr(n, "hidden_size") && attr_int(n, "hidden_size") != h)
    ctx.fail(ErrorCode::ShapeMismatch, "hidden_size ", attr_int(n, "hidden_size"), " does not match R's last dim ", h);
  expect_dims(ctx, 1, {d, g * h, in}, "W");
  expect_dims(ctx, 2, {d, g * h, h}, "R");
  expect_dims(ctx, 3, {d, 2 * g * h}, "B");
  if (ctx.has_input(4)) {
    if (ctx.input(4).dtype != DType::I32 && ctx.input(4).dtype != DType::I64)
      ctx.fail(ErrorCode::DTypeMismatch, ctx.describe_input(4), " (sequence_lens) must be i32 or i64");
    expect_dims(ctx, 4, {batch}, "sequence_lens");
  }
  const std::vector<int64_t> state = batch_first ? std::vector<int64_t>{batch, d, h} : std::vector<int64_t>{d, batch, h};
  expect_dims(ctx, 5, state, "initial_h");
  if (n.op == OpKind::LSTM) {
    expect_dims(ctx, 6, state, "initial_c");
    expect_dims(ctx, 7, {d, 3 * h}, "P");
  }
  ctx.set_output(0, t, Shape(batch_first ? std::vector<int64_t>{batch, steps, d, h} : std::vector<int64_t>{steps, d, batch, h}));
  for (int k = 1; k < recurrent_outputs(n.op); ++k) ctx.set_output(k, t, Shape(state));
}

std::vector<AttrSpec> recurrent_attrs(OpKind op) {
  std::vector<AttrSpec> a = {{"activation_alpha", AttrType::Floats, false, std::vector<double>{}},
                             {"activation_beta", AttrType::Floats, false, std::vector<double>{}},
                             {"activations", AttrType::String, false, ""},
                             {"clip", AttrType::Float, false, 0.0},
                             {"direction", AttrType::String, false, "forward"},
                             {"hidden_size", AttrType::Int, false, 0},
                             {"layout", AttrType::Int, false, 0}};
  if (op == OpKind::LSTM) a.push_back({"input_forget", AttrType::Int, false, 0});
  if (op == OpKind::GRU) a.push_back({"linear_before_reset", AttrType::Int, false, 0});
  return a;
}

}  // namespace

int recurrent_outputs(OpKind op) { return op == OpKind::LSTM ? 3 : 2; }

// LSTM(X, W, R, B?, sequence_lens?, initial_h?, initial_c?, P?) -> Y, Y_h, Y_c
const OpSchema kLSTMSchema{"LSTM", 3, 8, 3, recurrent_attrs(OpKind::LSTM), check_recurrent, infer_recurrent};
// GRU(X, W, R, B?, sequence_lens?, initial_h?) -> Y, Y_h
const OpSchema kGRUSchema{"GRU", 3, 6, 2, recurrent_attrs(OpKind::GRU), check_recurrent, infer_recurrent};
// RNN(X, W, R, B?, sequence_lens?, initial_h?) -> Y, Y_h
const OpSchema kRNNSchema{"RNN", 3, 6, 2, recurrent_attrs(OpKind::RNN), check_recurrent, infer_recurrent};

}  // namespace fusor
