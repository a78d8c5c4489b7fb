// Static kernels of the pointwise operators: numpy-broadcasting binary and variadic
// arithmetic, unary math and activations, Cast and Where.
//
// Note [Pointwise dtypes]
// f32 is computed natively; i32/i64 natively for Add, Sub, Mul, Div, Max, Min, Relu, Neg,
// Abs and Clip, with two's-complement wrap-around (no signed-overflow UB; INT_MIN / -1 = INT_MIN,
// -INT_MIN = |INT_MIN| = INT_MIN) and Div truncating toward zero, a zero divisor being an
// InvalidArgument error. f16/bf16 inputs of every floating op are computed in blocks of
// f32 (convert, compute, round back to nearest even); since f16/bf16 -> f32 is exact, the
// result is the f32 kernel's result rounded once. Cast and Where take every dtype.
//
// Note [Broadcast loops]
// Every broadcasting kernel runs over make_strided_loop's merged dims: the flat element
// range [0, rows*inner) is split over threads in kElementGrain pieces, each piece walks its
// rows with a RowCursor (offsets advanced by adding strides, no division per row), and the
// innermost run is a tight loop specialised on its (1,1), (1,0), (0,1) strides so that GCC
// vectorizes it.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "codegen/static/kernel_util.h"
#include "codegen/static/math.h"

namespace fusor {

namespace {

using namespace static_kernels;

// ---------------------------------------------------------------------------------------
// Element conversions

template <DType D>
float half_to_f32(uint16_t h) {
  if constexpr (D == DType::F16) return f16_to_f32(h);
  else return bf16_to_f32(h);
}

// Elements converted per block on the f16/bf16 paths (three float buffers on the stack).
constexpr int64_t kHalfBlock = 512;

template <class T>
using Unsigned = std::make_unsigned_t<T>;

// ---------------------------------------------------------------------------------------
// Binary operators. Each is a functor on float and (where ints are allowed) on int32/int64.

struct AddOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(a) + Unsigned<T>(b));
    else return a + b;
  }
};
struct SubOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(a) - Unsigned<T>(b));
    else return a - b;
  }
};
struct MulOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(a) * Unsigned<T>(b));
    else return a * b;
  }
};
// Integer divisors are checked for zero before the loop (run_Div).
struct DivOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return b == -1 ? T(Unsigned<T>(0) - Unsigned<T>(a)) : T(a / b);
    else return a / b;
  }
};
// Documented libm use: powf has no cheap vectorizable form that keeps its special cases;
// Pow(x, 2) (the common case) is dispatched to SquareOp instead.
struct PowOp {
  float operator()(float a, float b) const { return std::pow(a, b); }
};
struct SquareOp {
  float operator()(float a, float) const { return a * a; }
};
// Max/Min propagate NaN (numpy's maximum/minimum, ONNX's reference).
struct MaxOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return a < b ? b : a;
    else return a != a ? a : (a < b || b != b) ? b : a;
  }
};
struct MinOp {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return b < a ? b : a;
    else return a != a ? a : (b < a || b != b) ? b : a;
  }
};

// One inner run of a binary op: y[i] = op(a[i*sa], b[i*sb]).
template <class T, class Op>
void binary_run(T* y, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, Op op) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T bv = *b;
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i], bv);
  } else if (sa == 0 && sb == 1) {
    const T av = *a;
    for (int64_t i = 0; i < n; ++i) y[i] = op(av, b[i]);
  } else if (sa == 0 && sb == 0) {
    std::fill(y, y + n, op(*a, *b));
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = op(a[i * sa], b[i * sb]);
  }
}

// m elements of a strided f16/bf16 run into f32.
template <DType D>
void load_half(const uint16_t* src, int64_t stride, float* dst, int64_t m) {
  if (stride == 1) static_kernels::half_to_f32(D, src, dst, m);
  else if (stride == 0) std::fill(dst, dst + m, half_to_f32<D>(*src));
  else
    for (int64_t i = 0; i < m; ++i) dst[i] = half_to_f32<D>(src[i * stride]);
}

