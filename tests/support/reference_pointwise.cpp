#include "tests/support/reference_pointwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ir/error.h"

namespace fusor::test::ref {

namespace {

bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

// Exact integer element i of an i32/i64/bool tensor.
int64_t iget(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::I32: return t.data<int32_t>()[i];
    case DType::I64: return t.data<int64_t>()[i];
    case DType::Bool: return t.data<uint8_t>()[i] != 0;
    default: return int64_t(t.at(i));
  }
}

// Stores v wrapped to the tensor's integer width (C++20 conversions are modular).
void iset(Tensor& t, int64_t i, int64_t v) {
  if (t.dtype() == DType::I32) t.data<int32_t>()[i] = int32_t(v);
  else t.data<int64_t>()[i] = v;
}

// The numpy broadcast of two shapes (the shapes are valid: tests build them so).
Shape broadcast(const Shape& a, const Shape& b) {
  const int r = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(size_t(r), 1);
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - a.rank()), ib = i - (r - b.rank());
    const int64_t da = ia >= 0 ? a.dims()[size_t(ia)] : 1, db = ib >= 0 ? b.dims()[size_t(ib)] : 1;
    FUSOR_ASSERT(da == db || da == 1 || db == 1, "reference: shapes do not broadcast");
    out[size_t(i)] = da == 1 ? db : da;
  }
  return Shape(out);
}

// Index of `in` (broadcast to out) read at the full output index idx.
int64_t source_index(const Shape& in, const std::vector<int64_t>& idx) {
  const int off = int(idx.size()) - in.rank();
  int64_t flat = 0;
  for (int i = 0; i < in.rank(); ++i) {
    const int64_t d = in.dims()[size_t(i)];
    flat = flat * d + (d == 1 ? 0 : idx[size_t(i + off)]);
  }
  return flat;
}

// The full index of flat element o of shape s.
std::vector<int64_t> unflatten(const Shape& s, int64_t o) {
  std::vector<int64_t> idx(size_t(s.rank()));
  for (int i = s.rank() - 1; i >= 0; --i) {
    idx[size_t(i)] = o % s.dims()[size_t(i)];
    o /= s.dims()[size_t(i)];
  }
  return idx;
}

int normalize(int64_t axis, int rank) { return int(axis < 0 ? axis + rank : axis); }

double binary_double(OpKind op, double a, double b) {
  switch (op) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Pow: return std::pow(a, b);
    case OpKind::Max: return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case OpKind::Min: return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default: FUSOR_ASSERT(false, "reference: not a binary op"); return 0;
  }
}

int64_t binary_int(OpKind op, int64_t a, int64_t b, bool narrow) {
  // Wrapping arithmetic through uint64 (exact modulo 2^64, then modulo 2^32 when stored).
  const uint64_t ua = uint64_t(a), ub = uint64_t(b);
  switch (op) {
    case OpKind::Add: return int64_t(ua + ub);
    case OpKind::Sub: return int64_t(ua - ub);
    case OpKind::Mul: return int64_t(ua * ub);
    case OpKind::Div: {
      const int64_t lo = narrow ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
      if (b == -1 && a == lo) return a;  // the one overflowing quotient wraps to itself
      return a / b;                      // C++ truncates toward zero
    }
    case OpKind::Max: return std::max(a, b);
    case OpKind::Min: return std::min(a, b);
    default: FUSOR_ASSERT(false, "reference: not an integer binary op"); return 0;
  }
}

// Rounds a double into an element of dtype t (floats: round_to_format; ints: C++ cast).
void store_double(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::F16: t.set(i, round_to_format(v, 10, -14, 65504.0)); break;
    case DType::BF16: t.set(i, round_to_format(v, 7, -126, 3.3895313892515355e38)); break;
    default: t.set(i, v);
  }
}

}  // namespace

double round_to_format(double v, int mant_bits, int emin, double max_finite) {
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  const double a = std::fabs(v);
  int e;
  std::frexp(a, &e);               // a = m * 2^e, m in [0.5, 1): leading bit has exponent e-1
  const int lead = std::max(e - 1, emin);
  const double quantum = std::ldexp(1.0, lead - mant_bits);
  const double r = std::nearbyint(a / quantum) * quantum;  // nearest, ties to even
  const double out = r > max_finite ? INFINITY : r;
  return v < 0 ? -out : out;
}

