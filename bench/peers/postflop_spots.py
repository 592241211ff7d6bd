"""postflop-solver beside cfrjax on the realistic spots of `../shared/spots` (issues 50 and 51).

Nothing of postflop-solver (AGPL-3.0) is in this repository. `prepare` (on a machine with
cargo and the crates, e.g. Debian's `librust-{rayon,regex,once-cell}-dev`) stages everything
the driver needs in one ignored folder, `.ab/peer/` (`--stage`), for machines without a
network:

  postflop-solver/   the checkout (Cargo.toml, src, LICENSE; its commit in `.commit`), its
                     Cargo.toml loosened to the Debian crates (`debian_manifest`)
  registry/          the crates the driver's Cargo.lock names, copied from the directory
                     source (`--cargo-source-dir`, default /usr/share/cargo/registry)
  bin/<cpu>/         drivers built here with `-C target-cpu=<cpu>`, for a machine without
                     cargo (`--cpus`), each with `build.json` (rustflags, rustc)
  spots/             a copy of the realistic spots (`--spots-dir`), for a machine without them

On the machine that runs the bench, `driver()` builds the driver from the stage with
`-C target-cpu=native` where cargo is found (offline, into `--build-dir` outside the
repository), else takes `bin/<host cpu>/` (the host's LLVM processor name, read by llvmlite
or gcc), else `bin/x86-64-v4` / `x86-64-v3` by the host's AVX-512 / AVX2 flags; the
records name the rustflags and how the driver was made.

Arms (each record: device, threads, versions, commit, rustflags, command):

  tree    per spot, postflop-solver's tree alone (nothing allocated): decision nodes per street,
          hands, `memory_usage()` in 32-bit and 16-bit; beside cfrjax's hands and, with
          `--cfrjax-nodes`, its decision nodes per street from the built game's labels.

  spots   per spot of `--spots-dir` (cfrjax's spec files): postflop-solver on `--threads`
          threads to `--target` (0.5% of the pot) with its exact exploitability every 10
          iterations (`--max-iterations` the cap): decision nodes per street, hand counts,
          `memory_usage()` in 32-bit and 16-bit, ms/iter, iterations and seconds to the
          target, the wall from the call and the root value; then cfrjax (`cfrjax solve SPOT
          --rule dcfr-postflop --eval-every 10 --target 0.5% --json`) cold (an empty
          compilation cache) and warm (the same cache, a new process), with its process's peak
          RSS and `peak_device_bytes`; and `same_tree`: decision nodes equal, hands equal, the
          two values within the sum of both exploitabilities. A `baseline` record gives the
          idle RSS of JAX (a process that imported cfrjax and solved Kuhn poker).
  batch   issue 50's speed point: `--batch` river spots (cfrjax's `solve-batch` random ranges
          of `--seed`, the same weights given to postflop-solver as single-combo ranges),
          cfrjax's `solve-batch --target` cold and warm against postflop-solver solving them one
          after the other on `--threads` threads; spots per second of both.
  cpu2    issue 51's CPU point (2-core machine): for each spot, the wall to the target of a
          second spot of the same shape class in the same cfrjax process (warm cache; the board's
          ranks moved, its suit pattern kept: `--second-board`) against postflop-solver on 2
          threads; then ms/iter of cfrjax pinned to core 0 (`taskset -c 0`) against
          postflop-solver on 1 thread there, and both on cores 0,1 (2 threads).

    python bench/peers/postflop_spots.py prepare --postflop-solver /work/peers/postflop-solver
    python bench/peers/postflop_spots.py spots --threads 16 --out bench/results/peers_postflop_spots_h200.jsonl
    python bench/peers/postflop_spots.py batch --batch 1024 --threads 16 --out ...
    python bench/peers/postflop_spots.py cpu2 --out bench/results/peers_postflop_cpu2.jsonl

Units as in `postflop_peer.py`: its exploitability is (BR_OOP + BR_IP) / 2 in chips, as
cfrjax's; its `current_ev[0]` has the half pot subtracted, as cfrjax's value of player 0.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
STAGE = os.path.join(ROOT, ".ab", "peer")
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)   # this checkout's cfrjax, not an installed one
import postflop_peer  # noqa: E402
from postflop_peer import RUSTFLAGS, run_driver, run_measured, spot_of_spec  # noqa: E402

#: The realistic spots: `shared/spots` in the checkout (the device machine's copy), else beside
#: it, else the stage's copy.
SPOTS_DIR = next((d for d in (os.path.join(ROOT, "shared", "spots"), os.path.join(os.path.dirname(ROOT), "shared", "spots"),
                              os.path.join(STAGE, "spots")) if os.path.isdir(d)), os.path.join(STAGE, "spots"))
DEFAULT_BUILD = os.path.join(tempfile.gettempdir(), "cfrjax-peers", "postflop-driver")
#: Processors to prebuild drivers for (LLVM names; H200 hosts are recent Xeons or EPYCs), and
#: the generic levels picked by the host's flags when its name is not among them.
CPUS = ("sapphirerapids", "emeraldrapids", "graniterapids", "icelake-server", "znver3", "znver4", "znver5",
        "x86-64-v4", "x86-64-v3")
EXE = "cfrjax-postflop-driver"


# ---------------------------------------------------------------- the stage

def debian_manifest(text: str) -> str:
    """postflop-solver's Cargo.toml for the Debian crates (regex 1.7, once_cell 1.17, rayon
    1.6) without its optional bincode / zstd dependencies (the driver uses neither: default
    features off, `rayon` on). Raises if the manifest is not the one expected (another
    commit), naming the line that is missing."""
    subs = [(r'bincode = \{[^\n]*\}\n', ''), (r'zstd = \{[^\n]*\}\n', ''),
            (r'once_cell = "[^"]*"', 'once_cell = "1.17"'), (r'regex = "[^"]*"', 'regex = "1.7"'),
            (r'rayon = \{ version = "[^"]*"', 'rayon = { version = "1.6"'),
            (r'default = \[[^\]]*\]', 'default = ["rayon"]'), (r'rayon = \["dep:rayon"[^\]]*\]', 'rayon = ["dep:rayon"]')]
    for pat, new in subs:
        text, n = re.subn(pat, new, text)
        if n != 1:
            raise ValueError(f"postflop-solver's Cargo.toml: expected one match of {pat!r}, found {n}")
    return text


def _commit(solver_dir: str) -> str | None:
    p = os.path.join(solver_dir, ".commit")
    if os.path.isfile(p):
        return open(p).read().strip() or None
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=solver_dir, capture_output=True, text=True)
    return out.stdout.strip() or None


def _rustc() -> str | None:
    try:
        return subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip() or None
    except OSError:
        return None


def prepare(solver_dir: str, stage: str = STAGE, cargo_source_dir: str = "/usr/share/cargo/registry",
            cpus=CPUS, build_dir: str = DEFAULT_BUILD, jobs: int = 2, spots_dir: str = SPOTS_DIR, log=print) -> dict:
    """Stage the checkout, the crates and prebuilt drivers in `stage` (see the module
    docstring); returns `{"cpus": [...built], "bytes": size of the stage}`."""
    solver_dir = os.path.abspath(os.path.expanduser(solver_dir))
    commit = _commit(solver_dir)
    src = os.path.join(stage, "postflop-solver")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    shutil.copytree(os.path.join(solver_dir, "src"), os.path.join(src, "src"))
    shutil.copy(os.path.join(solver_dir, "LICENSE"), src)
    with open(os.path.join(solver_dir, "Cargo.toml")) as f:
        manifest = debian_manifest(f.read())
    with open(os.path.join(src, "Cargo.toml"), "w") as f:
        f.write(manifest)
    with open(os.path.join(src, ".commit"), "w") as f:
        f.write((commit or "") + "\n")
    # the crates of the driver's lock file, from the directory source
    lock_dir = os.path.join(build_dir, "lock")
    lock, why = postflop_peer.build_driver(src, lock_dir, cargo_source_dir, RUSTFLAGS, log=log, lock_only=True)
    if lock is None:
        raise RuntimeError(f"postflop: no lock file: {why}")
    with open(lock) as f:
        names = re.findall(r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"\n(source)?', f.read())
    reg = os.path.join(stage, "registry")
    shutil.rmtree(reg, ignore_errors=True)
    os.makedirs(reg)
    for name, version, remote in names:
        if remote:
            shutil.copytree(os.path.join(cargo_source_dir, f"{name}-{version}"), os.path.join(reg, f"{name}-{version}"))
    log(f"postflop: {len(os.listdir(reg))} crates -> {reg}")
    spots = os.path.join(stage, "spots")
    if os.path.abspath(spots_dir) != os.path.abspath(spots):
        shutil.rmtree(spots, ignore_errors=True)
        shutil.copytree(spots_dir, spots)
    built = []
    for cpu in cpus:
        flags = f"-C target-cpu={cpu} -A dangerous_implicit_autorefs"
        exe, why = postflop_peer.build_driver(src, os.path.join(build_dir, cpu), reg, flags, jobs=jobs, log=log)
        if exe is None:
            log(f"postflop: {cpu}: not built: {why}")
            continue
        out = os.path.join(stage, "bin", cpu)
        os.makedirs(out, exist_ok=True)
        shutil.copy(exe, os.path.join(out, EXE))
        subprocess.run(["strip", os.path.join(out, EXE)], capture_output=True)
        with open(os.path.join(out, "build.json"), "w") as f:
            json.dump(dict(rustflags=flags, rustc=_rustc(), postflop_solver=commit, built_on=_cpu_model()), f)
        built.append(cpu)
    size = sum(os.path.getsize(p) for p in glob.glob(os.path.join(stage, "**"), recursive=True) if os.path.isfile(p))
    log(f"postflop: stage {stage}: {size / 2**20:.1f} MiB, drivers for {built}")
    return dict(cpus=built, bytes=size)


# ---------------------------------------------------------------- the driver on this machine

def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_flags() -> set:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def host_cpu() -> tuple[str | None, str]:
    """`(name, who named it)`: this host's processor as LLVM names it (rustc's `native`), by
    llvmlite (the same detection), else gcc's `-march=native` (its names may lag: gcc 12 calls
    an Emerald Rapids "icelake-client"), else `(None, "unknown")`."""
    try:
        import llvmlite.binding as llvm
        return llvm.get_host_cpu_name() or None, "llvmlite"
    except Exception:   # noqa: BLE001  (not installed, or an llvmlite without it)
        pass
    try:
        out = subprocess.run(["gcc", "-march=native", "-Q", "--help=target"], capture_output=True, text=True).stdout
        m = re.search(r"^\s*-march=\s+(\S+)", out, re.M)
        return (m.group(1), "gcc -march=native") if m else (None, "unknown")
    except OSError:
        return None, "unknown"


def driver(stage: str = STAGE, build_dir: str = os.path.join(DEFAULT_BUILD, "native"), rustflags: str = RUSTFLAGS,
           exe: str | None = None) -> dict:
    """The driver to run here: `{"exe", "rustflags", "how", "postflop_solver", "rustc"}`
    (`exe` None and `skipped`: why, when there is none). `exe` given: that binary (its
    `build.json` beside it, if any, gives its rustflags)."""
    src = os.path.join(stage, "postflop-solver")
    commit = _commit(src) if os.path.isdir(src) else None
    if exe:
        info = _build_info(os.path.dirname(exe))
        return dict(exe=exe, how="given", postflop_solver=info.get("postflop_solver", commit), **{
            k: info.get(k) for k in ("rustflags", "rustc")})
    if shutil.which("cargo") and os.path.isdir(src):
        built, why = postflop_peer.build_driver(src, build_dir, os.path.join(stage, "registry"), rustflags,
                                                jobs=os.cpu_count() or 1)
        if built:
            return dict(exe=built, rustflags=rustflags, how=f"built here from {stage}", postflop_solver=commit,
                        rustc=_rustc())
        print("postflop: build failed here, trying the prebuilt drivers:", why, flush=True)
    cpu, named_by = host_cpu()
    flags = _cpu_flags()
    for name in [cpu] + (["x86-64-v4"] if "avx512f" in flags else []) + (["x86-64-v3"] if "avx2" in flags else []):
        path = os.path.join(stage, "bin", str(name), EXE)
        if name and os.path.isfile(path):
            info = _build_info(os.path.dirname(path))
            return dict(exe=path, rustflags=info.get("rustflags"), rustc=info.get("rustc"),
                        postflop_solver=info.get("postflop_solver", commit),
                        how=f"prebuilt for {name} (this host: {cpu or 'not named'}, by {named_by}"
                            f"{')' if name == cpu else '; not its own processor: not -C target-cpu=native)'}")
    return dict(exe=None, skipped=f"no cargo here and no prebuilt driver in {stage}/bin for {cpu} "
                                  f"(run `postflop_spots.py prepare` with --cpus {cpu})")


def _build_info(d: str) -> dict:
    p = os.path.join(d, "build.json")
    return json.load(open(p)) if os.path.isfile(p) else {}



# ---------------------------------------------------------------- shared pieces

#: Runs cfrjax's command line in this process and prints the process's peak resident memory
#: (VmHWM; `wait4`'s ru_maxrss of a vfork'd child counts the parent's) to stderr.
_CLI = ("import sys\nfrom cfrjax.cli import main\ntry:\n    rc = main(sys.argv[1:])\nfinally:\n"
        "    hwm = [l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM:')]\n"
        "    print('cfrjax-bench VmHWM_kB', hwm[0] if hwm else 0, file=sys.stderr)\nsys.exit(rc)\n")


def cfrjax_cli(argv: list, timeout: float | None = None, prefix=()) -> dict:
    """`python -m cfrjax ARGV` (ARGV with `--json`) in a fresh process (this checkout's
    cfrjax): its JSON record plus `process_wall_s`, `peak_rss_bytes` and `command`; on a
    failure `{"failed": the last lines of stderr, "rc"}`."""
    cmd = list(prefix) + [sys.executable, "-c", _CLI] + [str(a) for a in argv]
    path = os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    out = run_measured(cmd, env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=path), timeout=timeout)
    m = re.search(r"cfrjax-bench VmHWM_kB (\d+)", out["stderr"])
    rss = int(m.group(1)) * 1024 if m else None
    base = dict(process_wall_s=out["wall_s"], peak_rss_bytes=rss,
                command=" ".join(list(prefix) + ["python -m cfrjax"] + [str(a) for a in argv]))
    lines = [x for x in out["stdout"].splitlines() if x.startswith("{")]
    if out["rc"] != 0 or not lines:
        err = [x for x in out["stderr"].splitlines() if not x.startswith("cfrjax-bench")]
        return dict(base, failed=" | ".join(err[-3:])[-1500:], rc=out["rc"])
    return dict(json.loads(lines[-1]), **base)


def environment(drv: dict | None = None) -> dict:
    """What every record carries: the machine, the commit, XLA's CPU thread setting, the
    driver's rustflags and versions."""
    commit = os.environ.get("CFRJAX_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip() or None
    env = dict(host_cpu=_cpu_model(), cpu_count=os.cpu_count(), commit=commit,
               xla_flags=os.environ.get("XLA_FLAGS"), date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    if drv:
        env.update(rustflags=drv.get("rustflags"), driver=drv.get("how"),
                   versions=dict(postflop_solver=drv.get("postflop_solver"), rustc=drv.get("rustc")))
    return env


def idle_baseline(timeout: float = 300) -> dict:
    """JAX's idle RSS: a process that imported cfrjax and solved Kuhn poker (issue 50's
    reference for peak RSS)."""
    r = cfrjax_cli(["solve", "kuhn_poker", "--iterations", "10", "--json", "--compile-cache", "off"], timeout)
    return dict(kind="baseline", arm="cfrjax idle (Kuhn poker, 10 iterations)", peak_rss_bytes=r.get("peak_rss_bytes"),
                device=r.get("device"), jax=r.get("jax"), command=r["command"], **({"failed": r["failed"]}
                                                                                    if "failed" in r else {}))


def spot_hands(spec: str) -> list:
    """Each player's live combos in cfrjax's reading of the spec's ranges."""
    import numpy as np

    from cfrjax.games.poker import load_poker_config
    from cfrjax.games.poker.ranges import resolve_range
    cfg = load_poker_config(spec)
    return [int(np.count_nonzero(resolve_range(r if r is not None else "any", cfg.board, player=p)))
            for p, r in enumerate((cfg.range0, cfg.range1))]


def target_chips(spec: str, pct: float) -> float:
    from cfrjax.games.poker import load_poker_config
    return pct / 100 * float(load_poker_config(spec).pot)


def same_tree(spot: str, pf: dict, cj: dict, hands: list) -> dict:
    """Whether the two solvers built the same tree: decision nodes (postflop-solver's per
    street, summed, as if no isomorphism merged them; cfrjax's public decision nodes, its
    record's `infosets`), each player's hands, and the two root values within the sum of both
    exploitabilities (each solver's own)."""
    n_pf, n_cj = sum(pf["decision_nodes"]), cj.get("infosets")
    v_pf, v_cj = pf["current_ev"][0], cj.get("value")
    e_pf, e_cj = pf["exploitability"], cj.get("exploitability")
    values_ok = None if v_cj is None else bool(abs(v_pf - v_cj) <= e_pf + e_cj)
    return dict(kind="same_tree", spot=spot, decision_nodes=dict(postflop_solver=n_pf, per_street=pf["decision_nodes"],
                                                                cfrjax=n_cj, equal=n_pf == n_cj),
                hands=dict(postflop_solver=pf["num_hands"], cfrjax=hands, equal=list(pf["num_hands"]) == hands),
                values=dict(postflop_solver=v_pf, cfrjax=v_cj, gap=None if v_cj is None else abs(v_pf - v_cj),
                            exploitabilities=[e_pf, e_cj], within=values_ok),
                ok=bool(n_pf == n_cj and list(pf["num_hands"]) == hands and values_ok))


def postflop_record(drv: dict, spot: dict, spec: str, threads: int, max_iterations: int, target: float,
                    eval_every: int = 10, prefix=(), extra=()) -> dict:
    """postflop-solver on `spot` to `target` chips (its exploitability every `eval_every`
    iterations, at most `max_iterations`), as a record."""
    r = run_driver(drv["exe"], spot, max_iterations, threads, eval_every=eval_every, prefix=prefix,
                   extra=["--target", repr(target), *extra])
    curve = r.pop("curve")
    hit = next((c for c in curve if c[2] <= target), None)
    r.update(arm="postflop-solver", spot=os.path.basename(spec)[:-5], pot=spot["pot"], target_chips=target,
             target_reached=hit is not None, iterations_to_target=hit[0] if hit else None,
             solve_s_to_target=hit[1] if hit else None, wall_s_to_target=r["wall_s"] if hit else None,
             exploitability_pct_pot=100 * r["exploitability"] / spot["pot"], curve=curve,
             device=f"CPU: {_cpu_model()} ({os.cpu_count()} cores), {threads} thread{'s' if threads > 1 else ''}",
             pinning=" ".join(prefix) or None,
             note="solve_s: the iterations alone; wall_s: from the driver's start (tree, allocation, iterations, "
                  "evaluations between them); process_wall_s: the process from the call")
    return r



# ---------------------------------------------------------------- arm: tree (no solve)

#: cfrjax's decision nodes per street of a spec, from the built game's labels (a node's code
#: holds "/card/" per card dealt below the spot's street), in a CPU process; the tree alone is
#: built (no memory check: a flop's solve may not fit where its tree does).
_NODES = ("import sys, json, collections, cfrjax\ng = cfrjax.load_game(sys.argv[1], check_memory=False)\n"
          "c = collections.Counter(code.count('/') // 2 for code, *_ in g.labels.decision_nodes())\n"
          "print(json.dumps([c[k] for k in range(max(c) + 1)]))\n")


def cfrjax_decision_nodes(spec: str, timeout: float | None = None) -> list | str:
    """cfrjax's decision nodes per street of `spec` (`_NODES`), or why not (a string)."""
    out = run_measured([sys.executable, "-c", _NODES, spec], env=dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT),
                       timeout=timeout)
    return json.loads(out["stdout"].strip().splitlines()[-1]) if out["rc"] == 0 else out["stderr"][-500:]


def tree_arm(a, drv: dict) -> list:
    """Per spot: postflop-solver's tree alone (decision nodes per street, hands,
    `memory_usage()`; nothing allocated), beside cfrjax's hands and (`--cfrjax-nodes`) its
    decision nodes per street."""
    env = environment(drv)
    records = []
    for spec in a.spots:
        name = os.path.basename(spec)[:-5]
        r = run_driver(drv["exe"], spot_of_spec(spec, range_strings=True), 0, 1)
        hands = spot_hands(spec)
        r.update(arm="postflop-solver", bench="tree", spot=name, cfrjax_hands=hands, hands_equal=list(r["num_hands"]) == hands,
                 **env)
        if a.cfrjax_nodes:
            nodes = cfrjax_decision_nodes(spec, a.timeout)
            r.update(cfrjax_decision_nodes=nodes, decision_nodes_equal=nodes == r["decision_nodes"])
        records.append(r)
        print(f"{name}: postflop-solver nodes {r['decision_nodes']}, hands {r['num_hands']} (cfrjax {hands}), memory "
              f"{r['memory_bytes_32bit'] / 1e9:.3f} / {r['memory_bytes_16bit'] / 1e9:.3f} GB"
              + (f", cfrjax nodes {r['cfrjax_decision_nodes']}" if a.cfrjax_nodes else ""), flush=True)
    return records

# ---------------------------------------------------------------- arm: spots

def spots_arm(a, drv: dict) -> list:
    env = environment(drv)
    records = [dict(idle_baseline(a.timeout), **env)]
    idle = records[0].get("peak_rss_bytes")
    print("baseline:", records[0].get("peak_rss_bytes"), flush=True)
    for spec in a.spots:
        name = os.path.basename(spec)[:-5]
        spot = spot_of_spec(spec, range_strings=True)
        target = target_chips(spec, a.target_pct)
        pf = None
        if drv.get("exe") and "postflop" in a.arms:
            pf = dict(postflop_record(drv, spot, spec, a.threads, a.max_iterations, target), **env)
            records.append(pf)
            print(f"postflop: {name}: {pf['iterations']} it, {pf['exploitability_pct_pot']:.3f}% pot, "
                  f"{pf['ms_per_iter']:.3f} ms/iter, wall {pf['wall_s']:.3f} s, memory {pf['memory_bytes_32bit']} / "
                  f"{pf['memory_bytes_16bit']} B, nodes {pf['decision_nodes']}", flush=True)
        if "cfrjax" not in a.arms:
            continue
        cache = tempfile.mkdtemp(prefix="cfrjax-cache-")
        last = None
        for run in ("cold", "warm"):
            argv = ["solve", spec, "--rule", "dcfr-postflop", "--eval-every", "10", "--target", f"{a.target_pct}%",
                    "--max-iterations", str(a.max_iterations), "--json", "--compile-cache", cache, *a.cfrjax_args]
            c = cfrjax_cli(argv, a.timeout)
            c.update(arm="cfrjax", run=run, spot=name, idle_rss_bytes=idle,
                     peak_rss_above_idle=None if c.get("peak_rss_bytes") is None or idle is None
                     else c["peak_rss_bytes"] - idle, **env)
            records.append(c)
            print(f"cfrjax: {name} {run}: " + (f"failed: {c['failed']}" if "failed" in c else
                  f"{c.get('iterations')} it, {c.get('exploitability_pct_pot', float('nan')):.3f}% pot, "
                  f"{c.get('ms_per_iter', float('nan')):.3f} ms/iter, to target {c.get('seconds_to_target')} s, "
                  f"process {c['process_wall_s']:.2f} s, RSS {c.get('peak_rss_bytes')}, device "
                  f"{c.get('peak_device_bytes')}"), flush=True)
            last = c if "failed" not in c else last
        shutil.rmtree(cache, ignore_errors=True)
        if pf and last:
            it_pf, it_cj = pf["iterations_to_target"], last.get("iterations") if last.get("target_reached") else None
            chk = dict(same_tree(name, pf, last, spot_hands(spec)), iterations_to_target=dict(
                postflop_solver=it_pf, cfrjax=it_cj, within_one_interval=None if it_pf is None or it_cj is None
                else it_cj <= it_pf + 10), **env)
            records.append(chk)
            print("same tree:", json.dumps({k: chk[k] for k in ("decision_nodes", "hands", "values", "ok")}), flush=True)
    return records



# ---------------------------------------------------------------- arm: batch

_BATCH_RANGES = ("import sys, json, numpy as np, cfrjax\nfrom cfrjax.multihost import random_batch\n"
                 "g = cfrjax.load_game(sys.argv[1])\nw = np.asarray(random_batch(g, int(sys.argv[2]), int(sys.argv[3])).weights)\n"
                 "np.savez(sys.argv[4], weights=w, hands=np.array(g.labels.hand_names))\n")


def batch_ranges(spec: str, batch: int, seed: int, path: str) -> int:
    """Write `path`: the driver's ranges file of `cfrjax solve-batch SPEC --batch B --seed S`'s
    subgames (`cfrjax.multihost.random_batch`'s weights over the game's hand list, read in a CPU
    process), one line per subgame. Returns the number of lines."""
    import numpy as np
    with tempfile.TemporaryDirectory() as d:
        npz = os.path.join(d, "w.npz")
        out = run_measured([sys.executable, "-c", _BATCH_RANGES, spec, str(batch), str(seed), npz],
                           env=dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=ROOT))
        if out["rc"] != 0:
            raise RuntimeError(f"batch ranges: {out['stderr'][-1000:]}")
        z = np.load(npz)
        w, hands = z["weights"].astype(np.float64), [str(h) for h in z["hands"]]
    with open(path, "w") as f:
        for b in range(w.shape[0]):
            f.write(postflop_peer.combo_string(hands, w[b, 0]) + "\t" + postflop_peer.combo_string(hands, w[b, 1]) + "\n")
    return w.shape[0]


