"""Converts a fusor graph (fusor_text.Graph) to an ONNX model, for the peer harness.

fusor's operators are ONNX operators with ONNX attributes (ir/ops.def), so the conversion
is node for node. What differs is settled here, against the ONNX schema of the target
opset (onnx.defs), never per operator by hand where the schema can tell:

- attribute types: an int where the schema wants a float becomes a float, `[]` takes the
  schema's list type (fusor's parser does the same with its own schemas);
- attributes that later opsets moved to inputs (`axes` of ReduceMean/ReduceMax at opset 18,
  of ReduceSum/Squeeze/Unsqueeze at 13) become constant inputs at the schema's position;
- Cast's `to` is a fusor dtype name ("f16"), not ONNX's enum;
- Gelu is ONNX's Gelu (opset 20) by default; `gelu="erf"` writes it as the erf formula
  x * 0.5 * (1 + erf(x / sqrt 2)) (the tanh formula for approximate="tanh"), the pattern
  exporters emit and runtimes fuse, for a runtime that does better with it.

Named input dims are bound to sizes from `dims`; a name left unbound stays a symbolic ONNX
dim (dim_param), e.g. a dynamic sequence length. Output types come from ONNX shape
inference, and the model is checked before it is returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import fusor_text

DEFAULT_OPSET = 20  # the first with Gelu; LayerNormalization is 17

_ELEM_TYPE = {
    "f32": TensorProto.FLOAT,
    "f16": TensorProto.FLOAT16,
    "bf16": TensorProto.BFLOAT16,
    "i64": TensorProto.INT64,
    "i32": TensorProto.INT32,
    "bool": TensorProto.BOOL,
}


class ExportError(ValueError):
    """A graph this converter cannot express in ONNX at the requested opset."""


def _tensor(name: str, dtype: str, values: np.ndarray) -> TensorProto:
    if dtype == "bf16":  # NumPy holds bf16 constants as f32; ONNX rounds them
        return helper.make_tensor(name, TensorProto.BFLOAT16, values.shape, values.astype(np.float32).ravel())
    return numpy_helper.from_array(np.ascontiguousarray(values), name)


def _coerce(node: fusor_text.Node, key: str, value, attr_type: int):
    """`value` as the schema's attribute type."""
    A = onnx.AttributeProto
    try:
        if attr_type == A.FLOAT:
            return float(value)
        if attr_type == A.INT:
            if isinstance(value, float) and not value.is_integer():
                raise TypeError
            return int(value)
        if attr_type == A.FLOATS:
            return [float(v) for v in value]
        if attr_type == A.INTS:
            return [int(v) for v in value]
        if attr_type == A.STRING:
            if not isinstance(value, str):
                raise TypeError
            return value
    except (TypeError, ValueError):
        pass
    raise ExportError(
        f"node '{node.name}' ({node.op}): attribute {key}={value!r} does not fit ONNX type "
        f"{onnx.AttributeProto.AttributeType.Name(attr_type)}"
    )


