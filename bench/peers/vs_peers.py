"""fusor against the peers, side by side: runs fusor_bench and each peer case by case,
interleaved, in rounds, and writes the results (JSON), the table (markdown) and the plot.

The order is: for each round, for each case, fusor_bench on that case (every requested
backend and thread count), then each peer on it, each in its own process, all under an
exclusive hold of the CPU lock (HeldSteps: one hold spans consecutive cases up to
--hold-budget seconds); a run's repetitions are split over the rounds.
Drift on a shared machine thus lands on fusor and the peers alike, and each figure is the
median of all its repetitions. Then, unless --no-first-run: the first-run latency of a never-seen sequence
length on the peers that serve a dynamic model, and fusor_bench's first_request cases.

Everything measured goes to OUT/vs-peers.json first (rewritten after every step, so an
interrupted run keeps what it had); report.py renders it. scripts/bench-vs-peers.sh sets
up the environment and calls this.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import fcntl
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

import cases
import report

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")

DEFAULT_PEERS = ("ort", "ov_f32", "ov_default")
FIRST_RUN_PEERS = ("ort", "ov_f32")
FUSOR_FIRST_REQUEST = "^first_request/bert_layer_seq128/"


def log(msg: str) -> None:
    print(f"[vs-peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class CpuLock:
    """The machine's CPU lock: flock(2) on a file, the lock flock(1) takes, so the harness
    and every other user of the machine exclude each other. Timings hold it exclusively,
    setup shares it. No path: no locking."""

    def __init__(self, path: str):
        self.path = path

    @contextlib.contextmanager
    def hold(self, what: str, exclusive: bool = True):
        if not self.path:
            yield
            return
        fd = os.open(self.path, os.O_RDONLY | os.O_CREAT, 0o666)
        try:
            t0 = time.monotonic()
            fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            waited = time.monotonic() - t0
            if waited >= 10:
                log(f"waited {waited:.0f} s for the CPU lock ({what})")
            yield
        finally:
            os.close(fd)  # releases the lock


class HeldSteps:
    """Consecutive steps under one exclusive hold of `lock`, for as long as the hold stays
    within `budget` seconds: before a step, the lock is released (and queued for again)
    when the time held so far plus the longest step seen would pass the budget. Fewer,
    longer holds: on a machine whose lock is contended, each acquisition can wait minutes."""

    def __init__(self, lock: CpuLock, budget: float):
        self.lock, self.budget = lock, budget
        self._held: contextlib.ExitStack | None = None
        self._since = 0.0
        self._longest = 0.0

    @contextlib.contextmanager
    def step(self, what: str):
        if self._held and time.monotonic() - self._since + self._longest > self.budget:
            self.release()
        if not self._held:
            self._held = contextlib.ExitStack()
            self._held.enter_context(self.lock.hold(what))
            self._since = time.monotonic()
        t0 = time.monotonic()
        yield
        self._longest = max(self._longest, time.monotonic() - t0)

    def release(self) -> None:
        if self._held:
            self._held.close()
            self._held = None


def run_limited(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Runs `cmd` to completion or for `timeout` seconds, its whole process group killed then."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += f"\ntimed out after {timeout:.0f} s"
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _tail(text: str, n: int = 3) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[-400:]


class Session:
    """One harness run: its options, and the results gathered so far."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.lock = CpuLock(args.lock)
        self.out_json = os.path.join(args.out_dir, "vs-peers.json")
        self.data: dict = {
            "meta": {
                "command": " ".join(shlex.quote(a) for a in sys.argv),
                "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                "cpu": cpu_info(),
                "reps": args.reps,
                "rounds": args.rounds,
                "min_time_s": args.min_time,
                "threads": args.threads,
                "gelu": args.gelu,
                "fusor_bench": args.fusor_bench,
                "fusor_backends": args.fusor_backends,
            },
            "engines": [],
            "cases": [],
            "steady": [],
            "first_run": [],
            "fusor_first_request": [],
        }

    def save(self) -> None:
        tmp = self.out_json + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f, indent=1)
        os.replace(tmp, self.out_json)

    # -- the peers' side --------------------------------------------------------------

    def worker(self, argv: list[str], timeout: float) -> list[dict]:
        """Runs worker.py with `argv` (plus --out); its records, and one more describing its
        failure if it failed. The caller holds the lock."""
        fd, out = tempfile.mkstemp(prefix="fusor-peers-", suffix=".jsonl")
        os.close(fd)
        try:
            p = run_limited([sys.executable, WORKER] + argv + ["--out", out], timeout)
            with open(out, encoding="utf-8") as f:
                records = [json.loads(line) for line in f if line.strip()]
        finally:
            os.unlink(out)
        if p.returncode != 0:
            records.append({"process_error": f"worker exited with {p.returncode}: {_tail(p.stderr)}"})
        return records

    def probe_peers(self) -> list[str]:
        """Records every requested peer's version (or why it is unavailable); the usable keys."""
        with self.lock.hold("probing the peers", exclusive=False):  # no timing: the lock shared
            records = self.worker(["versions"], timeout=300)
        by_key = {r["engine"]: r for r in records if r.get("kind") == "version"}
        usable = []
        for key in self.args.peers:
            missing = {"label": key, "fp32": True, "error": f"unknown peer, or the probe failed: {_tail(str(records))}"}
            r = by_key.get(key, missing)
            self.data["engines"].append({"key": key, "side": "peer", "label": r["label"], "runtime": r.get("runtime", key),
                                         "fp32": r["fp32"], "version": r.get("version"), "error": r.get("error")})
            if r.get("version"):
                usable.append(key)
                log(f"peer {key}: {r['label']} {r['version']}")
            else:
                log(f"peer {key}: unavailable ({r.get('error')})")
        return usable

    def run_peer(self, case: str, peer: str, rnd: int, reps: int) -> None:
        threads = ",".join(str(t) for t in self.args.threads)
        argv = ["steady", "--case", case, "--peer", peer, "--threads", threads, "--reps", str(reps),
                "--min-time", str(self.args.min_time), "--round", str(rnd), "--gelu", self.args.gelu]
        records = self.worker(argv, timeout=self.args.timeout)
        got = {r.get("threads") for r in records if r.get("kind") == "steady"}
        failure = next((r["process_error"] for r in records if "process_error" in r), "no result")
        for t in self.args.threads:
            if t not in got:  # the worker died before reporting this thread count
                records.append({"kind": "steady", "case": case, "engine": peer, "round": rnd, "threads": t, "error": failure})
        for r in records:
            if r.get("kind") == "steady":
                self.data["steady"].append(r)
                figure = f"{report.median(r['times_ms']):.3f} ms" if "times_ms" in r else f"FAILED: {r['error']}"
                log(f"  {peer} t{r['threads']}: {figure}")

    # -- fusor's side -----------------------------------------------------------------

    def fusor_bench_once(self, filter_re: str, extra: list[str]) -> tuple[dict | None, str]:
        """fusor_bench's JSON for `filter_re`, or None and why not. The caller holds the lock."""
        if not os.access(self.args.fusor_bench, os.X_OK):
            return None, f"{self.args.fusor_bench} is missing"
        cmd = [self.args.fusor_bench, f"--benchmark_filter={filter_re}", "--benchmark_format=json"] + extra
        p = run_limited(cmd, self.args.timeout)
        if p.returncode != 0:
            return None, f"exit {p.returncode}: {_tail(p.stderr) or 'no output'}"
        try:
            doc = json.loads(p.stdout)
        except json.JSONDecodeError as e:
            return None, f"unreadable JSON ({e})"
        if not doc.get("benchmarks"):
            return None, f"no benchmark matched {filter_re!r}"
        if "fusor_context" not in self.data["meta"]:
            self.data["meta"]["fusor_context"] = doc.get("context", {})
        return doc, ""

    def fusor_bench_retry(self, filter_re: str, extra: list[str], why: str) -> tuple[dict | None, str]:
        """Retries a failed fusor_bench run (the binary may be mid-rebuild): waits with the
        lock released, then each try in its own hold."""
        for _ in range(self.args.fusor_retries):
            log(f"  fusor_bench failed ({why}); retrying in {self.args.retry_wait:.0f} s")
            time.sleep(self.args.retry_wait)
            with self.lock.hold(f"fusor_bench {filter_re}"):
                doc, why = self.fusor_bench_once(filter_re, extra)
            if doc is not None:
                return doc, ""
        return None, why

    def fusor_case(self, case: str, reps: int) -> tuple[str, list[str]]:
        """fusor_bench's filter and options for `case` at every requested backend and thread count."""
        backends = "|".join(self.args.fusor_backends)
        threads = "|".join(str(t) for t in self.args.threads)
        filter_re = f"^{re.escape(case)}/({backends})/t({threads})/"
        return filter_re, [f"--benchmark_repetitions={reps}", f"--benchmark_min_time={self.args.min_time}"]

    def record_fusor(self, case: str, rnd: int, doc: dict | None, why: str) -> None:
        times: dict[tuple[str, int], list[float]] = {}
        for b in (doc or {}).get("benchmarks", []):
            m = re.fullmatch(rf"{re.escape(case)}/(\w+)/t(\d+)(?:/real_time)?", b.get("run_name", b["name"]))
            if b.get("run_type") == "iteration" and m:
                times.setdefault((m.group(1), int(m.group(2))), []).append(to_ms(b["real_time"], b["time_unit"]))
        for backend in self.args.fusor_backends:
            for t in self.args.threads:
                r = {"kind": "steady", "case": case, "engine": f"fusor_{backend}", "round": rnd, "threads": t}
                if (backend, t) in times:
                    r["times_ms"] = times[(backend, t)]
                    log(f"  fusor {backend} t{t}: {report.median(r['times_ms']):.3f} ms")
                else:
                    r["error"] = why or f"fusor_bench reported no {case}/{backend}/t{t}"
                    log(f"  fusor {backend} t{t}: FAILED: {r['error']}")
                self.data["steady"].append(r)

    # -- the run ----------------------------------------------------------------------

    def run(self) -> int:
        args = self.args
        os.makedirs(args.out_dir, exist_ok=True)
        for backend in args.fusor_backends:
            # (llvm_bf16: fusor_bench's precision=bf16 cases, compared with the peers' defaults)
            fp32 = not backend.endswith("_bf16")
            self.data["engines"].append({"key": f"fusor_{backend}", "label": f"fusor {backend}", "fp32": fp32, "side": "fusor"})
        peers = self.probe_peers()
        selected = [c.name for c in cases.bench_cases() if re.search(args.cases, c.name)]
        if not selected:
            log(f"no case matches {args.cases!r}")
            return 2
        self.data["cases"] = selected
        self.save()
        per_round = [args.reps // args.rounds + (1 if r < args.reps % args.rounds else 0) for r in range(args.rounds)]
        steps = HeldSteps(self.lock, args.hold_budget)
        try:
            for rnd, reps in enumerate(per_round):
                for case in selected:
                    filter_re, extra = self.fusor_case(case, reps)
                    with steps.step(f"{case}, round {rnd + 1}"):
                        log(f"round {rnd + 1}/{args.rounds}, {case} ({reps} repetitions)")
                        doc, why = self.fusor_bench_once(filter_re, extra)
                        if doc is not None:
                            self.record_fusor(case, rnd, doc, why)
                        for peer in peers:
                            self.run_peer(case, peer, rnd, reps)
                    if doc is None:
                        steps.release()  # never wait for a rebuild with the lock held
                        doc, why = self.fusor_bench_retry(filter_re, extra, why)
                        self.record_fusor(case, rnd, doc, why)
                    self.save()
            if not args.no_first_run:
                self.first_run([p for p in peers if p in FIRST_RUN_PEERS], steps)
        finally:
            steps.release()
        self.data["meta"]["finished"] = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
        self.save()
        md, png = report.write(self.data, args.out_dir)
        log(f"wrote {self.out_json}, {md}" + (f", {png}" if png else " (no plot: matplotlib missing)"))
        return 0

    def first_run(self, peers: list[str], steps: HeldSteps) -> None:
        """A never-seen sequence length: each peer in both orders of --first-run-seqs, in
        fresh processes, for --first-run-trials trials; then fusor_bench's first_request."""
        seqs = self.args.first_run_seqs
        orders = [seqs, list(reversed(seqs))] if len(seqs) > 1 else [seqs]
        for trial in range(self.args.first_run_trials):
            for peer in peers:
                with steps.step(f"first run, {peer}, trial {trial + 1}"):
                    self.first_run_trial(peer, trial, orders)
            self.save()
        filter_re, extra = FUSOR_FIRST_REQUEST, ["--benchmark_repetitions=1"]
        with steps.step("fusor_bench first_request"):
            doc, why = self.fusor_bench_once(filter_re, extra)
        if doc is None:
            steps.release()
            doc, why = self.fusor_bench_retry(filter_re, extra, why)
        for b in (doc or {}).get("benchmarks", []):
            if b.get("run_type") == "iteration":
                ms = to_ms(b["real_time"], b["time_unit"])
                self.data["fusor_first_request"].append({"name": b["run_name"], "ms": ms, "iterations": b.get("iterations")})
                log(f"fusor {b['run_name']}: {ms:.1f} ms")
        if doc is None:
            self.data["fusor_first_request"].append({"error": why})
        self.save()

    def first_run_trial(self, peer: str, trial: int, orders: list[list[int]]) -> None:
        """One trial of `peer`: every thread count, every order of the lengths, a process each.
        The caller holds the lock."""
        for t in self.args.threads:
            for order in orders:
                argv = ["first-run", "--peer", peer, "--threads", str(t), "--seqs", ",".join(map(str, order)),
                        "--gelu", self.args.gelu, "--reps", str(max(5, self.args.reps // 2)),
                        "--min-time", str(self.args.min_time)]
                for r in self.worker(argv, timeout=self.args.timeout):
                    if r.get("kind") != "first_run":
                        r = {"kind": "first_run", "engine": peer, "threads": t, "order": order, "error": r.get("process_error")}
                    r["trial"] = trial
                    self.data["first_run"].append(r)
                    if "runs" in r:
                        runs = ", ".join(f"T={x['seq']} first {x['first_ms']:.1f} steady {x['steady_ms']:.1f}" for x in r["runs"])
                        log(f"first run: {peer} t{t} trial {trial + 1}: create {r['create_ms']:.0f} ms; {runs}")
                    else:
                        log(f"first run: {peer} t{t} trial {trial + 1}: FAILED: {r['error']}")


def to_ms(value: float, unit: str) -> float:
    return value * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def cpu_info() -> dict:
    """The CPU model and the ISA flags that decide kernels and the peers' default precision."""
    info = {"model": "unknown", "cores": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        info["model"] = fields.get("Model name", "unknown")
        flags = set(fields.get("Flags", "").split())
        info["isa"] = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile") if f in flags]
        for k in ("Hypervisor vendor", "L2 cache", "L3 cache"):
            if k in fields:
                info[k.lower().replace(" ", "_")] = fields[k]
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def parse_args(argv: list[str]) -> argparse.Namespace:
    root = os.path.abspath(os.path.join(HERE, "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=".", help="regular expression selecting cases by name (re.search)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--reps", type=int, default=20, help="repetitions per figure, over all rounds")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds the repetitions are split over")
    ap.add_argument("--min-time", type=float, default=0.1, help="seconds per repetition (fusor_bench's too)")
    ap.add_argument("--peers", default=",".join(DEFAULT_PEERS), help="peers, comma-separated: ort, ov_f32, ov_default, torch")
    ap.add_argument("--with-torch", action="store_true", help="add the torch.compile peer")
    ap.add_argument("--gelu", default="native", choices=["native", "erf"], help="how the ONNX models write Gelu")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 3 repetitions, 1 round, short repetitions")
    ap.add_argument("--fusor-bench", default=os.path.join(root, "build", "bench", "fusor_bench"))
    ap.add_argument("--fusor-backends", default="llvm,static",
                    help="fusor backends to run, comma-separated (llvm_bf16: llvm at precision bf16)")
    ap.add_argument("--no-first-run", action="store_true", help="skip the never-seen-length measurements")
    ap.add_argument("--first-run-seqs", default="77,128", help="sequence lengths for the first-run measurement")
    ap.add_argument("--first-run-trials", type=int, default=3)
    ap.add_argument("--out-dir", default=os.path.join(root, "build-peers"))
    ap.add_argument("--lock", default=os.environ.get("FUSOR_CPU_LOCK", "/tmp/fusor-cpu.lock"),
                    help="the CPU lock file, held exclusively around each case's timings ('' for none)")
    ap.add_argument("--hold-budget", type=float, default=480,
                    help="seconds one exclusive hold of the lock may last, over consecutive cases (the machine's rule: ~10 min)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds one process may run (a case's hold, fusor and every peer, stays under ~10 minutes)")
    ap.add_argument("--fusor-retries", type=int, default=3)
    ap.add_argument("--retry-wait", type=float, default=60)
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in args.threads.split(",") if t]
    args.peers = [p for p in args.peers.split(",") if p]
    if args.with_torch and "torch" not in args.peers:
        args.peers.insert(2 if len(args.peers) >= 2 else len(args.peers), "torch")
    args.fusor_backends = [b for b in args.fusor_backends.split(",") if b]
    args.first_run_seqs = [int(s) for s in args.first_run_seqs.split(",") if s]
    if args.quick:
        args.reps, args.rounds, args.min_time, args.first_run_trials = 3, 1, 0.05, 1
    if args.reps < 1 or args.rounds < 1 or args.rounds > args.reps:
        ap.error("need 1 <= --rounds <= --reps")
    if not math.isfinite(args.min_time) or args.min_time <= 0:
        ap.error("--min-time must be positive")
    return args


def main(argv: list[str]) -> int:
    return Session(parse_args(argv)).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
