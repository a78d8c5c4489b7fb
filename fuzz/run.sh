#!/usr/bin/env bash
# Runs a libFuzzer target from the seed corpus, without writing into the repository: new
# inputs go to a temporary corpus, crashes to ARTIFACTS (default: the current folder).
#   fuzz/run.sh TARGET SEED_DIR [libFuzzer options...]
# e.g. (CTest, bounded):  fuzz/run.sh build-fuzz/fuzz/onnx_loader_fuzz fuzz/corpus/onnx_loader -runs=50000
#      (long):            fuzz/run.sh build-fuzz/fuzz/onnx_loader_fuzz fuzz/corpus/onnx_loader -max_total_time=3600
set -euo pipefail
target=$1
seeds=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/fusor-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
artifacts=${ARTIFACTS:-$PWD}
mkdir -p "$artifacts"
"$target" -artifact_prefix="$artifacts/" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 "$@" "$work" "$seeds"
