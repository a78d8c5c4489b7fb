"""Renders vs_peers.py's results (vs-peers.json) as a markdown table and a plot.

  python bench/peers/report.py build-peers/vs-peers.json     re-renders next to the JSON

The table has one row per case and thread count: fusor's backends, each peer, the best
fp32 peer and the ratio fusor llvm / best fp32 peer (below 1: fusor is faster), then
OpenVINO at its default precision (bf16 where the CPU has AMX or AVX512-BF16) with the
ratio against it. Every figure is the median of all the repetitions of all rounds, in ms.
A second table gives the spread: IQR / median of the repetitions, and the drift, the
spread of the per-round medians (max / min - 1). The plot shows the ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import sys


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def _fmt_ms(ms: float) -> str:
    if ms != ms:  # NaN
        return "—"
    if ms >= 100:
        return f"{ms:.0f}"
    if ms >= 10:
        return f"{ms:.1f}"
    if ms >= 1:
        return f"{ms:.2f}"
    return f"{ms:.3f}"


class Figures:
    """The steady-state results aggregated per (case, threads, engine)."""

    def __init__(self, data: dict):
        self.times: dict[tuple[str, int, str], list[float]] = {}
        self.rounds: dict[tuple[str, int, str], list[float]] = {}
        self.errors: dict[tuple[str, int, str], str] = {}
        self.info: dict[tuple[str, int, str], dict] = {}
        for r in data.get("steady", []):
            key = (r["case"], r["threads"], r["engine"])
            if r.get("times_ms"):
                self.times.setdefault(key, []).extend(r["times_ms"])
                self.rounds.setdefault(key, []).append(median(r["times_ms"]))
                self.info.setdefault(key, r.get("info") or {})
            elif r.get("error"):
                self.errors.setdefault(key, r["error"])

    def median(self, case: str, threads: int, engine: str) -> float:
        return median(self.times.get((case, threads, engine), []))

    def spread(self, case: str, threads: int, engine: str) -> tuple[float, float | None] | None:
        """(IQR / median, max round median / min round median - 1, None from one round), or
        None without figures."""
        xs = sorted(self.times.get((case, threads, engine), []))
        if not xs:
            return None
        if len(xs) >= 2:
            q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive")
        else:
            q1 = q3 = xs[0]
        rounds = self.rounds[(case, threads, engine)]
        return (q3 - q1) / median(xs), (max(rounds) / min(rounds) - 1 if len(rounds) > 1 else None)


class Table:
    """The comparison, row by row, shared by the markdown and the plot."""

    def __init__(self, data: dict):
        self.data = data
        self.fig = Figures(data)
        self.engines = data.get("engines", [])
        self.fusor = [e for e in self.engines if e.get("side") == "fusor"]
        self.peers = [e for e in self.engines if e.get("side") == "peer"]
        self.fp32_peers = [e for e in self.peers if e.get("fp32")]
        self.low_peers = [e for e in self.peers if not e.get("fp32")]
        self.threads = data.get("meta", {}).get("threads", [1, 2])
        self.rows = [(c, t) for c in data.get("cases", []) for t in self.threads]

    def label(self, e: dict) -> str:
        """A column title; a peer at reduced precision names the precision it ran at."""
        if e.get("fp32", True):
            return e["label"]
        precisions = {self.fig.info[k].get("precision") for k in self.fig.info if k[2] == e["key"]} - {None}
        return f"{e['label']} ({'/'.join(sorted(precisions))})" if precisions else e["label"]

    def best_fp32(self, case: str, t: int) -> tuple[str, float] | None:
        got = [(e["label"], self.fig.median(case, t, e["key"])) for e in self.fp32_peers]
        got = [(lbl, ms) for lbl, ms in got if ms == ms]
        return min(got, key=lambda x: x[1]) if got else None

    def fusor_main(self) -> str | None:
        keys = [e["key"] for e in self.fusor]
        return "fusor_llvm" if "fusor_llvm" in keys else (keys[0] if keys else None)

    def ratio(self, case: str, t: int, peer_ms: float, low: bool = False) -> float:
        """fusor llvm's time over peer_ms; with `low` (a peer at reduced precision), fusor's
        bf16 time where fusor_bench ran that case in bf16 (fusor_llvm_bf16), else llvm's."""
        main = self.fusor_main()
        ms = self.fig.median(case, t, main) if main else float("nan")
        if low and any(e["key"] == "fusor_llvm_bf16" for e in self.fusor):
            bf16 = self.fig.median(case, t, "fusor_llvm_bf16")
            ms = bf16 if bf16 == bf16 else ms
        return ms / peer_ms if peer_ms == peer_ms and peer_ms > 0 else float("nan")


