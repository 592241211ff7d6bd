"""CFR-D completion of a depth-limited turn solve: its whole-game exploitability over iterations.

The spot (`--spot`) is `tests/test_depth_limited.py`'s (Ks Js Th 7d, pot 20, stack 60, three
hands a player, bet 100%, no raise) or `turn97` (the same board, 97 hands, bets 50% and
100%, one 2.5x raise, stack 100), cut below its river card with the stateful `exact` leaf
function (`cfrjax.public.depth.exact_leaf(whole, 100, warm=W)`). The cut game is solved (DCFR,
alternating, float64) in chunks of `--chunk` iterations; after each chunk
`cfrjax.public.depth.completed_policy` (the average trunk completed by the leaf strategies' reach-
weighted average) is evaluated on the whole turn spot (float64 exploitability, % of the
pot), beside the cut game's local exploitability (`cfrjax.evaluate`, chips). One JSONL
record per (warm, iterations) goes to `bench/results/depth_completion.jsonl`.

    python bench/depth_completion.py --warm 1 3 10 --chunk 50 --chunks 16
    python bench/depth_completion.py --spot turn97 --warm 3 --chunk 100 --chunks 4
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cfrjax  # noqa: E402
from cfrjax.games.poker import PokerSubgameSpec  # noqa: E402
from cfrjax.games.poker.public_tree import build_public  # noqa: E402
from common import append_records, environment  # noqa: E402

OUT = os.path.join(HERE, "results", "depth_completion.jsonl")
SPOTS = {
    "test_depth_limited": dict(board="Ks Js Th 7d", pot=20, stack=60, range0={"AsAh": 1.0, "QhJh": 0.8, "8c7c": 0.6},
                               range1={"KdKc": 1.0, "Td9d": 0.7, "6s6h": 0.9}, bet_fractions=(1.0,), raise_cap=0),
    "turn97": dict(board="Ks Js Th 7d", pot=20, stack=100, range0="AA,KK,QQ,AK,AQ,KQs,QJs,T9s,98s,A5s",
                   range1="KK,JJ,TT,77,AK,AJ,KQ,QJs,J9s,65s", betting={"bet": "50%, 100%", "raise": "2.5x"},
                   raise_cap=1),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spot", choices=sorted(SPOTS), default="test_depth_limited")
    ap.add_argument("--warm", type=int, nargs="+", default=[1, 3, 10])
    ap.add_argument("--chunk", type=int, default=50)
    ap.add_argument("--chunks", type=int, default=16)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    spot = SPOTS[args.spot]
    whole = build_public(PokerSubgameSpec(**spot), hands="range")
    env = environment()
    for warm in args.warm:
        cut = cfrjax.depth_limited(whole, cfrjax.public.depth.exact_leaf(whole, 100, warm=warm))
        state = cfrjax.init(cut, dtype="float64")
        t0 = time.perf_counter()
        records = []
        for k in range(1, args.chunks + 1):
            state = cfrjax.solve(cut, state, args.chunk)
            e = float(cfrjax.exploitability(whole, cfrjax.public.depth.completed_policy(cut, state, whole)))
            local, _ = cfrjax.evaluate(cut, state)
            rec = dict(spot=args.spot, hands=whole.num_hands, warm=warm, iterations=k * args.chunk,
                       completed_pct_pot=100 * e / spot["pot"], local_chips=float(local),
                       seconds=time.perf_counter() - t0, **env)
            print(f"warm={warm} T={rec['iterations']}: completed {rec['completed_pct_pot']:.3f}% of the pot, "
                  f"local {local:.4f} chips", flush=True)
            records.append(rec)
        append_records(args.out, records)


if __name__ == "__main__":
    main()
