"""Every case of the committed ONNX models (tests/onnx/models/MANIFEST.txt) through the
Python API, against onnxruntime run on the same inputs in the same process: with Engine on
asmjit (each shape's exact kernels, compiled in microseconds), and with InferenceSession
(llvm with tiering) on one case per model. Tolerance as tests/onnx/models_test.cpp:
|got - want| <= 1e-4 |want| + 1e-5 max|want|."""

import functools

import numpy as np
import pytest

import fusor
from conftest import MODELS_DIR, committed_models, load_case

ort = pytest.importorskip("onnxruntime")

CASES = committed_models()


@functools.lru_cache(maxsize=None)
def ort_session(model):
    return ort.InferenceSession(str(MODELS_DIR / model / "model.onnx"), providers=["CPUExecutionProvider"])


@functools.lru_cache(maxsize=None)
def graph(model):
    return fusor.load_onnx(MODELS_DIR / model / "model.onnx")


@functools.lru_cache(maxsize=None)
def asmjit_engine():
    try:
        return fusor.Engine(backend="asmjit", threads=2)
    except fusor.DeviceUnavailable as e:
        pytest.skip(f"asmjit: {e}")


def check(got, want, label):
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale, err_msg=label)


@pytest.mark.parametrize("model,case", CASES, ids=[f"{m}-{c}" for m, c in CASES])
def test_engine_matches_onnx_runtime(model, case):
    feeds = load_case(model, case)
    outputs = [o.name for o in ort_session(model).get_outputs()]
    for name in outputs:
        feeds.pop(name, None)
    theirs = dict(zip(outputs, ort_session(model).run(None, feeds)))
    ours = asmjit_engine().run(graph(model), feeds)
    assert sorted(ours) == sorted(theirs)
    for name in outputs:
        check(ours[name], theirs[name], f"{model} {case} {name}")


FIRST_CASES = sorted({m: (m, c) for m, c in reversed(CASES)}.values())


@pytest.mark.parametrize("model,case", FIRST_CASES, ids=[m for m, _ in FIRST_CASES])
def test_inference_session_matches_onnx_runtime(model, case):
    path = MODELS_DIR / model / "model.onnx"
    sess = fusor.InferenceSession(path)
    ref = ort_session(model)
    feeds = load_case(model, case)
    for o in ref.get_outputs():
        feeds.pop(o.name, None)
    for ours, theirs in zip(sess.run(None, feeds), ref.run(None, feeds)):
        check(ours, theirs, f"{model} {case}")
    sess.engine.drain()  # then the LLVM plan, swapped in: the same results again
    for ours, theirs in zip(sess.run(None, feeds), ref.run(None, feeds)):
        check(ours, theirs, f"{model} {case} after drain")
