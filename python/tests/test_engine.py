"""fusor.Engine: run, prepare, explain, stats, profile, verdicts and options, on every CPU
backend against the static backend's unfused run."""

import numpy as np
import pytest

import fusor
from conftest import MIXED, mlp_reference


def test_run_matches_the_unfused_reference(engine, mlp):
    rng = np.random.default_rng(0)
    for batch in (1, 3, 17):
        x = rng.standard_normal((batch, 24), dtype=np.float32)
        out = engine.run(mlp, {"x": x})
        assert list(out) == ["y"]
        y = out["y"]
        assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (batch, 16)
        np.testing.assert_allclose(y, mlp_reference(x), rtol=1e-5, atol=1e-5)


def test_every_output_dtype_comes_back(engine):
    g = fusor.parse_graph(MIXED)
    a = np.array([-1.5, 0.0, 2.0, 3.0], np.float32)
    k = np.array([1, -2, 3, 2**40], np.int64)
    out = engine.run(g, {"a": a, "k": k})
    np.testing.assert_array_equal(out["s"], a * a)
    assert out["pos"].dtype == np.bool_
    np.testing.assert_array_equal(out["pos"], a > 0)
    assert out["kk"].dtype == np.int64
    np.testing.assert_array_equal(out["kk"], k + k)


def test_run_takes_a_model_path(tmp_path, mlp):
    path = tmp_path / "mlp.fusor"
    path.write_text(str(mlp))
    engine = fusor.Engine(backend="static")
    x = np.ones((2, 24), np.float32)
    by_path = engine.run(path, {"x": x})["y"]           # os.PathLike
    by_str = engine.run(str(path), {"x": x})["y"]        # str, the graph kept from the first load
    np.testing.assert_array_equal(by_path, by_str)
    np.testing.assert_allclose(by_path, mlp_reference(x), rtol=1e-6, atol=1e-6)
    assert engine.stats()["plan_hits"] == 1


def test_outputs_own_the_engines_tensors_and_outlive_the_engine(mlp):
    engine = fusor.Engine(backend="llvm")
    x = np.full((4, 24), 0.5, np.float32)
    y = engine.run(mlp, {"x": x})["y"]
    assert y.base is not None          # a view over the engine's tensor, not a copy
    assert y.flags.writeable and y.flags.c_contiguous and y.ctypes.data % 64 == 0
    expected = mlp_reference(x)
    del engine
    import gc

    gc.collect()
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    y[:] = 0                            # the caller's to change
    assert not y.any()


def test_each_run_returns_new_arrays(mlp):
    engine = fusor.Engine(backend="asmjit")
    x = np.ones((2, 24), np.float32)
    first = engine.run(mlp, {"x": x})["y"]
    kept = first.copy()
    second = engine.run(mlp, {"x": 2 * x})["y"]
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, kept)


def test_prepare_compiles_ahead_of_the_run(mlp):
    engine = fusor.Engine(backend="llvm", disk_cache=False)
    engine.prepare(mlp, {"B": 5})
    before = engine.stats()
    assert before["plan_misses"] == 1 and before["kernels_compiled"] >= 1
    engine.run(mlp, {"x": np.zeros((5, 24), np.float32)})
    after = engine.stats()
    assert after["plan_hits"] == 1 and after["kernels_compiled"] == before["kernels_compiled"]


def test_explain_as_text_and_as_json(mlp):
    engine = fusor.Engine(backend="llvm", disk_cache=False)
    text = engine.explain(mlp, {"B": 8})
    assert isinstance(text, str) and "matmul" in text.lower()
    report = engine.explain(mlp, {"B": 8}, json=True)
    assert isinstance(report, dict)
    assert report["groups"], report
    with pytest.raises(fusor.InvalidArgument, match="B"):
        engine.explain(mlp)             # the named dim unbound


def test_stats_profile_and_verdicts(mlp):
    engine = fusor.Engine(backend="llvm", profile=True, verify="warn", disk_cache=False)
    x = np.ones((3, 24), np.float32)
    for _ in range(3):
        engine.run(mlp, {"x": x})
    stats = engine.stats()
    assert stats["plan_misses"] == 1 and stats["plan_hits"] == 2
    assert stats["compile_ms_by_backend"].get("llvm", 0) > 0
    assert stats["groups_verified"] >= 1 and stats["groups_failed"] == 0
    profile = engine.profile()
    assert profile and all(set(p) == {"step", "calls", "total_ms"} for p in profile)
    assert max(p["calls"] for p in profile) == 3
    verdicts = engine.verdicts()
    assert verdicts and all(v["passed"] for v in verdicts)
    assert "matmul" in verdicts[0]["pattern"]


def test_options_read_back():
    engine = fusor.Engine(backend="asmjit", threads=3, tiering=False, symbolic_dim="T", verify="strict",
                          precision="fp32", fusion={"max_group_ops": 17, "fold_batchnorm": False},
                          plan_cache_bytes=1 << 20, disk_cache=False, tune=True)
    o = engine.options
    assert o["tune"] is True
    assert o["backend"] == "asmjit" and o["num_threads"] == 3 and o["symbolic_dim"] == "T"
    assert o["verify"] == "strict" and o["precision"] == "fp32" and o["plan_cache_bytes"] == 1 << 20
    assert o["fusion"]["max_group_ops"] == 17 and o["fusion"]["fold_batchnorm"] is False
    assert o["fusion"]["group"] is True
    assert repr(engine) == "<fusor.Engine backend=asmjit>"


def test_the_warn_callback_receives_warnings(tmp_path, mlp):
    notes = []
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    engine = fusor.Engine(backend="llvm", cache_dir=not_a_dir, warn=notes.append)
    engine.run(mlp, {"x": np.ones((1, 24), np.float32)})
    assert any("disk cache is off" in n and "not a directory" in n for n in notes), notes
    assert engine.stats()["disk_enabled"] is False


def test_module_metadata():
    assert fusor.__version__.count(".") == 2
    assert {"static", "llvm", "asmjit", "cuda"} <= set(fusor.backends)
    g = fusor.parse_graph("graph t\ninput x: f32[B, 3]\ny = Relu(x)\noutput y\n")
    assert g.name == "t" and g.inputs == [("x", "f32", ["B", 3])] and g.outputs == ["y"]
    assert g.num_nodes == 1 and isinstance(g.fingerprint, int)
    assert g.output_types({"B": 4}) == [("y", "f32", [4, 3])]
    assert "Relu" in str(g) and "fusor.Graph 't'" in repr(g)
    assert fusor.parse_graph(str(g)).fingerprint == g.fingerprint