Tensor binary(OpKind op, const Tensor& a, const Tensor& b) {
  const Shape out_shape = broadcast(a.shape(), b.shape());
  Tensor out = Tensor::empty(a.dtype(), out_shape);
  for (int64_t o = 0; o < out.numel(); ++o) {
    const std::vector<int64_t> idx = unflatten(out_shape, o);
    const int64_t ia = source_index(a.shape(), idx), ib = source_index(b.shape(), idx);
    if (is_int(a.dtype())) iset(out, o, binary_int(op, iget(a, ia), iget(b, ib), a.dtype() == DType::I32));
    else store_double(out, o, binary_double(op, a.at(ia), b.at(ib)));
  }
  return out;
}

Tensor variadic(OpKind op, const std::vector<Tensor>& inputs) {
  Tensor acc = inputs[0].clone();
  for (size_t k = 1; k < inputs.size(); ++k) acc = binary(op, acc, inputs[k]);
  return acc;
}

Tensor unary(OpKind op, const Tensor& x, const char* approximate) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  const bool tanh_gelu = std::string(approximate) == "tanh";
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_int(x.dtype())) {
      const int64_t v = iget(x, i);
      if (op == OpKind::Relu) iset(out, i, std::max<int64_t>(v, 0));
      else if (op == OpKind::Neg) iset(out, i, int64_t(uint64_t(0) - uint64_t(v)));
      else if (op == OpKind::Abs) iset(out, i, v < 0 ? int64_t(uint64_t(0) - uint64_t(v)) : v);
      else FUSOR_ASSERT(false, "reference: integer ", op_name(op));
      continue;
    }
    const double v = x.at(i);
    double r = 0;
    switch (op) {
      case OpKind::Relu: r = std::isnan(v) ? v : std::max(v, 0.0); break;
      case OpKind::Neg: r = -v; break;
      case OpKind::Exp: r = std::exp(v); break;
      case OpKind::Sqrt: r = std::sqrt(v); break;
      case OpKind::Erf: r = std::erf(v); break;
      case OpKind::Tanh: r = std::tanh(v); break;
      case OpKind::Sigmoid: r = 1.0 / (1.0 + std::exp(-v)); break;
      case OpKind::Abs: r = std::fabs(v); break;
      case OpKind::Reciprocal: r = 1.0 / v; break;
      case OpKind::Log: r = std::log(v); break;
      case OpKind::Sin: r = std::sin(v); break;
      case OpKind::Cos: r = std::cos(v); break;
      case OpKind::Floor: r = std::floor(v); break;
      case OpKind::Ceil: r = std::ceil(v); break;
      case OpKind::Round: r = std::nearbyint(v); break;
      case OpKind::HardSwish: r = std::isnan(v) ? v : v * std::clamp(v / 6 + 0.5, 0.0, 1.0); break;
      case OpKind::Gelu:
        // Both written without the 1 + tanh / 1 + erf cancellation, which even in double
        // loses the negative tail: (1 + tanh(u))/2 = 1/(1 + e^-2u), (1 + erf(z)) = erfc(-z).
        if (tanh_gelu) r = v / (1.0 + std::exp(-2.0 * std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        else r = 0.5 * v * std::erfc(-v / std::sqrt(2.0));
        break;
      default: FUSOR_ASSERT(false, "reference: not a unary op");
    }
    store_double(out, i, r);
  }
  return out;
}

Tensor cast(const Tensor& x, DType to) {
  Tensor out = Tensor::empty(to, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool src_int = is_int(x.dtype()) || x.dtype() == DType::Bool;
    if (to == DType::Bool) {
      out.data<uint8_t>()[i] = src_int ? iget(x, i) != 0 : x.at(i) != 0.0;
    } else if (is_int(to)) {
      int64_t v;
      if (src_int) {
        v = iget(x, i);
      } else {
        const double d = std::trunc(x.at(i));
        const double lim = to == DType::I32 ? 2147483648.0 : 9223372036854775808.0;
        const int64_t hi = to == DType::I32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
        const int64_t lo = to == DType::I32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
        v = std::isnan(d) ? 0 : d >= lim ? hi : d < -lim ? lo : int64_t(d);
      }
      iset(out, i, v);  // i64 -> i32 wraps
    } else {
      store_double(out, i, src_int ? double(iget(x, i)) : x.at(i));
    }
  }
  return out;
}

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  const Shape out_shape = broadcast(broadcast(cond.shape(), x.shape()), y.shape());
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const size_t size = dtype_size(x.dtype());
  for (int64_t o = 0; o < out.numel(); ++o) {
    const std::vector<int64_t> idx = unflatten(out_shape, o);
    const bool c = cond.data<uint8_t>()[source_index(cond.shape(), idx)] != 0;
    const Tensor& src = c ? x : y;
    const char* from = static_cast<const char*>(src.raw()) + size_t(source_index(src.shape(), idx)) * size;
    std::memcpy(static_cast<char*>(out.raw()) + size_t(o) * size, from, size);
  }
  return out;
}

