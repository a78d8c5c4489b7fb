"""Tests of the peer harness's graph path: fusor's text format -> fusor_text.Graph -> ONNX
(and -> torch where torch is installed), with no network and no timing.

  python -m unittest discover -s bench/peers -p 'test_*.py'
  python bench/peers/test_onnx_export.py        (as CTest runs it: exit 77 when skipped)

Needs numpy and onnx (the harness's virtualenv has them); without them every test is
skipped with the reason, and run as a script it exits 77 (CTest's SKIP_RETURN_CODE) rather
than passing. Numerical checks run the exported models on ONNX's reference
evaluator against NumPy formulas.
"""

from __future__ import annotations

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy as np
except ImportError:
    np = None
try:
    import onnx
    from onnx.reference import ReferenceEvaluator
except ImportError:
    onnx = None
try:
    import torch
except ImportError:
    torch = None

HAVE_NUMPY = np is not None
HAVE_ONNX = HAVE_NUMPY and onnx is not None
if HAVE_NUMPY:
    import cases
    import fusor_text
if HAVE_ONNX:
    import onnx_export


def _erf_gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _run_reference(model, feeds):
    return ReferenceEvaluator(model).run(None, feeds)


@unittest.skipUnless(HAVE_NUMPY, "numpy is not installed (scripts/bench-vs-peers.sh sets up a virtualenv with it)")
class ParseTest(unittest.TestCase):
    def test_reference_graphs(self):
        bert = cases.example_graph("bert_layer")
        self.assertEqual(bert.name, "bert_layer")
        self.assertEqual([i.name for i in bert.inputs], ["x", "mask"])
        self.assertEqual(bert.inputs[0].dims, ("B", "T", 768))
        self.assertEqual(bert.dim_names(), ["B", "T"])
        self.assertEqual(len(bert.nodes), 30)
        self.assertEqual(bert.outputs, ["y"])
        transposes = [n for n in bert.nodes if n.op == "Transpose"]
        self.assertEqual(transposes[1].attrs, {"perm": [0, 2, 3, 1]})
        ln = next(n for n in bert.nodes if n.op == "LayerNormalization")
        self.assertEqual(ln.attrs, {"axis": -1, "epsilon": 1e-12})
        resnet = cases.example_graph("resnet_bottleneck")
        self.assertEqual(len(resnet.nodes), 10)
        self.assertEqual(resnet.dim_names(), ["N", "H", "W"])
        w1 = resnet.constants[0]
        self.assertEqual((w1.name, w1.dims, w1.recipe.kind), ("w1", (64, 256, 1, 1), "randn"))

    def test_statements_and_values(self):
        g = fusor_text.parse_graph(
            "graph t  # a comment\n"
            "input x: f32[N, 4]\n"
            "const shp: i64[2] = [0, -1]\n"
            "const s: f32[] = [0.5]\n"
            "const u: f32[4] = uniform(seed=3, low=-1, high=1)\n"
            'const nm: f32[2, 2] = randn(seed=1, std=0.5, mean=2.0)\n'
            "y = Conv(x, u, _) {strides=[2, 2], epsilon=1, mode=\"a#b\"} as conv1\n"
            "output y\n"
        )
        node = g.nodes[0]
        self.assertEqual((node.name, node.inputs, node.outputs), ("conv1", ("x", "u", None), ("y",)))
        self.assertEqual(node.attrs, {"strides": [2, 2], "epsilon": 1, "mode": "a#b"})
        values = {c.name: c.materialize() for c in g.constants}
        np.testing.assert_array_equal(values["shp"], np.array([0, -1], np.int64))
        self.assertEqual(values["s"].shape, ())
        self.assertTrue(np.all(np.abs(values["u"]) <= 1.0))
        self.assertEqual(values["nm"].dtype, np.float32)

    def test_errors_name_the_line(self):
        bad = {
            "graph t\ny = Relu(x)\noutput y": ":2:",  # undefined input
            "graph t\ninput x: f32[2]\ninput x: f32[2]\noutput x": ":3:",  # defined twice
            "graph t\ninput x: f32[2]\nconst c: f32[3] = [1.0, 2.0]\noutput x": ":3:",  # wrong count
            "graph t\ninput x: f99[2]\noutput x": ":2:",  # unknown dtype
            "graph t\ninput x: f32[2]\nconst c: f32[2] = randn(seed=1)\noutput x": ":3:",  # no std
        }
        for text, where in bad.items():
            with self.subTest(text=text), self.assertRaisesRegex(fusor_text.ParseError, where):
                fusor_text.parse_graph(text)


