#include "tests/support/spec_interpreter.h"

#include <cmath>
#include <limits>

#include "codegen/precision.h"
#include "ir/error.h"

namespace fusor::test {

namespace {

struct Ctx {
  std::vector<Tensor>* buffers;
  double acc = 0;
  double stat[2] = {0, 0};
};

int64_t element(const StridedAccess& a, const std::vector<int64_t>& idx) {
  int64_t e = a.offset;
  for (size_t d = 0; d < idx.size(); ++d) e += idx[d] * a.strides[d];
  return e;
}

double round_to(DType t, double v) {
  Tensor tmp = Tensor::empty(t, Shape{1});
  tmp.set(0, v);
  return tmp.at(0);
}

// Evaluates g at index idx; stores its stores. Returns the value of the last node.
double eval(const ExprGraph& g, const std::vector<int64_t>& idx, Ctx& c, bool do_stores = true) {
  std::vector<double> v(g.nodes.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ScalarExpr& e = g.nodes[i];
    auto a = [&](int k) { return v[size_t(e.args[k])]; };
    double r = 0;
    switch (e.op) {
      case ScalarOp::Load: {
        const StridedAccess& acc = g.accesses[size_t(e.load)];
        r = (*c.buffers)[size_t(acc.buffer)].at(element(acc, idx));
        break;
      }
      case ScalarOp::Const: r = e.value; break;
      case ScalarOp::Acc: r = c.acc; break;
      case ScalarOp::RowStat: r = c.stat[int(e.value)]; break;
      case ScalarOp::Add: r = a(0) + a(1); break;
      case ScalarOp::Sub: r = a(0) - a(1); break;
      case ScalarOp::Mul: r = a(0) * a(1); break;
      case ScalarOp::Div: r = a(0) / a(1); break;
      case ScalarOp::Pow: r = std::pow(a(0), a(1)); break;
      case ScalarOp::Max: r = std::max(a(0), a(1)); break;
      case ScalarOp::Min: r = std::min(a(0), a(1)); break;
      case ScalarOp::Neg: r = -a(0); break;
      case ScalarOp::Relu: r = a(0) > 0 ? a(0) : 0; break;
      case ScalarOp::Exp: r = std::exp(a(0)); break;
      case ScalarOp::Tanh: r = std::tanh(a(0)); break;
      case ScalarOp::Erf: r = std::erf(a(0)); break;
      case ScalarOp::Sigmoid: r = 1 / (1 + std::exp(-a(0))); break;
      case ScalarOp::Sqrt: r = std::sqrt(a(0)); break;
      case ScalarOp::GeluErf: r = 0.5 * a(0) * (1 + std::erf(a(0) / std::sqrt(2.0))); break;
      case ScalarOp::GeluTanh: {
        double x = a(0);
        r = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
        break;
      }
      case ScalarOp::Cast: r = round_to(e.dtype, a(0)); break;
      case ScalarOp::Where: r = a(0) != 0 ? a(1) : a(2); break;
      case ScalarOp::Abs: r = std::fabs(a(0)); break;
      case ScalarOp::Log: r = std::log(a(0)); break;
      case ScalarOp::Sin: r = std::sin(a(0)); break;
      case ScalarOp::Cos: r = std::cos(a(0)); break;
      case ScalarOp::Floor: r = std::floor(a(0)); break;
      case ScalarOp::Ceil: r = std::ceil(a(0)); break;
      case ScalarOp::Round: r = std::nearbyint(a(0)); break;
      case ScalarOp::Eq: r = a(0) == a(1); break;
      case ScalarOp::Lt: r = a(0) < a(1); break;
      case ScalarOp::Le: r = a(0) <= a(1); break;
      case ScalarOp::And: r = a(0) != 0 && a(1) != 0; break;
      case ScalarOp::Or: r = a(0) != 0 || a(1) != 0; break;
      case ScalarOp::Not: r = a(0) == 0; break;
    }
    v[i] = r;
  }
  if (do_stores)
    for (const auto& s : g.stores) {
      const StridedAccess& acc = g.accesses[size_t(s.access)];
      (*c.buffers)[size_t(acc.buffer)].set(element(acc, idx), v[size_t(s.node)]);
    }
  return v.empty() ? 0 : v.back();
}

// Calls f(idx) for every index of shape, row-major.
template <class F>
void for_each_index(const std::vector<int64_t>& shape, F&& f) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<int64_t> cat(std::vector<int64_t> a, std::initializer_list<int64_t> b) {
  a.insert(a.end(), b);
  return a;
}

}  // namespace

void interpret(const KernelSpec& spec, std::vector<Tensor>& buffers) {
  Ctx c{&buffers};
  switch (spec.kind) {
    case KernelKind::Pointwise:
      for_each_index(spec.pointwise.shape, [&](const std::vector<int64_t>& idx) { eval(spec.pointwise.body, idx, c); });
      break;
    case KernelKind::Contraction: {
      const ContractionSpec& k = spec.contraction;
      auto at = [&](const StridedAccess& a, const std::vector<int64_t>& idx) { return buffers[size_t(a.buffer)].at(element(a, idx)); };
      // bf16 operands (Note [bf16 contractions]): each rounded as the kernels round it.
      auto operand = [&](double v) { return k.bf16 ? double(bf16_to_f32(to_bf16(float(v)))) : v; };
      if (k.kind == ContractionSpec::Kind::Gemm) {
        std::vector<int64_t> space = cat(k.batch, {k.m, k.n});
        for_each_index(space, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> ia = idx, ib = idx;
          double s = 0;
          for (int64_t kk = 0; kk < k.k; ++kk) {
            ia[ia.size() - 1] = kk;
            ib[ib.size() - 2] = kk;
            s += operand(at(k.a, ia)) * operand(at(k.b, ib));
          }
          c.acc = s;
          eval(k.epilogue, idx, c);
        });
      } else {
        const Conv2dParams& p = k.conv;
        int64_t cg = p.c / p.group, mg = p.m / p.group;
        for_each_index({p.n, p.m, p.oh, p.ow}, [&](const std::vector<int64_t>& idx) {
          int64_t n = idx[0], m = idx[1], g = m / mg;
          double s = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < p.kh; ++i)
              for (int64_t j = 0; j < p.kw; ++j) {
                int64_t h = idx[2] * p.stride_h - p.pad_t + i * p.dil_h, w = idx[3] * p.stride_w - p.pad_l + j * p.dil_w;
                if (h < 0 || h >= p.h || w < 0 || w >= p.w) continue;
                s += operand(at(k.a, {n, g * cg + ci, h, w})) * operand(at(k.b, {m, ci, i, j}));
              }
          c.acc = s;
          eval(k.epilogue, idx, c);
        });
      }
      break;
    }
    case KernelKind::RowReduction: {
      const RowReductionSpec& r = spec.reduction;
      std::vector<int64_t> rows(r.shape.begin(), r.shape.end() - 1);
      int64_t cols = r.shape.back();
      for_each_index(rows, [&](const std::vector<int64_t>& ridx) {
        std::vector<int64_t> idx = cat(ridx, {0});
        std::vector<double> x(static_cast<size_t>(cols));
        for (int64_t j = 0; j < cols; ++j) {
          idx.back() = j;
          x[size_t(j)] = eval(r.prologue, idx, c, false);
        }
        double s = 0, m = -std::numeric_limits<double>::infinity();
        for (double v : x) s += v, m = std::max(m, v);
        double mean = s / double(cols), var = 0, sum_e = 0;
        for (double v : x) var += (v - mean) * (v - mean), sum_e += std::exp(v - m);
        var /= double(cols);
        using K = RowReductionSpec::Kind;
        if (r.kind == K::Softmax || r.kind == K::LayerNorm) {
          for (int64_t j = 0; j < cols; ++j) {
            idx.back() = j;
            c.acc = r.kind == K::Softmax ? std::exp(x[size_t(j)] - m) / sum_e
                                         : (x[size_t(j)] - mean) / std::sqrt(var + r.epsilon);
            eval(r.epilogue, idx, c);
          }
        } else {
          idx.back() = 0;
          c.acc = r.kind == K::Sum ? s : r.kind == K::Mean ? mean : m;
          eval(r.epilogue, idx, c);
        }
      });
      break;
    }
    case KernelKind::Attention: {
      const AttentionSpec& a = spec.attention;
      // bf16 (Note [bf16 contractions]): Q, K, V and the probabilities rounded as the kernel rounds them.
      auto r = [&](double v) { return a.bf16 ? double(bf16_to_f32(to_bf16(float(v)))) : v; };
      auto at = [&](const StridedAccess& s, const std::vector<int64_t>& idx) {
        return r(buffers[size_t(s.buffer)].at(element(s, idx)));
      };
      for_each_index(cat(a.batch, {a.tq}), [&](const std::vector<int64_t>& bi) {
        std::vector<int64_t> b(bi.begin(), bi.end() - 1);
        int64_t i = bi.back();
        std::vector<double> score(static_cast<size_t>(a.tk));
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < a.tk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < a.d; ++d) dot += at(a.q, cat(b, {i, d})) * at(a.k, cat(b, {d, j}));
          c.acc = dot;
          score[size_t(j)] = a.score.empty() ? dot : eval(a.score, cat(b, {i, j}), c, false);
          mx = std::max(mx, score[size_t(j)]);
        }
        double z = 0;
        for (double& s : score) z += (s = std::exp(s - mx));
        for (int64_t dv = 0; dv < a.dv; ++dv) {
          double o = 0;
          for (int64_t j = 0; j < a.tk; ++j) o += r(score[size_t(j)] / z) * at(a.v, cat(b, {j, dv}));
          c.acc = o;
          eval(a.epilogue, cat(b, {i, dv}), c);
        }
      });
      break;
    }
  }
}

}  // namespace fusor::test
