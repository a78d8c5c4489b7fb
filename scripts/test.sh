#!/usr/bin/env bash
# Installs the dependencies, builds fusor and runs the whole test suite with CTest.
#   scripts/test.sh [BUILD_DIR] [extra ctest arguments...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
cd "$build"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
