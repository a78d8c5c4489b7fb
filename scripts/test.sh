#!/usr/bin/env bash
# Installs the dependencies, builds fusor and runs the whole test suite with CTest.
#   scripts/test.sh [BUILD_DIR] [extra ctest arguments...]
# The Python package is built against BUILD_DIR/venv (scripts/python-env.sh: pybind11,
# numpy, pytest and onnxruntime from PyPI), whose interpreter runs its pytest suite.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
"$root/scripts/install-deps.sh"
python=$("$root/scripts/python-env.sh" "$build/venv")
FUSOR_CMAKE_ARGS="${FUSOR_CMAKE_ARGS:-} -DPython_EXECUTABLE=$python" "$root/scripts/build.sh" "$build"
cd "$build"
ctest --output-on-failure -j "${JOBS:-$(nproc)}" "$@"
