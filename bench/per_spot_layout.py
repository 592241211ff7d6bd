"""Experiment: a batch of river spots with a board per spot, its sorted showdown run
batch-last or batch-first (`cfrjax.Plan.batch_first_min_subgames` set
to more or fewer than the batch), same batch,
same executable otherwise; ms per iteration of the whole batch and solves of
`--iterations` per minute. Records: `bench/results/per_spot_layout.jsonl`.

    python bench/per_spot_layout.py --spots 1024,4096 --iterations 200
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import jax

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cfrjax  # noqa: E402
from cfrjax import datagen  # noqa: E402
from cfrjax.batch import init_batch, solve_batch  # noqa: E402
from cfrjax.public import terminals  # noqa: E402
from boards import batch_games, random_spots  # noqa: E402
from _showdown_variants import VARIANTS  # noqa: E402
from common import append_records, environment  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spots", default="1024,4096")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--rules", default="dcfr:alternating")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layouts", default="batch_last,batch_first")
    ap.add_argument("--variants", default="library", help="batch-first variants of bench/_showdown_variants.py")
    ap.add_argument("--scans", default="cumsum", help="prefix sums off the CPU: cumsum (the library's) and/or "
                    "associative (lax.associative_scan, as on CPU), e.g. cumsum,associative")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "per_spot_layout.jsonl"))
    a = ap.parse_args(argv)
    n, records = a.iterations, []
    library_prefix = terminals.exclusive_prefix
    library_batch_first = terminals._showdown_batch_first
    for rule, order in (r.split(":") for r in a.rules.split(",")):
        cfg = datagen.DatagenConfig("hunl_river_full", spots=8, iterations=n, rule=rule, order=order)
        game = dataclasses.replace(datagen.spot_game(cfg, 0), labels=None)
        for B in (int(b) for b in a.spots.split(",")):
            games = batch_games(game, *random_spots(B))[1]
            states = init_batch(game, B, rule=rule, order=order, dtype="float32")
            combos = [(x, y, v) for x in a.layouts.split(",") for y in a.scans.split(",") for v in a.variants.split(",")]
            for layout, scan, variant in combos:
                terminals._showdown_batch_first = VARIANTS[variant] or library_batch_first
                plan = dataclasses.replace(cfrjax.plan.resolve_plan(), batch_first_min_subgames=0 if layout == "batch_first"
                                           else B + 1)
                planned = cfrjax.plan.use(games, plan)
                terminals.exclusive_prefix = (library_prefix if scan == "cumsum" else
                                              lambda x, cpu: library_prefix(x, True))
                jax.clear_caches()   # the functions replaced above are not in jit's key
                t0 = time.perf_counter()
                jax.block_until_ready(solve_batch(planned, states, n))
                first = time.perf_counter() - t0
                times = []
                for _ in range(a.repeats):
                    t0 = time.perf_counter()
                    jax.block_until_ready(solve_batch(planned, states, n))
                    times.append(time.perf_counter() - t0)
                t = min(times)
                rec = dict(bench="per_spot_layout", game="hunl_river_full", boards="per spot", layout=layout, scan=scan, variant=variant,
                           spots=B,
                           rule=rule, order=order, iterations=n, first_call_s=first, ms_per_iter=1e3 * t / n,
                           solves_per_minute_1000=60.0 * B / (t * 1000 / n), **dict(environment(), plan=plan.describe()))
                print(B, rule, order, layout, scan, variant, f"{rec['ms_per_iter']:.3f} ms/iter",
                      f"{rec['solves_per_minute_1000']:,.0f} solves of 1,000/min", flush=True)
                records.append(rec)
    append_records(a.out, records)


if __name__ == "__main__":
    main()
