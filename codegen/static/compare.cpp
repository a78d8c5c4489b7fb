// Static kernels of the comparisons and logical operators: Equal, Less, LessOrEqual,
// Greater, GreaterOrEqual (numpy broadcasting, every numeric dtype and bool for Equal; f16
// and bf16 compared as their exact f32 values), And, Or, Not, IsNaN and IsInf. Results are
// bool bytes 0 / 1; comparisons with NaN are false (IEEE), Equal(NaN, NaN) too.
#include <cmath>
#include <limits>

#include "codegen/static/kernel_util.h"

namespace fusor {

namespace {

using namespace static_kernels;

struct Eq {
  template <class T>
  bool operator()(T a, T b) const { return a == b; }
};
struct Lt {
  template <class T>
  bool operator()(T a, T b) const { return a < b; }
};
struct Le {
  template <class T>
  bool operator()(T a, T b) const { return a <= b; }
};
struct Gt {
  template <class T>
  bool operator()(T a, T b) const { return a > b; }
};
struct Ge {
  template <class T>
  bool operator()(T a, T b) const { return a >= b; }
};

// Element i of a 16-bit float tensor as the f32 it stands for.
template <DType D>
float half_value(uint16_t h) {
  if constexpr (D == DType::F16) return f16_to_f32(h);
  else return bf16_to_f32(h);
}

// y[i] = op(load(a[...]), load(b[...])) over the broadcast of a and b, y bool.
template <class S, class Load, class Op>
void compare_typed(StaticKernelArgs& args, Load load, Op op) {
  const Tensor &a = args.in(0), &b = args.in(1);
  Tensor& y = args.out();
  if (y.numel() == 0) return;
  const StridedLoop loop = make_strided_loop(y.shape(), {y.shape(), a.shape(), b.shape()});
  const int64_t sa = loop.strides[1].back(), sb = loop.strides[2].back();
  uint8_t* py = y.data<uint8_t>();
  const S* pa = static_cast<const S*>(a.raw());
  const S* pb = static_cast<const S*>(b.raw());
  for_each_run(loop, args.parallel, [&](const int64_t* off, int64_t col, int64_t n) {
    uint8_t* o = py + off[0] + col;
    const S* x = pa + off[1] + col * sa;
    const S* z = pb + off[2] + col * sb;
    if (sa == 1 && sb == 1) {
      for (int64_t i = 0; i < n; ++i) o[i] = op(load(x[i]), load(z[i]));
    } else if (sa == 1 && sb == 0) {
      const auto zv = load(*z);
      for (int64_t i = 0; i < n; ++i) o[i] = op(load(x[i]), zv);
    } else {
      for (int64_t i = 0; i < n; ++i) o[i] = op(load(x[i * sa]), load(z[i * sb]));
    }
  });
}

template <class Op>
void compare_kernel(StaticKernelArgs& args, Op op) {
  auto same = [](auto v) { return v; };
  switch (args.in(0).dtype()) {
    case DType::F32: return compare_typed<float>(args, same, op);
    case DType::I32: return compare_typed<int32_t>(args, same, op);
    case DType::I64: return compare_typed<int64_t>(args, same, op);
    case DType::Bool: return compare_typed<uint8_t>(args, [](uint8_t v) { return v != 0; }, op);
    case DType::F16: return compare_typed<uint16_t>(args, half_value<DType::F16>, op);
    case DType::BF16: return compare_typed<uint16_t>(args, half_value<DType::BF16>, op);
  }
  unsupported_dtype(args.node, args.in(0).dtype());
}

// y = f(x) elementwise, y bool.
template <class S, class F>
void test_kernel(StaticKernelArgs& args, F f) {
  const Tensor& x = args.in(0);
  Tensor& y = args.out();
  const S* px = static_cast<const S*>(x.raw());
  uint8_t* py = y.data<uint8_t>();
  args.parallel.parallel_for(x.numel(), kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = f(px[i]);
  });
}

// f(float) over a floating tensor.
template <class F>
void float_test(StaticKernelArgs& args, F f) {
  switch (args.in(0).dtype()) {
    case DType::F32: return test_kernel<float>(args, f);
    case DType::F16: return test_kernel<uint16_t>(args, [&](uint16_t h) { return f(half_value<DType::F16>(h)); });
    case DType::BF16: return test_kernel<uint16_t>(args, [&](uint16_t h) { return f(half_value<DType::BF16>(h)); });
    default: unsupported_dtype(args.node, args.in(0).dtype());
  }
}

}  // namespace

void run_Equal(StaticKernelArgs& a) { compare_kernel(a, Eq{}); }
void run_Less(StaticKernelArgs& a) { compare_kernel(a, Lt{}); }
void run_LessOrEqual(StaticKernelArgs& a) { compare_kernel(a, Le{}); }
void run_Greater(StaticKernelArgs& a) { compare_kernel(a, Gt{}); }
void run_GreaterOrEqual(StaticKernelArgs& a) { compare_kernel(a, Ge{}); }

void run_And(StaticKernelArgs& a) {
  compare_typed<uint8_t>(a, [](uint8_t v) { return v != 0; }, [](bool x, bool y) { return x && y; });
}
void run_Or(StaticKernelArgs& a) {
  compare_typed<uint8_t>(a, [](uint8_t v) { return v != 0; }, [](bool x, bool y) { return x || y; });
}
void run_Not(StaticKernelArgs& a) { test_kernel<uint8_t>(a, [](uint8_t v) { return v == 0; }); }

void run_IsNaN(StaticKernelArgs& a) { float_test(a, [](float v) { return v != v; }); }
void run_IsInf(StaticKernelArgs& a) {
  const bool neg = attr_int(a.node, "detect_negative") != 0, pos = attr_int(a.node, "detect_positive") != 0;
  const float inf = std::numeric_limits<float>::infinity();
  float_test(a, [=](float v) { return (pos && v == inf) || (neg && v == -inf); });
}

}  // namespace fusor
