"""cfrjax vs LiteEFG per iteration on this CPU (issue #5: "at least as fast per iteration as
LiteEFG, single thread, vanilla CFR arm as in the paper, on every suite game from Leduc up").

    python bench/cpu_liteefg.py

(options: `--games kuhn,leduc,...` (default: the whole suite), `--scale 0.5` (iterations
per repetition times this), `--repeats 5`, `--specs .carry/specs`, `--cache .carry/cpu_liteefg`,
`--out bench/results/cpu_liteefg.jsonl`). Appends one record per game x arm to the JSONL
and rewrites `bench/results/cpu_liteefg.md` (`bench/report.py`, which renders the latest
run of every game: `python bench/report.py bench/results/cpu_liteefg.jsonl`). About 10
minutes on the project's 2-core CPU.

One game at a time (games/suite.toml order), all arms back to back in one time window:

  1. LiteEFG 1.0 (`bench/peers/liteefg_peer.py`, `timed_run`), in this process: its
     vanilla CFR (`LiteEFG.baselines.CFR`: simultaneous, regret matching, uniform
     "avg-iterate" average, float64), `set_threads(1)` (the paper's single-thread arm).
     The game is our `GameSpec` written in LiteEFG's file format (`cfrjax.games.efg_file`),
     cached under `--cache` by a digest of the spec.
  2. cfrjax in this process, both cores: `rule="cfr", order="simultaneous",
     averaging="uniform"` float32 (LiteEFG's algorithm), and CFR+ simultaneous linear
     float32 (the issue's headline configuration).
  3. a subprocess with `JAX_ENABLE_X64=1`, both cores: the CFR arm in float64.
  4. a subprocess under `taskset -c 0` (XLA_FLAGS=--xla_cpu_multi_thread_eigen=false):
     CFR float32 and CFR+ float32 on one core; 5. the same pinned, x64: CFR float64.

Timing protocol, both solvers (`bench/common.time_solve`, and `liteefg_peer.timed_run`):
compile excluded (cfrjax: `cfrjax.solve`, one `lax.scan` executable of T iterations, each
call closed by `block_until_ready`), one warm-up call of T iterations, then `--repeats`
(>= 5) timed calls of T iterations; ms/iter = median call / T (min and max recorded). T is
per solver (`LITEEFG_ITERATIONS`, `CFRJAX_ITERATIONS` below) so that a call lasts about
0.1-5 s: LiteEFG is 15-60x slower. LiteEFG's calls continue one run, which thereby reaches
N = (repeats + 1) T_LiteEFG iterations; cfrjax then solves exactly N iterations afresh for
the sanity check.

One thread. XLA:CPU sizes its intra-op thread pool (threads named `tf_XLAEigen`) from the
CPUs the process may run on; XLA has no flag for that size (`intra_op_parallelism_threads`
is a TensorFlow option that XLA_FLAGS silently ignores without `--`, and
`--xla_cpu_multi_thread_eigen=false` only affects Eigen matmul/convolution calls, which a
CFR iteration has none of). `taskset -c 0` is what restricts XLA to one thread: every
record holds the process's CPU affinity, the number of `tf_XLAEigen` threads (2 unpinned,
1 pinned on this machine) and `cpu_per_wall`, CPU time over wall time of the timed calls
(about 1.0 for one busy thread; LiteEFG's is checked the same way).

Sanity (same algorithm). Every arm records the exploitability (NashConv / 2) of its own
average policy after the same N iterations. LiteEFG averages the post-update strategies
x_2..x_{N+1} (see `liteefg_peer`), cfrjax x_1..x_N, so the two differ slightly; each
2-core CFR arm also runs iteration N + 1 and rebuilds LiteEFG's average exactly,
`(N + 1) M_{N+1} - M_1` of its sequence-form running mean M, and records that policy's
exploitability (`exploitability_liteefg_averaging`), its largest difference from
LiteEFG's own average (`liteefg_policy_max_abs_diff`), and LiteEFG's average scored by
cfrjax's evaluator (`liteefg_exploitability_by_cfrjax`). They agree to rounding until a
cumulative regret that is exactly zero in exact arithmetic (symmetric games, ties) comes
out as +-1e-17 in one solver and 0 in the other; regret matching then picks a different
strategy and the trajectories part (bench/results/cpu_liteefg.md has examples).

Busy machine. Other processes on this small machine distort the 2-core arms, so each game
starts only when other processes keep fewer than `--busy` cores busy (3 s sample of
/proc/stat, waiting up to `--max-wait`), and is rerun (up to `--retries` times) when they
used more during a timed call (`others_cpu_per_wall`, `bench/common.CpuMeter`) or in the
3 s after it; records say how many attempts it took and whether it stayed busy.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "peers"))

import numpy as np  # noqa: E402

from common import CpuMeter, append_records, environment, time_solve  # noqa: E402
from suite import build_spec, is_poker, load_suite, select, spec_file, write_specs  # noqa: E402

# Iterations per timed repetition: LiteEFG (it also sets the sanity check's N = (repeats + 1) T),
# and cfrjax (each repetition about 0.1-0.5 s on this CPU).
LITEEFG_ITERATIONS = dict(kuhn=40000, dark_hex_2x2=5000, hunl_river=100, leduc=300, goofspiel5=100, hunl_turn=40,
                          liars_dice_1x6=50, battleship=50)
CFRJAX_ITERATIONS = dict(kuhn=100000, dark_hex_2x2=50000, hunl_river=300, leduc=5000, goofspiel5=2000, hunl_turn=200,
                         liars_dice_1x6=200, battleship=200)
# The acceptance set: every suite game at least Leduc's size (9,457 nodes).
TARGET = ("leduc", "goofspiel5", "hunl_river", "hunl_turn", "liars_dice_1x6", "battleship")
PIN = ["taskset", "-c", "0"]
ONE_THREAD_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false"
CFR = dict(rule="cfr", order="simultaneous", averaging="uniform")
CFR_PLUS = dict(rule="cfr+", order="simultaneous", averaging="linear")


def get_spec(entry, specs_dir):
    """The entry's `GameSpec`; OpenSpiel games are pickled into `specs_dir` on first use."""
    if specs_dir and not is_poker(entry) and not os.path.isfile(spec_file(entry, specs_dir)):
        write_specs(specs_dir, [entry])
    return build_spec(entry, specs_dir)


