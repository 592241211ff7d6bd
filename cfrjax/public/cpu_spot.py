"""A one-board spot's (half-)update on CPU as one XLA piece (the `spot_half` kernel).

Regret matching, the forest's regret pass and the generic updates of a river spot (one
forest, no trunk), bit for bit those of the generic form (`tests/test_spot_half.py`),
without their whole-array steps. `applies` says where it runs; `half` runs it.
"""

from __future__ import annotations

import jax.numpy as jnp

from cfrjax import passes, rules
from cfrjax.kernels import KERNELS
from cfrjax.plan import plan_of
from cfrjax.public import forest, native_calls, tree_passes
from cfrjax.public.game import PublicGame

__all__ = ["applies", "half"]


def applies(game: PublicGame, config, regret, locked, leaf) -> bool:
    first = regret[0] if isinstance(regret, tuple) else regret
    return (plan_of(game).cpu_spot_half and config is not None and KERNELS["spot_half"].supports(config) and locked is None
            and leaf is None and game.leaf_fn is None and game.num_boards == 1 and not len(game.trunk_levels)
            and bool(game.slot_runs) and first.ndim == 2 and game.weights.ndim == 2)


def half(game: PublicGame, config, regret, avg, comp, player, b_t, w_new, average):
    """One (half-)update of `player`'s slots (None: both) of a one-board spot (a river
    spot: one forest, no trunk) on CPU: `(regret, avg, avg_comp)` new, each whole or
    `player`'s half as given (`cfrjax.iteration._half`'s arrays: `regret` after this
    iteration's discount).

    The arithmetic of regret matching, `regret_pass` and the generic updates, bit for bit
    (the tests compare them), without their whole-array steps: each player's strategy is
    matched from its own rows (under alternating order the generic form joins the
    players' halves to match them, then adds the sentinel row, two copies of the slot
    arrays), and the forest (`forest.board`) reads it directly. A turn spot's boards looped
    this way (each board matching and updating its own rows in the loop) ran slower than
    the generic form: per board, the matching's small slices cost more in dispatch than
    the whole-array passes they replace (measurements: `bench/README.md`, "Measurements
    behind the public form's choices"). `average`: `(mean, comp,
    y, b_t, w_t) -> (mean, comp)` (`cfrjax.iteration._average_update`: compensated in
    float32, the plain running mean in float64). Where the native library builds,
    `native_calls.half` runs instead (it covers these spots and more); this is the form
    without it."""
    lanes = tree_passes.lanes_of(player)
    split = game.slot_split
    halves = isinstance(regret, tuple)
    dt = (regret[0] if halves else regret).dtype
    rows = regret if halves else (regret[:split], regret[split:])
    xs = {k: v[0] for k, v in forest.board_tables(game, True).items()}
    for q, (lo, hi) in enumerate(((0, split), (split, game.num_slots))):
        runs = passes._runs_within(game.slot_runs, lo, hi)
        xs[f"sig{q}"] = passes._matched_runs(runs, jnp.maximum(rows[q], 0.0), game.slot_uniform[lo:hi].astype(dt))
    root = game.weights.astype(dt)[None]
    if plan_of(game).native_forest and native_calls.applies(game, True, ()):
        whole = regret[player] if halves else regret
        _, new, y = native_calls.boards(game, ((xs["sig0"], 0), (xs["sig1"], 0)), whole,
                                   {p: 0 if halves else (0, split)[p] for p in lanes}, root, lanes)
    else:
        for p in lanes:
            xs[f"regret{p}"] = rows[p]
        out = forest.board(game, xs, root, xs["sig0"], lanes, "regret", True)
        new, y = (jnp.concatenate([out[f"{k}{p}"] for p in lanes]) for k in ("regret", "y"))
    new = rules.after_update(config, new)
    if halves:
        mean, low = average(avg[player], comp[player].astype(dt), y, b_t, w_new)
        return new, mean, low.astype(comp[player].dtype)
    mean, low = average(avg, comp.astype(dt), y, b_t, w_new)
    return new, mean, low.astype(comp.dtype)
