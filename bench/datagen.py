"""End-to-end rate of the river data generator: solves per minute, sampling, solving and writing.

For each `--spots` value B, `cfrjax.datagen.generate_shards` fills a fresh dataset folder
(a temporary one unless `--out`) with `--shards` shards of B full-range river spots
(`--spec`'s betting, default `hunl_river_full`: bets of 1/2 and 1 pot, no raises; the
default pot grid; DeepStack ranges; one board per spot) of `--iterations` iterations of
the default rule (DCFR alternating, float32), exactly as `cfrjax datagen` does. The
first shard includes compiling; the steady rate is taken from the time between the
first and the last shard written (`shards - 1` shards), which includes everything the
generator does per shard: sampling the board and ranges, building the board's game
(host), solving and evaluating (device), fetching and writing the shard.

Records (one per B) go to `bench/results/datagen_<backend>.jsonl`: B, shards,
iterations, rule, order, steady and overall solves per minute, the first shard's seconds
(compile), the mean host seconds per shard of the run (`sample_s` and `sample_cpu_s`:
sampling the next shard on the background thread, its boards' tables included, wall and
that thread's CPU; `sample_wait_s`: the loop waiting for it, nonzero when the host is
the bottleneck; `build_s`: the tree group's game, once per group; `dispatch_s`;
`wait_s`: waiting for the device; `write_s`), the host preparation of one shard alone
(`prep_s_per_shard`, `prep_cpu_s_per_shard`: wall and CPU of `sample_shard`, one board
per spot; `prep_share`: its wall over the steady seconds per shard; `prep_solves_per_minute`:
the rate the host alone could feed), the device alone (`device_s_per_shard`: one shard
dispatched, solved and labelled with nothing overlapping, `device_solves_per_minute`; in
parts, `solve_s_per_shard` up to the solved states, `labels_s_per_shard` the float64
labels after them, and `result_s_per_shard` the host reading them into the shard's
arrays, which the generator overlaps with the next shard's solve), bytes per spot
on disk, every solve's exploitability summarised (count, min, median, p90, p99, max, in %
of the pot; each one is also in the shards), the load of the machine (`CpuMeter`, load
average) and `--note`. On a CPU host and device share the cores, so the shares there
say little about a GPU run.

    python bench/datagen.py --spots 1024 --shards 12 --iterations 1000           # GPU
    python bench/datagen.py --spots 8192 --shards 12 --pots 6.875,13.75,27.5,55  # GPU, one betting tree
    python bench/datagen.py --spots 16 --shards 4 --iterations 100 --note "loaded 2-core CPU"    # CPU
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import jax
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cfrjax  # noqa: E402
from cfrjax import datagen  # noqa: E402
from common import CpuMeter, append_records, environment  # noqa: E402


def run(spec: str, spots: int, shards: int, iterations: int, rule: str, order: str, seed: int, out: str | None,
        note: str | None, pots: tuple | None = None) -> dict:
    cfg = datagen.DatagenConfig(spec, spots=spots, shards=shards, iterations=iterations, rule=rule, order=order,
                                seed=seed, pots=pots)
    # Host preparation of one shard alone (boards, their tables, ranges: `sample_shard`),
    # after one warm-up: wall and CPU seconds of this process (the tables' threads included).
    prep = []
    for k in range(3):
        t, c = time.perf_counter(), time.process_time()
        spots_k = datagen.sample_shard(cfg, k % shards)
        prep.append((time.perf_counter() - t, time.process_time() - c))
    prep_wall, prep_cpu = (float(np.median([p[j] for p in prep[1:]])) for j in (0, 1))
    folder = out or tempfile.mkdtemp(prefix="cfrjax-bench-datagen-")
    stamps, expl, timings = [], [], []
    meter = CpuMeter()
    t0 = time.perf_counter()
    try:
        with meter:
            for shard in datagen.generate_shards(cfg, folder):
                stamps.append(time.perf_counter())
                expl.append(shard.exploitability_pct_pot)
                timings.append(shard.timings)
                print(f"  shard {shard.index}: {stamps[-1] - t0:.1f} s, median exploitability "
                      f"{np.median(shard.exploitability_pct_pot):.4f}% of the pot", flush=True)
        size = sum(os.path.getsize(datagen.shard_path(folder, i, shards)) for i in range(shards))
    finally:
        if out is None:
            shutil.rmtree(folder, ignore_errors=True)
    if len(stamps) != shards:
        raise RuntimeError(f"{len(stamps)} of {shards} shards written (a folder with shards already there?)")
    # The device alone: one shard solved and labelled again (compiled), nothing overlapping it,
    # in its parts: dispatch and solve (`solve_batch` done), labels (each spot's best
    # responses and values in float64), then the host's reading of the labels (`result()`).
    game = datagen.spot_game(cfg, spots_k.group)
    parts = []
    for _ in range(2):
        t0_ = time.perf_counter()
        pending = datagen.solve_spots(cfg, spots_k, game)
        jax.block_until_ready(pending.states)
        t1_ = time.perf_counter()
        jax.block_until_ready(pending.outputs)
        t2_ = time.perf_counter()
        pending.result()
        parts.append((t2_ - t0_, t1_ - t0_, t2_ - t1_, time.perf_counter() - t2_))
    device_s, solve_s, labels_s, result_s = min(parts)
    e = np.concatenate(expl)
    steady = stamps[-1] - stamps[0] if shards > 1 else None
    host = {k: float(np.mean([t[k] for t in timings[1:] or timings])) for k in timings[0]}
    q = lambda x: float(np.quantile(e, x))  # noqa: E731
    return dict(
        spec=spec, form="public", street="river", spots=spots, shards=shards, iterations=iterations, rule=rule,
        order=order, dtype="float32", pots=list(cfg.pots), stack=cfg.stack, tree_groups=[list(g) for g in cfg.tree_groups],
        steady_solves_per_minute=None if steady is None else 60.0 * (shards - 1) * spots / steady,
        steady_s_per_shard=None if steady is None else steady / (shards - 1),
        overall_solves_per_minute=60.0 * shards * spots / (stamps[-1] - t0), first_shard_s=stamps[0] - t0,
        host_s_per_shard=host, boards_per_shard=spots, prep_s_per_shard=prep_wall, prep_cpu_s_per_shard=prep_cpu,
        prep_share=None if steady is None else prep_wall / (steady / (shards - 1)),
        prep_solves_per_minute=60.0 * spots / prep_wall, device_s_per_shard=device_s, solve_s_per_shard=solve_s,
        labels_s_per_shard=labels_s, result_s_per_shard=result_s, device_solves_per_minute=60.0 * spots / device_s, bytes_per_spot=size / (shards * spots),
        exploitability_pct_pot=dict(count=int(e.size), min=float(e.min()), median=q(0.5), p90=q(0.9), p99=q(0.99),
                                    max=float(e.max()), mean=float(e.mean())),
        load_average=os.getloadavg()[0], note=note, **meter.fields(), **environment())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="hunl_river_full")
    ap.add_argument("--spots", default="1024", help="spots per shard (the solve batch); a comma list runs each")
    ap.add_argument("--shards", type=int, default=12)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--rule", default=cfrjax.rules.DEFAULT_RULE)
    ap.add_argument("--order", default=cfrjax.rules.DEFAULT_ORDER)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="keep the dataset here (default: a temporary folder, removed)")
    ap.add_argument("--note", default=None, help="a label for the records (e.g. the machine's load)")
    ap.add_argument("--pots", default=None,
                    help="the pot grid, chips, comma-separated (default: the spec's grid); e.g. the pots of one "
                         "tree group, so that every shard solves one betting tree")
    ap.add_argument("--results", default=None,
                    help="records file (default bench/results/datagen_<backend>.jsonl)")
    args = ap.parse_args(argv)
    path = args.results or os.path.join(HERE, "results", f"datagen_{jax.default_backend()}.jsonl")
    for B in (int(b) for b in args.spots.split(",")):
        out = None if args.out is None else os.path.join(args.out, f"B{B}")
        pots = None if args.pots is None else tuple(float(p) for p in args.pots.split(","))
        rec = run(args.spec, B, args.shards, args.iterations, args.rule, args.order, args.seed, out, args.note, pots)
        append_records(path, [rec])
        e = rec["exploitability_pct_pot"]
        print(f"{args.spec} B={B}: {rec['steady_solves_per_minute'] or 0:,.0f} solves/min steady "
              f"({rec['overall_solves_per_minute']:,.0f} overall, first shard {rec['first_shard_s']:.1f} s), "
              f"host per shard {rec['host_s_per_shard']}, exploitability median {e['median']:.4f}% "
              f"max {e['max']:.4f}% of the pot over {e['count']} solves; device alone {rec['device_s_per_shard']:.3f} s "
              f"a shard ({rec['device_solves_per_minute']:,.0f} solves/min: solve {rec['solve_s_per_shard']:.3f}, "
              f"labels {rec['labels_s_per_shard']:.3f}; host reading {rec['result_s_per_shard']:.3f}) -> {path}",
              flush=True)


if __name__ == "__main__":
    main()
