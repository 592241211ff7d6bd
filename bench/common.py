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
import time

import jax

import cfrjax
from cfrjax.solve import _solve


def environment() -> dict:
    dev = jax.devices()[0]
    return dict(backend=jax.default_backend(), device=str(dev.device_kind), jax=jax.__version__,
                jaxlib=jax.lib.__version__ if hasattr(jax.lib, "__version__") else jax.__version__,
                host=platform.node(), cpu_count=os.cpu_count())


def peak_memory_bytes():
    try:
        stats = jax.devices()[0].memory_stats() or {}
    except Exception:  # CPU backends may not report
        stats = {}
    return stats.get("peak_bytes_in_use")


def time_solve(game, state, iterations: int, repeats: int = 5) -> dict:
    """Compile time, first-solve time and steady ms/iter of `solve(game, state, iterations)`."""
    t0 = time.perf_counter()
    _solve.lower(game, state, iterations, None).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(cfrjax.solve(game, state, iterations))
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(cfrjax.solve(game, state, iterations))
        times.append(time.perf_counter() - t0)
    return dict(compile_s=compile_s, first_solve_s=first_s, ms_per_iter=1e3 * statistics.median(times) / iterations,
                ms_per_iter_min=1e3 * min(times) / iterations, ms_per_iter_max=1e3 * max(times) / iterations,
                repeats=repeats, iterations=iterations)


def append_records(path: str, records: list[dict]) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