// The f16/bf16 form: gathers blocks into f32, runs the f32 op, rounds back.
template <DType D, class Op>
void binary_run_half(uint16_t* y, const uint16_t* a, int64_t sa, const uint16_t* b, int64_t sb, int64_t n,
                     Op op) {
  float fa[kHalfBlock], fb[kHalfBlock], fy[kHalfBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, n - i0);
    load_half<D>(a + i0 * sa, sa, fa, m);
    load_half<D>(b + i0 * sb, sb, fb, m);
    binary_run<float>(fy, fa, 1, fb, 1, m, op);
    static_kernels::f32_to_half(D, fy, y + i0, m);
  }
}

// Calls native(T{}) for f32 (and i32/i64 when kInts) or half(integral_constant<DType, D>)
// for f16/bf16; any other dtype is unsupported.
template <bool kInts, class Native, class Half>
void dispatch_arith(const Node& node, DType t, Native&& native, Half&& half) {
  switch (t) {
    case DType::F32: native(float{}); return;
    case DType::F16: half(std::integral_constant<DType, DType::F16>{}); return;
    case DType::BF16: half(std::integral_constant<DType, DType::BF16>{}); return;
    case DType::I32:
      if constexpr (kInts) {
        native(int32_t{});
        return;
      }
      break;
    case DType::I64:
      if constexpr (kInts) {
        native(int64_t{});
        return;
      }
      break;
    default: break;
  }
  unsupported_dtype(node, t);
}

// y = op(a, b) with a and b broadcast to y's shape. `a` may be y itself (in-place passes of
// the variadic ops), which is safe since each output element reads only its own position.
template <bool kInts, class Op>
void binary_kernel(StaticKernelArgs& args, const Tensor& a, const Tensor& b, Op op) {
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  const StridedLoop loop = make_strided_loop(y.shape(), {y.shape(), a.shape(), b.shape()});
  const int64_t sa = loop.strides[1].back(), sb = loop.strides[2].back();
  auto native = [&](auto tag) {
    using T = decltype(tag);
    T* py = static_cast<T*>(y.raw());
    const T* pa = static_cast<const T*>(a.raw());
    const T* pb = static_cast<const T*>(b.raw());
    for_each_run(loop, args.parallel, [&](const int64_t* off, int64_t col, int64_t n) {
      binary_run(py + off[0] + col, pa + off[1] + col * sa, sa, pb + off[2] + col * sb, sb, n, op);
    });
  };
  auto half = [&](auto dtag) {
    constexpr DType D = decltype(dtag)::value;
    uint16_t* py = static_cast<uint16_t*>(y.raw());
    const uint16_t* pa = static_cast<const uint16_t*>(a.raw());
    const uint16_t* pb = static_cast<const uint16_t*>(b.raw());
    for_each_run(loop, args.parallel, [&](const int64_t* off, int64_t col, int64_t n) {
      binary_run_half<D>(py + off[0] + col, pa + off[1] + col * sa, sa, pb + off[2] + col * sb, sb, n, op);
    });
  };
  dispatch_arith<kInts>(args.node, y.dtype(), native, half);
}

// Max/Min over 1..N inputs: out = op(in0, in1), then out = op(out, in_k) in place.
template <class Op>
void variadic_kernel(StaticKernelArgs& args, Op op) {
  Tensor& y = args.out();
  const int n = int(args.inputs.size());
  if (n == 1) {
    binary_kernel<true>(args, args.in(0), args.in(0), MaxOp{});  // max(x, x) == x, NaN included
    return;
  }
  binary_kernel<true>(args, args.in(0), args.in(1), op);
  for (int k = 2; k < n; ++k) binary_kernel<true>(args, y, args.in(k), op);
}

// Throws when an integer divisor has a zero element (checked up front: integer division
// does not vectorize anyway, and the error must not depend on where threads split).
template <class T>
void check_divisor(const Node& node, const Tensor& b) {
  const T* p = static_cast<const T*>(b.raw());
  const T* z = std::find(p, p + b.numel(), T(0));
  if (z != p + b.numel())
    node_fail(node, ErrorCode::InvalidArgument, "Div: integer division by zero (divisor element ", z - p, " of ",
              b.type_str(), " is 0)");
}

// ---------------------------------------------------------------------------------------
// Unary operators

template <class T, class F>
void unary_run(const T* __restrict x, T* __restrict y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <class T, class F>
void unary_run_inplace(T* y, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) y[i] = f(y[i]);
}