class _Exporter:
    def __init__(self, graph: fusor_text.Graph, opset: int, gelu: str):
        if gelu not in ("native", "erf"):
            raise ValueError(f"gelu must be 'native' or 'erf', not {gelu!r}")
        self.g, self.opset, self.gelu = graph, opset, gelu
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.taken = {i.name for i in graph.inputs} | {c.name for c in graph.constants}
        for n in graph.nodes:
            self.taken.update(n.outputs)

    def fresh(self, hint: str) -> str:
        """A value name not used by the graph."""
        name, i = hint, 0
        while name in self.taken:
            i += 1
            name = f"{hint}_{i}"
        self.taken.add(name)
        return name

    def scalar(self, hint: str, value: float) -> str:
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
        return name

    def node(self, n: fusor_text.Node) -> None:
        if n.op == "Gelu" and self.gelu == "erf":
            self.gelu_formula(n)
            return
        try:
            schema = onnx.defs.get_schema(n.op, self.opset, "")
        except onnx.defs.SchemaError:
            raise ExportError(f"node '{n.name}': {n.op} is not an ONNX operator at opset {self.opset}") from None
        inputs = ["" if i is None else i for i in n.inputs]
        attrs = {}
        formal_inputs = [f.name for f in schema.inputs]
        for key, value in n.attrs.items():
            if n.op == "Cast" and key == "to":
                if value not in _ELEM_TYPE:
                    raise ExportError(f"node '{n.name}': Cast to unknown dtype {value!r}")
                attrs["to"] = _ELEM_TYPE[value]
            elif key in schema.attributes:
                attrs[key] = _coerce(n, key, value, schema.attributes[key].type)
            elif key in formal_inputs:  # an attribute this opset takes as an input
                pos = formal_inputs.index(key)
                if pos < len(inputs) and inputs[pos]:
                    raise ExportError(f"node '{n.name}' ({n.op}): '{key}' given both as attribute and input")
                const = self.fresh(f"{n.name}.{key}")
                self.initializers.append(numpy_helper.from_array(np.array(value, dtype=np.int64), const))
                inputs += [""] * (pos + 1 - len(inputs))
                inputs[pos] = const
            else:
                raise ExportError(f"node '{n.name}' ({n.op}): ONNX opset {self.opset} has no attribute '{key}'")
        while inputs and inputs[-1] == "":  # trailing omitted optionals are simply absent
            inputs.pop()
        self.nodes.append(helper.make_node(n.op, inputs, list(n.outputs), name=n.name, **attrs))

    def gelu_formula(self, n: fusor_text.Node) -> None:
        """Gelu as framework exporters write it, the form ORT's and OpenVINO's Gelu fusions match."""
        (x,), (y,) = n.inputs, n.outputs
        approx = n.attrs.get("approximate", "none")

        def t(suffix: str) -> str:
            return self.fresh(f"{n.name}/{suffix}")

        one, half = self.scalar(f"{n.name}/one", 1.0), self.scalar(f"{n.name}/half", 0.5)
        if approx == "none":
            div, erf, add, mul = t("div"), t("erf"), t("add"), t("mul")
            sqrt2 = self.scalar(f"{n.name}/sqrt2", math.sqrt(2.0))
            self.nodes += [
                helper.make_node("Div", [x, sqrt2], [div], name=div),
                helper.make_node("Erf", [div], [erf], name=erf),
                helper.make_node("Add", [erf, one], [add], name=add),
                helper.make_node("Mul", [x, add], [mul], name=mul),
                helper.make_node("Mul", [mul, half], [y], name=n.name),
            ]
        elif approx == "tanh":
            names = [t(s) for s in ("pow", "mul_c", "add_x", "mul_k", "tanh", "add_1", "mul_x")]
            three = self.scalar(f"{n.name}/three", 3.0)
            c = self.scalar(f"{n.name}/c", 0.044715)
            k = self.scalar(f"{n.name}/k", math.sqrt(2.0 / math.pi))
            pw, mc, ax, mk, th, a1, mx = names
            self.nodes += [
                helper.make_node("Pow", [x, three], [pw], name=pw),
                helper.make_node("Mul", [pw, c], [mc], name=mc),
                helper.make_node("Add", [x, mc], [ax], name=ax),
                helper.make_node("Mul", [ax, k], [mk], name=mk),
                helper.make_node("Tanh", [mk], [th], name=th),
                helper.make_node("Add", [th, one], [a1], name=a1),
                helper.make_node("Mul", [x, a1], [mx], name=mx),
                helper.make_node("Mul", [mx, half], [y], name=n.name),
            ]
        else:
            raise ExportError(f"node '{n.name}': Gelu approximate={approx!r}")


def to_onnx(
    graph: fusor_text.Graph,
    dims: Mapping[str, int] | None = None,
    *,
    opset: int = DEFAULT_OPSET,
    gelu: str = "native",
) -> onnx.ModelProto:
    """The ONNX model of `graph`: named input dims bound from `dims` (unbound names stay
    symbolic), constants as initializers, nodes one for one (see the module comment).
    Raises ExportError for what ONNX cannot express; the model passes onnx.checker."""
    dims = dict(dims or {})
    unknown = set(dims) - set(graph.dim_names())
    if unknown:
        raise ExportError(f"graph '{graph.name}' has no dim {sorted(unknown)} (its dims: {graph.dim_names()})")
    ex = _Exporter(graph, opset, gelu)
    inputs = [
        helper.make_tensor_value_info(i.name, _ELEM_TYPE[i.dtype], [dims.get(d, d) if isinstance(d, str) else d for d in i.dims])
        for i in graph.inputs
    ]
    initializers = [_tensor(c.name, c.dtype, c.materialize()) for c in graph.constants]
    for n in graph.nodes:
        ex.node(n)
    outputs = [helper.make_empty_tensor_value_info(o) for o in graph.outputs]
    body = helper.make_graph(ex.nodes, graph.name or "graph", inputs, outputs, initializers + ex.initializers)
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(body, opset_imports=opsets, producer_name="fusor-bench-peers")
    model.ir_version = helper.find_min_ir_version_for(opsets)
    # Output types (and shapes, where static) from ONNX's own inference.
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for out in model.graph.output:
        if out.name in known and known[out.name].type.HasField("tensor_type"):
            out.type.CopyFrom(known[out.name].type)
        else:
            raise ExportError(f"graph '{graph.name}': ONNX shape inference gives no type for output '{out.name}'")
    onnx.checker.check_model(model, full_check=True)
    return model
