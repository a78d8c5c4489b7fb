#!/usr/bin/env bash
# Installs the dependencies, builds fusor and runs the demos: the C++ quickstart, then the
# two reference graphs through the `fusor` tool.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
echo "== examples/quickstart"
"$build/examples/quickstart"
echo
echo "== fusor run examples/graphs/bert_layer --dim B=1 --dim T=128"
"$build/tools/fusor/fusor" run "$root/examples/graphs/bert_layer" --dim B=1 --dim T=128 --repeat 5
echo
echo "== fusor run examples/graphs/resnet_bottleneck --dim N=1 --dim H=56 --dim W=56"
"$build/tools/fusor/fusor" run "$root/examples/graphs/resnet_bottleneck" --dim N=1 --dim H=56 --dim W=56 --repeat 5
