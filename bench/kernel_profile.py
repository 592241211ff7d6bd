"""Where one iteration's time goes: per-kernel device time from a `jax.profiler` trace
(paper, `tab:profile`, appendix G).

    python bench/kernel_profile.py [--games kuhn,leduc] [--iterations 200] [--out bench/results/kernel_profile.jsonl]

For each suite game (CFR+, simultaneous, float32) the scan of `cfrjax.solve` is compiled
and warmed up, then `iterations` iterations run under `jax.profiler.trace`. The Perfetto
trace's device events (kernels, on the GPU's stream threads) are summed per kernel name
and divided by the iteration count: one record per game with the kernels sorted by
time, the device-busy microseconds per iteration and the wall ms/iter of the same run.
Kernel names are XLA's fusion names; `--hlo DIR` also writes each game's optimized HLO
so a name can be traced back to the gathers and scatters it fuses.
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import jax  # noqa: E402

import cfrjax  # noqa: E402
from cfrjax.profile import kernels_per_iteration  # noqa: E402
from common import append_records, environment  # noqa: E402
from suite import build_spec, load_suite, select  # noqa: E402


def device_events(trace_dir: str) -> list[dict]:
    """Complete events (`ph == "X"`) on device processes of the Perfetto trace in `trace_dir`."""
    paths = glob.glob(os.path.join(trace_dir, "**", "*.trace.json.gz"), recursive=True)
    if not paths:
        raise FileNotFoundError(f"no Perfetto trace under {trace_dir}")
    with gzip.open(max(paths, key=os.path.getmtime)) as f:
        events = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
    dev = {pid for pid, n in names.items() if "/device:" in n and "CPU" not in n.upper()}
    return [e for e in events if e.get("ph") == "X" and e.get("pid") in dev]


def profile_run(run, iterations: int) -> dict:
    """Per-kernel device time of `run()` (a call that runs `iterations` iterations and
    returns arrays), after one warm-up call (compiles): kernels summed per name and
    divided by `iterations`, the device-busy microseconds per iteration, the wall ms/iter
    of the traced call."""
    jax.block_until_ready(run())  # compile + warm-up
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        with jax.profiler.trace(tmp, create_perfetto_trace=True):
            jax.block_until_ready(run())
        wall = time.perf_counter() - t0
        events = device_events(tmp)
    per_name = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        per_name[e["name"]][0] += 1
        per_name[e["name"]][1] += float(e.get("dur", 0.0))
    rows = sorted(((n, c / iterations, d / iterations) for n, (c, d) in per_name.items()), key=lambda r: -r[2])
    busy = sum(r[2] for r in rows)
    return dict(iterations=iterations, kernels_per_iteration=round(sum(r[1] for r in rows), 2),
                device_us_per_iter=busy, traced_ms_per_iter=1e3 * wall / iterations,
                kernels=[dict(name=n, calls_per_iter=round(c, 3), us_per_iter=round(d, 3)) for n, c, d in rows[:40]])


def profile_game(game, state, iterations: int) -> dict:
    """`profile_run` of `cfrjax.solve(game, state, iterations)`."""
    return profile_run(lambda: cfrjax.solve(game, state, iterations), iterations)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--specs", default=".carry/specs")
    ap.add_argument("--games", default="all")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--hlo", default=None, help="directory for each game's optimized HLO text")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "kernel_profile.jsonl"))
    args = ap.parse_args()
    env = environment()
    for entry in select(load_suite(), args.games):
        game = cfrjax.compile.compile_game(build_spec(entry, args.specs))
        state = cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear", dtype="float32")
        rec = dict(bench="profile", game=entry["name"], rule="cfr+", order="simultaneous", dtype="float32",
                   nodes=game.num_nodes, depth=game.depth, kernels_per_iteration=kernels_per_iteration(game, state),
                   **profile_game(game, state, args.iterations), **env)
        if args.hlo:
            os.makedirs(args.hlo, exist_ok=True)
            text = jax.jit(cfrjax.step, donate_argnums=1).lower(game, state).compile().as_text()
            with open(os.path.join(args.hlo, entry["name"] + ".hlo.txt"), "w") as f:
                f.write(text)
        append_records(args.out, [rec])
        top = ", ".join(f"{k['name']}={k['us_per_iter']:.1f}" for k in rec["kernels"][:6])
        print(f"{entry['name']}: busy {rec['device_us_per_iter']:.1f} us/iter, wall {rec['traced_ms_per_iter']:.4f} ms/iter; {top}",
              flush=True)


if __name__ == "__main__":
    main()
