"""Shared benchmark plumbing: timing protocol and JSONL records.

Protocol: compile is timed separately (AOT `lower().compile()`), then one warm-up call,
then `repeats` timed calls of `iterations` iterations each, each closed by
`block_until_ready`; ms/iter is the median over the repeats.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time

import jax

import cfrjax


def code_commit() -> str | None:
    """The measured code's git commit: `CFRJAX_COMMIT` if set (the GPU machine gets a copy of
    the tree without `.git`; pass `CFRJAX_COMMIT=$(git rev-parse --short HEAD)`), else git's."""
    if os.environ.get("CFRJAX_COMMIT"):
        return os.environ["CFRJAX_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=os.path.dirname(os.path.abspath(__file__)),
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def environment() -> dict:
    """The machine and code of a record, and `plan`: the auto plan here (`cfrjax.plan`),
    what a game without a plan of its own runs (a record of another plan names its own)."""
    dev = jax.devices()[0]
    return dict(backend=jax.default_backend(), device=str(dev.device_kind), jax=jax.__version__,
                jaxlib=jax.lib.__version__ if hasattr(jax.lib, "__version__") else jax.__version__,
                host=platform.node(), cpu_count=os.cpu_count(), commit=code_commit(),
                plan=cfrjax.plan.resolve_plan().describe())


def peak_memory_bytes():
    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:  # CPU backends may not report
        stats = {}
    return stats.get("peak_bytes_in_use")


def _machine_busy_s() -> float | None:
    """CPU seconds all processes have used since boot (/proc/stat, all CPUs; None where unavailable)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")  # minus idle and iowait


class CpuMeter:
    """CPU use over a stretch of wall time: `own` (this process, all its threads) and `others`
    (the rest of the machine, from /proc/stat; None where unavailable), in CPU seconds; add
    several stretches with `with meter:` repeatedly. `own / wall` is about 1 for one busy
    thread; `others / wall` is the average number of cores other processes kept busy."""

    MIN_WALL_S = 1.0

    def __init__(self):
        self.wall = self.own = 0.0
        self.others = 0.0 if _machine_busy_s() is not None else None

    def __enter__(self):
        self._t, self._c, self._m = time.perf_counter(), time.process_time(), _machine_busy_s()
        return self

    def __exit__(self, *exc):
        wall, own = time.perf_counter() - self._t, time.process_time() - self._c
        self.wall += wall
        self.own += own
        if self.others is not None:
            self.others += max(0.0, _machine_busy_s() - self._m - own)
        return False

    def fields(self) -> dict:
        """`cpu_per_wall`, and `others_cpu_per_wall` when measurable: /proc/stat counts in clock
        ticks (10 ms per CPU), so it is left None for stretches shorter than `MIN_WALL_S`."""
        others = None if self.others is None or self.wall < self.MIN_WALL_S else self.others / self.wall
        return dict(cpu_per_wall=self.own / self.wall, others_cpu_per_wall=others)


def wall_times(call, repeats: int) -> list[float]:
    """Wall seconds of `repeats` calls of `call()`, each closed by `block_until_ready`."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - t0)
    return times


def time_solve(game, state, iterations: int, repeats: int = 5) -> dict:
    """Compile time, first-solve time and steady ms/iter of `solve(game, state, iterations)`.

    `cpu_per_wall` is the process's CPU time over wall time during the timed calls (about
    1.0 when one core works, up to the number of cores in use), `others_cpu_per_wall` the
    cores other processes kept busy meanwhile (`CpuMeter`).
    """
    from cfrjax.driver import lower_solve   # here: `ab_commits.py` imports this module beside any commit's cfrjax

    t0 = time.perf_counter()
    lower_solve(game, state, iterations).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(cfrjax.solve(game, state, iterations))
    first_s = time.perf_counter() - t0
    times, meter = [], CpuMeter()
    for _ in range(repeats):
        with meter:
            t0 = time.perf_counter()
            jax.block_until_ready(cfrjax.solve(game, state, iterations))
            times.append(time.perf_counter() - t0)
    return dict(compile_s=compile_s, first_solve_s=first_s, ms_per_iter=1e3 * statistics.median(times) / iterations,
                ms_per_iter_min=1e3 * min(times) / iterations, ms_per_iter_max=1e3 * max(times) / iterations,
                repeats=repeats, iterations=iterations, **meter.fields())


def append_records(path: str, records: list[dict]) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
