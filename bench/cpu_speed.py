"""The public form on the 2-core CPU beside postflop-solver (issue 21): ms/iter and
exploitability per iteration, in one run.

    python bench/cpu_speed.py speed [--games hunl_river_full,hunl_turn_full] [--rounds 3]
        [--rules dcfr] [--code LABEL=DIR ...] [--out bench/results/cpu_speed.jsonl]
    python bench/cpu_speed.py curves [--games ...] [--rules dcfr,dcfr-postflop]
        [--out bench/results/cpu_rule_curves.jsonl]

`speed`: per game, `--rounds` rounds; in each round every arm once, in turn: cfrjax (each
`--code` checkout: `LABEL=DIR` puts DIR first on `PYTHONPATH`, e.g. `before=/work/main`,
`after=.`) pinned to one core (`taskset -c 0`, `--xla_cpu_multi_thread_eigen=false`)
and on both (`taskset -c 0,1`), and postflop-solver through our driver (1 thread
pinned, 2 threads on both cores). A cfrjax arm is one process: build, compile
`solve(M)`, one warm-up call, then `--repeats` timed calls of `M` iterations (float32,
no evaluation); a postflop-solver arm is one driver run of `M_pf` iterations (its
`solve_s`, no evaluation). Records: one per (game, arm, round) with every timed call;
the summary line per arm is the median over all its calls.

`curves`: exploitability (float64 evaluation; NashConv / 2, % of the pot) every
`eval_every` iterations, for each cfrjax rule (alternating, float32 iterations) and
postflop-solver (1 thread), and the iterations to 0.3% and 0.1% of the pot.

The postflop-solver driver is `--driver` (default: the build under /work/peers; see
bench/peers/postflop_peer.py to build one).
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
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))

DRIVER = "/work/peers/build/merged-driver/target/release/cfrjax-postflop-driver"
# iterations per timed cfrjax call / per postflop-solver run; eval_every and iterations for curves
GAMES = {"hunl_river_full": dict(M=500, M_pf=1000, eval_every=5, curve_iterations=300),
         "hunl_turn_full": dict(M=24, M_pf=40, eval_every=10, curve_iterations=200)}
PIN, BOTH = ["taskset", "-c", "0"], ["taskset", "-c", "0,1"]
ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"
TARGETS = (3e-3, 1e-3)


def _git(*args, cwd=ROOT):
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return None


def child(job: dict) -> dict:
    """In a fresh process: time `solve(M)` (mode speed) or trace a curve (mode curves)."""
    import jax
    import numpy as np
    import cfrjax
    t0 = time.perf_counter()
    game = cfrjax.load_game(job["game"])
    build_s = time.perf_counter() - t0
    state0 = cfrjax.init(game, rule=job["rule"], order="alternating", dtype="float32")
    try:     # the native CPU terminals (code from before them has none)
        from cfrjax.public import native
        native_on = native.available()
    except ImportError:
        native_on = None
    rec = dict(jax=jax.__version__, cfrjax_file=cfrjax.__file__, build_s=build_s, form=cfrjax.forms.form_name(game),
               native_showdown=native_on)
    if job["mode"] == "speed":
        M = job["M"]
        t0 = time.perf_counter()
        jax.block_until_ready(cfrjax.solve(game, state0, M))
        rec["compile_and_first_call_s"] = time.perf_counter() - t0
        wall, cpu = [], []
        for _ in range(job["repeats"]):
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(cfrjax.solve(game, state0, M))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        rec.update(ms_per_iter_calls=[1e3 * w / M for w in wall], cpu_ms_per_iter_calls=[1e3 * c / M for c in cpu],
                   iterations_per_call=M)
        return rec
    _, trace = cfrjax.solve_with_trace(game, state0, job["iterations"], eval_every=job["eval_every"])
    rec.update(iteration=np.asarray(trace.iteration).tolist(), exploitability=np.asarray(trace.exploitability).tolist())
    return rec


def run_child(job, prefix, code_dir, xla_flags=None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(code_dir), HERE] + ([env["PYTHONPATH"]]
                                                                             if env.get("PYTHONPATH") else []))
    if xla_flags:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + xla_flags).strip()
    p = subprocess.run(list(prefix) + [sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)],
                       env=env, capture_output=True, text=True, cwd=os.path.abspath(code_dir))
    res = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if p.returncode or not res:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return json.loads(res[-1][len("RESULT "):])


def postflop(game, iterations, threads, eval_every=0):
    import postflop_peer
    spot = postflop_peer.spot_of_spec(game, combos=True)
    return postflop_peer.run_driver(DRIVER, spot, iterations, threads, eval_every=eval_every,
                                    prefix=PIN if threads == 1 else BOTH)


def pot_of(game):
    from cfrjax.games.poker import load_poker_config
    from cfrjax.load import spec_path
    return float(load_poker_config(spec_path(game)).pot)


def to_target(iters, expl, pot):
    out = {}
    for t in TARGETS:
        hit = [i for i, e in zip(iters, expl) if e <= t * pot]
        out[f"{100 * t:g}%"] = hit[0] if hit else None
    return out


def base_record(args) -> dict:
    return dict(bench="cpu_speed", mode=args.mode, device="cpu", cpu_count=os.cpu_count(), host=os.uname().nodename,
                run_started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), command=" ".join(["python"] + sys.argv),
                note=args.note, postflop_driver=DRIVER,
                postflop_solver_commit=_git("rev-parse", "--short", "HEAD", cwd="/work/peers/postflop-solver"))


def speed(args, out):
    codes = [c.split("=", 1) for c in args.code]
    for game in args.games:
        g = GAMES[game]
        arms = []
        for label, d in codes:
            for rule in args.rules:
                arms.append((f"cfrjax {label} {rule}, 1 core", dict(kind="cfrjax", code=(label, d), rule=rule,
                                                                     prefix=PIN, flags=ONE_THREAD, cores=1)))
                arms.append((f"cfrjax {label} {rule}, 2 cores", dict(kind="cfrjax", code=(label, d), rule=rule,
                                                                      prefix=BOTH, flags=None, cores=2)))
        if not args.no_postflop:
            arms += [("postflop-solver, 1 thread", dict(kind="postflop", threads=1, cores=1)),
                     ("postflop-solver, 2 threads", dict(kind="postflop", threads=2, cores=2))]
        calls = {a: [] for a, _ in arms}
        for rnd in range(args.rounds):
            for arm, a in arms:
                load = os.getloadavg()[0]
                rec = dict(base_record(args), game=game, arm=arm, round=rnd, cores=a["cores"], load_avg_1m_before=load)
                if a["kind"] == "cfrjax":
                    label, d = a["code"]
                    r = run_child(dict(mode="speed", game=game, rule=a["rule"], M=g["M"], repeats=args.repeats),
                                  a["prefix"], d, a["flags"])
                    rec.update(r, backend="cfrjax", form="public", rule=a["rule"], order="alternating",
                               precision="float32", code=label, code_dir=os.path.abspath(d),
                               commit=_git("rev-parse", "--short", "HEAD", cwd=d),
                               dirty=bool(_git("status", "--porcelain", "cfrjax", cwd=d)),
                               pinning=" ".join(a["prefix"]), xla_flags=a["flags"])
                    calls[arm] += r["ms_per_iter_calls"]
                else:
                    r = postflop(game, g["M_pf"], a["threads"])
                    rec.update(backend="postflop-solver", rule="its DCFR (alpha 1.5, beta 0.5, gamma 3, reset at "
                               "powers of 4)", order="alternating", precision="float32", threads=a["threads"],
                               pinning=" ".join(PIN if a["threads"] == 1 else BOTH), iterations=r["iterations"],
                               solve_s=r["solve_s"], cpu_s=r["cpu_s"], ms_per_iter_calls=[r["ms_per_iter"]],
                               driver_command=r["command"])
                    calls[arm].append(r["ms_per_iter"])
                rec["load_avg_1m_after"] = os.getloadavg()[0]
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(f"{game} round {rnd} {arm}: {statistics.median(rec['ms_per_iter_calls']):.4g} ms/iter "
                      f"(load {load:.2f})", flush=True)
        for arm, _ in arms:
            print(f"SUMMARY {game} | {arm} | median {statistics.median(calls[arm]):.4g} ms/iter | "
                  f"min {min(calls[arm]):.4g} | n {len(calls[arm])}", flush=True)
            out.write(json.dumps(dict(base_record(args), game=game, arm=arm, summary=True,
                                      median_ms_per_iter=statistics.median(calls[arm]),
                                      min_ms_per_iter=min(calls[arm]), calls=len(calls[arm]))) + "\n")


def curves(args, out):
    for game in args.games:
        g = GAMES[game]
        pot = pot_of(game)
        for rule in args.rules:
            r = run_child(dict(mode="curves", game=game, rule=rule, iterations=g["curve_iterations"],
                               eval_every=g["eval_every"], pot=pot), BOTH, ROOT)
            rec = dict(base_record(args), game=game, arm=f"cfrjax {rule}", backend="cfrjax", rule=rule,
                       order="alternating", precision="float32 iterations, float64 evaluation", pot=pot,
                       commit=_git("rev-parse", "--short", "HEAD"), iteration=r["iteration"],
                       exploitability=r["exploitability"],
                       exploitability_pct_pot=[100 * e / pot for e in r["exploitability"]])
            rec["iterations_to"] = to_target(r["iteration"], r["exploitability"], pot)
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(game, rule, rec["iterations_to"], flush=True)
        r = postflop(game, g["curve_iterations"], 2, eval_every=g["eval_every"])
        it = [int(p[0]) for p in r["curve"]]
        ex = [float(p[2]) for p in r["curve"]]
        rec = dict(base_record(args), game=game, arm="postflop-solver", backend="postflop-solver",
                   rule="its DCFR (alpha 1.5, beta 0.5, gamma 3, reset at powers of 4)", order="alternating",
                   precision="float32 (its own evaluation)", pot=pot, iteration=it, exploitability=ex,
                   exploitability_pct_pot=[100 * e / pot for e in ex], driver_command=r["command"],
                   iterations_to=to_target(it, ex, pot))
        out.write(json.dumps(rec) + "\n")
        out.flush()
        print(game, "postflop-solver", rec["iterations_to"], flush=True)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        print("RESULT " + json.dumps(child(json.loads(argv[1]))), flush=True)
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("speed", "curves"))
    ap.add_argument("--games", default="hunl_river_full,hunl_turn_full")
    ap.add_argument("--rules", default=None)
    ap.add_argument("--code", nargs="+", default=["this=" + ROOT])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-postflop", action="store_true")
    ap.add_argument("--note", default="")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.games = args.games.split(",")
    args.rules = (args.rules or ("dcfr" if args.mode == "speed" else "dcfr,dcfr-postflop")).split(",")
    path = args.out or os.path.join(HERE, "results", f"cpu_{'speed' if args.mode == 'speed' else 'rule_curves'}.jsonl")
    with open(path, "a") as out:
        (speed if args.mode == "speed" else curves)(args, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
