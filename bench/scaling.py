"""Scaling: throughput vs number of devices (a batch of subgames), and time / memory vs
tree size on the HUNL turn sweep (K = 4..24 random hands per player; paper, fig:scaling).

    python bench/scaling.py                 # full sweep; one GPU: well under 10 minutes
    python bench/scaling.py --quick         # small sizes, a few seconds of solving (CPU check)
    python bench/scaling.py --cpu-devices 4 --quick   # fake 4 CPU devices for the device sweep

Writes JSONL records to bench/results/scaling.jsonl:

  bench="scaling_size":    one per K: nodes, slots, build/compile seconds, ms/iter of
                           `cfrjax.solve` (common.time_solve protocol), the memory plan
                           (`cfrjax.memory.memory_plan`), XLA's buffer assignment of the
                           executable and the device's peak bytes (where reported), and
                           bytes-moved model bandwidth (`bytes_model`).
  bench="scaling_devices": one per (devices, per-device batch): `cfrjax.shard.solve_sharded`
                           on a batch of poker subgames of `--toml` (default the turn;
                           `--toml games/hunl_river.toml` for river subgames) with
                           K = --batch-k hands, root chance randomized per subgame,
                           subgame-iterations per second, and XLA's buffer assignment.

Multi-process mode (`--multiprocess N`): runs `cfrjax solve-batch` (the multi-host entry
point, `cfrjax.multihost`) as N processes on this host (localhost coordinator, each
process `--cpu-devices` CPU devices), then the same batch as one process with the same
number of devices per process, and appends one record per run to
bench/results/multiprocess_cpu.jsonl (`bench="multiprocess"`): the command, wall seconds
(launch to the last exit), devices per process, batch size, and ms per batch-iteration
(the slowest process's median over the chunks after the first, which compiles).

    python bench/scaling.py --multiprocess 2 --cpu-devices 2      # 2 x 2 CPU devices

Peak bytes come from `device.memory_stats()["peak_bytes_in_use"]`, a process-lifetime
peak: the size sweep runs in ascending K, so each record's peak is that of the largest
game so far (i.e. this one).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))


def _args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes (CPU smoke run)")
    ap.add_argument("--ks", default=None, help="comma-separated K values (default 4,8,12,16,20,24; quick: 4,6)")
    ap.add_argument("--iterations", type=int, default=None, help="iterations per timed solve (default 200; quick 10)")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats (default 5; quick 2)")
    ap.add_argument("--batch-k", type=int, default=None, help="K of the batched subgames (default 8; quick 4)")
    ap.add_argument("--batches", default=None, help="per-device batch sizes (default 1,2,4,8,16,32; quick 1,2)")
    ap.add_argument("--cpu-devices", type=int, default=None, help="fake this many CPU devices (set before JAX starts)")
    ap.add_argument("--skip-size", action="store_true")
    ap.add_argument("--skip-devices", action="store_true")
    ap.add_argument("--multiprocess", type=int, default=None, metavar="N",
                    help="only the multi-process run: N local processes of `cfrjax solve-batch`, and one process")
    ap.add_argument("--mp-game", default="hunl_river", help="game of the multi-process run (a spec name or path)")
    ap.add_argument("--mp-form", default=None, help="its compiled form (default: the spec's, public)")
    ap.add_argument("--mp-batch", type=int, default=None, help="its batch size (default 8 per process)")
    ap.add_argument("--mp-out", default=os.path.join(os.path.dirname(__file__), "results", "multiprocess_cpu.jsonl"))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "scaling.jsonl"))
    ap.add_argument("--toml", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                   "games", "hunl_turn.toml"))
    a = ap.parse_args()
    q = a.quick
    a.ks = [int(x) for x in (a.ks or ("4,6" if q else "4,8,12,16,20,24")).split(",")]
    a.iterations = a.iterations or (10 if q else 200)
    a.repeats = a.repeats or (2 if q else 5)
    a.batch_k = a.batch_k or (4 if q else 8)
    a.batches = [int(x) for x in (a.batches or ("1,2" if q else "1,2,4,8,16,32")).split(",")]
    return a


def turn_game(toml: str, k: int):
    """The HUNL turn subgame of `toml` with K random hands per player (seed kept)."""
    from cfrjax.compile import compile_game
    from cfrjax.games.poker import build_spec, load_poker_config
    cfg = load_poker_config(toml)
    cfg = dataclasses.replace(cfg, random_hands=k, name=f"{cfg.name}_K{k}")
    t0 = time.perf_counter()
    spec = build_spec(cfg)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    game = compile_game(spec)
    return game, build_s, time.perf_counter() - t0


def bytes_model(game, dtype_bytes: int) -> int:
    """Bytes one simultaneous iteration reads and writes at least (solver's own arrays):
    reach pass (parent, 2 lane slots, 2 reach) per node, value pass (val_slot, parent,
    template, value) per node, regret pass (4 indices, 3 values) per decision edge, and
    the slot vectors (regret, avg, strategy) read and written."""
    N, M, S = game.num_nodes, game.num_decision_edges, game.num_slots
    ints = 3 * N + 2 * N + 4 * M
    floats = 2 * N + 2 * N + 3 * M + 6 * S
    return 4 * ints + dtype_bytes * floats


def size_sweep(args, env, common):
    import jax
    import cfrjax
    from cfrjax import memory
    from cfrjax.driver import _solve
    records = []
    for k in args.ks:
        game, build_s, compile_game_s = turn_game(args.toml, k)
        state = cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear", dtype="float32")
        plan = memory.memory_plan(game, state)
        fit = memory.check_fits(plan)
        xla = memory.compiled_memory(_solve, game, state, args.iterations, None)
        t = common.time_solve(game, state, args.iterations, repeats=args.repeats)
        nbytes = bytes_model(game, 4)
        rec = dict(bench="scaling_size", game=game.name, k=k, rule="cfr+", order="simultaneous", dtype="float32",
                   batch=1, devices=1, build_s=build_s, compile_game_s=compile_game_s, **game.sizes(), **t,
                   plan_bytes=plan.total_bytes, plan_groups=plan.group_bytes(), plan_free_bytes=fit["free"],
                   xla_bytes=xla.get("total_bytes"), xla_temp_bytes=xla.get("temp_bytes"),
                   peak_bytes=common.peak_memory_bytes(), bytes_model=nbytes,
                   model_gb_per_s=nbytes / (t["ms_per_iter"] * 1e-3) / 1e9, **env)
        records.append(rec)
        print(f"K={k:3d} nodes {game.num_nodes:>9,} slots {game.num_slots:>8,}  {t['ms_per_iter']:.4f} ms/iter  "
              f"plan {plan.total_bytes / 2**20:8.1f} MiB  xla {(xla.get('total_bytes') or 0) / 2**20:8.1f} MiB  "
              f"peak {(rec['peak_bytes'] or 0) / 2**20:8.1f} MiB  build {build_s:.1f}s", flush=True)
        del game, state
    return records


def device_sweep(args, env, common):
    import jax
    import jax.numpy as jnp
    import numpy as np
    import cfrjax
    from cfrjax import batch, memory, shard
    game, build_s, _ = turn_game(args.toml, args.batch_k)
    lo, hi = game.level_start[1], game.level_start[2]
    ndev = jax.device_count()
    counts = [n for n in (1, 2, 4, 8, 16, 32, 64) if n <= ndev]
    records = []
    for n in counts:
        mesh = shard.batch_mesh(jax.devices()[:n])
        for per in args.batches:
            B = n * per
            plan = memory.memory_plan(game, batch=B, devices=n, dtype="float32")
            try:
                memory.check_fits(plan, jax.devices()[0])
            except memory.MemoryPlanError as e:
                print(f"devices {n} batch/device {per}: skipped: {e}", flush=True)
                continue
            probs = np.random.default_rng(per).dirichlet(np.ones(hi - lo), size=B)
            games = jax.vmap(cfrjax.set_root_chance, (None, 0), cfrjax.batch_axes(game))(game, jnp.asarray(probs))
            states = batch.init_batch(game, B, rule="cfr+", dtype="float32")
            games, states = shard.place(games, states, mesh)
            fields = batch.batched_fields_of(games)
            t0 = time.perf_counter()
            try:
                compiled = shard._solve_sharded.lower(games, states, args.iterations, mesh, fields).compile()
                compile_s = time.perf_counter() - t0
                xla = {f"xla_{k}": v for k, v in memory.executable_memory(compiled).items()}
                jax.block_until_ready(shard.solve_sharded(games, states, args.iterations, mesh=mesh))
            except jax.errors.JaxRuntimeError as e:  # the plan passed but XLA ran out: record, go on
                print(f"devices {n} batch/device {per}: failed although the memory plan fit: {str(e)[:200]}",
                      flush=True)
                records.append(dict(bench="scaling_devices_failed", game=game.name, k=args.batch_k, devices=n,
                                    batch_per_device=per, batch=B, plan_bytes_per_device=plan.total_bytes,
                                    error=str(e)[:300], quick=args.quick, **env))
                common.append_records(args.out, records[-1:])
                del games, states
                break
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                jax.block_until_ready(shard.solve_sharded(games, states, args.iterations, mesh=mesh))
                times.append(time.perf_counter() - t0)
            med = statistics.median(times)
            rec = dict(bench="scaling_devices", game=game.name, k=args.batch_k, rule="cfr+", order="simultaneous",
                       dtype="float32", devices=n, batch_per_device=per, batch=B, iterations=args.iterations,
                       repeats=args.repeats, compile_s=compile_s, solve_s=med, **game.sizes(),
                       ms_per_batch_iter=1e3 * med / args.iterations,
                       subgame_iters_per_s=B * args.iterations / med, plan_bytes_per_device=plan.total_bytes, **xla,
                       peak_bytes=common.peak_memory_bytes(), quick=args.quick, **env)
            records.append(rec)
            common.append_records(args.out, [rec])  # as it goes: a later failure loses nothing
            print(f"devices {n:2d} batch/device {per:3d}  {rec['ms_per_batch_iter']:.3f} ms/iter  "
                  f"{rec['subgame_iters_per_s']:,.0f} subgame-iters/s", flush=True)
            del games, states
    return records


def multiprocess_run(args, env, common):
    """`cfrjax solve-batch` as `args.multiprocess` local processes and as one process."""
    import json
    import shlex
    import socket
    import subprocess
    import tempfile

    n, dev = args.multiprocess, args.cpu_devices or 1
    batch = args.mp_batch or 8 * n
    chunk = max(1, args.iterations // 4)
    penv = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_"))}
    penv.update(JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={dev}")
    records = []
    for procs in (n, 1):
        with tempfile.TemporaryDirectory(prefix="cfrjax-mp-bench-") as out, socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            s.close()
            base = ["cfrjax", "solve-batch", args.mp_game, "--batch", str(batch // (n // procs)),
                    "--iterations", str(args.iterations), "--chunk", str(chunk), "--out", out, "--json"]
            if args.mp_form:
                base += ["--form", args.mp_form]
            if procs > 1:
                base += ["--coordinator", f"127.0.0.1:{port}", "--num-processes", str(procs)]
            cmds = [base + (["--process-id", str(i)] if procs > 1 else []) for i in range(procs)]
            t0 = time.perf_counter()
            ps = [subprocess.Popen([sys.executable, "-m", "cfrjax"] + c[1:], env=penv, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True) for c in cmds]
            outs = [p.communicate(timeout=1800) for p in ps]
            wall = time.perf_counter() - t0
            for p, (o, e) in zip(ps, outs):
                if p.returncode:
                    raise SystemExit(f"a process failed ({p.returncode}): {e[-2000:]}")
            per = [json.loads(o.strip().splitlines()[-1]) for o, _ in outs]
        ms = max(r["ms_per_iter"] for r in per)
        b = per[0]["batch"]
        rec = dict(bench="multiprocess", game=per[0]["game"], form=per[0]["form"], rule=per[0]["rule"],
                   order=per[0]["order"], dtype=per[0]["dtype"], processes=procs, devices_per_process=dev,
                   devices=procs * dev, batch=b, batch_per_process=b // procs, iterations=args.iterations,
                   chunk=chunk, command=shlex.join(cmds[0]).replace(out, "OUT"), wall_s=wall, ms_per_iter=ms,
                   subgame_iters_per_s=b / (ms * 1e-3),
                   per_process=[{k: r[k] for k in ("process_id", "rows", "devices", "build_s", "first_chunk_s",
                                                   "ms_per_iter", "wall_s")} for r in per],
                   load_avg_1m=os.getloadavg()[0], **env)
        records.append(rec)
        common.append_records(args.mp_out, [rec])
        print(f"{procs} process(es) x {dev} devices, batch {b}: wall {wall:.1f} s, {ms:.3f} ms/iter "
              f"({rec['subgame_iters_per_s']:,.0f} subgame-iters/s)", flush=True)
    return records


def main():
    args = _args()
    if args.multiprocess:
        import common
        env = common.environment()
        t0 = time.perf_counter()
        records = multiprocess_run(args, env, common)
        print(f"{len(records)} records -> {args.mp_out} ({time.perf_counter() - t0:.1f} s)", flush=True)
        return
    if args.cpu_devices:
        import jax
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    import common
    env = common.environment()
    env["device_count"] = __import__("jax").device_count()
    records = []
    t0 = time.perf_counter()
    if not args.skip_size:
        records += size_sweep(args, env, common)
    for r in records:
        r["quick"] = args.quick
    common.append_records(args.out, records)
    if not args.skip_devices:  # appends its records one by one
        records += device_sweep(args, env, common)
    print(f"{len(records)} records -> {args.out} ({time.perf_counter() - t0:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