template <DType D, class F>
void unary_run_half(const uint16_t* x, uint16_t* y, int64_t n, F f) {
  float buf[kHalfBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kHalfBlock) {
    const int64_t m = std::min(kHalfBlock, n - i0);
    static_kernels::half_to_f32(D, x + i0, buf, m);
    unary_run_inplace(buf, m, f);
    static_kernels::f32_to_half(D, buf, y + i0, m);
  }
}

// y = f(x) elementwise over contiguous memory; f is a generic functor (float, and int32 /
// int64 when kInts).
template <bool kInts, class F>
void unary_kernel(StaticKernelArgs& args, F f) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  auto native = [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw());
    T* py = static_cast<T*>(y.raw());
    args.parallel.parallel_for(x.numel(), kElementGrain, [&](int64_t b, int64_t e) {
      if (px == py) unary_run_inplace(py + b, e - b, f);
      else unary_run(px + b, py + b, e - b, f);
    });
  };
  auto half = [&](auto dtag) {
    constexpr DType D = decltype(dtag)::value;
    const uint16_t* px = static_cast<const uint16_t*>(x.raw());
    uint16_t* py = static_cast<uint16_t*>(y.raw());
    args.parallel.parallel_for(x.numel(), kElementGrain,
                               [&](int64_t b, int64_t e) { unary_run_half<D>(px + b, py + b, e - b, f); });
  };
  dispatch_arith<kInts>(args.node, x.dtype(), native, half);
}

struct ReluOp {
  template <class T>
  T operator()(T v) const {
    return v < T(0) ? T(0) : v;  // NaN passes through
  }
};
struct NegOp {
  template <class T>
  T operator()(T v) const {
    if constexpr (std::is_integral_v<T>) return T(Unsigned<T>(0) - Unsigned<T>(v));
    else return -v;
  }
};

struct AbsOp {
  template <class T>
  T operator()(T v) const {
    if constexpr (std::is_integral_v<T>) return v < 0 ? T(Unsigned<T>(0) - Unsigned<T>(v)) : v;
    else return std::fabs(v);
  }
};

// min(max(v, lo), hi) with the NaN-propagating Max/Min; an absent bound is -inf / +inf (the
// lowest / highest integer), which changes nothing.
struct ClipOp {
  float lo, hi;
  int64_t lo_int, hi_int;
  template <class T>
  T operator()(T v) const {
    if constexpr (std::is_integral_v<T>) return MinOp{}(MaxOp{}(v, T(lo_int)), T(hi_int));
    else return MinOp{}(MaxOp{}(v, lo), hi);
  }
};

// The activations in the order of operations the JIT lowering spells them in (codegen/lower.cpp),
// with f32 constants, so fused and unfused runs compute the same floats.
struct LeakyReluOp {
  float alpha;
  float operator()(float v) const { return v < 0.0f ? v * alpha : v; }
};
struct HardSigmoidOp {
  float alpha, beta;
  float operator()(float v) const { return MaxOp{}(MinOp{}(v * alpha + beta, 1.0f), 0.0f); }
};
struct HardSwishOp {
  float operator()(float v) const { return v * MaxOp{}(MinOp{}(v * (1.0f / 6) + 0.5f, 1.0f), 0.0f); }
};

// The math.h functions as functors. always_inline: the GELU and erf bodies are big enough
// that GCC would otherwise keep a call in the loop, and the loop would stay scalar.
#define FUSOR_UNARY_FLOAT_OP(Name, expr)                                     \
  struct Name {                                                               \
    [[gnu::always_inline]] float operator()(float v) const { return expr; } \
  };
FUSOR_UNARY_FLOAT_OP(ExpOp, exp_f32(v))
FUSOR_UNARY_FLOAT_OP(TanhOp, tanh_f32(v))
FUSOR_UNARY_FLOAT_OP(SigmoidOp, sigmoid_f32(v))
FUSOR_UNARY_FLOAT_OP(ErfOp, erf_f32(v))
FUSOR_UNARY_FLOAT_OP(GeluErfOp, gelu_erf_f32(v))
FUSOR_UNARY_FLOAT_OP(GeluTanhOp, gelu_tanh_f32(v))
FUSOR_UNARY_FLOAT_OP(SqrtOp, std::sqrt(v))
FUSOR_UNARY_FLOAT_OP(ReciprocalOp, 1.0f / v)
// Documented libm use (as Pow): logf, which the JIT backends call too.
FUSOR_UNARY_FLOAT_OP(LogOp, std::log(v))
// sinf and cosf too (their range reduction is exact at any argument: RoPE's angles reach
// thousands of radians), which the JIT backends call as well.
FUSOR_UNARY_FLOAT_OP(SinOp, std::sin(v))
FUSOR_UNARY_FLOAT_OP(CosOp, std::cos(v))
// Exact: the rounding instructions (nearbyint rounds halves to even in the default mode).
FUSOR_UNARY_FLOAT_OP(FloorOp, std::floor(v))
FUSOR_UNARY_FLOAT_OP(CeilOp, std::ceil(v))
FUSOR_UNARY_FLOAT_OP(RoundOp, std::nearbyint(v))
#undef FUSOR_UNARY_FLOAT_OP

