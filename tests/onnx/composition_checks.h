// What the tests of compositions (onnx/compositions.h) share: loading a built model, running
// it on every CPU backend this machine has, and the error a load gives.
#pragma once

#include <doctest/doctest.h>

#include <memory>
#include <string>
#include <utility>

#include "jit/engine.h"
#include "onnx/load_onnx.h"
#include "tests/onnx/model_builder.h"
#include "tests/support/test_util.h"

namespace fusor::test {

inline Graph load(const OnnxBuilder& b) {
  OnnxOptions o;
  o.source = "test.onnx";
  o.warn = [](const std::string&) {};
  return load_onnx_bytes(b.bytes(), o);
}

// Runs g on static, llvm and asmjit (those this machine has) and checks output "y".
inline void check_on_backends(const Graph& g, const TensorMap& in, const Tensor& want, double rtol = 2e-5,
                              double atol = 1e-5) {
  for (BackendKind backend : {BackendKind::Static, BackendKind::Llvm, BackendKind::Asmjit}) {
    CAPTURE(int(backend));
    std::unique_ptr<Engine> e;
    try {
      e = std::make_unique<Engine>(EngineOptions{.backend = backend, .num_threads = 2, .disk_cache = false});
    } catch (const Error& err) {
      if (err.code() != ErrorCode::DeviceUnavailable) throw;
      MESSAGE("skipped: " << err.what());
      continue;
    }
    FUSOR_CHECK_CLOSE(e->run(g, in).at("y"), want, rtol, atol);
  }
}

// The code and message of the error loading b's model gives (Internal, "no error" if none).
inline std::pair<ErrorCode, std::string> load_error(const OnnxBuilder& b) {
  try {
    load(b);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::Internal, "no error"};
}

}  // namespace fusor::test
