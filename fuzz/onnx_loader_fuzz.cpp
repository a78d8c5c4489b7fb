// libFuzzer target for the ONNX loader: any bytes as a model. Every failure must be a
// fusor::Error of a user-facing code; anything else (a crash, a sanitizer report, another
// exception, an Internal error: a broken invariant, a leak, a hang) is a bug. Built with
// FUSOR_FUZZ=ON (clang); fuzz/README.md says how to run it.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/error.h"
#include "onnx/load_onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fusor::OnnxOptions options;
  options.source = "fuzz.onnx";
  options.warn = [](const std::string&) {};
  try {
    fusor::Graph g = fusor::load_onnx_bytes(std::string_view(reinterpret_cast<const char*>(data), size), options);
    (void)g.fingerprint();
  } catch (const fusor::Error& e) {
    if (e.code() == fusor::ErrorCode::Internal) {
      std::fprintf(stderr, "onnx_loader_fuzz: internal error: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
