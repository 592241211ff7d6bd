"""NoRegret (PyPI `noregret==0.0.0.dev17`, uoftcprg) as a benchmark peer, run in its own venv.

NoRegret dev17 needs Python >= 3.12 (PyPI resolves `noregret` to an empty 0.0.0.dev3 on
3.11), so this file has two halves:

  * the caller (Python 3.11, cfrjax's env): `ensure_venv()` makes a Python 3.12 venv outside
    the repository (default `~/.cache/cfrjax-peers/noregret-venv`) with noregret dev17 and its
    CFR path's dependencies, and `run_worker()` runs this same file in that venv and reads its
    JSONL records back;
  * the worker (`<venv>/bin/python noregret_peer.py worker ...`, stdlib + noregret only, no
    cfrjax): builds each OpenSpiel game as NoRegret's sequence-form game, runs its CFR family,
    times it, evaluates exactly, and prints one JSON record per (game, configuration).

    python bench/peers/noregret_peer.py ensure-venv [--venv DIR]
    <venv>/bin/python bench/peers/noregret_peer.py worker --games kuhn_poker leduc_poker \
        --configs cfr+:simultaneous:linear --iterations 1000 [--kernel numpy|cupy] [--policy]
    python bench/peers/noregret_peer.py diagnose [--games ...] [--configs ...] [--iterations 1000]
    <venv>/bin/python bench/peers/noregret_peer.py curve --game leduc_poker --configs dcfr:alternating \
        [--eval-every 10] [--max-iterations N] [--max-seconds S] [--target EPS] [--kernel numpy|cupy]

`curve` (worker) is `bench/curves.py`'s NoRegret arm: exploitability every K iterations, with
the iterations' time (evaluation excluded).

`diagnose` (caller side; its worker half is `<venv>/bin/python noregret_peer.py trajectory`)
explains the same-game check's failures: per-iteration gaps of NoRegret vs cfrjax (folded
chance, the check's arm), NoRegret vs cfrjax with `chance="explicit"`, and two controls that
differ only in rounding (cfrjax folded vs explicit; NoRegret vs NoRegret with `theta / d` in
`normalize`), into `bench/results/peers_noregret_divergence.jsonl` (bench/README.md, NoRegret).

Semantics, read from noregret 0.0.0.dev17's sources:
  * `regret_minimizers/sequence_form_polytopes.py`: `CFR` (`CounterfactualRegretMinimization`)
    regret-matches cumulative counterfactual regrets; `CFR_plus` floors them at 0 after every
    observation (RM+); `DCFR` discounts positive/negative regrets by t^a/(t^a+1), t^b/(t^b+1)
    (alpha 1.5, beta 0, gamma 2). Its average (`DiscountedRegretMinimizer.
    _update_average_strategy`) weighs iteration t by (t/(t+1))^gamma itself, not by the
    product of those factors (t^gamma, the DCFR paper's and cfrjax's): nearly uniform
    averaging, so its DCFR converges like CFR with discounted regrets (bench/curves.py runs it
    as such and says so in its records). Counterfactual regrets come from the sequence-form utility
    vector by one sparse pass per depth level. A decision point whose positive-regret sum is
    `isclose` to 0 (atol 1e-8) plays uniform (`SequenceFormPolytope.normalize`).
  * `regret_minimizers/regret_minimizers.py` `_update_average_strategy`: the average is of
    the *sequence-form* strategy each player played at iteration t, weight t^gamma
    (`gamma` 0: uniform, 1: linear, 2: quadratic), i.e. the reach-weighted behavioural
    average, as cfrjax's.
  * `solvers/regret_minimization.py` `regret_minimization(..., alternation, prediction)`:
    simultaneous: both players observe `game.utilities(x_t, y_t)`; alternating: player 0
    observes against y_t, then player 1 against the new x_{t+1}. `prediction=True` is
    predictive CFR: the next strategy regret-matches R_t + r_t(m) with m the last utility,
    i.e. the last instantaneous counterfactual regret (cfrjax `pcfr+`: m_t = r_{t-1}).
    PCFR+ here = `CFR_plus(gamma=2)` with prediction (the configuration of NoRegret's own
    tests), CFR+ = `CFR_plus` (gamma 1), CFR = `CFR` (gamma 0 or the one asked).
  * Exact evaluation: `TwoPlayerZeroSumExtensiveFormGame.exploitability` = Nash gap / 2
    (sequence-form best responses, cfrjax's `exploitability`), value = `expected_row_utility`
    (player 0). Kernel `FPKer('double')`: NumPy/SciPy float64, one process; `CUDAKer('double')`:
    CuPy/cupyx.scipy float64 on the GPU.
  * Game building: `to_efg(ker, OpenSpielGame(ker, name))` walks OpenSpiel's whole tree in
    Python into a sparse payoff matrix (timed as `build_s`, not in ms/iter). Chance is folded
    into it (`games/utilities.py` `_bbg2efg`: each leaf adds `p * u` with `p` the product of
    the chance probabilities on its path), so the cfrjax arm keeps `load_game`'s default
    `chance="folded"`; `"explicit"` agrees no better (`diagnose`).
  * Averaging from t = 1 (`observe` increments `iteration_count` first) of the strategy
    played at t, also in alternating mode (player 1 averages y_t, which it played against
    x_{t+1}); alternation is player 0 first. A positive-regret sum in (0, 1e-8], where the
    `isclose` rule and cfrjax's exact-zero test would differ, never occurs in the checked
    runs (`trajectory` counts them: 0).

Stand-ins: `noregret/__init__` imports `solvers/linear_programming.py`, which imports
`gurobipy` (LP solver; commercial licence); the CFR path never calls it, so the venv gets an
empty stand-in module `gurobipy.py` (its `Env`/`Model` raise if used). `sparse_dot_mkl` is
imported only by `MKLKernel()` (not used here): no stand-in. `cupy` is imported only by
`CUDAKernel()`: installed on the GPU machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

NOREGRET_VERSION = "0.0.0.dev17"
DEFAULT_VENV = os.path.join(os.path.expanduser("~"), ".cache", "cfrjax-peers", "noregret-venv")
# The CFR path's dependencies (noregret's own pins minus cupy, gurobipy, sparse_dot_mkl).
DEPS = ["numpy>=2.4.4,<3", "scipy>=1.17.1,<2", "open-spiel>=1.6.14,<2", "ordered-set>=4.1.0,<5",
        "orjson>=3.11.9,<4", "pokerkit>=0.7.7.dev0,<0.8", "tqdm>=4.67.3,<5"]
GUROBIPY_STANDIN = '''"""Empty stand-in for gurobipy (cfrjax bench/peers/noregret_peer.py): noregret imports it
only for its LP solver, which the CFR path never calls."""


class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise ImportError("gurobipy stand-in: NoRegret's LP solver is not available in this venv")


Env = Model = _Unavailable
GRB = None
'''
# rule name -> (NoRegret class name, gamma of its average, prediction)
RULES = {"cfr": ("CFR", 0, False), "cfr+": ("CFR_plus", 1, False), "pcfr+": ("CFR_plus", 2, True),
         "dcfr": ("DCFR", 2, False)}
GAMMA = {"uniform": 0, "linear": 1, "quadratic": 2}
# The configurations checked against cfrjax float64 at 1,000 iterations (issue 18).
CHECK_CONFIGS = ["cfr:simultaneous:uniform", "cfr:alternating:uniform", "cfr+:simultaneous:linear",
                 "pcfr+:simultaneous:quadratic"]
BENCH_CONFIGS = ["cfr+:simultaneous:linear", "cfr:simultaneous:uniform", "pcfr+:simultaneous:quadratic"]


# ---------------------------------------------------------------- caller side (Python 3.11)

def find_python312() -> str | None:
    import shutil
    for cand in (os.environ.get("NOREGRET_PYTHON"), "python3.12"):
        if cand and shutil.which(cand):
            try:
                out = subprocess.run([cand, "-c", "import sys; print(sys.version_info[:2] >= (3, 12))"],
                                     capture_output=True, text=True, timeout=60)
                if out.stdout.strip() == "True":
                    return shutil.which(cand)
            except (OSError, subprocess.SubprocessError):
                pass
    import glob
    for cand in sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]"))):
        return cand
    return None


def venv_python(venv: str = DEFAULT_VENV) -> str:
    return os.path.join(venv, "bin", "python")


def _venv_ok(venv: str) -> bool:
    py = venv_python(venv)
    if not os.path.isfile(py):
        return False
    out = subprocess.run([py, "-c", "import importlib.metadata as m, noregret; print(m.version('noregret'))"],
                         capture_output=True, text=True, timeout=300)
    return out.returncode == 0 and out.stdout.strip() == NOREGRET_VERSION


def ensure_venv(venv: str = DEFAULT_VENV, log=print) -> str:
    """Make (once) the Python 3.12 venv with noregret dev17; return its python. Raises
    RuntimeError with the reason when it cannot (no Python 3.12, pip cannot reach an index)."""
    if _venv_ok(venv):
        return venv_python(venv)
    py312 = find_python312()
    if py312 is None:
        raise RuntimeError("no Python >= 3.12 found (set NOREGRET_PYTHON): noregret 0.0.0.dev17 needs 3.12")
    log(f"noregret: making venv {venv} with {py312}")
    os.makedirs(os.path.dirname(venv), exist_ok=True)
    steps = [[py312, "-m", "venv", venv],
             # --no-deps: its pins also name cupy-cuda13x[ctk] (GPU only), gurobipy, sparse_dot_mkl
             [venv_python(venv), "-m", "pip", "install", "-q", "--no-deps", f"noregret=={NOREGRET_VERSION}"],
             [venv_python(venv), "-m", "pip", "install", "-q", "--pre", *DEPS]]
    for cmd in steps:
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd[:5])} ... failed: {out.stderr.strip()[-500:]}")
    site = subprocess.run([venv_python(venv), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "gurobipy.py"), "w") as f:
        f.write(GUROBIPY_STANDIN)
    if not _venv_ok(venv):
        raise RuntimeError(f"venv {venv} was made but `import noregret` fails there")
    return venv_python(venv)


def run_worker(python: str, games, configs, iterations: int, kernel: str = "numpy", policy: bool = False,
               timeout: float | None = None) -> list[dict]:
    """Run the worker in the venv; its records (one per game x config), in order."""
    cmd = [python, os.path.abspath(__file__), "worker", "--games", *games, "--configs", *configs,
           "--iterations", str(iterations), "--kernel", kernel] + (["--policy"] if policy else [])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"noregret worker failed (rc {out.returncode}): {out.stderr.strip()[-2000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


# ---------------------------------------------------------------- worker side (venv, Python 3.12)

def parse_config(text: str) -> tuple[str, str, str]:
    rule, order, averaging = (text.split(":") + [None, None])[:3]
    if rule not in RULES:
        raise SystemExit(f"unknown rule {rule!r}: {sorted(RULES)}")
    order = order or "simultaneous"
    averaging = averaging or {0: "uniform", 1: "linear", 2: "quadratic"}[RULES[rule][1]]
    return rule, order, averaging


def _standin_gurobipy() -> bool:
    """Put an empty `gurobipy` into `sys.modules` when none is installed (the GPU machine's
    wheel install has no venv to hold the stand-in file); True when the stand-in is used."""
    try:
        import gurobipy  # noqa: F401
        return getattr(gurobipy, "GRB", 0) is None  # our own stand-in file
    except ImportError:
        import types
        mod = types.ModuleType("gurobipy")
        exec(GUROBIPY_STANDIN, mod.__dict__)
        sys.modules["gurobipy"] = mod
        return True


def _kernel(name: str):
    import noregret as nr
    if name == "numpy":
        return nr.FPKer("double")
    if name == "cupy":
        return nr.CUDAKer("double")
    raise SystemExit(f"unknown kernel {name!r}")


def build_game(name: str, kernel_name: str):
    """NoRegret's sequence-form game for an OpenSpiel game string, on the kernel's device."""
    import noregret as nr
    cpu = nr.FPKer("double")
    efg = nr.to_efg(cpu, nr.OpenSpielGame(cpu, name))
    if kernel_name == "numpy":
        return efg
    # Move through NoRegret's own serialization (scipy .npz -> cupyx csr); if that fails, build
    # directly on the CUDA kernel (the tree walk stays in NumPy either way).
    try:
        return type(efg).loads(_kernel(kernel_name), efg.dumps())
    except Exception:  # noqa: BLE001
        return nr.to_efg(_kernel(kernel_name), nr.OpenSpielGame(cpu, name))


def _minimizers(game, rule: str, averaging: str):
    import noregret as nr
    cls, _, _ = RULES[rule]
    return [getattr(nr, cls)(game.kernel, sfp, gamma=GAMMA[averaging]) for sfp in game.sequence_form_polytopes]


def _solve(game, rule, order, averaging, iterations):
    import noregret as nr
    Rs = _minimizers(game, rule, averaging)
    sync = _sync(game)
    t0 = time.perf_counter()
    profile = nr.rm(game, *Rs, alternation=(order == "alternating"), prediction=RULES[rule][2],
                    iteration_count=iterations, progress_bar=False)
    sync()
    return profile, time.perf_counter() - t0


def _sync(game):
    np = game.kernel.numpy
    if np.__name__ == "cupy":
        return lambda: np.cuda.Stream.null.synchronize()
    return lambda: None


def behavioural(sfp, x) -> dict:
    """`{infoset: {action: probability}}` of a sequence-form strategy (uniform where unreached)."""
    x = x.get() if hasattr(x, "get") else x
    out = {}
    for j in sfp.decision_points:
        parent = float(x[sfp.column(sfp.parent_sequences[j])])
        acts = list(sfp.actions[j])
        if parent > 0:
            out[j] = {a: float(x[sfp.column((j, a))]) / parent for a in acts}
        else:
            out[j] = {a: 1.0 / len(acts) for a in acts}
    return out


def versions(kernel_name: str) -> dict:
    import importlib.metadata as md
    v = {"noregret": md.version("noregret"), "python": sys.version.split()[0]}
    for pkg in ("numpy", "scipy", "open_spiel"):
        try:
            v[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    if kernel_name == "cupy":
        import cupy
        v["cupy"] = cupy.__version__
        try:
            v["gpu"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        except Exception:  # noqa: BLE001
            pass
    return v


def worker(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="noregret_peer.py worker")
    ap.add_argument("--games", nargs="+", default=["kuhn_poker", "leduc_poker"])
    ap.add_argument("--configs", nargs="+", default=BENCH_CONFIGS, help="rule:order:averaging")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--kernel", default="numpy", choices=["numpy", "cupy"])
    ap.add_argument("--warmup", type=int, default=None, help="warm-up iterations on fresh minimizers "
                    "(default: 0 on numpy, 20 on cupy: CuPy compiles kernels on first use)")
    ap.add_argument("--policy", action="store_true", help="include the average behavioural policy")
    ap.add_argument("--out", default=None, help="also append the records to this JSONL file")
    args = ap.parse_args(argv)
    import platform
    standin = _standin_gurobipy()
    ver = versions(args.kernel)
    ver["gurobipy"] = "empty stand-in (LP solver unused)" if standin else ver.get("gurobipy", "installed")
    warm = args.warmup if args.warmup is not None else (20 if args.kernel == "cupy" else 0)
    device = ver.get("gpu", "GPU") if args.kernel == "cupy" else f"CPU ({platform.processor() or platform.machine()}, " \
        f"{os.cpu_count()} cores)"
    for name in args.games:
        t0 = time.perf_counter()
        try:
            game = build_game(name, args.kernel)
        except Exception as e:  # noqa: BLE001  (a game NoRegret cannot load: recorded as skipped)
            rec = dict(backend="noregret", game=name, skipped=f"{type(e).__name__}: {e}"[:500], versions=ver)
            print(json.dumps(rec), flush=True)
            continue
        build_s = time.perf_counter() - t0
        for cfg in args.configs:
            rule, order, averaging = parse_config(cfg)
            if warm:
                _solve(game, rule, order, averaging, warm)
            (x, y), solve_s = _solve(game, rule, order, averaging, args.iterations)
            t1 = time.perf_counter()
            expl = float(game.exploitability(x, y))
            value = float(game.expected_row_utility(x, y))
            eval_s = time.perf_counter() - t1
            rec = dict(backend="noregret", game=name, rule=rule, order=order, averaging=averaging,
                       precision="float64", kernel=args.kernel, device=device,
                       execution=("NumPy/SciPy sparse (FPKer('double')), 1 process" if args.kernel == "numpy"
                                  else "CuPy/cupyx.scipy sparse (CUDAKer('double'))"),
                       iterations=args.iterations, warmup_iterations=warm, build_s=build_s, solve_s=solve_s,
                       ms_per_iter=1e3 * solve_s / args.iterations, eval_s=eval_s, exploitability=expl,
                       nash_conv=2 * expl, value=value, sequences=list(game.dimensions), versions=ver,
                       command=" ".join(["python", "bench/peers/noregret_peer.py", "worker", "--games", name,
                                         "--configs", cfg, "--iterations", str(args.iterations),
                                         "--kernel", args.kernel]))
            if args.policy:
                pol = {}
                for sfp, s in zip(game.sequence_form_polytopes, (x, y)):
                    pol.update(behavioural(sfp, s))
                rec["policy"] = pol
            line = json.dumps(rec)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a") as f:
                    f.write(json.dumps({k: v for k, v in rec.items() if k != "policy"}) + "\n")


def curve(argv=None) -> None:
    """Worker (venv): NoRegret runs with their exploitability every `--eval-every` iterations,
    for `bench/curves.py`, one per configuration of `--configs` on one game (built once).
    Iterations run through `nr.rm`'s own loop; at each checkpoint its `update` callback
    stops the clocks (after a device sync on CuPy), evaluates the average profile exactly
    (`game.exploitability`, untimed) and restarts them, so `solve_s` and `cpu_s` (this
    process) exclude evaluation. A run stops at the first checkpoint at or below `--target`,
    or whose `solve_s` reaches `--max-seconds`, or after `--max-iterations`. Prints one JSON
    record per configuration: `curve` = [[iterations, solve_s, exploitability, cpu_s], ...]."""
    ap = argparse.ArgumentParser(prog="noregret_peer.py curve")
    ap.add_argument("--game", required=True)
    ap.add_argument("--configs", nargs="+", required=True, help="rule:order:averaging")
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--max-iterations", type=int, default=1000)
    ap.add_argument("--max-seconds", type=float, default=0.0, help="0: no time limit")
    ap.add_argument("--target", type=float, default=0.0, help="0: no target")
    ap.add_argument("--kernel", default="numpy", choices=["numpy", "cupy"])
    ap.add_argument("--warmup", type=int, default=None, help="warm-up iterations on fresh minimizers "
                    "(default: 0 on numpy, 20 on cupy)")
    args = ap.parse_args(argv)
    import platform
    standin = _standin_gurobipy()   # before noregret's import, which imports gurobipy
    import noregret as nr
    ver = versions(args.kernel)
    ver["gurobipy"] = "empty stand-in (LP solver unused)" if standin else ver.get("gurobipy", "installed")
    t0 = time.perf_counter()
    game = build_game(args.game, args.kernel)
    build_s = time.perf_counter() - t0
    warm = args.warmup if args.warmup is not None else (20 if args.kernel == "cupy" else 0)
    device = ver.get("gpu", "GPU") if args.kernel == "cupy" else \
        f"CPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)"
    sync = _sync(game)
    e = args.eval_every
    for cfg in args.configs:
        rule, order, averaging = parse_config(cfg)
        if warm:
            _solve(game, rule, order, averaging, warm)
        Rs = _minimizers(game, rule, averaging)
        st = dict(solve=0.0, cpu=0.0, done=0, stopped="max_iterations", eval_s=0.0)
        points = []

        def update(Rs=Rs, st=st, points=points):
            sync()
            st["solve"] += time.perf_counter() - st["t"]
            st["cpu"] += time.process_time() - st["c"]
            st["done"] += e
            t1 = time.perf_counter()
            expl = float(game.exploitability(Rs[0].average_strategy, Rs[1].average_strategy))
            st["eval_s"] += time.perf_counter() - t1
            points.append([st["done"], st["solve"], expl, st["cpu"]])
            stop = None
            if args.target > 0 and expl <= args.target:
                stop = "target"
            elif args.max_seconds > 0 and st["solve"] >= args.max_seconds:
                stop = "max_solve_s"
            if stop:
                st["stopped"] = stop
            st["t"], st["c"] = time.perf_counter(), time.process_time()
            return stop is not None

        st["t"], st["c"] = time.perf_counter(), time.process_time()
        nr.rm(game, *Rs, alternation=(order == "alternating"), prediction=RULES[rule][2],
              iteration_count=args.max_iterations, checkpoints=set(range(e - 1, args.max_iterations, e)),
              update=update, progress_bar=False)
        print(json.dumps(dict(
            backend="noregret", game=args.game, config=cfg, rule=rule, order=order, averaging=averaging,
            precision="float64", kernel=args.kernel, device=device, versions=ver, build_s=build_s,
            warmup_iterations=warm, eval_s=st["eval_s"], stopped=st["stopped"], curve=points,
            sequences=list(game.dimensions),
            execution=("NumPy/SciPy sparse (FPKer('double')), 1 process" if args.kernel == "numpy"
                       else "CuPy/cupyx.scipy sparse (CUDAKer('double'))"),
            command=" ".join(["python", "bench/peers/noregret_peer.py", "curve", "--game", f"'{args.game}'",
                              "--configs", *args.configs, "--eval-every", str(e), "--max-iterations",
                              str(args.max_iterations), "--max-seconds", str(args.max_seconds), "--target",
                              str(args.target), "--kernel", args.kernel]))), flush=True)


# ---------------------------------------------------------------- same-game check (caller side)

def cfrjax_reference(game_name: str, rule: str, order: str, averaging: str, iterations: int):
    """cfrjax float64 on the same OpenSpiel game: (exploitability, value, {infoset: {action: p}})."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import cfrjax
    from cfrjax.strategy import policy_dict
    game = cfrjax.load_game(cfrjax.games.openspiel.spec_from_openspiel(game_name))
    state = cfrjax.init(game, rule=rule, order=order, averaging=averaging, dtype="float64")
    out = cfrjax.solve(game, state, iterations=iterations)
    state = out[0] if isinstance(out, tuple) else out
    expl, value = cfrjax.evaluate(game, state)
    pol = policy_dict(game, cfrjax.average_policy(game, state))
    return float(expl), float(value), {k: v["actions"] for k, v in pol.items()}


