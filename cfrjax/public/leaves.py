"""A depth-limited public game's leaf values, from its leaf function (`cfrjax.public.depth`).

The leaf function answers pot-relative counterfactual values for normalised ranges;
`leaf_values` turns them into the passes' units (chance, `1 / Z`, the opponent's reach
mass, the leaf's pot) and sums them over the boards into the trunk's chance leaves.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax.passes import lift
from cfrjax.public import tree_passes
from cfrjax.public.game import PublicGame

__all__ = ["leaf_values"]


def leaf_values(game: PublicGame, roots, lanes, leaf=None):
    """A depth-limited game's leaf values `[R, L, H, *batch]` of `lanes`' players, summed
    over the boards: the leaf function (`cfrjax.public.depth`) called once on every leaf
    `l = b R + k` (board `b`, root `k`) with both players' normalised ranges there, its
    pot-relative counterfactual values turned into the passes' units: times chance, `1/Z`,
    the opponent's reach mass at the leaf and the leaf's pot, own dead hands 0.

    Args:
      roots: `[R, 2, H, *batch]` both players' reach (range weight included) at the
        trunk's chance leaves (the nodes that deal the next card).
      leaf: `None` (the stateless `leaf_fn`), or `(state, coef)` in a solve with a
        stateful leaf function: its state (`SolverState.leaf`) and this (half-)iteration's
        averaging coefficient `b_t / W_t` (`[*batch]`); `game.leaf_update` is called
        instead, told each player's reach mass at every leaf and `coef` for `lanes`' players
        (0 for the others), and the values come back with its new state.
    """
    B, R, H = game.num_boards, roots.shape[0], game.num_hands
    batch = roots.shape[3:]
    nd = 4 + len(batch)
    dt = roots.dtype
    data = game.leaf_data
    live = game.board_live.astype(dt)                                          # [B, H]
    reach = roots[None] * lift(live[:, None, None], nd)                        # [B, R, 2, H, *b]
    reach = reach.reshape((B * R, 2, H) + batch)
    mass = jnp.sum(reach, axis=2)                                              # [L, 2, *b]
    rho = reach / jnp.where(mass > 0, mass, 1.0)[:, :, None]

    def call(r0, r1, *carry):
        if not carry:
            v0, v1 = game.leaf_fn(data, r0, r1)
            new = None
        else:
            state, m, w = carry
            v0, v1, new = game.leaf_update(data, r0, r1, state, {"mass": m, "weight": w})
        return jnp.stack([jnp.asarray(v0, dt), jnp.asarray(v1, dt)], axis=1), new   # [L, 2, H]
    args = (rho[:, 0], rho[:, 1])
    if leaf is not None:
        state, coef = leaf
        on = jnp.asarray([p in lanes for p in (0, 1)], dt)
        args += (state, mass, lift(on, 1 + len(batch)) * jnp.broadcast_to(jnp.asarray(coef, dt), batch)[None])
    for _ in batch:
        call = jax.vmap(call, in_axes=-1, out_axes=-1)
    vals, new = call(*args)                                                   # [L, 2, H, *b]
    vals = jax.lax.slice_in_dim(vals, lanes[0], lanes[-1] + 1, axis=1)
    opp = tree_passes.opponent(mass, lanes, 1)                                            # [L, lanes, *b]
    scale = opp * lift(data["chance"].astype(dt) * data["pot"].astype(dt), nd - 2) / tree_passes.lead(game.norm.astype(dt), 2)
    vals = vals * scale[:, :, None] * lift(jnp.repeat(live, R, axis=0)[:, None], nd - 1)
    vals = jnp.sum(vals.reshape((B, R) + vals.shape[1:]), axis=0)
    return vals if leaf is None else (vals, new)
