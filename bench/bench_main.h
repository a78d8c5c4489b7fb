// The main() of fusor's benchmark binaries: the ceilings the figures are read against in
// the report's context, the cases registered, then Google Benchmark. Layer: bench.
#pragma once

#include <benchmark/benchmark.h>

#include <string>
#include <utility>
#include <vector>

namespace fusor::bench {

/// Adds each (name, value) of `context`, calls register_cases(), runs what the command line
/// selects. Returns main's exit status.
inline int bench_main(int argc, char** argv, const std::vector<std::pair<std::string, std::string>>& context,
                      void (*register_cases)()) {
  for (const auto& [name, value] : context) benchmark::AddCustomContext(name, value);
  register_cases();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace fusor::bench
