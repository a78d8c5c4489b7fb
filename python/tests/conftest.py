"""Shared fixtures of the Python package's tests: small graphs in fusor's text format, the
committed ONNX models (tests/onnx/models) and an engine per CPU backend."""

import os
import pathlib

import numpy as np
import pytest

import fusor

SOURCE_DIR = pathlib.Path(os.environ.get("FUSOR_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
MODELS_DIR = SOURCE_DIR / "tests" / "onnx" / "models"

# y = relu(x @ w + b) with a named batch dim: a contraction with its epilogue.
MLP = """
graph mlp
input x: f32[B, 24]
const w: f32[24, 16] = randn(seed=1, std=0.2)
const b: f32[16] = randn(seed=2, std=0.1)
h = MatMul(x, w)
hb = Add(h, b)
y = Relu(hb)
output y
"""

# Two outputs of other dtypes: an i64 cast and a bool compare.
MIXED = """
graph mixed
input a: f32[N]
input k: i64[N]
const zero: f32[1] = [0.0]
s = Mul(a, a)
pos = Greater(a, zero)
kk = Add(k, k)
output s, pos, kk
"""


def mlp_reference(x):
    g = fusor.parse_graph(MLP)
    ref = fusor.Engine(backend="static", threads=1, fuse=False, disk_cache=False)
    return ref.run(g, {"x": x})["y"]


@pytest.fixture(scope="session")
def mlp():
    return fusor.parse_graph(MLP)


CPU_BACKENDS = ["static", "asmjit", "llvm"]


@pytest.fixture(scope="session", params=CPU_BACKENDS)
def engine(request):
    try:
        return fusor.Engine(backend=request.param, threads=2)
    except fusor.DeviceUnavailable as e:
        pytest.skip(f"backend {request.param}: {e}")


def committed_models():
    """(model dir, case dir) of every case in tests/onnx/models/MANIFEST.txt."""
    out = []
    manifest = MODELS_DIR / "MANIFEST.txt"
    for line in manifest.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        model, case = line.split()[:2]
        out.append((model, case))
    return out


def load_case(model, case):
    folder = MODELS_DIR / model / "cases" / case
    return {p.stem: np.load(p) for p in sorted(folder.glob("*.npy"))}
