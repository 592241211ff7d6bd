"""Where the public form's GPU time goes: per-kernel device time of one spot and of a batch.

For a full-range river spot alone (and the turn with `--turn`), and for a batch of B river
spots with a board per spot (`cfrjax.games.poker.boards.set_boards`, as `cfrjax datagen`
solves them), the compiled solve is warmed up and then `--iterations` iterations run under
`jax.profiler.trace`; the device's kernels are summed per name (`kernel_profile.device_events`)
and divided by the iteration count. One record per case in
`bench/results/public_profile.jsonl`: device-busy microseconds per iteration, wall
ms/iter of the traced run, the top kernels.

    python bench/public_profile.py --spots 1024,4096 --iterations 50
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cfrjax  # noqa: E402
from cfrjax import datagen  # noqa: E402
from cfrjax.batch import init_batch, solve_batch  # noqa: E402
from boards import batch_games, random_spots  # noqa: E402
from common import append_records, environment  # noqa: E402
from kernel_profile import profile_run as _profile  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spots", default="1024", help="batch sizes of river spots, a board per spot")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--rules", default="dcfr:alternating,cfr+:simultaneous")
    ap.add_argument("--turn", action="store_true", help="also the full-range turn spot alone")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "public_profile.jsonl"))
    a = ap.parse_args(argv)
    n = a.iterations
    records = []
    for rule, order in (r.split(":") for r in a.rules.split(",")):
        for spot in ("hunl_river_full",) + (("hunl_turn_full",) if a.turn else ()):
            game = cfrjax.load_game(spot, form="public")
            state = cfrjax.init(game, rule=rule, order=order, dtype="float32")
            rec = _profile(lambda: cfrjax.solve(game, state, n), n)
            records.append(dict(bench="public_profile", game=spot, batch=1, rule=rule, order=order, **rec))
        cfg = datagen.DatagenConfig("hunl_river_full", spots=8, iterations=n, rule=rule, order=order)
        game = dataclasses.replace(datagen.spot_game(cfg, 0), labels=None)
        for B in (int(b) for b in a.spots.split(",")):
            games = batch_games(game, *random_spots(B))[1]
            states = init_batch(game, B, rule=rule, order=order, dtype="float32")
            rec = _profile(lambda: solve_batch(games, states, n), n)
            records.append(dict(bench="public_profile", game="hunl_river_full", batch=B, boards="per spot",
                                rule=rule, order=order, **rec))
    for r in records:
        r.update(environment())
        print(r["game"], r["batch"], r["rule"], r["order"], f"{r['device_us_per_iter']:.1f} us busy/iter,",
              f"{r['traced_ms_per_iter']:.3f} ms/iter traced, {r['kernels_per_iteration']} kernels/iter", flush=True)
        for k in r["kernels"][:12]:
            print(f"    {k['us_per_iter']:9.2f} us  x{k['calls_per_iter']:<5} {k['name']}", flush=True)
    append_records(a.out, records)


if __name__ == "__main__":
    main()