Tensor batchnorm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                 double eps) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = unflatten(x.shape(), i)[1];
    store_double(out, i, scale.at(c) * (x.at(i) - mean.at(c)) / std::sqrt(var.at(c) + eps) + bias.at(c));
  }
  return out;
}

Tensor layernorm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double eps) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  const int ax = normalize(axis, x.rank());
  const Shape norm(std::vector<int64_t>(x.shape().dims().begin() + ax, x.shape().dims().end()));
  const int64_t cols = norm.numel(), rows = cols == 0 ? 0 : x.numel() / cols;
  for (int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += x.at(r * cols + j);
    mean /= double(cols);
    for (int64_t j = 0; j < cols; ++j) var += (x.at(r * cols + j) - mean) * (x.at(r * cols + j) - mean);
    var /= double(cols);
    for (int64_t j = 0; j < cols; ++j) {
      const std::vector<int64_t> idx = unflatten(norm, j);
      const double g = scale.at(source_index(scale.shape(), idx));
      const double b = bias.defined() ? bias.at(source_index(bias.shape(), idx)) : 0.0;
      store_double(out, r * cols + j, (x.at(r * cols + j) - mean) / std::sqrt(var + eps) * g + b);
    }
  }
  return out;
}

Tensor softmax(const Tensor& x, int64_t axis) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  if (x.rank() == 0) {
    out.set(0, std::isnan(x.at(0)) || std::isinf(x.at(0)) ? NAN : 1.0);
    return out;
  }
  const int ax = normalize(axis, x.rank());
  const auto& d = x.shape().dims();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < ax; ++i) outer *= d[size_t(i)];
  for (int i = ax + 1; i < x.rank(); ++i) inner *= d[size_t(i)];
  const int64_t len = d[size_t(ax)];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return (o * len + k) * inner + j; };
      double mx = -INFINITY, sum = 0;
      bool nan = false;
      for (int64_t k = 0; k < len; ++k) {
        nan |= std::isnan(x.at(at(k)));
        mx = std::max(mx, x.at(at(k)));
      }
      for (int64_t k = 0; k < len; ++k) sum += std::exp(x.at(at(k)) - mx);
      for (int64_t k = 0; k < len; ++k) store_double(out, at(k), nan ? NAN : std::exp(x.at(at(k)) - mx) / sum);
    }
  }
  return out;
}

Tensor reduce(OpKind op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims,
              bool noop_with_empty_axes) {
  std::vector<bool> reduced(size_t(x.rank()), axes.empty() && !noop_with_empty_axes);
  for (int64_t a : axes) reduced[size_t(normalize(a, x.rank()))] = true;
  std::vector<int64_t> out_dims;
  for (int i = 0; i < x.rank(); ++i) {
    if (!reduced[size_t(i)]) out_dims.push_back(x.shape().dims()[size_t(i)]);
    else if (keepdims) out_dims.push_back(1);
  }
  const Shape out_shape(out_dims);
  const int64_t outs = out_shape.numel();
  const int64_t count = outs == 0 ? 0 : x.numel() / outs;
  const bool max = op == OpKind::ReduceMax || op == OpKind::ReduceMin, is_min = op == OpKind::ReduceMin;
  const bool prod = op == OpKind::ReduceProd;
  std::vector<double> fsum(size_t(outs), is_min ? INFINITY : max ? -INFINITY : prod ? 1.0 : 0.0);
  std::vector<int64_t> isum(size_t(outs), is_min ? INT64_MAX : max ? INT64_MIN : prod ? 1 : 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const std::vector<int64_t> idx = unflatten(x.shape(), i);
    int64_t o = 0;
    for (int k = 0; k < x.rank(); ++k)
      if (!reduced[size_t(k)]) o = o * x.shape().dims()[size_t(k)] + idx[size_t(k)];
    if (max) {
      const double f = fsum[size_t(o)], v = x.at(i);
      if (is_int(x.dtype()))
        isum[size_t(o)] = is_min ? std::min(isum[size_t(o)], iget(x, i)) : std::max(isum[size_t(o)], iget(x, i));
      else fsum[size_t(o)] = std::isnan(f) || std::isnan(v) ? NAN : is_min ? std::min(f, v) : std::max(f, v);
    } else if (prod) {
      if (is_int(x.dtype())) isum[size_t(o)] = int64_t(uint64_t(isum[size_t(o)]) * uint64_t(iget(x, i)));
      else fsum[size_t(o)] *= x.at(i);
    } else if (is_int(x.dtype())) {
      isum[size_t(o)] = int64_t(uint64_t(isum[size_t(o)]) + uint64_t(iget(x, i)));
    } else {
      fsum[size_t(o)] += x.at(i);
    }
  }
  Tensor out = Tensor::empty(x.dtype(), out_shape);
  const bool mean = op == OpKind::ReduceMean;
  for (int64_t o = 0; o < outs; ++o) {
    if (is_int(x.dtype())) iset(out, o, mean ? isum[size_t(o)] / count : isum[size_t(o)]);
    else store_double(out, o, mean ? fsum[size_t(o)] / double(count) : fsum[size_t(o)]);
  }
  return out;
}

