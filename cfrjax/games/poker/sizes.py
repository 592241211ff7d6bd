"""Sizes and build times of the native poker subgames.

    python -m cfrjax.games.poker.sizes                      # hunl_river, hunl_turn
    python -m cfrjax.games.poker.sizes --libratus DIR       # + Libratus endgames 3 and 4, full range
    python -m cfrjax.games.poker.sizes --libratus DIR --only-libratus --endgames 4
    python -m cfrjax.games.poker.sizes --json               # one JSON object per line

Per game: deals, nodes, States / Infosets counted the paper's way, the GameSpec's
decision information sets, slots and decision edges, and the seconds to build the
GameSpec (`build_s`, including validation) and to compile it (`compile_s`). The full-range
Libratus endgames take minutes and several GB (endgame 3: 93,168,610 nodes, about 15 GB
to build); `--no-compile` stops after the GameSpec.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DEFAULT_GAMES = ("hunl_river", "hunl_turn")


def game_sizes(spec_or_config, *, compile: bool = True, chance: str = "folded") -> dict:
    """Counts and timings of one subgame (a `PokerSubgameSpec`, or a path to a `.toml`)."""
    from cfrjax.compile import compile_arrays
    from cfrjax.games.poker import PokerSubgameSpec, build_spec, count_paper_sizes, load_poker_config

    cfg = spec_or_config if isinstance(spec_or_config, PokerSubgameSpec) else load_poker_config(spec_or_config)
    t0 = time.perf_counter()
    spec = build_spec(cfg)
    build_s = time.perf_counter() - t0
    out = {"name": cfg.name, "street": cfg.street, "board": cfg.board}
    out.update(count_paper_sizes(spec))
    out["build_s"] = round(build_s, 3)
    if compile:
        t0 = time.perf_counter()
        arrays, static, _ = compile_arrays(spec, chance)
        out["compile_s"] = round(time.perf_counter() - t0, 3)
        out["slots"] = static["num_slots"]
        out["decision_edges"] = int(arrays["dec_child"].size)
        out["depth"] = len(static["level_start"]) - 2
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cfrjax.games.poker.sizes", description=__doc__.split("\n")[0])
    ap.add_argument("games", nargs="*", help="poker subgame .toml files (default: games/hunl_river.toml, games/hunl_turn.toml)")
    ap.add_argument("--libratus", metavar="DIR", help="also Libratus endgames 3 and 4 at full range from DIR (slow, GBs)")
    ap.add_argument("--endgames", default="3,4", help="which Libratus endgames with --libratus (default 3,4)")
    ap.add_argument("--only-libratus", action="store_true", help="with --libratus: skip the default games")
    ap.add_argument("--no-compile", action="store_true", help="count and time the GameSpec only")
    ap.add_argument("--json", action="store_true", help="print one JSON object per game")
    args = ap.parse_args(argv)

    jobs = list(args.games)
    if not jobs and not (args.libratus and args.only_libratus):
        jobs = [os.path.join(_ROOT, "games", f"{g}.toml") for g in DEFAULT_GAMES]
    if args.libratus:
        from cfrjax.games.poker.libratus import load_libratus_endgame
        for k in args.endgames.split(","):
            jobs.append(lambda k=k.strip(): load_libratus_endgame(os.path.join(args.libratus, f"subgame{k}.txt")))
    cols = ("name", "deals", "nodes", "states", "infosets", "decision_infosets", "slots", "build_s", "compile_s")
    if not args.json:
        print("".join(f"{c:>18}" for c in cols))
    for job in jobs:
        cfg = job() if callable(job) else job
        row = game_sizes(cfg, compile=not args.no_compile)
        if args.json:
            print(json.dumps(row))
        else:
            print("".join(f"{str(row.get(c, '-')):>18}" for c in cols))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
