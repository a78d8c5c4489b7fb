#!/usr/bin/env bash
# Rewrites the bad-input table in README.md from the catalogue's rows
# (tests/tools/bad_input_catalogue_test.cpp), after building the tools' tests.
#   scripts/update-catalogue.sh [BUILD_DIR]       (default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
cmake --build "$build" --target fusor_tools_tests
FUSOR_UPDATE_README=1 "$build/tests/fusor_tools_tests" -tc="*bad-input table*"
