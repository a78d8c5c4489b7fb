#!/usr/bin/env bash
# Where a new replica's kernels come from, measured (bench/store_bench.h): compiled, the
# local disk store, or the remote Redis store. Starts a redis-server of its own on loopback
# (a free port, a password, no persistence), makes a private HMAC key, runs fusor_bench's
# store/ benchmarks against it, and stops the server.
#   scripts/bench-store.sh [BUILD_DIR] [extra fusor_bench flags, e.g. --benchmark_repetitions=5]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
bench="$build/bench/fusor_bench"
[ -x "$bench" ] || { echo "bench-store: $bench is missing: build it first (scripts/build.sh $build)" >&2; exit 2; }
command -v redis-server >/dev/null || { echo "bench-store: redis-server is missing (scripts/install-deps.sh)" >&2; exit 2; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
head -c 32 /dev/urandom > "$work/key" && chmod 600 "$work/key"
redis-server --port "$port" --bind 127.0.0.1 --requirepass "$password" --save "" --appendonly no \
  --dir "$work" --logfile "$work/redis.log" --daemonize no &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do redis-cli -p "$port" -a "$password" --no-auth-warning ping >/dev/null 2>&1 && break; sleep 0.05; done
FUSOR_BENCH_REDIS="redis://127.0.0.1:$port/0" FUSOR_REDIS_PASSWORD="$password" FUSOR_STORE_KEY_FILE="$work/key" \
  "$bench" --benchmark_filter='^store/' "$@"
