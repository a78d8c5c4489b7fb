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
    case DType::I32: {
      int32_t* p = out.data<int32_t>();
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = int32_t(int64_t(start) + i * int64_t(delta));
      break;
    }
    case DType::I64: {
      int64_t* p = out.data<int64_t>();
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = int64_t(start) + i * int64_t(delta);
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
