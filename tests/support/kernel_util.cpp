#include "tests/support/kernel_util.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "codegen/lower.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

namespace fusor::test {

KernelRuns run_kernel(const CompiledKernel& k, const KernelSpec& spec, const FusedGraph& f,
                      const std::vector<Tensor>& values, bool interpret, int64_t extent) {
  REQUIRE_MESSAGE(k.spec.symbolic == (extent >= 0), "an extent is given exactly for symbolic kernels");
  KernelRuns r;
  for (const BufferSpec& b : spec.buffers) {
    ValueId v = f.graph.find_value(b.name);
    REQUIRE(v != kNoValue);
    if (b.output) {
      r.serial.push_back(Tensor::zeros(b.dtype, Shape{b.elements}));
      Tensor nan = Tensor::empty(b.dtype, Shape{b.elements});  // all-ones bytes: NaN, or bool 255
      std::memset(nan.raw(), 0xff, nan.nbytes());
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
  std::vector<Tensor> packed;  // constants the kernel reads packed, as the engine passes them
  std::vector<void*> ps = kernel_pointers(k, r.serial, packed), pp = kernel_pointers(k, r.pooled, packed);
  if (k.spec.symbolic) {  // Note [Symbolic kernels]: the extent follows the buffers
    ps.push_back(&extent);
    pp.push_back(&extent);
  }
  const int64_t tasks = k.tasks_for(extent);
  k.run(ps.data(), 0, tasks);
  pool().parallel_for(tasks, 1, [&](int64_t b, int64_t e) { k.run(pp.data(), b, e); });
  if (interpret) test::interpret(spec, r.interp);
  return r;
}

std::vector<void*> kernel_pointers(const CompiledKernel& k, std::vector<Tensor>& buffers, std::vector<Tensor>& packed) {
  std::vector<void*> p;
  for (Tensor& t : buffers) p.push_back(t.raw());
  k.bind_packed(p.data(), packed);
  return p;
}

std::vector<KernelSpec> lower_groups(const FusedGraph& f, GroupKind kind) {
  std::vector<KernelSpec> specs;
  for (const FusionGroup& grp : f.groups) {
    if (grp.kind != kind) continue;
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, grp, &why);
    REQUIRE_MESSAGE(spec, "not lowered: ", why);
    specs.push_back(std::move(*spec));
  }
  return specs;
}

Checked check_groups(JitBackend& be, const FusedGraph& f, const std::map<std::string, Tensor>& inputs, GroupKind kind,
                     const std::function<Tol(const KernelSpec&)>& tol,
                     const std::function<void(KernelSpec&)>& prepare) {
  std::vector<Tensor> values = run_all_static(f, inputs, pool());
  Checked c;
  for (const FusionGroup& grp : f.groups) {
    if (grp.kind != kind) continue;
    std::string why;
    std::optional<KernelSpec> spec = lower_group(f, grp, &why);
    REQUIRE_MESSAGE(spec, "not lowered: ", why);
    if (prepare) prepare(*spec);
    INFO(spec->str());
    REQUIRE_MESSAGE(be.supports(*spec, &why), why);
    std::shared_ptr<const CompiledKernel> k = be.compile(*spec);
    ++c.kernels;
    c.compile_us += k->compile_us;
    c.specs.push_back(*spec);
    c.compiled.push_back(k);
    const Tol t = tol(*spec);
    KernelRuns runs = run_kernel(*k, *spec, f, values, t.interpret);
    size_t o = 0;
    for (size_t i = 0; i < spec->buffers.size(); ++i) {
      if (!spec->buffers[i].output) continue;
      const Tensor& want = values[size_t(runs.outs[o++])];
      Tensor got = runs.serial[i].reshaped(want.shape());
      FUSOR_CHECK_CLOSE(runs.pooled[i].reshaped(want.shape()), got, 0, 0);
      if (t.against_static) FUSOR_CHECK_CLOSE(got, want, t.static_rel, t.static_abs);
      if (t.interpret) FUSOR_CHECK_CLOSE(got, runs.interp[i].reshaped(want.shape()), t.interp_rel, t.interp_abs);
    }
  }
  return c;
}

}  // namespace fusor::test