def efg_path(spec, entry, cache_dir) -> tuple[str, float]:
    """The spec in LiteEFG's format, written once per spec digest (every field but `source`, which
    holds build metadata such as the build time); (path, export seconds or 0 if cached)."""
    from cfrjax.games.efg_file import FORMAT_TAG, write_efg
    h = hashlib.sha256(FORMAT_TAG.encode())
    for field in dataclasses.fields(spec):
        if field.name == "source":
            continue
        v = getattr(spec, field.name)
        h.update(field.name.encode())
        if isinstance(v, np.ndarray):
            h.update(f"{v.dtype.str}{v.shape}".encode() + np.ascontiguousarray(v).tobytes())
        else:
            h.update(json.dumps(v, sort_keys=True, default=repr).encode())
    digest = h.hexdigest()[:16]
    path = os.path.join(cache_dir, f"{entry['name']}-{digest}.efg")
    if os.path.isfile(path):
        return path, 0.0
    os.makedirs(cache_dir, exist_ok=True)
    t0 = time.perf_counter()
    write_efg(spec, path + ".tmp")
    os.replace(path + ".tmp", path)
    return path, time.perf_counter() - t0


def machine() -> dict:
    """This process: CPU, affinity, XLA's intra-op pool size, flags, versions, code state."""
    from importlib.metadata import version
    threads = collections.Counter()
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                threads[f.read().strip()] += 1
        except OSError:
            pass
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break

    def git(*a):
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except Exception:
            return None
    return dict(cpu_model=cpu, affinity=sorted(os.sched_getaffinity(0)), xla_eigen_threads=threads.get("tf_XLAEigen", 0),
                xla_flags=os.environ.get("XLA_FLAGS"), liteefg=version("LiteEFG"), numpy=np.__version__,
                git_commit=git("rev-parse", "HEAD"), cfrjax_dirty=git("status", "--porcelain", "--", "cfrjax") or "")


def slot_policy(game, spec, rows) -> np.ndarray:
    """LiteEFG's per-spec-infoset rows in the compiled game's slot order `[S]`."""
    index = {k: i for i, k in enumerate(spec.infoset_keys)}
    return np.concatenate([rows[index[k]] for k in game.labels.infoset_keys])


