"""Kernels per iteration and steady ms/iter, per game, rule and order (measure first).

    python bench/kernels.py [--specs DIR] [--out bench/results/kernels.jsonl]

Games come from the suite (`games/suite.toml`, `bench/suite.py`); `--games` picks a
comma-separated subset by short name. `DIR` holds pickled `GameSpec`s (`*.spec.pkl`,
written by `--write-specs DIR` on a machine with OpenSpiel, for every OpenSpiel game of
the suite), so the GPU machine needs no OpenSpiel. The HUNL games are built from their
TOML specs.

`bench/results/kernels_pull_experiment.jsonl` keeps an earlier experiment (H200, jax
0.11.2): summing the backward pass's children with a padded gather ("pull") instead of a
sorted segment sum cut kernels per iteration (Leduc 31 -> 10) but was 2-500x slower per
iteration on the GPU (Leduc 0.043 -> 0.25 ms, Goofspiel-5 0.037 -> 20 ms), so it was
removed.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import jax  # noqa: E402

import cfrjax  # noqa: E402
from cfrjax.profile import hlo_op_counts, kernels_per_iteration  # noqa: E402
from common import append_records, environment, peak_memory_bytes, time_solve  # noqa: E402
from suite import build_spec, load_suite, select, write_specs  # noqa: E402

SUITE = load_suite()
SPECS = {e["name"]: e["source"] for e in SUITE}


def load_spec(short, specs_dir):
    return build_spec(select(SUITE, short)[0], specs_dir)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--specs", default=".carry/specs")
    ap.add_argument("--write-specs", default=None)
    ap.add_argument("--games", default=",".join(SPECS))
    ap.add_argument("--rules", default="cfr+")
    ap.add_argument("--orders", default="simultaneous")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "kernels.jsonl"))
    args = ap.parse_args()
    if args.write_specs:
        write_specs(args.write_specs, select(SUITE, args.games))
        return
    env = environment()
    records = []
    for short in args.games.split(","):
        game = cfrjax.compile.compile_game(load_spec(short, args.specs))
        for rule in args.rules.split(","):
            for order in args.orders.split(","):
                state = cfrjax.init(game, rule=rule, order=order, averaging="linear", dtype="float32")
                ops = hlo_op_counts(game, state)
                t = time_solve(game, state, args.iterations)
                rec = dict(bench="kernels", game=short, rule=rule, order=order, dtype="float32", batch=1,
                           kernels=kernels_per_iteration(game, state), hlo_ops=dict(ops), **game.sizes(), **t,
                           peak_bytes=peak_memory_bytes(), **env)
                records.append(rec)
                print(f"{short:15s} {rule:6s} {order:12s} depth {game.depth:2d} kernels {rec['kernels']:4d} "
                      f"{t['ms_per_iter']:.4f} ms/iter (compile {t['compile_s']:.1f} s)", flush=True)
    append_records(args.out, records)


if __name__ == "__main__":
    main()
