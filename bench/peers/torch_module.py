"""A fusor graph (fusor_text.Graph) as a torch.nn.Module, for the torch.compile peer.

forward() walks the nodes in order and calls the torch function of each ONNX operator;
TorchDynamo traces that loop away (the graph is fixed), so torch.compile sees the plain
chain of aten ops a hand-written module would give it. Constants are buffers (Inductor's
freezing folds them in). Shape-only inputs (Reshape's target, axes) are read from the
constants when the module is built, with ONNX's rules (0 copies a dim, -1 is inferred).
An operator not listed here raises NotImplementedError naming it, which the harness
reports as the peer failing on that case.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

import fusor_text


def _onnx_reshape(in_shape: tuple[int, ...], target: list[int], allowzero: int) -> list[int]:
    out = [in_shape[i] if (d == 0 and not allowzero) else d for i, d in enumerate(target)]
    if -1 in out:
        known = math.prod(d for d in out if d != -1)
        out[out.index(-1)] = math.prod(in_shape) // known if known else 0
    return out


def _conv(x, w, b, attrs):
    pads = list(attrs.get("pads", [0] * (2 * (w.dim() - 2))))
    half = len(pads) // 2
    if pads[:half] != pads[half:]:  # asymmetric: pad explicitly (F.pad wants last dim first)
        spec = []
        for i in reversed(range(half)):
            spec += [pads[i], pads[i + half]]
        x, pads = F.pad(x, spec), [0] * len(pads)
    conv = F.conv2d if w.dim() == 4 else F.conv1d
    return conv(
        x,
        w,
        b,
        stride=list(attrs.get("strides", [1] * half)),
        padding=pads[:half],
        dilation=list(attrs.get("dilations", [1] * half)),
        groups=int(attrs.get("group", 1)),
    )


def _layer_norm(x, scale, bias, attrs):
    axis = int(attrs.get("axis", -1))
    axis = axis if axis >= 0 else x.dim() + axis
    return F.layer_norm(x, x.shape[axis:], scale, bias, float(attrs.get("epsilon", 1e-5)))


_BINARY = {"Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div, "Pow": torch.pow}
_UNARY = {
    "Relu": torch.relu,
    "Erf": torch.erf,
    "Tanh": torch.tanh,
    "Sigmoid": torch.sigmoid,
    "Exp": torch.exp,
    "Sqrt": torch.sqrt,
    "Neg": torch.neg,
}


class GraphModule(torch.nn.Module):
    """`graph` at `dims` (every named dim bound) as a module; forward takes the graph's
    inputs positionally, in declaration order, and returns its outputs (one tensor when
    there is one output)."""

    def __init__(self, graph: fusor_text.Graph, dims: dict[str, int]):
        super().__init__()
        self.graph = graph
        self.input_names = [i.name for i in graph.inputs]
        self.const_values: dict[str, np.ndarray] = {}
        self.buffer_of: dict[str, str] = {}
        for i, c in enumerate(graph.constants):
            values = c.materialize()
            self.const_values[c.name] = values
            self.buffer_of[c.name] = f"c{i}"
            self.register_buffer(f"c{i}", torch.from_numpy(np.ascontiguousarray(values)))
        self.reshape_to: dict[str, list[int]] = {}  # node name -> the resolved target shape
        self._resolve_reshapes(dims)

    def _resolve_reshapes(self, dims: dict[str, int]) -> None:
        """Runs the graph once, eagerly on zeros, to learn the input shape of each Reshape."""
        with torch.no_grad():
            env = {}
            for i in self.graph.inputs:
                shape = tuple(dims[d] if isinstance(d, str) else d for d in i.dims)
                env[i.name] = torch.from_numpy(np.zeros(shape, fusor_text.DTYPES[i.dtype]))
            env.update({c: torch.from_numpy(np.ascontiguousarray(v)) for c, v in self.const_values.items()})
            for node in self.graph.nodes:
                if node.op == "Reshape":
                    x = env[node.inputs[0]]
                    target = [int(d) for d in self.const_values[node.inputs[1]].reshape(-1)]
                    self.reshape_to[node.name] = _onnx_reshape(tuple(x.shape), target, int(node.attrs.get("allowzero", 0)))
                outs = self._apply(node, [None if i is None else env[i] for i in node.inputs])
                env.update(zip(node.outputs, outs))

    def _const_ints(self, name: str) -> list[int]:
        return [int(v) for v in self.const_values[name].reshape(-1)]

    def _apply(self, node: fusor_text.Node, args: list) -> tuple:
        op, a = node.op, node.attrs
        if op in _BINARY:
            return (_BINARY[op](args[0], args[1]),)
        if op in _UNARY:
            return (_UNARY[op](args[0]),)
        if op == "MatMul":
            return (torch.matmul(args[0], args[1]),)
        if op == "Gemm":
            x, w = args[0], args[1]
            x = x.t() if a.get("transA", 0) else x
            w = w.t() if a.get("transB", 0) else w
            y = float(a.get("alpha", 1.0)) * (x @ w)
            return (y + float(a.get("beta", 1.0)) * args[2] if len(args) > 2 and args[2] is not None else y,)
        if op == "Gelu":
            return (F.gelu(args[0], approximate=str(a.get("approximate", "none"))),)
        if op in ("Max", "Min"):
            f = torch.maximum if op == "Max" else torch.minimum
            y = args[0]
            for z in args[1:]:
                y = f(y, z)
            return (y,)
        if op == "Conv":
            return (_conv(args[0], args[1], args[2] if len(args) > 2 else None, a),)
        if op == "BatchNormalization":
            x, scale, bias, mean, var = args
            return (F.batch_norm(x, mean, var, scale, bias, training=False, eps=float(a.get("epsilon", 1e-5))),)
        if op == "LayerNormalization":
            return (_layer_norm(args[0], args[1], args[2] if len(args) > 2 else None, a),)
        if op == "Softmax":
            return (torch.softmax(args[0], dim=int(a.get("axis", -1))),)
        if op == "Transpose":
            perm = a.get("perm") or list(reversed(range(args[0].dim())))
            return (args[0].permute(*perm),)
        if op == "Reshape":
            return (args[0].reshape(self.reshape_to[node.name]),)
        if op == "Flatten":
            axis = int(a.get("axis", 1))
            return (args[0].reshape(math.prod(args[0].shape[:axis]), -1),)
        if op in ("ReduceMean", "ReduceSum", "ReduceMax"):
            axes = a.get("axes") or (self._const_ints(node.inputs[1]) if len(node.inputs) > 1 and node.inputs[1] else [])
            dims = axes if axes else list(range(args[0].dim()))
            keep = bool(a.get("keepdims", 1))
            if op == "ReduceMax":
                return (torch.amax(args[0], dim=dims, keepdim=keep),)
            f = torch.mean if op == "ReduceMean" else torch.sum
            return (f(args[0], dim=dims, keepdim=keep),)
        if op == "Concat":
            return (torch.cat(args, dim=int(a["axis"])),)
        raise NotImplementedError(f"torch_module: no torch form for {op} (node '{node.name}')")

    def forward(self, *inputs):
        env = dict(zip(self.input_names, inputs))
        for name, buf in self.buffer_of.items():
            env[name] = getattr(self, buf)
        for node in self.graph.nodes:
            outs = self._apply(node, [None if i is None else env[i] for i in node.inputs])
            env.update(zip(node.outputs, outs))
        outs = tuple(env[o] for o in self.graph.outputs)
        return outs[0] if len(outs) == 1 else outs
