// The llvm backend for tests: shared by every llvm suite, or nullptr after saying why the
// test is skipped (a build without LLVM). Never passes silently.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <vector>

#include "codegen/llvm/llvm_backend.h"
#include "tests/support/kernel_util.h"

namespace fusor::test {

inline LlvmBackend* llvm_backend_or_skip() {
  static std::unique_ptr<LlvmBackend> backend;  // one JIT for the test process
  static std::string why;
  if (!backend && why.empty()) {
    try {
      backend = make_llvm_backend();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::DeviceUnavailable) throw;
      why = e.what();
    }
  }
  if (!backend) MESSAGE("skipped: " << why);
  return backend.get();
}

}  // namespace fusor::test
