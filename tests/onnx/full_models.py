#!/usr/bin/env python3
"""Runs full-size exports of BERT-base, GPT-2 small and ResNet-50 on fusor against ONNX Runtime.

The committed fixtures of tests/onnx/models (make_models.py) are tiny configurations; this
script checks the real sizes, which are too large to commit:

    HuggingFace BertModel(BertConfig())   12 layers, hidden 768   -> last_hidden_state
    HuggingFace GPT2Model(GPT2Config())   12 layers, hidden 768   -> last_hidden_state
    torchvision resnet50(weights=None)    224x224, 1000 classes   -> logits

all with seeded random weights (ResNet-50's BatchNorm statistics randomized too), each
exported by the TorchScript exporter (opset 17, dynamo=False) and by torch.export (opset
18, dynamo=True). Inputs input_ids, attention_mask -> y (text, axes batch and sequence) and
x -> y (image, axis batch), as make_models.py names them.

Cases: text at (batch, sequence) = (1, 128) and (2, 37) with the second row padded after
20 tokens (attention_mask zeros); image at batch 1, 224x224. ONNX Runtime's outputs are the
reference; the fusor binary runs every case on each backend, and a case passes when every
element is within fusor's documented tolerance |got - want| <= 1e-4*|want| + 1e-5*max|want|
(tests/onnx/models_test.cpp), i.e. when the largest ratio of |got - want| to that bound is
at most 1. The result is a markdown table on stdout; progress goes to stderr.

Files, under OUT/<model>_<exporter>/: model.onnx [model.onnx.data], cases/<case>/*.npy
(inputs and ONNX Runtime's outputs), fusor/<case>_<backend>/*.npy and .log (fusor's).

Needs torch, torchvision, transformers, onnx and onnxruntime. Usage:
    full_models.py --fusor BUILD/fusor [--out DIR] [--backends static,llvm,asmjit]
                   [--models bert,gpt2,resnet50] [--exporters ts,dynamo] [--reuse]
--reuse keeps the exports and references already under OUT (exporting takes minutes).
"""

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")

