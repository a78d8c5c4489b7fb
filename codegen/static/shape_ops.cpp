// Static kernels of the shape computations (Shape, Range, ConstantOfShape); normally folded
// at trace time.
#include "codegen/static/kernel_util.h"
#include "ir/op_schema.h"
#include "ir/ops/params.h"

#include <algorithm>
#include <cstring>

namespace fusor {

void run_Shape(StaticKernelArgs& a) {
  std::vector<int64_t> dims = shape_op_dims(a.node, a.in(0).shape());
  std::copy(dims.begin(), dims.end(), a.out().data<int64_t>());
}

void run_Range(StaticKernelArgs& a) {
  Tensor& out = a.out();
  double start = a.in(0).at(0), delta = a.in(2).at(0);
  switch (out.dtype()) {
    case DType::F32: {
      float* p = out.data<float>();
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = float(start + double(i) * delta);
      break;
    }
    case DType::I32:
    case DType::I64: {
      // Exact: the inputs read as integers, start + i * delta modulo 2^64 (every element lies
      // between start and limit, so the wrapped sum is the true value).
      const uint64_t s0 = uint64_t(int_vector(a.node, a.in(0), "start")[0]);
      const uint64_t d = uint64_t(int_vector(a.node, a.in(2), "delta")[0]);
      for (int64_t i = 0; i < out.numel(); ++i) {
        const int64_t v = int64_t(s0 + uint64_t(i) * d);
        if (out.dtype() == DType::I64) out.data<int64_t>()[i] = v;
        else out.data<int32_t>()[i] = int32_t(v);
      }
      break;
    }
    default: static_kernels::unsupported_dtype(a.node, out.dtype());
  }
}

void run_ConstantOfShape(StaticKernelArgs& a) {
  Tensor& out = a.out();
  if (out.numel() == 0) return;
  out.set(0, attr_float(a.node, "value"));  // converted as Cast converts
  const size_t elem = dtype_size(out.dtype());
  char* p = static_cast<char*>(out.raw());
  for (int64_t i = 1; i < out.numel(); ++i) std::memcpy(p + i * int64_t(elem), p, elem);
}

}  // namespace fusor
