"""Exploitability against solve time for every arm on every game (the paper's fig:curves and
tab:ttt): curves of (iterations, exploitability, seconds) and the time to reach each target.

    python bench/curves.py [--games leduc,liars_dice_1x6,hunl_river,hunl_river_full,hunl_turn_full[,hunl_flop_full]]
        [--arms cfrjax,cfrjax-1core,openspiel,liteefg,noregret,postflop,texassolver]
        [--postflop-solver DIR [--cargo-source-dir DIR]] [--texassolver DIR] [--libratus DIR]
        [--liteefg-path DIR] [--noregret-venv DIR | --noregret-python PY] [--noregret-kernel numpy|cupy]
        [--specs .carry/specs] [--budget-scale 1] [--note TEXT] [--out PATH]
    python bench/curves.py --write-specs .carry/specs      # pickled GameSpecs for a machine without OpenSpiel

Adds to `bench/results/curves_<device>.jsonl` (`cpu`, or the GPU's name: `h200`): one record
per (game, arm, configuration), or a skip record with the reason; `python bench/report.py
bench/results/curves_cpu.jsonl --plots bench/results` turns them into the time-to-target
tables (one per device, every arm's ratio to cfrjax) and one log-log PNG per game.

Games and targets (`GAMES`): Leduc and Liar's Dice 1x6 (OpenSpiel; targets 1e-3 and 1e-4 in
its utility), `hunl_river` (the paper's K = 100 river spot), `hunl_river_full` and
`hunl_turn_full` (full ranges); named in `--games` only: `hunl_turn_full_raise`,
`hunl_flop_full` and `libratus_1` .. `libratus_4` (Libratus' endgames with their files'
ranges, from `--libratus DIR`; cfrjax arms only). Poker targets are 0.3% and 0.1% of the
starting pot (20 chips: 0.06 and 0.02 chips; an endgame's own pot). Exploitability is NashConv / 2 everywhere, in the game's units.
Each arm runs until its exploitability is at or below the lower target at a checkpoint,
or its solve time reaches the game's `max_solve_s`, or `max_iterations` (both times
`--budget-scale`); checkpoints every `eval_every` iterations.

Arms (each in its own process; single-thread arms pinned with `taskset -c 0`):
  * `cfrjax`: this library on JAX's default device (CPU: all cores, XLA's defaults; GPU),
    every form that applies (tabular for OpenSpiel games; public, and tabular where it fits,
    for poker spots), configurations `--cfrjax-configs` (default: DCFR alternating, the
    default; CFR+ alternating linear, OpenSpiel's and LiteEFG's CFR+), float32 iterations.
  * `cfrjax-1core`: the same, default configuration, pinned to one core (CPU only).
  * `openspiel`: OpenSpiel's C++ `CFRPlusSolver` (CFR+, alternating, linear, float64).
  * `liteefg`: LiteEFG 1.0 (`DCFR` and `CFRplus` baselines, float64, 1 thread) on our
    `GameSpec` written in its file format: OpenSpiel games and `hunl_river`.
  * `noregret`: NoRegret dev17 (its own Python 3.12 venv or `--noregret-python`), CFR+
    alternating linear and its DCFR alternating, float64, NumPy (`--noregret-kernel cupy`
    on a GPU): OpenSpiel games.
  * `postflop`: postflop-solver through our driver (its DCFR, float32), 1 thread, and 2 on
    the turn: the poker spots (`hunl_river` with its 100 combos per player).
  * `texassolver`: TexasSolver's console solver (its DCFR, float32), 1 thread, and 2 on the
    turn: the full-range spots (its ranges cannot name single combos). On the turn it solves
    its own game (river cards weighted 1/46, `texassolver_peer.its_game`): its curve is in
    that game, `same_game: false`.

Timing (seconds exclude evaluation; how, per arm, is the record's `timing`):
  * cfrjax: the curve comes from `cfrjax.solve_with_trace(..., eval_every=K, target_exploitability=...)`
    (float64 evaluation inside the executable); the iterations are timed apart, uninterrupted
    and without evaluation (`solve(game, state, M)`, compiled and warmed up first, median of
    3 calls, M = the game's `timing_iterations`, x10 on a GPU): seconds at checkpoint t = t x that ms/iter
    (one iteration's work is fixed). Compile time is recorded separately.
  * OpenSpiel, LiteEFG, NoRegret, postflop-solver: chunks of K iterations timed one by one,
    the evaluation between them outside the clocks; cumulative.
  * TexasSolver: its own loop clock minus its earlier best-response passes, each timed from
    its output (`texassolver_peer.run_curve`); its CPU seconds come from /proc in 10 ms
    ticks, too coarse for the river's ~20 ms solves.
cfrjax records also give `wall_to_first_target_s`: build + the first (compiling) timed call +
the solve-only seconds to the first target, the wall a user sees from the solve call with
no evaluation (over by the first call's iterations), and `peak_device_bytes` on a GPU.
Each point also has the solving process's CPU seconds (same exclusions): on a shared machine
wall time includes waiting for a core, CPU time does not (for a multi-threaded arm it is the
sum over its threads). Records carry the machine's load before and after each arm.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))

# Games: thresholds are THRESHOLDS x unit (1 for OpenSpiel games, the pot for poker spots).
GAMES = {
    "leduc": dict(title="Leduc", suite="leduc", source="leduc_poker", kind="openspiel", forms=("tabular",),
                  eval_every=10, max_iterations=6000, max_solve_s=20.0, timing_iterations=2000),
    "liars_dice_1x6": dict(title="Liar's Dice 1x6", suite="liars_dice_1x6", source="liars_dice", kind="openspiel",
                           forms=("tabular",), eval_every=10, max_iterations=4000, max_solve_s=20.0,
                           timing_iterations=300),
    "hunl_river": dict(title="HUNL river (K = 100)", suite="hunl_river", source="hunl_river", kind="poker",
                       forms=("public", "tabular"), eval_every=10, max_iterations=4000, max_solve_s=20.0,
                       timing_iterations=500),
    "hunl_river_full": dict(title="Full-range river", source="hunl_river_full", kind="poker", forms=("public",),
                            eval_every=10, max_iterations=4000, max_solve_s=20.0, timing_iterations=500,
                            configs=1),
    "hunl_turn_full": dict(title="Full-range turn", source="hunl_turn_full", kind="poker", forms=("public",),
                           eval_every=20, max_iterations=600, max_solve_s=45.0, timing_iterations=10, configs=1),
    "hunl_turn_full_raise": dict(title="Full-range turn, one raise a street", source="hunl_turn_full_raise",
                                 kind="poker", forms=("public",), eval_every=20, max_iterations=600,
                                 max_solve_s=60.0, timing_iterations=10, configs=1, default=False),
    "hunl_flop_full": dict(title="Full-range flop", source="hunl_flop_full", kind="poker", forms=("public",),
                           eval_every=10, max_iterations=400, max_solve_s=600.0, timing_iterations=2, configs=1,
                           accelerator_only=True, default=False),
    # Libratus' endgames in the public form, full ranges (the files' reach vectors), from
    # `--libratus DIR` (its `subgame<k>.txt`): cfrjax arms only. 4 and 3 are river spots,
    # 2 a river spot with a larger tree, 1 a turn.
    **{f"libratus_{k}": dict(title=f"Libratus endgame {k}", source=f"subgame{k}.txt", kind="libratus",
                             forms=("public",), eval_every=ev, max_iterations=mi, max_solve_s=ms,
                             timing_iterations=ti, configs=1, default=False)
       for k, ev, mi, ms, ti in ((4, 10, 4000, 20.0, 500), (3, 10, 4000, 20.0, 500), (2, 10, 2000, 60.0, 20),
                                 (1, 20, 600, 120.0, 2))},
}
# `configs`: how many of --cfrjax-configs a game runs (default all; the full-range spots only
# the default, DCFR: their peers run DCFR variants). The second form (hunl_river's tabular)
# and the one-core arm run the default only. `timing_iterations`: iterations of one timed
# cfrjax call (about a second on a 2-core CPU; 10x as many on a GPU). `accelerator_only`:
# the cfrjax arm runs on a GPU only (the flop's state is several GB per array, minutes per
# iteration on a 2-core CPU); its peers run on the CPU as everywhere. `default=False`: run
# only when named in `--games` (the flop: minutes per arm; measured against postflop-solver).
THRESHOLDS = {"openspiel": (1e-3, 1e-4), "poker": (3e-3, 1e-3)}  # poker: fractions of the pot
POKER_KINDS = ("poker", "libratus")
LIBRATUS_ENV = "CFRJAX_LIBRATUS_DIR"  # `--libratus DIR`, for this process and the arms' processes
ARMS = ("cfrjax", "cfrjax-1core", "openspiel", "liteefg", "noregret", "postflop", "texassolver")
CFRJAX_CONFIGS = ("dcfr:alternating:linear", "cfr+:alternating:linear")  # dcfr "linear": its own t^gamma
DEFAULT_CONFIG = "dcfr:alternating:linear"
LITEEFG_RULES = ("dcfr", "cfr+")
NOREGRET_CONFIGS = ("cfr+:alternating:linear", "dcfr:alternating")
PIN = ["taskset", "-c", "0"]
BOTH = ["taskset", "-c", "0,1"]
ONE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false"


# ---------------------------------------------------------------- shared pieces

def poker_spec(game_name: str):
    """The `PokerSubgameSpec` of a poker game: a shipped spec, or a Libratus endgame file
    of the folder `--libratus` named."""
    from cfrjax.games.poker import load_libratus_endgame, load_poker_config
    from cfrjax.load import spec_path
    g = GAMES[game_name]
    if g["kind"] != "libratus":
        return load_poker_config(spec_path(g["source"]))
    folder = os.environ.get(LIBRATUS_ENV)
    if not folder:
        raise SystemExit(f"{game_name} needs --libratus DIR, the folder of the Libratus endgame files")
    return load_libratus_endgame(os.path.join(folder, g["source"]))


def thresholds(game_name: str) -> tuple[list[float], str, float]:
    """(thresholds in the game's units, their unit's description, pot or 1)."""
    g = GAMES[game_name]
    if g["kind"] not in POKER_KINDS:
        return list(THRESHOLDS["openspiel"]), "utility", 1.0
    pot = float(poker_spec(game_name).pot)
    return [t * pot for t in THRESHOLDS["poker"]], f"chips ({', '.join(f'{100 * t:g}%' for t in THRESHOLDS['poker'])} " \
                                                   f"of the {pot:g}-chip pot)", pot


def to_target(points, ths) -> list[dict]:
    """Per threshold: the first checkpoint at or below it (iterations, solve_s, cpu_s) or None."""
    out = []
    for t in ths:
        hit = next((p for p in points if p[2] <= t), None)
        out.append(dict(threshold=t, iterations=None if hit is None else hit[0],
                        solve_s=None if hit is None else hit[1], cpu_s=None if hit is None else hit[3]))
    return out


def finish(rec: dict, points, ths, budget) -> dict:
    """Fill a record's curve fields from points [[iterations, solve_s, exploitability, cpu_s], ...]."""
    last = points[-1]
    rec.update(iteration=[p[0] for p in points], solve_s=[p[1] for p in points],
               exploitability=[p[2] for p in points], cpu_s=[p[3] for p in points],
               iterations_run=last[0], final_exploitability=last[2], thresholds=ths,
               to_target=to_target(points, ths), ms_per_iter=1e3 * last[1] / last[0],
               cpu_ms_per_iter=None if last[3] is None else 1e3 * last[3] / last[0], **budget)
    if "stopped" not in rec:
        rec["stopped"] = "target" if last[2] <= ths[-1] else (
            "max_solve_s" if last[1] >= budget["max_solve_s"] else "max_iterations")
    return rec


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class Load:
    """Load around one arm: 1-minute load average before/after, and the cores other processes
    (not this one, not its children) kept busy meanwhile (/proc/stat)."""

    def __enter__(self):
        from common import _machine_busy_s
        self._busy, self._t = _machine_busy_s(), time.perf_counter()
        self._own, self._kids = time.process_time(), _children_cpu_s()
        self.before = os.getloadavg()[0]
        return self

    def __exit__(self, *exc):
        from common import _machine_busy_s
        wall = time.perf_counter() - self._t
        busy = _machine_busy_s()
        mine = time.process_time() - self._own + _children_cpu_s() - self._kids
        self.fields = dict(load_avg_1m_before=self.before, load_avg_1m_after=os.getloadavg()[0], arm_wall_s=wall,
                           others_cores_busy=None if busy is None or self._busy is None or wall < 1
                           else max(0.0, busy - self._busy - mine) / wall)
        return False


