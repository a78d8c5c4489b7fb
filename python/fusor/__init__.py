"""fusor: a JIT operator-fusion engine for neural-network inference.

    import numpy as np, fusor
    engine = fusor.Engine(backend="llvm", threads=2)
    out = engine.run("model.onnx", {"x": np.ones((1, 3, 224, 224), np.float32)})

or, for code written for ONNX Runtime, change the import:

    sess = fusor.InferenceSession("model.onnx")
    logits, = sess.run(None, {"x": x})

Engine takes one keyword per EngineOptions field of the C++ API (jit/engine_types.h); runs
release the GIL, read contiguous aligned inputs in place and return numpy arrays over the
engine's own output tensors. Every failure is a fusor.Error, of the class of its code
(fusor.ShapeMismatch, fusor.ParseError, ...).
"""

from ._fusor import (  # noqa: F401  (the public API, re-exported)
    CacheCorrupt,
    CompileFailed,
    DeviceUnavailable,
    DTypeMismatch,
    Engine,
    Error,
    Graph,
    Internal,
    InvalidArgument,
    InvalidGraph,
    Io,
    NumericsMismatch,
    OutOfMemory,
    ParseError,
    ShapeMismatch,
    Unsupported,
    __version__,
    backends,
    load_graph,
    load_model,
    load_onnx,
    parse_graph,
)
from .session import InferenceSession, NodeArg, SessionOptions  # noqa: F401

__all__ = [
    "CacheCorrupt", "CompileFailed", "DeviceUnavailable", "DTypeMismatch", "Engine", "Error", "Graph",
    "InferenceSession", "Internal", "InvalidArgument", "InvalidGraph", "Io", "NodeArg", "NumericsMismatch",
    "OutOfMemory", "ParseError", "SessionOptions", "ShapeMismatch", "Unsupported", "backends", "load_graph",
    "load_model", "load_onnx", "parse_graph",
]
