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

On the machine that runs the bench, `driver()` builds the driver from the stage with
`-C target-cpu=native` where cargo is found (offline, into `--build-dir` outside the
repository), else takes `bin/<host cpu>/` (the host's LLVM processor name, read by llvmlite
or gcc), else `bin/x86-64-v4` / `x86-64-v3` by the host's AVX-512 / AVX2 flags; the
records name the rustflags and how the driver was made.

Arms (each record: device, threads, versions, commit, rustflags, command):

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
sys.path.insert(0, HERE)
import postflop_peer  # noqa: E402
from postflop_peer import RUSTFLAGS, run_driver, run_measured, spot_of_spec  # noqa: E402

STAGE = os.path.join(ROOT, ".ab", "peer")
SPOTS_DIR = os.path.join(os.path.dirname(ROOT), "shared", "spots")
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
            cpus=CPUS, build_dir: str = DEFAULT_BUILD, jobs: int = 2, log=print) -> dict:
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


def host_cpu() -> str | None:
    """This host's processor as LLVM names it (rustc's `native`): llvmlite's, else gcc's
    `-march=native`, else None."""
    try:
        import llvmlite.binding as llvm
        return llvm.get_host_cpu_name() or None
    except Exception:   # noqa: BLE001  (not installed, or an llvmlite without it)
        pass
    try:
        out = subprocess.run(["gcc", "-march=native", "-Q", "--help=target"], capture_output=True, text=True).stdout
        m = re.search(r"^\s*-march=\s+(\S+)", out, re.M)
        return m.group(1) if m else None
    except OSError:
        return None


def driver(stage: str = STAGE, build_dir: str = DEFAULT_BUILD, rustflags: str = RUSTFLAGS,
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
    cpu = host_cpu()
    flags = _cpu_flags()
    for name in [cpu] + (["x86-64-v4"] if "avx512f" in flags else []) + (["x86-64-v3"] if "avx2" in flags else []):
        path = os.path.join(stage, "bin", str(name), EXE)
        if name and os.path.isfile(path):
            info = _build_info(os.path.dirname(path))
            return dict(exe=path, rustflags=info.get("rustflags"), rustc=info.get("rustc"),
                        postflop_solver=info.get("postflop_solver", commit),
                        how=f"prebuilt for {name} (this host: {cpu or 'not named'}"
                            f"{'' if name == cpu else '; not its own processor: not -C target-cpu=native'})")
    return dict(exe=None, skipped=f"no cargo here and no prebuilt driver in {stage}/bin for {cpu} "
                                  f"(run `postflop_spots.py prepare` with --cpus {cpu})")


def _build_info(d: str) -> dict:
    p = os.path.join(d, "build.json")
    return json.load(open(p)) if os.path.isfile(p) else {}


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
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        prepare(a.postflop_solver, a.stage, a.cargo_source_dir, a.cpus, a.build_dir, a.jobs)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
