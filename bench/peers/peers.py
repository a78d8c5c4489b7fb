"""The peers fusor is measured against, each in its best form on this CPU at fp32.

A peer turns one case (a fusor graph, the sizes of its dims, its inputs) into a callable
that runs one inference on preallocated inputs (and, where the runtime allows, outputs) at
a given thread count. Every runtime is imported lazily: a peer whose package is missing is
reported unavailable with the reason, never a crash of the harness.

- ort: ONNX Runtime, CPU EP: graph optimizations ALL, sequential execution, intra_op
  threads = T, inter_op 1, spinning as default; IOBinding on preallocated inputs and outputs.
- ov_f32: OpenVINO CPU: PERFORMANCE_HINT LATENCY, INFERENCE_NUM_THREADS T,
  INFERENCE_PRECISION_HINT f32; one infer request on shared input tensors.
- ov_default: the same at OpenVINO's default precision (bf16 on CPUs with AMX or
  AVX512-BF16): not fp32, so never the "best fp32 peer".
- torch: torch.compile (Inductor, freezing on) of the graph as a torch module
  (torch_module.py), under no_grad, torch.set_num_threads(T).

The ONNX peers take Gelu as ONNX's Gelu op (opset 20), as the fusor graphs have it;
`--gelu erf` gives them the erf formula instead (measured on this CPU: the same within
noise for both runtimes, see README.md).

ort and the OpenVINO peers also serve a model whose sequence length is symbolic
(dynamic_session), for the first-run latency at a never-seen length (worker.py first-run).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

import numpy as np

import fusor_text


class PeerUnavailable(RuntimeError):
    """The peer's runtime is not installed or cannot run on this machine."""


@dataclasses.dataclass
class Prepared:
    """A peer ready to run one case: `run()` does one inference; `info` says how it was set up."""

    run: Callable[[], object]
    info: dict[str, object]


@dataclasses.dataclass
class Model:
    """One case as the peers take it. The ONNX file is written into `workdir` on first use."""

    graph: fusor_text.Graph
    dims: dict[str, int]  # sizes bound in the model (a name left out stays symbolic)
    inputs: dict[str, np.ndarray]
    workdir: str
    gelu: str = "native"  # onnx_export.to_onnx(gelu=)
    _onnx_path: str = ""

    def onnx_path(self) -> str:
        if not self._onnx_path:
            import onnx

            import onnx_export

            path = os.path.join(self.workdir, f"{self.graph.name or 'graph'}.onnx")
            onnx.save(onnx_export.to_onnx(self.graph, self.dims, gelu=self.gelu), path)
            self._onnx_path = path
        return self._onnx_path


class DynamicSession:
    """A peer's session on a model with symbolic dims: bind(inputs) gives a call running it
    on those inputs (the first call at a new shape is when the runtime adapts to it)."""

    def __init__(self, bind: Callable[[dict[str, np.ndarray]], Callable[[], object]]):
        self.bind = bind


class Peer:
    """Base of the peers: a key, a column label, whether it computes in fp32."""

    key = ""
    label = ""  # the column title
    runtime = ""  # the package, as the report names it with its version
    fp32 = True

    def version(self) -> str:
        """The runtime's version; raises PeerUnavailable when it cannot be imported."""
        raise NotImplementedError

    def prepare(self, model: Model, threads: int) -> Prepared:
        raise NotImplementedError


def _import(module: str):
    try:
        return __import__(module)
    except Exception as e:  # ImportError, or a broken install raising anything at import
        raise PeerUnavailable(f"{module} cannot be imported: {type(e).__name__}: {e}") from None


class OrtPeer(Peer):
    key, label, runtime = "ort", "ORT", "ONNX Runtime"

    def version(self) -> str:
        return _import("onnxruntime").__version__

    def session(self, path: str, threads: int):
        """An ONNX Runtime CPU session in its best latency form (see the module comment)."""
        ort = _import("onnxruntime")
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.log_severity_level = 3
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    def prepare(self, model: Model, threads: int) -> Prepared:
        sess = self.session(model.onnx_path(), threads)
        feeds = {k: np.ascontiguousarray(v) for k, v in model.inputs.items()}
        outs = sess.run(None, feeds)  # the first run; gives the outputs' shapes to preallocate
        binding = sess.io_binding()
        for name, arr in feeds.items():
            binding.bind_cpu_input(name, arr)
        names = [o.name for o in sess.get_outputs()]
        buffers = [np.empty_like(o) for o in outs]
        for name, buf in zip(names, buffers):
            binding.bind_output(name, "cpu", 0, buf.dtype, list(buf.shape), buf.ctypes.data)

        def run():
            sess.run_with_iobinding(binding)

        run()
        return Prepared(run, {"gelu": model.gelu, "providers": sess.get_providers(), "_keep": (buffers, feeds)})

    def dynamic_session(self, model: Model, threads: int) -> DynamicSession:
        sess = self.session(model.onnx_path(), threads)

        def bind(inputs: dict[str, np.ndarray]) -> Callable[[], object]:
            feeds = {k: np.ascontiguousarray(v) for k, v in inputs.items()}
            return lambda: sess.run(None, feeds)

        return DynamicSession(bind)


