// libFuzzer target for the text format: any bytes as a graph, then its shape inference at
// every named dim bound to 3. Every failure must be a fusor::Error of a user-facing code;
// anything else (a crash, a sanitizer report, another exception, an Internal error) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ir/error.h"
#include "ir/shape_inference.h"
#include "ir/text_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // (files a graph names are looked up in a folder that does not exist: Io errors)
    fusor::Graph g = fusor::parse_graph(std::string_view(reinterpret_cast<const char*>(data), size),
                                        "/nonexistent-fusor-fuzz", "fuzz.graph");
    std::vector<fusor::TensorType> types;
    for (fusor::ValueId v : g.inputs()) {
      const fusor::Value& value = g.value(v);
      std::vector<int64_t> dims;
      for (const fusor::Dim& d : value.dims) dims.push_back(d.is_symbolic() ? 3 : d.size);
      types.push_back(fusor::TensorType{value.dtype, fusor::Shape(dims)});
    }
    (void)fusor::infer_types(g, types);
  } catch (const fusor::Error& e) {
    if (e.code() == fusor::ErrorCode::Internal) {
      std::fprintf(stderr, "text_parser_fuzz: internal error: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
