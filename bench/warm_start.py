"""Warm start against cold start after a small change to a solved spot.

The spot (default `hunl_turn_full`, public form, float32, the default rule) is solved
from zeros to `--target` of the starting pot (evaluated in float64 every `--eval-every`
iterations). Then each change is solved three times to the same target: from zeros, from
the first solution's state (`cfrjax.warm_start(changed, state)`) and from its average
policy alone (`cfrjax.warm_start(changed, policy)`: a new solve that starts playing it),
and the iterations and seconds are recorded:

* `narrow`: every third hand of player 0's range removed (`set_root_ranges`);
* `lock`: player 0's first root information set locked to its last action (`cfrjax.lock`).

One JSONL record per change goes to `bench/results/warm_start.jsonl` (spot, change, rule,
order, target, cold, warm (state) and warm-from-policy iterations and seconds, device,
versions, commit).

    python bench/warm_start.py --spot hunl_turn_full --target 0.003
    python bench/warm_start.py --spot hunl_river --random-hands 100 --eval-every 5 --rule cfr+
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cfrjax  # noqa: E402
from cfrjax.games.poker import starting_pot  # noqa: E402
from common import environment  # noqa: E402

OUT = os.path.join(HERE, "results", "warm_start.jsonl")


def to_target(game, state, target_chips: float, eval_every: int, max_iterations: int):
    """`(state, iterations run, seconds, exploitability reached)` of a target-driven solve."""
    t0 = time.perf_counter()
    out, trace = cfrjax.solve_with_trace(game, state, eval_every=eval_every, target_exploitability=target_chips,
                              max_iterations=max_iterations)
    jax.block_until_ready(out)
    seconds = time.perf_counter() - t0
    return out, int(trace.iteration[-1]) - int(state.iteration), seconds, float(trace.exploitability[-1])


def changes(game):
    """`{name: (changed game, lock or None)}`."""
    r0, r1 = cfrjax.poker.root_ranges(game)
    r0[np.flatnonzero(r0)[::3]] = 0.0
    key, _, _ = next(iter(game.labels.infoset_keys()))
    n_actions = len(game.labels.action_names[0])
    return {"narrow": (cfrjax.poker.set_root_ranges(game, r0, r1), None),
            "lock": (game, {key: [0.0] * (n_actions - 1) + [1.0]})}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spot", default="hunl_turn_full")
    ap.add_argument("--target", type=float, default=0.003, help="exploitability target, fraction of the pot")
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--max-iterations", type=int, default=3000)
    ap.add_argument("--random-hands", type=int, default=None, metavar="K",
                    help="override the spot's ranges with K random hands per player (e.g. hunl_river)")
    ap.add_argument("--rule", default="dcfr")
    ap.add_argument("--order", default="alternating")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    game = cfrjax.load_game(args.spot, **({} if args.random_hands is None else dict(random_hands=args.random_hands)))
    pot = starting_pot(game)
    target = args.target * pot
    init = cfrjax.init(game, rule=args.rule, order=args.order, dtype="float32")
    # compile once (the changed games share the shapes, so every later solve reuses it)
    to_target(game, init, float("inf"), args.eval_every, args.max_iterations)
    solved, n0, s0, e0 = to_target(game, init, target, args.eval_every, args.max_iterations)
    print(f"{args.spot}: {n0} iterations ({s0:.1f} s) to {e0 / pot:.4%} of the pot", flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    for name, (changed, lock) in changes(game).items():
        def start(state):
            return state if lock is None else cfrjax.lock(changed, state, lock)
        _, nc, sc, ec = to_target(changed, start(cfrjax.init(changed, rule=args.rule, order=args.order,
                                                              dtype="float32")), target, args.eval_every,
                                  args.max_iterations)
        _, nw, sw, ew = to_target(changed, start(cfrjax.warm_start(changed, solved)), target, args.eval_every,
                                  args.max_iterations)
        t0 = time.perf_counter()
        from_policy = cfrjax.warm_start(changed, cfrjax.average_policy(game, solved), config=solved.config)
        jax.block_until_ready(from_policy)
        setup = time.perf_counter() - t0          # one regret pass (and its compile): part of the policy arm's time
        _, npol, spol, epol = to_target(changed, start(from_policy), target, args.eval_every, args.max_iterations)
        rec = dict(spot=args.spot, random_hands=args.random_hands, form="public", change=name, rule=init.config.rule, order=init.config.order,
                   dtype="float32", target_pct_pot=100 * args.target, eval_every=args.eval_every, pot=pot,
                   first_solve_iterations=n0, first_solve_s=s0, cold_iterations=nc, cold_s=sc,
                   cold_pct_pot=100 * ec / pot, warm_iterations=nw, warm_s=sw, warm_pct_pot=100 * ew / pot,
                   policy_iterations=npol, policy_s=setup + spol, policy_pct_pot=100 * epol / pot,
                   policy_strength=cfrjax.warm.DEFAULT_STRENGTH, **environment())
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"  {name}: cold {nc} iterations ({sc:.1f} s), warm {nw} ({sw:.1f} s), from the policy {npol} "
              f"({setup + spol:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