# ---------------------------------------------------------------- in-process arms (run as children)

def child_cfrjax(job: dict) -> list[dict]:
    """cfrjax on one game and form, each configuration of `job["configs"]` (one record each)."""
    import jax
    import cfrjax
    from common import peak_memory_bytes
    from cpu_liteefg import get_spec
    from suite import load_suite, select
    g = GAMES[job["game"]]
    t0 = time.perf_counter()
    if g["kind"] == "openspiel":
        game = cfrjax.load_game(get_spec(select(load_suite(), g["suite"])[0], job["specs"]))
    else:
        game = cfrjax.load_game(g["source"] if g["kind"] == "poker" else poker_spec(job["game"]), form=job["form"])
    build_s = time.perf_counter() - t0
    dev = jax.devices()[0]
    # A GPU runs an iteration 10-100x faster: time 10x as many for about as long a call.
    e, M, out = g["eval_every"], g["timing_iterations"] * (1 if dev.platform == "cpu" else 10), []
    for cfg in job["configs"]:
        rule, order, averaging = cfg.split(":")
        state0 = cfrjax.init(game, rule=rule, order=order, averaging=averaging, dtype="float32")
        t0 = time.perf_counter()
        jax.block_until_ready(cfrjax.solve(game, state0, M))  # compile + warm-up
        first_s = time.perf_counter() - t0
        wall, cpu = [], []
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            jax.block_until_ready(cfrjax.solve(game, state0, M))
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        s_it, c_it = sorted(wall)[1] / M, sorted(cpu)[1] / M
        cap = min(job["max_iterations"], max(e, int(job["max_solve_s"] / s_it) // e * e))
        t0 = time.perf_counter()
        _, trace = cfrjax.solve_with_trace(game, state0, eval_every=e, target_exploitability=job["thresholds"][-1],
                                max_iterations=cap)
        curve_s = time.perf_counter() - t0
        points = [[int(t), int(t) * s_it, float(x), int(t) * c_it] for t, x in zip(trace.iteration,
                                                                                   trace.exploitability)]
        rec = dict(backend="cfrjax", config=cfg, form=cfrjax.forms.form_name(game), rule=rule, order=order,
                   averaging=averaging if rule != "dcfr" else "its own (t^gamma, gamma 2)",
                   precision="float32 iterations, float64 evaluation",
                   threads=f"XLA CPU, {len(os.sched_getaffinity(0))} core(s)" if dev.platform == "cpu"
                   else str(dev.device_kind),
                   versions=dict(jax=jax.__version__), build_s=build_s, compile_and_first_call_s=first_s,
                   curve_run_s=curve_s, timing_iterations=M, timing_repeats=3,
                   final_value=float(trace.value[-1]),
                   peak_device_bytes=peak_memory_bytes(),
                   wall_to_first_target_s=build_s + first_s + next(
                       (p[1] for p in points if p[2] <= job["thresholds"][0]), float("nan")),
                   ms_per_iter_timed=[1e3 * w / M for w in wall], cpu_ms_per_iter_timed=[1e3 * c / M for c in cpu],
                   timing="curve from solve_with_trace(eval_every, target) (float64 evaluation inside the executable); "
                          f"iterations timed apart: median of 3 uninterrupted solves of {M} iterations without "
                          "evaluation (compiled and warmed up first); seconds at t = t x that time per iteration")
        if points[-1][2] > job["thresholds"][-1] and cap < job["max_iterations"]:
            rec["stopped"] = "max_solve_s"   # the cap came from the time budget (its last point falls just short)
        out.append(finish(rec, points, job["thresholds"], job["budget"]))
    return out


def child_openspiel(job: dict) -> dict:
    import pyspiel
    from importlib.metadata import version
    import openspiel_peer
    g = GAMES[job["game"]]
    game = pyspiel.load_game(g["source"])
    t0 = time.perf_counter()
    solver = pyspiel.CFRPlusSolver(game)
    setup_s = time.perf_counter() - t0

    def chunk(n):
        for _ in range(n):
            solver.evaluate_and_update_policy()

    def evaluate():
        return openspiel_peer.evaluate(game, solver.average_policy())[1] / 2

    rec = dict(backend="openspiel", **{k: v for k, v in openspiel_peer.SEMANTICS[("cpp", "cfr+")].items()},
               threads="1 thread", versions=dict(open_spiel=version("open_spiel")), setup_s=setup_s)
    return chunked(rec, chunk, evaluate, job)


def child_liteefg(job: dict) -> dict:
    from importlib.metadata import version
    import liteefg_peer
    from cpu_liteefg import efg_path, get_spec
    from suite import load_suite, select
    g = GAMES[job["game"]]
    entry = select(load_suite(), g["suite"])[0]
    spec = get_spec(entry, job["specs"])
    path, export_s = efg_path(spec, entry, job["cache"])
    t0 = time.perf_counter()
    env, graph = liteefg_peer.setup(path, job["rule"], threads=1)
    setup_s = time.perf_counter() - t0
    p = liteefg_peer.PRESETS[job["rule"]]
    rec = dict(backend="liteefg", rule=p["rule"], order=p["order"], averaging=p["averaging"],
               average=p["avg"], precision="float64", threads="1 thread (set_threads(1))",
               versions=dict(liteefg=version("liteefg")), export_s=export_s, setup_s=setup_s,
               form="its FileEnv (our GameSpec in its file format)")
    return chunked(rec, lambda n: liteefg_peer.iterate(env, graph, n, job["rule"]),
                   lambda: liteefg_peer.exploitability(env, graph, job["rule"]), job)


def chunked(rec, chunk, evaluate, job) -> dict:
    """Chunks of `eval_every` iterations timed (wall, process CPU), evaluation outside the clocks."""
    e, ths = GAMES[job["game"]]["eval_every"], job["thresholds"]
    points, solve, cpu, done = [], 0.0, 0.0, 0
    while True:
        t0, c0 = time.perf_counter(), time.process_time()
        chunk(e)
        solve += time.perf_counter() - t0
        cpu += time.process_time() - c0
        done += e
        points.append([done, solve, float(evaluate()), cpu])
        if points[-1][2] <= ths[-1] or solve >= job["max_solve_s"] or done + e > job["max_iterations"]:
            break
    rec["timing"] = f"chunks of {e} iterations timed one by one; evaluation between them, outside the clocks"
    return finish(rec, points, ths, job["budget"])


CHILDREN = dict(cfrjax=child_cfrjax, openspiel=child_openspiel, liteefg=child_liteefg)


# ---------------------------------------------------------------- the parent: one job per arm

PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"
_PARENT_ENV = {}  # variables main() set for this process only (not passed to the arms)


def run_child(job: dict, prefix=(), env_extra=None, pythonpath=None) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _PARENT_ENV}
    env.update(env_extra or {})
    paths = [p for p in (pythonpath, ROOT, env.get("PYTHONPATH")) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    cmd = list(prefix) + [sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    res = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if p.returncode or not res:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[-1500:]}")
    return json.loads(res[-1][len("RESULT "):])


class Runner:
    def __init__(self, args, env):
        self.args, self.env = args, env
        self.records: list[dict] = []
        self.failed = False
        self.cpu = env["jax_backend"] == "cpu"
        self._postflop = self._texas = self._noregret = None

    # -- bookkeeping
    def base(self, game_name, arm, **kw) -> dict:
        ths, unit, pot = thresholds(game_name)
        g = GAMES[game_name]
        return dict(bench="curves", game=game_name, title=g["title"], arm=arm, threshold_unit=unit,
                    pot=pot if g["kind"] in POKER_KINDS else None, eval_every=g["eval_every"],
                    machine_note=self.args.note, **self.env, **kw)

    def budget(self, game_name) -> dict:
        g = GAMES[game_name]
        s = self.args.budget_scale
        return dict(max_iterations=int(g["max_iterations"] * s), max_solve_s=g["max_solve_s"] * s)

    def job(self, game_name, **kw) -> dict:
        b = self.budget(game_name)
        return dict(game=game_name, thresholds=thresholds(game_name)[0], budget=b, specs=self.args.specs,
                    cache=self.args.cache, **b, **kw)

    def skip(self, game_name, arm, why, **kw):
        self.records.append(self.base(game_name, arm, skipped=why, **kw))
        print(f"{game_name:16s} {arm:44s} skipped: {why}", flush=True)

    def add(self, game_name, arms, fn, **kw):
        """Run `fn()` (-> one record's fields, or a list of them for the list `arms`) under a
        load meter; a failure is a record too."""
        many = isinstance(arms, list)
        with Load() as load:
            try:
                recs, err = fn(), None
            except Exception as e:  # noqa: BLE001  (recorded, the run goes on; the exit code says it)
                recs, err = None, f"{type(e).__name__}: {e}"[-2000:]
        for k, arm in enumerate(arms if many else [arms]):
            rec = {**self.base(game_name, arm, **kw), **(({} if recs is None else recs[k] if many else recs)),
                   **load.fields}
            if err:
                rec["failed"] = err
                self.failed = True
                print(f"{game_name:16s} {arm:44s} FAILED: {err[-500:]}", flush=True)
            else:
                tt = "  ".join(f"{x['threshold']:.0e}: " + (f"{x['solve_s']:.3g} s ({x['iterations']} it)"
                                                           if x["iterations"] else "-") for x in rec["to_target"])
                print(f"{game_name:16s} {arm:44s} {rec['ms_per_iter']:9.4f} ms/iter {rec['iterations_run']:5d} it "
                      f"eps {rec['final_exploitability']:.3e}  to target {tt}  (load "
                      f"{load.fields['load_avg_1m_before']:.1f})", flush=True)
            self.records.append(rec)

    # -- arms
    def cfrjax(self, game_name, pinned=False):
        g = GAMES[game_name]
        dev = "CPU" if self.cpu else self.env["device"]
        if g.get("accelerator_only") and self.cpu:
            return self.skip(game_name, f"cfrjax {dev}{', 1 core' if pinned else ''}", "run on a GPU: several GB per "
                             "state array and minutes per iteration on this CPU")
        for k, form in enumerate(g["forms"][:1] if pinned else g["forms"]):
            configs = [DEFAULT_CONFIG] if pinned or k > 0 else self.args.cfrjax_configs[:g.get("configs")]
            arms = [f"cfrjax {dev}{', 1 core' if pinned else ''} ({form}) {c.split(':')[0]} {c.split(':')[1]}"
                    for c in configs]
            job = self.job(game_name, arm="cfrjax", configs=configs, form=form)
            prefix = PIN if pinned else ()
            extra = {"XLA_FLAGS": (os.environ.get("XLA_FLAGS", "") + " " + ONE_THREAD_XLA_FLAGS).strip()} \
                if pinned else None
            cmd = f"python bench/curves.py --games {game_name} --arms {'cfrjax-1core' if pinned else 'cfrjax'}"
            self.add(game_name, arms, lambda: run_child(job, prefix, extra),
                     pinning=" ".join(PIN) if pinned else None, command=cmd)

    def openspiel(self, game_name):
        if GAMES[game_name]["kind"] != "openspiel":
            return self.skip(game_name, "OpenSpiel C++ CFR+", "not an OpenSpiel game (a cfrjax poker spec)")
        import importlib.util
        if importlib.util.find_spec("pyspiel") is None:
            return self.skip(game_name, "OpenSpiel C++ CFR+", "pyspiel not importable (pip install open_spiel)")
        self.add(game_name, "OpenSpiel C++ CFR+", lambda: run_child(self.job(game_name, arm="openspiel"), PIN),
                 pinning=" ".join(PIN), command=f"python bench/curves.py --games {game_name} --arms openspiel")

    def liteefg(self, game_name):
        if "suite" not in GAMES[game_name]:
            for rule in LITEEFG_RULES:
                self.skip(game_name, f"LiteEFG {rule}", "needs the tabular tree in its file format: the full-range "
                          "river's has 16M nodes, the turn's does not fit in memory")
            return
        probe = subprocess.run([sys.executable, "-c", "import LiteEFG"], capture_output=True, text=True,
                               env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                   p for p in (self.args.liteefg_path, os.environ.get("PYTHONPATH")) if p)))
        if probe.returncode:
            for rule in LITEEFG_RULES:
                self.skip(game_name, f"LiteEFG {rule}", "LiteEFG not importable (pip install --no-deps --target DIR "
                          f"liteefg==1.0.0 pandas; --liteefg-path DIR): {probe.stderr.strip()[-200:]}")
            return
        for rule in LITEEFG_RULES:
            self.add(game_name, f"LiteEFG {rule}",
                     lambda rule=rule: run_child(self.job(game_name, arm="liteefg", rule=rule), PIN,
                                                 pythonpath=self.args.liteefg_path),
                     pinning=" ".join(PIN), command=f"python bench/curves.py --games {game_name} --arms liteefg")

    def noregret(self, game_name):
        label = "NoRegret " + ("CuPy" if self.args.noregret_kernel == "cupy" else "NumPy")
        if GAMES[game_name]["kind"] != "openspiel":
            for cfg in NOREGRET_CONFIGS:
                self.skip(game_name, f"{label} {cfg.split(':')[0]} {cfg.split(':')[1]}",
                          "NoRegret loads OpenSpiel games; a cfrjax poker spec is not one")
            return
        import noregret_peer
        if self._noregret is None:
            try:
                self._noregret = (self.args.noregret_python or noregret_peer.ensure_venv(
                    self.args.noregret_venv or noregret_peer.DEFAULT_VENV), None)
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                self._noregret = (None, f"venv: {e}")
        py, why = self._noregret
        arms = [f"{label} {cfg.split(':')[0]} {cfg.split(':')[1]}" for cfg in NOREGRET_CONFIGS]
        if py is None:
            for arm in arms:
                self.skip(game_name, arm, why)
            return
        b = self.budget(game_name)
        g = GAMES[game_name]
        ths = thresholds(game_name)[0]
        cmd = [py, os.path.join(HERE, "peers", "noregret_peer.py"), "curve", "--game", g["source"], "--configs",
               *NOREGRET_CONFIGS, "--eval-every", str(g["eval_every"]), "--max-iterations", str(b["max_iterations"]),
               "--max-seconds", str(b["max_solve_s"]), "--target", str(ths[-1]), "--kernel", self.args.noregret_kernel]
        prefix = PIN if self.args.noregret_kernel == "numpy" else ()

        def fn():
            p = subprocess.run(list(prefix) + cmd, capture_output=True, text=True)
            if p.returncode:
                raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()[-1500:]}")
            out = []
            for line in [x for x in p.stdout.splitlines() if x.startswith("{")]:
                r = json.loads(line)
                pts = r.pop("curve")
                r.pop("game")
                if r["rule"] == "dcfr":
                    r["averaging"] = "its DCFR's: weight (t/(t+1))^2 per iteration (about uniform; not t^2)"
                r.update(form="sequence form (NoRegret to_efg)", threads="1 process",
                         command=(" ".join(prefix) + " " + r["command"]).strip(),
                         timing="nr.rm's own loop; its update callback at each checkpoint stops the clocks "
                                "(device sync on CuPy), evaluates, restarts them")
                if self.args.noregret_kernel == "cupy":
                    r["threads"] = r["device"]
                r.pop("device", None)
                out.append(finish(r, pts, ths, b))
            if len(out) != len(arms):
                raise RuntimeError(f"{len(out)} records for {len(arms)} configurations: {p.stderr.strip()[-1000:]}")
            return out
        self.add(game_name, arms, fn, pinning=" ".join(prefix) or None)

    def postflop(self, game_name):
        import postflop_peer
        g = GAMES[game_name]
        if g["kind"] != "poker":
            return self.skip(game_name, "postflop-solver", "a poker solver; not a poker spot" if g["kind"] not in
                             POKER_KINDS else "Libratus' betting abstraction is not translated to its trees")
        if self._postflop is None:
            exe, why = postflop_peer.build_driver(self.args.postflop_solver, cargo_source_dir=self.args.cargo_source_dir,
                                                  rustflags=os.environ.get("RUSTFLAGS") or postflop_peer.RUSTFLAGS)
            vers = postflop_peer.solver_version(os.path.abspath(os.path.expanduser(self.args.postflop_solver))) \
                if exe else {}
            self._postflop = (exe, why, vers)
        exe, why, vers = self._postflop
        for th in self.args.turn_threads if "turn" in game_name or "flop" in game_name else (1,):
            arm = f"postflop-solver, {th} thread{'s' if th > 1 else ''}"
            if exe is None:
                self.skip(game_name, arm, why)
                continue
            spot = postflop_peer.spot_of_spec(g["source"], combos=True)
            b = self.budget(game_name)
            ths = thresholds(game_name)[0]
            prefix = PIN if th == 1 else BOTH
            # The same-game check loads its whole strategy into cfrjax: river spots only (a
            # flop's is hundreds of millions of numbers; the turn's tree is checked by
            # `postflop_peer.py --spots turn_sizes`).
            dump = None if "turn" in game_name or "flop" in game_name \
                else f"/tmp/cfrjax_curves_postflop_{os.getpid()}.jsonl"

            def fn(spot=spot, th=th, prefix=prefix, dump=dump, b=b, ths=ths):
                r = postflop_peer.run_driver(exe, spot, b["max_iterations"], th, dump=dump,
                                             eval_every=g["eval_every"], prefix=prefix,
                                             extra=["--target", ths[-1], "--max-seconds", b["max_solve_s"]])
                pts = [list(p) for p in r.pop("curve")]
                out = dict(backend="postflop-solver", rule="dcfr (its own: alpha 1.5, beta 0.5)", order="alternating",
                           memory_bytes=r.get("memory_bytes"), final_value=r["current_ev"][0],
                           averaging="its own: gamma 3, reset at powers of 4", precision="float32",
                           form="its own tree (range vectors)", threads=f"{th} thread{'s' if th > 1 else ''} (rayon)",
                           versions=vers, build_s=r["build_s"], command=r["command"],
                           rustflags=os.environ.get("RUSTFLAGS") or postflop_peer.RUSTFLAGS,
                           timing="each solve_step timed (wall and process CPU clocks) by our driver; "
                                  "evaluation (compute_exploitability) between them, outside the clocks")
                if dump:
                    import cfrjax
                    chk = postflop_peer.same_game_check(cfrjax.load_game(g["source"]),
                                                        dict(r, spot=g["source"], pot=spot["pot"]), dump)
                    os.remove(dump)
                    out["same_game_check"] = dict(gaps_chips=chk["gaps_chips"], tol_chips=chk["tol_chips"],
                                                  ok=chk["ok"], iterations=chk["iterations"])
                    if not chk["ok"]:
                        raise RuntimeError(f"same-game check failed: {chk['gaps_chips']}")
                return finish(out, pts, ths, b)
            self.add(game_name, arm, fn, pinning=" ".join(prefix))

    def texassolver(self, game_name):
        import texassolver_peer as tsp
        g = GAMES[game_name]
        if g["kind"] != "poker":
            return self.skip(game_name, "TexasSolver", "a poker solver; not a poker spot" if g["kind"] not in
                             POKER_KINDS else "Libratus' betting abstraction is not translated to its trees")
        if "flop" in game_name:
            return self.skip(game_name, "TexasSolver", "the flop is measured against postflop-solver, the faster "
                             "CPU peer on the river and turn")
        threads = self.args.turn_threads if "turn" in game_name else (1,)
        try:
            spot = tsp.spot_of_spec(g["source"])
        except ValueError as e:
            for th in threads:
                self.skip(game_name, f"TexasSolver, {th} thread{'s' if th > 1 else ''}",
                          f"{e}; its range syntax names hand classes ('AK', 'AKs'), not single combos")
            return
        if self._texas is None:
            exe, res, why = tsp.find_solver(self.args.texassolver, self.args.texassolver_exe)
            if exe is not None:
                why = tsp.ensure_dictionary(os.path.abspath(os.path.expanduser(self.args.texassolver)), res)
                exe = None if why else exe
            vers = tsp.solver_version(os.path.abspath(os.path.expanduser(self.args.texassolver)), exe) if exe else {}
            self._texas = (exe, res, why, vers)
        exe, res, why, vers = self._texas
        for th in threads:
            arm = f"TexasSolver, {th} thread{'s' if th > 1 else ''}"
            if exe is None:
                self.skip(game_name, arm, why)
                continue
            b = self.budget(game_name)
            ths, _, pot = thresholds(game_name)
            prefix = PIN if th == 1 else BOTH

            def fn(th=th, prefix=prefix, b=b, ths=ths, pot=pot):
                r = tsp.run_curve(exe, res, spot, b["max_iterations"], th, g["eval_every"],
                                  target_pct=100 * ths[-1] / pot, max_solve_s=b["max_solve_s"], prefix=prefix)
                pts = r.pop("curve")
                r.pop("threads")
                turn = len(spot["board"].split()) == 4
                out = dict(backend="TexasSolver", rule="dcfr (its own: alpha 1.5, beta 0.5)", order="alternating",
                           averaging="its own: cum = 0.9 cum + (t/(t+1))^2 sigma (not reach-weighted)",
                           precision="float32", form="its own tree (range vectors)",
                           threads=f"{th} thread{'s' if th > 1 else ''} (OpenMP over dealt cards)", versions=vers,
                           same_game=not turn, command=r.pop("command"),
                           timing="its loop clock ('time used') minus its earlier best-response passes, each timed "
                                  "from its output lines; CPU from /proc/PID/stat likewise", **r)
                if turn:
                    out["note"] = ("its own game: it weighs each river card 1/46 where cfrjax (and the game) has "
                                   "1/44 per pair of hands (its issue #95); the exploitability is in its game")
                return finish(out, pts, ths, b)
            self.add(game_name, arm, fn, pinning=" ".join(prefix))


