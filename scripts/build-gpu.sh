#!/usr/bin/env bash
# Builds what the GPU test machine runs (../shared/GPU.md) into build-gpu/ (git-ignored):
# a Release build of only fusor_cuda_tests and fusor_gpu_bench, stripped. That machine has
# no LLVM; the GPU binaries never JIT for the CPU, so by default LLVM is left out
# (FUSOR_WITH_LLVM=OFF: ~46 MiB with the bundled libraries, under the 64 MiB a device
# session carries). FUSOR_WITH_LLVM=ON links it statically instead (FUSOR_LLVM_STATIC:
# ~128 MiB, for copying by other means). The shared libraries the binaries need beyond
# glibc, the C++ runtime, libz and libtinfo (OpenBLAS and its Fortran runtime, Google
# Benchmark) are copied into build-gpu/lib, where the binaries look first (RUNPATH
# $ORIGIN/../lib). Then, on the GPU machine: tests/gpu/run_device.sh OUT.
#   scripts/build-gpu.sh [BUILD_DIR]        (default: build-gpu)
# Environment: JOBS (default: number of cores); FUSOR_WERROR=1; FUSOR_WITH_LLVM (default OFF).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-gpu}
jobs=${JOBS:-$(nproc)}
args=(-DCMAKE_BUILD_TYPE=Release -DFUSOR_WERROR="${FUSOR_WERROR:-OFF}" -DFUSOR_BUILD_EXAMPLES=OFF
      '-DCMAKE_BUILD_RPATH=$ORIGIN/../lib'
      # Static LLVM's --system-libs name libraries (z3, xml2, zstd) the code fusor links
      # never calls: only what is used becomes a dependency.
      -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed)
if [[ ${FUSOR_WITH_LLVM:-OFF} == OFF ]]; then
  args+=(-DFUSOR_WITH_LLVM=OFF -DFUSOR_LLVM_STATIC=OFF)
else
  args+=(-DFUSOR_WITH_LLVM=ON -DFUSOR_LLVM_STATIC=ON)
fi
cmake -S "$root" -B "$build" -G Ninja "${args[@]}" >/dev/null
cmake --build "$build" -j "$jobs" --target fusor_cuda_tests fusor_gpu_bench
bins=("$build/tests/fusor_cuda_tests" "$build/bench/fusor_gpu_bench")
strip "${bins[@]}"

# Bundle every shared library that is not part of the base system (ldd lists the
# dependencies of dependencies too).
base='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libstdc\+\+\.so|libgcc_s\.so|libz\.so|libtinfo\.so)'
rm -rf "$build/lib"
mkdir -p "$build/lib"
for b in "${bins[@]}"; do
  while read -r name path; do
    [[ $name =~ $base || -e $build/lib/$name ]] && continue
    cp -L "$path" "$build/lib/$name"
    strip --strip-unneeded "$build/lib/$name"
  done < <(ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
for b in "${bins[@]}"; do
  missing=$(ldd "$b" | grep -c "not found" || true)
  [[ $missing == 0 ]] || { echo "build-gpu: $b has unresolved libraries" >&2; ldd "$b" >&2; exit 1; }
done
echo "build-gpu: $(du -sh "${bins[@]}" "$build/lib" | tr '\n' ' ')"
total=$(du -cm "${bins[@]}" "$build/lib" | tail -1 | cut -f1)
if ((total > 64)); then
  # A device session carries at most 64 MiB of ignored paths to the GPU machine.
  echo "build-gpu: ${total} MiB in all, over the 64 MiB a device session carries; the default FUSOR_WITH_LLVM=OFF builds without LLVM (the GPU binaries do not use it)" >&2
fi
echo "build-gpu: bundled: $(ls "$build/lib" | tr '\n' ' ')"
