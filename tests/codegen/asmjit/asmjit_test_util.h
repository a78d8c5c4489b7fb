// The asmjit backends for tests, shared by every asmjit suite: one per instruction set the
// host can run (AVX-512 when it has it, and AVX2 always), or none after saying why the test
// is skipped (a build without asmjit, a host without AVX2). Never passes silently. Kernels
// run and are checked through tests/support/kernel_util.h, as every backend's are.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "codegen/asmjit/asmjit_backend.h"
#include "ir/passes/pipeline.h"
#include "tests/support/kernel_util.h"
#include "tests/support/spec_interpreter.h"
#include "tests/support/test_util.h"

namespace fusor::test {

/// Every instruction set the host runs: [AVX-512 (when the host has it), AVX2]. Empty after
/// a MESSAGE saying why when the backend is unavailable.
inline std::vector<AsmjitBackend*> asmjit_backends_or_skip() {
  static std::vector<std::unique_ptr<AsmjitBackend>> backends;  // one runtime per ISA for the test process
  static std::string why;
  if (backends.empty() && why.empty()) {
    try {
      std::unique_ptr<AsmjitBackend> host = make_asmjit_backend();
      AsmjitBackend::Options avx2;
      avx2.isa = AsmjitBackend::Isa::Avx2;
      if (host->vector_lanes() == 16) backends.push_back(std::move(host));
      backends.push_back(make_asmjit_backend(avx2));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      why = e.what();
    }
  }
  if (backends.empty()) MESSAGE("skipped: " << why);
  std::vector<AsmjitBackend*> out;
  for (auto& b : backends) out.push_back(b.get());
  return out;
}

}  // namespace fusor::test
