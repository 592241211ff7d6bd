"""Memory of a solve at a poker solver's density (issue 50): for each spot of a folder,
each hand layout and each storage precision, one process builds the game (`--hands`),
takes its plan (`cfrjax.plan.use`, the boards grouped off the CPU where the memory plan
asks for it, `cfrjax.memory.group_boards`), solves `--iterations` with an evaluation every `--eval-every`, and
records the device's `peak_bytes_in_use` (`cfrjax.memory.device_peak_bytes`; `null` on a
CPU, whose peak RSS is recorded instead), the memory plan's prediction (donated state, the
command line's), ms/iter and the final exploitability. One process per case, so that
each peak is its own. Records: `--out` (JSONL), one per case.

    python bench/memory_spots.py                              # .ab/spots, hands player,range, float32,int16
    python bench/memory_spots.py --spots /work/shared/spots --only srp_Qs7h2c9d3s_river --iterations 20
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def one(spot: str, hands: str, precision: str, iterations: int, eval_every: int, rule: str, order: str) -> dict:
    """One case in this process: the record (see the module docstring)."""
    import jax

    import cfrjax
    from cfrjax.games.poker.pot import starting_pot
    from cfrjax.memory import device_peak_bytes, memory_plan

    t0 = time.perf_counter()
    game = cfrjax.memory.group_boards(cfrjax.plan.use(cfrjax.load_game(spot, hands=hands), "auto"))
    build_s = time.perf_counter() - t0
    kw = {} if precision == "float32" else dict(precision=precision)
    state = cfrjax.init(game, rule=rule, order=order, dtype="float32", **kw)
    plan = memory_plan(game, state, donate=True)
    run = cfrjax.solve_chunks(game, state, iterations, eval_every=eval_every, donate=True)
    run.compile()
    for _ in run:
        pass
    expl = run.history[-1][2]
    pot = starting_pot(game)
    return dict(bench="memory_spots", spot=os.path.basename(spot).removesuffix(".toml"), hands=hands,
                precision=precision, rule=rule, order=order, iterations=iterations, eval_every=eval_every,
                device=str(jax.devices()[0].device_kind), boards_at_once=game.plan.boards_at_once,
                plan_summary=game.plan.summary(), slots=game.num_slots, hand_columns=game.num_hands,
                num_boards=game.num_boards, peak_device_bytes=device_peak_bytes(), planned_bytes=plan.total_bytes,
                planned_groups=plan.group_bytes(),
                peak_rss_bytes=1024 * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                build_s=round(build_s, 3), compile_s=round(run.compile_s, 3), solve_s=round(run.solve_s, 3),
                eval_s=round(run.eval_s, 3), ms_per_iter=1e3 * run.solve_s / max(1, iterations),
                exploitability=expl, exploitability_pct_pot=None if pot is None else 100 * expl / pot)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spots", default=".ab/spots", help="a folder of spot .toml files (default .ab/spots)")
    ap.add_argument("--only", default=None, help="comma-separated spot names (default: every .toml there)")
    ap.add_argument("--hands", default="player,range", help="hand layouts, of player, range, all")
    ap.add_argument("--precisions", default="float32,int16")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--rule", default="dcfr")
    ap.add_argument("--order", default="alternating")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per case")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "memory_spots.jsonl"))
    ap.add_argument("--one", nargs=3, metavar=("SPOT", "HANDS", "PRECISION"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        print(json.dumps(one(*a.one, a.iterations, a.eval_every, a.rule, a.order)), flush=True)
        return
    spots = sorted(glob.glob(os.path.join(a.spots, "*.toml")))
    if a.only:
        spots = [s for s in spots if os.path.basename(s).removesuffix(".toml") in a.only.split(",")]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    for spot in spots:
        for hands in a.hands.split(","):
            for precision in a.precisions.split(","):
                cmd = [sys.executable, os.path.abspath(__file__), "--one", spot, hands, precision,
                       "--iterations", str(a.iterations), "--eval-every", str(a.eval_every), "--rule", a.rule,
                       "--order", a.order]
                env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
                try:
                    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
                    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
                    rec = json.loads(lines[-1]) if p.returncode == 0 and lines else dict(
                        bench="memory_spots", spot=os.path.basename(spot), hands=hands, precision=precision,
                        error=(p.stderr.strip().splitlines() or ["rc %d" % p.returncode])[-1][:500])
                except subprocess.TimeoutExpired:
                    rec = dict(bench="memory_spots", spot=os.path.basename(spot), hands=hands, precision=precision,
                               error=f"timeout after {a.timeout} s")
                rec.update(commit=commit, command=" ".join(["python bench/memory_spots.py", "--one",
                                                            os.path.basename(spot), hands, precision] + cmd[6:]))
                print(json.dumps({k: rec.get(k) for k in ("spot", "hands", "precision", "peak_device_bytes",
                                                          "planned_bytes", "ms_per_iter", "exploitability_pct_pot",
                                                          "error")}), flush=True)
                os.makedirs(os.path.dirname(a.out), exist_ok=True)
                with open(a.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