def cfrjax_arms(entry, spec, game, dtype, configs, T, N, repeats, threads, lite_policy=None, check=False):
    """Time each config (T iterations per call), then solve N iterations afresh and evaluate;
    with `check`, also rebuild LiteEFG's average from iterations N + 1 and 1 (uniform CFR only)."""
    import jax
    import jax.numpy as jnp

    import cfrjax
    from cfrjax.policy import normalize
    out = []
    for cfg in configs:
        state0 = cfrjax.init(game, dtype=dtype, **cfg)
        t = time_solve(game, state0, T, repeats)
        final = cfrjax.solve(game, state0, N)
        policy = cfrjax.average_policy(game, final)
        rec = dict(cfg, backend="cfrjax", dtype=dtype, threads=threads, total_iterations=int(final.iteration), **t,
                   exploitability=float(cfrjax.exploitability(game, policy)),
                   value=float(cfrjax.expected_value(game, policy)),
                   execution=f"jax {jax.__version__} cpu, cfrjax.solve (lax.scan)")
        if check and cfg["rule"] == "cfr" and cfg["averaging"] == "uniform":
            # LiteEFG's average after N iterations is the mean of x_2..x_{N+1}: from the
            # running means M_{N+1} (one more iteration) and M_1 (the first iteration alone).
            nxt = cfrjax.solve(game, final, 1)
            first = cfrjax.solve(game, state0, 1)
            emulated = normalize(game, nxt.avg * nxt.avg_weight - first.avg * first.avg_weight)
            rec["exploitability_liteefg_averaging"] = float(cfrjax.exploitability(game, emulated))
            if lite_policy is not None:
                lp = jnp.asarray(lite_policy, emulated.dtype)
                rec["liteefg_policy_max_abs_diff"] = float(jnp.max(jnp.abs(emulated - lp)))
                rec["liteefg_exploitability_by_cfrjax"] = float(cfrjax.exploitability(game, lp))
        out.append(rec)
        print(f"    cfrjax  {cfg['rule']:4s} {dtype} {threads} core{'s' if threads > 1 else ' '}: "
              f"{rec['ms_per_iter']:.4f} ms/iter (cpu/wall {rec['cpu_per_wall']:.2f}, compile {rec['compile_s']:.1f} s), "
              f"exploitability {rec['exploitability']:.4e} after {rec['total_iterations']}", flush=True)
    m = machine()
    for r in out:
        r.update(m)
    return out


def worker(args):
    """A subprocess arm: `--worker DTYPE:RULES` (RULES: cfr and/or cfr+ joined by '+', e.g. float32:cfr,cfr+)."""
    dtype, rules = args.worker.split(":")
    if dtype == "float64":
        import jax
        jax.config.update("jax_enable_x64", True)
    import cfrjax
    entry = select(load_suite(), args.games)[0]
    spec = get_spec(entry, args.specs)
    game = cfrjax.load_game(spec)
    configs = [dict(cfr=CFR, **{"cfr+": CFR_PLUS})[r] for r in rules.split(",")]
    lite = np.load(args.lite_policy) if args.lite_policy else None
    threads = len(os.sched_getaffinity(0))
    T, N = (int(x) for x in args.iterations.split(":"))
    recs = cfrjax_arms(entry, spec, game, dtype, configs, T, N, args.repeats, threads, lite, check=threads > 1)
    print("RESULT " + json.dumps(recs))