def same_game_check(records: list[dict], iterations: int, rtol: float = 1e-6, atol: float = 1e-12) -> list[dict]:
    """Compare each NoRegret record (with `policy`) to cfrjax float64 with the same configuration.
    Returns one row per record: relative gaps of exploitability and value, max policy gap, ok."""
    rows = []
    for r in records:
        if "skipped" in r:
            rows.append(dict(game=r["game"], ok=False, why=r["skipped"]))
            continue
        e, v, pol = cfrjax_reference(r["game"], r["rule"], r["order"], r["averaging"], iterations)
        rel_e = abs(r["exploitability"] - e) / max(abs(e), atol)
        rel_v = abs(r["value"] - v) / max(abs(v), atol)
        gap = 0.0
        missing = 0
        for key, acts in r["policy"].items():
            ours = pol.get(key)
            if ours is None:
                missing += 1
                continue
            for a, p in acts.items():
                gap = max(gap, abs(p - ours.get(a, float("nan"))) if a in ours else float("inf"))
        ok = rel_e <= rtol and rel_v <= rtol and missing == 0 and len(pol) == len(r["policy"])
        rows.append(dict(game=r["game"], rule=r["rule"], order=r["order"], averaging=r["averaging"],
                         iterations=iterations, noregret_exploitability=r["exploitability"],
                         cfrjax_exploitability=e, rel_gap_exploitability=rel_e, noregret_value=r["value"],
                         cfrjax_value=v, rel_gap_value=rel_v, max_policy_gap=gap,
                         infosets=len(pol), infosets_missing=missing, rtol=rtol, ok=bool(ok)))
    return rows


