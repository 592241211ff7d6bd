"""One full-range spot (the turn by default; any spot with several boards): terminal forms side by side.

Issue 21's turn targets: ms/iter, peak device memory, and the wall from the solve call
(build and compile included) to 0.3% of the pot, cold and with a warm compilation cache.
Each variant runs in fresh processes over one compilation-cache folder (the first run
fills it, the next `--warm-runs` read it), DCFR alternating float32:

* `dense`: the dense bfloat16 matrices per river board (`terminals="dense"`);
* `sorted`: sorted terminals in XLA (the showdown kernel switched off);
* `kernel`: sorted terminals, every river board's showdowns in one Pallas kernel launch
  (`cfrjax.public.showdown_kernel`, NVIDIA GPUs), the rest in XLA;
* `turn_kernels`: as `kernel`, the rest of the (half-)iteration in the turn's own kernels
  (`cfrjax.public.turn_kernel`, the default where it applies). The other variants switch
  them off. The showdowns run as the CUDA kernel where it builds
  (`cfrjax.public.cuda_showdown`, the default; its library built beforehand, once per
  machine), else as the Pallas one (`cuda_showdown` in each record says which);
* `turn_kernels_pallas`: as `turn_kernels` with the CUDA showdown switched off.

For each: build seconds, wall to the target (`solve_with_trace(..., eval_every=10,
target_exploitability=0.3% of the pot)` from the build's start, after imports and the
backend's start with its memory pool, `backend_init_s`; `wall_with_backend_s` counts that start
too), the iteration it stopped
at and its float64 exploitability, then steady ms/iter (`common.time_solve`), peak device
memory and the per-kernel device time of 20 iterations (`kernel_profile.profile_run`).
Records in `bench/results/spot_speed.jsonl`. `--preallocate false` runs the workers with
`XLA_PYTHON_CLIENT_PREALLOCATE=false` (XLA's pool grows as needed instead of reserving 75% of
the GPU's memory at the first transfer; `preallocate` in each record says which).

    python bench/spot_speed.py --variants dense,sorted,kernel --out bench/results/spot_speed_h200.jsonl
    python bench/spot_speed.py --spot hunl_flop_full --variants kernel,sorted
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "results", "spot_speed.jsonl")


def _worker(spot: str, variant: str, cache: str, profile: bool) -> dict:
    t_start = time.perf_counter()
    sys.path.insert(0, HERE)
    import jax
    import cfrjax
    from cfrjax.compile_cache import enable_compile_cache
    from cfrjax.games.poker.pot import starting_pot
    from cfrjax.games.poker import load_poker_config
    from cfrjax.games.poker.public_tree import build_public
    import dataclasses
    from common import environment, peak_memory_bytes, time_solve
    from kernel_profile import profile_run

    enable_compile_cache(cache)
    auto = cfrjax.plan.resolve_plan()
    off = {"showdown"} if variant == "sorted" else set()
    off |= set() if variant in ("turn_kernels", "turn_kernels_pallas") else {"turn"}
    plan = dataclasses.replace(auto, pallas=tuple(k for k in auto.pallas if k not in off),
                               cuda_showdown=auto.cuda_showdown and variant != "turn_kernels_pallas")
    t_init = time.perf_counter()
    # The runtime up (as after imports in a user's script), timed apart: the backend and
    # its memory pool (XLA reserves the GPU's memory on the first transfer, 2-2.5 s on an
    # H200 with jax 0.11.2, which otherwise landed in the first array the build put there).
    jax.block_until_ready(jax.device_put(0.0))
    t0 = time.perf_counter()
    game = build_public(load_poker_config(cfrjax.load.spec_path(spot)), terminals="dense" if variant == "dense" else "sorted")
    game = cfrjax.plan.use(game, plan)
    build_s = time.perf_counter() - t0
    state = cfrjax.init(game, rule="dcfr", order="alternating", dtype="float32")
    target = 0.003 * starting_pot(game)
    _, trace = cfrjax.solve_with_trace(game, state, eval_every=10, target_exploitability=target, max_iterations=1000)
    wall = time.perf_counter() - t0
    rec = dict(game=spot, variant=variant, rule="dcfr", order="alternating", dtype="float32", build_s=build_s,
               import_s=t_init - t_start, backend_init_s=t0 - t_init, wall_to_target_s=wall,
               wall_with_backend_s=wall + (t0 - t_init), target=target, stop_iteration=int(trace.iteration[-1]),
               preallocate=os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "true"),
               exploitability=float(trace.exploitability[-1]),
               kernel_used="showdown" in plan.pallas and variant != "dense", turn_kernels="turn" in plan.pallas,
               cuda_showdown="showdown" in plan.pallas and variant != "dense" and plan.cuda_showdown)
    if profile:
        rec.update(time_solve(game, state, 100, repeats=5))
        rec["peak_device_bytes"] = peak_memory_bytes()
        prof = profile_run(lambda: cfrjax.solve(game, state, 20), 20)
        rec.update(kernels_per_iteration=prof["kernels_per_iteration"], device_us_per_iter=prof["device_us_per_iter"],
                   kernels=prof["kernels"][:15])
    rec.update(environment(), plan=plan.describe())
    return rec


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--spot", default="hunl_turn_full")
    p.add_argument("--variants", default="dense,sorted,kernel")
    p.add_argument("--out", default=OUT)
    p.add_argument("--warm-runs", type=int, default=1, help="fresh processes on the filled cache (the first is profiled)")
    p.add_argument("--preallocate", choices=["true", "false"], default=None,
                   help="XLA_PYTHON_CLIENT_PREALLOCATE for the workers (default: as inherited)")
    p.add_argument("--note", default=None, help="a note stored in each record")
    p.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        spot, variant, cache, profile = a.worker
        print(json.dumps(_worker(spot, variant, cache, profile == "1")))
        return 0
    env = dict(os.environ)
    if a.preallocate is not None:
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = a.preallocate
    for variant in a.variants.split(","):
        with tempfile.TemporaryDirectory() as cache:
            for run, profile in [("cold cache", "0"), ("warm cache", "1")] + [("warm cache", "0")] * (a.warm_runs - 1):
                out = subprocess.run([sys.executable, __file__, "--worker", a.spot, variant, cache, profile],
                                     capture_output=True, text=True, env=env)
                if out.returncode != 0:
                    print(out.stderr[-3000:], file=sys.stderr)
                    continue
                rec = json.loads(out.stdout.strip().splitlines()[-1])
                rec["cache"] = run
                if a.note:
                    rec["note"] = a.note
                with open(a.out, "a") as f:
                    f.write(json.dumps(rec) + "\n")
                print(variant, run, {k: rec.get(k) for k in ("preallocate", "backend_init_s", "build_s", "wall_to_target_s",
                                                              "wall_with_backend_s", "stop_iteration",
                                                              "exploitability", "ms_per_iter", "compile_s",
                                                              "peak_device_bytes", "device_us_per_iter")}, flush=True)
                for k in rec.get("kernels", [])[:8]:
                    print("   ", k, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
