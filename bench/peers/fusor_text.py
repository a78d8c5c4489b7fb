"""A reader for fusor's text graph format (ir/text_format.h), for the peer harness.

It parses the same grammar as the C++ parser -- `graph`, `input`, `const` (randn, uniform,
fill, inline lists, npy), node lines `outs = Op(inputs) {attrs} [as name]` with `_` for an
omitted input, and `output` -- into plain Python data, so that the graphs fusor benchmarks
can be rebuilt for other runtimes (onnx_export.py, torch_module.py). It checks what the
harness relies on (syntax, values defined before use, names unique, inline data of the right
length) and leaves operator semantics to the consumer: the ops are ONNX ops with ONNX
attributes.

Attribute values keep the type their text gives (int, float, str, a list of ints or of
floats); the consumer coerces them to its schema (an int where a float is wanted, the type
of `[]`), as fusor's parser does with its own schemas.

Constants made from a recipe are materialized with NumPy's generator seeded by the
recipe's seed: the same distribution as fusor's, not the same values (the harness measures
time, for which only shapes and sane magnitudes matter).
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Union

import numpy as np

Dim = Union[int, str]  # a size, or a name bound at run time
AttrValue = Union[int, float, str, list]

# fusor dtype name -> NumPy dtype.
DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(np.float32),  # NumPy has no bfloat16: values are held as f32
    "i64": np.dtype(np.int64),
    "i32": np.dtype(np.int32),
    "bool": np.dtype(np.bool_),
}


class ParseError(ValueError):
    """A syntax or reference error, as "source:line:col: message"."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How a constant's values are made: randn / uniform / fill, inline data, or an .npy file."""

    kind: str  # "randn", "uniform", "fill", "data" or "npy"
    seed: int = 0
    a: float = 0.0  # randn: std; uniform: low; fill: the value
    b: float = 0.0  # randn: mean; uniform: high
    data: tuple = ()  # "data": the values, row-major
    path: str = ""  # "npy": the file, already resolved against the graph's folder


@dataclasses.dataclass(frozen=True)
class Input:
    """`input NAME: DTYPE[dims]`."""

    name: str
    dtype: str
    dims: tuple[Dim, ...]


@dataclasses.dataclass(frozen=True)
class Constant:
    """`const NAME: DTYPE[dims] = recipe`."""

    name: str
    dtype: str
    dims: tuple[int, ...]
    recipe: Recipe

    def materialize(self) -> np.ndarray:
        """The constant's values as a NumPy array of its dtype and shape."""
        dt, shape, r = DTYPES[self.dtype], self.dims, self.recipe
        if r.kind == "data":
            return np.array(r.data, dtype=dt).reshape(shape)
        if r.kind == "fill":
            return np.full(shape, r.a, dtype=dt)
        if r.kind == "npy":
            arr = np.load(r.path, allow_pickle=False)
            if tuple(arr.shape) != shape:
                raise ValueError(f"constant '{self.name}': {r.path} holds shape {arr.shape}, declared {shape}")
            return arr.astype(dt, copy=False)
        rng = np.random.default_rng(r.seed)
        if r.kind == "randn":
            values = rng.normal(r.b, r.a, size=shape)
        else:
            values = rng.uniform(r.a, r.b, size=shape)
        return values.astype(dt)


@dataclasses.dataclass(frozen=True)
class Node:
    """`outs = Op(inputs) {attrs} [as name]`; an omitted input is None."""

    op: str
    inputs: tuple[str | None, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, AttrValue]
    name: str


@dataclasses.dataclass
class Graph:
    """A parsed graph: declarations and nodes in the order of the text."""

    name: str = ""
    inputs: list[Input] = dataclasses.field(default_factory=list)
    constants: list[Constant] = dataclasses.field(default_factory=list)
    nodes: list[Node] = dataclasses.field(default_factory=list)
    outputs: list[str] = dataclasses.field(default_factory=list)

    def dim_names(self) -> list[str]:
        """The named dims of the inputs, in order of first use."""
        seen: dict[str, None] = {}
        for i in self.inputs:
            for d in i.dims:
                if isinstance(d, str):
                    seen.setdefault(d)
        return list(seen)


def _is_name_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "_./:-")


def _is_float_text(s: str) -> bool:
    return any(ch in s for ch in ".eE") or "inf" in s or "nan" in s


