"""Every fusor::Error code as its Python class under fusor.Error, raised with the C++
message; bad keyword arguments and argument types as TypeError."""

import pathlib

import numpy as np
import pytest

import fusor
from conftest import MLP, SOURCE_DIR

CODES = ["InvalidGraph", "ShapeMismatch", "DTypeMismatch", "InvalidArgument", "ParseError", "Unsupported",
         "CompileFailed", "CacheCorrupt", "DeviceUnavailable", "OutOfMemory", "Io", "NumericsMismatch", "Internal"]


def test_one_class_per_code_under_fusor_error():
    for code in CODES:
        cls = getattr(fusor, code)
        assert issubclass(cls, fusor.Error) and cls.__name__ == code and cls.__module__ == "fusor"
    assert issubclass(fusor.Error, RuntimeError)
    for code in ("InvalidArgument", "ShapeMismatch", "DTypeMismatch"):
        assert issubclass(getattr(fusor, code), ValueError)
    assert not issubclass(fusor.Io, ValueError)


def raised(cls, fn, match):
    with pytest.raises(cls, match=match) as info:
        fn()
    e = info.value
    assert type(e) is cls and e.code == cls.__name__ and str(e) == e.message
    return e


def test_parse_error():
    raised(fusor.ParseError, lambda: fusor.parse_graph("graph t\ninput x: f32[2]\ny = Relu(x\n"), "<text>")


def test_invalid_graph():
    text = "graph t\ninput x: f32[2]\ny = Relu(x, x)\noutput y\n"
    raised(fusor.InvalidGraph, lambda: fusor.Engine().run(fusor.parse_graph(text), {"x": np.ones(2, np.float32)}),
           "Relu")


def test_shape_and_dtype_mismatch_and_invalid_argument():
    g = fusor.parse_graph(MLP)
    engine = fusor.Engine(backend="static")
    raised(fusor.ShapeMismatch, lambda: engine.run(g, {"x": np.ones((2, 23), np.float32)}), "'x'.*24")
    raised(fusor.DTypeMismatch, lambda: engine.run(g, {"x": np.ones((2, 24), np.int64)}), "'x'")
    raised(fusor.InvalidArgument, lambda: engine.run(g, {}), "'x'")
    raised(fusor.InvalidArgument, lambda: engine.run(g, {"x": np.ones((1, 24), np.float32), "z": np.ones(1, np.float32)}), "z")
    raised(fusor.InvalidArgument, lambda: fusor.Engine(backend="tpu"), "tpu")
    raised(fusor.InvalidArgument, lambda: fusor.Engine(verify="sometimes"), "sometimes")
    raised(fusor.InvalidArgument, lambda: fusor.Engine(precision="fp8"), "fp8")


def test_io_and_unsupported(tmp_path):
    raised(fusor.Io, lambda: fusor.load_graph(tmp_path / "missing.fusor"), "missing.fusor")
    raised(fusor.Io, lambda: fusor.load_onnx(tmp_path / "missing.onnx"), "missing.onnx")
    unsupported = SOURCE_DIR / "fuzz" / "corpus" / "onnx_loader" / "unsupported.onnx"
    raised(fusor.Unsupported, lambda: fusor.load_onnx(unsupported), "unsupported.onnx")
    raised(fusor.ParseError, lambda: fusor.load_onnx(b"\x08\x07garbage"), "onnx")


def test_device_unavailable_without_a_gpu():
    try:
        fusor.Engine(backend="cuda")
    except fusor.DeviceUnavailable as e:
        assert e.code == "DeviceUnavailable" and e.message
    else:
        pytest.skip("this machine has a CUDA device")


def test_out_of_memory_for_a_shape_past_the_element_limit():
    raised(fusor.OutOfMemory, lambda: fusor.Engine(backend="static").prepare(fusor.parse_graph(MLP), {"B": 2**50}),
           "elements|overflow|memory")


def test_numerics_mismatch_in_strict_verify():
    # A long dot product: the JIT kernel and OpenBLAS sum its products in other orders and
    # differ by ulps, far beyond a tolerance scaled by 1e-9.
    text = """graph t
input x: f32[N, 1000]
const w: f32[1000, 64] = randn(seed=1, std=0.3)
h = MatMul(x, w)
y = Gelu(h)
output y
"""
    engine = fusor.Engine(backend="llvm", verify="strict", verify_tolerance_scale=1e-9, disk_cache=False)
    x = np.random.default_rng(0).standard_normal((16, 1000), dtype=np.float32)
    raised(fusor.NumericsMismatch, lambda: engine.run(fusor.parse_graph(text), {"x": x}), "matmul|contraction")
    assert engine.stats()["groups_failed"] >= 1


def test_the_python_side_errors_are_type_errors():
    with pytest.raises(TypeError, match="unknown keyword argument.*bogus.*known: backend"):
        fusor.Engine(bogus=1)
    with pytest.raises(TypeError, match="unknown fusion option.*folding"):
        fusor.Engine(fusion={"folding": True})
    with pytest.raises(TypeError, match="threads takes int"):
        fusor.Engine(threads="two")
    with pytest.raises(TypeError, match="warn takes a callable"):
        fusor.Engine(warn=3)
    g = fusor.parse_graph(MLP)
    with pytest.raises(TypeError, match="mapping"):
        fusor.Engine().run(g, [np.ones((1, 24), np.float32)])
    with pytest.raises(TypeError, match="fusor.Graph or the path"):
        fusor.Engine().run(42, {})


def test_compile_failed_cache_corrupt_and_internal_are_raisable():
    # No public input makes them happen on purpose; they are still the classes code catches.
    for cls in (fusor.CompileFailed, fusor.CacheCorrupt, fusor.Internal):
        with pytest.raises(fusor.Error):
            raise cls("x")


def test_a_corrupt_store_entry_is_no_error(tmp_path):
    g = fusor.parse_graph(MLP)
    x = np.ones((3, 24), np.float32)
    want = fusor.Engine(backend="llvm", cache_dir=tmp_path).run(g, {"x": x})["y"]
    for entry in pathlib.Path(tmp_path).rglob("*"):
        if entry.is_file() and entry.stat().st_size > 64:
            entry.write_bytes(entry.read_bytes()[:40] + b"\xff" * 24 + entry.read_bytes()[64:])
    notes = []
    got = fusor.Engine(backend="llvm", cache_dir=tmp_path, warn=notes.append).run(g, {"x": x})["y"]
    np.testing.assert_array_equal(got, want)
