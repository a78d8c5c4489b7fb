"""One measurement of one peer, in its own process (run by vs_peers.py).

Each measurement runs in a fresh process so that no runtime's state (thread pools, kernel
caches, allocators) leaks from one peer or case into the next, and a peer that crashes
loses only its own figure. Results are JSON objects appended, one per line, to --out;
a failure is a result too (an "error" string), never an exit without a word.

  worker.py versions --out F                                   each peer's version, or why it is unavailable
  worker.py steady --case C --peer P --threads 1,2 --reps N --min-time S --out F
  worker.py first-run --peer P --seqs 77,128 --threads T --out F

first-run: the BERT layer exported with a symbolic sequence length T (batch 1). One
session is created (timed apart), then run at each length of --seqs in turn: the first
run at the first length is a fresh session's first run; at each later length it is a new
length on a session that has already served another. After each first run, steady-state
repetitions at that length give the reference.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback

import cases
import peers
import timing


def _emit(out: str, record: dict) -> None:
    with open(out, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")


def _public(info: dict) -> dict:
    """`info` without the entries a peer keeps only to hold buffers alive."""
    return {k: v for k, v in info.items() if not k.startswith("_")}


def _error(e: BaseException) -> str:
    last = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
    where = f" (at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno})" if last else ""
    return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}{where}"


def cmd_versions(args) -> None:
    for key, peer in peers.all_peers().items():
        base = {"kind": "version", "engine": key, "label": peer.label, "runtime": peer.runtime, "fp32": peer.fp32}
        try:
            _emit(args.out, {**base, "version": peer.version()})
        except Exception as e:  # PeerUnavailable, or a runtime that fails oddly at import
            _emit(args.out, {**base, "error": _error(e)})


def cmd_steady(args) -> None:
    peer = peers.all_peers()[args.peer]
    case = cases.find_case(args.case)
    threads = [int(t) for t in args.threads.split(",")]
    base = {"kind": "steady", "case": case.name, "engine": peer.key, "round": args.round}
    try:
        graph = case.graph()
        inputs = case.inputs(graph)
    except Exception as e:
        for t in threads:
            _emit(args.out, {**base, "threads": t, "error": f"building the case: {_error(e)}"})
        return
    with tempfile.TemporaryDirectory(prefix="fusor-peers-") as tmp:
        model = peers.Model(graph, case.dims, inputs, tmp, gelu=args.gelu)
        for t in threads:
            try:
                t0 = time.perf_counter()
                prepared = peers.all_peers()[args.peer].prepare(model, t)
                setup_ms = (time.perf_counter() - t0) * 1e3
                times = timing.repetitions_ms(prepared.run, args.reps, args.min_time)
                _emit(args.out, {**base, "threads": t, "times_ms": times, "setup_ms": setup_ms, "info": _public(prepared.info)})
                del prepared
            except Exception as e:
                _emit(args.out, {**base, "threads": t, "error": _error(e)})


def cmd_first_run(args) -> None:
    peer = peers.all_peers()[args.peer]
    seqs = [int(s) for s in args.seqs.split(",")]
    base = {"kind": "first_run", "engine": peer.key, "threads": args.threads, "order": seqs}
    try:
        graph = cases.example_graph("bert_layer")
        with tempfile.TemporaryDirectory(prefix="fusor-peers-") as tmp:
            # The model binds B only: T stays symbolic. Inputs are made per length.
            model = peers.Model(graph, {"B": 1}, {}, tmp, gelu=args.gelu)
            model.onnx_path()  # written before the clock starts: the export is not the runtime's
            t0 = time.perf_counter()
            session = peer.dynamic_session(model, args.threads)
            create_ms = (time.perf_counter() - t0) * 1e3
            runs = []
            for seq in seqs:
                case = cases.Case(f"bert_layer_seq{seq}", lambda: graph, {"B": 1, "T": seq}, ("mask",))
                call = session.bind(case.inputs(graph))
                t0 = time.perf_counter()
                call()
                first_ms = (time.perf_counter() - t0) * 1e3
                steady = timing.summarize(timing.repetitions_ms(call, args.reps, args.min_time))["median"]
                runs.append({"seq": seq, "first_ms": first_ms, "steady_ms": steady})
            _emit(args.out, {**base, "create_ms": create_ms, "runs": runs})
    except Exception as e:
        _emit(args.out, {**base, "error": _error(e)})


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    v = sub.add_parser("versions")
    v.add_argument("--out", required=True)
    s = sub.add_parser("steady")
    s.add_argument("--case", required=True)
    s.add_argument("--peer", required=True, choices=list(peers.all_peers()))
    s.add_argument("--threads", default="1,2")
    s.add_argument("--reps", type=int, default=20)
    s.add_argument("--min-time", type=float, default=0.1)
    s.add_argument("--round", type=int, default=0)
    s.add_argument("--gelu", default="native", choices=["native", "erf"])
    s.add_argument("--out", required=True)
    f = sub.add_parser("first-run")
    f.add_argument("--peer", required=True, choices=[k for k, p in peers.all_peers().items() if hasattr(p, "dynamic_session")])
    f.add_argument("--seqs", default="77,128")
    f.add_argument("--threads", type=int, default=1)
    f.add_argument("--reps", type=int, default=10)
    f.add_argument("--min-time", type=float, default=0.1)
    f.add_argument("--gelu", default="native", choices=["native", "erf"])
    f.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    {"versions": cmd_versions, "steady": cmd_steady, "first-run": cmd_first_run}[args.cmd](args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
