"""The boards' forests of a public-form pass: one board (`board`), and all of them mapped.

Below the trunk every board `b` (a river card, or a flop's turn card) has its own copy of
the forest: `board` runs its forward pass, terminals, backward pass and its slots'
regrets. `boards` runs it on every board (`map_boards`: on CPU a loop, each board's
arrays staying in cache, where all boards at once would stream through memory; elsewhere
`vmap`, or a loop over groups of the plan's `boards_at_once`) and sums the boards' root
values into the trunk's chance leaves (`root_sum`; on a flop per turn card,
`board_group`). `board_tables` and `board_inputs` slice a board's
tables, live hands, strategy and regret rows out of the game's board-major arrays.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax.passes import lift
from cfrjax.plan import plan_of
from cfrjax.public import terminal_values, terminals, tree_passes
from cfrjax.public.game import PublicGame

__all__ = ["board", "board_inputs", "board_tables", "boards", "map_boards", "root_sum"]


def board(game: PublicGame, xs, root, sigma_ext, lanes, mode: str, cpu: bool):
    """One board's forest: values at its roots (chance included), and for `mode ==
    "regret"` the new regrets and average terms of its slots, per lane; for `mode ==
    "nodes"` the reach and values of all its nodes (`node_values`)."""
    if "root" in xs:    # a flop's board: the roots below its turn card
        root = xs["root"]
    nd = root.ndim
    dt = root.dtype
    tree = tree_passes.Tree(game, "forest")
    s0, s1 = game.forest_slots
    if game.player_lists:   # each lane its own list: [2, H] per board
        live = lift(xs["live"].astype(dt)[None], nd)                        # [1, 2, H]
        root = root * live
        live = live[:, lanes[0]:lanes[-1] + 1]
    elif game.dealt:
        live = lift(xs["live"].astype(dt)[None, None], nd)                  # [1, 1, H]
        root = root * live
    ones = jnp.ones((1,) + xs["sig0"].shape[1:], sigma_ext.dtype)
    sig = jnp.concatenate([xs["sig0"], xs["sig1"], ones])                   # [s0 + s1 + 1, H, *b]
    reach = tree_passes.forward(tree, sig, root, nd)
    inv_z = tree_passes.lead(1.0 / game.norm.astype(dt), 3)
    sums = None
    if terminals.dense_paired(game, cpu):
        sums = terminals.dense_pair(game.dense_compat, xs["dense_showdown"],
                                    tree_passes.opponent(reach[game.forest_fold_node], lanes, 1),
                                    tree_passes.opponent(reach[game.forest_showdown_node], lanes, 1))
    tvf = terminal_values.fold_values(game, reach, game.forest_fold_node, game.forest_fold_payoff, lanes, inv_z, cpu,
                       game.forest_fold_values, None if sums is None else sums[0])
    tvs = terminal_values.showdown_values(game, xs, reach, lanes, inv_z, cpu, None if sums is None else sums[1])
    tv = jnp.concatenate([tvf, tvs])
    if game.dealt or game.player_lists:
        tv = tv * live
    tv = jnp.concatenate([tv, jnp.zeros((1,) + tv.shape[1:], dt)])
    if mode == "br_ev":
        tv = jnp.concatenate([tv, tv], axis=1)
    if mode in tree_passes.EVALUATION_MODES:   # the roots' values alone, the levels as one loop
        return {"root": tree_passes.root_values(tree, sig, tv, lanes, tree_passes.pulled_sums(game, cpu),
                                                mode)[:game.num_roots]}
    vals = tree_passes.backward(tree, sig, tv, lanes, tree_passes.pulled_sums(game, cpu), mode)
    out = {"root": vals[:game.num_roots]}
    if mode == "nodes":
        out["reach"], out["values"] = reach, vals
    if mode == "regret":
        for i, p in enumerate(lanes):
            lo, hi = (0, s0) if p == 0 else (s0, s0 + s1)
            node, child = game.forest_slot_node[lo:hi], game.forest_slot_child[lo:hi]
            out[f"regret{p}"] = xs[f"regret{p}"] + (vals[child, i] - vals[node, i])
            out[f"y{p}"] = reach[node, p] * lift(sig[lo:hi], nd - 1)
    return out


_TABLES = ("sd_sorted", "sd_card_sorted", "sd_index")


def board_tables(game: PublicGame, cpu: bool) -> dict:
    """Every board's terminal tables and live hands, board-major (`board`'s table inputs;
    `dense_showdown` where the dense form is used)."""
    names = _TABLES + (("dense_showdown",) if terminals.dense_used(game, cpu) else ())
    xs = {k: getattr(game, k) for k in names}
    xs["live"] = game.board_live
    return xs


def board_inputs(game: PublicGame, sigma_ext, lanes, regret, base, cpu: bool, b=None, roots=None) -> dict:
    """The inputs to `board`: tables, live hands, strategy and regret rows, and on a flop
    the forest roots' reach (`roots [G, R, 2, H, *batch]` picked by the board's turn
    card); of board `b` (dynamic slices), or of every board, board-major (static slices
    and reshapes; only the roots gathered) when `b` is `None`."""
    B = game.num_boards
    (t0, t1), (s0, s1), split = game.trunk_slots, game.forest_slots, game.slot_split
    names = _TABLES + (("dense_showdown",) if terminals.dense_used(game, cpu) else ())
    if b is None:
        xs = board_tables(game, cpu)

        def rows(a, start, size):
            return a[start:start + B * size].reshape((B, size) + a.shape[1:])
    else:
        xs = {k: jax.lax.dynamic_index_in_dim(getattr(game, k), b, 0, keepdims=False) for k in names}
        xs["live"] = jax.lax.dynamic_index_in_dim(game.board_live, b, 0, keepdims=False)

        def rows(a, start, size):
            return jax.lax.dynamic_slice_in_dim(a, start + b * size, size, 0)
    if game.board_groups:
        if b is None:
            xs["root"] = roots[game.board_group]
        else:
            xs["root"] = jax.lax.dynamic_index_in_dim(roots, game.board_group[b], 0, keepdims=False)
    xs["sig0"] = rows(sigma_ext, t0, s0)
    xs["sig1"] = rows(sigma_ext, split + t1, s1)
    if regret is not None:
        for p in lanes:
            t, s = (t0, s0) if p == 0 else (t1, s1)
            xs[f"regret{p}"] = rows(regret, base[p] + t, s)
    return xs


def map_boards(game: PublicGame, f, sigma_ext, lanes, regret, base, cpu: bool, roots=None) -> dict:
    """`f` (`board`) of every board, its outputs stacked board-major (`[B, ...]`): on
    CPU a loop over the boards (each board's arrays stay in cache), elsewhere all at once
    (`vmap`), or with the plan's `boards_at_once` k (`0 < k < B`) a loop over groups of k
    boards, each group `vmap`ped (the last one the remainder): only one group's forests'
    reach and values are held at once. `roots`: a flop's forest-root reach per turn card
    (`board_inputs`)."""
    B = game.num_boards
    if B == 1:
        xs = board_inputs(game, sigma_ext, lanes, regret, base, cpu)
        return jax.tree.map(lambda a: a[None], f(jax.tree.map(lambda a: a[0], xs)))
    k = plan_of(game).boards_at_once
    if cpu or 0 < k < B:   # slices taken inside the loop: no copies of the [S, H] inputs
        return jax.lax.map(lambda b: f(board_inputs(game, sigma_ext, lanes, regret, base, cpu, b, roots)),
                           jnp.arange(B), batch_size=None if cpu else k)
    return jax.vmap(f)(board_inputs(game, sigma_ext, lanes, regret, base, cpu, roots=roots))


def root_sum(game: PublicGame, r):
    """The boards' forest-root values `r [B, R, ...]` summed into the trunk's chance
    leaves: `[R, ...]`, on a flop per turn card, `[G R, ...]`. A suit-merged game's boards
    are class representatives: each is summed over its class's members first
    (`tree_passes.members_sum`), and a flop's groups then hold unequal numbers of boards."""
    G, B = game.board_groups, game.num_boards
    if game.iso_perm is not None:
        R = r.shape[1]
        r = tree_passes.members_sum(game.iso_perm, jnp.repeat(game.board_members, R, axis=0),
                                    r.reshape((B * R,) + r.shape[2:])).reshape(r.shape)
        if G:
            s = jax.ops.segment_sum(r, game.board_group, num_segments=G, indices_are_sorted=True)
            return s.reshape((G * R,) + r.shape[2:])
        return jnp.sum(r, axis=0)
    if G:
        return jnp.sum(r.reshape((G, B // G) + r.shape[1:]), axis=1).reshape((G * r.shape[1],) + r.shape[2:])
    return jnp.sum(r, axis=0)


def boards(game: PublicGame, f, sigma_ext, lanes, regret, base, cpu: bool, roots=None):
    """Run `f` (`board`) on every board (`map_boards`): `(sum of root values (`root_sum`),
    regret, y)` with the forests' rows of `regret` / `y` (`[hi - lo, H, *batch]`, `None`
    unless regrets are wanted) filled in (the trunk's rows: `regret` as given, `y` zero)."""
    B = game.num_boards
    (t0, t1), (s0, s1) = game.trunk_slots, game.forest_slots
    rows = lambda p: (t0, s0) if p == 0 else (t1, s1)   # noqa: E731
    want = regret is not None
    out = map_boards(game, f, sigma_ext, lanes, regret, base, cpu, roots)
    total = root_sum(game, out["root"])
    if not want:
        return total, None, None
    regs, ys = [], []
    for p in lanes:
        t, s = rows(p)
        if t:
            regs.append(regret[base[p]:base[p] + t])
            ys.append(jnp.zeros((t,) + regret.shape[1:], sigma_ext.dtype))
        regs.append(out[f"regret{p}"].reshape((B * s,) + regret.shape[1:]))
        ys.append(out[f"y{p}"].reshape((B * s,) + regret.shape[1:]))
    return total, jnp.concatenate(regs), jnp.concatenate(ys)
