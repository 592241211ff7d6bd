"""Side-by-side timing of two checkouts of cfrjax in one run on one machine (A/B).

Each (game, checkout) is timed in its own process that imports `cfrjax` from the given
root, in alternating order (A, B, A, B, ...), so both see the same machine state. The
protocol is `bench/common.time_solve`'s (compile, one solve, then the median of
`repeats` timed solves of `iterations` iterations, CFR+ simultaneous float32, linear
averaging), through the public API only (`cfrjax.load_game`, `init`, `solve`), so it
times any commit.

    python bench/ab_commits.py --root before=.ab/old --root after=. \
        --game kuhn=.ab/games/kuhn.npz ... --game libratus4=libratus:.ab/libratus/subgame4.txt \
        --out bench/results/refactor_ab.jsonl

Game sources: a saved `.npz` (compile OpenSpiel games on a machine that has OpenSpiel
with `cfrjax.save_game`), a poker `.toml`, `libratus:PATH` (built in the worker), or
`spots:B:G`: B full-range river spots of `cfrjax datagen`'s tree group G, a random board
and random ranges per spot, solved in one `solve_batch` (`bench/boards.py`).
`--rule` / `--order` set the rule (default CFR+ simultaneous). `--xla-flags LABEL=FLAGS`
adds XLA flags to one label's workers: two labels on one root A/B a compiler flag. A game's solve is timed
inside a jit of the worker's (any commit's `solve` runs there; cfrjax's own compiler
options, `cfrjax.xla_options`, do not apply), a `spots:` batch through `solve_batch`
called directly, as a user calls it (its options apply; `compile_s` is then compile and
one solve).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def _worker(root: str, source: str, iterations: int, repeats: int, rule: str = "cfr+",
            order: str = "simultaneous", averaging: str = "linear") -> dict:
    """Time float32 solves of `source` with `cfrjax` imported from `root` (run in a fresh
    process per checkout; also `bench/precision.py time`'s worker)."""
    sys.path.insert(0, os.path.abspath(root))
    import jax
    import cfrjax

    sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))   # after `root`: its cfrjax is timed
    from common import wall_times

    t0 = time.perf_counter()
    if source.startswith("spots:"):
        return _spots_worker(source, iterations, repeats, rule, order)
    if source.startswith("libratus:"):
        from cfrjax.games.poker import build_spec, load_libratus_endgame
        game = cfrjax.compile.compile_game(build_spec(load_libratus_endgame(source.split(":", 1)[1])))
    else:
        game = cfrjax.load_game(source)
    build_s = time.perf_counter() - t0
    state = cfrjax.init(game, rule=rule, order=order, averaging=averaging, dtype="float32")
    run = jax.jit(lambda g, s: cfrjax.solve(g, s, iterations, check_memory=False))
    t0 = time.perf_counter()
    run.lower(game, state).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(run(game, state))
    times = wall_times(lambda: run(game, state), repeats)
    return dict(cfrjax_file=cfrjax.__file__, plan=_plan(game), state_fields=sorted(vars(state)), nodes=int(game.num_nodes), build_s=build_s, compile_s=compile_s,
                ms_per_iter=1e3 * statistics.median(times) / iterations, ms_per_iter_min=1e3 * min(times) / iterations,
                iterations=iterations, repeats=repeats, device=str(jax.devices()[0].device_kind),
                backend=jax.default_backend(), jax=jax.__version__)


def _plan(game) -> str:
    """The implementation plan `game` runs under (`cfrjax.plan.Plan.describe`), or what a
    checkout from before the plan had instead."""
    try:
        from cfrjax.plan import plan_of
    except ImportError:
        return "none: a checkout from before the plan (module switches)"
    return plan_of(game).describe()


