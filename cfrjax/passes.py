"""The tree passes of one iteration, over a `CompiledGame` (paper, section 4.2 and 4b).

Each pass is a static Python loop over the D depth levels, so it traces to a fixed
sequence of gathers, elementwise products and sorted segment sums: XLA sees the whole
schedule and the loop never runs on the host per iteration.

Strategy vectors passed in are *extended*: `[S + 1]`, with the sentinel entry (index S)
equal to one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax.game import CompiledGame


def extend(sigma):
    """`[S]` strategy -> `[S + 1]` with the sentinel slot pinned to one."""
    return jnp.concatenate([sigma, jnp.ones((1,), sigma.dtype)])


def segment_sum_slots(game: CompiledGame, x):
    """Per-information-set sums of a slot vector, broadcast back to the slots: `[S] -> [S]`."""
    totals = jax.ops.segment_sum(x, game.slot_infoset, num_segments=game.num_infosets, indices_are_sorted=True)
    return totals[game.slot_infoset]


def regret_matching(game: CompiledGame, regret):
    """Regret matching: positive regrets normalized per information set, uniform if none. `[S] -> [S]`."""
    pos = jnp.maximum(regret, 0.0)
    total = segment_sum_slots(game, pos)
    safe = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, pos / safe, game.slot_uniform.astype(regret.dtype))


def reach(game: CompiledGame, sigma_ext):
    """Forward pass: both players' own reach at every node, `[2, N]` (chance excluded).

    Level by level, `reach[p, c] = reach[p, parent(c)] * sigma_ext[lane_slot[p, c]]`; the
    children of a level are contiguous, so each level is one gather and one product.
    """
    ls = game.level_start
    levels = [jnp.ones((2, 1), sigma_ext.dtype)]
    for d in range(1, len(ls) - 1):
        lo, hi = ls[d], ls[d + 1]
        par = game.parent[lo:hi] - ls[d - 1]
        levels.append(levels[-1][:, par] * sigma_ext[game.lane_slot[:, lo:hi]])
    return jnp.concatenate(levels, axis=1)


def values(game: CompiledGame, sigma_ext, template=None):
    """Backward pass: player-0 values at every node, `[N]`.

    `v(h) = template(h) + sum over children c of sigma_ext[val_slot[c]] * v(c)`, one sorted
    segment sum per level. With folded chance the values carry the chance reach `pi_c(h)`
    (paper, Proposition 1: chance enters only through the template); otherwise chance
    edges weight their child by `edge_prob` and values are expectations given `h`.
    """
    template = game.template if template is None else template
    template = template.astype(sigma_ext.dtype)
    edge_prob = game.edge_prob.astype(sigma_ext.dtype)
    ls = game.level_start
    last = len(ls) - 2
    vals = [template[ls[last]:ls[last + 1]]]
    for d in range(last - 1, -1, -1):
        lo, hi, chi = ls[d], ls[d + 1], ls[d + 2]
        weight = sigma_ext[game.val_slot[hi:chi]]
        if not game.chance_folded:
            weight = edge_prob[hi:chi] * weight
        contrib = weight * vals[-1]
        seg = game.parent[hi:chi] - lo
        vals.append(template[lo:hi] + jax.ops.segment_sum(contrib, seg, num_segments=hi - lo, indices_are_sorted=True))
    return jnp.concatenate(vals[::-1])


def accumulate_regret(game: CompiledGame, regret, reach_flat, vals, lo: int, hi: int, slot_lo: int):
    """Add this iteration's regrets of decision edges `[lo, hi)` into `regret` (its slots
    start at `slot_lo`).

    Per edge `e = (h, a, h')`: `s(e) * reach_opp(h) * (v(h') - v(h))` (times `pi_c(h)` when
    chance is not folded), paper eq. (instregret). Since `v(h) = sum_a sigma(a) v(h.a)`, the
    sum over an information set's members is `cfv(I, a) - cfv(I)`. The edges are added one
    by one into the cumulative regret (a scatter-add, in member order), as OpenSpiel does.
    """
    child, par = game.dec_child[lo:hi], game.dec_parent[lo:hi]
    opp = reach_flat[game.dec_opp[lo:hi]]
    if not game.chance_folded:
        opp = opp * game.dec_chance[lo:hi].astype(vals.dtype)
    r = game.dec_sign[lo:hi].astype(vals.dtype) * (opp * (vals[child] - vals[par]))
    return regret.at[game.dec_slot[lo:hi] - slot_lo].add(r, indices_are_sorted=True)


def counterfactual_action_values(game: CompiledGame, reach_flat, vals, player: int):
    """`cfv_i(I, a) = sum_{h in I} pi_{-i}(h) v_i(h.a)` for player `player`'s slots, in its units."""
    lo, hi = (0, game.dec_split) if player == 0 else (game.dec_split, game.num_decision_edges)
    slot_lo, slot_hi = (0, game.slot_split) if player == 0 else (game.slot_split, game.num_slots)
    child = game.dec_child[lo:hi]
    opp = reach_flat[game.dec_opp[lo:hi]]
    if not game.chance_folded:
        opp = opp * game.dec_chance[lo:hi].astype(vals.dtype)
    q = game.dec_sign[lo:hi].astype(vals.dtype) * (opp * vals[child])
    return jax.ops.segment_sum(q, game.dec_slot[lo:hi] - slot_lo, num_segments=slot_hi - slot_lo,
                               indices_are_sorted=True)
