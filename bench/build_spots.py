"""Build time and memory of the public tree of each spot of a folder, one core, a fresh process each.

    python bench/build_spots.py                      # ../shared/spots, records to results/build_spots_cpu_<date>.jsonl
    python bench/build_spots.py --spots DIR --out PATH

Each `.toml` spot of the folder is built by `cfrjax.load_game(spot, check_memory=False)`
(the TOML read and `build_public`: the tree and its tables; the per-node label strings are
deferred and not made) in a fresh Python process pinned to CPU 0 (`taskset -c 0`). The
child first imports cfrjax, NumPy, JAX and the builder's modules and starts JAX's CPU
backend (`jax.devices()`): its resident memory then is the idle RSS (the native library,
built beforehand once per machine, is loaded by then: `tables` says whether the showdown
tables ran native or in NumPy). It resets the peak
(`/proc/self/clear_refs`), times the build (wall and the process's CPU seconds: the 2-core
machine is shared, so the CPU time is the steadier figure), and reads the peak RSS
(`VmHWM`). One JSON record per spot: spot, build seconds, peak and idle RSS, the peak above
idle, the built game's array bytes (every array leaf), their ratio, the load average, the
commit and versions, device "cpu".
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _status(key: str) -> int:
    """A `/proc/self/status` memory line in bytes (`VmRSS`, `VmHWM`)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def child(spot: str) -> dict:
    """Build `spot` in this (fresh) process and return its record."""
    import gc
    import time

    import jax
    import numpy as np

    import cfrjax
    import cfrjax.games.poker.public_tree  # noqa: F401  (the builder's modules: imported before idle)
    import cfrjax.load  # noqa: F401

    jax.devices()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:   # the peak RSS restarts from the current RSS
        f.write("5")
    idle = _status("VmRSS")
    t0, c0 = time.perf_counter(), time.process_time()
    game = cfrjax.load_game(spot, check_memory=False)
    jax.block_until_ready(jax.tree_util.tree_leaves(game))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = _status("VmHWM")
    arrays = sum(int(np.asarray(x).nbytes) for x in jax.tree_util.tree_leaves(game))
    sys.path.insert(0, HERE)
    from common import code_commit

    from cfrjax.plan import _switched_on
    from cfrjax.public import native
    tables = "native" if _switched_on("CFRJAX_NATIVE") and native._LIBRARY.load(build=False) else "numpy"
    from cfrjax.public.game import Deferred
    deferred = isinstance(game.labels.__dict__.get("_deferred_node_codes"), Deferred)   # label strings not made

    return dict(bench="build_spots", spot=os.path.splitext(os.path.basename(spot))[0], build_s=round(wall, 4),
                build_cpu_s=round(cpu, 4), peak_rss=peak, idle_rss=idle, build_rss=peak - idle, array_bytes=arrays,
                rss_over_arrays=round((peak - idle) / arrays, 3), hands=game.num_hands, boards=game.num_boards,
                nodes=game.num_nodes, slots=game.num_slots, tables=tables, labels_deferred=deferred, loadavg=os.getloadavg()[0], device="cpu",
                cpu=_cpu_model(), commit=code_commit(), python=platform.python_version(), numpy=np.__version__,
                jax=jax.__version__, host=platform.node(), pinned="taskset -c 0")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spots", default=os.path.join(ROOT, "..", "shared", "spots"), help="folder of .toml spots")
    ap.add_argument("--out", default=os.path.join(HERE, "results",
                                                  f"build_spots_cpu_{datetime.date.today().isoformat()}.jsonl"))
    ap.add_argument("--one", help=argparse.SUPPRESS)   # child mode: build one spot, print its record
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per spot")
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(child(args.one)))
        return 0
    spots = sorted(glob.glob(os.path.join(args.spots, "*.toml")))
    if not spots:
        print(f"build_spots: error: no .toml spots in {args.spots}", file=sys.stderr)
        return 2
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), JAX_PLATFORMS="cpu")
    # The native library (its showdown tables) is built once per machine, on first use:
    # build it before timing, as a solve on this machine would have.
    subprocess.run([sys.executable, "-c", "from cfrjax.public import native; native.available()"], env=env,
                   check=True, timeout=args.timeout)
    with open(args.out, "a") as out:
        for spot in spots:
            run = subprocess.run(["taskset", "-c", "0", sys.executable, os.path.abspath(__file__), "--one", spot],
                                 capture_output=True, text=True, env=env, timeout=args.timeout)
            if run.returncode != 0:
                print(f"build_spots: {spot} failed:\n{run.stderr[-2000:]}", file=sys.stderr)
                return 1
            rec = json.loads(run.stdout.strip().splitlines()[-1])
            out.write(json.dumps(rec) + "\n")
            print(f"{rec['spot']:24s} {rec['build_s']:7.3f} s wall {rec['build_cpu_s']:7.3f} s cpu  "
                  f"{rec['build_rss'] / 1e6:8.1f} MB over idle  {rec['array_bytes'] / 1e6:8.1f} MB arrays  "
                  f"x{rec['rss_over_arrays']:.2f}  load {rec['loadavg']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
