// Static LSTM, GRU and RNN (codegen/static/recurrent.cpp, Note [Recurrent kernels]) against
// ONNX's equations written here step by step in double (no GEMM, every gate its own dot
// product): every direction, biases, sequence_lens (reverse runs each sequence from its own
// last element), initial states, peepholes, clip, input_forget, linear_before_reset, layout
// 1, activations with alpha and beta, f16; and the errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "tests/support/test_util.h"

using namespace fusor;
using test::OpInput;

namespace {

struct Case {
  OpKind op = OpKind::LSTM;
  int64_t T = 4, B = 3, I = 5, H = 6;
  std::string direction = "forward";
  bool bias = true, lens = false, initial = false, peepholes = false;
  double clip = 0;
  int64_t input_forget = 0, linear_before_reset = 0, layout = 0;
  std::vector<std::string> acts;  // per direction, repeated; empty: defaults
  std::vector<double> alphas, betas;
  DType dtype = DType::F32;
};

double activate(const std::string& name, double x, double alpha, double beta) {
  if (name == "Sigmoid") return 1 / (1 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return std::max(x, 0.0);
  if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
  if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
  if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
  FAIL("no reference for ", name);
  return 0;
}

// The reference's outputs: Y [T, D, B, H], Y_h (and Y_c) [D, B, H], layout 0.
std::vector<std::vector<double>> reference(const Case& c, const std::vector<Tensor>& in) {
  const int64_t T = c.T, B = c.B, I = c.I, H = c.H;
  const int D = c.direction == "bidirectional" ? 2 : 1;
  const int64_t G = c.op == OpKind::LSTM ? 4 : c.op == OpKind::GRU ? 3 : 1;
  const int per = c.op == OpKind::LSTM ? 3 : c.op == OpKind::GRU ? 2 : 1;
  std::vector<std::string> acts = c.acts;
  if (acts.empty())
    for (int d = 0; d < D; ++d)
      for (const char* a : c.op == OpKind::LSTM ? std::vector<const char*>{"Sigmoid", "Tanh", "Tanh"}
                           : c.op == OpKind::GRU ? std::vector<const char*>{"Sigmoid", "Tanh"}
                                                 : std::vector<const char*>{"Tanh"})
        acts.push_back(a);
  // Each function's alpha and beta, consumed by the functions that take them.
  std::vector<double> alpha(acts.size(), 1.0), beta(acts.size(), 0.0);
  size_t ai = 0, bi = 0;
  for (size_t k = 0; k < acts.size(); ++k) {
    const std::string& a = acts[k];
    if (a == "LeakyRelu") alpha[k] = ai < c.alphas.size() ? c.alphas[ai++] : 0.01;
    if (a == "HardSigmoid") alpha[k] = ai < c.alphas.size() ? c.alphas[ai++] : 0.2, beta[k] = bi < c.betas.size() ? c.betas[bi++] : 0.5;
    if (a == "ScaledTanh") alpha[k] = ai < c.alphas.size() ? c.alphas[ai++] : 1.0, beta[k] = bi < c.betas.size() ? c.betas[bi++] : 1.0;
  }
  const Tensor &x = in[0], &w = in[1], &r = in[2];
  auto X = [&](int64_t t, int64_t b, int64_t i) { return c.layout ? x.at((b * T + t) * I + i) : x.at((t * B + b) * I + i); };
  auto bias = [&](int d, int64_t j) { return c.bias ? in[3].at(d * 2 * G * H + j) : 0.0; };
  std::vector<double> Y(size_t(T * D * B * H), 0.0), Yh(size_t(D * B * H), 0.0), Yc(size_t(D * B * H), 0.0);
  for (int d = 0; d < D; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    auto f = [&](int k, double v) {
      if (c.clip > 0) v = std::clamp(v, -c.clip, c.clip);
      const size_t at = size_t(d * per + k);
      return activate(acts[at], v, alpha[at], beta[at]);
    };
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = c.lens ? in[4].data<int64_t>()[b] : T;
      std::vector<double> h(size_t(H), 0.0), cell(size_t(H), 0.0);
      if (c.initial)
        for (int64_t j = 0; j < H; ++j) {
          const int64_t at = c.layout ? (b * D + d) * H + j : (d * B + b) * H + j;
          h[size_t(j)] = in[5].at(at);
          if (c.op == OpKind::LSTM) cell[size_t(j)] = in[6].at(at);
        }
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = reverse ? len - 1 - s : s;
        // pre[g][j] = X_t . W[g*H + j] + Wb; rec[g][j] = h . R[g*H + j] + Rb.
        std::vector<double> pre(static_cast<size_t>(G * H), 0.0), rec(static_cast<size_t>(G * H), 0.0);
        for (int64_t j = 0; j < G * H; ++j) {
          double p = bias(d, j), q = bias(d, G * H + j);
          for (int64_t i = 0; i < I; ++i) p += X(t, b, i) * w.at((d * G * H + j) * I + i);
          for (int64_t k = 0; k < H; ++k) q += h[size_t(k)] * r.at((d * G * H + j) * H + k);
          pre[size_t(j)] = p, rec[size_t(j)] = q;
        }
        std::vector<double> next(static_cast<size_t>(H), 0.0);
        if (c.op == OpKind::LSTM) {
          for (int64_t j = 0; j < H; ++j) {
            auto P = [&](int k) { return c.peepholes ? in[7].at(d * 3 * H + k * H + j) : 0.0; };
            const double ig = f(0, pre[size_t(j)] + rec[size_t(j)] + P(0) * cell[size_t(j)]);
            const double fg = c.input_forget ? 1 - ig : f(0, pre[size_t(2 * H + j)] + rec[size_t(2 * H + j)] + P(2) * cell[size_t(j)]);
            const double cg = f(1, pre[size_t(3 * H + j)] + rec[size_t(3 * H + j)]);
            cell[size_t(j)] = fg * cell[size_t(j)] + ig * cg;
            const double og = f(0, pre[size_t(H + j)] + rec[size_t(H + j)] + P(1) * cell[size_t(j)]);
            next[size_t(j)] = og * f(2, cell[size_t(j)]);
          }
        } else if (c.op == OpKind::GRU) {
          std::vector<double> z(static_cast<size_t>(H), 0.0), rg(static_cast<size_t>(H), 0.0);
          for (int64_t j = 0; j < H; ++j) {
            z[size_t(j)] = f(0, pre[size_t(j)] + rec[size_t(j)]);
            rg[size_t(j)] = f(0, pre[size_t(H + j)] + rec[size_t(H + j)]);
          }
          for (int64_t j = 0; j < H; ++j) {
            double cand;
            if (c.linear_before_reset) {
              cand = f(1, pre[size_t(2 * H + j)] + rg[size_t(j)] * rec[size_t(2 * H + j)]);
            } else {
              double q = bias(d, G * H + 2 * H + j);
              for (int64_t k = 0; k < H; ++k) q += rg[size_t(k)] * h[size_t(k)] * r.at((d * G * H + 2 * H + j) * H + k);
              cand = f(1, pre[size_t(2 * H + j)] + q);
            }
            next[size_t(j)] = (1 - z[size_t(j)]) * cand + z[size_t(j)] * h[size_t(j)];
          }
        } else {
          for (int64_t j = 0; j < H; ++j) next[size_t(j)] = f(0, pre[size_t(j)] + rec[size_t(j)]);
        }
        h = next;
        for (int64_t j = 0; j < H; ++j) Y[size_t(((t * D + d) * B + b) * H + j)] = h[size_t(j)];
      }
      for (int64_t j = 0; j < H; ++j) {
        Yh[size_t((d * B + b) * H + j)] = h[size_t(j)];
        Yc[size_t((d * B + b) * H + j)] = cell[size_t(j)];
      }
    }
  }
  return {Y, Yh, Yc};
}