def run_worker(entry, args, T, N, dtype, rules, pinned, lite_path) -> list[dict]:
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", f"{dtype}:{rules}", "--games", entry["name"],
           "--iterations", f"{T}:{N}", "--repeats", str(args.repeats), "--specs", args.specs, "--lite-policy", lite_path]
    if pinned:
        cmd = PIN + cmd
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " " + ONE_THREAD_XLA_FLAGS).strip()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if not line.startswith("RESULT "):
            print(line, flush=True)
    res = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if p.returncode or not res:
        raise RuntimeError(f"worker {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    recs = json.loads(res[-1][len("RESULT "):])
    for r in recs:
        r["pinning"] = " ".join(PIN) if pinned else None
    return recs


def machine_load(window_s: float = 3.0) -> float | None:
    """Cores other processes keep busy over the next `window_s` seconds (this one sleeps)."""
    meter = CpuMeter()
    with meter:
        time.sleep(window_s)
    return meter.fields()["others_cpu_per_wall"]


def wait_idle(max_wait_s: float, threshold: float) -> tuple[float, float | None]:
    """Wait until other processes keep fewer than `threshold` cores busy (or `max_wait_s`
    has passed); returns (seconds waited, the last load measured)."""
    t0 = time.perf_counter()
    while True:
        load = machine_load()
        waited = time.perf_counter() - t0
        if load is None or load < threshold or waited >= max_wait_s:
            return waited, load
        print(f"    machine busy ({load:.2f} cores used by other processes); waiting", flush=True)
        time.sleep(min(15.0, max(0.0, max_wait_s - waited)))


def run_game(entry, args, T_lite, T, tmp) -> list[dict]:
    """Every arm of one game, back to back."""
    import cfrjax
    import liteefg_peer
    name = entry["name"]
    t0 = time.perf_counter()
    spec = get_spec(entry, args.specs)
    game = cfrjax.load_game(spec)
    build_s = time.perf_counter() - t0
    path, export_s = efg_path(spec, entry, args.cache)
    lite = liteefg_peer.timed_run(path, spec, "cfr", T_lite, args.repeats, threads=1)
    N = lite["total_iterations"]
    lite_policy = slot_policy(game, spec, lite.pop("_rows"))
    lite_path = os.path.join(tmp, name + ".npy")
    np.save(lite_path, lite_policy)
    lite.update(export_s=export_s, efg_file=os.path.relpath(path, ROOT), **machine())
    print(f"    LiteEFG cfr  float64 1 thread: {lite['ms_per_iter']:.4f} ms/iter (cpu/wall {lite['cpu_per_wall']:.2f}), "
          f"exploitability {lite['exploitability']:.4e} after {N}", flush=True)
    recs = [lite]
    recs += cfrjax_arms(entry, spec, game, "float32", [CFR, CFR_PLUS], T, N, args.repeats,
                        len(os.sched_getaffinity(0)), lite_policy, check=True)
    recs += run_worker(entry, args, T, N, "float64", "cfr", False, lite_path)
    recs += run_worker(entry, args, T, N, "float32", "cfr,cfr+", True, lite_path)
    recs += run_worker(entry, args, T, N, "float64", "cfr", True, lite_path)
    for r in recs:
        r.update(build_s=build_s, **game.sizes())
    return recs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", default="all", help="comma-separated suite names (games/suite.toml) or 'all'")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply the iterations per repetition")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--specs", default=os.path.join(ROOT, ".carry", "specs"))
    ap.add_argument("--cache", default=os.path.join(ROOT, ".carry", "cpu_liteefg"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "cpu_liteefg.jsonl"))
    ap.add_argument("--busy", type=float, default=0.2,
                    help="other processes' load (cores) above which a game waits before it starts and is rerun")
    ap.add_argument("--max-wait", type=float, default=600.0, help="longest wait for an idle machine, s")
    ap.add_argument("--retries", type=int, default=2, help="reruns of a game whose arms saw a busy machine")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--iterations", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--lite-policy", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.repeats < 5:
        ap.error("--repeats must be >= 5")
    if args.worker:
        return worker(args)

    run_id = time.strftime("%Y-%m-%dT%H:%M:%S")
    env = environment()
    start = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="cpu_liteefg_")
    for entry in select(load_suite(), args.games):
        name = entry["name"]
        T_lite = max(1, round(LITEEFG_ITERATIONS.get(name, 100) * args.scale))
        T = max(1, round(CFRJAX_ITERATIONS.get(name, 1000) * args.scale))
        for attempt in range(args.retries + 1):
            waited, idle_load = wait_idle(args.max_wait, args.busy)
            print(f"{name}: {args.repeats} + 1 calls of {T_lite} (LiteEFG) / {T} (cfrjax) iterations" + (f", attempt {attempt + 1}" if attempt else "")
                  + (f" (waited {waited:.0f} s for an idle machine)" if waited > 10 else ""), flush=True)
            recs = run_game(entry, args, T_lite, T, tmp)
            after = machine_load()
            others = max([r.get("others_cpu_per_wall") or 0.0 for r in recs] + [after or 0.0])
            if others <= args.busy:
                break
            print(f"    other processes used up to {others:.2f} cores during an arm or just after", flush=True)
        base = dict(bench="cpu_liteefg", run=run_id, game=name, title=entry["title"], target=name in TARGET,
                    attempts=attempt + 1, idle_wait_s=waited, load_before=idle_load, load_after=after,
                    busy_threshold=args.busy, busy=others > args.busy, **env)
        for r in recs:
            for k, v in base.items():
                r.setdefault(k, v)
            r["game"] = name
        append_records(args.out, recs)
        print(f"    ({time.perf_counter() - start:.0f} s so far)", flush=True)
    import report
    with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write(report.render(report.load(args.out)))
    print(f"done in {time.perf_counter() - start:.0f} s; wrote {args.out} and {os.path.splitext(args.out)[0]}.md")


if __name__ == "__main__":
    main()
