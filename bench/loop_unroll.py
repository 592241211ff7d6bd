"""Experiment: per-iteration wall of the public form against `lax.scan`'s unroll factor.

On a GPU a scanned iteration costs its kernels plus the while loop's own per-trip work
(the trip-count predicate, buffer bookkeeping); with few, short kernels (a full-range river
spot) the loop's part can dominate. `lax.scan(..., unroll=u)` puts `u` iterations in one
trip. This measures ms/iter for a few unroll factors, solvers and spots, one process per
spot, and appends records to `bench/results/loop_unroll.jsonl`.

Measured (H200, jax 0.11.2, `bench/results/loop_unroll_h200.jsonl`): unroll 4 saves 5-17%
(full river CFR+ 0.034 -> 0.028 ms/iter, DCFR alternating 0.054 -> 0.048; full turn
0.58 -> 0.57 and 0.76 -> 0.71); 16 and 64 add little more and compile up to 10x longer.
The kernels, not the loop, are most of an iteration.

    python bench/loop_unroll.py --spots hunl_river_full,hunl_turn_full --unroll 1,4,16

Each loop compiles with cfrjax's compiler options (`cfrjax.xla_options`, recorded); the
records above were taken before those included XLA:GPU's while-loop double buffering.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "loop_unroll.jsonl")
ITERATIONS = {"hunl_river_full": 1000, "hunl_turn_full": 100}


def _one(spot: str, unrolls: list[int], rules_orders: list[tuple[str, str]], repeats: int, batch: int,
         iterations: int | None = None) -> list[dict]:
    sys.path.insert(0, HERE)
    import jax
    import jax.numpy as jnp
    import cfrjax
    from common import environment, wall_times

    game = cfrjax.load_game(spot, form="public")
    n = iterations or ITERATIONS.get(spot, 200)
    out = []
    for rule, order in rules_orders:
        state = cfrjax.init(game, rule=rule, order=order, dtype="float32")
        for u in unrolls:
            def run(s, u=u):
                return jax.lax.scan(lambda s, _: (cfrjax.step(game, s), None), s, None, length=n, unroll=u)[0]
            # cfrjax's compiler options, as its own solves compile (`cfrjax.xla_options`: on a
            # GPU the while loop's double buffering, itself an unroll by two).
            opts = cfrjax.xla_options.XLA_OPTIONS
            f = jax.jit(run, compiler_options=opts)
            if batch > 1:
                f = jax.jit(jax.vmap(run), compiler_options=opts)
                st = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
            else:
                st = state
            t0 = time.perf_counter()
            c = f.lower(st).compile()
            compile_s = time.perf_counter() - t0
            jax.block_until_ready(c(st))
            times = wall_times(lambda: c(st), repeats)
            rec = dict(bench="loop_unroll", game=spot, form="public", rule=rule, order=order, dtype="float32",
                       unroll=u, batch=batch, iterations=n, repeats=repeats, compile_s=compile_s,
                       compiler_options={k: str(v) for k, v in opts.items()},
                       ms_per_iter=1e3 * statistics.median(times) / n, ms_per_iter_min=1e3 * min(times) / n,
                       **environment())
            print(json.dumps({k: rec[k] for k in ("game", "rule", "order", "unroll", "batch", "ms_per_iter", "compile_s")}),
                  file=sys.stderr, flush=True)
            out.append(rec)
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spots", default="hunl_river_full,hunl_turn_full")
    p.add_argument("--unroll", default="1,4,16")
    p.add_argument("--rules", default="cfr+:simultaneous,dcfr:alternating")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--iterations", type=int, default=None, help="per timed call (default: per spot)")
    p.add_argument("--out", default=OUT)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    unrolls = [int(x) for x in a.unroll.split(",")]
    ro = [tuple(x.split(":")) for x in a.rules.split(",")]
    if a.worker:
        print(json.dumps(_one(a.worker, unrolls, ro, a.repeats, a.batch, a.iterations)))
        return
    records = []
    for spot in a.spots.split(","):
        proc = subprocess.run([sys.executable, __file__, "--worker", spot, "--unroll", a.unroll, "--rules", a.rules,
                               "--repeats", str(a.repeats), "--batch", str(a.batch)]
                              + (["--iterations", str(a.iterations)] if a.iterations else []),
                              stdout=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            print(f"{spot}: worker failed ({proc.returncode})", file=sys.stderr)
            continue
        records += json.loads(proc.stdout.strip().splitlines()[-1])
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