void check_case(const Case& c) {
  const int64_t D = c.direction == "bidirectional" ? 2 : 1;
  const int64_t G = c.op == OpKind::LSTM ? 4 : c.op == OpKind::GRU ? 3 : 1;
  uint64_t seed = 7;
  auto rnd = [&](Shape s, double scale) {
    Tensor t = test::uniform(s, seed++, -scale, scale, DType::F32);
    Tensor out = Tensor::empty(c.dtype, s);
    for (int64_t i = 0; i < t.numel(); ++i) out.set(i, t.at(i));
    return out;
  };
  std::vector<Tensor> in = {rnd(c.layout ? Shape{c.B, c.T, c.I} : Shape{c.T, c.B, c.I}, 1.0), rnd({D, G * c.H, c.I}, 0.5),
                            rnd({D, G * c.H, c.H}, 0.5)};
  std::vector<OpInput> ops = {in[0], OpInput::constant_of(in[1]), OpInput::constant_of(in[2])};
  auto add = [&](bool given, Tensor t) {
    in.push_back(t);
    ops.push_back(given ? OpInput(t) : OpInput::none());
  };
  add(c.bias, rnd({D, 2 * G * c.H}, 0.5));
  Tensor lens = Tensor::empty(DType::I64, {c.B});
  for (int64_t b = 0; b < c.B; ++b) lens.data<int64_t>()[b] = std::max<int64_t>(0, c.T - b);  // T, T-1, ...
  add(c.lens, lens);
  const Shape state = c.layout ? Shape{c.B, D, c.H} : Shape{D, c.B, c.H};
  add(c.initial, rnd(state, 0.8));
  if (c.op == OpKind::LSTM) {
    add(c.initial, rnd(state, 0.8));
    add(c.peepholes, rnd({D, 3 * c.H}, 0.5));
  }
  while (!ops.empty() && ops.back().absent) ops.pop_back(), in.pop_back();
  while (in.size() < 8) in.push_back(Tensor());
  Attributes attrs{{"direction", c.direction}, {"layout", c.layout}, {"hidden_size", c.H}};
  if (c.clip > 0) attrs["clip"] = c.clip;
  if (c.op == OpKind::LSTM) attrs["input_forget"] = c.input_forget;
  if (c.op == OpKind::GRU) attrs["linear_before_reset"] = c.linear_before_reset;
  if (!c.acts.empty()) {
    std::string joined;
    for (const std::string& a : c.acts) joined += (joined.empty() ? "" : ",") + a;
    attrs["activations"] = joined;
  }
  if (!c.alphas.empty()) attrs["activation_alpha"] = c.alphas;
  if (!c.betas.empty()) attrs["activation_beta"] = c.betas;
  const std::vector<std::vector<double>> want = reference(c, in);
  const double tol = c.dtype == DType::F32 ? 2e-5 : c.dtype == DType::F16 ? 2e-3 : 2e-2;
  for (Parallel* par : test::parallels()) {
    const std::vector<Tensor> got = test::run_static_op(c.op, ops, attrs, *par);
    for (size_t k = 0; k < got.size(); ++k) {
      CAPTURE(k);
      // The reference is in layout 0; move layout 1's outputs there.
      const Tensor& g = got[k];
      std::vector<double> flat(static_cast<size_t>(g.numel()), 0.0);
      const int64_t B = c.B, T = c.T, H = c.H;
      for (int64_t i = 0; i < g.numel(); ++i) {
        int64_t at = i;
        if (c.layout && k == 0) {  // [B, T, D, H] -> [T, D, B, H]
          const int64_t b = i / (T * D * H), t = i / (D * H) % T, d = i / H % D, j = i % H;
          at = ((t * D + d) * B + b) * H + j;
        } else if (c.layout) {  // [B, D, H] -> [D, B, H]
          const int64_t b = i / (D * H), d = i / H % D, j = i % H;
          at = (d * B + b) * H + j;
        }
        flat[size_t(at)] = g.at(i);
      }
      FUSOR_CHECK_CLOSE(test::make(DType::F32, Shape{g.numel()}, flat),
                        test::make(DType::F32, Shape{g.numel()}, want[k]), tol, tol);
    }
  }
}

}  // namespace

