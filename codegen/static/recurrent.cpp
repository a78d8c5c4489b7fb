// Static kernels of the recurrent operators: LSTM, GRU and RNN (ir/ops/recurrent.h).
//
// Note [Recurrent kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Per direction, the input's share of every gate for every step is one GEMM up front,
// [T * B, I] x W^T (OpenBLAS, on the engine's threads), with the biases added (Wb + Rb;
// GRU's Rbh stays apart when linear_before_reset, as ONNX defines). Then the steps run in
// order, each one GEMM of the batch's hidden states by R^T ([B, H] x [H, G * H], one BLAS
// thread; GRU without linear_before_reset takes a second, (r . H) x Rh^T, once r is known)
// and each gate's activation over the whole gate, vectorized for Sigmoid and Tanh
// (codegen/static/math.h's approximations, as the static Sigmoid and Tanh kernels). An LSTM
// of T = 200, batch 8, 256 inputs and hidden 256 on a 2-vCPU Zen 5 (`fusor run --backend
// static`, a one-LSTM text graph, medians of 20): 54.7 ms with libm's tanh and exp per
// element, 27.7 ms vectorized.
// A batch entry with sequence_lens[b] = L is active for its first L steps: forward it runs
// t = 0..L-1, reverse t = L-1..0 (its own last element first), and the rest of its Y rows
// are zeros while Y_h (and Y_c) keep its state after step L. clip bounds every gate's
// input before its activation. f16 and bf16 run in f32 (run_in_f32).
// activation_alpha and activation_beta are consumed in the order of the activations, by
// the functions that take them (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh,
// HardSigmoid, Elu: alpha; Affine, ScaledTanh, HardSigmoid: beta), as ONNX Runtime reads
// them; a function without a value takes its ONNX default.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "codegen/static/kernel_util.h"
#include "codegen/static/math.h"
#include "ir/ops/recurrent.h"

namespace fusor {

namespace {

using namespace static_kernels;

struct Activation {
  RecurrentActivation kind = RecurrentActivation::Tanh;
  float alpha = 0, beta = 0;

  float operator()(float x) const {
    switch (kind) {
      case RecurrentActivation::Relu: return x > 0 ? x : 0.0f;
      case RecurrentActivation::Tanh: return tanh_f32(x);
      case RecurrentActivation::Sigmoid: return sigmoid_f32(x);
      case RecurrentActivation::Affine: return alpha * x + beta;
      case RecurrentActivation::LeakyRelu: return x >= 0 ? x : alpha * x;
      case RecurrentActivation::ThresholdedRelu: return x >= alpha ? x : 0.0f;  // (ONNX's RNN table: >=)
      case RecurrentActivation::ScaledTanh: return alpha * std::tanh(beta * x);
      case RecurrentActivation::HardSigmoid: return std::clamp(alpha * x + beta, 0.0f, 1.0f);
      case RecurrentActivation::Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0f);
      case RecurrentActivation::Softsign: return x / (1.0f + std::fabs(x));
      case RecurrentActivation::Softplus: return x > 20 ? x : std::log1p(std::exp(x));
    }
    return x;
  }

  // v[i] = f(v[i]), vectorized for Tanh and Sigmoid (codegen/static/math.h).
  void apply(float* v, int64_t n) const {
    switch (kind) {
      case RecurrentActivation::Tanh:
        for (int64_t i = 0; i < n; ++i) v[i] = tanh_f32(v[i]);
        return;
      case RecurrentActivation::Sigmoid:
        for (int64_t i = 0; i < n; ++i) v[i] = sigmoid_f32(v[i]);
        return;
      default:
        for (int64_t i = 0; i < n; ++i) v[i] = (*this)(v[i]);
    }
  }
};

// Each of v's n values bounded to [-clip, clip] (no bound when clip is 0).
void clip_all(float* v, int64_t n, float clip) {
  if (clip > 0)
    for (int64_t i = 0; i < n; ++i) v[i] = std::clamp(v[i], -clip, clip);
}

// The node's activations with their alphas and betas (recurrent_activation_names).
std::vector<Activation> activations(const Node& n) {
  const std::vector<std::string> names = recurrent_activation_names(n);
  const std::vector<double>& alphas = node_attr(n, "activation_alpha").floats();
  const std::vector<double>& betas = node_attr(n, "activation_beta").floats();
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    Activation a;
    parse_recurrent_activation(name, &a.kind);  // checked by the schema
    using K = RecurrentActivation;
    const bool takes_alpha = a.kind == K::Affine || a.kind == K::LeakyRelu || a.kind == K::ThresholdedRelu ||
                             a.kind == K::ScaledTanh || a.kind == K::HardSigmoid || a.kind == K::Elu;
    const bool takes_beta = a.kind == K::Affine || a.kind == K::ScaledTanh || a.kind == K::HardSigmoid;
    const double alpha0 = a.kind == K::LeakyRelu ? 0.01 : a.kind == K::HardSigmoid ? 0.2 : 1.0;
    const double beta0 = a.kind == K::HardSigmoid ? 0.5 : a.kind == K::Affine ? 0.0 : 1.0;
    a.alpha = float(takes_alpha && ai < alphas.size() ? alphas[ai++] : alpha0);
    a.beta = float(takes_beta && bi < betas.size() ? betas[bi++] : beta0);
    out.push_back(a);
  }
  return out;
}

