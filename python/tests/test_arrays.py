"""Inputs and outputs across the boundary: numpy dtypes, arrays read in place or copied
(strided, misaligned, big-endian, read-only, lists, the buffer protocol), outputs as
numpy arrays over the engine's tensors."""

import array

import numpy as np
import pytest

import fusor
from fusor import _fusor
from conftest import mlp_reference

# One graph per dtype: y = x + x (bool: Or(x, x)), with a named dim.
DTYPES = {
    "f32": np.float32,
    "f16": np.float16,
    "i64": np.int64,
    "i32": np.int32,
}


@pytest.mark.parametrize("name", sorted(DTYPES))
def test_each_dtype_round_trips(engine, name):
    g = fusor.parse_graph(f"graph t\ninput x: {name}[N, 3]\ny = Add(x, x)\noutput y\n")
    x = (np.arange(15).reshape(5, 3) - 7).astype(DTYPES[name])
    y = engine.run(g, {"x": x})["y"]
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y, x + x)


def test_bool_round_trips(engine):
    g = fusor.parse_graph("graph t\ninput a: bool[N]\ninput b: bool[N]\ny = And(a, b)\noutput y\n")
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    y = engine.run(g, {"a": a, "b": b})["y"]
    assert y.dtype == np.bool_
    np.testing.assert_array_equal(y, a & b)


def test_bf16_is_carried_as_uint16_bit_patterns():
    g = fusor.parse_graph("graph t\ninput x: bf16[4]\ny = Cast(x) {to=\"f32\"}\noutput y\n")
    values = np.array([1.0, -2.5, 0.0, 3.0e5], np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)   # exact in bf16 except 3e5
    y = fusor.Engine(backend="static").run(g, {"x": bits})["y"]
    np.testing.assert_allclose(y, values, rtol=1e-2)


def test_contiguous_aligned_inputs_are_borrowed_and_others_copied():
    base = np.arange(64, dtype=np.float32).reshape(8, 8)
    assert _fusor._borrows(base)
    assert _fusor._borrows(base[2:5])                       # a contiguous row range
    assert not _fusor._borrows(base[:, 1:3])                # strided
    assert not _fusor._borrows(base.T)                      # Fortran order
    assert not _fusor._borrows(base.astype(">f4"))          # big-endian
    raw = np.zeros(4 * 10 + 1, np.uint8)
    misaligned = raw[1:].view(np.float32)
    assert misaligned.ctypes.data % 4 != 0
    assert not _fusor._borrows(misaligned)
    ro = np.ones(5, np.float32)
    ro.flags.writeable = False
    assert _fusor._borrows(ro)                              # only read: borrowed as well


def test_strided_misaligned_and_foreign_inputs_compute_the_same(mlp):
    engine = fusor.Engine(backend="llvm")
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 24), dtype=np.float32)
    want = mlp_reference(x)
    wide = np.zeros((6, 48), np.float32)
    wide[:, ::2] = x
    raw = np.zeros(x.nbytes + 3, np.uint8)
    misaligned = raw[3:].view(np.float32).reshape(6, 24)
    misaligned[...] = x
    inputs = {
        "strided": wide[:, ::2],
        "fortran": np.asfortranarray(x),
        "misaligned": misaligned,
        "big-endian": x.astype(">f4"),
        "list": x.tolist() and np.asarray(x.tolist(), np.float32),
        "memoryview": memoryview(x),
        "array.array": np.frombuffer(array.array("f", x.ravel()), np.float32).reshape(6, 24),
    }
    for label, given in inputs.items():
        got = engine.run(mlp, {"x": given})["y"]
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=label)


def test_inputs_are_not_modified(mlp):
    x = np.linspace(-1, 1, 48, dtype=np.float32).reshape(2, 24)
    keep = x.copy()
    fusor.Engine(backend="asmjit").run(mlp, {"x": x})
    np.testing.assert_array_equal(x, keep)


def test_a_dtype_fusor_lacks_is_a_dtype_mismatch(mlp):
    engine = fusor.Engine(backend="static")
    with pytest.raises(fusor.DTypeMismatch, match="input 'x': numpy dtype float64"):
        engine.run(mlp, {"x": np.ones((1, 24))})
    with pytest.raises(fusor.DTypeMismatch, match="complex64"):
        engine.run(mlp, {"x": np.ones((1, 24), np.complex64)})
    with pytest.raises(fusor.DTypeMismatch, match="'x'"):       # a dtype fusor has, not the declared one
        engine.run(mlp, {"x": np.ones((1, 24), np.int32)})


def test_zero_size_and_scalar_outputs():
    g = fusor.parse_graph("graph t\ninput x: f32[N, 3]\nconst ax: i64[2] = [0, 1]\ny = Relu(x)\ns = ReduceSum(x, ax) {keepdims=0}\noutput y, s\n")
    out = fusor.Engine(backend="static").run(g, {"x": np.zeros((0, 3), np.float32)})
    assert out["y"].shape == (0, 3) and out["y"].dtype == np.float32
    assert out["s"].shape == () and float(out["s"]) == 0.0


def test_outputs_are_independent_of_each_other_and_of_later_runs(mlp):
    engine = fusor.Engine(backend="llvm")
    ys = [engine.run(mlp, {"x": np.full((2, 24), float(i), np.float32)})["y"] for i in range(4)]
    for i, y in enumerate(ys):
        np.testing.assert_allclose(y, mlp_reference(np.full((2, 24), float(i), np.float32)), rtol=1e-5, atol=1e-5)
