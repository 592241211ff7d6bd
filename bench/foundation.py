"""ms/iter of the foundation rules on Kuhn, Leduc and Liar's Dice 1x6 (by default; any
games of `games/suite.toml` with `--games`), and OpenSpiel's C++ CFR+ on the same games
measured in the same run (CPU only).

    python bench/foundation.py [--games-dir DIR] [--out bench/results/foundation.jsonl]

On a machine without OpenSpiel, pass `--games-dir` with games saved by `--save-games DIR`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import jax  # noqa: E402

import cfrjax  # noqa: E402
from common import append_records, environment, peak_memory_bytes, time_solve  # noqa: E402
from suite import is_poker, load_suite, select, source_path  # noqa: E402

DEFAULT_GAMES = "kuhn,leduc,liars_dice_1x6"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", default=DEFAULT_GAMES, help="comma-separated suite names (games/suite.toml) or 'all'")
    ap.add_argument("--games-dir", default=None)
    ap.add_argument("--save-games", default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "foundation.jsonl"))
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--openspiel", action="store_true", help="also time pyspiel.CFRPlusSolver (C++)")
    args = ap.parse_args()
    env = environment()
    records = []
    for entry in select(load_suite(), args.games):
        short, name = entry["name"], source_path(entry)
        source = os.path.join(args.games_dir, short + ".npz") if args.games_dir else name
        t0 = time.perf_counter()
        game = cfrjax.load_game(source)
        build_s = time.perf_counter() - t0
        if args.save_games:
            os.makedirs(args.save_games, exist_ok=True)
            cfrjax.save_game(game, os.path.join(args.save_games, short + ".npz"))
        for order in ("simultaneous", "alternating"):
            for rule in ("cfr", "cfr+"):
                state = cfrjax.init(game, rule=rule, order=order, averaging="linear", dtype="float32")
                t = time_solve(game, state, args.iterations)
                rec = dict(bench="foundation", game=short, rule=rule, order=order, averaging="linear", dtype="float32",
                           backend_arm="cfrjax", batch=1, build_s=build_s, **game.sizes(), **t,
                           peak_bytes=peak_memory_bytes(), **env)
                records.append(rec)
                print(f"{short:16s} {rule:5s} {order:12s} {t['ms_per_iter']:.4f} ms/iter  compile {t['compile_s']:.2f} s",
                      flush=True)
        if args.openspiel and not is_poker(entry):
            import pyspiel
            solver = pyspiel.CFRPlusSolver(pyspiel.load_game(name))
            n = 20 if short != "liars_dice_1x6" else 3
            solver.evaluate_and_update_policy()
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                for _ in range(n):
                    solver.evaluate_and_update_policy()
                times.append((time.perf_counter() - t0) / n)
            times.sort()
            rec = dict(bench="foundation", game=short, rule="cfr+", order="alternating", averaging="linear",
                       dtype="float64", backend_arm="openspiel_cpp_CFRPlusSolver", batch=1,
                       ms_per_iter=1e3 * times[1], repeats=3, iterations=n, **game.sizes(), **env)
            records.append(rec)
            print(f"{short:16s} OpenSpiel C++ CFRPlusSolver {rec['ms_per_iter']:.3f} ms/iter", flush=True)
    append_records(args.out, records)


if __name__ == "__main__":
    main()