SUITE_OPENSPIEL = None  # filled from games/suite.toml by suite_games()
CHECK_GAMES = ["kuhn_poker", "leduc_poker"]


def suite_games() -> list[str]:
    """The suite's OpenSpiel game strings (games/suite.toml order; poker subgames left out)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, here)
    from suite import is_poker, load_suite
    return [e["source"] for e in load_suite() if not is_poker(e)]


def cfrjax_timed(game_name: str, rule: str, order: str, averaging: str, iterations: int, repeats: int = 3) -> dict:
    """cfrjax float64 CPU, same configuration, `bench/common.time_solve` protocol, plus evaluation."""
    import jax
    import cfrjax
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, here)
    from common import environment, time_solve
    game = cfrjax.load_game(cfrjax.games.openspiel.spec_from_openspiel(game_name))
    state = cfrjax.init(game, rule=rule, order=order, averaging=averaging, dtype="float64")
    t = time_solve(game, state, iterations, repeats=repeats)
    out = cfrjax.solve(game, state, iterations)
    out = out[0] if isinstance(out, tuple) else out
    expl, value = cfrjax.evaluate(game, out)
    env = environment()
    return dict(backend="cfrjax", game=game_name, form=cfrjax.forms.form_name(game), rule=rule, order=order,
                averaging=averaging, precision="float64", device=f"{env['backend']} ({env['device']}, "
                f"{env['cpu_count']} cores)", execution=f"jax {jax.__version__} {jax.default_backend()}, lax.scan",
                versions=dict(jax=jax.__version__, commit=env["commit"]), exploitability=float(expl),
                nash_conv=2 * float(expl), value=float(value), **t,
                command=f"python bench/compare.py --peers noregret  # cfrjax arm: {rule}/{order}/{averaging} "
                        f"float64, {iterations} iterations x {repeats} repeats")


def compare_main(args) -> int:
    """`python bench/compare.py --peers noregret`: the venv, timing runs, same-game check.
    Returns 0, or 1 when a checked configuration does not agree (a failure, not a skip)."""
    out_path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results",
                            "peers_noregret_cpu.jsonl")
    cmd = "python bench/compare.py --peers noregret"
    try:
        py = ensure_venv(args.noregret_venv or DEFAULT_VENV)
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        rec = dict(backend="noregret", skipped=f"venv: {e}", command=cmd)
        print("noregret: skipped:", rec["skipped"], flush=True)
        with open(out_path, "w") as f:
            f.write(json.dumps(rec) + "\n")
        return 0
    check_T = 1000
    timing_T = args.peer_iterations or 100
    games = args.noregret_games or suite_games()
    records = []
    # 1. Same-game check (Kuhn, Leduc, 1,000 iterations, four configurations) -- also timed.
    check_rows = []
    for g in [g for g in CHECK_GAMES if g in games or args.noregret_games is None]:
        recs = run_worker(py, [g], sorted(set(CHECK_CONFIGS + BENCH_CONFIGS), key=(CHECK_CONFIGS + BENCH_CONFIGS).index),
                          check_T, policy=True)
        rows = same_game_check([r for r in recs if "skipped" in r or f"{r['rule']}:{r['order']}:{r['averaging']}"
                                in CHECK_CONFIGS], check_T)
        for r in recs:
            r.pop("policy", None)
            r["form"] = "sequence form (NoRegret to_efg)"
            records.append(r)
        for row in rows:
            row.update(kind="same_game_check", peer="noregret", command=cmd)
            print("noregret check:", json.dumps(row), flush=True)
        check_rows += rows
    # 2. Timing runs on the other suite games (build time is NoRegret's Python tree walk).
    for g in games:
        if g in CHECK_GAMES:
            continue
        try:
            recs = run_worker(py, [g], BENCH_CONFIGS, timing_T, timeout=3600)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            recs = [dict(backend="noregret", game=g, skipped=str(e)[-500:])]
        for r in recs:
            r["form"] = "sequence form (NoRegret to_efg)"
            records.append(r)
            print("noregret:", g, r.get("rule"), r.get("ms_per_iter", r.get("skipped")), flush=True)
    # 3. cfrjax, same configurations, float64 CPU, on every game NoRegret ran.
    for r in [r for r in records if "ms_per_iter" in r]:
        c = cfrjax_timed(r["game"], r["rule"], r["order"], r["averaging"], r["iterations"])
        c["ratio_noregret_over_cfrjax"] = r["ms_per_iter"] / c["ms_per_iter"]
        records.append(c)
        print("cfrjax:", r["game"], r["rule"], r["order"], f"{c['ms_per_iter']:.4f} ms/iter vs noregret "
              f"{r['ms_per_iter']:.4f}", flush=True)
    # 4. For a configuration that does not agree: the gap against the iteration count (a gap
    #    growing from roundoff, ~1e-15, is amplification; a gap from iteration 1 is semantics).
    for row in [r for r in check_rows if not r["ok"] and "rule" in r]:
        cfg = f"{row['rule']}:{row['order']}:{row['averaging']}"
        growth = []
        for T in (10, 100, 300, check_T):
            rr = same_game_check(run_worker(py, [row["game"]], [cfg], T, policy=True), T)[0]
            growth.append(dict(iterations=T, rel_gap_exploitability=rr["rel_gap_exploitability"],
                               rel_gap_value=rr["rel_gap_value"], max_policy_gap=rr["max_policy_gap"]))
        row["gap_vs_iterations"] = growth
        print("noregret: gap vs iterations", row["game"], cfg, json.dumps(growth), flush=True)
    records += check_rows
    with open(out_path, "w") as f:
        for r in records:
            f.write(json.dumps(r, default=float) + "\n")
    bad = [r for r in check_rows if not r["ok"]]
    print(f"noregret: {len(records)} records -> {out_path}; same-game check: "
          f"{len(check_rows) - len(bad)}/{len(check_rows)} agree to 1e-6", flush=True)
    for r in bad:
        print("noregret: MISMATCH", json.dumps(r), flush=True)
    return 1 if bad or not check_rows else 0


# ---------------------------------------------------------------- divergence diagnosis

# Iteration counts at which `diagnose` compares the average policies and their evaluations.
DIAG_CHECKPOINTS = (1, 2, 3, 5, 10, 20, 30, 50, 75, 100, 150, 200, 250, 300, 400, 500, 600, 700, 800, 900,
                    1000, 1500, 2000)


def trajectory(argv=None) -> None:
    """Worker (venv): one NoRegret run through `nr.rm`'s own loop, recording after every
    iteration both players' next behavioural strategies (`next_behavioral_strategy`) and, at
    `DIAG_CHECKPOINTS`, the average behavioural policies, exploitability and value, into an
    .npz. `--normalize divide` swaps `SequenceFormPolytope.normalize`'s `theta * (1/d)` for
    `theta / d` (the same maths, one rounding apart): a perturbation of NoRegret by NoRegret.
    Also counts decision points whose positive-regret sum fell in (0, 1e-8], where NoRegret's
    `isclose` rule plays uniform but exact regret matching would not."""
    ap = argparse.ArgumentParser(prog="noregret_peer.py trajectory")
    ap.add_argument("--game", required=True)
    ap.add_argument("--config", required=True, help="rule:order:averaging")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--normalize", default="stock", choices=["stock", "divide"])
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    _standin_gurobipy()
    import numpy as np
    import noregret as nr
    from noregret.sequence_form_polytopes import SequenceFormPolytope as SFP
    stock, near_zero = SFP.normalize, [0]

    def normalize(self, vector):
        A = self._A.copy()
        A[self._R, self._C] = vector
        d = A.sum(1).ravel()[1:]
        near_zero[0] += int(((d > 0) & np.isclose(d, 0)).sum())
        if args.normalize == "stock":
            return stock(self, vector)
        d = np.where(np.isclose(d, 0), np.nan, d)
        v = vector / d[self._R - 1]
        m = np.isnan(v)
        v[m] = self.behavioral_form_uniform_strategy[m]
        return v

    SFP.normalize = normalize
    rule, order, averaging = parse_config(args.config)
    game = build_game(args.game, "numpy")
    Rs = _minimizers(game, rule, averaging)
    sfps = game.sequence_form_polytopes
    seqs = [(j, a) for sfp in sfps for (j, a) in sfp.non_empty_sequences]
    T = args.iterations
    cps = [t for t in DIAG_CHECKPOINTS if t <= T]
    cur = np.zeros((T, len(seqs)))
    avg, expl, val, done = [], [], [], [0]

    def update():
        cur[done[0]] = np.concatenate([R.next_behavioral_strategy for R in Rs])
        done[0] += 1
        if done[0] in cps:
            x, y = Rs[0].average_strategy, Rs[1].average_strategy
            row = []
            for sfp, s in zip(sfps, (x, y)):
                pol = behavioural(sfp, s)
                row += [pol[j][a] for j, a in sfp.non_empty_sequences]
            avg.append(row)
            expl.append(float(game.exploitability(x, y)))
            val.append(float(game.expected_row_utility(x, y)))
        return False

    nr.rm(game, *Rs, alternation=(order == "alternating"), prediction=RULES[rule][2], iteration_count=T,
          progress_bar=False, update=update)
    np.savez(args.out, infosets=np.array([j for j, _ in seqs]), actions=np.array([a for _, a in seqs]), cur=cur,
             checkpoints=np.array(cps), avg=np.array(avg), expl=np.array(expl), val=np.array(val))
    print(json.dumps(dict(near_zero_sums=near_zero[0], exploitability=expl[-1], value=val[-1])), flush=True)


def cfrjax_trajectory(game_name: str, rule: str, order: str, averaging: str, iterations: int, chance: str,
                      infosets, actions, checkpoints) -> dict:
    """cfrjax float64, `chance` "folded" (default, the same-game check's arm) or "explicit",
    stepped one `cfrjax.step` at a time: the current policy after every iteration and the
    average policy, exploitability and value at `checkpoints`, in NoRegret's sequence order."""
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import cfrjax
    from cfrjax.strategy import policy_dict
    game = cfrjax.load_game(cfrjax.games.openspiel.spec_from_openspiel(game_name), chance=chance)
    slots = policy_dict(game, np.arange(int(np.prod(game.slot_shape)), dtype=np.float64))
    perm = np.array([int(slots[j]["actions"][a]) for j, a in zip(infosets, actions)])
    state = cfrjax.init(game, rule=rule, order=order, averaging=averaging, dtype="float64")
    step = jax.jit(cfrjax.step)
    cur = np.zeros((iterations, len(perm)))
    avg, expl, val = [], [], []
    for t in range(iterations):
        state = step(game, state)
        cur[t] = np.asarray(cfrjax.current_policy(game, state))[perm]
        if t + 1 in checkpoints:
            avg.append(np.asarray(cfrjax.average_policy(game, state))[perm])
            e, v = cfrjax.evaluate(game, state)
            expl.append(float(e))
            val.append(float(v))
    return dict(cur=cur, avg=np.array(avg), expl=np.array(expl), val=np.array(val))


def _pair_gaps(a: dict, b: dict, checkpoints, atol: float = 1e-12) -> dict:
    """Gaps of two trajectories: the first iteration after which the current strategies
    differ, and per checkpoint [T, current-strategy max gap, average-policy max gap,
    relative exploitability gap, relative value gap] (the last two are the check's tests)."""
    import numpy as np
    cur = np.abs(a["cur"] - b["cur"]).max(axis=1)
    nz = np.nonzero(cur)[0]
    rows = []
    for k, t in enumerate(checkpoints):
        rows.append([int(t), float(cur[t - 1]), float(np.abs(a["avg"][k] - b["avg"][k]).max()),
                     abs(a["expl"][k] - b["expl"][k]) / max(abs(b["expl"][k]), atol),
                     abs(a["val"][k] - b["val"][k]) / max(abs(b["val"][k]), atol)])
    # Growth of the current-strategy gap: least-squares slope of log10(running max gap) over
    # the iterations where the gap lies in (1e-13, 1e-3), in decades per 100 iterations.
    run = np.log10(np.maximum.accumulate(np.maximum(cur, 1e-300)))
    idx = np.nonzero((cur > 1e-13) & (cur < 1e-3))[0]
    growth = float(100 * np.polyfit(idx, run[idx], 1)[0]) if len(idx) > 10 else None
    return dict(first_iteration_current_differs=int(nz[0]) + 1 if len(nz) else None,
                growth_decades_per_100_iterations=growth, rows=rows)


def diagnose_main(argv=None) -> int:
    """`python bench/peers/noregret_peer.py diagnose`: for each checked configuration, the
    per-iteration gaps of four pairs of float64 runs of the same game and configuration:
    NoRegret vs cfrjax (the check's pair), NoRegret vs cfrjax with explicit chance nodes,
    cfrjax folded vs cfrjax explicit, NoRegret vs NoRegret with `theta / d` normalization.
    The last two differ only in rounding; where they drift apart as fast as the first, the
    check's disagreement is roundoff amplified by the dynamics. Writes one JSONL record per
    (game, configuration)."""
    import tempfile
    import numpy as np
    ap = argparse.ArgumentParser(prog="noregret_peer.py diagnose")
    ap.add_argument("--games", nargs="+", default=CHECK_GAMES)
    ap.add_argument("--configs", nargs="+", default=CHECK_CONFIGS)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--venv", default=DEFAULT_VENV)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "results", "peers_noregret_divergence.jsonl"))
    args = ap.parse_args(argv)
    py = ensure_venv(args.venv)
    cmd = "python bench/peers/noregret_peer.py diagnose " + " ".join(argv or [])
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for g in args.games:
            for cfg in args.configs:
                rule, order, averaging = parse_config(cfg)
                runs, near_zero = {}, {}
                for norm in ("stock", "divide"):
                    path = os.path.join(tmp, f"{norm}.npz")
                    out = subprocess.run([py, os.path.abspath(__file__), "trajectory", "--game", g, "--config", cfg,
                                          "--iterations", str(args.iterations), "--normalize", norm, "--out", path],
                                         capture_output=True, text=True)
                    if out.returncode != 0:
                        raise RuntimeError(f"trajectory {g} {cfg} {norm} failed: {out.stderr.strip()[-2000:]}")
                    near_zero[norm] = json.loads(out.stdout.strip().splitlines()[-1])["near_zero_sums"]
                    with np.load(path) as z:
                        runs[f"noregret_{norm}"] = {k: z[k] for k in z.files}
                nr_run = runs["noregret_stock"]
                cps = [int(t) for t in nr_run["checkpoints"]]
                seqs = (list(nr_run["infosets"]), list(nr_run["actions"]))
                for chance in ("folded", "explicit"):
                    runs[f"cfrjax_{chance}"] = cfrjax_trajectory(g, rule, order, averaging, args.iterations, chance,
                                                                 *seqs, cps)
                pairs = {}
                for a, b in (("noregret_stock", "cfrjax_folded"), ("noregret_stock", "cfrjax_explicit"),
                             ("cfrjax_folded", "cfrjax_explicit"), ("noregret_stock", "noregret_divide")):
                    pairs[f"{a} vs {b}"] = _pair_gaps(runs[a], runs[b], cps)
                rec = dict(kind="same_game_check_divergence", peer="noregret", game=g, rule=rule, order=order,
                           averaging=averaging, precision="float64", iterations=args.iterations,
                           columns=["iterations", "max_gap_current_strategy", "max_gap_average_policy",
                                    "rel_gap_exploitability", "rel_gap_value"],
                           pairs=pairs, noregret_near_zero_positive_sums=near_zero,
                           exploitability={k: float(r["expl"][-1]) for k, r in runs.items()},
                           value={k: float(r["val"][-1]) for k, r in runs.items()}, command=cmd)
                records.append(rec)
                last = {k: f"{v['rows'][-1][3]:.1e}" for k, v in pairs.items()}
                print("noregret diagnose:", g, cfg, "rel exploitability gap at", args.iterations, json.dumps(last),
                      flush=True)
    with open(args.out, "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    print(f"noregret diagnose: {len(records)} records -> {args.out}", flush=True)
    return 0


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        return worker(argv[1:])
    if argv[:1] == ["trajectory"]:
        return trajectory(argv[1:])
    if argv[:1] == ["curve"]:
        return curve(argv[1:])
    if argv[:1] == ["diagnose"]:
        raise SystemExit(diagnose_main(argv[1:]))
    if argv[:1] == ["ensure-venv"]:
        ap = argparse.ArgumentParser(prog="noregret_peer.py ensure-venv")
        ap.add_argument("--venv", default=DEFAULT_VENV)
        print(ensure_venv(ap.parse_args(argv[1:]).venv))
        return None
    raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
