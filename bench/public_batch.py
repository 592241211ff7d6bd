"""Batched full-range river spots in the public form: solves per minute on one device.

B river spots share the tree of a spec (default `hunl_river_full`) and differ in their
root ranges (uniform random weights per hand and player, `cfrjax.poker.set_root_ranges` under
`vmap` with `cfrjax.batch_axes`); `cfrjax.solve_batch` runs `--iterations` iterations of
the default rule (DCFR alternating) or `--rule/--order`, float32. Timing: compile and
first call, then the median of `--repeats` calls. Records (one per batch size) go to
`bench/results/public_batch.jsonl`: spot, B, iterations, rule, order, ms per call,
subgame-iterations per second, solves of `--iterations` per minute, compile s, device,
versions; plus the exploitability of subgame 0 after the call, evaluated in float64.

    python bench/public_batch.py --batches 1,64,256,1024 --iterations 1000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cfrjax  # noqa: E402
from common import environment, peak_memory_bytes  # noqa: E402

OUT = os.path.join(HERE, "results", "public_batch.jsonl")


def run(spot: str, B: int, iterations: int, repeats: int, rule: str, order: str, seed: int = 0) -> dict:
    game = cfrjax.load_game(spot)
    rng = np.random.default_rng(seed)
    w0, w1 = rng.uniform(size=(2, B, 1326))
    games = jax.vmap(cfrjax.poker.set_root_ranges, (None, 0, 0), cfrjax.batch_axes(game))(game, w0, w1)
    states = cfrjax.batch.init_batch(game, B, rule=rule, order=order, dtype="float32")
    t0 = time.perf_counter()
    out = jax.block_until_ready(cfrjax.solve_batch(games, states, iterations))
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(cfrjax.solve_batch(games, states, iterations))
        times.append(time.perf_counter() - t0)
    call_s = statistics.median(times)
    g0 = jax.tree.map(lambda x, ax: x if ax is None else x[0], games, cfrjax.batch_axes(game),
                      is_leaf=lambda x: x is None)
    e0, _ = cfrjax.evaluate(g0, jax.tree.map(lambda x: x[0], out))
    return dict(spot=spot, form="public", batch=B, iterations=iterations, rule=rule, order=order, dtype="float32",
                ms_per_call=1e3 * call_s, first_call_s=first_s, subgame_iterations_per_s=B * iterations / call_s,
                solves_per_minute=60 * B / call_s, exploitability_subgame0=float(e0),
                peak_bytes=peak_memory_bytes(), **environment())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spot", default="hunl_river_full")
    ap.add_argument("--batches", default="1,64,256,1024")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rule", default=cfrjax.rules.DEFAULT_RULE)
    ap.add_argument("--order", default=cfrjax.rules.DEFAULT_ORDER)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    for B in (int(b) for b in args.batches.split(",")):
        rec = run(args.spot, B, args.iterations, args.repeats, args.rule, args.order)
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"{args.spot} B={B}: {rec['ms_per_call']:.1f} ms per {args.iterations} iterations, "
              f"{rec['solves_per_minute']:,.0f} solves/min, compile+first {rec['first_call_s']:.1f} s, "
              f"subgame 0 exploitability {rec['exploitability_subgame0']:.3e}", flush=True)


if __name__ == "__main__":
    main()
