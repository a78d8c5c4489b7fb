#include "tests/support/llvm_util.h"

#include <algorithm>
#include <limits>

#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

namespace fusor::test {

KernelRuns run_kernel(const CompiledKernel& k, const KernelSpec& spec, const FusedGraph& f,
                      const std::vector<Tensor>& values, bool interpret) {
  KernelRuns r;
  for (const BufferSpec& b : spec.buffers) {
    ValueId v = f.graph.find_value(b.name);
    REQUIRE(v != kNoValue);
    if (b.output) {
      r.serial.push_back(Tensor::zeros(b.dtype, Shape{b.elements}));
      Tensor nan = Tensor::empty(b.dtype, Shape{b.elements});
      std::fill(nan.data<float>(), nan.data<float>() + b.elements, std::numeric_limits<float>::quiet_NaN());
      r.pooled.push_back(nan);
      r.interp.push_back(Tensor::zeros(b.dtype, Shape{b.elements}));
      r.outs.push_back(v);
    } else {
      Tensor in = values[size_t(v)].reshaped(Shape{b.elements});
      r.serial.push_back(in);
      r.pooled.push_back(in);
      r.interp.push_back(in);
    }
  }
  auto pointers = [](std::vector<Tensor>& ts) {
    std::vector<void*> p;
    for (Tensor& t : ts) p.push_back(t.raw());
    return p;
  };
  std::vector<void*> ps = pointers(r.serial), pp = pointers(r.pooled);
  std::vector<Tensor> packed;  // constants the kernel reads packed, as the engine passes them
  for (const CompiledKernel::Prepack& p : k.prepacks) {
    packed.push_back(Tensor::empty(DType::F32, Shape{p.floats}));
    k.pack(p, r.serial[size_t(p.buffer)].data<float>(), packed.back().data<float>());
    ps[size_t(p.buffer)] = pp[size_t(p.buffer)] = packed.back().raw();
  }
  k.run(ps.data(), 0, k.tasks);
  pool().parallel_for(k.tasks, 1, [&](int64_t b, int64_t e) { k.run(pp.data(), b, e); });
  if (interpret) test::interpret(spec, r.interp);
  return r;
}

}  // namespace fusor::test