class _Lexer:
    """One line's tokens. Names are read only where the grammar expects one (name());
    everything else through next(): ("num", text), ("str", value), ("punct", c), ("word",
    text) or ("end", "")."""

    def __init__(self, line: str, source: str, line_no: int):
        self.line, self.pos, self.source, self.line_no = line, 0, source, line_no

    def fail(self, message: str, col: int | None = None) -> ParseError:
        return ParseError(f"{self.source}:{self.line_no}:{(self.pos if col is None else col) + 1}: {message}")

    def _skip_space(self) -> None:
        while self.pos < len(self.line) and self.line[self.pos] in " \t":
            self.pos += 1
        if self.pos < len(self.line) and self.line[self.pos] == "#":
            self.pos = len(self.line)

    def peek_char(self) -> str:
        self._skip_space()
        return self.line[self.pos] if self.pos < len(self.line) else ""

    def name(self) -> str:
        """The longest run of name characters; a ':' only when a name character follows it."""
        self._skip_space()
        start, line = self.pos, self.line
        while self.pos < len(line) and _is_name_char(line[self.pos]):
            if line[self.pos] == ":" and not (self.pos + 1 < len(line) and _is_name_char(line[self.pos + 1])):
                break
            self.pos += 1
        return line[start : self.pos]

    def next(self) -> tuple[str, str]:
        self._skip_space()
        line = self.line
        if self.pos >= len(line):
            return ("end", "")
        c = line[self.pos]
        c1 = line[self.pos + 1] if self.pos + 1 < len(line) else ""
        if (c.isascii() and c.isalpha()) or c == "_":
            return ("word", self.name())
        if c.isdigit() or (c == "." and c1.isdigit()) or (c in "+-" and (c1.isalnum() or c1 == ".")):
            start = self.pos
            self.pos += 1
            while self.pos < len(line):
                ch = line[self.pos]
                exp_sign = ch in "+-" and line[self.pos - 1] in "eE"
                if not ((ch.isascii() and ch.isalnum()) or ch in "._" or exp_sign):
                    break
                self.pos += 1
            return ("num", line[start : self.pos])
        if c == '"':
            start, out = self.pos, []
            self.pos += 1
            while True:
                if self.pos >= len(line):
                    raise self.fail("unterminated string", start)
                ch = line[self.pos]
                self.pos += 1
                if ch == '"':
                    return ("str", "".join(out))
                if ch == "\\":
                    if self.pos >= len(line) or line[self.pos] not in '"\\':
                        raise self.fail('unknown escape in string (only \\" and \\\\ are escapes)')
                    ch = line[self.pos]
                    self.pos += 1
                out.append(ch)
        if c in ":[](){},=":
            self.pos += 1
            return ("punct", c)
        raise self.fail(f"unexpected character {c!r}")

    def peek(self) -> tuple[str, str]:
        save = self.pos
        tok = self.next()
        self.pos = save
        return tok

    def expect(self, c: str, context: str) -> None:
        tok = self.next()
        if tok != ("punct", c):
            raise self.fail(f"expected '{c}' {context}, found {tok[1] or 'end of line'!r}")

    def expect_name(self, what: str) -> str:
        n = self.name()
        if not n:
            raise self.fail(f"expected {what}")
        return n

    def expect_end(self) -> None:
        tok = self.next()
        if tok[0] != "end":
            raise self.fail(f"expected end of line, found {tok[1]!r}")


def _number(lx: _Lexer, tok: tuple[str, str], what: str) -> int | float:
    """An int, or a float when its text has '.', 'e', inf or nan."""
    kind, text = tok
    if kind == "word" and text in ("inf", "nan"):
        return float(text)
    if kind != "num":
        raise lx.fail(f"expected {what} (a number), found {text or 'end of line'!r}")
    try:
        return float(text) if _is_float_text(text) else int(text)
    except ValueError:
        raise lx.fail(f"bad number {text!r}") from None


def _int(lx: _Lexer, tok: tuple[str, str], what: str) -> int:
    v = _number(lx, tok, what)
    if not isinstance(v, int):
        raise lx.fail(f"expected {what} (an integer), found {tok[1]!r}")
    return v