// ---------------------------------------------------------------------------------------
// Cast
//
// Note [Cast semantics]
// float -> int truncates toward zero; NaN -> 0; values beyond the target's range (and
// +-inf) saturate to its max/min. int64 -> int32 wraps modulo 2^32 (numpy, C++20).
// Anything -> bool is x != 0 (NaN -> true). -> f16/bf16 rounds to nearest even, overflow
// to +-inf. int -> bf16 rounds once: the integer is first rounded to 24 bits with
// round-to-odd, which makes the following round-to-nearest-even to 8 bits exact (int ->
// f16 needs no such care: integers up to 2^24 are exact in f32 and all larger ones
// overflow f16).

template <DType D>
struct StorageOf;
#define FUSOR_X(e, n, ty, b)   \
  template <>                  \
  struct StorageOf<DType::e> { \
    using type = ty;           \
  };
FUSOR_DTYPES(FUSOR_X)
#undef FUSOR_X
template <DType D>
using Storage = typename StorageOf<D>::type;

template <class F>
void visit_dtype(DType t, F&& f) {
  switch (t) {
#define FUSOR_X(e, n, ty, b) \
  case DType::e: f(std::integral_constant<DType, DType::e>{}); return;
    FUSOR_DTYPES(FUSOR_X)
#undef FUSOR_X
  }
}

template <class I>
I float_to_int(float f) {
  constexpr float kLimit = float(Unsigned<I>(1) << (sizeof(I) * 8 - 1));  // 2^31 or 2^63, exact
  return f != f ? I(0)
       : f >= kLimit ? std::numeric_limits<I>::max()
       : f <= -kLimit ? std::numeric_limits<I>::min()
       : I(f);
}

float int_to_f32_round_odd(int64_t v) {
  uint64_t u = v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v);
  int shift = int(std::bit_width(u)) - 24;
  float f;
  if (shift > 0) {
    uint64_t sticky = (u & ((uint64_t(1) << shift) - 1)) != 0 ? 1 : 0;
    f = float((u >> shift) | sticky) * std::bit_cast<float>(uint32_t(127 + shift) << 23);
  } else {
    f = float(u);
  }
  return v < 0 ? -f : f;
}

template <DType To>
Storage<To> from_float(float f) {
  if constexpr (To == DType::F32) return f;
  else if constexpr (To == DType::F16) return f32_to_f16(f);
  else if constexpr (To == DType::BF16) return f32_to_bf16(f);
  else if constexpr (To == DType::Bool) return f != 0.0f;
  else return float_to_int<Storage<To>>(f);
}

template <DType To>
Storage<To> from_int(int64_t v) {
  if constexpr (To == DType::F32) return float(v);
  else if constexpr (To == DType::F16) return f32_to_f16(float(v));
  else if constexpr (To == DType::BF16) return f32_to_bf16(int_to_f32_round_odd(v));
  else if constexpr (To == DType::Bool) return v != 0;
  else return Storage<To>(v);  // i64 -> i32 wraps (C++20 modular conversion)
}

template <DType From, DType To>
Storage<To> cast_one(Storage<From> v) {
  if constexpr (From == To) return v;
  else if constexpr (From == DType::F32) return from_float<To>(v);
  else if constexpr (From == DType::F16 || From == DType::BF16) return from_float<To>(half_to_f32<From>(v));
  else if constexpr (From == DType::Bool) return from_int<To>(v != 0 ? 1 : 0);
  else if constexpr (To == DType::F32 && From == DType::I32) return float(v);  // vectorizes
  else return from_int<To>(int64_t(v));
}