def _type_name(t) -> str:
    """An OpenVINO element type as its short name ("f32", "bf16")."""
    return t.to_string() if hasattr(t, "to_string") else str(t)


class OpenVinoPeer(Peer):
    def __init__(self, precision: str | None):
        self.precision = precision  # "f32", or None for the runtime's default
        self.key = "ov_f32" if precision else "ov_default"
        self.label = "OpenVINO f32" if precision else "OpenVINO default"
        self.fp32 = precision == "f32"
        self.runtime = "OpenVINO"

    def version(self) -> str:
        return _import("openvino").__version__.split("-")[0]  # "2026.4.1-22982-e213a147257-releases/..."

    def compile(self, path: str, threads: int):
        ov = _import("openvino")
        core = ov.Core()
        config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": threads}
        if self.precision:
            config["INFERENCE_PRECISION_HINT"] = self.precision
        compiled = core.compile_model(core.read_model(path), "CPU", config)
        return ov, compiled

    @staticmethod
    def _bind(ov, compiled, req, inputs: dict[str, np.ndarray]):
        """Sets `inputs` as the request's input tensors, sharing their memory; returns them."""
        feeds = {k: np.ascontiguousarray(v) for k, v in inputs.items()}
        for port in compiled.inputs:
            req.set_tensor(port, ov.Tensor(feeds[port.any_name], shared_memory=True))
        return feeds

    def prepare(self, model: Model, threads: int) -> Prepared:
        ov, compiled = self.compile(model.onnx_path(), threads)
        req = compiled.create_infer_request()
        feeds = self._bind(ov, compiled, req, model.inputs)
        req.infer()  # the first run; outputs stay the request's own tensors, reused
        info = {
            "gelu": model.gelu,
            "precision": _type_name(compiled.get_property("INFERENCE_PRECISION_HINT")),
            "threads": int(compiled.get_property("INFERENCE_NUM_THREADS")),
            "streams": int(compiled.get_property("NUM_STREAMS")),
            "_keep": feeds,
        }
        return Prepared(lambda: req.infer(share_inputs=True, share_outputs=True), info)

    def dynamic_session(self, model: Model, threads: int) -> DynamicSession:
        ov, compiled = self.compile(model.onnx_path(), threads)
        req = compiled.create_infer_request()

        def bind(inputs: dict[str, np.ndarray]) -> Callable[[], object]:
            feeds = self._bind(ov, compiled, req, inputs)

            def call():
                assert feeds  # the request reads their memory: they live as long as the call
                return req.infer(share_inputs=True, share_outputs=True)

            return call

        return DynamicSession(bind)


class TorchPeer(Peer):
    key, label, runtime = "torch", "torch.compile", "torch"

    def version(self) -> str:
        return _import("torch").__version__

    def prepare(self, model: Model, threads: int) -> Prepared:
        torch = _import("torch")
        import torch_module

        torch.set_num_threads(threads)
        import torch._inductor.config as inductor_config

        inductor_config.freezing = True
        module = torch_module.GraphModule(model.graph, model.dims).eval()
        names = [i.name for i in model.graph.inputs]
        args = [torch.from_numpy(np.ascontiguousarray(model.inputs[n])) for n in names]
        torch._dynamo.reset()
        compiled = torch.compile(module, dynamic=False)

        def run():
            with torch.no_grad():
                return compiled(*args)

        run()  # compiles
        return Prepared(run, {"mode": "torch.compile(inductor, freezing)", "threads": torch.get_num_threads()})


def all_peers() -> dict[str, Peer]:
    """Every peer by key, in column order."""
    peers: list[Peer] = [OrtPeer(), OpenVinoPeer("f32"), TorchPeer(), OpenVinoPeer(None)]
    return {p.key: p for p in peers}