// A [d0, d1, h] tensor's first two dims swapped (layout 1 <-> 0), as a contiguous copy.
std::vector<float> swap01(const float* p, int64_t d0, int64_t d1, int64_t h) {
  std::vector<float> out(size_t(d0 * d1 * h));
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j) std::memcpy(&out[size_t((j * d0 + i) * h)], p + (i * d1 + j) * h, size_t(h) * sizeof(float));
  return out;
}

void run_recurrent(StaticKernelArgs& a) {
  const Node& n = a.node;
  const bool batch_first = attr_int(n, "layout") == 1;
  const Shape& xs = a.in(0).shape();
  const int64_t T = batch_first ? xs[1] : xs[0], B = batch_first ? xs[0] : xs[1], I = xs[2];
  const int64_t H = a.in(2).shape()[2], G = recurrent_gates(n.op);
  const std::string& dir = attr_string(n, "direction");
  const int D = dir == "bidirectional" ? 2 : 1;
  const bool lstm = n.op == OpKind::LSTM, gru = n.op == OpKind::GRU;
  const bool lbr = gru && attr_int(n, "linear_before_reset") != 0;
  const bool coupled = lstm && attr_int(n, "input_forget") != 0;
  const float clip = has_attr(n, "clip") ? float(attr_float(n, "clip")) : 0.0f;
  const int per = recurrent_activations(n.op);
  const std::vector<Activation> acts = activations(n);
  check_blas_dims(n, {T * B, G * H, I});

  // Inputs as [T, B, ...] f32.
  std::vector<float> x_tb;
  const float* x = a.in(0).data<float>();
  if (batch_first) {
    x_tb = swap01(x, B, T, I);
    x = x_tb.data();
  }
  std::vector<int64_t> lens(size_t(B), T);
  if (a.has(4)) {
    const Tensor& sl = a.in(4);
    for (int64_t b = 0; b < B; ++b) {
      const int64_t v = sl.dtype() == DType::I64 ? sl.data<int64_t>()[b] : sl.data<int32_t>()[b];
      if (v < 0 || v > T) node_fail(n, ErrorCode::InvalidArgument, "sequence_lens[", b, "] = ", v, " is outside [0, ", T, "]");
      lens[size_t(b)] = v;
    }
  }
  auto state_in = [&](int k) {  // initial_h / initial_c as [D, B, H], zeros when absent
    if (!a.has(k)) return std::vector<float>(size_t(D * B * H), 0.0f);
    const float* p = a.in(k).data<float>();
    return batch_first ? swap01(p, B, D, H) : std::vector<float>(p, p + D * B * H);
  };
  std::vector<float> h_all = state_in(5), c_all = lstm ? state_in(6) : std::vector<float>();
  std::vector<float> y(size_t(T * D * B * H), 0.0f);  // [T, D, B, H]

  std::vector<float> gx(size_t(T * B * G * H)), gh(size_t(B * G * H)), rh(size_t(B * H)), hr(size_t(B * H));
  std::vector<float> pre(static_cast<size_t>(G * H), 0.0f), tmp(static_cast<size_t>(H), 0.0f);
  for (int d = 0; d < D; ++d) {
    const bool reverse = dir == "reverse" || d == 1;
    const float* w = a.in(1).data<float>() + d * G * H * I;
    const float* r = a.in(2).data<float>() + d * G * H * H;
    const float* bias = a.has(3) ? a.in(3).data<float>() + d * 2 * G * H : nullptr;
    const float* peep = lstm && a.has(7) ? a.in(7).data<float>() + d * 3 * H : nullptr;
    const Activation& f = acts[size_t(d * per)];
    const Activation& g = acts[size_t(d * per + (per > 1 ? 1 : 0))];
    const Activation& h_act = acts[size_t(d * per + (per > 2 ? 2 : 0))];
    float* hs = h_all.data() + d * B * H;
    float* cs = lstm ? c_all.data() + d * B * H : nullptr;
    // The input's share of every gate, with the biases (Note [Recurrent kernels]).
    use_blas_threads(a.parallel.num_threads());  // (Note [BLAS threads] in contraction.cpp)
    gemm(false, true, T * B, G * H, I, 1.0f, x, I, w, I, 0.0f, gx.data(), G * H);
    use_blas_threads(1);  // the steps' products are small, one after the other
    if (bias)
      for (int64_t row = 0; row < T * B; ++row)
        for (int64_t j = 0; j < G * H; ++j) {
          const bool apart = gru && j >= 2 * H && lbr;  // Rbh goes inside r . (H Rh^T + Rbh)
          gx[size_t(row * G * H + j)] += bias[j] + (apart ? 0.0f : bias[G * H + j]);
        }
    for (int64_t s = 0; s < T; ++s) {
      // The recurrent share of the gates (GRU without linear_before_reset: z and r only).
      const int64_t first = gru && !lbr ? 2 * H : G * H;
      gemm(false, true, B, first, H, 1.0f, hs, H, r, H, 0.0f, gh.data(), G * H);
      if (gru && !lbr) {
        // r first, then (r . H) Rh^T.
        for (int64_t b = 0; b < B; ++b) {
          if (s >= lens[size_t(b)]) continue;
          const int64_t t = reverse ? lens[size_t(b)] - 1 - s : s;
          const float* xg = &gx[size_t((t * B + b) * G * H)];
          float* rb = &hr[size_t(b * H)];
          for (int64_t j = 0; j < H; ++j) rb[j] = xg[H + j] + gh[size_t(b * G * H + H + j)];
          clip_all(rb, H, clip);
          f.apply(rb, H);
          for (int64_t j = 0; j < H; ++j) rb[j] *= hs[b * H + j];
        }
        gemm(false, true, B, H, H, 1.0f, hr.data(), H, r + 2 * H * H, H, 0.0f, rh.data(), H);
      }
      for (int64_t b = 0; b < B; ++b) {
        if (s >= lens[size_t(b)]) continue;
        const int64_t t = reverse ? lens[size_t(b)] - 1 - s : s;
        const float* xg = &gx[size_t((t * B + b) * G * H)];
        const float* hg = &gh[size_t(b * G * H)];
        float* hb = hs + b * H;
        // The gates' inputs, then each activation over a whole gate (vectorized).
        float* p = pre.data();
        for (int64_t j = 0; j < G * H; ++j) p[j] = xg[j] + hg[j];
        if (lstm) {
          float* c = cs + b * H;
          if (peep)
            for (int64_t j = 0; j < H; ++j) p[j] += peep[j] * c[j], p[2 * H + j] += peep[2 * H + j] * c[j];
          clip_all(p, H, clip);
          clip_all(p + 2 * H, 2 * H, clip);
          f.apply(p, H);  // i
          if (coupled) {
            for (int64_t j = 0; j < H; ++j) p[2 * H + j] = 1.0f - p[j];
          } else {
            f.apply(p + 2 * H, H);  // f
          }
          g.apply(p + 3 * H, H);  // the cell's candidate
          for (int64_t j = 0; j < H; ++j) c[j] = p[2 * H + j] * c[j] + p[j] * p[3 * H + j];
          if (peep)
            for (int64_t j = 0; j < H; ++j) p[H + j] += peep[H + j] * c[j];
          clip_all(p + H, H, clip);
          f.apply(p + H, H);  // o
          std::memcpy(tmp.data(), c, size_t(H) * sizeof(float));
          h_act.apply(tmp.data(), H);
          for (int64_t j = 0; j < H; ++j) hb[j] = p[H + j] * tmp[size_t(j)];
        } else if (gru) {
          clip_all(p, lbr ? 2 * H : H, clip);
          f.apply(p, lbr ? 2 * H : H);  // z (and r)
          for (int64_t j = 0; j < H; ++j)
            tmp[size_t(j)] = lbr ? xg[2 * H + j] + p[H + j] * (hg[2 * H + j] + (bias ? bias[G * H + 2 * H + j] : 0.0f))
                                 : xg[2 * H + j] + rh[size_t(b * H + j)];  // (Rbh is in xg, added with Wbh)
          clip_all(tmp.data(), H, clip);
          g.apply(tmp.data(), H);
          for (int64_t j = 0; j < H; ++j) hb[j] = (1.0f - p[j]) * tmp[size_t(j)] + p[j] * hb[j];
        } else {
          clip_all(p, H, clip);
          f.apply(p, H);
          std::memcpy(hb, p, size_t(H) * sizeof(float));
        }
        std::memcpy(&y[size_t(((t * D + d) * B + b) * H)], hb, size_t(H) * sizeof(float));
      }
    }
  }
  // Outputs: Y [T, D, B, H] (layout 1: [B, T, D, H]), Y_h and Y_c [D, B, H] (layout 1: [B, D, H]).
  float* y_out = a.out(0).data<float>();
  if (batch_first) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          std::memcpy(y_out + ((b * T + t) * D + d) * H, &y[size_t(((t * D + d) * B + b) * H)], size_t(H) * sizeof(float));
  } else {
    std::copy(y.begin(), y.end(), y_out);
  }
  auto state_out = [&](int k, const std::vector<float>& st) {
    const std::vector<float> v = batch_first ? swap01(st.data(), D, B, H) : st;
    std::copy(v.begin(), v.end(), a.out(k).data<float>());
  };
  state_out(1, h_all);
  if (lstm) state_out(2, c_all);
}

void run_in_float(StaticKernelArgs& a) {
  switch (a.in(0).dtype()) {
    case DType::F32: return run_recurrent(a);
    case DType::F16:
    case DType::BF16: return run_in_f32(a, run_recurrent);
    default: unsupported_dtype(a.node, a.in(0).dtype());
  }
}

}  // namespace

void run_LSTM(StaticKernelArgs& a) { run_in_float(a); }
void run_GRU(StaticKernelArgs& a) { run_in_float(a); }
void run_RNN(StaticKernelArgs& a) { run_in_float(a); }

}  // namespace fusor
