#!/usr/bin/env bash
# Smoke test of examples/bert_dynamic (the main demo): two runs of 3 requests on one fresh
# kernel store. The first compiles, the second (a new process) loads every kernel from the
# store and compiles nothing; then a symbolic run on a fresh store compiles only for its first
# request. Exit 77 (skipped) when the build has no llvm backend.
#   bert_dynamic_smoke.sh PATH/TO/bert_dynamic
set -uo pipefail
bin=$1
store=$(mktemp -d "${TMPDIR:-/tmp}/fusor-bert-dynamic-test.XXXXXX")
trap 'rm -rf "$store"' EXIT

fail() {
  echo "FAILED: $1"
  exit 1
}
expect() {  # expect OUTPUT TEXT: OUTPUT contains TEXT
  grep -qF -- "$2" <<<"$1" || fail "expected '$2' in the output above"
}

cold=$("$bin" --requests 3 --cache-dir "$store" 2>&1)
rc=$?
echo "$cold"
if [ $rc -eq 4 ]; then
  echo "skipped: this build has no llvm backend"
  exit 77
fi
[ $rc -eq 0 ] || fail "the cold run exited $rc"
expect "$cold" "requests 3, distinct lengths"
expect "$cold" "kernel store: $store"
grep -qE "compile events [1-9]" <<<"$cold" || fail "the cold run compiled nothing on an empty store"
grep -qE "max \|difference\| [0-9.e-]+$" <<<"$cold" || fail "no output comparison"

echo "---- warm run"
warm=$("$bin" --requests 3 --cache-dir "$store" 2>&1)
rc=$?
echo "$warm"
[ $rc -eq 0 ] || fail "the warm run exited $rc"
expect "$warm" "compile events 0 (0 kernels"
expect "$warm" "cache hit rate 100.0%"
grep -qE "store hits [1-9]" <<<"$warm" || fail "the warm run loaded nothing from the store"

echo "---- symbolic, on a fresh store"
symbolic_store=$(mktemp -d "${TMPDIR:-/tmp}/fusor-bert-dynamic-symbolic.XXXXXX")
trap 'rm -rf "$store" "$symbolic_store"' EXIT
sym=$("$bin" --requests 3 --cache-dir "$symbolic_store" --symbolic 2>&1)
rc=$?
echo "$sym"
[ $rc -eq 0 ] || fail "the symbolic run exited $rc"
expect "$sym" "compile events 1 ("  # the first request compiles the symbolic kernels; no other waits
expect "$sym" "symbolic: 3 requests of new lengths served on symbolic kernels"
grep -qE "max \|difference\| [0-9.e-]+$" <<<"$sym" || fail "no output comparison"

"$bin" --requests 0 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--requests 0 should be a usage error (exit 2)"
echo "ok"