TEST_SUITE("static/recurrent") {
  TEST_CASE("LSTM in every direction, with and without biases, lengths, initial states, peepholes") {
    for (const char* dir : {"forward", "reverse", "bidirectional"})
      for (int variant = 0; variant < 4; ++variant) {
        Case c;
        c.direction = dir;
        c.bias = variant != 1;
        c.lens = variant >= 2;
        c.initial = variant == 2 || variant == 3;
        c.peepholes = variant == 3;
        CAPTURE(dir);
        CAPTURE(variant);
        check_case(c);
      }
  }

  TEST_CASE("LSTM with clip, input_forget, layout 1, other activations, f16") {
    Case c;
    c.clip = 0.4;
    check_case(c);
    c = Case{};
    c.input_forget = 1;
    c.initial = true;
    check_case(c);
    c = Case{};
    c.layout = 1;
    c.direction = "bidirectional";
    c.initial = c.lens = true;
    check_case(c);
    c = Case{};
    c.acts = {"HardSigmoid", "LeakyRelu", "ScaledTanh"};
    c.alphas = {0.3, 0.05, 1.5};
    c.betas = {0.4, 0.7};
    check_case(c);
    c = Case{};
    c.dtype = DType::F16;
    check_case(c);
  }

  TEST_CASE("GRU with and without linear_before_reset, every direction; RNN with Relu and lengths") {
    for (int64_t lbr : {0, 1})
      for (const char* dir : {"forward", "reverse", "bidirectional"}) {
        Case c;
        c.op = OpKind::GRU;
        c.linear_before_reset = lbr;
        c.direction = dir;
        c.lens = c.initial = std::string(dir) != "forward";
        CAPTURE(lbr);
        CAPTURE(dir);
        check_case(c);
      }
    Case rnn;
    rnn.op = OpKind::RNN;
    check_case(rnn);
    rnn.acts = {"Relu", "Tanh"};
    rnn.direction = "bidirectional";
    rnn.lens = true;
    check_case(rnn);
  }

  TEST_CASE("bad attributes and shapes are errors naming the node") {
    const Tensor x = test::randn({2, 1, 3}, 1), w = test::randn({1, 8, 3}, 2), r = test::randn({1, 8, 2}, 3);
    std::string msg;
    CHECK(test::error_of([&] { test::run_static_op(OpKind::LSTM, {x, w, r}, {{"direction", std::string("sideways")}}); }, &msg) ==
          ErrorCode::InvalidGraph);
    CHECK(msg.find("direction \"sideways\"") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::LSTM, {x, w, r}, {{"activations", std::string("Sigmoid,Tanh")}}); },
                         &msg) == ErrorCode::InvalidGraph);
    CHECK(msg.find("activations lists 2 functions; LSTM takes 3") != std::string::npos);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::RNN, {x, test::randn({1, 2, 3}, 2), test::randn({1, 2, 2}, 3)},
                                                   {{"activations", std::string("Swish")}}); },
                         &msg) == ErrorCode::Unsupported);
    CHECK(test::error_of([&] { test::run_static_op(OpKind::LSTM, {x, test::randn({1, 8, 4}, 2), r}); }, &msg) ==
          ErrorCode::ShapeMismatch);
    CHECK(msg.find("(W) must have shape [1, 8, 3]") != std::string::npos);
    Tensor lens = Tensor::empty(DType::I64, {1});
    lens.data<int64_t>()[0] = 3;
    CHECK(test::error_of([&] { test::run_static_op(OpKind::LSTM, {x, w, r, OpInput::none(), lens}); }, &msg) ==
          ErrorCode::InvalidArgument);
    CHECK(msg.find("sequence_lens[0] = 3 is outside [0, 2]") != std::string::npos);
  }
}