def _spots_worker(source: str, iterations: int, repeats: int, rule: str, order: str) -> dict:
    """`_worker` for `spots:B:G` (a board per spot, `solve_batch`)."""
    import dataclasses

    import jax
    import cfrjax
    from cfrjax import datagen
    from cfrjax.batch import init_batch, solve_batch

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from boards import batch_games, random_spots
    from common import wall_times

    _, B, group = source.split(":")
    B = int(B)
    cfg = datagen.DatagenConfig("hunl_river_full", spots=8, iterations=iterations, rule=rule, order=order)
    game = dataclasses.replace(datagen.spot_game(cfg, int(group)), labels=None)
    games = batch_games(game, *random_spots(B))[1]
    states = init_batch(game, B, rule=rule, order=order, dtype="float32")
    # `solve_batch` called as a user calls it: its own jit is the outermost, so it compiles
    # with cfrjax's compiler options (`cfrjax.xla_options`; a jit around it would drop them).
    t0 = time.perf_counter()
    jax.block_until_ready(solve_batch(games, states, iterations))
    compile_s = time.perf_counter() - t0                                   # compile + one solve
    times = wall_times(lambda: solve_batch(games, states, iterations), repeats)
    med = statistics.median(times)
    return dict(cfrjax_file=cfrjax.__file__, plan=_plan(game), spots=B, group=int(group), compile_s=compile_s,
                ms_per_iter=1e3 * med / iterations, ms_per_iter_min=1e3 * min(times) / iterations,
                solves_per_minute=60.0 * B * iterations / (iterations * med), iterations=iterations,
                repeats=repeats, device=str(jax.devices()[0].device_kind), backend=jax.default_backend(),
                jax=jax.__version__)


def _env(xla_flags: str | None) -> dict:
    """The workers' environment: this one's, with `xla_flags` appended to `XLA_FLAGS`."""
    env = dict(os.environ)
    if xla_flags:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {xla_flags}".strip()
    return env


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", action="append", required=True, metavar="LABEL=DIR")
    p.add_argument("--game", action="append", required=True, metavar="NAME=SOURCE")
    p.add_argument("--iterations", type=int, default=1000)
    p.add_argument("--big-iterations", type=int, default=100, help="iterations for games of 1M nodes or more")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--rounds", type=int, default=2, help="alternations A, B per game")
    p.add_argument("--rule", default="cfr+")
    p.add_argument("--order", default="simultaneous")
    p.add_argument("--xla-flags", action="append", default=[], metavar="LABEL=FLAGS",
                   help="XLA_FLAGS for one checkout label's workers (an A/B of compiler flags: two labels, one root)")
    p.add_argument("--commit", action="append", default=[], metavar="LABEL=HASH",
                   help="the commit of a checkout label's root, written in its records")
    p.add_argument("--out", default=None)
    p.add_argument("--worker", nargs=4, metavar=("ROOT", "SOURCE", "ITERATIONS", "REPEATS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        root, source, it, rep = args.worker
        print(json.dumps(_worker(root, source, int(it), int(rep), args.rule, args.order)))
        return 0
    roots = [r.split("=", 1) for r in args.root]
    flags = dict(f.split("=", 1) for f in args.xla_flags)
    commits = dict(c.split("=", 1) for c in args.commit)
    records = []
    for spec in args.game:
        name, source = spec.split("=", 1)
        big = source.startswith(("libratus:", "spots:"))
        iterations = args.big_iterations if big else args.iterations
        for rnd in range(args.rounds):
            for label, root in roots:
                out = subprocess.run([sys.executable, __file__, "--root", "x=x", "--game", "x=x", "--worker", root,
                                      source, str(iterations), str(args.repeats), "--rule", args.rule, "--order", args.order],
                                 capture_output=True, text=True, env=_env(flags.get(label)))
                if out.returncode != 0:
                    print(f"{name} {label}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                    continue
                rec = dict(json.loads(out.stdout.strip().splitlines()[-1]), game=name, checkout=label, round=rnd,
                           commit=commits.get(label),
                           rule=args.rule, order=args.order, dtype="float32", bench="ab_commits",
                           xla_flags=_env(flags.get(label)).get("XLA_FLAGS", ""))
                records.append(rec)
                print(f"{name:16s} {label:8s} round {rnd}: {rec['ms_per_iter']:.4f} ms/iter "
                      f"(compile {rec['compile_s']:.1f} s)", flush=True)
                if args.out:
                    with open(args.out, "a") as f:
                        f.write(json.dumps(rec) + "\n")
    labels = [label for label, _ in roots]
    if len(labels) == 2:
        print(f"\n{'game':16s} {labels[0]:>10s} {labels[1]:>10s}  ratio {labels[1]}/{labels[0]}")
        for spec in args.game:
            name = spec.split("=", 1)[0]
            best = [min((r["ms_per_iter"] for r in records if r["game"] == name and r["checkout"] == lab),
                        default=float("nan")) for lab in labels]
            print(f"{name:16s} {best[0]:10.4f} {best[1]:10.4f}  {best[1] / best[0]:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
