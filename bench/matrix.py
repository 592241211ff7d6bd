"""The timing matrix (paper, tab:matrix) over the suite: cfrjax and the PyTorch replica of
Algorithm 1, CFR+ simultaneous float32, per game of `games/suite.toml`.

    python bench/matrix.py [--specs .carry/specs] [--games all] [--budget-s 240]
                           [--out bench/results/matrix.jsonl] [--torch-cpu] [--check]

Arms (`backend_arm`):
  * `cfrjax`: compile s (AOT `lower().compile()` of the 1,000-iteration `lax.scan` solve),
    first solve s (compile + the first 1,000 iterations, the end-to-end cost of a fresh
    solve), steady ms/iter (median over `--repeats` >= 5 calls of the compiled solve),
    kernels per iteration (`cfrjax.profile.kernels_per_iteration`), XLA's buffer
    assignment of the solve (`exec_bytes`), the process's peak device memory, bytes per node.
  * `torch_eager`, `torch_graph` (`bench/baselines/torch_graph.py`; CUDA only unless
    `--torch-cpu`, which runs the eager arm on the CPU): setup s (warm-up, plus capture for
    the graph arm), steady ms/iter (CUDA events, median over the repeats), Aten operations
    per iteration, peak device memory of the arm (`torch.cuda.max_memory_allocated` after a
    reset), the replica's persistent-buffer bytes.
With `--check` each game also records the replica's agreement with cfrjax after 20
iterations on the device (`bench="replica_check"`), in float32 and in float64 (where
CFR+'s exact-zero ties cannot split the two trajectories; see `check_against_cfrjax`).

`--budget-s` bounds the run: a game is started only while the elapsed time is below the
budget, and the eager arm, the slowest per iteration, runs `--eager-iterations` per repeat.
Records have the fields of `bench/common.py` (bench, game, rule, order, averaging,
dtype, backend_arm, batch, sizes, compile_s, first_solve_s, ms_per_iter(_min/_max),
repeats, iterations, peak_bytes, environment).
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with PyTorch

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402

import cfrjax  # noqa: E402
from cfrjax.compile import compile_arrays  # noqa: E402
from cfrjax.game import from_numpy  # noqa: E402
from cfrjax.memory import compiled_memory  # noqa: E402
from cfrjax.profile import kernels_per_iteration  # noqa: E402
from cfrjax.driver import lower_solve  # noqa: E402
from cfrjax.locking import drop_idle_locks  # noqa: E402
from common import append_records, environment, peak_memory_bytes  # noqa: E402
from suite import build_spec, load_suite, select  # noqa: E402

CONFIG = dict(rule="cfr+", order="simultaneous", averaging="linear", dtype="float32")


def time_cfrjax(game, state, iterations: int, repeats: int) -> dict:
    state = drop_idle_locks(state)[0]   # the compiled solve is called with it below
    t0 = time.perf_counter()
    compiled = lower_solve(game, state, iterations).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(game, state))
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(repeats):
        t1 = time.perf_counter()
        jax.block_until_ready(compiled(game, state))
        times.append(time.perf_counter() - t1)
    mem = {}
    try:
        m = compiled.memory_analysis()
        mem = dict(exec_bytes=int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
                                  - m.alias_size_in_bytes), exec_temp_bytes=int(m.temp_size_in_bytes))
    except Exception:
        pass
    return dict(compile_s=compile_s, first_solve_s=first_s, ms_per_iter=1e3 * statistics.median(times) / iterations,
                ms_per_iter_min=1e3 * min(times) / iterations, ms_per_iter_max=1e3 * max(times) / iterations,
                repeats=repeats, iterations=iterations, **mem)


def torch_arms(arrays, static, device, args, base, env):
    import torch
    from baselines.torch_graph import TorchCFRPlus, count_aten_ops, time_replica
    cuda = device.startswith("cuda")
    modes = ["eager", "graph"] if cuda else ["eager"]
    out = []
    for mode in modes:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        solver = TorchCFRPlus(arrays, static, device=device)
        build_s = time.perf_counter() - t0
        aten = count_aten_ops(solver)
        its = args.eager_iterations if mode == "eager" else args.iterations
        t = time_replica(solver, mode, its, repeats=args.repeats)
        rec = dict(base, backend_arm=f"torch_{mode}", torch=torch.__version__, torch_device=device,
                   build_s=build_s, aten_ops=aten, buffer_bytes=solver.buffer_bytes(),
                   peak_bytes=int(torch.cuda.max_memory_allocated()) if cuda else None,
                   peak_reserved_bytes=int(torch.cuda.max_memory_reserved()) if cuda else None, **t, **env)
        rec["bytes_per_node"] = (rec["peak_bytes"] or rec["buffer_bytes"]) / base["nodes"]
        out.append(rec)
        print(f"    torch {mode:5s} {t['ms_per_iter']:.4f} ms/iter  aten ops {aten}  setup {t['setup_s']:.3f} s",
              flush=True)
        del solver
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--specs", default=".carry/specs")
    ap.add_argument("--games", default="all", help="comma-separated suite names (games/suite.toml) or 'all'")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--eager-iterations", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=240.0)
    ap.add_argument("--arms", default="cfrjax,torch")
    ap.add_argument("--torch-cpu", action="store_true", help="run the torch eager arm on the CPU too")
    ap.add_argument("--check", action="store_true", help="also check the replica against cfrjax (20 iterations)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "matrix.jsonl"))
    args = ap.parse_args()
    if args.repeats < 5:
        ap.error("--repeats must be >= 5")
    start = time.perf_counter()
    env = environment()
    arms = args.arms.split(",")
    torch_device = None
    if "torch" in arms:
        try:
            import torch
            torch_device = "cuda" if torch.cuda.is_available() else ("cpu" if args.torch_cpu else None)
        except ImportError:
            print("torch not installed: replica arms skipped", flush=True)
    for entry in select(load_suite(), args.games):
        elapsed = time.perf_counter() - start
        if elapsed > args.budget_s:
            print(f"budget {args.budget_s:.0f} s reached after {elapsed:.0f} s: skipping {entry['name']} and later",
                  flush=True)
            break
        records = []
        t0 = time.perf_counter()
        spec = build_spec(entry, args.specs)
        spec_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        arrays, static, labels = compile_arrays(spec, "folded")
        game = from_numpy(arrays, static, labels)
        build_s = spec_s + time.perf_counter() - t0
        base = dict(bench="matrix", game=entry["name"], title=entry["title"], **CONFIG, batch=1, spec_s=spec_s,
                    build_s=build_s, **game.sizes())
        print(f"{entry['name']:16s} N {game.num_nodes:9,d} D {game.depth:2d}  build {build_s:.2f} s", flush=True)
        if "cfrjax" in arms:
            state = cfrjax.init(game, **CONFIG)
            kernels = kernels_per_iteration(game, state)
            t = time_cfrjax(game, state, args.iterations, args.repeats)
            rec = dict(base, backend_arm="cfrjax", kernels=kernels, peak_bytes=peak_memory_bytes(), **t, **env)
            rec["bytes_per_node"] = (rec.get("exec_bytes") or 0) / game.num_nodes
            records.append(rec)
            print(f"    cfrjax      {t['ms_per_iter']:.4f} ms/iter  kernels {kernels}  compile {t['compile_s']:.2f} s  "
                  f"first solve {t['first_solve_s']:.2f} s", flush=True)
        if torch_device is not None:
            records += torch_arms(arrays, static, torch_device, args, base, env)
            if args.check:
                from baselines.torch_graph import check_against_cfrjax
                for mode in (["eager", "graph"] if torch_device == "cuda" else ["eager"]):
                    for dtype in ("float32", "float64"):
                        d = check_against_cfrjax(spec, 20, device=torch_device, mode=mode, dtype=dtype)
                        records.append(dict(base, bench="replica_check", backend_arm=f"torch_{mode}", **d, **env))
                        print(f"    check {mode:5s} {dtype} regret diff {d['regret_max_abs']:.2e} "
                              f"(scale {d['regret_scale']:.2f}) policy diff {d['policy_max_abs']:.2e}; one step: "
                              f"regret {d['one_step_regret_max_abs']:.2e} avg {d['one_step_avg_max_abs']:.2e}",
                              flush=True)
        append_records(args.out, records)
        del game, arrays
    print(f"matrix done in {time.perf_counter() - start:.0f} s -> {args.out}", flush=True)


if __name__ == "__main__":
    main()
