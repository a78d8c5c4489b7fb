"""How the peers are timed: the same scheme as Google Benchmark's in fusor_bench.

A repetition runs the call back to back for at least `min_time` seconds (the iteration
count is fixed once, from a calibration after warm-up) and yields the mean time of one
call; a measurement is `reps` repetitions. fusor_bench is run with the same min_time and
repetition count, so both sides report medians of like repetitions.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable


def repetitions_ms(
    call: Callable[[], object], reps: int, min_time: float, warmup_time: float = 0.2, min_warmup_calls: int = 3
) -> list[float]:
    """`reps` repetition times of `call`, in ms per call (see the module comment).

    Warm-up: at least `min_warmup_calls` calls and `warmup_time` seconds, which also times
    one call to size the repetitions."""
    clock = time.perf_counter
    start, calls = clock(), 0
    while calls < min_warmup_calls or clock() - start < warmup_time:
        t0 = clock()
        call()
        one = clock() - t0
        calls += 1
    iters = max(1, math.ceil(min_time / max(one, 1e-9)))
    out = []
    for _ in range(reps):
        t0 = clock()
        for _ in range(iters):
            call()
        out.append((clock() - t0) * 1e3 / iters)
    return out


def summarize(times_ms: list[float]) -> dict[str, float]:
    """median, the quartiles and the relative spread (IQR / median) of repetition times."""
    if not times_ms:
        return {}
    s = sorted(times_ms)
    if len(s) >= 2:
        q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive")
    else:
        q1 = q3 = s[0]
    med = statistics.median(s)
    return {"median": med, "q1": q1, "q3": q3, "min": s[0], "max": s[-1], "iqr_rel": (q3 - q1) / med if med else 0.0}