def _cell(table: Table, notes: list[str], case: str, t: int, e: dict) -> str:
    key = (case, t, e["key"])
    if key in table.fig.times:
        return _fmt_ms(table.fig.median(*key))
    if e.get("error"):
        return "n/a"
    why = table.fig.errors.get(key, "no result")
    if why not in notes:
        notes.append(why)
    return f"failed [{notes.index(why) + 1}]"


def _ratio_text(r: float) -> str:
    return "—" if r != r else f"{r:.2f}×"


def markdown(data: dict) -> str:
    tb = Table(data)
    meta = data.get("meta", {})
    cpu = meta.get("cpu", {})
    notes: list[str] = []
    out = ["# fusor vs peers", ""]
    out.append(f"CPU: **{cpu.get('model', 'unknown')}**, {cpu.get('cores', '?')} logical CPUs"
               + (f" ({cpu['hypervisor_vendor']} guest)" if cpu.get("hypervisor_vendor") else "")
               + (f"; ISA: {', '.join(cpu.get('isa', []))}" if cpu.get("isa") else "")
               + (f"; L2 {cpu['l2_cache']}, L3 {cpu['l3_cache']}" if cpu.get("l2_cache") else "") + ".")
    versions = [f"{e.get('runtime', e['label'])} {e['version']}" for e in tb.peers if e.get("version")]
    versions = list(dict.fromkeys(versions))
    out.append(f"Peers: {', '.join(versions) or 'none available'}.")
    for e in tb.peers:
        if e.get("error"):
            out.append(f"Not run: {e['label']} ({e['error']}).")
    out.append(f"Run: `{meta.get('command', '?')}`, {meta.get('started', '?')} → {meta.get('finished', 'unfinished')}; "
               f"medians of {meta.get('reps')} repetitions of ≥{meta.get('min_time_s')} s each, split over "
               f"{meta.get('rounds')} interleaved rounds; ms per inference, batch 1, fp32 unless marked.")
    out.append("")
    heads = ["case", "threads"] + [e["label"] for e in tb.fusor] + [e["label"] for e in tb.fp32_peers]
    heads += ["best fp32 peer", "fusor / best fp32"]
    for e in tb.low_peers:
        heads += [tb.label(e), f"fusor / {tb.label(e)}"]
    out += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for case, t in tb.rows:
        cells = [case, str(t)]
        cells += [_cell(tb, notes, case, t, e) for e in tb.fusor + tb.fp32_peers]
        best = tb.best_fp32(case, t)
        cells += [best[0] if best else "—", _ratio_text(tb.ratio(case, t, best[1])) if best else "—"]
        for e in tb.low_peers:
            cells += [_cell(tb, notes, case, t, e), _ratio_text(tb.ratio(case, t, tb.fig.median(case, t, e["key"]), low=True))]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out.append("fusor / peer below 1.00× means fusor is faster.")
    for i, n in enumerate(notes, 1):
        out.append(f"[{i}] {n}")
    out += ["", "## Spread of the repetitions", ""]
    out.append("IQR / median of all repetitions, then (in parentheses) the drift between rounds: "
               "max / min of the per-round medians − 1, both in %.")
    out.append("")
    engines = tb.fusor + tb.peers
    heads = ["case", "threads"] + [tb.label(e) for e in engines]
    out += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for case, t in tb.rows:
        cells = [case, str(t)]
        for e in engines:
            s = tb.fig.spread(case, t, e["key"])
            if s is None:
                cells.append("—")
            else:
                cells.append(f"{100 * s[0]:.1f}" + ("" if s[1] is None else f" ({100 * s[1]:.1f})"))
        out.append("| " + " | ".join(cells) + " |")
    out += _first_run_section(data)
    return "\n".join(out) + "\n"