class _Parser:
    def __init__(self, base_dir: str, source: str):
        self.base_dir, self.source = base_dir, source
        self.g = Graph()
        self.defined: set[str] = set()
        self.node_names: set[str] = set()

    def parse(self, text: str) -> Graph:
        for line_no, line in enumerate(text.split("\n"), start=1):
            self._statement(_Lexer(line.rstrip("\r"), self.source, line_no))
        if not self.g.outputs:
            raise ParseError(f"{self.source}: the graph has no output")
        return self.g

    def _claim(self, lx: _Lexer, name: str) -> str:
        if name == "_":
            raise lx.fail("'_' marks an omitted input and cannot name a value")
        if name in self.defined:
            raise lx.fail(f"value '{name}' is already defined")
        self.defined.add(name)
        return name

    def _use(self, lx: _Lexer, name: str) -> str:
        if name not in self.defined:
            raise lx.fail(f"undefined value '{name}' (values must be defined before use)")
        return name

    def _statement(self, lx: _Lexer) -> None:
        first = lx.name()
        if not first:
            if lx.peek()[0] == "end":
                return  # blank or comment
            raise lx.fail("expected a statement (graph, input, const, output or `outs = Op(...)`)")
        keyword = lx.peek_char() not in ("=", ",")
        if keyword and first == "graph":
            self.g.name = lx.expect_name("a graph name")
        elif keyword and first == "input":
            name, dtype, dims = self._declaration(lx, symbols=True)
            self.g.inputs.append(Input(name, dtype, dims))
        elif keyword and first == "const":
            self._const(lx)
        elif keyword and first == "output":
            while True:
                name = self._use(lx, lx.expect_name("an output value name"))
                if name in self.g.outputs:
                    raise lx.fail(f"value '{name}' is already an output")
                self.g.outputs.append(name)
                if lx.peek() != ("punct", ","):
                    break
                lx.next()
        else:
            self._node(lx, first)
        lx.expect_end()

    def _declaration(self, lx: _Lexer, symbols: bool) -> tuple[str, str, tuple[Dim, ...]]:
        name = self._claim(lx, lx.expect_name("a value name"))
        lx.expect(":", f"after '{name}'")
        kind, dtype = lx.next()
        if kind != "word" or dtype not in DTYPES:
            raise lx.fail(f"unknown dtype {dtype!r} (expected one of {', '.join(DTYPES)})")
        lx.expect("[", "to start the dimensions")
        dims: list[Dim] = []
        if lx.peek() == ("punct", "]"):
            lx.next()
            return name, dtype, ()
        while True:
            c = lx.peek_char()
            if c.isdigit() or c in "+-":
                d = _int(lx, lx.next(), "a dimension")
                if d < 0:
                    raise lx.fail(f"dimension {d} is negative")
                dims.append(d)
            elif c and _is_name_char(c):
                if not symbols:
                    raise lx.fail("a constant's dimensions must be integers")
                dims.append(lx.name())
            else:
                raise lx.fail("expected a dimension (an integer or a name)")
            sep = lx.next()
            if sep == ("punct", "]"):
                return name, dtype, tuple(dims)
            if sep != ("punct", ","):
                raise lx.fail("expected ',' or ']' after a dimension")

    def _const(self, lx: _Lexer) -> None:
        name, dtype, dims = self._declaration(lx, symbols=False)
        lx.expect("=", "before the constant's value")
        kind, text = lx.next()
        numel = math.prod(dims)  # () -> 1, a scalar
        if (kind, text) == ("punct", "["):
            values: list = []
            if lx.peek() != ("punct", "]"):
                while True:
                    tok = lx.next()
                    if dtype == "bool" and tok in (("word", "true"), ("word", "false")):
                        values.append(tok[1] == "true")
                    else:
                        values.append(_number(lx, tok, f"a {dtype} value"))
                    sep = lx.next()
                    if sep == ("punct", "]"):
                        break
                    if sep != ("punct", ","):
                        raise lx.fail("expected ',' or ']' after a value")
            else:
                lx.next()
            if len(values) != numel:
                raise lx.fail(f"expected {numel} values for {dtype}{list(dims)}, found {len(values)}")
            recipe = Recipe("data", data=tuple(values))
        elif kind == "word" and text in ("randn", "uniform", "fill"):
            recipe = self._recipe(lx, text)
        elif kind == "word" and text == "npy":
            lx.expect("(", "after npy")
            pk, path = lx.next()
            if pk != "str":
                raise lx.fail('expected a "path"')
            lx.expect(")", "after the npy path")
            recipe = Recipe("npy", path=path if os.path.isabs(path) else os.path.join(self.base_dir, path))
        else:
            raise lx.fail('expected randn(...), uniform(...), fill(...), npy("...") or [values]')
        self.g.constants.append(Constant(name, dtype, tuple(int(d) for d in dims), recipe))

    def _recipe(self, lx: _Lexer, kind: str) -> Recipe:
        lx.expect("(", f"after {kind}")
        if kind == "fill":
            value = float(_number(lx, lx.next(), "the fill value"))
            lx.expect(")", "after the fill value")
            return Recipe("fill", a=value)
        keys = ("seed", "std", "mean") if kind == "randn" else ("seed", "low", "high")
        args: dict[str, int | float] = {}
        while True:
            key = lx.expect_name("an argument name")
            if key not in keys:
                raise lx.fail(f"unknown argument '{key}' of {kind} (takes {', '.join(keys)})")
            if key in args:
                raise lx.fail(f"argument '{key}' is given twice")
            lx.expect("=", f"after '{key}'")
            args[key] = _number(lx, lx.next(), key)
            sep = lx.next()
            if sep == ("punct", ")"):
                break
            if sep != ("punct", ","):
                raise lx.fail("expected ',' or ')' after an argument")
        required = keys if kind == "uniform" else keys[:2]
        missing = [k for k in required if k not in args]
        if missing:
            raise lx.fail(f"{kind} needs {missing[0]}=")
        seed = args["seed"]
        if not isinstance(seed, int) or seed < 0:
            raise lx.fail("expected a seed (a non-negative integer)")
        if kind == "randn":
            return Recipe("randn", seed=seed, a=float(args["std"]), b=float(args.get("mean", 0.0)))
        return Recipe("uniform", seed=seed, a=float(args["low"]), b=float(args["high"]))

    def _node(self, lx: _Lexer, first: str) -> None:
        outs = [first]
        while lx.peek() == ("punct", ","):
            lx.next()
            outs.append(lx.expect_name("an output name"))
        lx.expect("=", "after the output names")
        kind, op = lx.next()
        if kind != "word":
            raise lx.fail("expected an op type")
        lx.expect("(", f"after {op}")
        inputs: list[str | None] = []
        if lx.peek_char() == ")":
            lx.next()
        else:
            while True:
                n = lx.expect_name("an input name or '_'")
                inputs.append(None if n == "_" else self._use(lx, n))
                sep = lx.next()
                if sep == ("punct", ")"):
                    break
                if sep != ("punct", ","):
                    raise lx.fail("expected ',' or ')' after an input")
        attrs: dict[str, AttrValue] = {}
        if lx.peek() == ("punct", "{"):
            lx.next()
            if lx.peek_char() == "}":
                lx.next()
            else:
                while True:
                    key = lx.expect_name("an attribute name")
                    if key in attrs:
                        raise lx.fail(f"attribute '{key}' is given twice")
                    lx.expect("=", f"after '{key}'")
                    attrs[key] = self._attr_value(lx)
                    sep = lx.next()
                    if sep == ("punct", "}"):
                        break
                    if sep != ("punct", ","):
                        raise lx.fail("expected ',' or '}' after an attribute")
        node_name = ""
        if lx.peek() == ("word", "as"):
            lx.next()
            node_name = lx.expect_name("a node name after 'as'")
        outs = [self._claim(lx, o) for o in outs]
        node_name = node_name or outs[0]
        if node_name in self.node_names:
            raise lx.fail(f"node name '{node_name}' is used twice")
        self.node_names.add(node_name)
        self.g.nodes.append(Node(op, tuple(inputs), tuple(outs), attrs, node_name))

    def _attr_value(self, lx: _Lexer) -> AttrValue:
        tok = lx.next()
        if tok[0] == "str":
            return tok[1]
        if tok != ("punct", "["):
            return _number(lx, tok, "an attribute value")
        elems: list[int | float] = []
        if lx.peek() == ("punct", "]"):
            lx.next()
            return elems
        while True:
            elems.append(_number(lx, lx.next(), "a number in the list"))
            sep = lx.next()
            if sep == ("punct", "]"):
                break
            if sep != ("punct", ","):
                raise lx.fail("expected ',' or ']' in the list")
        if any(isinstance(e, float) for e in elems):
            return [float(e) for e in elems]
        return elems


def parse_graph(text: str, base_dir: str = ".", source: str = "<text>") -> Graph:
    """Parses fusor's text format. `base_dir` resolves relative npy("...") paths; `source`
    names the text in error messages. Raises ParseError."""
    return _Parser(base_dir, source).parse(text)


def load_graph(path: str) -> Graph:
    """Reads and parses a graph file."""
    with open(path, encoding="utf-8") as f:
        return parse_graph(f.read(), os.path.dirname(os.path.abspath(path)), path)
