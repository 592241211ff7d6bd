"""The public-tree form on full-range poker spots: ms/iter, compile seconds, memory.

Each spot is solved in its own process (peak RSS is per process): build, compile, then
`common.time_solve`'s protocol (CFR+ simultaneous, float32 by default), and on request
the exploitability after the timed iterations (evaluated in float64 when
`--eval-float64`). Records go to `bench/results/public_form.jsonl`.

    python bench/public_form.py --spots hunl_river_full,hunl_turn_full
    taskset -c 0 python bench/public_form.py --spots hunl_river_full --label one-core
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "public_form.jsonl")
ITERATIONS = {"hunl_river_full": 200, "hunl_turn_full": 10}


def _one(spot: str, iterations: int, repeats: int, dtype: str, terminals: str) -> dict:
    sys.path.insert(0, HERE)
    import jax
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    import cfrjax
    from cfrjax.games.poker import load_poker_config
    from cfrjax.games.poker.public_tree import build_public
    from common import environment, peak_memory_bytes, time_solve

    t0 = time.perf_counter()
    game = build_public(load_poker_config(cfrjax.load.spec_path(spot)), terminals=terminals)
    build_s = time.perf_counter() - t0
    state = cfrjax.init(game, rule="cfr+", order="simultaneous", dtype=dtype)
    t = time_solve(game, state, iterations, repeats)
    rec = dict(environment(), bench="public_form", game=spot, form="public", terminals=game.terminals,
               rule="cfr+", order="simultaneous", dtype=dtype, hands=game.num_hands, public_nodes=game.num_nodes,
               build_s=build_s, **t, peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
               peak_device_bytes=peak_memory_bytes(), affinity=len(os.sched_getaffinity(0)))
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spots", default="hunl_river_full,hunl_turn_full")
    p.add_argument("--iterations", type=int, default=None, help="per timed call (default: per spot)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--terminals", default="auto", choices=("auto", "sorted", "dense"))
    p.add_argument("--label", default=None, help="free text stored with the records (e.g. 'taskset -c 0')")
    p.add_argument("--out", default=OUT)
    p.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        print(json.dumps(_one(args.worker, args.iterations, args.repeats, args.dtype, args.terminals)))
        return 0
    for spot in args.spots.split(","):
        it = args.iterations or ITERATIONS.get(spot, 10)
        cmd = [sys.executable, __file__, "--worker", spot, "--iterations", str(it), "--repeats", str(args.repeats),
               "--dtype", args.dtype, "--terminals", args.terminals]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            print(f"{spot}: failed\n{out.stderr[-3000:]}", file=sys.stderr)
            continue
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        rec["label"] = args.label
        print(f"{spot:18s} {rec['terminals']:6s} {rec['ms_per_iter']:9.3f} ms/iter  compile {rec['compile_s']:.1f} s  "
              f"build {rec['build_s']:.1f} s  peak RSS {rec['peak_rss_bytes'] / 2**20:.0f} MiB  "
              f"(cores {rec['affinity']}, {rec['backend']})", flush=True)
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "a") as f:
            f.write(json.dumps(rec) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