def _first_run_section(data: dict) -> list[str]:
    runs = [r for r in data.get("first_run", []) if "runs" in r]
    failed = [r for r in data.get("first_run", []) if "error" in r]
    fusor = data.get("fusor_first_request", [])
    if not (runs or failed or fusor):
        return []
    labels = {e["key"]: e["label"] for e in data.get("engines", [])}
    out = ["", "## A never-seen sequence length (BERT layer, batch 1)", ""]
    out.append("The peers run the layer exported with a symbolic sequence length T. `fresh`: the first run of a "
               "session just created (creation not counted, shown apart); `new T`: the first run at a length the "
               "session has not seen, after it has served another; `steady`: the median at that length afterwards. "
               "Medians over trials (each in a fresh process), ms.")
    out.append("")
    seqs = sorted({x["seq"] for r in runs for x in r["runs"]})
    heads = ["peer", "threads", "session create"]
    for s in seqs:
        heads += [f"T={s} fresh", f"T={s} new T", f"T={s} steady"]
    out += ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in runs:
        groups.setdefault((r["engine"], r["threads"]), []).append(r)
    for (engine, t), rs in groups.items():
        cells = [labels.get(engine, engine), str(t), _fmt_ms(median([r["create_ms"] for r in rs]))]
        for s in seqs:
            fresh = [x["first_ms"] for r in rs for i, x in enumerate(r["runs"]) if x["seq"] == s and i == 0]
            later = [x["first_ms"] for r in rs for i, x in enumerate(r["runs"]) if x["seq"] == s and i > 0]
            steady = [x["steady_ms"] for r in rs for x in r["runs"] if x["seq"] == s]
            cells += [_fmt_ms(median(fresh)), _fmt_ms(median(later)), _fmt_ms(median(steady))]
        out.append("| " + " | ".join(cells) + " |")
    for r in failed:
        out.append(f"\nFailed: {labels.get(r['engine'], r['engine'])} t{r['threads']}: {r['error']}")
    if fusor:
        out += ["", "fusor_bench `first_request/bert_layer_seq128/<mode>` (a fresh engine, no kernel store, one thread, "
                "two for the modes ending in `_t2`; mean of its iterations, ms; `llvm_tiering_new_t`, `llvm_symbolic` and "
                "`llvm_session` (both, as fusor.InferenceSession sets them) have served T=16 first, like the peers' "
                "`new T`):", ""]
        out += ["| mode | first request |", "|---|---|"]
        for f in fusor:
            if "error" in f:
                out.append(f"| failed | {f['error']} |")
            else:
                out.append(f"| {f['name'].split('/')[2]} | {_fmt_ms(f['ms'])} |")
    return out


def plot(data: dict, path: str) -> bool:
    """The ratios as grouped bars (per case, one bar per thread count, log scale); False
    when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        return False
    tb = Table(data)
    case_names = data.get("cases", [])
    n_t = len(tb.threads)
    width = 0.8 / max(n_t, 1)
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(case_names) + 3), 5.5))
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
    all_ratios: list[float] = []
    for j, t in enumerate(tb.threads):
        xs, ys, low_xs, low_ys = [], [], [], []
        for i, c in enumerate(case_names):
            x = i + (j - (n_t - 1) / 2) * width
            best = tb.best_fp32(c, t)
            r = tb.ratio(c, t, best[1]) if best else float("nan")
            if r == r:
                xs.append(x)
                ys.append(r)
            for e in tb.low_peers:
                rl = tb.ratio(c, t, tb.fig.median(c, t, e["key"]), low=True)
                if rl == rl:
                    low_xs.append(x)
                    low_ys.append(rl)
        # Bars grow from 1.0: up where fusor is slower, down where it is faster.
        ax.bar(xs, [y - 1 for y in ys], bottom=1, width=width * 0.95, color=colors[j % len(colors)],
               label=f"fusor llvm / best fp32 peer, {t} thread{'s' if t > 1 else ''}")
        for x, y in zip(xs, ys):
            ax.annotate(f"{y:.2f}", (x, y), ha="center", va="bottom" if y >= 1 else "top", fontsize=7)
        all_ratios += ys + low_ys
        if low_xs:
            names = ", ".join(tb.label(e) for e in tb.low_peers)
            ax.scatter(low_xs, low_ys, marker="D", s=14, color="black", zorder=3,
                       label=f"fusor llvm / {names}" if j == 0 else None)
    ax.axhline(1.0, color="gray", linewidth=1)
    ax.set_yscale("log")
    span = max(max(all_ratios, default=1), 1 / min(all_ratios, default=1), 1.25) * 1.15
    ax.set_ylim(1 / span, span)  # symmetric about 1 on the log scale: faster and slower read alike
    ticks = [1 / 8, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 0.8, 1, 1.25, 1.5, 2, 3, 4, 8]
    ax.yaxis.set_major_locator(matplotlib.ticker.FixedLocator([v for v in ticks if 1 / span <= v <= span]))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.3g}"))
    ax.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(range(len(case_names)))
    ax.set_xticklabels(case_names, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("time ratio fusor / peer (below 1: fusor faster)")
    cpu = data.get("meta", {}).get("cpu", {}).get("model", "")
    ax.set_title(f"fusor vs peers, median ms ratio — {cpu}", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write(data: dict, out_dir: str) -> tuple[str, str | None]:
    """Writes vs-peers.md and vs-peers.png into `out_dir`; returns their paths (None for a
    plot that could not be drawn)."""
    md = os.path.join(out_dir, "vs-peers.md")
    with open(md, "w", encoding="utf-8") as f:
        f.write(markdown(data))
    png = os.path.join(out_dir, "vs-peers.png")
    return md, png if plot(data, png) else None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        data = json.load(f)
    md, png = write(data, os.path.dirname(os.path.abspath(argv[0])))
    print(md)
    if png:
        print(png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