Tensor leaky_relu(const Tensor& x, double alpha) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) store_double(out, i, x.at(i) < 0 ? alpha * x.at(i) : x.at(i));
  return out;
}

Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.at(i);
    store_double(out, i, std::isnan(v) ? v : std::clamp(alpha * v + beta, 0.0, 1.0));
  }
  return out;
}

Tensor clip(const Tensor& x, double lo, double hi) {
  Tensor out = Tensor::empty(x.dtype(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (is_int(x.dtype())) {
      int64_t v = iget(x, i);
      v = std::max<int64_t>(v, int64_t(std::max(lo, -9.2e18)));
      v = std::min<int64_t>(v, int64_t(std::min(hi, 9.2e18)));
      iset(out, i, v);
      continue;
    }
    const double v = x.at(i);
    store_double(out, i, std::isnan(v) ? v : std::min(std::max(v, lo), hi));
  }
  return out;
}

Tensor compare(OpKind op, const Tensor& a, const Tensor& b) {
  const Shape out_shape = broadcast(a.shape(), b.shape());
  Tensor out = Tensor::empty(DType::Bool, out_shape);
  for (int64_t o = 0; o < out.numel(); ++o) {
    const std::vector<int64_t> idx = unflatten(out_shape, o);
    const int64_t ia = source_index(a.shape(), idx), ib = source_index(b.shape(), idx);
    bool r = false;
    if (is_int(a.dtype()) || a.dtype() == DType::Bool) {
      const int64_t x = iget(a, ia), y = iget(b, ib);
      switch (op) {
        case OpKind::Equal: r = x == y; break;
        case OpKind::Less: r = x < y; break;
        case OpKind::LessOrEqual: r = x <= y; break;
        case OpKind::Greater: r = x > y; break;
        case OpKind::GreaterOrEqual: r = x >= y; break;
        case OpKind::And: r = x && y; break;
        case OpKind::Or: r = x || y; break;
        default: FUSOR_ASSERT(false, "reference: not a comparison");
      }
    } else {
      const double x = a.at(ia), y = b.at(ib);
      switch (op) {
        case OpKind::Equal: r = x == y; break;
        case OpKind::Less: r = x < y; break;
        case OpKind::LessOrEqual: r = x <= y; break;
        case OpKind::Greater: r = x > y; break;
        case OpKind::GreaterOrEqual: r = x >= y; break;
        default: FUSOR_ASSERT(false, "reference: not a float comparison");
      }
    }
    out.data<uint8_t>()[o] = r;
  }
  return out;
}

Tensor test(OpKind op, const Tensor& x, bool detect_negative, bool detect_positive) {
  Tensor out = Tensor::empty(DType::Bool, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    bool r;
    if (op == OpKind::Not) r = iget(x, i) == 0;
    else if (op == OpKind::IsNaN) r = std::isnan(x.at(i));
    else r = (detect_positive && x.at(i) == INFINITY) || (detect_negative && x.at(i) == -INFINITY);
    out.data<uint8_t>()[i] = r;
  }
  return out;
}

}  // namespace fusor::test::ref
