"""A plan's choice off and on, side by side in one process (A/B of one code path).

    python bench/ab_switch.py pallas:spot \
        --games hunl_river_full,libratus:PATH --runs cfr+:simultaneous,dcfr:alternating \
        --out bench/results/ab_spot_kernel_h200.jsonl

For each game (a shipped poker spec or `libratus:PATH`, both in the public form) and
each `rule:order`, the solve of `--iterations` float32 iterations is compiled through
`cfrjax`'s own path (`cfrjax.driver.lower_solve`: its compiler options apply, nothing
locked) once with the choice off and once on (`cfrjax.Plan`: `pallas:NAME` a Pallas kernel
in `Plan.pallas`, or a boolean field such as `native_half`; the other fields the auto
plan's), then both executables are timed
alternately (`--rounds` rounds) and profiled (kernels and device microseconds per
iteration, `bench/kernel_profile.py`). Each record: ms/iter (median and min), compile
seconds, kernels per iteration, device us per iteration, the float64-evaluated
exploitability of the average after the solve (% of the pot too) and the largest
difference of the final regrets between the arms, the plan of the arm; plus the top
kernels of each arm.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import numpy as np  # noqa: E402

import cfrjax  # noqa: E402
from common import append_records, environment  # noqa: E402
from kernel_profile import profile_run  # noqa: E402


def _game(source: str):
    from cfrjax.games.poker import load_libratus_endgame, load_poker_config
    from cfrjax.games.poker.public_tree import build_public
    if source.startswith("libratus:"):
        return build_public(load_libratus_endgame(source.split(":", 1)[1]))
    return build_public(load_poker_config(cfrjax.load.spec_path(source)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("switch", help="a cfrjax.Plan choice: pallas:NAME (a Pallas kernel) or a boolean field, e.g. "
                                   "native_half")
    ap.add_argument("--games", default="hunl_river_full")
    ap.add_argument("--runs", default="cfr+:simultaneous,dcfr:alternating")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    auto = cfrjax.plan.resolve_plan()

    def plan(on: bool):
        if args.switch.startswith("pallas:"):
            name = args.switch.split(":", 1)[1]
            return dataclasses.replace(auto, pallas=tuple(k for k in auto.pallas if k != name) + ((name,) if on else ()))
        return dataclasses.replace(auto, **{args.switch: on})
    env = environment()
    N = args.iterations
    for source in args.games.split(","):
        plain = _game(source)
        pot = float(plain.labels.source["poker"].get("pot", 0.0) or 0.0)
        games = {on: cfrjax.plan.use(plain, plan(on)) for on in (False, True)}
        for run in args.runs.split(","):
            rule, order = run.split(":")
            state = cfrjax.locking.drop_idle_locks(cfrjax.init(plain, rule=rule, order=order, dtype="float32"))[0]
            exe, prof, final = {}, {}, {}
            for on in (False, True):
                game = games[on]
                t0 = time.perf_counter()
                exe[on] = cfrjax.driver.lower_solve(game, state, N).compile()
                compile_s = time.perf_counter() - t0
                out = jax.block_until_ready(exe[on](game, state))
                final[on] = out[0] if isinstance(out, tuple) else out
                prof[on] = profile_run(lambda: exe[on](game, state), N)
                prof[on]["compile_s"] = compile_s
            times = {False: [], True: []}
            for _ in range(args.rounds):
                for on in (False, True):
                    t0 = time.perf_counter()
                    jax.block_until_ready(exe[on](games[on], state))
                    times[on].append(1e3 * (time.perf_counter() - t0) / N)
            diff = float(np.max(np.abs(np.asarray(final[True].regret, np.float64)
                                       - np.asarray(final[False].regret, np.float64))))
            records = []
            for on in (False, True):
                ex = float(cfrjax.driver.evaluate(games[on], final[on])[0])   # float64 evaluation
                rec = dict(bench="ab_switch", switch=args.switch, value=on, game=source, form="public", rule=rule,
                           order=order, dtype="float32", iterations=N, ms_per_iter=float(np.median(times[on])),
                           ms_per_iter_min=float(min(times[on])), ms_per_iter_calls=times[on],
                           compile_s=round(prof[on]["compile_s"], 3),
                           kernels_per_iteration=prof[on]["kernels_per_iteration"],
                           device_us_per_iter=round(prof[on]["device_us_per_iter"], 3), exploitability=ex,
                           exploitability_pct_pot=100 * ex / pot if pot else None, max_regret_diff_between_arms=diff,
                           top_kernels=prof[on]["kernels"][:8], **dict(env, plan=games[on].plan.describe()))
                records.append(rec)
                print(json.dumps({k: v for k, v in rec.items() if k not in ("top_kernels", "ms_per_iter_calls")}),
                      flush=True)
            if args.out:
                append_records(args.out, records)


if __name__ == "__main__":
    main()
