#!/usr/bin/env bash
# Configures and builds fusor into a build folder.
#   scripts/build.sh [BUILD_DIR]       (default: build)
# Environment: FUSOR_SANITIZE=ON (or address) for an ASan/UBSan build, =thread for TSan;
# FUSOR_TARGETS: what to build (default: all); FUSOR_WERROR=1 (CI) turns warnings
# into errors; CMAKE_BUILD_TYPE (default Release); JOBS (default: number of cores);
# FUSOR_CMAKE_ARGS: more -D options; CC and CXX pick the compiler (at a folder's first
# configure, as CMake reads them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
jobs=${JOBS:-$(nproc)}
# shellcheck disable=SC2086  # FUSOR_CMAKE_ARGS is a list of options
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
  -DFUSOR_WERROR="${FUSOR_WERROR:-OFF}" \
  -DFUSOR_SANITIZE="${FUSOR_SANITIZE:-OFF}" ${FUSOR_CMAKE_ARGS:-} >/dev/null
# shellcheck disable=SC2086  # FUSOR_TARGETS is a list of target names
cmake --build "$build" -j "$jobs" ${FUSOR_TARGETS:+--target $FUSOR_TARGETS}
