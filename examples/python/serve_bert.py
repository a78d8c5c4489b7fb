#!/usr/bin/env python3
"""Serves a BERT ONNX export at varying sequence lengths with fusor, beside ONNX Runtime.

    PYTHONPATH=build/python build/venv/bin/python examples/python/serve_bert.py [MODEL.onnx]
        [--lengths 8,16,32,64] [--batch 1] [--reps 20] [--threads 2]

MODEL defaults to the tiny BERT export committed for the tests (tests/onnx/models/bert_ts);
for BERT-base, export one with tests/onnx/full_models.py (HuggingFace BertModel, seeded
random weights: OUT/bert_ts/model.onnx, lengths up to 512; the tiny one takes up to 64). The model's inputs are input_ids and
attention_mask with named dims (batch, sequence), as both PyTorch exporters write them.

fusor's session uses the llvm backend with symbolic_dim="sequence": the first length
compiles symbolic kernels that serve every length at once, while each length's exact kernels
compile in the background and replace them. The table gives, per length, the first call
(what a request of a never-seen length waits), then the median of --reps calls once the
exact kernels are in, for fusor and for ONNX Runtime, and the largest difference between
their outputs.
"""

import argparse
import pathlib
import statistics
import time

import numpy as np
import onnxruntime as ort

import fusor

ROOT = pathlib.Path(__file__).resolve().parents[2]


def timed(run, feeds):
    start = time.perf_counter()
    out = run(None, feeds)
    return (time.perf_counter() - start) * 1e3, out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?", default=ROOT / "tests" / "onnx" / "models" / "bert_ts" / "model.onnx")
    p.add_argument("--lengths", default="8,16,32,64")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()

    ours = fusor.InferenceSession(args.model, threads=args.threads, tiering=True, symbolic_dim="sequence")
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.log_severity_level = 3
    theirs = ort.InferenceSession(str(args.model), sess_options=options, providers=["CPUExecutionProvider"])
    print(f"{args.model}: inputs {[(i.name, i.shape) for i in ours.get_inputs()]}, "
          f"outputs {[(o.name, o.shape) for o in ours.get_outputs()]}")
    print("| sequence | fusor first call ms | fusor ms | ONNX Runtime ms | fusor / ORT | max abs diff |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for length in (int(n) for n in args.lengths.split(",")):
        feeds = {
            "input_ids": rng.integers(0, 100, (args.batch, length), dtype=np.int64),
            "attention_mask": np.ones((args.batch, length), np.int64),
        }
        first_ms, _ = timed(ours.run, feeds)
        ours.engine.drain()  # the exact kernels of this length, swapped in
        mine = statistics.median(timed(ours.run, feeds)[0] for _ in range(args.reps))
        timed(theirs.run, feeds)
        ref = statistics.median(timed(theirs.run, feeds)[0] for _ in range(args.reps))
        diff = float(np.abs(ours.run(None, feeds)[0] - theirs.run(None, feeds)[0]).max())
        print(f"| {length} | {first_ms:.2f} | {mine:.3f} | {ref:.3f} | {mine / ref:.2f}x | {diff:.1e} |")
    stats = ours.engine.stats()
    print(f"fusor: {stats['plans']} plans, {stats['kernels_compiled']} kernels compiled "
          f"({stats['kernels_compiled_background']} in the background), {stats['symbolic_steps']} symbolic steps run")


if __name__ == "__main__":
    main()
