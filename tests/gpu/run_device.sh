#!/usr/bin/env bash
# Runs fusor's GPU checks on the GPU test machine (../shared/GPU.md) from the repository
# root: the cuda test suite, then the GPU benchmarks when they were built, each under a
# timeout so that results survive a hang, all within 8 minutes. Writes into OUT:
#   device.txt            nvidia-smi's view of the machine
#   cuda_tests.log        the doctest console output of fusor_cuda_tests (with durations)
#   gpu_bench.json        Google Benchmark JSON of fusor_gpu_bench (when present)
#   summary.json          every step's exit status and seconds, and the test counts
# usage: tests/gpu/run_device.sh OUT [BUILD_DIR]   (BUILD_DIR defaults to build-gpu, then build-cuda)
# build-gpu comes from scripts/build-gpu.sh (static LLVM, the other libraries in build-gpu/lib).
set -u
out=${1:?usage: run_device.sh OUT [BUILD_DIR]}
build=${2:-}
if [[ -z $build ]]; then
  for b in build-gpu build-cuda; do
    if [[ -x $b/tests/fusor_cuda_tests ]]; then build=$b; break; fi
  done
fi
mkdir -p "$out"
# scripts/build-gpu.sh bundles the libraries that machine lacks in BUILD_DIR/lib; the
# binaries find their own there (RUNPATH), this lets those libraries find theirs
# (OpenBLAS its Fortran runtime).
if [[ -n $build && -d $build/lib ]]; then
  export LD_LIBRARY_PATH=$(cd "$build/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
# The binaries read examples/graphs from the tree they run in, not the one they were built in.
export FUSOR_SOURCE_DIR=$PWD
# Engines that use the persistent store keep it in a scratch folder, never in the home.
export FUSOR_CACHE_DIR=$(mktemp -d)
budget=470  # seconds: 8 minutes less a margin for the copy back
start=$SECONDS
steps=()

# step NAME LIMIT CMD...: runs CMD with stdout+stderr to OUT/NAME.log under
# min(LIMIT, time left); records its status (124: timed out, 127: missing, -1: no time left).
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - (SECONDS - start)))
  local rc t0=$SECONDS
  if ((left < 15)); then
    rc=-1
  else
    ((limit > left)) && limit=$left
    timeout -k 5 "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
  fi
  steps+=("{\"step\": \"$name\", \"rc\": $rc, \"seconds\": $((SECONDS - t0))}")
  echo "$name: rc $rc in $((SECONDS - t0)) s"
}

step device 20 nvidia-smi
[[ -f $out/device.log ]] && mv "$out/device.log" "$out/device.txt"

if [[ -n $build && -x $build/tests/fusor_cuda_tests ]]; then
  # The host-emulation suite is for machines without a GPU: left out here.
  step cuda_tests 240 "$build/tests/fusor_cuda_tests" --duration=true --test-suite-exclude=cuda/emulation
else
  steps+=("{\"step\": \"cuda_tests\", \"rc\": 127, \"seconds\": 0}")
  echo "no fusor_cuda_tests under ${build:-build-gpu or build-cuda}" | tee "$out/cuda_tests.log"
fi

if [[ -n $build && -x $build/bench/fusor_gpu_bench ]]; then
  step gpu_bench 300 "$build/bench/fusor_gpu_bench" --benchmark_format=json --benchmark_out="$out/gpu_bench.json" \
    --benchmark_out_format=json
fi

# doctest's closing "[doctest] test cases: N | P passed | F failed | S skipped" line.
tests_json=null
if [[ -f $out/cuda_tests.log ]]; then
  line=$(grep -E '^\[doctest\] test cases:' "$out/cuda_tests.log" | tail -1)
  if [[ $line =~ ([0-9]+)\ \|\ +([0-9]+)\ passed\ \|\ +([0-9]+)\ failed\ \|\ +([0-9]+)\ skipped ]]; then
    # Tests that found no device pass after a "skipped (...)" message: count those too.
    skips=$(grep -c 'MESSAGE: skipped' "$out/cuda_tests.log")
    tests_json="{\"cases\": ${BASH_REMATCH[1]}, \"passed\": ${BASH_REMATCH[2]}, \"failed\": ${BASH_REMATCH[3]}, \"not_selected\": ${BASH_REMATCH[4]}, \"skipped_for_lack_of_device\": ${skips}}"
  fi
fi

{
  echo "{\"build\": \"${build}\", \"seconds\": $((SECONDS - start)), \"cuda_tests\": ${tests_json}, \"steps\": ["
  for i in "${!steps[@]}"; do
    ((i > 0)) && echo ","
    echo -n "  ${steps[$i]}"
  done
  echo
  echo "]}"
} >"$out/summary.json"
cat "$out/summary.json"
