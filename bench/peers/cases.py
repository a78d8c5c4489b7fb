"""The cases of fusor's benchmark binary (bench/cases.cpp), rebuilt for the peers.

Same names, shapes and graphs, in the same order: the builder-made cases are written here
in fusor's text format, op for op as bench/cases.cpp builds them (same ops, attributes,
constant shapes and recipes), and the two reference graphs are read from
examples/graphs/ (from $FUSOR_SOURCE_DIR when set, as fusor_bench does). Inputs are
seeded random normals, masks zeros, as there; values differ (see fusor_text.py).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable

import numpy as np

import fusor_text


def source_dir() -> str:
    """The fusor source tree: $FUSOR_SOURCE_DIR, else the one this file lives in."""
    env = os.environ.get("FUSOR_SOURCE_DIR")
    return env if env else os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def example_graph(name: str) -> fusor_text.Graph:
    """examples/graphs/<name> of the source tree."""
    return fusor_text.load_graph(os.path.join(source_dir(), "examples", "graphs", name))


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark case: its graph, the sizes of its named dims, which inputs are zeros."""

    name: str
    graph: Callable[[], fusor_text.Graph]
    dims: dict[str, int] = dataclasses.field(default_factory=dict)
    zero_inputs: tuple[str, ...] = ()

    def inputs(self, graph: fusor_text.Graph) -> dict[str, np.ndarray]:
        """Seeded random f32 inputs (zeros for `zero_inputs`) at this case's dims."""
        out = {}
        for seed, i in enumerate(graph.inputs, start=10):
            shape = tuple(self.dims[d] if isinstance(d, str) else d for d in i.dims)
            if i.name in self.zero_inputs:
                out[i.name] = np.zeros(shape, fusor_text.DTYPES[i.dtype])
            else:
                out[i.name] = np.random.default_rng(seed).standard_normal(shape).astype(fusor_text.DTYPES[i.dtype])
        return out


def _conv_bn_relu(cin: int, cout: int, k: int, hw: int, residual: bool) -> str:
    """bench/cases.cpp conv_bn_relu(): Conv (no bias) + BatchNormalization (+ Add) + Relu."""
    p = k // 2
    lines = [
        f"graph {'conv_bn_add_relu' if residual else 'conv_bn_relu'}",
        f"input x: f32[1, {cin}, {hw}, {hw}]",
        f"const w: f32[{cout}, {cin}, {k}, {k}] = randn(seed=1, std={math.sqrt(2.0 / (cin * k * k))!r})",
        f"const g: f32[{cout}] = uniform(seed=2, low=0.5, high=1.5)",
        f"const beta: f32[{cout}] = randn(seed=3, std=0.1)",
        f"const mu: f32[{cout}] = randn(seed=4, std=0.1)",
        f"const var: f32[{cout}] = uniform(seed=5, low=0.5, high=1.5)",
        f"conv = Conv(x, w) {{strides=[1, 1], pads=[{p}, {p}, {p}, {p}], dilations=[1, 1], group=1}}",
        "bn = BatchNormalization(conv, g, beta, mu, var) {epsilon=1e-05}",
    ]
    if residual:
        lines += [f"input r: f32[1, {cout}, {hw}, {hw}]", "sum = Add(bn, r)", "y = Relu(sum)"]
    else:
        lines += ["y = Relu(bn)"]
    return "\n".join(lines + ["output y"])


def _matmul_bias(m: int, k: int, n: int, gelu: bool) -> str:
    """bench/cases.cpp matmul_bias(): MatMul + bias (+ Gelu, exact erf form)."""
    lines = [
        f"graph {'matmul_bias_gelu' if gelu else 'matmul_bias'}",
        f"input x: f32[{m}, {k}]",
        f"const w: f32[{k}, {n}] = randn(seed=1, std=0.02)",
        f"const b: f32[{n}] = randn(seed=2, std=0.02)",
        "mm = MatMul(x, w)",
        "h = Add(mm, b)",
    ]
    lines += ['y = Gelu(h) {approximate="none"}', "output y"] if gelu else ["output h"]
    return "\n".join(lines)


_RESIDUAL_LAYERNORM = """graph residual_layernorm
input x: f32[128, 768]
input r: f32[128, 768]
const g: f32[768] = fill(1.0)
const b: f32[768] = fill(0.0)
sum = Add(x, r)
y = LayerNormalization(sum, g, b) {epsilon=1e-12, axis=-1}
output y"""

_SCALE_MASK_SOFTMAX = """graph scale_mask_softmax
input scores: f32[1, 12, 128, 128]
input mask: f32[1, 1, 1, 128]
const scale: f32[] = fill(0.125)
scaled = Mul(scores, scale)
masked = Add(scaled, mask)
y = Softmax(masked) {axis=-1}
output y"""

_ELTWISE_CHAIN5 = """graph eltwise_chain5
input x: f32[16777216]
const a: f32[] = fill(0.5)
const b: f32[] = fill(0.25)
const c: f32[] = fill(2.0)
const d: f32[] = fill(-1.0)
m1 = Mul(x, a)
a1 = Add(m1, b)
t = Tanh(a1)
m2 = Mul(t, c)
y = Add(m2, d)
output y"""


def _text(text: str) -> Callable[[], fusor_text.Graph]:
    return lambda: fusor_text.parse_graph(text)


def bench_cases() -> list[Case]:
    """Every case of fusor_bench, in its report order."""
    cases = [
        Case("conv3x3_bn_relu_64x56x56", _text(_conv_bn_relu(64, 64, 3, 56, False))),
        Case("conv1x1_bn_add_relu_256x56x56", _text(_conv_bn_relu(64, 256, 1, 56, True))),
        Case("resnet_bottleneck_256x56x56", lambda: example_graph("resnet_bottleneck"), {"N": 1, "H": 56, "W": 56}),
        Case("matmul_bias_128x768x2304", _text(_matmul_bias(128, 768, 2304, False))),
        Case("matmul_bias_gelu_128x768x3072", _text(_matmul_bias(128, 768, 3072, True))),
        Case("residual_layernorm_128x768", _text(_RESIDUAL_LAYERNORM)),
        Case("scale_mask_softmax_12x128x128", _text(_SCALE_MASK_SOFTMAX), zero_inputs=("mask",)),
        Case("eltwise_chain5_16M", _text(_ELTWISE_CHAIN5)),
    ]
    for t in (16, 64, 128, 384):
        cases.append(Case(f"bert_layer_seq{t}", lambda: example_graph("bert_layer"), {"B": 1, "T": t}, ("mask",)))
    return cases


def bert_dynamic(seq: int) -> Case:
    """The BERT layer at batch 1 with T left symbolic in its model; `seq` sizes its inputs."""
    return Case(f"bert_layer_seq{seq}", lambda: example_graph("bert_layer"), {"B": 1, "T": seq}, ("mask",))


def find_case(name: str) -> Case:
    for c in bench_cases():
        if c.name == name:
            return c
    raise KeyError(f"no case '{name}' (cases: {', '.join(c.name for c in bench_cases())})")
