#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, FUSOR_FUZZ=ON) with clang into a build folder, then
# with --test, runs each target's bounded CTest run.
#   scripts/build-fuzz.sh [BUILD_DIR] [--test]      (default: build-fuzz)
# Environment: JOBS (default: number of cores); FUSOR_FUZZ_RUNS (executions per CTest run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
run_tests=0
for a in "$@"; do
  if [[ $a == --test ]]; then run_tests=1; else build=$a; fi
done
jobs=${JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DFUSOR_FUZZ=ON \
  -DFUSOR_FUZZ_RUNS="${FUSOR_FUZZ_RUNS:-200000}" \
  -DFUSOR_BUILD_TESTS=OFF -DFUSOR_BUILD_BENCH=OFF -DFUSOR_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$build" -j "$jobs" --target onnx_loader_fuzz text_parser_fuzz npy_reader_fuzz store_entry_fuzz make_onnx_seeds
if ((run_tests)); then
  (cd "$build" && ctest --output-on-failure -L fuzz -j "$jobs")
fi
