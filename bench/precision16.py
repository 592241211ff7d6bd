"""16-bit storage against float32 (`precision="int16"`, `cfrjax.storage`): the
exploitability after N iterations of the same solve stored both ways, each evaluated in
float64 (`cfrjax.evaluate`), on the tiny test spot (`tests/test_storage.py`) and spots of
a folder. Records (`--out`, JSONL): spot, rule, order, iterations, both exploitabilities
(chips and % of the pot), their ratio, the difference in % of the pot, ms/iter of each.

    python bench/precision16.py --spots /work/shared/spots --only srp_Qs7h2c9d3s_river,srp_Qs7h2c9d_turn
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spots", default=os.path.join(HERE, "..", ".ab", "spots"))
    ap.add_argument("--only", default=None, help="comma-separated spot names of the folder (default: none)")
    ap.add_argument("--iterations", default="100,500")
    ap.add_argument("--rules", default="dcfr")
    ap.add_argument("--orders", default="alternating,simultaneous")
    ap.add_argument("--hands", default="range")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "precision16.jsonl"))
    a = ap.parse_args(argv)

    import cfrjax
    from cfrjax.games.poker.pot import starting_pot
    from test_storage import SPOT

    games = {"tiny (tests/test_storage.py)": cfrjax.load_game(SPOT, hands="range")}
    for name in (a.only.split(",") if a.only else ()):
        games[name] = cfrjax.load_game(os.path.join(a.spots, name + ".toml"), hands=a.hands)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for name, game in games.items():
        pot = starting_pot(game)
        for rule in a.rules.split(","):
            for order in a.orders.split(","):
                for n in (int(x) for x in a.iterations.split(",")):
                    command = " ".join(["python bench/precision16.py"] + (argv or sys.argv[1:]))
                    rec = dict(bench="precision16", spot=name, rule=rule, order=order, iterations=n, hands=a.hands,
                               pot=pot, commit=commit, command=command)
                    for precision in ("float32", "int16"):
                        state = cfrjax.init(game, rule=rule, order=order, dtype="float32", precision=precision)
                        cfrjax.solve(game, state, 1)   # compile
                        t0 = time.perf_counter()
                        state = cfrjax.solve(game, state, n)
                        state.regret.block_until_ready()
                        ms = 1e3 * (time.perf_counter() - t0) / n
                        e = float(cfrjax.evaluate(game, state)[0])
                        rec.update({f"expl_{precision}": e, f"expl_pct_pot_{precision}": 100 * e / pot,
                                    f"ms_per_iter_{precision}": ms})
                    rec["ratio"] = rec["expl_int16"] / rec["expl_float32"]
                    rec["diff_pct_pot"] = rec["expl_pct_pot_int16"] - rec["expl_pct_pot_float32"]
                    print(json.dumps({k: rec[k] for k in ("spot", "order", "iterations", "expl_pct_pot_float32",
                                                          "expl_pct_pot_int16", "ratio")}), flush=True)
                    with open(a.out, "a") as f:
                        f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
