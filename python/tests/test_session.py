"""fusor.InferenceSession: ONNX Runtime's session API, compared with onnxruntime's on the
committed BERT and ResNet-50 exports."""

import warnings

import numpy as np
import pytest

import fusor
from conftest import MLP, MODELS_DIR, load_case

ort = pytest.importorskip("onnxruntime")

BERT = MODELS_DIR / "bert_ts" / "model.onnx"
RESNET = MODELS_DIR / "resnet50_dynamo" / "model.onnx"


def close(got, want):
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


def test_inputs_and_outputs_are_described_as_onnx_runtime_does():
    sess = fusor.InferenceSession(BERT)
    ref = ort.InferenceSession(str(BERT), providers=["CPUExecutionProvider"])
    assert [(i.name, i.type) for i in sess.get_inputs()] == [(i.name, i.type) for i in ref.get_inputs()]
    assert [i.shape for i in sess.get_inputs()] == [i.shape for i in ref.get_inputs()]
    assert [(o.name, o.type) for o in sess.get_outputs()] == [(o.name, o.type) for o in ref.get_outputs()]
    ours, theirs = sess.get_outputs()[0].shape, ref.get_outputs()[0].shape
    assert len(ours) == len(theirs) and ours[-1] == theirs[-1]
    assert ours[:2] == ["batch", "sequence"]
    assert "NodeArg(name='input_ids'" in repr(sess.get_inputs()[0])
    assert sess.get_providers() == ["CPUExecutionProvider"] and sess.get_overridable_initializers() == []


@pytest.mark.parametrize("case", ["b1_t7", "b2_t7_padded"])
def test_run_matches_onnx_runtime(case):
    feeds = load_case("bert_ts", case)
    want = feeds.pop("y")
    sess = fusor.InferenceSession(BERT)
    ref = ort.InferenceSession(str(BERT), providers=["CPUExecutionProvider"])
    theirs = ref.run(None, feeds)
    ours = sess.run(None, feeds)
    assert len(ours) == len(theirs) == 1
    close(ours[0], theirs[0])
    close(ours[0], want)
    named = sess.run(["y"], feeds)
    close(named[0], theirs[0])


def test_model_bytes_sess_options_and_engine_keywords():
    feeds = load_case("resnet50_dynamo", "b1_64x64")
    want = feeds.pop("y")
    options = fusor.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = 0            # ORT_DISABLE_ALL: unfused
    # torch.export writes its weights beside the model: bytes cannot reach them, so this one
    # goes by path, and the TorchScript export (weights inside) by bytes.
    sess = fusor.InferenceSession(RESNET, sess_options=options, backend="asmjit")
    assert sess.engine.options["num_threads"] == 1 and sess.engine.options["fuse"] is False
    assert sess.engine.options["backend"] == "asmjit"
    close(sess.run(None, feeds)[0], want)
    ts = MODELS_DIR / "resnet50_ts" / "model.onnx"
    by_bytes = fusor.InferenceSession(ts.read_bytes(), sess_options=ort.SessionOptions())
    ts_feeds = load_case("resnet50_ts", "b1_64x64")
    ts_want = ts_feeds.pop("y")
    close(by_bytes.run(None, ts_feeds)[0], ts_want)