def batch_arm(a, drv: dict) -> list:
    env = environment(drv)
    spec, name = a.spot, os.path.basename(a.spot)[:-5]
    target = target_chips(spec, a.target_pct)
    records = []
    if drv.get("exe") and "postflop" in a.arms:
        spot = spot_of_spec(spec, range_strings=True)
        with tempfile.TemporaryDirectory() as d:
            rf = os.path.join(d, "ranges.txt")
            n = batch_ranges(spec, a.batch, a.seed, rf)
            r = run_driver(drv["exe"], {k: v for k, v in spot.items() if k not in ("range0", "range1")},
                           a.max_iterations, a.threads, eval_every=10, extra=["--target", repr(target), "--ranges-file", rf])
        per = r.pop("per_spot")
        r.update(arm="postflop-solver", bench="batch", spot=name, seed=a.seed, batch=n, target_chips=target,
                 iterations_mean=sum(p[0] for p in per) / n, solve_s_total=sum(p[1] for p in per),
                 exploitability_max=max(p[2] for p in per), per_spot=per,
                 device=f"CPU: {_cpu_model()} ({os.cpu_count()} cores), {a.threads} threads",
                 note="each spot built, allocated and solved to the target (exploitability every 10 iterations) one "
                      "after the other in one process; spots_per_s = spots / wall_s of that loop", **env)
        records.append(r)
        print(f"postflop: batch {n} x {name}: {r['spots_per_s']:.1f} spots/s, wall {r['wall_s']:.3f} s, "
              f"{r['reached']} reached, mean {r['iterations_mean']:.1f} it", flush=True)
    if "cfrjax" in a.arms:
        cache = tempfile.mkdtemp(prefix="cfrjax-cache-")
        for run in ("cold", "warm"):
            with tempfile.TemporaryDirectory() as out:
                argv = ["solve-batch", spec, "--batch", str(a.batch), "--out", out, "--seed", str(a.seed),
                        "--target", f"{a.target_pct}%", "--iterations", str(a.max_iterations), "--rule", "dcfr-postflop",
                        "--json", "--compile-cache", cache, *a.cfrjax_args]
                c = cfrjax_cli(argv, a.timeout)
            c.update(arm="cfrjax", bench="batch", run=run, spot=name, target_chips=target,
                     spots_per_s_process=None if "failed" in c else a.batch / c["process_wall_s"],
                     spots_per_s_wall=None if "failed" in c or not c.get("wall_s") else a.batch / c["wall_s"], **env)
            records.append(c)
            print(f"cfrjax: batch {a.batch} x {name} {run}: " + (f"failed: {c['failed']}" if "failed" in c else
                  f"{c['spots_per_s_process']:.1f} spots/s from the call ({c['process_wall_s']:.2f} s), "
                  f"{c['spots_per_s_wall']:.1f} in its wall_s, stopped {c.get('stopped')}, max exploitability "
                  f"{c.get('exploitability_max')}"), flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    return records



# ---------------------------------------------------------------- arm: cpu2 (issue 51)

#: Solves each spec given after the options' JSON in one process, in order, printing each
#: record with `call_wall_s`: the wall of that `cfrjax solve` call (build, trace, compile or
#: not, solve and evaluations).
_SEQUENCE = ("import sys, io, json, time, contextlib\nfrom cfrjax.cli import main\nopts = json.loads(sys.argv[1])\n"
             "for spec in sys.argv[2:]:\n    buf = io.StringIO()\n    t0 = time.perf_counter()\n"
             "    with contextlib.redirect_stdout(buf):\n        rc = main(['solve', spec] + opts)\n"
             "    wall = time.perf_counter() - t0\n"
             "    rec = json.loads([l for l in buf.getvalue().splitlines() if l.startswith('{')][-1])\n"
             "    print(json.dumps(dict(rec, call_wall_s=wall, rc=rc)), flush=True)\n")


def moved_board(board: str, shift: int = 1) -> str:
    """`board` with every rank moved `shift` places up (mod 13), suits kept: a board of the
    same street and suit pattern (the same shape class), other cards."""
    ranks = "23456789TJQKA"
    return " ".join(ranks[(ranks.index(c[0]) + shift) % 13] + c[1] for c in board.split())


def second_spec(spec: str, board: str | None, out_dir: str) -> str:
    """A copy of the spec file in `out_dir` with `pad_hands = true` (a shape class: spots
    whose hand counts fall in one padded class share their compiled programs) and, given a
    `board`, that board (and the name `<name>_second`)."""
    with open(spec) as f:
        text = f.read()
    if board is not None:
        text, n = re.subn(r'(?m)^board\s*=\s*"[^"]*"', f'board = "{board}"', text)
        if n != 1:
            raise ValueError(f"{spec}: no single `board = \"...\"` line to replace")
        text = re.sub(r'(?m)^name\s*=\s*"([^"]*)"', lambda m: f'name = "{m.group(1)}_second"', text)
    if not re.search(r"(?m)^pad_hands\s*=", text):
        text = "pad_hands = true\n" + text
    path = os.path.join(out_dir, os.path.basename(spec)[:-5] + ("_second" if board is not None else "_padded") + ".toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def cpu2_arm(a, drv: dict) -> list:
    env = environment(drv)
    records = []
    pin = shutil.which("taskset")
    one, both = (["taskset", "-c", "0"], ["taskset", "-c", "0,1"]) if pin else ((), ())
    for spec in a.spots:
        name = os.path.basename(spec)[:-5]
        spot = spot_of_spec(spec, range_strings=True)
        target = target_chips(spec, a.target_pct)
        board2 = a.second_board or moved_board(spot["board"])
        with tempfile.TemporaryDirectory() as d:
            spec2, spec1 = second_spec(spec, board2, d), second_spec(spec, None, d)
            # (a) wall to the target: cfrjax's second spot of the class in one process, postflop-solver on 2 threads
            cache = os.path.join(d, "cache")
            opts = ["--rule", "dcfr-postflop", "--eval-every", "10", "--target", f"{a.target_pct}%", "--max-iterations",
                    str(a.max_iterations), "--json", "--compile-cache", cache, *a.cfrjax_args]
            path = os.pathsep.join([ROOT] + [p for p in [os.environ.get("PYTHONPATH")] if p])
            out = run_measured(list(both) + [sys.executable, "-c", _SEQUENCE, json.dumps(opts), spec1, spec2],
                               env=dict(os.environ, PYTHONPATH=path), timeout=a.timeout)
            recs = [json.loads(x) for x in out["stdout"].splitlines() if x.startswith("{")]
            cmd = " ".join(list(both) + ["python -c <solve each in one process>", " ".join(opts), spec,
                                         "<second>", "(both with pad_hands = true)"])
            for k, r in enumerate(recs):
                r.update(arm="cfrjax", bench="cpu2 wall to target", spot=name, board=r.get("board"),
                         which="first (compiles)" if k == 0 else f"second of the shape class ({board2}), same process",
                         pinning=" ".join(both) or None, command=cmd, **env)
                records.append(r)
            if len(recs) < 2:
                records.append(dict(arm="cfrjax", bench="cpu2 wall to target", spot=name, failed=out["stderr"][-1500:],
                                    command=cmd, **env))
            print(f"cfrjax: {name}: second spot ({board2}) in the same process: " + (
                f"{recs[1]['call_wall_s']:.3f} s from the call, {recs[1].get('iterations')} it, compile "
                f"{recs[1].get('compile_s')} s ({recs[1].get('compile_cache')}); first {recs[0]['call_wall_s']:.2f} s"
                if len(recs) > 1 else "failed: " + out["stderr"][-300:]), flush=True)
            if drv.get("exe"):
                for sp, which in ((spot, "first"), (spot_of_spec(spec2, range_strings=True), f"second ({board2})")):
                    r = postflop_record(drv, sp, spec, 2, a.max_iterations, target, prefix=both)
                    r.update(bench="cpu2 wall to target", which=which, **env)
                    records.append(r)
                    print(f"postflop: {name} {which}, 2 threads: wall {r['wall_s']:.4f} s (process "
                          f"{r['process_wall_s']:.4f} s), {r['iterations']} it, {r['exploitability_pct_pot']:.3f}% pot",
                          flush=True)
        # (b) ms/iter: one core (cfrjax pinned, postflop-solver 1 thread pinned) and two
        n = a.speed_iterations or (2000 if spot["board"].count(" ") == 4 else 200)
        cache = tempfile.mkdtemp(prefix="cfrjax-cache-")
        for cores, prefix, th in (("1 core", one, 1), ("2 cores", both, 2)):
            c = cfrjax_cli(["solve", spec, "--rule", "dcfr-postflop", "--iterations", str(n), "--eval-every", str(n),
                            "--json", "--compile-cache", cache, *a.cfrjax_args], a.timeout, prefix=prefix)
            c.update(arm="cfrjax", bench="cpu2 ms/iter", spot=name, cores=cores, pinning=" ".join(prefix) or None, **env)
            records.append(c)
            if drv.get("exe"):
                r = run_driver(drv["exe"], spot, n, th, prefix=prefix)
                r.update(arm="postflop-solver", bench="cpu2 ms/iter", spot=name, cores=cores, pinning=" ".join(prefix) or None,
                         device=f"CPU: {_cpu_model()}, {th} thread{'s' if th > 1 else ''}", **env)
                r.pop("curve", None)
                records.append(r)
            print(f"{name} {cores}: cfrjax " + (f"failed: {c['failed']}" if "failed" in c else
                  f"{c.get('ms_per_iter', float('nan')):.3f} ms/iter") +
                  (f", postflop-solver {r['ms_per_iter']:.3f} ms/iter" if drv.get("exe") else ""), flush=True)
        shutil.rmtree(cache, ignore_errors=True)
    return records


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="stage the checkout, crates and prebuilt drivers in --stage")
    p.add_argument("--postflop-solver", required=True, help="a checkout of b-inary/postflop-solver")
    p.add_argument("--cargo-source-dir", default="/usr/share/cargo/registry")
    p.add_argument("--cpus", nargs="*", default=list(CPUS), help="processors to prebuild drivers for")
    p.add_argument("--stage", default=STAGE)
    p.add_argument("--build-dir", default=DEFAULT_BUILD)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--spots-dir", default=SPOTS_DIR)
    p = sub.add_parser("spots", help="the realistic spots, postflop-solver and cfrjax one after the other")
    _run_args(p)
    p.add_argument("--spots", nargs="+", default=None, help="spec files (default: every .toml of --spots-dir)")
    p.add_argument("--spots-dir", default=SPOTS_DIR)
    p.add_argument("--max-iterations", type=int, default=1000)
    p.add_argument("--arms", nargs="+", default=["postflop", "cfrjax"], choices=["postflop", "cfrjax"])
    p = sub.add_parser("batch", help="issue 50: river spots in one cfrjax batch vs postflop-solver one after the other")
    _run_args(p)
    p.add_argument("--spot", default=os.path.join(SPOTS_DIR, "srp_Qs7h2c9d3s_river.toml"))
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-iterations", type=int, default=1000)
    p.add_argument("--arms", nargs="+", default=["postflop", "cfrjax"], choices=["postflop", "cfrjax"])
    p = sub.add_parser("cpu2", help="issue 51 on the 2-core CPU: wall to the target, second spot of a class; ms/iter")
    _run_args(p)
    p.add_argument("--spots", nargs="+", default=None,
                   help="spec files (default: the turn and river of --spots-dir)")
    p.add_argument("--spots-dir", default=SPOTS_DIR)
    p.add_argument("--second-board", default=None, help="the second spot's board (default: ranks moved up one)")
    p.add_argument("--max-iterations", type=int, default=1000)
    p.add_argument("--speed-iterations", type=int, default=None, help="iterations of the ms/iter runs "
                   "(default: 2000 on a river, 200 on a turn)")
    p = sub.add_parser("tree", help="the trees alone: decision nodes, hands and memory_usage(), nothing solved")
    _run_args(p)
    p.add_argument("--spots", nargs="+", default=None, help="spec files (default: every .toml of --spots-dir)")
    p.add_argument("--spots-dir", default=SPOTS_DIR)
    p.add_argument("--cfrjax-nodes", action="store_true", help="also build cfrjax's game (CPU) and count its decision "
                   "nodes per street (a flop: about a minute and 0.4 GB on the 2-core CPU)")
    a = ap.parse_args(argv)
    if a.cmd == "tree":
        a.spots = a.spots or sorted(glob.glob(os.path.join(a.spots_dir, "*.toml")))
        drv = driver(a.stage, a.build_dir, a.rustflags, a.driver)
        if drv.get("exe") is None:
            print("postflop: no driver:", drv["skipped"], flush=True)
            return 1
        postflop_peer.write_records(a.out, tree_arm(a, drv), "tree", append=a.append)
        return 0
    if a.cmd == "cpu2":
        a.spots = a.spots or [os.path.join(a.spots_dir, f) for f in ("srp_Qs7h2c9d_turn.toml", "srp_Qs7h2c9d3s_river.toml")]
        drv = driver(a.stage, a.build_dir, a.rustflags, a.driver)
        postflop_peer.write_records(a.out, cpu2_arm(a, drv), "cpu2", append=a.append)
        return 0
    if a.cmd == "batch":
        drv = driver(a.stage, a.build_dir, a.rustflags, a.driver)
        postflop_peer.write_records(a.out, batch_arm(a, drv), "batch", append=a.append)
        return 0
    if a.cmd == "spots":
        a.spots = a.spots or sorted(glob.glob(os.path.join(a.spots_dir, "*.toml")))
        drv = driver(a.stage, a.build_dir, a.rustflags, a.driver)
        if drv.get("exe") is None:
            print("postflop: skipped:", drv["skipped"], flush=True)
        records = spots_arm(a, drv)
        postflop_peer.write_records(a.out, records, "spots", append=a.append)
        return 0
    if a.cmd == "prepare":
        prepare(a.postflop_solver, a.stage, a.cargo_source_dir, a.cpus, a.build_dir, a.jobs, a.spots_dir)
        return 0
    return 2


def _run_args(p):
    """Options every bench arm takes."""
    p.add_argument("--out", required=True, help="JSONL file of the records")
    p.add_argument("--append", action="store_true", help="add to --out instead of rewriting it")
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="postflop-solver's threads (default: all)")
    p.add_argument("--target-pct", type=float, default=0.5, help="target, percent of the pot")
    p.add_argument("--timeout", type=float, default=600, help="seconds one cfrjax process may take")
    p.add_argument("--cfrjax-args", nargs=argparse.REMAINDER, default=[],
                   help="more `cfrjax solve` options (last on the line), e.g. --hands player")
    p.add_argument("--stage", default=STAGE)
    p.add_argument("--build-dir", default=os.path.join(DEFAULT_BUILD, "native"),
                   help="where cargo builds the driver (outside the repository)")
    p.add_argument("--rustflags", default=RUSTFLAGS)
    p.add_argument("--driver", default=None, help="a built driver to use instead")


if __name__ == "__main__":
    sys.exit(main())
