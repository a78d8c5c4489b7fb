#!/usr/bin/env bash
# fusor side by side with ONNX Runtime and OpenVINO (and torch.compile) on the cases of
# fusor_bench, interleaved case by case in rounds (bench/peers/README.md).
#   scripts/bench-vs-peers.sh [--cases REGEX] [--threads 1,2] [--reps N] [--with-torch] [--quick]
#                             [any other option of bench/peers/vs_peers.py: --help lists them]
# Sets up a virtualenv with the peers from PyPI (bench/peers/requirements*.txt), builds fusor
# when build/bench/fusor_bench is missing, and writes build-peers/vs-peers.md (the table),
# vs-peers.png (the ratios) and vs-peers.json (every repetition).
# Environment: PEERS_DIR (default build-peers), PYTHON (default python3) for the virtualenv,
# FUSOR_CPU_LOCK (default /tmp/fusor-cpu.lock): setup holds it shared, timings exclusive.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${PEERS_DIR:-$root/build-peers}
venv=$out/venv
lock=${FUSOR_CPU_LOCK:-/tmp/fusor-cpu.lock}
peers=$root/bench/peers

with_torch=0
for arg in "$@"; do
  case $arg in
    --with-torch) with_torch=1 ;;
    -h | --help)
      sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
      if [[ -x $venv/bin/python ]]; then echo; exec "$venv/bin/python" "$peers/vs_peers.py" --help; fi
      exit 0 ;;
  esac
done

shared() {  # a setup step: under the CPU lock shared, where flock exists
  if command -v flock >/dev/null; then flock -s "$lock" "$@"; else "$@"; fi
}

# The virtualenv, reinstalled only when a requirements file changed (a stamp per content).
reqs=("$peers/requirements.txt")
[[ $with_torch == 1 ]] && reqs+=("$peers/requirements-torch.txt")
stamp=$venv/.installed-$(cat "${reqs[@]}" | sha256sum | cut -c1-16)
if [[ ! -f $stamp ]]; then
  mkdir -p "$out"
  [[ -x $venv/bin/python ]] || "${PYTHON:-python3}" -m venv "$venv"
  echo "bench-vs-peers: installing the peers into $venv" >&2
  shared "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${reqs[@]/#/--requirement=}"
  touch "$stamp"
fi

if [[ ! -x $root/build/bench/fusor_bench ]]; then
  echo "bench-vs-peers: building fusor (build/bench/fusor_bench is missing)" >&2
  shared "$root/scripts/build.sh"
fi

exec "$venv/bin/python" "$peers/vs_peers.py" --fusor-bench "$root/build/bench/fusor_bench" --out-dir "$out" --lock "$lock" "$@"
