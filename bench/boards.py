"""Boards as data: what a batch of river spots on different boards costs, host and device.

For each `--spots` value B, on `--spec`'s river tree (default `hunl_river_full`) at the
datagen reference pot, with B random DeepStack-like ranges (uniform random weights here:
the cost does not depend on them):

* **host**: `cfrjax.games.poker.boards.board_tables` of B random boards (hand lists,
  7-card strengths, showdown tables; chunks on threads), wall and process CPU seconds,
  the median of `--repeats` after one warm-up, and the boards per minute that rate feeds;
* **solve** (the device): one `solve_batch` of `--iterations` iterations (compiled before timing,
  the best of `--repeats`) of the B spots (a) on one shared board with the game's own
  terminal form (dense matrices on an accelerator, sorted on a CPU), and (b) on B
  different boards (`set_boards`: per-spot showdown tables, sorted form), as solves of
  `--iterations` per minute.

Records go to `bench/results/boards_<backend>.jsonl`.

    python bench/boards.py --spots 16 --iterations 100 --note "loaded 2-core CPU"     # CPU
    python bench/boards.py --spots 1024,4096 --iterations 1000                      # GPU
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cfrjax import datagen  # noqa: E402
from cfrjax.batch import init_batch, solve_batch  # noqa: E402
from cfrjax.datagen.solve import _with_ranges  # noqa: E402
from cfrjax.games.poker import boards as pb  # noqa: E402
from common import CpuMeter, append_records, environment  # noqa: E402


def _timed(fn, repeats):
    out = []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - t, time.process_time() - c))
    return out


def random_spots(B: int, seed: int = 0):
    """`(boards [B, 5], ranges [B, 2, 1081] float32)`: uniform random boards and random
    normalised ranges (the cost of a solve does not depend on them)."""
    rng = np.random.default_rng(seed)
    boards = np.sort(np.argsort(rng.random((B, 52)), axis=1)[:, :5], axis=1)
    w = rng.random((B, 2, pb.RIVER_HANDS)).astype(np.float32)
    return boards, w / w.sum(-1, keepdims=True)


def batch_games(game, boards, w):
    """`(one shared board, a board per spot)`: the river `game` batched over the ranges `w`,
    on its own board and on `boards` (`set_boards`)."""
    shared = _with_ranges(game, jnp.asarray(w[:, 0]), jnp.asarray(w[:, 1]))
    return shared, pb.set_boards(shared, pb.board_tables(boards))


def run(spec: str, B: int, iterations: int, repeats: int, note: str | None) -> dict:
    cfg = datagen.DatagenConfig(spec, spots=B, iterations=iterations)
    boards, w = random_spots(B)
    pb.board_tables(boards[:8])                                                        # warm-up
    host = _timed(lambda: pb.board_tables(boards), repeats)
    host_wall, host_cpu = (float(np.median([h[j] for h in host])) for j in (0, 1))
    game = dataclasses.replace(datagen.spot_game(cfg, 0), labels=None)
    shared, per_spot = batch_games(game, boards, w)
    states = init_batch(game, B, rule=cfg.rule, order=cfg.order, dtype=cfg.dtype)
    device = {}
    meter = CpuMeter()
    with meter:
        for name, g in (("one_board", shared), ("board_per_spot", per_spot)):
            jax.block_until_ready(solve_batch(g, states, iterations))                # compile
            t = min(x[0] for x in _timed(lambda: jax.block_until_ready(solve_batch(g, states, iterations)), repeats))
            device[name] = dict(solve_s=t, solves_per_minute=60.0 * B / t)
    return dict(spec=spec, form="public", street="river", spots=B, iterations=iterations, rule=cfg.rule,
                order=cfg.order, dtype=cfg.dtype, terminals_one_board="dense" if shared.dense_showdown is not None
                and jax.default_backend() != "cpu" else "sorted",
                host_tables_s=host_wall, host_tables_cpu_s=host_cpu, host_boards_per_minute=60.0 * B / host_wall,
                solve=device, per_spot_slowdown=device["board_per_spot"]["solve_s"] / device["one_board"]["solve_s"],
                repeats=repeats, load_average=os.getloadavg()[0], note=note, **meter.fields(), **environment())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="hunl_river_full")
    ap.add_argument("--spots", default="1024", help="spots (and boards) per batch; a comma list runs each")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--note", default=None)
    ap.add_argument("--results", default=None, help="records file (default bench/results/boards_<backend>.jsonl)")
    args = ap.parse_args(argv)
    path = args.results or os.path.join(HERE, "results", f"boards_{jax.default_backend()}.jsonl")
    for B in (int(b) for b in args.spots.split(",")):
        rec = run(args.spec, B, args.iterations, args.repeats, args.note)
        append_records(path, [rec])
        d = rec["solve"]
        print(f"B={B}: host tables {rec['host_tables_s']:.3f} s ({rec['host_boards_per_minute']:,.0f} boards/min, "
              f"{rec['host_tables_cpu_s']:.3f} CPU s); device {d['one_board']['solves_per_minute']:,.0f} solves/min "
              f"on one board ({rec['terminals_one_board']}), {d['board_per_spot']['solves_per_minute']:,.0f} with a "
              f"board per spot (x{rec['per_spot_slowdown']:.2f} time) -> {path}", flush=True)


if __name__ == "__main__":
    main()
