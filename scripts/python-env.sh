#!/usr/bin/env bash
# Makes the virtualenv the Python package is built against and tested in:
#   scripts/python-env.sh VENV_DIR
# with python/requirements-test.txt installed from PyPI (numpy, pytest, onnxruntime). It is
# reinstalled only when that file changes (a stamp per content). PYTHON picks the
# interpreter the virtualenv is made from (default python3). Prints the virtualenv's python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:?usage: python-env.sh VENV_DIR}
reqs=$root/python/requirements-test.txt
stamp=$venv/.installed-$(sha256sum "$reqs" | cut -c1-16)
if [[ ! -f $stamp ]]; then
  [[ -x $venv/bin/python ]] || "${PYTHON:-python3}" -m venv "$venv" >&2
  echo "python-env: installing $(grep -v '^#' "$reqs" | tr '\n' ' ')into $venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --requirement "$reqs" >&2
  touch "$stamp"
fi
echo "$(cd "$venv" && pwd)/bin/python"
