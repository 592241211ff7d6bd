"""Float32 against float64 iterations on the paper's update-rule cells (tab:convergence, T9).

Two modes.

`cells` (default): every Kuhn and Leduc cell of T9 -- rules cfr, cfr+, dcfr, pcfr+ x
orders simultaneous, alternating; averaging as `bench/convergence.py` reproduces the paper
(cfr, cfr+ linear; pcfr+ quadratic; dcfr its own gamma = 2) -- run for `--iterations` in
float32 and in float64, each evaluated in float64 (`cfrjax.evaluate`). A cell passes when
float32 is within 1.3x of float64 or no worse than the paper's float32 cell. Where float32
and float64 differ by more than 1.3x (either way), the cell is also run in float64 from
perturbed regrets: `--perturb-at` iterations, every regret multiplied by
`1 + rel * N(0, 1)` (`--perturb-rel`, seeds 1..`--seeds`), then the rest. If those runs
spread at least as far as the float32 value (it lies within their range), the difference
is trajectory sensitivity (1,000 iterations amplify a 1e-7 change that far), not a loss
of precision of some quantity.

    python bench/precision.py                    # Kuhn and Leduc, CPU: bench/results/precision_t9.jsonl
    python bench/precision.py cells --games kuhn --perturb all --perturb-dtypes float64,float32

`time`: ms/iter of float32 solves of two checkouts side by side (A, B, A, B, ... in
separate processes, `bench/ab_commits.py`'s protocol: compile, one solve, median of
`--repeats` timed solves), for several rule/order/averaging configurations, e.g. the
float32 average before and after its compensated update:

    git archive <before> cfrjax | tar -x -C .ab/precision_before   # (mkdir first)
    python bench/precision.py time --root before=.ab/precision_before --root after=. \\
        --game kuhn=.ab/games/kuhn.npz --game leduc=.ab/games/leduc.npz ... \\
        --out bench/results/precision_ab.jsonl

Records (JSONL, one per line): `kind` "cell" (game, rule, order, averaging, dtype,
iterations, exploitability -- float64 evaluation --, paper, device, backend, jax),
"perturbed" (the same plus perturb_at, perturb_rel, seed), "summary" (per cell:
float32, float64, ratio, paper, perturbed range, verdict) and, in `time` mode, "timing".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "precision_t9.jsonl")
RULES = ("cfr", "cfr+", "dcfr", "pcfr+")
ORDERS = ("alternating", "simultaneous")
#: Averaging of the paper's cells (bench/convergence.py: cfr and cfr+ reproduce the paper
#: with linear weights, pcfr+ with quadratic; dcfr has its own schedule, gamma = 2).
AVERAGING = {"cfr": "linear", "cfr+": "linear", "dcfr": "linear", "pcfr+": "quadratic"}
GAMES = {"kuhn": "kuhn_poker", "leduc": "leduc_poker"}
#: T9 (tab:convergence), float32, 1,000 iterations: (alternating cfr, cfr+, dcfr, pcfr+,
#: simultaneous cfr, cfr+, dcfr, pcfr+), as bench/convergence.py.
PAPER = {
    "kuhn": (6.18e-4, 8.73e-5, 1.99e-4, 2.20e-8, 1.32e-2, 2.83e-3, 5.05e-3, 4.56e-5),
    "leduc": (1.04e-1, 2.73e-4, 1.57e-4, 7.13e-4, 1.46e-1, 6.65e-3, 8.59e-3, 1.46e-3),
}
#: Acceptance: float32 within this factor of float64 ...
TOLERANCE = 1.3
#: ... or no worse than the paper's cell, which is given to 3 significant figures.
PAPER_ROUNDING = 1.005


def paper_value(game: str, rule: str, order: str) -> float | None:
    row = PAPER.get(game)
    return None if row is None else row[ORDERS.index(order) * 4 + RULES.index(rule)]


def environment() -> dict:
    import jax
    return dict(device=str(jax.devices()[0].device_kind), backend=jax.default_backend(), jax=jax.__version__)


def perturbed(state, rel: float, seed: int):
    """`state` with every regret multiplied by `1 + rel * N(0, 1)` (NumPy seed `seed`)."""
    import dataclasses
    import jax.numpy as jnp
    import numpy as np
    noise = np.random.default_rng(seed).standard_normal(state.regret.shape)
    return dataclasses.replace(state, regret=state.regret * (1 + rel * jnp.asarray(noise, state.regret.dtype)))


def run_cell(game, rule: str, order: str, dtype: str, iterations: int, perturb=None) -> float:
    """Exploitability (float64 evaluation) of the average policy after `iterations`;
    `perturb = (at, rel, seed)` perturbs the regrets after `at` iterations."""
    import cfrjax
    state = cfrjax.init(game, rule=rule, order=order, averaging=AVERAGING[rule], dtype=dtype)
    if perturb is None:
        state = cfrjax.solve(game, state, iterations)
    else:
        at, rel, seed = perturb
        state = cfrjax.solve(game, perturbed(cfrjax.solve(game, state, at), rel, seed), iterations - at)
    return float(cfrjax.evaluate(game, state)[0])


def verdict(f32: float, f64: float, paper: float | None, spread: tuple | None) -> str:
    """`"within 1.3x"`, `"no worse than paper"`, `"trajectory sensitive"` or `"OUTSIDE"`."""
    if f32 <= TOLERANCE * f64:
        return f"within {TOLERANCE}x"
    if paper is not None and f32 <= paper * PAPER_ROUNDING:
        return "no worse than paper"
    if spread is not None and spread[0] <= f32 <= spread[1]:
        return "trajectory sensitive"
    return "OUTSIDE"


def cells(args) -> int:
    import jax
    jax.config.update("jax_enable_x64", True)  # float64 cells; float32 cells use explicit float32 state
    import cfrjax
    env = environment()
    records = []

    def emit(rec):
        records.append(rec)
        print(json.dumps(rec), flush=True)

    for key in args.games.split(","):
        game = cfrjax.load_game(GAMES.get(key, key))
        for order in args.orders.split(","):
            for rule in args.rules.split(","):
                base = dict(game=key, rule=rule, order=order, averaging=AVERAGING[rule], iterations=args.iterations,
                            paper=paper_value(key, rule, order), evaluation="float64", **env)
                e = {}
                for dtype in ("float32", "float64"):
                    t0 = time.perf_counter()
                    e[dtype] = run_cell(game, rule, order, dtype, args.iterations)
                    emit(dict(base, kind="cell", dtype=dtype, exploitability=e[dtype],
                              seconds=round(time.perf_counter() - t0, 2)))
                ratio = e["float32"] / e["float64"] if e["float64"] > 0 else float("inf")
                spread = None
                if args.perturb == "all" or (args.perturb == "auto" and max(ratio, 1 / ratio) > TOLERANCE):
                    runs = {}
                    for dtype in args.perturb_dtypes.split(","):
                        runs[dtype] = [e[dtype]]
                        for seed in range(1, args.seeds + 1):
                            x = run_cell(game, rule, order, dtype, args.iterations,
                                         (args.perturb_at, args.perturb_rel, seed))
                            runs[dtype].append(x)
                            emit(dict(base, kind="perturbed", dtype=dtype, exploitability=x, seed=seed,
                                      perturb_at=args.perturb_at, perturb_rel=args.perturb_rel))
                    if "float64" in runs:
                        spread = (min(runs["float64"]), max(runs["float64"]))
                emit(dict(base, kind="summary", float32=e["float32"], float64=e["float64"], ratio=ratio,
                          float64_perturbed_min=spread and spread[0], float64_perturbed_max=spread and spread[1],
                          float64_perturbed_spread=spread and spread[1] / spread[0],
                          perturb_at=args.perturb_at, perturb_rel=args.perturb_rel, seeds=args.seeds,
                          verdict=verdict(e["float32"], e["float64"], base["paper"], spread)))
        jax.clear_caches()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "a" if args.append else "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    print_table([r for r in records if r["kind"] == "summary"])
    return 0


def print_table(summaries) -> None:
    print(f"\n{'game':6s} {'order':12s} {'rule':6s} {'float32':>10s} {'float64':>10s} {'ratio':>6s} "
          f"{'paper':>9s} {'f64 perturbed':>21s}  verdict")
    for r in summaries:
        pert = (f"{r['float64_perturbed_min']:.3g}..{r['float64_perturbed_max']:.3g}"
                if r["float64_perturbed_min"] is not None else "-")
        paper = f"{r['paper']:.3g}" if r["paper"] is not None else "-"
        print(f"{r['game']:6s} {r['order']:12s} {r['rule']:6s} {r['float32']:10.4g} {r['float64']:10.4g} "
              f"{r['ratio']:6.2f} {paper:>9s} {pert:>21s}  {r['verdict']}")


def _worker(root: str, source: str, iterations: int, repeats: int, rule: str, order: str, averaging: str) -> dict:
    """Time float32 solves with `cfrjax` imported from `root` (bench/ab_commits.py's worker)."""
    from ab_commits import _worker as time_checkout
    return time_checkout(root, source, iterations, repeats, rule, order, averaging)


def timing(args) -> int:
    roots = [r.split("=", 1) for r in args.root]
    configs = [c.split(":") for c in args.configs.split(",")]
    records = []
    for spec in args.game:
        name, source = spec.split("=", 1)
        iterations = args.big_iterations if source.startswith("libratus:") else args.iterations
        for rule, order, averaging in configs:
            for rnd in range(args.rounds):
                for label, root in roots:
                    cmd = [sys.executable, __file__, "worker", root, source, str(iterations), str(args.repeats),
                           rule, order, averaging]
                    out = subprocess.run(cmd, capture_output=True, text=True)
                    if out.returncode != 0:
                        print(f"{name} {label}: failed\n{out.stderr[-2000:]}", file=sys.stderr)
                        continue
                    rec = dict(json.loads(out.stdout.strip().splitlines()[-1]), kind="timing", game=name,
                               checkout=label, round=rnd, rule=rule, order=order, averaging=averaging,
                               dtype="float32", bench="precision_ab")
                    records.append(rec)
                    print(f"{name:16s} {rule}:{order}:{averaging} {label:8s} round {rnd}: "
                          f"{rec['ms_per_iter']:.4f} ms/iter (compile {rec['compile_s']:.1f} s)", flush=True)
                    if args.out:
                        with open(args.out, "a") as f:
                            f.write(json.dumps(rec) + "\n")
    labels = [label for label, _ in roots]
    if len(labels) == 2:
        print(f"\n{'game':16s} {'config':32s} {labels[0]:>10s} {labels[1]:>10s}  ratio {labels[1]}/{labels[0]}")
        for spec in args.game:
            name = spec.split("=", 1)[0]
            for rule, order, averaging in configs:
                best = [min((r["ms_per_iter"] for r in records if r["game"] == name and r["checkout"] == lab
                             and (r["rule"], r["order"], r["averaging"]) == (rule, order, averaging)),
                            default=float("nan")) for lab in labels]
                print(f"{name:16s} {rule + ':' + order + ':' + averaging:32s} {best[0]:10.4f} {best[1]:10.4f}  "
                      f"{best[1] / best[0]:.3f}")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        root, source, it, rep, rule, order, averaging = argv[1:8]
        print(json.dumps(_worker(root, source, int(it), int(rep), rule, order, averaging)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="mode")
    c = sub.add_parser("cells", help="float32 vs float64 on the T9 cells (default mode)")
    c.add_argument("--games", default="kuhn,leduc", help="comma-separated: kuhn, leduc (or a load_game source)")
    c.add_argument("--rules", default=",".join(RULES))
    c.add_argument("--orders", default=",".join(ORDERS))
    c.add_argument("--iterations", type=int, default=1000)
    c.add_argument("--perturb", choices=("auto", "all", "none"), default="auto",
                   help="perturbed float64 runs: for cells whose float32/float64 ratio exceeds 1.3 either way (auto)")
    c.add_argument("--perturb-dtypes", default="float64", help="dtypes of the perturbed runs (float64[,float32])")
    c.add_argument("--perturb-at", type=int, default=10)
    c.add_argument("--perturb-rel", type=float, default=1e-7)
    c.add_argument("--seeds", type=int, default=8)
    c.add_argument("--out", default=OUT)
    c.add_argument("--append", action="store_true", help="append to --out instead of overwriting it")
    t = sub.add_parser("time", help="ms/iter of two checkouts side by side, float32")
    t.add_argument("--root", action="append", required=True, metavar="LABEL=DIR")
    t.add_argument("--game", action="append", required=True, metavar="NAME=SOURCE",
                   help="a saved .npz, a poker .toml, an OpenSpiel name, or libratus:PATH")
    t.add_argument("--configs", default="cfr+:simultaneous:linear,pcfr+:alternating:quadratic",
                   help="comma-separated rule:order:averaging")
    t.add_argument("--iterations", type=int, default=1000)
    t.add_argument("--big-iterations", type=int, default=100, help="iterations for libratus: games")
    t.add_argument("--repeats", type=int, default=7)
    t.add_argument("--rounds", type=int, default=2, help="alternations A, B per game and config")
    t.add_argument("--out", default=None)
    args = p.parse_args(argv if argv and argv[0] in ("cells", "time", "-h", "--help") else ["cells"] + argv)
    return timing(args) if args.mode == "time" else cells(args)


if __name__ == "__main__":
    sys.exit(main())
