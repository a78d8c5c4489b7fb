"""fusor.InferenceSession: ONNX Runtime's session API over a fusor Engine.

Code written for onnxruntime.InferenceSession runs on fusor by changing the import:

    sess = fusor.InferenceSession("bert.onnx")          # or the model's bytes
    names = [i.name for i in sess.get_inputs()]         # NodeArg: name, shape, type
    last_hidden, = sess.run(None, {"input_ids": ids, "attention_mask": mask})

providers keeps ONNX Runtime's names: "CPUExecutionProvider" is fusor's llvm backend (with
tiering, so a new shape runs at once on asmjit kernels while LLVM compiles, and, where the
model has one varying dim besides a leading batch axis, symbolic_dim on that dim: a new
sequence length then runs at once on kernels compiled once for every length), and
"CUDAExecutionProvider" its cuda backend; the first one this machine can serve is used, as
ONNX Runtime does. SessionOptions' intra_op_num_threads and graph_optimization_level
(ORT_DISABLE_ALL: no fusion) carry over; any other keyword is an fusor.Engine option and
wins over both.
"""

import os
import warnings

from ._fusor import DeviceUnavailable, Engine, Error, InvalidArgument, load_model, load_onnx

# fusor's dtype names as ONNX Runtime's NodeArg.type strings.
_TYPES = {
    "f32": "tensor(float)",
    "f16": "tensor(float16)",
    "bf16": "tensor(bfloat16)",
    "i64": "tensor(int64)",
    "i32": "tensor(int32)",
    "bool": "tensor(bool)",
}

# ONNX Runtime's provider names and the Engine options that stand for them.
_PROVIDERS = {
    "CPUExecutionProvider": {"backend": "llvm", "tiering": True},
    "CUDAExecutionProvider": {"backend": "cuda"},
}


def _sequence_dim(inputs):
    """The named dim a CPU session serves on symbolic kernels: the one name the model's
    inputs give a dim other than their first (a sequence or time axis), where no input has
    it first (a batch axis, whose sizes the plans keep apart). None when there is no such
    name or more than one (which of them varies is not known)."""
    leading, inner = set(), set()
    for _, _, dims in inputs:
        for axis, d in enumerate(dims):
            if isinstance(d, str):
                (leading if axis == 0 else inner).add(d)
    names = inner - leading
    return next(iter(names)) if len(names) == 1 else None


class SessionOptions:
    """The ONNX Runtime SessionOptions fields fusor reads; an onnxruntime.SessionOptions
    works as well. intra_op_num_threads: kernel threads (0: one per core);
    graph_optimization_level: 0 (ORT_DISABLE_ALL) runs every op as its own kernel."""

    def __init__(self):
        self.intra_op_num_threads = 0
        self.graph_optimization_level = 99


class NodeArg:
    """A graph input or output as ONNX Runtime describes it: name, shape (ints, dim names,
    None where unknown) and type ("tensor(float)")."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name, shape, type):  # noqa: A002  (ONNX Runtime's field name)
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _invalid_argument(message):
    error = InvalidArgument(message)
    error.code = "InvalidArgument"
    error.message = message
    return error


def _level(value):
    """ORT's GraphOptimizationLevel (an enum or its int) as an int."""
    return int(getattr(value, "value", value))


class InferenceSession:
    """InferenceSession(path_or_bytes, sess_options=None, providers=None, **engine_options)."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **engine_options):
        if isinstance(path_or_bytes, (bytes, bytearray)):
            self._graph = load_onnx(bytes(path_or_bytes))
            self._model_path = None
        else:
            self._model_path = os.fspath(path_or_bytes)
            self._graph = load_model(self._model_path)
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        base = {}
        threads = int(getattr(self._sess_options, "intra_op_num_threads", 0) or 0)
        if threads > 0:
            base["threads"] = threads
        if _level(getattr(self._sess_options, "graph_optimization_level", 99)) == 0:
            base["fuse"] = False
        self._engine, self._providers = self._make_engine(providers, provider_options, base, engine_options,
                                                          _sequence_dim(self._graph.inputs))
        self._input_args = [NodeArg(name, list(dims), _TYPES[dtype]) for name, dtype, dims in self._graph.inputs]
        self._output_names = list(self._graph.outputs)
        self._output_args = None

    @staticmethod
    def _make_engine(providers, provider_options, base, engine_options, sequence_dim):
        names = []
        for p in providers or ["CPUExecutionProvider"]:
            name = p[0] if isinstance(p, (tuple, list)) else p
            if name not in _PROVIDERS:
                raise ValueError(f"fusor: unknown provider {name!r} (fusor serves: {', '.join(_PROVIDERS)})")
            names.append(name)
        del provider_options  # ONNX Runtime's per-provider options have no fusor meaning
        last_error = None
        for name in names:
            options = {**_PROVIDERS[name], **base, **engine_options}
            if sequence_dim and name == "CPUExecutionProvider" and "symbolic_dim" not in engine_options:
                options["symbolic_dim"] = sequence_dim
            try:
                return Engine(**options), [name]
            except DeviceUnavailable as e:
                last_error = e
                warnings.warn(f"fusor: {name} is not available here ({e}); trying the next provider", stacklevel=3)
        raise last_error

    @property
    def engine(self):
        """The fusor.Engine the session runs on (stats(), profile(), explain())."""
        return self._engine

    @property
    def graph(self):
        """The fusor.Graph the model loaded as."""
        return self._graph

    def get_inputs(self):
        return list(self._input_args)

    def get_outputs(self):
        if self._output_args is None:
            self._output_args = self._describe_outputs()
        return list(self._output_args)

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        return list(self._providers)

    def get_session_options(self):
        return self._sess_options

    def get_modelmeta(self):
        return None

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all, in the graph's order, when None or empty) as numpy arrays."""
        del run_options
        outputs = self._engine.run(self._graph, input_feed)
        if not output_names:
            return [outputs[n] for n in self._output_names]
        missing = [n for n in output_names if n not in outputs]
        if missing:
            raise _invalid_argument(f"no graph output named {', '.join(map(repr, missing))} "
                                    f"(outputs: {', '.join(self._output_names)})")
        return [outputs[n] for n in output_names]

    def _describe_outputs(self):
        """Output NodeArgs: the graph traced at two bindings of its named dims; a dim equal to
        one named input dim in both is that name, one fixed in both an int, else None."""
        symbols = sorted({d for _, _, dims in self._graph.inputs for d in dims if isinstance(d, str)})
        first = {s: 7 + 2 * i for i, s in enumerate(symbols)}
        second = {s: 9 + 2 * i for i, s in enumerate(symbols)}
        try:
            a = self._graph.output_types(first)
            b = self._graph.output_types(second) if symbols else a
        except Error:  # a graph that cannot trace at these sizes: shapes unknown
            return [NodeArg(name, None, "tensor(float)") for name in self._output_names]
        by_value = {(first[s], second[s]): s for s in symbols}
        args = []
        for (name, dtype, shape_a), (_, _, shape_b) in zip(a, b):
            shape = None
            if len(shape_a) == len(shape_b):
                shape = [x if x == y else by_value.get((x, y)) for x, y in zip(shape_a, shape_b)]
            args.append(NodeArg(name, shape, _TYPES[dtype]))
        return args
