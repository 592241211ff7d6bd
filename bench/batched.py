"""Batched throughput: `vmap` over B subgames sharing one tree, per game of the suite.

    python bench/batched.py [--specs .carry/specs] [--games all] [--batches 1,4,16,...,4096]
                            [--budget-s 300] [--out bench/results/batched.jsonl]

For each game and batch size B the B subgames share the compiled tree (index arrays) and
differ in their float leaves (`cfrjax.retarget.batch_axes`-style vmap axes, restricted
to the leaves that actually differ):
  * poker subgames: random root ranges (`cfrjax.poker.set_root_ranges`, uniform weights on the
    built support): `edge_prob`, `chance_reach`, `dec_chance`, `template` per subgame;
  * other games: payoffs perturbed by a factor `1 + 0.1 u`, `u ~ U(-1, 1)` per terminal
    (`cfrjax.set_payoffs`): `payoff`, `template` per subgame.
CFR+ simultaneous float32, `--iterations` per call; throughput is subgame-iterations per
second (B x iterations / median call time). `--layouts` picks the arms: `last`
(`cfrjax.solve_batch`, the batch axis moved last for the scan: the library's batched
path) and `vmap` (`jax.vmap` of `cfrjax.solve`, batch axis first), recorded as `layout`.

The same run measures the device's copy bandwidth (a jitted `x * 1.0001` over a
`--bandwidth-mib` float32 array: one read and one write per element) and records, per
game, the bytes-per-iteration model (`bytes_model`): what one simultaneous CFR+
iteration must read or write per subgame, counting each operand element once (gathers
as one read per element), float32:

    regret matching   3S + 2I    read regret, write sigma, set totals (write, read)
    forward           6N         per node: parent reach (2 lanes), sigma (2), reach write (2)
    backward          4N         template, child value, sigma, value write
    regrets           3M + 2S    opponent reach, child and parent values; regret r/w
    average           4S         own reach, sigma, average r/w
    CFR+ floor        2S         regret r/w

plus the index arrays (int32, 4N + 4M + 2S elements), shared by the batch and read once
per batched iteration. `achieved_gbs` is (B x per-subgame bytes + index bytes) x
iterations / time; `bandwidth_fraction` divides it by the measured copy bandwidth.

Budget: each game gets a fair share of the remaining `--budget-s`; the batch ladder of a
game stops when its share is spent, when the next size is projected to exceed it, when
`cfrjax.memory` plans more memory than the device has free, or at `--max-batch`.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import functools  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import cfrjax  # noqa: E402
from cfrjax.memory import MemoryPlanError, check_fits, executable_memory, plan_from_sizes  # noqa: E402
from cfrjax.locking import drop_idle_locks  # noqa: E402
from common import append_records, environment, peak_memory_bytes, wall_times  # noqa: E402
from suite import build_spec, is_poker, load_suite, select  # noqa: E402

CONFIG = dict(rule="cfr+", order="simultaneous", averaging="linear", dtype="float32")
POKER_FIELDS = ("edge_prob", "chance_reach", "dec_chance", "template")
PAYOFF_FIELDS = ("payoff", "template")


def bytes_model(game, itemsize: int = 4) -> dict:
    """Bytes one simultaneous CFR+ iteration reads/writes (see the module docstring)."""
    N, M, S, I = game.num_nodes, game.num_decision_edges, game.num_slots, game.num_infosets
    floats = dict(regret_matching=3 * S + 2 * I, forward=6 * N, backward=4 * N, regrets=3 * M + 2 * S,
                  average=4 * S, floor=2 * S)
    per_subgame = itemsize * sum(floats.values())
    index = 4 * (4 * N + 4 * M + 2 * S)
    return dict(model_bytes_per_subgame_iter=per_subgame, model_index_bytes_per_iter=index,
                model_terms={k: itemsize * v for k, v in floats.items()})


def copy_bandwidth(mib: int, repeats: int = 10) -> dict:
    n = mib * 2**20 // 4
    x = jnp.ones((n,), jnp.float32)
    f = jax.jit(lambda v: v * 1.0001)
    jax.block_until_ready(f(x))
    times = wall_times(functools.partial(f, x), repeats)
    del x
    t = statistics.median(times)
    return dict(copy_bytes=2 * n * 4, copy_s=t, copy_gbs=2 * n * 4 / t / 1e9, copy_gbs_max=2 * n * 4 / min(times) / 1e9)


def axes_for(game, fields):
    return cfrjax.batch.batch_specs(game, 0, None, fields)


def make_batch(game, entry, batch: int, seed: int = 0):
    """B retargeted copies of `game` (batched leaves) and their vmap axes."""
    key = jax.random.PRNGKey(seed)
    if is_poker(entry):
        from cfrjax.games.poker import root_deals
        h0, h1 = root_deals(game)
        k0, k1 = jax.random.split(key)
        r0 = jnp.zeros((batch, 1326), game.template.dtype).at[:, np.unique(h0)].set(
            jax.random.uniform(k0, (batch, np.unique(h0).size), minval=0.1, maxval=1.0))
        r1 = jnp.zeros((batch, 1326), game.template.dtype).at[:, np.unique(h1)].set(
            jax.random.uniform(k1, (batch, np.unique(h1).size), minval=0.1, maxval=1.0))
        fields = POKER_FIELDS
        games = jax.vmap(cfrjax.poker.set_root_ranges, (None, 0, 0), axes_for(game, fields))(game, r0, r1)
    else:
        fields = PAYOFF_FIELDS
        u = jax.random.uniform(key, (batch, game.num_nodes), game.template.dtype, -1.0, 1.0)
        games = jax.vmap(lambda g, uu: cfrjax.set_payoffs(g, g.payoff * (1 + 0.1 * uu)), (None, 0),
                         axes_for(game, fields))(game, u)
    return games, axes_for(game, fields), fields


def _final_state(result):
    return result[0] if isinstance(result, tuple) else result  # (state, trace) or state


def run_batch(game, entry, batch, iterations, repeats, layout="last"):
    games, axes, fields = make_batch(game, entry, batch)
    state = cfrjax.init(game, **CONFIG)
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape).copy(), state)
    if layout == "last":   # as `solve_batch` runs it (no lock: none read)
        states = drop_idle_locks(states)[0]
        lowered = cfrjax.batch._solve_batch.lower(games, states, iterations, tuple(fields))
    else:
        f = jax.jit(jax.vmap(lambda g, s: _final_state(cfrjax.solve(g, s, iterations)), in_axes=(axes, 0)))
        lowered = f.lower(games, states)
    t0 = time.perf_counter()
    compiled = lowered.compile()
    compile_s = time.perf_counter() - t0
    xla = {f"xla_{k}": v for k, v in executable_memory(compiled).items()}
    jax.block_until_ready(compiled(games, states))
    times = wall_times(lambda: compiled(games, states), repeats)
    t = statistics.median(times)
    return dict(layout=layout, **xla, compile_s=compile_s, call_s=t, call_s_min=min(times), call_s_max=max(times),
                ms_per_iter=1e3 * t / iterations, subgame_iters_per_s=batch * iterations / t,
                batched_fields=list(fields), repeats=repeats, iterations=iterations), time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--specs", default=".carry/specs")
    ap.add_argument("--games", default="all")
    ap.add_argument("--batches", default="1,4,16,64,256,1024,4096")
    ap.add_argument("--max-batch", type=int, default=4096)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--layouts", default="last", help="comma list of: last (cfrjax.solve_batch), vmap")
    ap.add_argument("--budget-s", type=float, default=300.0)
    ap.add_argument("--bandwidth-mib", type=int, default=1024)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "batched.jsonl"))
    args = ap.parse_args()
    start = time.perf_counter()
    env = environment()
    bw = copy_bandwidth(args.bandwidth_mib)
    append_records(args.out, [dict(bench="bandwidth", mib=args.bandwidth_mib, **bw, **env)])
    print(f"copy bandwidth {bw['copy_gbs']:.1f} GB/s (read + write of {args.bandwidth_mib} MiB)", flush=True)
    entries = select(load_suite(), args.games)
    batches = [int(b) for b in args.batches.split(",") if int(b) <= args.max_batch]
    layouts = args.layouts.split(",")
    bad = [x for x in layouts if x not in ("last", "vmap")]
    if bad:
        ap.error(f"unknown layout(s) {bad}; allowed: last, vmap")
    for gi, entry in enumerate(entries):
        remaining = args.budget_s - (time.perf_counter() - start)
        if remaining <= 0:
            print(f"budget {args.budget_s:.0f} s spent: skipping {entry['name']} and later", flush=True)
            break
        share = remaining / (len(entries) - gi)
        g_start = time.perf_counter()
        game = cfrjax.compile.compile_game(build_spec(entry, args.specs))
        model = bytes_model(game)
        print(f"{entry['name']:16s} N {game.num_nodes:9,d}  share {share:.0f} s  model "
              f"{model['model_bytes_per_subgame_iter'] / 1e6:.2f} MB/subgame-iter", flush=True)
        last_cost, last_compile, prev_b = None, 0.0, None
        for b in batches:
            spent = time.perf_counter() - g_start
            # next cost ~ compile (size-independent) + timed calls (linear in B)
            if last_cost is not None and spent + last_compile + (last_cost - last_compile) * b / prev_b > share:
                print(f"    stop before B={b}: time share ({spent:.0f} s of {share:.0f} s spent)", flush=True)
                break
            fields = POKER_FIELDS if is_poker(entry) else PAYOFF_FIELDS
            plan = plan_from_sizes(game.num_nodes, game.num_decision_edges, game.num_slots, game.num_infosets,
                                   path_width=game.path_slot.shape[1], batch=b, dtype="float32", batched_fields=fields)
            try:
                fit = check_fits(plan)
            except MemoryPlanError as e:
                print(f"    stop at B={b}: {str(e)[:160]}", flush=True)
                break
            cost, failed = 0.0, False
            for layout in layouts:
                try:
                    t, c = run_batch(game, entry, b, args.iterations, args.repeats, layout)
                except Exception as e:  # out of memory despite the plan
                    print(f"    stop at B={b} ({layout}): {type(e).__name__}: {str(e)[:160]}", flush=True)
                    failed = True
                    break
                cost += c
                moved = (b * model["model_bytes_per_subgame_iter"] + model["model_index_bytes_per_iter"]) * args.iterations
                achieved = moved / t["call_s"] / 1e9
                rec = dict(bench="batched", game=entry["name"], title=entry["title"], **CONFIG, backend_arm="cfrjax",
                           batch=b, **game.sizes(), **t, **{k: v for k, v in model.items()},
                           achieved_gbs=achieved, copy_gbs=bw["copy_gbs"], bandwidth_fraction=achieved / bw["copy_gbs"],
                           plan_bytes=int(plan.total_bytes), free_bytes=fit.get("free"),
                           peak_bytes=peak_memory_bytes(), **env)
                append_records(args.out, [rec])
                print(f"    B={b:5d} {layout:4s} {t['subgame_iters_per_s']:12.4g} subgame-it/s  {t['ms_per_iter']:.3f} "
                      f"ms/batched-it  {achieved:7.1f} GB/s ({100 * rec['bandwidth_fraction']:.1f}% of copy)  "
                      f"compile {t['compile_s']:.1f} s", flush=True)
            if failed:
                break
            last_cost, last_compile, prev_b = cost, t["compile_s"] * len(layouts), b
        del game
    print(f"batched done in {time.perf_counter() - start:.0f} s -> {args.out}", flush=True)


if __name__ == "__main__":
    main()
