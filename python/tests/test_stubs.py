"""The type stubs (fusor/_fusor.pyi) name every public member of the extension module and of
its classes, and nothing it lacks."""

import ast
import pathlib

import fusor
from fusor import _fusor

STUB = pathlib.Path(fusor.__file__).with_name("_fusor.pyi")
ALIASES = {"Dim", "Path", "ArrayLike", "GraphLike"}


def stubbed():
    tree = ast.parse(STUB.read_text())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
        if isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return names - ALIASES, members


def test_the_stubs_match_the_module():
    names, members = stubbed()
    public = {n for n in dir(_fusor) if not n.startswith("__") or n == "__version__"}
    assert names == public
    for cls in ("Engine", "Graph"):
        have = {n for n in dir(getattr(_fusor, cls)) if not n.startswith("_")}
        assert members[cls] - {"__init__"} == have, cls


def test_the_package_exports_the_api():
    assert set(fusor.__all__) <= set(dir(fusor))
    assert {"Engine", "InferenceSession", "load_onnx", "parse_graph", "Graph", "Error"} <= set(fusor.__all__)
