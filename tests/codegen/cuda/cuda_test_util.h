// Helpers of the cuda suites: the NVRTC compiler and the CUDA backend for tests (or nullptr
// after a visible MESSAGE saying why the test is skipped: never a silent pass), the specs
// of small graphs, and running a spec on the device against the spec interpreter.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/cuda/cuda_backend.h"
#include "codegen/lower.h"
#include "tests/support/pass_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

namespace fusor::test {

/// The file at `relative` under the source tree: $FUSOR_SOURCE_DIR when set (the GPU
/// machine runs these binaries from a copy of the tree at another path;
/// tests/gpu/run_device.sh sets it), else the tree this binary was built from.
inline std::string source_path(const std::string& relative) {
  const char* dir = std::getenv("FUSOR_SOURCE_DIR");
  return std::string(dir && *dir ? dir : FUSOR_SOURCE_DIR) + "/" + relative;
}

/// NVRTC for the whole test process, or nullptr after saying why the test is skipped.
inline CudaCompiler* nvrtc_or_skip() {
  static std::unique_ptr<CudaCompiler> compiler;
  static std::string why;
  if (!compiler && why.empty()) {
    try {
      compiler = make_cuda_compiler();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      why = e.what();
    }
  }
  if (!compiler) MESSAGE("skipped (NVRTC unavailable): " << why);
  return compiler.get();
}

/// The CUDA backend on device 0 for the whole test process, or nullptr after saying why
/// the test is skipped (no libcuda, no device).
inline CudaBackend* cuda_backend_or_skip() {
  static std::unique_ptr<CudaBackend> backend;
  static std::string why;
  if (!backend && why.empty()) {
    try {
      backend = make_cuda_backend();
      MESSAGE("cuda device: " << backend->description());
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      why = e.what();
    }
  }
  if (!backend) MESSAGE("skipped (no CUDA device): " << why);
  return backend.get();
}

/// The specs of every group of `text` (bound at `dims`) that lowers, of the given kind.
inline std::vector<KernelSpec> lower_text(const std::string& text, const DimBindings& dims, KernelKind kind) {
  FusedGraph f = fuse_text(text, dims);
  std::vector<KernelSpec> specs;
  for (const FusionGroup& g : f.groups) {
    std::string why;
    std::optional<KernelSpec> s = lower_group(f, g, &why);
    if (s && s->kind == kind) specs.push_back(std::move(*s));
  }
  return specs;
}

/// The one spec of `kind` in `text`.
inline KernelSpec lower_one(const std::string& text, const DimBindings& dims, KernelKind kind) {
  std::vector<KernelSpec> s = lower_text(text, dims, kind);
  INFO(group_summary(fuse_text(text, dims)));
  REQUIRE_MESSAGE(s.size() == 1, "expected one ", std::string(kernel_kind_name(kind)), " group, got ", s.size());
  return s[0];
}

/// Seeded inputs for every input buffer of `spec` (outputs empty): floats normal(0, 1),
/// bools 0/1, integers small.
inline std::vector<Tensor> random_buffers(const KernelSpec& spec, uint64_t seed) {
  std::vector<Tensor> bufs;
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    const BufferSpec& b = spec.buffers[i];
    Shape s{b.elements};
    if (b.output) {
      bufs.push_back(Tensor::zeros(b.dtype, s));
    } else if (is_floating(b.dtype)) {
      bufs.push_back(randn(s, seed + i, 1.0, b.dtype));
    } else {
      Tensor t = uniform(s, seed + i, 0, b.dtype == DType::Bool ? 2 : 5, DType::F32);
      Tensor c = Tensor::empty(b.dtype, s);
      for (int64_t e = 0; e < b.elements; ++e) c.set(e, std::floor(t.at(e)));
      bufs.push_back(c);
    }
  }
  return bufs;
}

/// Runs `spec` on the device over `inputs` (outputs start as all-ones bytes, NaN for
/// floats, so a missed element shows) and returns every buffer afterwards.
inline std::vector<Tensor> run_on_device(CudaBackend& be, const CudaKernel& k, const std::vector<Tensor>& inputs) {
  const KernelSpec& spec = k.spec;
  std::vector<DeviceBuffer> dev;
  std::vector<uint64_t> addr;
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    const Tensor& t = inputs[i];
    dev.push_back(be.alloc(t.nbytes()));
    if (spec.buffers[i].output)
      be.fill(dev.back(), 0xff);
    else
      be.copy_to_device(dev.back(), t.raw(), t.nbytes());
    addr.push_back(dev.back().address());
  }
  be.launch(k, addr);
  be.synchronize();
  std::vector<Tensor> out;
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    Tensor t = Tensor::empty(spec.buffers[i].dtype, Shape{spec.buffers[i].elements});
    be.copy_to_host(t.raw(), dev[i], t.nbytes());
    out.push_back(t);
  }
  return out;
}

/// Compiles and runs `spec` on the device and compares every output with the spec
/// interpreter: |got - want| <= rtol |want| + atol.
inline void check_on_device(CudaBackend& be, const KernelSpec& spec, double rtol, double atol, uint64_t seed = 1) {
  INFO(spec.str());
  std::shared_ptr<const CudaKernel> k = be.compile(spec);
  INFO("variant: " << k->binary.source.variant);
  std::vector<Tensor> in = random_buffers(spec, seed);
  std::vector<Tensor> got = run_on_device(be, *k, in);
  std::vector<Tensor> want = in;
  interpret(spec, want);
  for (size_t i = 0; i < spec.buffers.size(); ++i) {
    if (!spec.buffers[i].output) continue;
    INFO("buffer " << i << " (" << spec.buffers[i].name << ")");
    FUSOR_CHECK_CLOSE(got[i], want[i], rtol, atol);
  }
}

}  // namespace fusor::test