def device_slug(env) -> str:
    if env["jax_backend"] == "cpu":
        return "cpu"
    kind = env["device"].lower().replace("nvidia", "").strip()
    return "".join(c if c.isalnum() else "_" for c in kind).strip("_") or env["jax_backend"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--games", default=",".join(g for g, v in GAMES.items() if v.get("default", True)))
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--cfrjax-configs", nargs="+", default=list(CFRJAX_CONFIGS), help="rule:order:averaging")
    ap.add_argument("--budget-scale", type=float, default=1.0, help="multiplies every max_iterations and max_solve_s")
    ap.add_argument("--turn-threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--specs", default=os.path.join(ROOT, ".carry", "specs"),
                    help="pickled GameSpecs of the OpenSpiel games (written here on first use)")
    ap.add_argument("--cache", default=os.path.join(ROOT, ".carry", "curves"), help="LiteEFG files")
    ap.add_argument("--liteefg-path", default=os.path.expanduser("~/.cache/cfrjax-peers/liteefg"),
                    help="a --target directory holding LiteEFG 1.0.0 (and pandas)")
    ap.add_argument("--noregret-venv", default=None)
    ap.add_argument("--noregret-python", default=None, help="a Python 3.12 with noregret dev17 (GPU machine: python3)")
    ap.add_argument("--noregret-kernel", default="numpy", choices=["numpy", "cupy"])
    ap.add_argument("--postflop-solver", default=None)
    ap.add_argument("--cargo-source-dir", default=None)
    ap.add_argument("--texassolver", default=None)
    ap.add_argument("--texassolver-exe", default=None)
    ap.add_argument("--libratus", default=None, help="the folder of the Libratus endgame files (games libratus_<k>)")
    ap.add_argument("--note", default="", help="how the machine was (recorded in every record)")
    ap.add_argument("--out", default=None, help="default bench/results/curves_<device>.jsonl")
    ap.add_argument("--write-specs", metavar="DIR", help="pickle the OpenSpiel games' GameSpecs into DIR and exit")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.libratus:
        os.environ[LIBRATUS_ENV] = os.path.abspath(os.path.expanduser(args.libratus))
    if args.child:
        job = json.loads(args.child)
        print("RESULT " + json.dumps(CHILDREN[job["arm"]](job)), flush=True)
        return 0
    if args.write_specs:
        from suite import load_suite, select, write_specs
        write_specs(args.write_specs, select(load_suite(), ",".join(g["suite"] for g in GAMES.values()
                                                                       if g["kind"] == "openspiel")))
        return 0
    if PREALLOCATE not in os.environ:
        # On a GPU this process only asks for the device's name (and evaluates small checks):
        # it must not take JAX's default 75% of the memory the arms' processes need.
        os.environ[PREALLOCATE] = _PARENT_ENV[PREALLOCATE] = "false"
    from common import environment
    env = environment()
    env["jax_backend"] = env.pop("backend")  # `backend` names each record's solver
    import jax
    jax.config.update("jax_enable_x64", True)  # this process only evaluates (the same-game checks), in float64
    out = args.out or os.path.join(HERE, "results", f"curves_{device_slug(env)}.jsonl")
    env["run_started"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    env["run_command"] = "python bench/curves.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    arms = args.arms.split(",")
    unknown = [a for a in arms if a not in ARMS] + [g for g in args.games.split(",") if g not in GAMES]
    if unknown:
        raise SystemExit(f"unknown arm(s)/game(s) {', '.join(unknown)}; arms: {', '.join(ARMS)}; games: "
                         f"{', '.join(GAMES)}")
    run = Runner(args, env)
    # Earlier runs' records in `out` stay: this run's are added after them (rewritten
    # after each game, so a stopped run keeps the games it finished).
    earlier = open(out).read() if os.path.exists(out) else ""
    for game_name in args.games.split(","):
        for arm in arms:
            if arm == "cfrjax-1core":
                if run.cpu:
                    run.cfrjax(game_name, pinned=True)
            else:
                getattr(run, arm.replace("-", "_"))(game_name)
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w") as f:
            f.write(earlier)
            for r in run.records:
                f.write(json.dumps(r, default=float) + "\n")
    print(f"{len(run.records)} records -> {out}", flush=True)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
