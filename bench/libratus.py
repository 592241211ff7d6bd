"""Libratus endgames at full range: build time, compile time, memory plan, ms/iter, peak memory.

    python bench/libratus.py DIR [--endgames 4] [--form tabular|public] [--iterations 50]
                             [--out bench/results/libratus.jsonl]

`DIR` holds the public endgame files (`subgame<k>.txt`). `--form tabular` (default) builds
the per-deal tree (`compile_game(build_spec(...))`; endgame 1, a turn, does not fit),
`--form public` the public tree over the file's ranges (`build_public`). CFR+ simultaneous,
float32, `common.time_solve`'s protocol.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import jax  # noqa: E402

import cfrjax  # noqa: E402
from cfrjax.games.poker import build_spec  # noqa: E402
from cfrjax.games.poker.libratus import load_libratus_endgame  # noqa: E402
from cfrjax.games.poker.public_tree import build_public  # noqa: E402
from common import append_records, environment, peak_memory_bytes, time_solve  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--endgames", default="4")
    ap.add_argument("--iterations", type=int, default=50)
    ap.add_argument("--form", default="tabular", choices=("tabular", "public"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "libratus.jsonl"))
    args = ap.parse_args()
    env = environment()
    for k in args.endgames.split(","):
        t0 = time.perf_counter()
        endgame = load_libratus_endgame(os.path.join(args.dir, f"subgame{k}.txt"))
        spec = build_spec(endgame) if args.form == "tabular" else None
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        game = cfrjax.compile.compile_game(spec) if args.form == "tabular" else build_public(endgame)
        compile_game_s = time.perf_counter() - t0
        del spec
        plan = cfrjax.memory.memory_plan(game)
        print(plan, flush=True)
        state = cfrjax.init(game, rule="cfr+", order="simultaneous", dtype="float32")
        t = time_solve(game, state, args.iterations, repeats=3)
        rec = dict(bench="libratus", game=f"libratus_endgame{k}", form=args.form, rule="cfr+", order="simultaneous",
                   dtype="float32", batch=1, build_s=build_s, compile_game_s=compile_game_s,
                   plan_bytes=plan.total_bytes, **game.sizes(), **t, peak_bytes=peak_memory_bytes(), **env)
        print({x: rec[x] for x in ("game", "nodes", "build_s", "compile_game_s", "ms_per_iter", "peak_bytes")},
              flush=True)
        append_records(args.out, [rec])


if __name__ == "__main__":
    main()
