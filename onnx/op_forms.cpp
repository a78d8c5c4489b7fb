#include "onnx/op_forms.h"

#include <algorithm>
#include <iterator>

namespace fusor::onnx_import {

namespace {

struct Since {
  std::string_view op_type;
  int64_t opset;
};

// The first opset from which each operator means what fusor implements. An operator
// changes version in some opsets (ONNX's Operators.md, "since version"); the entry is the
// oldest version whose semantics are those of opsets 13-18, given the forms the loader
// converts (input_attribute_forms). Where the older version differs, the reason:
// - Add/Sub/Mul/Div/Pow before 7, Gemm before 7: the legacy `broadcast` attribute;
// - Max/Min before 8: no broadcasting; Concat before 4: axis optional;
// - Relu/Neg/... before 6: `consumed_inputs`; Cast before 6: `to` is a string;
// - BatchNormalization before 9: the `spatial` attribute; Dropout before 7: `is_test`;
// - Reshape before 5: the shape is an attribute; Softmax before 13: it flattens the input
//   to 2-D at `axis` (default 1), a different operator;
// - Clip before 6 and Pad before 2: `consumed_inputs`, `paddings` (Clip-6's min/max and
//   Pad-2's pads/value attributes are forms fusor's schemas take).
// Operators of other files (LayerNormalization 17, Range 11, ...) first exist at that opset.
//
// Note [ONNX opsets]
// Newer opsets (19 to kOnnxMaxOpset) are read as they are: for every operator fusor loads,
// each version after 18 only widens the element types (float8 at 19, int4 at 21, float4 at
// 23, float8e8m0 at 24, int2 at 25, float6 at 28; bfloat16 for the activations at 22; bool
// for ReduceMax/Min at 20: a model using them is refused by dtype) or adds an attribute:
// AveragePool's dilations (19, which fusor's pooling has), Cast's saturate (19) and
// round_mode (24), which only change float8 conversions, and Range's stash_type (27), whose
// default is fusor's f32 computation (kDroppable). Checked against ONNX 1.23.2's schemas
// (onnx.defs.get_schema at each version, attributes and type constraints compared); a
// later opset is refused until checked the same way.
constexpr Since kSince[] = {
    {"Abs", 6},           {"Add", 7},
    {"And", 7},           {"ArgMax", 1},
    {"AveragePool", 7},   {"BatchNormalization", 9},
    {"Cast", 6},          {"Clip", 6},
    {"Concat", 4},        {"Constant", 1},
    {"ConstantOfShape", 9}, {"Conv", 1},
    {"CumSum", 11},       {"Div", 7},
    {"Dropout", 7},       {"Equal", 7},
    {"Erf", 9},           {"Exp", 6},
    {"Expand", 8},        {"Flatten", 1},
    {"Gather", 1},        {"GatherElements", 11},
    {"GatherND", 11},     {"Gemm", 7},
    {"GlobalAveragePool", 1}, {"Greater", 7},
    {"GreaterOrEqual", 12}, {"HardSigmoid", 6},
    {"HardSwish", 14},    {"Identity", 1},
    {"IsInf", 10},        {"IsNaN", 9},
    {"LayerNormalization", 17}, {"LeakyRelu", 6},
    {"Less", 7},          {"LessOrEqual", 12},
    {"Log", 6},           {"MatMul", 1},
    {"Sin", 7},           {"Cos", 7},
    {"Floor", 6},         {"Ceil", 6},
    {"Round", 11},
    {"Max", 8},           {"MaxPool", 8},
    {"Min", 8},           {"Mul", 7},
    {"Neg", 6},           {"Not", 1},
    {"Or", 7},            {"Pad", 2},
    {"Pow", 7},           {"Range", 11},
    {"Reciprocal", 6},    {"ReduceMax", 1},
    {"ReduceMean", 1},    {"ReduceMin", 1},
    {"ReduceProd", 1},
    {"ScatterElements", 11}, {"ScatterND", 11},
    {"TopK", 1},
    {"LSTM", 7}, {"GRU", 7}, {"RNN", 7},
    {"ReduceSum", 1},     {"Relu", 6},
    {"Reshape", 5},       {"Shape", 1},
    {"Sigmoid", 6},       {"Slice", 1},
    {"Softmax", 13},      {"Split", 2},
    {"Sqrt", 6},          {"Squeeze", 1},
    {"Sub", 7},           {"Tanh", 6},
    {"Tile", 6},          {"Transpose", 1},
    {"Trilu", 14},        {"Unsqueeze", 1},
    {"Where", 9},
};

constexpr InputAttributeForm kForms[] = {
    {"Clip", 1, "min"},          {"Clip", 2, "max"},
    {"CumSum", 1, "axis"},       {"Pad", 1, "pads"},
    {"Pad", 2, "value"},         {"Pad", 3, "axes"},
    {"ReduceL1", 1, "axes"},     {"ReduceL2", 1, "axes"},
    {"ReduceLogSum", 1, "axes"}, {"ReduceLogSumExp", 1, "axes"},
    {"ReduceMax", 1, "axes"},    {"ReduceMean", 1, "axes"},
    {"ReduceMin", 1, "axes"},    {"ReduceProd", 1, "axes"},
    {"ReduceSum", 1, "axes"},    {"ReduceSumSquare", 1, "axes"},
    {"Reshape", 1, "shape"},     {"Slice", 1, "starts"},
    {"Slice", 2, "ends"},        {"Slice", 3, "axes"},
    {"Split", 1, "split"},       {"Squeeze", 1, "axes"},
    {"Tile", 1, "repeats"},      {"TopK", 1, "k"},
    {"Trilu", 1, "k"},           {"Unsqueeze", 1, "axes"},
};

struct DtypeAttr {
  std::string_view op_type, attr;
};
constexpr DtypeAttr kDtypeAttrs[] = {{"Cast", "to"},          {"EyeLike", "dtype"},      {"RandomNormal", "dtype"},
                                     {"RandomNormalLike", "dtype"}, {"RandomUniform", "dtype"},
                                     {"RandomUniformLike", "dtype"}};

struct Droppable {
  std::string_view op_type, attr;
  bool any_value;
  int64_t value;
  const char* why;
};
constexpr Droppable kDroppable[] = {
    {"Cast", "saturate", true, 0, "saturate only changes conversions to float8 types"},
    {"Cast", "round_mode", true, 0, "round_mode only changes conversions to float8e8m0"},
    {"Range", "stash_type", false, 1, "stash_type=1 computes in f32, as fusor does"},
    {"BatchNormalization", "spatial", false, 1, "spatial=1 is the only behaviour of later opsets"},
};

struct DtypeRule {
  std::string_view op_type;
  OutputDType rule;
};
constexpr DtypeRule kDtypeRules[] = {
    {"Abs", OutputDType::Input0},          {"Add", OutputDType::Input0},
    {"And", OutputDType::Bool},            {"ArgMax", OutputDType::Int64},
    {"AveragePool", OutputDType::Input0},  {"BatchNormalization", OutputDType::Input0},
    {"Cast", OutputDType::DtypeAttribute}, {"Clip", OutputDType::Input0},
    {"Concat", OutputDType::Input0},       {"ConstantOfShape", OutputDType::DtypeAttribute},
    {"Conv", OutputDType::Input0},
    {"CumSum", OutputDType::Input0},       {"Div", OutputDType::Input0},
    {"Dropout", OutputDType::Input0},      {"Equal", OutputDType::Bool},
    {"Erf", OutputDType::Input0},          {"Exp", OutputDType::Input0},
    {"Expand", OutputDType::Input0},       {"Flatten", OutputDType::Input0},
    {"Gather", OutputDType::Input0},       {"GatherElements", OutputDType::Input0},
    {"GatherND", OutputDType::Input0},     {"Gelu", OutputDType::Input0},
    {"Gemm", OutputDType::Input0},         {"GlobalAveragePool", OutputDType::Input0},
    {"Greater", OutputDType::Bool},        {"GreaterOrEqual", OutputDType::Bool},
    {"HardSigmoid", OutputDType::Input0},  {"HardSwish", OutputDType::Input0},
    {"Identity", OutputDType::Input0},     {"IsInf", OutputDType::Bool},
    {"IsNaN", OutputDType::Bool},          {"LayerNormalization", OutputDType::Input0},
    {"LeakyRelu", OutputDType::Input0},    {"Less", OutputDType::Bool},
    {"LessOrEqual", OutputDType::Bool},    {"Log", OutputDType::Input0},
    {"Sin", OutputDType::Input0},          {"Cos", OutputDType::Input0},
    {"Floor", OutputDType::Input0},        {"Ceil", OutputDType::Input0},
    {"Round", OutputDType::Input0},
    {"MatMul", OutputDType::Input0},       {"Max", OutputDType::Input0},
    {"MaxPool", OutputDType::Input0},      {"Min", OutputDType::Input0},
    {"Mul", OutputDType::Input0},          {"Neg", OutputDType::Input0},
    {"Not", OutputDType::Bool},            {"Or", OutputDType::Bool},
    {"Pad", OutputDType::Input0},          {"Pow", OutputDType::Input0},
    {"Range", OutputDType::Input0},        {"Reciprocal", OutputDType::Input0},
    {"ReduceMax", OutputDType::Input0},    {"ReduceMean", OutputDType::Input0},
    {"ReduceMin", OutputDType::Input0},    {"ReduceSum", OutputDType::Input0},
    {"ReduceProd", OutputDType::Input0},
    {"ScatterElements", OutputDType::Input0}, {"ScatterND", OutputDType::Input0},
    {"TopK", OutputDType::Input0},
    {"LSTM", OutputDType::Input0}, {"GRU", OutputDType::Input0}, {"RNN", OutputDType::Input0},
    {"Relu", OutputDType::Input0},         {"Reshape", OutputDType::Input0},
    {"Shape", OutputDType::Int64},         {"Sigmoid", OutputDType::Input0},
    {"Slice", OutputDType::Input0},        {"Softmax", OutputDType::Input0},
    {"Split", OutputDType::Input0},        {"Sqrt", OutputDType::Input0},
    {"Squeeze", OutputDType::Input0},      {"Sub", OutputDType::Input0},
    {"Tanh", OutputDType::Input0},         {"Tile", OutputDType::Input0},
    {"Transpose", OutputDType::Input0},    {"Trilu", OutputDType::Input0},
    {"Unsqueeze", OutputDType::Input0},    {"Where", OutputDType::Input1},
};

}  // namespace

const char* tensor_dtype_attribute(std::string_view op_type, std::string_view attr) {
  return op_type == "ConstantOfShape" && attr == "value" ? "dtype" : nullptr;
}

const char* dtype_attribute_of(std::string_view op_type) {
  if (op_type == "Cast") return "to";
  if (op_type == "ConstantOfShape") return "dtype";
  return nullptr;
}

OutputDType output_dtype_rule(std::string_view op_type) {
  for (const DtypeRule& r : kDtypeRules)
    if (r.op_type == op_type) return r.rule;
  return OutputDType::Unknown;
}

int64_t op_since_opset(std::string_view op_type) {
  auto it = std::find_if(std::begin(kSince), std::end(kSince), [&](const Since& s) { return s.op_type == op_type; });
  return it != std::end(kSince) && it->op_type == op_type ? it->opset : 13;
}

const char* op_note(std::string_view op_type) {
  // ONNX defines Gelu from opset 20; a default-domain Gelu in an older model (tools write
  // it so) means the same, and is read.
  if (op_type == "Gelu") return "ONNX defines it from opset 20";
  return "";
}

std::span<const InputAttributeForm> input_attribute_forms(std::string_view op_type) {
  auto lo = std::find_if(std::begin(kForms), std::end(kForms),
                         [&](const InputAttributeForm& f) { return f.op_type == op_type; });
  auto hi = std::find_if(lo, std::end(kForms), [&](const InputAttributeForm& f) { return f.op_type != op_type; });
  return {lo, hi};
}

bool is_dtype_attribute(std::string_view op_type, std::string_view attr) {
  for (const DtypeAttr& d : kDtypeAttrs)
    if (d.op_type == op_type && d.attr == attr) return true;
  return false;
}

const char* droppable_attribute(std::string_view op_type, std::string_view attr, bool is_int, int64_t value) {
  for (const Droppable& d : kDroppable)
    if (d.op_type == op_type && d.attr == attr && (d.any_value || (is_int && d.value == value))) return d.why;
  return nullptr;
}

}  // namespace fusor::onnx_import
