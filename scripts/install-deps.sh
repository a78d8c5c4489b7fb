#!/usr/bin/env bash
# Installs fusor's build and test dependencies from Debian's packages.
# Idempotent: packages already present are skipped by apt-get.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
PKGS=(build-essential cmake ninja-build pkg-config
      doctest-dev libbenchmark-dev libopenblas-dev libasmjit-dev
      llvm-16-dev zlib1g-dev libzstd-dev libtinfo-dev libxml2-dev libedit-dev libffi-dev
      libprotobuf-dev libonnx-dev libonnx-testdata
      clang libclang-rt-14-dev
      libhiredis-dev libssl-dev redis-server
      python3-dev python3-venv)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
