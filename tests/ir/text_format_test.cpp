// Tests of the text format: goldens (canonical text prints back byte for byte), round trips
// of built graphs (same text, same fingerprint), one test per parse error, and a small fuzz.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/fingerprint.h"
#include "ir/npy.h"
#include "ir/shape_inference.h"
#include "ir/text_format.h"
#include "tests/support/temp_dir.h"

using namespace fusor;

namespace {

// Prints g, parses the text back and checks that it prints the same and hashes the same.
// Returns the reparsed graph.
Graph check_round_trip(const Graph& g, const std::string& base_dir = ".") {
  std::string text = print_graph(g);
  INFO("printed:\n" << text);
  Graph back = parse_graph(text, base_dir, "<round trip>");
  std::string again = print_graph(back);
  INFO("reprinted:\n" << again);
  CHECK(again == text);
  CHECK(fingerprint(back) == fingerprint(g));
  return back;
}

// Parses `text` (as source "t.fg") expecting an Error of `code` whose message starts with
// `where` and contains `what`.
void check_error(const std::string& text, ErrorCode code, const std::string& where, const std::string& what) {
  INFO("text:\n" << text);
  try {
    parse_graph(text, ".", "t.fg");
  } catch (const Error& e) {
    INFO("error: " << e.what());
    CHECK(e.code() == code);
    CHECK(e.message().rfind(where, 0) == 0);
    CHECK(e.message().find(what) != std::string::npos);
    return;
  }
  FAIL("parsed without an error");
}

void check_parse_error(const std::string& text, const std::string& where, const std::string& what) {
  check_error(text, ErrorCode::ParseError, where, what);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Declarations used by the one-node-per-op lines below.
const char* const kAllOpsDecls =
    "graph all_ops\n"
    "input x: f32[N, 3, 8, 8]\n"
    "input a: f32[4, 6]\n"
    "input b: f32[6, 5]\n"
    "input m: bool[6, 5]\n"
    "input h: f16[N, 7]\n"
    "input col: f32[4, 1]\n"
    "input seq: f32[5, 2, 3]\n"
    "const w: f32[4, 3, 3, 3] = randn(seed=1, std=0.1)\n"
    "const cb: f32[4] = fill(0.5)\n"
    "const bt: f32[5, 6] = uniform(seed=2, low=-1.0, high=1.0)\n"
    "const gbias: f32[5] = randn(seed=3, std=1.0, mean=0.5)\n"
    "const two: f32[] = [2.0]\n"
    "const ch_scale: f32[3] = [1.0, 0.5, 2.0]\n"
    "const ch_bias: f32[3] = [0.0, 0.1, -0.1]\n"
    "const ch_mean: f32[3] = [0.25, -0.5, 1e-07]\n"
    "const ch_var: f32[3] = [1.0, 1.5, 0.25]\n"
    "const ln_scale: f32[6] = fill(1.0)\n"
    "const red_axes: i64[2] = [2, 3]\n"
    "const shp: i64[2] = [0, -1]\n"
    "const sq_axes: i64[1] = [1]\n"
    "const starts: i64[2] = [0, 1]\n"
    "const ends: i64[2] = [9223372036854775807, -1]\n"
    "const steps: i64[2] = [1, 2]\n"
    "const idx: i32[3] = [0, 2, -1]\n"
    "const r_start: i64[] = [0]\n"
    "const r_limit: i64[] = [10]\n"
    "const r_delta: i64[] = [3]\n"
    "const exp_shape: i64[3] = [2, 4, 6]\n"
    "const tile_rep: i64[2] = [2, 1]\n"
    "const pads4: i64[4] = [0, 1, 0, 2]\n"
    "const split_sizes: i64[2] = [2, 4]\n"
    "const ge_idx: i64[2, 6] = [0, 1, 2, 3, -1, 0, 1, 1, 1, 1, 1, 1]\n"
    "const gnd_idx: i64[2, 2] = [0, 1, 3, 5]\n"
    "const cs_axis: i64[] = [1]\n"
    "const cos_shape: i64[2] = [3, 2]\n"
    "const sc_upd: f32[2, 6] = fill(1.0)\n"
    "const snd_upd: f32[2] = [1.0, 2.0]\n"
    "const topk_k: i64[1] = [2]\n"
    "const lstm_w: f32[1, 16, 3] = randn(seed=20, std=0.3)\n"
    "const lstm_r: f32[1, 16, 4] = randn(seed=21, std=0.3)\n"
    "const gru_w: f32[1, 12, 3] = randn(seed=22, std=0.3)\n"
    "const gru_r: f32[1, 12, 4] = randn(seed=23, std=0.3)\n"
    "const rnn_w: f32[1, 4, 3] = randn(seed=24, std=0.3)\n"
    "const rnn_r: f32[1, 4, 4] = randn(seed=25, std=0.3)\n";

// One line per op of ir/ops.def, each reading only the declarations above. Its output is
// named after the op in lower case.
const std::map<std::string, std::string> kOpLines = {
    {"Conv",
     "conv = Conv(x, w, cb) {dilations=[1, 1], group=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]}"},
    {"MatMul", "matmul = MatMul(a, b)"},
    {"Gemm", "gemm = Gemm(a, bt, gbias) {alpha=0.5, beta=2.0, transB=1}"},
    {"Add", "add = Add(a, a)"},
    {"Sub", "sub = Sub(a, two)"},
    {"Mul", "mul = Mul(x, two)"},
    {"Div", "div = Div(two, a)"},
    {"Pow", "pow = Pow(a, two)"},
    {"Max", "max = Max(a, two, a)"},
    {"Min", "min = Min(a)"},
    {"Relu", "relu = Relu(x)"},
    {"Gelu", "gelu = Gelu(a) {approximate=\"tanh\"}"},
    {"Erf", "erf = Erf(a)"},
    {"Tanh", "tanh = Tanh(a)"},
    {"Sigmoid", "sigmoid = Sigmoid(a)"},
    {"Exp", "exp = Exp(a)"},
    {"Sqrt", "sqrt = Sqrt(a)"},
    {"Neg", "neg = Neg(a)"},
    {"Cast", "cast = Cast(h) {to=\"f32\"}"},
    {"Where", "where = Where(m, b, two)"},
    {"BatchNormalization",
     "batchnormalization = BatchNormalization(x, ch_scale, ch_bias, ch_mean, ch_var) {epsilon=1e-05, momentum=0.9}"},
    {"LayerNormalization", "layernormalization = LayerNormalization(a, ln_scale, _) {axis=-1, epsilon=1e-12}"},
    {"Softmax", "softmax = Softmax(x) {axis=1}"},
    {"ReduceMean", "reducemean = ReduceMean(x) {axes=[2, 3], keepdims=1}"},
    {"ReduceSum", "reducesum = ReduceSum(x, red_axes) {keepdims=0}"},
    {"ReduceMax", "reducemax = ReduceMax(x) {axes=[-1], keepdims=1}"},
    {"MaxPool", "maxpool = MaxPool(x) {ceil_mode=1, kernel_shape=[3, 3], strides=[2, 2]}"},
    {"AveragePool", "averagepool = AveragePool(x) {count_include_pad=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1]}"},
    {"GlobalAveragePool", "globalaveragepool = GlobalAveragePool(x)"},
    {"Transpose", "transpose = Transpose(x) {perm=[0, 2, 3, 1]}"},
    {"Reshape", "reshape = Reshape(x, shp)"},
    {"Flatten", "flatten = Flatten(x) {axis=2}"},
    {"Squeeze", "squeeze = Squeeze(col, sq_axes)"},
    {"Unsqueeze", "unsqueeze = Unsqueeze(a) {axes=[0, 3]}"},
    {"Concat", "concat = Concat(a, a, a) {axis=0}"},
    {"Slice", "slice = Slice(a, starts, ends, _, steps)"},
    {"Gather", "gather = Gather(a, idx) {axis=1}"},
    {"Shape", "shape = Shape(x) {end=3, start=1}"},
    {"Range", "range = Range(r_start, r_limit, r_delta)"},
    {"Abs", "abs = Abs(a)"},
    {"Reciprocal", "reciprocal = Reciprocal(a)"},
    {"Log", "log = Log(a)"},
    {"Sin", "sin = Sin(a)"},
    {"Cos", "cos = Cos(a)"},
    {"Floor", "floor = Floor(a)"},
    {"Ceil", "ceil = Ceil(a)"},
    {"Round", "round = Round(a)"},
    {"Clip", "clip = Clip(a, _, two)"},
    {"LeakyRelu", "leakyrelu = LeakyRelu(a) {alpha=0.1}"},
    {"HardSigmoid", "hardsigmoid = HardSigmoid(a) {alpha=0.2, beta=0.5}"},
    {"HardSwish", "hardswish = HardSwish(a)"},
    {"Equal", "equal = Equal(a, two)"},
    {"Less", "less = Less(b, two)"},
    {"LessOrEqual", "lessorequal = LessOrEqual(a, a)"},
    {"Greater", "greater = Greater(col, two)"},
    {"GreaterOrEqual", "greaterorequal = GreaterOrEqual(two, a)"},
    {"And", "and = And(m, m)"},
    {"Or", "or = Or(m, m)"},
    {"Not", "not = Not(m)"},
    {"IsNaN", "isnan = IsNaN(a)"},
    {"IsInf", "isinf = IsInf(h) {detect_negative=0}"},
    {"ReduceMin", "reducemin = ReduceMin(x) {axes=[1], keepdims=0}"},
    {"ReduceProd", "reduceprod = ReduceProd(x) {axes=[0], keepdims=1}"},
    {"ArgMax", "argmax = ArgMax(a) {axis=1, keepdims=0}"},
    {"CumSum", "cumsum = CumSum(a, cs_axis) {reverse=1}"},
    {"Split", "split, split_b = Split(a, split_sizes) {axis=1}"},
    {"Expand", "expand = Expand(col, exp_shape)"},
    {"Tile", "tile = Tile(a, tile_rep)"},
    {"Pad", "pad = Pad(a, pads4, two) {mode=\"reflect\"}"},
    {"GatherElements", "gatherelements = GatherElements(a, ge_idx) {axis=0}"},
    {"ScatterElements", "scatterelements = ScatterElements(a, ge_idx, sc_upd) {axis=0, reduction=\"add\"}"},
    {"ScatterND", "scatternd = ScatterND(a, gnd_idx, snd_upd)"},
    {"TopK", "topk, topk_i = TopK(a, topk_k) {axis=1, largest=0}"},
    {"LSTM", "lstm, lstm_h, lstm_c = LSTM(seq, lstm_w, lstm_r) {activations=\"Sigmoid,Tanh,Tanh\", hidden_size=4}"},
    {"GRU", "gru, gru_h = GRU(seq, gru_w, gru_r) {direction=\"reverse\", linear_before_reset=1}"},
    {"RNN", "rnn, rnn_h = RNN(seq, rnn_w, rnn_r) {activation_alpha=[0.1], activations=\"LeakyRelu\"}"},
    {"GatherND", "gathernd = GatherND(a, gnd_idx)"},
    {"Trilu", "trilu = Trilu(a) {upper=0}"},
    {"ConstantOfShape", "constantofshape = ConstantOfShape(cos_shape) {dtype=\"i64\", value=1.0}"},
};

// The all-ops graph for the ops this build has (ops absent from ir/ops.def are skipped, so
// the test follows the op list instead of breaking with it).
std::string all_ops_text() {
  std::string text = kAllOpsDecls, outputs;
  for (int k = 0; k < kNumOpKinds; ++k) {
    auto it = kOpLines.find(std::string(op_name(OpKind(k))));
    if (it == kOpLines.end()) continue;
    text += it->second + "\n";
    std::string out = it->second.substr(0, it->second.find_first_of(", "));
    outputs += (outputs.empty() ? "" : ", ") + out;
  }
  return text + "output " + outputs + "\n";
}

// A small graph touching most of the grammar, the seed of the fuzz test.
const char* const kFuzzSeed =
    "# fuzz seed\n"
    "graph fuzz\n"
    "input x: f32[B, 3, 4, 4]\n"
    "input s: f32[]\n"
    "const w: f32[2, 3, 1, 1] = randn(seed=7, std=0.5, mean=0.1)\n"
    "const g: f32[2] = uniform(seed=8, low=0.5, high=1.5)\n"
    "const z: f32[2] = fill(0.0)\n"
    "const shp: i64[2] = [0, -1]\n"
    "const k: i32[2] = [1, -2]\n"
    "const flag: bool[2] = [true, false]\n"
    "c = Conv(x, w, _) {kernel_shape=[1, 1], pads=[0, 0, 0, 0], strides=[1, 1]} as conv1\n"
    "n = BatchNormalization(c, g, z, z, g) {epsilon=1e-05}\n"
    "r = Reshape(n, shp)\n"
    "y = Gelu(r) {approximate=\"tanh\"}  # trailing comment\n"
    "t = Mul(y, s)\n"
    "output t, y\n";

}  // namespace

TEST_SUITE("ir/text_format") {
  TEST_CASE("every op kind prints back byte for byte") {
    for (int k = 0; k < kNumOpKinds; ++k) {
      INFO("op " << op_name(OpKind(k)));
      CHECK_MESSAGE(kOpLines.count(std::string(op_name(OpKind(k)))) == 1,
                    "add a line for this op to kOpLines in tests/ir/text_format_test.cpp");
    }
    std::string text = all_ops_text();
    INFO("text:\n" << text);
    Graph g = parse_graph(text, ".", "all_ops");
    CHECK(print_graph(g) == text);
    check_round_trip(g);

    // The lines are also well-typed: shape inference accepts the whole graph.
    std::vector<TensorType> types = infer_types(g, input_types_from_dims(g, {{"N", 2}}));
    auto type_of = [&](const char* name) { return types[size_t(g.find_value(name))].str(); };
    CHECK(type_of("conv") == "f32[2, 4, 4, 4]");
    CHECK(type_of("gemm") == "f32[4, 5]");
    CHECK(type_of("slice") == "f32[4, 2]");
    CHECK(type_of("gather") == "f32[4, 3]");
    CHECK(type_of("cast") == "f32[2, 7]");
    CHECK(type_of("maxpool") == "f32[2, 3, 4, 4]");
    CHECK(type_of("equal") == "bool[4, 6]");
    CHECK(type_of("isinf") == "bool[2, 7]");
    CHECK(type_of("argmax") == "i64[4]");
    CHECK(type_of("split") == "f32[4, 2]");
    CHECK(type_of("split_b") == "f32[4, 4]");
    CHECK(type_of("expand") == "f32[2, 4, 6]");
    CHECK(type_of("tile") == "f32[8, 6]");
    CHECK(type_of("pad") == "f32[4, 9]");
    CHECK(type_of("gatherelements") == "f32[2, 6]");
    CHECK(type_of("gathernd") == "f32[2]");
    CHECK(type_of("constantofshape") == "i64[3, 2]");
    CHECK(type_of("reducemin") == "f32[2, 8, 8]");
  }

  TEST_CASE("omitted optional inputs keep their slots") {
    Graph g = parse_graph(all_ops_text());
    const Node& slice = g.node(g.value(g.find_value("slice")).producer);
    REQUIRE(slice.inputs.size() == 5);
    CHECK(slice.inputs[3] == kNoValue);
    CHECK(slice.inputs[4] == g.find_value("steps"));
    const Node& ln = g.node(g.value(g.find_value("layernormalization")).producer);
    REQUIRE(ln.inputs.size() == 3);
    CHECK(ln.inputs[2] == kNoValue);
  }

  TEST_CASE("the header example parses") {
    test::TempDir dir("tf-header");
    write_npy(dir.file("w.npy"), make_random(DType::F32, Shape{64, 3, 3, 3}, RandomRecipe::normal(9, 0.1)));
    std::string text =
        "# a comment runs to the end of the line\n"
        "graph bert_layer\n"
        "input x: f32[B, T, 768]                      # named dims are bound at run time\n"
        "const wq: f32[768, 768] = randn(seed=1, std=0.02)\n"
        "const g: f32[768] = fill(1.0)\n"
        "const lo: f32[3] = uniform(seed=4, low=-1.0, high=1.0)\n"
        "const shp: i64[4] = [0, 0, 12, 64]           # inline data, row-major\n"
        "const w: f32[64, 3, 3, 3] = npy(\"w.npy\")     # relative to the graph file's folder\n"
        "input img: f32[1, 3, 8, 8]\n"
        "q = MatMul(x, wq)\n"
        "y = Conv(img, w, _) {strides=[2, 2], pads=[1, 1, 1, 1]} as conv1\n"
        "output y, q\n";
    Graph g = parse_graph(text, dir.path().string(), "example");
    CHECK(g.name() == "bert_layer");
    CHECK(g.nodes()[1].name == "conv1");
    CHECK(g.nodes()[0].name == "q");
    CHECK(g.constants()[size_t(g.value(g.find_value("w")).constant)].recipe == "npy(\"w.npy\")");
    check_round_trip(g, dir.path().string());
    // The printer's canonical order: inputs, constants, nodes; attributes sorted.
    std::string printed = print_graph(g);
    CHECK(printed.find("input img: f32[1, 3, 8, 8]\nconst wq") != std::string::npos);
    CHECK(printed.find("y = Conv(img, w, _) {pads=[1, 1, 1, 1], strides=[2, 2]} as conv1\n") != std::string::npos);
  }

  TEST_CASE("every dtype as input and as recipe and inline constant") {
    Graph g("dtypes");
    g.add_output(g.add_input("scalar_in", DType::F32, {}));
    int seed = 1;
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32, DType::Bool}) {
      std::string n(dtype_name(t));
      g.add_output(g.add_input(detail::cat("in_", n), t, {"B", 2}));
      RandomRecipe recipes[] = {RandomRecipe::normal(uint64_t(seed++), 3.0),
                                RandomRecipe::normal(uint64_t(seed++), 0.5, -2.25),
                                RandomRecipe::uniform(uint64_t(seed++), -4.0, 4.0), RandomRecipe::fill(1.0)};
      int r = 0;
      for (const RandomRecipe& rec : recipes)
        g.add_output(g.add_constant(detail::cat("r", r++, "_", n), make_random(t, Shape{3, 2}, rec), rec.str()));
      Tensor inline_data = make_random(t, Shape{2, 3}, RandomRecipe::normal(uint64_t(seed++), 100.0));
      g.add_output(g.add_constant(detail::cat("inline_", n), inline_data));
      g.add_output(g.add_constant(detail::cat("scalar_", n), make_random(t, Shape{}, RandomRecipe::fill(1.0))));
      g.add_output(g.add_constant(detail::cat("empty_", n), Tensor::empty(t, Shape{0, 3})));
    }
    Graph back = check_round_trip(g);
    for (size_t i = 0; i < g.constants().size(); ++i) {
      INFO("constant " << i);
      CHECK(same_bits(back.constants()[i].data, g.constants()[i].data));
      CHECK(back.constants()[i].recipe == g.constants()[i].recipe);
    }
    std::string text = print_graph(g);
    CHECK(text.find("input scalar_in: f32[]\n") != std::string::npos);
    CHECK(text.find("input in_bf16: bf16[B, 2]\n") != std::string::npos);
    CHECK(text.find("const scalar_bool: bool[] = [true]\n") != std::string::npos);
    CHECK(text.find("const empty_i32: i32[0, 3] = []\n") != std::string::npos);
    CHECK(text.find("const r1_f16: f16[3, 2] = randn(seed=6, std=0.5, mean=-2.25)\n") != std::string::npos);
  }

  TEST_CASE("special float values round trip bit for bit") {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> f32 = {0.0f, -0.0f, inf, -inf, nan, -nan, 0.1f, 1e-45f /* smallest denormal */,
                              1.1754942e-38f /* largest denormal */, 3.4028235e38f, 16777217.0f, -2.5e-20f};
    Graph g("floats");
    Tensor t32 = Tensor::empty(DType::F32, Shape{int64_t(f32.size())});
    for (size_t i = 0; i < f32.size(); ++i) t32.data<float>()[i] = f32[i];
    g.add_output(g.add_constant("f32_values", t32));
    // f16 and bf16 by bit pattern: zero, -zero, inf, -inf, nan, smallest and largest
    // denormal, largest normal, one.
    std::vector<uint16_t> f16 = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x03ff, 0x7bff, 0x3c00, 0x8001};
    std::vector<uint16_t> bf16 = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x007f, 0x7f7f, 0x3f80, 0x8001};
    Tensor t16 = Tensor::empty(DType::F16, Shape{int64_t(f16.size())});
    Tensor tb16 = Tensor::empty(DType::BF16, Shape{int64_t(bf16.size())});
    for (size_t i = 0; i < f16.size(); ++i) t16.data<uint16_t>()[i] = f16[i];
    for (size_t i = 0; i < bf16.size(); ++i) tb16.data<uint16_t>()[i] = bf16[i];
    g.add_output(g.add_constant("f16_values", t16));
    g.add_output(g.add_constant("bf16_values", tb16));
    Tensor ints = Tensor::empty(DType::I64, Shape{3});
    ints.data<int64_t>()[0] = std::numeric_limits<int64_t>::min();
    ints.data<int64_t>()[1] = std::numeric_limits<int64_t>::max();
    ints.data<int64_t>()[2] = -1;
    g.add_output(g.add_constant("i64_extremes", ints));
    Tensor i32 = Tensor::empty(DType::I32, Shape{2});
    i32.data<int32_t>()[0] = std::numeric_limits<int32_t>::min();
    i32.data<int32_t>()[1] = std::numeric_limits<int32_t>::max();
    g.add_output(g.add_constant("i32_extremes", i32));

    Graph back = check_round_trip(g);
    for (size_t i = 0; i < g.constants().size(); ++i) {
      INFO("constant " << i);
      CHECK(same_bits(back.constants()[i].data, g.constants()[i].data));
    }
    std::string text = print_graph(g);
    CHECK(text.find("[0.0, -0.0, inf, -inf, nan, -nan, 0.1, 1e-45, 1.1754942e-38, 3.4028235e+38, 16777216.0, "
                    "-2.5e-20]") != std::string::npos);
    CHECK(text.find("[-9223372036854775808, 9223372036854775807, -1]") != std::string::npos);
  }

  TEST_CASE("inline values are read exactly and converted per dtype") {
    Graph g = parse_graph(
        "const a: f32[4] = [1, -2, 0.1, 1e-50]\n"  // ints are fine for floats; underflow is 0
        "const b: f16[2] = [65504, 6e-08]\n"
        "const c: bool[4] = [true, false, 1, 0]\n"
        "const d: bf16[1] = [-1.5]\n"
        "output a, b, c, d\n");
    const Tensor& a = g.constants()[0].data;
    CHECK(a.data<float>()[0] == 1.0f);
    CHECK(a.data<float>()[1] == -2.0f);
    CHECK(a.data<float>()[2] == 0.1f);
    CHECK(a.data<float>()[3] == 0.0f);
    CHECK(g.constants()[1].data.data<uint16_t>()[0] == 0x7bff);
    CHECK(g.constants()[1].data.data<uint16_t>()[1] == 0x0001);
    CHECK(g.constants()[2].data.data<uint8_t>()[2] == 1);
    CHECK(g.constants()[3].data.at(0) == -1.5);
  }

  TEST_CASE("attribute values keep their types and ints become floats where the schema says float") {
    Graph g = parse_graph(
        "input a: f32[4, 6]\n"
        "input b: f32[5, 6]\n"
        "g1 = Gemm(a, b) {alpha=2, beta=-1e-3, transB=1}\n"
        "g2 = Gemm(a, b) {alpha=inf, beta=nan, transB=1}\n"
        "t = Transpose(a) {perm=[]}\n"
        "u = Unsqueeze(a) {axes=[-1, +0]}\n"
        "output g1, g2, t, u\n");
    const Attributes& gemm = g.nodes()[0].attrs;
    CHECK(gemm.at("alpha").type() == AttrType::Float);
    CHECK(gemm.at("alpha").f() == 2.0);
    CHECK(gemm.at("beta").f() == -1e-3);
    CHECK(gemm.at("transB").type() == AttrType::Int);
    CHECK(std::isinf(g.nodes()[1].attrs.at("alpha").f()));
    CHECK(std::isnan(g.nodes()[1].attrs.at("beta").f()));
    CHECK(g.nodes()[2].attrs.at("perm").type() == AttrType::Ints);  // [] takes the schema's type
    CHECK(g.nodes()[2].attrs.at("perm").ints().empty());
    CHECK(g.nodes()[3].attrs.at("axes").ints() == std::vector<int64_t>{-1, 0});
    check_round_trip(g);
    std::string text = print_graph(g);
    CHECK(text.find("g1 = Gemm(a, b) {alpha=2.0, beta=-0.001, transB=1}\n") != std::string::npos);
    CHECK(text.find("g2 = Gemm(a, b) {alpha=inf, beta=nan, transB=1}\n") != std::string::npos);
  }

  TEST_CASE("attribute types not fitting the schema are left to the verifier") {
    // A list with one float is floats; a float where an int is wanted stays a float; the
    // verifier reports them with the node's line and column.
    check_error("input a: f32[2, 3]\nt = Transpose(a) {perm=[1, 0.5]}\noutput t\n", ErrorCode::InvalidGraph,
                "t.fg:2:5: ", "must be ints but is floats [1.0, 0.5]");
    check_error("input a: f32[2, 3]\ns = Softmax(a) {axis=1.0}\noutput s\n", ErrorCode::InvalidGraph, "t.fg:2:5: ",
                "must be int but is float 1.0");
    check_error("input a: f32[2, 3]\ns = Softmax(a) {axes=[1]}\noutput s\n", ErrorCode::InvalidGraph, "t.fg:2:5: ",
                "unknown attribute 'axes'");
    // Strings unescape \" and \\.
    check_error("input a: f32[2]\n\n  y = Gelu(a) {approximate=\"ta\\\"n\\\\h\"}\noutput y\n", ErrorCode::InvalidGraph,
                "t.fg:3:7: ", "got \"ta\"n\\h\"");
    check_error("input a: f32[2]\ny = Relu(a, a)\noutput y\n", ErrorCode::InvalidGraph, "t.fg:2:5: ",
                "has 2 inputs");
    check_error("input a: f32[2, 3]\ny = Softmax(a)\n", ErrorCode::InvalidGraph, "t.fg: ", "has no outputs");
    check_error("input a: f32[2, 3]\nb = BatchNormalization(a, a, a, a, a) {training_mode=1}\noutput b\n",
                ErrorCode::Unsupported, "t.fg:2:5: ", "training_mode");
  }

  TEST_CASE("names with dots slashes colons and keywords") {
    Graph g = parse_graph(
        "graph onnx/model.v2\n"
        "input /enc/layer.0/input:0: f32[batch.size, 4]\n"
        "input input: f32[4]\n"
        "const onnx::Mul_3: f32[] = [0.5]\n"
        "const 123: f32[4] = fill(2.0)\n"
        "/enc/layer.0/Mul:0 = Mul(/enc/layer.0/input:0, onnx::Mul_3) as /enc/layer.0/Mul\n"
        "output = Add(/enc/layer.0/Mul:0, input) as graph\n"
        "const = Sub(output, 123)\n"
        "as = Neg(const) as as\n"
        "-x = Relu(as)\n"
        "output output, -x\n");
    CHECK(g.name() == "onnx/model.v2");
    CHECK(g.value(g.inputs()[0]).name == "/enc/layer.0/input:0");
    CHECK(g.value(g.inputs()[0]).dims[0].symbol == "batch.size");
    REQUIRE(g.nodes().size() == 5);
    CHECK(g.nodes()[0].name == "/enc/layer.0/Mul");
    CHECK(g.nodes()[1].name == "graph");
    CHECK(g.nodes()[3].name == "as");
    CHECK(g.value(g.outputs()[1]).name == "-x");
    check_round_trip(g);
    std::string text = print_graph(g);
    CHECK(text.find("output = Add(/enc/layer.0/Mul:0, input) as graph\n") != std::string::npos);
    CHECK(text.find("as = Neg(const)\n") != std::string::npos);  // node named after its output
  }

  TEST_CASE("whitespace comments and CRLF are free") {
    Graph a = parse_graph("input x: f32[2]\ny = Relu(x)\noutput y\n");
    Graph b = parse_graph(
        "\r\n  # leading comment\r\n\tinput   x :f32 [ 2 ]   # c\r\n\r\ny=Relu( x )#c\r\noutput y");
    CHECK(print_graph(a) == print_graph(b));
    CHECK(fingerprint(a) == fingerprint(b));
  }

  TEST_CASE("recipes print as written") {
    Graph g = parse_graph(
        "const a: f32[8] = randn(seed=18446744073709551615, std=0.02)\n"
        "const b: f32[8] = randn(mean=1.5, std=2, seed=3)\n"  // any order; ints as floats
        "const c: i32[8] = uniform(seed=4, low=-100, high=100.0)\n"
        "const d: bool[8] = fill(1)\n"
        "const e: i64[2, 2] = randn(seed=5, std=1000.0)\n"
        "output a, b, c, d, e\n");
    CHECK(g.constants()[0].recipe == "randn(seed=18446744073709551615, std=0.02)");
    CHECK(g.constants()[1].recipe == "randn(seed=3, std=2.0, mean=1.5)");
    CHECK(g.constants()[2].recipe == "uniform(seed=4, low=-100.0, high=100.0)");
    CHECK(g.constants()[3].recipe == "fill(1.0)");
    CHECK(same_bits(g.constants()[1].data, make_random(DType::F32, Shape{8}, RandomRecipe::normal(3, 2.0, 1.5))));
    CHECK(same_bits(g.constants()[4].data, make_random(DType::I64, Shape{2, 2}, RandomRecipe::normal(5, 1000.0))));
    check_round_trip(g);
  }

  TEST_CASE("npy constants load relative to the base folder and keep their recipe") {
    test::TempDir dir("tf-npy");
    std::filesystem::create_directories(dir.path() / "weights");
    Tensor w = make_random(DType::F16, Shape{2, 3}, RandomRecipe::normal(1, 1.0));
    write_npy(dir.file("weights/w \"1\".npy"), w);
    std::string text = "const w: f16[2, 3] = npy( \"weights/w \\\"1\\\".npy\" )\noutput w\n";
    Graph g = parse_graph(text, dir.path().string(), "npy");
    CHECK(same_bits(g.constants()[0].data, w));
    CHECK(g.constants()[0].recipe == "npy(\"weights/w \\\"1\\\".npy\")");
    check_round_trip(g, dir.path().string());

    // load_graph resolves against the graph file's folder.
    std::ofstream(dir.file("g.fg")) << text;
    Graph loaded = load_graph(dir.file("g.fg"));
    CHECK(fingerprint(loaded) == fingerprint(g));

    // Errors keep npy's code and gain the position of the path.
    check_error("const w: f16[2] = npy(\"missing.npy\")\noutput w\n", ErrorCode::Io, "t.fg:1:23: ", "missing.npy");
    INFO("mismatch");
    try {
      parse_graph("const w: f32[2, 3] = npy(\"weights/w \\\"1\\\".npy\")\noutput w\n", dir.path().string(), "t.fg");
      FAIL("parsed");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::ParseError);
      CHECK(e.message().rfind("t.fg:1:26: ", 0) == 0);
      CHECK(e.message().find("holds f16[2, 3] but the constant is declared f32[2, 3]") != std::string::npos);
    }
  }

  TEST_CASE("load_graph names the file in errors") {
    test::TempDir dir("tf-load");
    try {
      load_graph(dir.file("nope.fg"));
      FAIL("loaded");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
      CHECK(e.message().find(dir.file("nope.fg")) != std::string::npos);
      CHECK(e.message().find("No such file") != std::string::npos);
    }
    try {
      load_graph(dir.path().string());
      FAIL("loaded a folder");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::Io);
    }
    std::ofstream(dir.file("bad.fg")) << "input x: f32[2]\ny = Relu(q)\n";
    try {
      load_graph(dir.file("bad.fg"));
      FAIL("loaded");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::ParseError);
      CHECK(e.message().rfind(dir.file("bad.fg") + ":2:10: ", 0) == 0);
    }
  }

  // One test per parse error: the code, the exact line:column and what the message says.
  TEST_CASE("error unknown op type suggests close names") {
    check_parse_error("input x: f32[2]\ny = Rleu(x)\noutput y\n", "t.fg:2:5: ", "unknown op type 'Rleu' (did you mean Relu");
    check_parse_error("input x: f32[2]\ny = Matmul(x, x)\noutput y\n", "t.fg:2:5: ", "did you mean MatMul");
    check_parse_error("input x: f32[2]\ny = Frobnicate(x)\noutput y\n", "t.fg:2:5: ", "unknown op type 'Frobnicate'");
    check_parse_error("input x: f32[2]\ny = 3(x)\n", "t.fg:2:5: ", "expected an op type, found '3'");
  }
  TEST_CASE("error a generated constant beyond the bound") {
    // (materialized as the graph is read: a typo in a dim must not ask for terabytes)
    check_parse_error("const w: f32[8555555555555, 8] = randn(seed=1, std=0.1)\n", "t.fg:1:",
                      "constant 'w' has 68444444444440 elements, more than the 1073741824 bytes a generated "
                      "constant may take");
    check_parse_error("const w: i64[16385, 8192] = fill(1)\n", "t.fg:1:", "generated constant may take");
  }
  TEST_CASE("error unknown dtype") {
    check_parse_error("input x: f31[2]\n", "t.fg:1:10: ", "unknown dtype 'f31'");
    check_parse_error("input x: [2]\n", "t.fg:1:10: ", "expected a dtype");
  }
  TEST_CASE("error undefined value") {
    check_parse_error("input x: f32[2]\ny = Relu(z)\noutput y\n", "t.fg:2:10: ", "undefined value 'z'");
    check_parse_error("input x: f32[2]\ny = Relu(y)\noutput y\n", "t.fg:2:10: ", "undefined value 'y'");
    check_parse_error("input x: f32[2]\noutput x, q\n", "t.fg:2:11: ", "undefined value 'q'");
  }
  TEST_CASE("error duplicate names") {
    check_parse_error("input x: f32[2]\nconst x: f32[2] = fill(1.0)\n", "t.fg:2:7: ", "'x' is already defined (line 1)");
    check_parse_error("input x: f32[2]\nx = Relu(x)\n", "t.fg:2:1: ", "'x' is already defined");
    check_parse_error("input x: f32[2]\na = Relu(x) as n\nb = Relu(a) as n\noutput b\n", "t.fg:3:16: ",
                      "node name 'n' is used twice");
    check_parse_error("input x: f32[2]\na = Relu(x) as b\nb = Relu(a)\noutput b\n", "t.fg:3:1: ",
                      "node name 'b' is used twice");
    check_parse_error("input x: f32[2]\noutput x, x\n", "t.fg:2:11: ", "already an output");
    check_parse_error("input x: f32[2]\ny = Softmax(x) {axis=0, axis=0}\n", "t.fg:2:25: ", "'axis' is given twice");
    check_parse_error("input _: f32[2]\n", "t.fg:1:7: ", "'_' marks an omitted input");
  }
  TEST_CASE("error unterminated string and unknown escape") {
    check_parse_error("input x: f32[2]\ny = Gelu(x) {approximate=\"tanh}\n", "t.fg:2:26: ", "unterminated string");
    check_parse_error("input x: f32[2]\ny = Gelu(x) {approximate=\"a\\nb\"}\n", "t.fg:2:28: ", "unknown escape");
  }
  TEST_CASE("error bad number") {
    check_parse_error("input x: f32[2x]\n", "t.fg:1:14: ", "bad number '2x'");
    check_parse_error("input x: f32[2]\ny = Softmax(x) {axis=1.5.2}\n", "t.fg:2:22: ", "bad number '1.5.2'");
    check_parse_error("const c: f32[1] = [1e]\n", "t.fg:1:20: ", "bad number '1e'");
    check_parse_error("const c: f32[1] = [1e39]\n", "t.fg:1:20: ", "out of range for f32");
    check_parse_error("input x: f32[2.0]\n", "t.fg:1:14: ", "expected a dimension (an integer), found '2.0'");
    check_parse_error("input x: f32[-1]\n", "t.fg:1:14: ", "dimension -1 is negative");
  }
  TEST_CASE("error integer overflow") {
    check_parse_error("input x: f32[2]\ny = Softmax(x) {axis=99999999999999999999}\n", "t.fg:2:22: ",
                      "out of range");
    check_parse_error("input x: f32[99999999999999999999]\n", "t.fg:1:14: ", "out of range");
    check_parse_error("const c: i64[1] = [-9223372036854775809]\n", "t.fg:1:20: ", "out of range");
    check_parse_error("const c: i32[1] = [2147483648]\n", "t.fg:1:20: ", "out of range for i32");
    check_parse_error("const c: i32[2] = fill(3e9)\n", "t.fg:1:19: ", "outside the range of i32");
    check_parse_error("const c: i64[2] = randn(seed=1, std=1e30)\n", "t.fg:1:19: ", "outside the range of i64");
    check_parse_error("const c: f32[1000000000, 1000000000] = fill(0.0)\n", "t.fg:1:13: ", "overflows");
  }
  TEST_CASE("error trailing garbage") {
    check_parse_error("input x: f32[2]\noutput x extra\n", "t.fg:2:10: ", "expected end of line, found 'extra'");
    check_parse_error("input x: f32[2] 3\n", "t.fg:1:17: ", "expected end of line, found '3'");
    check_parse_error("input x: f32[2]\ny = Relu(x) @\n", "t.fg:2:13: ", "unexpected character '@'");
    check_parse_error("input x: f32[2]\ny = Relu(x) as\n", "t.fg:2:15: ", "expected a node name");
    check_parse_error("= Relu(x)\n", "t.fg:1:1: ", "expected a statement");
  }
  TEST_CASE("error missing parenthesis") {
    check_parse_error("input x: f32[2]\ny = Relu(x\n", "t.fg:2:11: ", "expected ',' or ')' after an input, found end of line");
    check_parse_error("input x: f32[2]\ny = Relu x\n", "t.fg:2:10: ", "expected '(' after Relu, found 'x'");
    check_parse_error("const c: f32[2] = fill(1.0\n", "t.fg:1:27: ", "expected ')' after the fill value");
    check_parse_error("input x: f32[2\n", "t.fg:1:15: ", "expected ',' or ']' after a dimension");
    check_parse_error("input x: f32[2]\ny = Softmax(x) {axis=1\n", "t.fg:2:23: ", "expected ',' or '}'");
  }
  TEST_CASE("error wrong inline data count") {
    check_parse_error("const c: f32[2, 2] = [1, 2, 3]\n", "t.fg:1:30: ", "expected 4 values for f32[2, 2], found 3");
    check_parse_error("const c: f32[2] = [1, 2, 3]\n", "t.fg:1:26: ", "expected 2 values for f32[2], found 3");
    check_parse_error("const c: f32[] = []\n", "t.fg:1:19: ", "expected 1 value for f32[], found 0");
  }
  TEST_CASE("error wrong inline value kind") {
    check_parse_error("const c: bool[1] = [2]\n", "t.fg:1:21: ", "expected true, false, 0 or 1");
    check_parse_error("const c: i64[1] = [1.5]\n", "t.fg:1:20: ", "expected an i64 value (an integer)");
    check_parse_error("const c: f32[1] = [true]\n", "t.fg:1:20: ", "expected a f32 value, found 'true'");
  }
  TEST_CASE("error statement order and shape") {
    check_parse_error("input x: f32[2]\ngraph g\n", "t.fg:2:1: ", "'graph' must be the first statement");
    check_parse_error("graph\n", "t.fg:1:6: ", "expected a graph name");
    check_parse_error("const c: f32[N] = fill(1.0)\n", "t.fg:1:14: ", "dimensions must be integers");
    check_parse_error("const c: f32[2] fill(1.0)\n", "t.fg:1:17: ", "expected '=' before the constant's value");
    check_parse_error("const c: f32[2] = zeros()\n", "t.fg:1:19: ", "expected randn(...), uniform(...)");
    check_parse_error("input x:f32[2]\n", "t.fg:1:12: ", "write 'x: f32'");
    check_parse_error("input x: f32[2]\na, b = Relu(x)\n", "t.fg:2:1: ", "Relu has 1 output, found 2 names");
  }
  TEST_CASE("error recipe arguments") {
    check_parse_error("const c: f32[2] = randn(seed=1)\n", "t.fg:1:19: ", "randn needs std=");
    check_parse_error("const c: f32[2] = randn(seed=1, sd=2.0)\n", "t.fg:1:33: ", "unknown argument 'sd' of randn");
    check_parse_error("const c: f32[2] = randn(seed=-1, std=1.0)\n", "t.fg:1:30: ", "non-negative integer");
    check_parse_error("const c: f32[2] = uniform(seed=1, low=0.0, low=1.0)\n", "t.fg:1:44: ", "'low' is given twice");
    check_parse_error("const c: f32[2] = uniform(seed=1, low=0.0)\n", "t.fg:1:19: ", "uniform needs high=");
    check_parse_error("const c: f32[2] = fill()\n", "t.fg:1:24: ", "expected the fill value (a number)");
    check_parse_error("const c: f32[2] = npy(w.npy)\n", "t.fg:1:23: ", "expected a \"path\"");
  }

  TEST_CASE("fuzzed texts give fusor errors and what parses prints back") {
    // Random edits of a valid graph must never crash: each text either parses (and then
    // prints back stably) or throws fusor::Error.
    const std::string seed = kFuzzSeed;
    Graph base = parse_graph(seed);
    check_round_trip(base);
    const std::string alphabet = "()[]{},=:_\"#\\-+.e0123456789 \nxXafinr";
    std::mt19937_64 rng(12345);
    int parsed = 0, failed = 0;
    for (int iter = 0; iter < 3000; ++iter) {
      std::string text = seed;
      int edits = 1 + int(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        size_t at = size_t(rng() % (text.size() + 1));
        char c = alphabet[rng() % alphabet.size()];
        switch (rng() % 4) {
          case 0: if (at < text.size()) text[at] = c; break;
          case 1: text.insert(at, 1, c); break;
          case 2: if (at < text.size()) text.erase(at, 1); break;
          default: {  // duplicate a slice somewhere else
            size_t from = size_t(rng() % text.size()), len = size_t(rng() % 12);
            text.insert(at, text.substr(from, len));
          }
        }
      }
      try {
        Graph g = parse_graph(text);
        ++parsed;
        std::string printed = print_graph(g);
        Graph again = parse_graph(printed);
        if (print_graph(again) != printed || fingerprint(again) != fingerprint(g)) {
          INFO("text:\n" << text << "\nprinted:\n" << printed);
          FAIL_CHECK("print is not stable");
        }
      } catch (const Error&) {
        ++failed;
      }
    }
    MESSAGE("fuzz: " << parsed << " parsed, " << failed << " rejected");
    CHECK(failed > 0);
  }
}