MODELS = ("bert", "gpt2", "resnet50")
EXPORTERS = ("ts", "dynamo")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build(name):
    """(kind, module, max sequence) of a model: seeded random weights, eval mode."""
    import torch

    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(weights=None)
        gen = torch.Generator().manual_seed(1)
        with torch.no_grad():  # non-trivial statistics: fresh ones (0, 1) would hide folding mistakes
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
                    m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                    m.weight.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
        return "image", model.eval(), None
    import transformers

    if name == "bert":
        inner, limit = transformers.BertModel(transformers.BertConfig()), 512
    else:
        inner, limit = transformers.GPT2Model(transformers.GPT2Config()), 1024

    class Text(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            kw = {"use_cache": False} if name == "gpt2" else {}
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state

    return "text", Text().eval(), limit


def export(kind, model, limit, path, dynamo):
    import torch

    if kind == "text":
        args = (torch.randint(0, 1000, (2, 16)), torch.ones(2, 16, dtype=torch.long))
        names, axes = ["input_ids", "attention_mask"], {0: "batch", 1: "sequence"}
    else:
        args, names, axes = (torch.randn(2, 3, 224, 224),), ["x"], {0: "batch"}
    if dynamo:
        dims = {a: torch.export.Dim(n, min=1, max=limit or 64) for a, n in axes.items()}
        torch.onnx.export(model, args, path, input_names=names, output_names=["y"], dynamo=True,
                          opset_version=18, dynamic_shapes={n: dims for n in names})
    else:
        torch.onnx.export(model, args, path, input_names=names, output_names=["y"], dynamo=False,
                          opset_version=17, dynamic_axes={**{n: axes for n in names}, "y": {0: "batch"}})


def cases(kind, vocab):
    """{case: ({input: array}, {dim: size})}, seeded."""
    rng = np.random.default_rng(7)
    if kind == "image":
        return {"b1_224": ({"x": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}, {"batch": 1})}
    out = {}
    for case, b, t, pad in (("b1_t128", 1, 128, None), ("b2_t37_pad20", 2, 37, 20)):
        ids = rng.integers(0, vocab, size=(b, t), dtype=np.int64)
        mask = np.ones((b, t), dtype=np.int64)
        if pad is not None:
            mask[1, pad:] = 0
            ids[1, pad:] = 0
        out[case] = ({"input_ids": ids, "attention_mask": mask}, {"batch": b, "sequence": t})
    return out


def prepare(name, exporter, where):
    """Exports one model and writes its cases with ONNX Runtime's outputs."""
    import onnx
    import onnxruntime as ort

    kind, model, limit = build(name)
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    path = os.path.join(where, "model.onnx")
    start = time.time()
    with contextlib.redirect_stdout(sys.stderr):  # the exporter's progress lines: keep stdout the table
        export(kind, model, limit, path, exporter == "dynamo")
    onnx.checker.check_model(path)  # by path: works past 2 GiB and with external data
    log(f"  exported in {time.time() - start:.0f} s")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    vocab = getattr(getattr(model, "inner", None), "config", None)
    for case, (feeds, dims) in cases(kind, vocab.vocab_size if vocab else 0).items():
        cdir = os.path.join(where, "cases", case)
        os.makedirs(cdir)
        for k, v in list(feeds.items()) + list(zip(outputs, session.run(None, feeds))):
            np.save(os.path.join(cdir, k + ".npy"), v)
    del session, model


def run_fusor(fusor, where, case, inputs, dims, backend, repeat, timeout):
    """Runs one case; returns (saved outputs dir, median ms, error or None)."""
    save = os.path.join(where, "fusor", f"{case}_{backend}")
    shutil.rmtree(save, ignore_errors=True)
    os.makedirs(save)
    cmd = [fusor, "run", os.path.join(where, "model.onnx"), "--backend", backend, "--save", save,
           "--no-disk-cache", "--repeat", str(repeat)]
    cmd += [a for d, n in dims.items() for a in ("--dim", f"{d}={n}")]
    cmd += [a for i in inputs for a in ("--input", f"{i}={os.path.join(where, 'cases', case, i + '.npy')}")]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return save, None, f"timed out after {timeout} s"
    text = p.stdout + p.stderr
    with open(save + ".log", "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    if p.returncode != 0:
        return save, None, f"exit {p.returncode}: " + " | ".join(text.strip().splitlines()[-3:])
    m = re.search(r"(\d+) timed runs?: median ([0-9.]+) ms", text)
    return save, float(m.group(2)) if m else None, None


def compare(got, want):
    """(max |got - want|, max |want|, max ratio to the tolerance)."""
    d = np.abs(got.astype(np.float64) - want.astype(np.float64))
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    bound = 1e-4 * np.abs(want.astype(np.float64)) + 1e-5 * scale
    ratio = float(np.max(np.where(d == 0, 0.0, d / np.maximum(bound, 1e-30)))) if d.size else 0.0
    if not np.all(np.isfinite(got)):
        ratio = float("inf")
    return float(np.max(d)) if d.size else 0.0, scale, ratio


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fusor", default="fusor", help="the fusor binary (default: fusor on PATH)")
    ap.add_argument("--out", default="/work/bigmodels", help="where the exports go")
    ap.add_argument("--backends", default="static,llvm,asmjit")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--exporters", default=",".join(EXPORTERS))
    ap.add_argument("--reuse", action="store_true", help="keep exports already under --out")
    ap.add_argument("--repeat", type=int, default=3, help="fusor's timed runs (median reported)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds per fusor run")
    args = ap.parse_args()
    backends = args.backends.split(",")
    rows, failed = [], 0
    for exporter in args.exporters.split(","):  # every TorchScript export first: the quick ones
        for name in args.models.split(","):
            where = os.path.join(args.out, f"{name}_{exporter}")
            log(f"{name} {exporter}")
            if not (args.reuse and os.path.isdir(os.path.join(where, "cases"))):
                try:
                    prepare(name, exporter, where)
                except Exception as e:  # an exporter that cannot take the model: say so, go on
                    rows.append([name, exporter, "-", "-", "-", "-", "-", f"export failed: {type(e).__name__}: "
                                 f"{str(e).splitlines()[0][:200] if str(e) else ''}"])
                    failed += 1
                    continue
            kind = "image" if name == "resnet50" else "text"
            outputs = ["y"]
            for case, (feeds, dims) in cases(kind, 2).items():  # only the names and dims of the inputs
                cdir = os.path.join(where, "cases", case)
                for backend in backends:
                    save, ms, err = run_fusor(args.fusor, where, case, feeds, dims, backend, args.repeat,
                                              args.timeout)
                    cells = [name, exporter, case, backend]
                    if err is None and not all(os.path.exists(os.path.join(save, o + ".npy")) for o in outputs):
                        err = "no output saved"
                    if err is not None:
                        rows.append(cells + ["-", "-", "-", "FAIL: " + err.replace("|", "/")])
                        failed += 1
                        log(f"  {case} {backend}: {err}")
                        continue
                    worst = (0.0, 0.0, 0.0)
                    for o in outputs:
                        got, want = np.load(os.path.join(save, o + ".npy")), np.load(os.path.join(cdir, o + ".npy"))
                        if got.shape != want.shape:
                            worst = (float("inf"), 0.0, float("inf"))
                            break
                        worst = max(worst, compare(got, want), key=lambda r: r[2])
                    ok = worst[2] <= 1.0
                    failed += not ok
                    rows.append(cells + [f"{worst[0]:.3g} (max ref {worst[1]:.3g})", f"{worst[2]:.3g}",
                                         f"{ms:.1f}" if ms is not None else "?", "pass" if ok else "FAIL"])
                    log(f"  {case} {backend}: " + " ".join(rows[-1][4:]))
    header = ["model", "exporter", "case", "backend", "max abs diff", "tolerance ratio", "median ms", "result"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