// ---------------------------------------------------------------------------------------
// Where: dtype-agnostic, moves elements as unsigned integers of the element's size.

template <size_t N>
struct Bits;
template <>
struct Bits<1> {
  using type [[gnu::may_alias]] = uint8_t;
};
template <>
struct Bits<2> {
  using type [[gnu::may_alias]] = uint16_t;
};
template <>
struct Bits<4> {
  using type [[gnu::may_alias]] = uint32_t;
};
template <>
struct Bits<8> {
  using type [[gnu::may_alias]] = uint64_t;
};

template <class T>
void where_kernel(StaticKernelArgs& args) {
  Tensor& out = args.out();
  if (out.numel() == 0) return;
  const Tensor &c = args.in(0), &x = args.in(1), &y = args.in(2);
  const StridedLoop loop = make_strided_loop(out.shape(), {out.shape(), c.shape(), x.shape(), y.shape()});
  const int64_t sc = loop.strides[1].back(), sx = loop.strides[2].back(), sy = loop.strides[3].back();
  T* po = static_cast<T*>(out.raw());
  const uint8_t* pc = static_cast<const uint8_t*>(c.raw());
  const T* px = static_cast<const T*>(x.raw());
  const T* py = static_cast<const T*>(y.raw());
  for_each_run(loop, args.parallel, [&](const int64_t* off, int64_t col, int64_t n) {
    T* o = po + off[0] + col;
    const uint8_t* ci = pc + off[1] + col * sc;
    const T* xi = px + off[2] + col * sx;
    const T* yi = py + off[3] + col * sy;
    if (sc == 1 && sx == 1 && sy == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = ci[i] ? xi[i] : yi[i];
    } else if (sc == 1 && sx == 0 && sy == 0) {
      const T xv = *xi, yv = *yi;
      for (int64_t i = 0; i < n; ++i) o[i] = ci[i] ? xv : yv;
    } else if (sc == 0) {
      if (*ci) binary_run(o, xi, sx, xi, sx, n, [](T a, T) { return a; });
      else binary_run(o, yi, sy, yi, sy, n, [](T a, T) { return a; });
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = ci[i * sc] ? xi[i * sx] : yi[i * sy];
    }
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Kernels

void run_Add(StaticKernelArgs& a) { binary_kernel<true>(a, a.in(0), a.in(1), AddOp{}); }
void run_Sub(StaticKernelArgs& a) { binary_kernel<true>(a, a.in(0), a.in(1), SubOp{}); }
void run_Mul(StaticKernelArgs& a) { binary_kernel<true>(a, a.in(0), a.in(1), MulOp{}); }

void run_Div(StaticKernelArgs& a) {
  if (a.in(1).dtype() == DType::I32) check_divisor<int32_t>(a.node, a.in(1));
  if (a.in(1).dtype() == DType::I64) check_divisor<int64_t>(a.node, a.in(1));
  binary_kernel<true>(a, a.in(0), a.in(1), DivOp{});
}

void run_Pow(StaticKernelArgs& a) {
  const Tensor& e = a.in(1);
  if (e.numel() == 1 && e.at(0) == 2.0) binary_kernel<false>(a, a.in(0), e, SquareOp{});
  else binary_kernel<false>(a, a.in(0), e, PowOp{});
}

void run_Max(StaticKernelArgs& a) { variadic_kernel(a, MaxOp{}); }
void run_Min(StaticKernelArgs& a) { variadic_kernel(a, MinOp{}); }

void run_Relu(StaticKernelArgs& a) { unary_kernel<true>(a, ReluOp{}); }
void run_Neg(StaticKernelArgs& a) { unary_kernel<true>(a, NegOp{}); }

void run_Gelu(StaticKernelArgs& a) {
  if (attr_string(a.node, "approximate") == "tanh") unary_kernel<false>(a, GeluTanhOp{});
  else unary_kernel<false>(a, GeluErfOp{});
}
void run_Erf(StaticKernelArgs& a) { unary_kernel<false>(a, ErfOp{}); }
void run_Tanh(StaticKernelArgs& a) { unary_kernel<false>(a, TanhOp{}); }
void run_Sigmoid(StaticKernelArgs& a) { unary_kernel<false>(a, SigmoidOp{}); }
void run_Exp(StaticKernelArgs& a) { unary_kernel<false>(a, ExpOp{}); }
void run_Sqrt(StaticKernelArgs& a) { unary_kernel<false>(a, SqrtOp{}); }

void run_Abs(StaticKernelArgs& a) { unary_kernel<true>(a, AbsOp{}); }
void run_Reciprocal(StaticKernelArgs& a) { unary_kernel<false>(a, ReciprocalOp{}); }
void run_Log(StaticKernelArgs& a) { unary_kernel<false>(a, LogOp{}); }
void run_Sin(StaticKernelArgs& a) { unary_kernel<false>(a, SinOp{}); }
void run_Cos(StaticKernelArgs& a) { unary_kernel<false>(a, CosOp{}); }
void run_Floor(StaticKernelArgs& a) { unary_kernel<false>(a, FloorOp{}); }
void run_Ceil(StaticKernelArgs& a) { unary_kernel<false>(a, CeilOp{}); }
void run_Round(StaticKernelArgs& a) { unary_kernel<false>(a, RoundOp{}); }

void run_Clip(StaticKernelArgs& a) {
  const float inf = std::numeric_limits<float>::infinity();
  ClipOp op{-inf, inf, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  const bool ints = is_integer(a.in(0).dtype());
  auto bound = [&](int i, const char* attr, float* f, int64_t* k) {
    if (a.has(i)) {
      const Tensor& t = a.in(i);
      if (t.dtype() == DType::I64) *k = t.data<int64_t>()[0];
      else if (t.dtype() == DType::I32) *k = t.data<int32_t>()[0];
      else *f = float(t.at(0));
    } else if (has_attr(a.node, attr)) {
      *f = float(attr_float(a.node, attr));
    }
  };
  bound(1, "min", &op.lo, &op.lo_int);
  bound(2, "max", &op.hi, &op.hi_int);
  if (ints && a.in(0).dtype() == DType::I32) {  // bounds past the i32 range clip nothing
    op.lo_int = std::clamp<int64_t>(op.lo_int, INT32_MIN, INT32_MAX);
    op.hi_int = std::clamp<int64_t>(op.hi_int, INT32_MIN, INT32_MAX);
  }
  unary_kernel<true>(a, op);
}

void run_LeakyRelu(StaticKernelArgs& a) { unary_kernel<false>(a, LeakyReluOp{float(attr_float(a.node, "alpha"))}); }
void run_HardSigmoid(StaticKernelArgs& a) {
  unary_kernel<false>(a, HardSigmoidOp{float(attr_float(a.node, "alpha")), float(attr_float(a.node, "beta"))});
}
void run_HardSwish(StaticKernelArgs& a) { unary_kernel<false>(a, HardSwishOp{}); }

void run_Cast(StaticKernelArgs& a) {
  const Tensor& x = a.in(0);
  Tensor& y = a.out();
  visit_dtype(x.dtype(), [&](auto from) {
    visit_dtype(y.dtype(), [&](auto to) {
      constexpr DType F = decltype(from)::value, T = decltype(to)::value;
      const Storage<F>* px = static_cast<const Storage<F>*>(x.raw());
      Storage<T>* py = static_cast<Storage<T>*>(y.raw());
      a.parallel.parallel_for(x.numel(), kElementGrain, [&](int64_t b, int64_t e) {
        constexpr bool kHalfT = T == DType::F16 || T == DType::BF16, kHalfF = F == DType::F16 || F == DType::BF16;
        if constexpr (F == DType::F32 && kHalfT) f32_to_half(T, px + b, py + b, e - b);  // vectorized
        else if constexpr (kHalfF && T == DType::F32) half_to_f32(F, px + b, py + b, e - b);
        else
          for (int64_t i = b; i < e; ++i) py[i] = cast_one<F, T>(px[i]);
      });
    });
  });
}

void run_Where(StaticKernelArgs& a) {
  switch (dtype_size(a.out().dtype())) {
    case 1: where_kernel<Bits<1>::type>(a); return;
    case 2: where_kernel<Bits<2>::type>(a); return;
    case 4: where_kernel<Bits<4>::type>(a); return;
    case 8: where_kernel<Bits<8>::type>(a); return;
  }
  unsupported_dtype(a.node, a.out().dtype());
}

}  // namespace fusor
