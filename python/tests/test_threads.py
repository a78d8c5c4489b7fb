"""Many Python threads on one Engine: runs release the GIL, plans are shared, every result
is right, and a warn callback is called from the engine's own threads."""

import threading

import numpy as np

import fusor
from conftest import MLP, mlp_reference


def run_threads(count, target):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # noqa: BLE001  (reported by the main thread)
            errors.append(e)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_share_one_engine_across_shapes():
    g = fusor.parse_graph(MLP)
    engine = fusor.Engine(backend="llvm", threads=2, disk_cache=False)
    batches = [1, 2, 3, 5, 8]
    wants = {b: mlp_reference(np.full((b, 24), 0.1 * b, np.float32)) for b in batches}

    def work(i):
        for r in range(25):
            b = batches[(i + r) % len(batches)]
            y = engine.run(g, {"x": np.full((b, 24), 0.1 * b, np.float32)})["y"]
            np.testing.assert_allclose(y, wants[b], rtol=1e-5, atol=1e-5)

    run_threads(8, work)
    stats = engine.stats()
    assert stats["plan_hits"] + stats["plan_misses"] == 8 * 25
    assert stats["plans"] == len(batches)


def test_a_python_thread_runs_while_another_is_inside_a_run():
    # The worker's run holds no GIL: the main thread's Python code proceeds meanwhile, seen
    # as the worker's callback-free run finishing while the main thread keeps counting.
    g = fusor.parse_graph(MLP.replace("[B, 24]", "[B, 24]"))
    engine = fusor.Engine(backend="static", threads=1, disk_cache=False)
    x = np.ones((20000, 24), np.float32)
    done = threading.Event()
    inside = threading.Event()

    def work():
        inside.set()
        for _ in range(20):
            engine.run(g, {"x": x})
        done.set()

    t = threading.Thread(target=work)
    t.start()
    inside.wait()
    ticks = 0
    while not done.is_set():
        ticks += 1
    t.join()
    assert ticks > 0


def test_the_warn_callback_is_called_from_background_threads(tmp_path):
    g = fusor.parse_graph(MLP)
    notes = []
    lock = threading.Lock()

    def warn(message):
        with lock:
            notes.append((threading.get_ident(), message))

    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    engine = fusor.Engine(backend="llvm", tiering=True, cache_dir=not_a_dir, warn=warn)

    def work(i):
        engine.run(g, {"x": np.ones((i + 1, 24), np.float32)})

    run_threads(4, work)
    engine.drain()
    assert notes and all("disk cache is off" in m for _, m in notes)
    del engine  # the destructor joins the background compiles without the GIL
