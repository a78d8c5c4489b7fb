#!/usr/bin/env python3
"""Per-call overhead of session.run: fusor.InferenceSession against
onnxruntime.InferenceSession on the same tiny ONNX model, in one process.

The model is fuzz/corpus/onnx_loader/mlp.onnx (x: f32[batch, 3] -> y: f32[batch, 2], one
MatMul, Add and Relu), run at batch 1, so the kernels cost next to nothing and what is timed
is the call: feeds in, dispatch, outputs back as numpy arrays. Each session runs --calls
calls per round, in --rounds interleaved rounds (fusor, then ONNX Runtime), after a warmup;
the figure is the median over rounds of the mean time per call. Both use one thread.

    PYTHONPATH=build/python build/venv/bin/python bench/python/session_overhead.py
"""

import argparse
import pathlib
import statistics
import time

import numpy as np
import onnxruntime as ort

import fusor

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODEL = ROOT / "fuzz" / "corpus" / "onnx_loader" / "mlp.onnx"


def per_call_us(run, feeds, calls):
    start = time.perf_counter()
    for _ in range(calls):
        run(None, feeds)
    return (time.perf_counter() - start) / calls * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backend", default="llvm")
    args = parser.parse_args()

    feeds = {"x": np.ones((1, 3), np.float32)}
    ours = fusor.InferenceSession(MODEL, backend=args.backend, tiering=False, threads=1)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    theirs = ort.InferenceSession(str(MODEL), sess_options=options, providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(ours.run(None, feeds)[0], theirs.run(None, feeds)[0], rtol=1e-6, atol=1e-6)

    sessions = {"fusor": ours.run, "onnxruntime": theirs.run}
    times = {name: [] for name in sessions}
    for name, run in sessions.items():
        per_call_us(run, feeds, args.calls // 10)
    for _ in range(args.rounds):
        for name, run in sessions.items():
            times[name].append(per_call_us(run, feeds, args.calls))
    medians = {name: statistics.median(t) for name, t in times.items()}
    print(f"session.run per call, tiny MLP at batch 1, median of {args.rounds} rounds of {args.calls} calls:")
    print("| session | µs per call | min | max |")
    print("|---|---|---|---|")
    for name, t in times.items():
        print(f"| {name} ({args.backend if name == 'fusor' else 'CPUExecutionProvider'}) | {medians[name]:.2f} "
              f"| {min(t):.2f} | {max(t):.2f} |")
    print(f"fusor / onnxruntime: {medians['fusor'] / medians['onnxruntime']:.2f}x")


if __name__ == "__main__":
    main()
