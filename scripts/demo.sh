#!/usr/bin/env bash
# Installs the dependencies, builds fusor and runs the demos: the C++ quickstart, the
# dynamic-shape BERT demo twice (cold, then warm from the persistent kernel store), once
# more with symbolic kernels (cold), then the two reference graphs through the `fusor` tool.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
echo "== examples/quickstart"
"$build/examples/quickstart"
echo
# A fresh kernel store for the BERT demo (mktemp -d makes it private, as the store requires),
# so the first run is really cold and the second shows what the store saves.
store=$(mktemp -d "${TMPDIR:-/tmp}/fusor-demo-store.XXXXXX")
trap 'rm -rf "$store"' EXIT
echo "== examples/bert_dynamic, cold: an empty kernel store, so each new sequence length compiles"
"$build/examples/bert_dynamic" --cache-dir "$store"
echo
echo "== examples/bert_dynamic again, warm: a new process, the same store, nothing compiles"
"$build/examples/bert_dynamic" --cache-dir "$store"
echo
# Symbolic kernels: a second fresh store, so only the first request ever waits for LLVM.
symbolic_store=$(mktemp -d "${TMPDIR:-/tmp}/fusor-demo-symbolic.XXXXXX")
trap 'rm -rf "$store" "$symbolic_store"' EXIT
echo "== examples/bert_dynamic --symbolic, cold: one compile serves every length; exact kernels follow in the background"
"$build/examples/bert_dynamic" --cache-dir "$symbolic_store" --symbolic
echo
echo "== fusor run examples/graphs/bert_layer --dim B=1 --dim T=128"
"$build/tools/fusor/fusor" run "$root/examples/graphs/bert_layer" --dim B=1 --dim T=128 --repeat 5
echo
echo "== fusor run examples/graphs/resnet_bottleneck --dim N=1 --dim H=56 --dim W=56"
"$build/tools/fusor/fusor" run "$root/examples/graphs/resnet_bottleneck" --dim N=1 --dim H=56 --dim W=56 --repeat 5
