"""A whole public-form pass (`sweep`): trunk forward, every board's forest, trunk backward.

The trunk runs first (forward), then every board's forest (`cfrjax.public.forest`, or
the native call, `cfrjax.public.native_calls`, or a depth-limited game's leaf function,
`cfrjax.public.leaves`), then the trunk backward from the boards' summed root values (on
a flop summed per turn card). `regret_pass` is the form's regret pass:
`r[slot, h] = v(child) - v(node)` for the acting player, `y` = own reach (range weight
included) at the slot's node times the slot's strategy.
"""

from __future__ import annotations

import jax.numpy as jnp

from cfrjax.passes import lift
from cfrjax.plan import plan_of
from cfrjax.public import forest, leaves, native_calls, terminal_values, tree_passes
from cfrjax.public.game import PublicGame

__all__ = ["regret_pass", "sweep"]


def sweep(game: PublicGame, sigma_ext, lanes: tuple, mode: str, cpu: bool, regret=None, leaf=None):
    """Trunk forward, every board's forest, trunk backward.

    Returns `(root values [L, H, *batch], new regret, y)` (the last two for `mode ==
    "regret"`, for `lanes`' slots in slot order), and the new leaf state when `leaf` (a
    stateful leaf function's `(state, coef)`, `leaf_values`) is given; for `mode ==
    "nodes"` the dict of `node_values`, for `"trunk_nodes"` its trunk entries alone
    (`trunk_values`: a game with a trunk)."""
    dt = sigma_ext.dtype
    weights = game.weights.astype(dt)
    batch = jnp.broadcast_shapes(sigma_ext.shape[2:], weights.shape[2:], jnp.shape(game.norm))
    nd = 3 + len(batch)
    H = game.num_hands
    (t0, t1), split = game.trunk_slots, game.slot_split
    root = jnp.broadcast_to(lift(weights, nd - 1)[None], (1, 2, H) + batch)
    trunk = tree_passes.Tree(game, "trunk")
    has_trunk = len(trunk.levels) > 0
    if has_trunk:
        reach1 = tree_passes.forward(trunk, sigma_ext, root, nd)
        forest_root = reach1[game.root_chance]
    else:
        forest_root = root
    offsets = {0: 0, 1: split}
    base = {p: offsets[p] - offsets[lanes[0]] for p in lanes}
    want = mode == "regret"
    if want:
        regret = jnp.broadcast_to(regret, regret.shape[:2] + batch) if regret.ndim - 2 < len(batch) else regret
    # "trunk_nodes": the trunk's nodes alone (reports at a flop's trunk nodes): the forests
    # give their roots' values, as an evaluation's, not every node's
    board_mode = "ev" if mode == "trunk_nodes" else mode
    board = lambda x: forest.board(game, x, forest_root, sigma_ext, lanes, board_mode, cpu)   # noqa: E731
    roots = forest_root if game.board_groups else None
    if game.leaf_fn is not None:   # depth-limited: the leaves' values come from the leaf function
        if mode == "nodes":
            raise ValueError(f"{game.name}: node values of a depth-limited game are not available (its forest "
                             f"is the leaf function)")
        chance = leaves.leaf_values(game, forest_root, lanes, leaf)
        if leaf is not None:
            chance, leaf = chance
        if mode == "br_ev":
            chance = jnp.concatenate([chance, chance], axis=1)
        new = y = None
        if want:
            t_of = {0: t0, 1: t1}
            new = jnp.concatenate([regret[base[p]:base[p] + t_of[p]] for p in lanes])
            y = jnp.zeros(new.shape, sigma_ext.dtype)
    elif mode == "nodes":
        mapped = forest.map_boards(game, board, sigma_ext, lanes, None, base, cpu, roots)
        chance, new, y = forest.root_sum(game, mapped["root"]), None, None
        nodes = dict(forest_reach=mapped["reach"], forest_values=mapped["values"],
                     trunk_reach=jnp.zeros((0, 2, H) + batch, dt), trunk_values=jnp.zeros((0, 2, H) + batch, dt))
    elif want and plan_of(game).native_forest and native_calls.applies(game, cpu, batch):
        (t0, t1) = game.trunk_slots
        roffs = {p: base[p] + (t0 if p == 0 else t1) for p in lanes}
        r, new, y = native_calls.boards(game, ((sigma_ext, t0), (sigma_ext, split + t1)), regret, roffs, forest_root,
                                   lanes, trunk=(t0, t1))
        chance = forest.root_sum(game, r)
    else:
        chance, new, y = forest.boards(game, board, sigma_ext, lanes, regret if want else None, base, cpu, roots)
    if not has_trunk:
        return nodes if mode == "nodes" else (chance[0], new, y)   # (a depth-limited game has a trunk)
    inv_z = tree_passes.lead(1.0 / game.norm.astype(dt), 3)
    tvf = terminal_values.fold_values(game, reach1, game.trunk_fold_node, game.trunk_fold_payoff, lanes, inv_z, cpu,
                       game.trunk_fold_values)
    if game.trunk_dealt is not None:    # a flop's turn-street folds: the own hand's card removal
        tvf = tvf * tree_passes.alive(game.hand_cards, game.trunk_dealt[game.trunk_fold_node], nd, dt, lanes)
    if mode == "br_ev":
        tvf = jnp.concatenate([tvf, tvf], axis=1)
    tv = jnp.concatenate([tvf, chance, jnp.zeros((1,) + chance.shape[1:], dt)])
    if mode in tree_passes.EVALUATION_MODES:
        return tree_passes.root_values(trunk, sigma_ext, tv, lanes, tree_passes.pulled_sums(game, cpu), mode)[0], \
            None, None
    vals1 = tree_passes.backward(trunk, sigma_ext, tv, lanes, tree_passes.pulled_sums(game, cpu),
                                 "ev" if mode == "trunk_nodes" else mode)
    if mode == "nodes":
        return dict(nodes, trunk_reach=reach1, trunk_values=vals1)
    if mode == "trunk_nodes":
        return dict(trunk_reach=reach1, trunk_values=vals1)
    if not want:
        return vals1[0], None, None
    for i, p in enumerate(lanes):
        t = t0 if p == 0 else t1
        if not t:
            continue
        lo = 0 if p == 0 else t0
        node, child = game.trunk_slot_node[lo:lo + t], game.trunk_slot_child[lo:lo + t]
        b0 = base[p]
        new = new.at[b0:b0 + t].add(vals1[child, i] - vals1[node, i])
        y = y.at[b0:b0 + t].set(reach1[node, p] * lift(sigma_ext[offsets[p]:offsets[p] + t], nd - 1))
    return (vals1[0], new, y) + (() if leaf is None else (leaf,))


def regret_pass(game: PublicGame, sigma_ext, regret, player, leaf=None):
    """One forward and one backward pass under `sigma_ext` `[S + 1, H, *batch]`.

    Args:
      game: the public game.
      sigma_ext: current strategy of all slots, sentinel row `S` all ones.
      regret: `[hi - lo, H, *batch]` cumulative regret of `player`'s slots
        (`cfrjax.passes.slot_range`).
      player: 0, 1, or `None` (both, from the same profile).
      leaf: a stateful leaf function's `(state, coef)` (`leaf_values`), or `None`.

    Returns:
      `(regret + r, y)`: `r[slot, h]` = counterfactual value of the slot's child minus
      its node's, for hand `h` of the acting player (opponent reach with its range
      weight, times chance, over `Z`; the own range weight not included); `y [hi - lo,
      H, *batch]` = own reach (range weight included) at the slot's node times
      `sigma_ext[slot]`; and the leaf function's new state when `leaf` is given.
    """
    lanes = tree_passes.lanes_of(player)
    return tree_passes.on_platform(lambda cpu: sweep(game, sigma_ext, lanes, "regret", cpu, regret, leaf)[1:])
