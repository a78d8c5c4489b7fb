"""The Python benchmark and example run end to end (briefly) and print their tables."""

import os
import subprocess
import sys

import pytest

from conftest import SOURCE_DIR

pytest.importorskip("onnxruntime")


def run(script, *args):
    env = dict(os.environ)
    result = subprocess.run([sys.executable, str(SOURCE_DIR / script), *args], capture_output=True, text=True,
                            env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_session_overhead_benchmark():
    out = run("bench/python/session_overhead.py", "--calls", "300", "--rounds", "1")
    assert "| fusor (llvm) |" in out and "| onnxruntime (CPUExecutionProvider) |" in out
    assert "fusor / onnxruntime:" in out


def test_serve_bert_example():
    out = run("examples/python/serve_bert.py", "--lengths", "5,9", "--reps", "2", "--threads", "1")
    rows = [line for line in out.splitlines() if line.startswith("| 5 |") or line.startswith("| 9 |")]
    assert len(rows) == 2, out
    for row in rows:
        assert float(row.split("|")[-2]) < 1e-3, row   # fusor's output matches ONNX Runtime's
