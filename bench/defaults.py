"""Which rule and order should `cfrjax solve` and `cfrjax.init` default to? Measure it.

For each game (Kuhn, Leduc, Liar's Dice 1x6, Goofspiel-5: the small half of the suite,
`games/suite.toml`) and each arm (rule x averaging x order), solve 1,000 iterations in
float32 (the default precision) with the exploitability evaluated inside the scan every
`--eval-every` iterations (`cfrjax.solve_with_trace(..., eval_every=K)`, evaluation in float64),
then time the same solve without evaluation (compile first, then `--repeats` timed calls)
for the ms per iteration: the fastest repeat's wall time (also recorded: the median, and the
process's CPU time, steadier on a shared machine). `--retime JSONL` reuses the curves of an
earlier run and measures the times only. For each threshold (1e-3, 1e-4) a record holds the first
checkpoint at or below it and the wall time to get there, `iterations x ms_per_iter`
(compile excluded: it is paid once whatever the rule, and is listed separately).

Poker spots (`--poker`, default `hunl_river,hunl_river_full`: shipped specs by name) are
solved in their default form, the public tree, and their thresholds are fractions of the
starting pot (1e-3 and 1e-4 of the pot: 0.1% and 0.01%), the unit poker solvers report;
the records carry `form` and `threshold_unit`.

Arms: `cfr+` (linear averaging, today's default), `dcfr` (its own t^2 averaging,
parameters 1.5, 0, 2), `pcfr+` with linear and with quadratic averaging (the paper's arm),
each simultaneous and alternating.

Writes bench/results/defaults_cpu.jsonl (one record per game x arm, with the whole curve)
and prints the table. Usage:

    python bench/defaults.py [--games kuhn,leduc,liars_dice_1x6,goofspiel5] [--poker hunl_river,hunl_river_full]
                             [--iterations 1000]
                             [--eval-every 10] [--repeats 3] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

import jax

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_enable_x64", True)  # for the float64 evaluation; iterations run in float32

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cfrjax  # noqa: E402
from cfrjax.games.poker import load_poker_config  # noqa: E402
from cfrjax.load import spec_path  # noqa: E402
from common import environment  # noqa: E402
from suite import is_poker, load_suite, select, source_path  # noqa: E402

GAMES = "kuhn,leduc,liars_dice_1x6,goofspiel5"
POKER = "hunl_river,hunl_river_full"
ARMS = (  # (rule, averaging)
    ("cfr+", "linear"),
    ("dcfr", "linear"),  # `linear` = the rule's own schedule (t^gamma)
    ("pcfr+", "linear"),
    ("pcfr+", "quadratic"),
)
ORDERS = ("simultaneous", "alternating")
THRESHOLDS = (1e-3, 1e-4)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "defaults_cpu.jsonl")


def first_below(iterations, values, eps):
    for it, v in zip(iterations, values):
        if v <= eps:
            return int(it)
    return None


def run_arm(game, rule, averaging, order, iterations, eval_every, repeats, curve=None, unit=1.0):
    """One arm's record; `curve` = (iterations, exploitabilities) of an earlier run to re-time
    only; the thresholds are `THRESHOLDS x unit` (1 for a game, the pot for a poker spot)."""
    state = cfrjax.init(game, rule=rule, order=order, averaging=averaging, dtype="float32")
    if curve is None:
        _, trace = cfrjax.solve_with_trace(game, state, iterations, eval_every=eval_every)
        its = [int(i) for i in trace.iteration]
        eps = [float(e) for e in trace.exploitability]
    else:
        its, eps = curve
    t0 = time.perf_counter()
    jax.block_until_ready(cfrjax.solve(game, state, iterations))  # compile + first run
    first_s = time.perf_counter() - t0
    times, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(cfrjax.solve(game, state, iterations))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    # On a shared machine wall time includes waiting for a core: the fastest repeat and the
    # process's own CPU time are the steadier figures (all three are recorded).
    ms = 1e3 * min(times) / iterations
    rec = dict(rule=rule, averaging=averaging, order=order, dtype="float32", iterations=iterations,
               eval_every=eval_every, ms_per_iter=ms, ms_per_iter_median=1e3 * statistics.median(times) / iterations,
               cpu_ms_per_iter=1e3 * statistics.median(cpu) / iterations, first_solve_s=first_s,
               final_exploitability=eps[-1], curve_iteration=its, curve_exploitability=eps)
    for eps_t in THRESHOLDS:
        n = first_below(its, eps, eps_t * unit)
        rec[f"iters_to_{eps_t:.0e}"] = n
        rec[f"ms_to_{eps_t:.0e}"] = None if n is None else n * ms
    return rec


def fmt_cell(rec, eps_t):
    n = rec[f"iters_to_{eps_t:.0e}"]
    if n is None:
        return f">{rec['iterations']} ({rec['final_exploitability']:.1e})"
    return f"{n} / {rec[f'ms_to_{eps_t:.0e}']:.0f} ms"


def table(records):
    """Markdown: one row per arm, per game the iterations / ms to 1e-3 and to 1e-4."""
    games = list(dict.fromkeys(r["game"] for r in records))
    head = "| rule | averaging | order | " + " | ".join(f"{g} to 1e-3 | {g} to 1e-4" for g in games) + " |"
    lines = [head, "|" + "---|" * 3 + "---:|" * (2 * len(games))]
    arms = list(dict.fromkeys((r["rule"], r["averaging"], r["order"]) for r in records))
    by = {(r["game"], r["rule"], r["averaging"], r["order"]): r for r in records}
    for arm in arms:
        cells = []
        for g in games:
            rec = by.get((g,) + arm)
            cells += [fmt_cell(rec, t) if rec else "" for t in THRESHOLDS]
        lines.append(f"| {arm[0]} | {arm[1]} | {arm[2]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", default=GAMES, help="suite games, tabular form ('' for none)")
    ap.add_argument("--poker", default=POKER, help="shipped poker specs, public form ('' for none)")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--retime", metavar="JSONL", help="reuse the curves of these records; measure ms/iter only")
    args = ap.parse_args(argv)
    env = environment()
    curves = {}
    if args.retime:
        with open(args.retime) as f:
            for line in f:
                r = json.loads(line)
                curves[r["game"], r["rule"], r["averaging"], r["order"]] = (r["curve_iteration"], r["curve_exploitability"])
    records = []
    games = [(e["name"], e["source"], "tabular", 1.0,
              lambda e=e: cfrjax.load_game(source_path(e), **({"form": "tabular"} if is_poker(e) else {})))
             for e in (select(load_suite(), args.games) if args.games else [])]
    for name in filter(None, args.poker.split(",")):
        pot = float(load_poker_config(spec_path(name)).pot)
        games.append((name, name, "public", pot, lambda name=name: cfrjax.load_game(name)))
    for name, source, form, unit, load in games:
        t0 = time.perf_counter()
        game = load()
        for order in ORDERS:
            for rule, averaging in ARMS:
                rec = dict(game=name, source=source, form=form,
                           threshold_unit="chips" if unit == 1.0 else f"pot ({unit:g} chips)",
                           **run_arm(game, rule, averaging, order, args.iterations, args.eval_every, args.repeats,
                                     curves.get((name, rule, averaging, order)), unit),
                           **env)
                records.append(rec)
                print(f"{name:16s} {rule:6s} {averaging:9s} {order:12s} "
                      f"eps@{args.iterations}={rec['final_exploitability']:.3e} {rec['ms_per_iter']:.4f} ms/iter "
                      f"1e-3: {fmt_cell(rec, 1e-3)}  1e-4: {fmt_cell(rec, 1e-4)}", flush=True)
        print(f"# {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
        jax.clear_caches()
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    print()
    print(f"iterations / wall time (float32, {env['device']}, fastest-repeat ms/iter x iterations, compile excluded) "
          f"to reach exploitability 1e-3 and 1e-4, first checkpoint of every {args.eval_every}; "
          f"'>N (eps)': not reached in N")
    print(table(records))
    # Geometric-mean rank of each arm's time to 1e-4 across games (unreached: 2x the budget).
    print()
    arms = list(dict.fromkeys((r["rule"], r["averaging"], r["order"]) for r in records))
    for eps_t in THRESHOLDS:
        key = f"ms_to_{eps_t:.0e}"
        scores = {}
        for arm in arms:
            rs = [r for r in records if (r["rule"], r["averaging"], r["order"]) == arm]
            vals = [r[key] if r[key] is not None else 2 * r["iterations"] * r["ms_per_iter"] for r in rs]
            scores[arm] = math.exp(sum(math.log(max(v, 1e-6)) for v in vals) / len(vals))
        best = sorted(scores.items(), key=lambda kv: kv[1])
        print(f"geometric mean of time to {eps_t:.0e} across games (unreached counted as 2x the run): " +
              ", ".join(f"{a[0]}/{a[1]}/{a[2]} {s:.1f} ms" for a, s in best))


if __name__ == "__main__":
    main()