def test_providers_as_onnx_runtime_names_them():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = fusor.InferenceSession(BERT, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    if sess.get_providers() == ["CPUExecutionProvider"]:    # no GPU: said, and the next one taken
        assert any("CUDAExecutionProvider is not available here" in str(w.message) for w in caught)
    else:
        assert sess.get_providers() == ["CUDAExecutionProvider"]
    with pytest.raises(ValueError, match="TensorrtExecutionProvider"):
        fusor.InferenceSession(BERT, providers=["TensorrtExecutionProvider"])
    sess = fusor.InferenceSession(BERT, providers=[("CPUExecutionProvider", {"arena_extend_strategy": "x"})])
    assert sess.engine.options["backend"] == "llvm" and sess.engine.options["tiering"] is True


def test_a_cpu_session_serves_new_sequence_lengths_on_symbolic_kernels():
    # BERT's inputs are [batch, sequence]: "sequence" is the one dim no input leads with.
    # (No persistent store: the symbolic kernels of an earlier process would serve at once.
    # specialize off: no exact kernels compile behind a length, so every LLVM compile shows.)
    sess = fusor.InferenceSession(BERT, disk_cache=False, specialize=False)
    assert sess.engine.options["symbolic_dim"] == "sequence"
    assert fusor.InferenceSession(BERT, symbolic_dim="").engine.options["symbolic_dim"] == ""
    ref = ort.InferenceSession(str(BERT), providers=["CPUExecutionProvider"])
    def feeds(t):
        return {"input_ids": (np.arange(t, dtype=np.int64).reshape(1, t) * 7) % 50,
                "attention_mask": np.ones((1, t), np.int64)}
    def llvm_compiles():
        stats = sess.engine.stats()
        return stats["compile_ms_by_backend"].get("llvm", 0.0), stats["kernels_compiled_background"]
    close(sess.run(None, feeds(9))[0], ref.run(None, feeds(9))[0])  # the first length: asmjit
    assert sess.engine.stats()["symbolic_steps"] == 0
    sess.engine.drain()  # its symbolic kernels, compiled behind it
    before = llvm_compiles()
    assert before[0] > 0 and before[1] > 0
    close(sess.run(None, feeds(23))[0], ref.run(None, feeds(23))[0])  # a new length: symbolic at once
    assert sess.engine.stats()["symbolic_steps"] > 0
    sess.engine.drain()
    assert llvm_compiles() == before  # no LLVM compile for it, on its path or behind it
    # A CNN's inputs name only the batch: no symbolic dim.
    cnn = fusor.InferenceSession(MODELS_DIR / "resnet50_ts" / "model.onnx")
    assert cnn.engine.options["symbolic_dim"] == ""


def test_errors_name_what_was_wrong():
    sess = fusor.InferenceSession(BERT)
    feeds = load_case("bert_ts", "b1_t7")
    feeds.pop("y")
    with pytest.raises(fusor.InvalidArgument, match="'nope'.*outputs: y"):
        sess.run(["nope"], feeds)
    with pytest.raises(fusor.InvalidArgument, match="attention_mask"):
        sess.run(None, {"input_ids": feeds["input_ids"]})
    with pytest.raises(fusor.DTypeMismatch, match="input_ids"):
        sess.run(None, {**feeds, "input_ids": feeds["input_ids"].astype(np.int32)})
    with pytest.raises(TypeError, match="unknown keyword"):
        fusor.InferenceSession(BERT, thread=2)


def test_a_text_graph_serves_as_a_session_too(tmp_path):
    path = tmp_path / "mlp.fusor"
    path.write_text(MLP)
    sess = fusor.InferenceSession(path, backend="static")
    assert [i.shape for i in sess.get_inputs()] == [["B", 24]]
    assert [o.shape for o in sess.get_outputs()] == [["B", 16]]
    y, = sess.run(None, {"x": np.ones((3, 24), np.float32)})
    assert y.shape == (3, 16)


def test_symbolic_kernels_at_the_longest_length_the_model_takes():
    # The tiny BERT's position table has 64 rows: the symbolic reference (size 65 when the
    # request is at 64) cannot trace, and the one below it serves instead.
    ids = np.arange(64, dtype=np.int64).reshape(1, 64) % 50
    feeds = {"input_ids": ids, "attention_mask": np.ones((1, 64), np.int64)}
    sess = fusor.InferenceSession(BERT, symbolic_dim="sequence")
    ref = ort.InferenceSession(str(BERT), providers=["CPUExecutionProvider"])
    want = ref.run(None, feeds)[0]
    close(sess.run(None, feeds)[0], want)
    assert sess.engine.stats()["symbolic_steps"] > 0
    sess.engine.drain()
    close(sess.run(None, feeds)[0], want)