@unittest.skipUnless(HAVE_ONNX, "onnx is not installed (scripts/bench-vs-peers.sh sets up a virtualenv with it)")
class ExportTest(unittest.TestCase):
    def test_every_bench_case_exports(self):
        seen = set()
        for case in cases.bench_cases():
            if case.name.startswith("bert_layer_seq") and "bert" in seen:
                continue  # one length is enough: the others differ only in the bound dim
            seen.add("bert" if case.name.startswith("bert") else case.name)
            with self.subTest(case=case.name):
                graph = case.graph()
                model = onnx_export.to_onnx(graph, case.dims)
                self.assertEqual(len(model.graph.node), len(graph.nodes))
                inputs = case.inputs(graph)
                for vi in model.graph.input:
                    dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
                    self.assertEqual(tuple(dims), inputs[vi.name].shape)

    def test_dynamic_dim_stays_symbolic(self):
        model = onnx_export.to_onnx(cases.example_graph("bert_layer"), {"B": 1})
        x = model.graph.input[0].type.tensor_type.shape.dim
        self.assertEqual((x[0].dim_value, x[1].dim_param, x[2].dim_value), (1, "T", 768))
        out = model.graph.output[0].type.tensor_type
        self.assertEqual(out.elem_type, onnx.TensorProto.FLOAT)
        with self.assertRaisesRegex(onnx_export.ExportError, "no dim"):
            onnx_export.to_onnx(cases.example_graph("bert_layer"), {"S": 1})

    def test_matmul_bias_gelu_matches_numpy(self):
        text = (
            "graph g\ninput x: f32[3, 8]\nconst w: f32[8, 5] = randn(seed=1, std=0.5)\n"
            "const b: f32[5] = randn(seed=2, std=0.5)\nmm = MatMul(x, w)\nh = Add(mm, b)\n"
            'y = Gelu(h) {approximate="none"}\noutput y'
        )
        graph = fusor_text.parse_graph(text)
        w, b = (c.materialize() for c in graph.constants)
        x = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)
        expected = _erf_gelu((x @ w + b).astype(np.float64))
        for gelu in ("native", "erf"):
            with self.subTest(gelu=gelu):
                (y,) = _run_reference(onnx_export.to_onnx(graph, gelu=gelu), {"x": x})
                np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)

    def test_conv_bn_relu_matches_numpy(self):
        text = (
            "graph g\ninput x: f32[1, 2, 5, 5]\nconst w: f32[3, 2, 3, 3] = randn(seed=1, std=0.3)\n"
            "const g: f32[3] = uniform(seed=2, low=0.5, high=1.5)\nconst beta: f32[3] = randn(seed=3, std=0.1)\n"
            "const mu: f32[3] = randn(seed=4, std=0.1)\nconst var: f32[3] = uniform(seed=5, low=0.5, high=1.5)\n"
            "c = Conv(x, w) {pads=[1, 1, 1, 1]}\nbn = BatchNormalization(c, g, beta, mu, var) {epsilon=1e-05}\n"
            "y = Relu(bn)\noutput y"
        )
        graph = fusor_text.parse_graph(text)
        w, g, beta, mu, var = (c.materialize().astype(np.float64) for c in graph.constants)
        x = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
        xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
        conv = np.zeros((1, 3, 5, 5))
        for i in range(5):
            for j in range(5):
                conv[0, :, i, j] = np.tensordot(w, xp[0, :, i : i + 3, j : j + 3], axes=([1, 2, 3], [0, 1, 2]))
        r = lambda v: v.reshape(1, 3, 1, 1)  # noqa: E731
        expected = np.maximum((conv - r(mu)) / np.sqrt(r(var) + 1e-5) * r(g) + r(beta), 0)
        (y,) = _run_reference(onnx_export.to_onnx(graph), {"x": x})
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-5)

    def test_attributes_follow_the_onnx_schema(self):
        text = (
            "graph g\ninput x: f32[2, 6]\nconst g: f32[6] = fill(1.0)\n"
            "ln = LayerNormalization(x, g) {epsilon=1}\n"  # an int where ONNX wants a float
            "m = ReduceMean(ln) {axes=[-1], keepdims=1}\n"  # axes: an input since opset 18
            'h = Cast(m) {to="f16"}\noutput h'
        )
        model = onnx_export.to_onnx(fusor_text.parse_graph(text))
        ln, mean, cast = model.graph.node
        self.assertEqual(ln.attribute[0].type, onnx.AttributeProto.FLOAT)
        self.assertEqual(len(mean.input), 2)
        self.assertEqual([a.name for a in mean.attribute], ["keepdims"])
        self.assertEqual(cast.attribute[0].i, onnx.TensorProto.FLOAT16)
        x = np.random.default_rng(0).standard_normal((2, 6)).astype(np.float32)
        (h,) = _run_reference(model, {"x": x})
        self.assertEqual((h.dtype, h.shape), (np.float16, (2, 1)))

    def test_unknown_attribute_is_refused(self):
        graph = fusor_text.parse_graph("graph g\ninput x: f32[2]\ny = Relu(x) {alpha=1.0}\noutput y")
        with self.assertRaisesRegex(onnx_export.ExportError, "no attribute 'alpha'"):
            onnx_export.to_onnx(graph)

    @unittest.skipUnless(torch is not None, "torch is not installed (scripts/bench-vs-peers.sh --with-torch)")
    def test_torch_module_matches_onnx(self):
        import torch_module

        text = cases._conv_bn_relu(4, 8, 3, 6, residual=True)
        for graph, dims in [(fusor_text.parse_graph(text), {}), (cases.example_graph("bert_layer"), {"B": 1, "T": 5})]:
            with self.subTest(graph=graph.name):
                case = cases.Case(graph.name, lambda g=graph: g, dims, ("mask",))
                feeds = case.inputs(graph)
                (expected,) = _run_reference(onnx_export.to_onnx(graph, dims), feeds)
                module = torch_module.GraphModule(graph, dims).eval()
                with torch.no_grad():
                    got = module(*[torch.from_numpy(feeds[i.name]) for i in graph.inputs]).numpy()
                np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


if __name__ == "__main__":
    if not HAVE_ONNX:
        print("skipped: numpy and onnx are needed (build-peers/venv/bin/python has them)", file=sys.stderr)
        sys.exit(77)
    unittest.main()
