"""Depth-limited public games: a spot cut below its next card, the leaves valued by a function.

DeepStack- and ReBeL-style agents solve a subgame only to a depth limit and ask a learned
function for the values at the cut. `cut(game, leaf, inputs)` turns a turn spot's public
game into such a game: its trunk (the turn street) is kept, and each of the trunk's
river-dealing chance nodes `k` (`R` of them) becomes, for each river card `b` (`B` = 48
boards), a **leaf** `l = b R + k` (`L = B R`, e.g. 5 x 48 = 240) whose per-hand values
come from the leaf function. A flop spot is cut below its turn card the same way: its
flop street is kept (`_first_street`), the `R` chance nodes ending it times the `B` = 49
turn cards are the leaves. Everything else is the public form unchanged: `cfrjax.init`,
`step`, `solve` (one jitted executable, `lax.scan` over iterations, the leaf function
inside), `solve_batch` / `vmap` over ranges, policies, checkpoints. The poker builder
(`cfrjax.games.poker.depth.depth_limited`) computes `inputs`.

**The leaf-function contract** (`LeafFunction.fn`, pure and jittable; vmappable for
batches):

    values0, values1 = fn(inputs, r0, r1)

* `r0, r1`: `[L, H]` each player's **normalised range** at every leaf: the reach of the
  game's hand `h` (range weight and the player's own strategy above the cut included)
  divided by its sum over hands at that leaf; a hand holding a board card of the leaf (a
  dead hand) has 0; a player who never reaches a leaf has all 0 there.
* Hands are the game's hand list (`inputs["hands"]`: `[H]` combo ids in 0..1325, 1,128 on a
  full-range turn). `inputs["leaf_hand"]` `[L, H]` maps each to its position in the leaf
  board's own hand list (the 1,081 combos not blocked by its five cards, ascending combo
  id; -1 for a dead hand), so a function written for river spots (a value network over
  1,081 or 1,326 combos) can gather and scatter.
* `inputs`: `board` `[L, 5]` card ids, `pot` `[L]` chips in the pot at the leaf, `stack`
  `[L]` chips each player still has behind, `live` `[L, H]` (1 where the hand can hold),
  `hands`, `leaf_hand`, `chance` (the weight of one river card, 1/44), and `data`: the
  `LeafFunction`'s own pytree (weights of a network, tables).
* Returns **pot-relative counterfactual values** (DeepStack's convention) `[L, H]` of
  each player: `v_p(h) = sum_{h'} compat(h, h') r_q(h') u_p(h, h') / pot`, where `q` is
  the opponent and `u_p` player p's payoff in chips at the end of the hand under the
  leaf's continuation strategy (sunk cost: each player's half of the leaf's pot counts as
  in it, so checking down wins or loses `pot / 2`). Values of dead hands are ignored.

cfrjax converts both ways: the passes' counterfactual value of hand `h` at leaf `l` is
`chance * m_q * pot * v_p(h) / Z` (`m_q` the opponent's reach mass there, `Z` the deal
normaliser), summed over the boards into the trunk's chance node. The function is
called in every pass that needs leaf values (each half of an alternating iteration, both
players' pass of a simultaneous one, and every evaluation, which feeds it the reaches of
the policy evaluated), always with all `L` leaves at once.

**Local exploitability.** The best responses of a depth-limited game deviate above the
cut only, against leaf values the function computes from the evaluated policy's reaches:
`cfrjax.evaluate` / `exploitability` of such a game (`PublicGame.depth_limited`) are
exploitability *with respect to the leaf function*, and are named "local" where reported.

**Stateful leaf functions** (optional; a value network needs none). A `LeafFunction`
with `init` and `update` keeps a state across the iterations of a solve, in
`SolverState.leaf` (`cfrjax.init` makes it with `init(inputs, dtype)`; the jitted solve
carries it, one executable as before; `solve_batch` / `vmap` map it with the rest of the
state; checkpoints refuse it). Every pass of a solve then calls

    values0, values1, state = update(inputs, r0, r1, state, step)

instead of `fn`: the same arguments and units, and `step` = `{"mass": [L, 2]` each
player's reach mass at every leaf (the normaliser of `r0`, `r1`), `"weight": [2]` the
averaging coefficient `b_t / W_t` of this (half-)iteration (`cfrjax.iteration`: the
trunk's own running-mean weight) for the players whose average this pass updates, 0 for
the other`}`. Evaluations (`cfrjax.evaluate`, best responses, values) call `fn`.

**CFR-D** (Burch, Johanson & Bowling 2014). The cut game's trunk strategy completed by
leaf solves is a whole-game profile whose exploitability goes to 0 when, at iteration
`t`, the leaves are solved (to an error that vanishes) at the ranges of the trunk's
*current* strategy and the completion below the cut is the average of those leaf
strategies, weighted as the trunk's average is (the averaging weight of `t` times the
player's reach of the leaf); re-solving the leaves at the average trunk's ranges is not
such a profile (1.8-2.4% of the pot on a 3-hand turn spot where the issue asks for 0.5%).
The stateful `exact_leaf` does this: each pass continues every leaf's solver (the
solver's own iteration, `cfrjax.driver.run_steps`) from the previous pass's state for
`warm` iterations (regrets kept, average restarted), answers the values of these
iterations' average strategy, and adds it, times each player's own reach (the leaf's
`mass * r`) and the pass's `weight`, into a running mean that `completed_policy`
normalises into the whole game's forest strategy (the completion's exploitability levels
off above 0: measured floors in the README). Player p's leaf strategy enters only in p's
half of an alternating iteration, the half whose trunk average term has the same weight.
A leaf solve gives a hand its range does not hold a small weight (`exact_leaf`'s
`unheld`), so that such a hand still gets a solved strategy and its counterfactual value,
not the uniform strategy's (the solver averages with the own reach, range included): with
the uniform play's value, the trunk learned that an unheld hand's line was worth that and
never took it (3% of the pot, stalled). The leaf solves keep the whole game's normaliser
in every pass, so warm-started regrets keep their units while the ranges move.

Built-in leaf functions: `showdown_leaf` (both players check to showdown: a cheap
baseline) and `exact_leaf` (solves the subtree below every leaf with the solver, each
forest root's subtree a public game of its own, batched over the boards: it tests the
machinery, since its CFR-D completion approaches a whole-game equilibrium).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import passes, rules
from cfrjax.game import fingerprint
from cfrjax.driver import run_steps
from cfrjax.policy import average_policy, normalize
from cfrjax.public import forest, terminals, tree_passes
from cfrjax.public import values as pub_values
from cfrjax.public.game import PublicGame
from cfrjax.spec import CHANCE, TERMINAL
from cfrjax.state import init

#: `trunk_dealt` of a trunk node above every dealt card (a flop's flop street).
from cfrjax.deck import NO_CARD as _NO_CARD

__all__ = ["LeafFunction", "below_cut_nashconv", "completed_policy", "cut", "exact_leaf", "exact_leaf_policy",
           "leaf_reach", "showdown_leaf"]

_INPUTS = ("board", "pot", "stack", "live", "hands", "leaf_hand", "chance")
#: The leaf solves of `exact_leaf`: DCFR (1.5, 0, 2), alternating (player 0's half first).
_INNER = rules.Config(rule="dcfr", order="alternating")
#: A board's own leaves of a public game (`PublicGame.BOARD_TABLES`, the dense showdown
#: where built): what `_on_board` puts into a leaf's subgame.
_BOARD_TABLES = ("sd_sorted", "sd_card_sorted", "sd_index", "dense_showdown")


@dataclasses.dataclass(frozen=True, eq=False)
class LeafFunction:
    """A leaf-value function (module docstring: the contract) and its data.

    Attributes:
      fn: `fn(inputs, r0 [L, H], r1 [L, H]) -> (v0 [L, H], v1 [L, H])`, pure; static
        (hashed by identity: one compiled solve per function object).
      data: a pytree handed to `fn` as `inputs["data"]` (arrays are traced, not baked in).
      name: for reports.
      init, update: optional, both or neither (module docstring, "Stateful leaf
        functions"): `init(inputs, dtype) -> state` (a pytree, `SolverState.leaf`) and
        `update(inputs, r0, r1, state, step) -> (v0, v1, state)`, which the solve's
        passes call instead of `fn` (evaluations still call `fn`).
    """

    fn: Callable
    data: Any = None
    name: str = "leaf"
    init: Callable | None = None
    update: Callable | None = None

    def __post_init__(self):
        if (self.init is None) != (self.update is None):
            raise ValueError("a stateful leaf function needs both init and update (or neither)")


def _check_whole(game, flop: bool = True) -> None:
    """`game` can be cut: a whole turn spot (a trunk above one river card per board) or,
    with `flop`, a whole flop spot (cut below its turn card)."""
    if not isinstance(game, PublicGame):
        raise TypeError(f"a depth-limited game is cut from a public-form game, got {type(game).__name__}")
    if game.depth_limited:
        raise ValueError(f"{game.name} is already depth-limited")
    if not game.dealt or game.num_roots == 0 or (game.board_groups and not flop):
        raise ValueError(f"{game.name}: only a turn spot{' or a flop spot' if flop else ''} can be cut below its "
                         f"next card here; a river spot has nothing below")


def _first_street(game: PublicGame, sel):
    """A flop spot's trunk cut to its flop street (`trunk_dealt` 52): the kept nodes in the
    trunk's breadth-first order, the flop street's ends (the chance nodes dealing the turn)
    as chance leaves. `sel`: the kept slots (global slot ids; lanes are renumbered to their
    positions in `sel`). Returns the trunk fields of the cut game and its `root_chance`."""
    keep = np.asarray(game.trunk_dealt) == _NO_CARD
    new = np.cumsum(keep) - 1
    n = int(keep.sum())
    parent = new[np.asarray(game.trunk_parent)[keep]]
    owner = np.asarray(game.trunk_owner)[keep]
    nchild = np.bincount(parent[1:], minlength=n)                              # one root, its own parent
    levels = np.asarray(game.trunk_levels)
    kept_levels = np.array([keep[:x].sum() for x in levels])
    depth = int(np.searchsorted(kept_levels, n))                               # levels holding kept nodes
    levels = tuple(int(x) for x in kept_levels[:depth + 1])
    spans = list(zip(levels[:-1], levels[1:]))
    ends = np.flatnonzero(owner == CHANCE)
    folds_old = np.asarray(game.trunk_fold_node)
    fmask = keep[folds_old]
    folds = new[folds_old[fmask]]
    F, R = folds.size, ends.size
    pos = np.full(n, F + R, np.int64)
    pos[folds], pos[ends] = np.arange(F), F + np.arange(R)
    S = game.num_slots
    remap = np.full(S + 1, len(sel), np.int64)
    remap[sel] = np.arange(len(sel))
    t0, split = game.trunk_slots[0], game.slot_split
    local = np.where(sel < split, sel, sel - split + t0)                      # rows of trunk_slot_node
    i32 = lambda x: jnp.asarray(x, jnp.int32)   # noqa: E731
    fields = dict(
        trunk_parent=i32(parent), trunk_child_start=i32(np.concatenate([[1], 1 + np.cumsum(nchild)])),
        trunk_owner=i32(owner), trunk_lane_slot=i32(remap[np.asarray(game.trunk_lane_slot)[keep]]),
        trunk_term_pos=i32(pos), trunk_fold_node=i32(folds), trunk_fold_payoff=game.trunk_fold_payoff[fmask],
        trunk_slot_node=i32(new[np.asarray(game.trunk_slot_node)[local]]),
        trunk_slot_child=i32(new[np.asarray(game.trunk_slot_child)[local]]),
        trunk_fold_values=None if game.trunk_fold_values is None else game.trunk_fold_values[fmask],
        trunk_dealt=None, board_group=None, board_groups=0, trunk_level_dealt=(), trunk_levels=levels,
        trunk_fanout=tuple(int(nchild[lo:hi].max(initial=0)) for lo, hi in spans),
        trunk_level_terms=tuple(bool((owner[lo:hi] >= CHANCE).any()) for lo, hi in spans))
    return fields, ends


def cut(game: PublicGame, leaf: LeafFunction, inputs: dict) -> PublicGame:
    """`game` (a whole turn or flop spot) cut below its next card, valued by `leaf`.

    Args:
      game: the whole game's public form.
      leaf: the leaf function.
      inputs: the contract's arrays (`board`, `pot`, `stack`, `live`, `hands`,
        `leaf_hand`, `chance`; module docstring), without `data`; on a flop `L = B R`
        with `B` the turn cards and `R` the flop street's ends.

    Returns:
      A `PublicGame` with the trunk's slots only (player 0's, then player 1's; on a flop
      those of the flop street), its forest replaced by `R` single leaves per board (on a
      flop per turn card: `board_live` [B, H] from `inputs["live"]`), `leaf_fn = leaf.fn`
      and `leaf_data = inputs` plus `data`.
    """
    _check_whole(game)
    if not isinstance(leaf, LeafFunction):
        raise TypeError(f"leaf must be a cfrjax.public.depth.LeafFunction, got {type(leaf).__name__}")
    missing = [k for k in _INPUTS if k not in inputs]
    if missing:
        raise ValueError(f"leaf inputs miss {missing}; expected {list(_INPUTS)}")
    (t0, t1), split, S = game.trunk_slots, game.slot_split, game.num_slots
    sel = np.concatenate([np.arange(t0), split + np.arange(t1)])
    trunk = {}
    if game.board_groups:   # a flop: keep the flop street's slots, its ends become the leaves' roots
        node = np.asarray(game.trunk_slot_node)
        sel = sel[np.asarray(game.trunk_dealt)[node] == _NO_CARD]
        trunk, ends = _first_street(game, sel)
        R = ends.size
        B = int(inputs["live"].shape[0]) // R
        t0 = int(np.count_nonzero(sel < split))
        t1 = sel.size - t0
        trunk.update(root_chance=jnp.asarray(ends, jnp.int32), num_boards=B,
                     board_live=jnp.asarray(inputs["live"]).reshape(B, R, -1)[:, 0].astype(game.board_live.dtype),
                     **{k: getattr(game, k)[:B] for k in ("sd_sorted", "sd_card_sorted", "sd_index")})   # unused
        n1 = int(trunk["trunk_parent"].shape[0])
    else:
        lane = np.asarray(game.trunk_lane_slot)
        trunk["trunk_lane_slot"] = jnp.asarray(np.where(lane == S, t0 + t1, np.where(lane >= split, lane - split + t0,
                                                                                     lane)), jnp.int32)
        R, B = game.num_roots, game.num_boards
        n1 = int(game.trunk_parent.shape[0])
    kept, inf = np.unique(np.asarray(game.slot_infoset)[sel], return_inverse=True)
    counts = np.bincount(inf, minlength=kept.size)
    fdt = game.slot_uniform.dtype
    i32 = lambda x: jnp.asarray(x, jnp.int32)   # noqa: E731
    empty = i32(np.zeros(0))
    lb = game.labels
    keep = kept.tolist()
    labels = dataclasses.replace(
        lb, fingerprint=fingerprint({"whole": np.frombuffer(lb.fingerprint.encode(), np.uint8), "leaf":
                                     np.frombuffer(f"{leaf.name}:{id(leaf.fn)}".encode(), np.uint8)}),
        source={**lb.source, "depth_limited": {"leaf": leaf.name, "leaves": int(B * R)}},
        node_codes=tuple(lb.node_codes[i] for i in keep), node_player=tuple(lb.node_player[i] for i in keep),
        action_names=tuple(lb.action_names[i] for i in keep), node_dealt=tuple(lb.node_dealt[i] for i in keep),
        node_committed=None if lb.node_committed is None else lb.node_committed[keep],
        node_slot_start=np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), cache_key="")
    data = {k: inputs[k] for k in _INPUTS}
    data["data"] = leaf.data
    return dataclasses.replace(
        game, **trunk,
        forest_parent=i32(np.arange(R)), forest_child_start=i32(np.full(R + 1, R)),
        forest_owner=i32(np.full(R, TERMINAL)), forest_lane_slot=i32(np.zeros((R, 2))),
        forest_term_pos=i32(np.zeros(R)), forest_slot_node=empty, forest_slot_child=empty,
        forest_path=i32(np.zeros((R, 2, 0))), forest_root_of=i32(np.arange(R)), forest_fold_node=empty,
        forest_fold_payoff=jnp.zeros(0, fdt), forest_showdown_node=empty, forest_showdown_stake=jnp.zeros(0, fdt),
        forest_fold_values=None if game.forest_fold_values is None else jnp.zeros((0, 2), fdt),
        forest_showdown_rake=None if game.forest_showdown_rake is None else jnp.zeros(0, fdt),
        slot_infoset=i32(inf), infoset_slot_start=i32(np.concatenate([[0], np.cumsum(counts)])),
        slot_uniform=game.slot_uniform[jnp.asarray(sel)], dense_showdown=None, dense_compat=None,
        num_nodes=n1 + B * R, num_slots=int(t0 + t1), num_infosets=int(kept.size),
        forest_levels=(0, R), forest_fanout=(0,), forest_level_terms=(True,), forest_slots=(0, 0),
        slot_split=int(t0), max_actions=int(counts.max(initial=1)),
        slot_runs=passes.slot_runs(np.concatenate([[0], np.cumsum(counts)])), leaf_fn=leaf.fn, leaf_init=leaf.init,
        leaf_update=leaf.update, leaf_data=data, labels=labels)


def leaf_reach(game: PublicGame, policy):
    """`[B, R, 2, H]` both players' reach (range weight included) at a depth-limited game's
    leaves under `policy` `[S, H]` (dead hands 0)."""
    def run(cpu):
        tree = tree_passes.Tree(game, "trunk")
        dt = game.weights.dtype
        root = game.weights.astype(dt)[None]
        reach = tree_passes.forward(tree, passes.extend(policy.astype(dt)), root, 3)[game.root_chance]
        return reach[None] * game.board_live.astype(dt)[:, None, None]
    return tree_passes.on_platform(run)


# ----------------------------------------------------------------------------------------
# Built-in leaf functions.


def _showdown(inputs, r0, r1):
    tables = inputs["data"]
    B = tables["sd_sorted"].shape[0]
    L, H = r0.shape
    opp = jnp.stack([r1, r0], axis=1).reshape(B, L // B * 2, H)               # [B, 2R, H] opponents' ranges

    def one(tb, x):
        return terminals._showdown_sorted_hm(tb, x.T, False, None).T                # Wk - St per hand
    d = 0.5 * jax.vmap(one)(tables, opp).reshape(L, 2, H)
    return d[:, 0], d[:, 1]


def _showdown_turn(inputs, r0, r1):
    """`_showdown` below a flop's turn card: the mean over the turn board's rivers (each
    `1 / (Q - 4)` of its `Q` river cards, four of them held by the two hands) of every
    river's check-down values, the river's dead hands masked. Tables `[G, Q, ...]`."""
    tables = inputs["data"]
    G, Q, H = tables["live"].shape
    L = r0.shape[0]
    opp = jnp.stack([r1, r0], axis=1).reshape(G, L // G * 2, H)              # [G, 2R, H]

    def river(tb, x):
        live = tb["live"].astype(x.dtype)
        return terminals._showdown_sorted_hm(tb, (x * live).T, False, None).T * live
    d = jax.vmap(lambda tb, x: jnp.sum(jax.vmap(river, (0, None))(tb, x), axis=0))(tables, opp)
    d = 0.5 / (Q - 4) * d.reshape(L, 2, H)
    return d[:, 0], d[:, 1]


def showdown_leaf(game: PublicGame) -> LeafFunction:
    """Values if both players check to showdown from every leaf: `v_p(h) = (1/2) sum_{h'}
    compat r_q(h') sign(s_h - s_h')` (the pot goes to the stronger hand, halves on a tie);
    below a flop's turn card its mean over the river cards. `game`: the whole turn or flop
    spot (its river strength tables)."""
    _check_whole(game)
    tables = {k: getattr(game, k) for k in ("sd_sorted", "sd_card_sorted", "sd_index")}
    if not game.board_groups:
        return LeafFunction(_showdown, tables, "showdown")
    G = game.board_groups
    tables["live"] = game.board_live
    return LeafFunction(_showdown_turn, jax.tree.map(lambda x: x.reshape((G, -1) + x.shape[1:]), tables),
                        "showdown")


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class _Slots:
    """The slot layout of one board's forest (player 0's slots, then player 1's), in the
    attributes `cfrjax.passes.regret_matching` reads."""

    slot_infoset: Any
    infoset_slot_start: Any
    slot_uniform: Any
    max_actions: int = dataclasses.field(metadata=dict(static=True), default=1)
    reduction: str = dataclasses.field(metadata=dict(static=True), default="pull")


def _forest_slots(game: PublicGame) -> _Slots:
    (t0, t1), (s0, s1), split = game.trunk_slots, game.forest_slots, game.slot_split
    inf = np.asarray(game.slot_infoset)
    uni = np.asarray(game.slot_uniform)
    rows = np.concatenate([t0 + np.arange(s0), split + t1 + np.arange(s1)])   # board 0's forest slots
    _, local = np.unique(inf[rows], return_inverse=True)
    counts = np.bincount(local)
    return _Slots(slot_infoset=jnp.asarray(local, jnp.int32),
                  infoset_slot_start=jnp.asarray(np.concatenate([[0], np.cumsum(counts)]), jnp.int32),
                  slot_uniform=jnp.asarray(uni[rows]), max_actions=int(counts.max(initial=1)))


def _root_subgame(whole: PublicGame, k: int):
    """Forest root `k`'s subtree of `whole` (a turn spot) as a one-board game of its own.

    Returns `(game, rows)`: a `PublicGame` like a river spot's (no trunk, one root, one
    board: board 0's tables and live hands, which `_on_board` replaces by another board's),
    its nodes the subtree's in the forest's breadth-first order and its slots the
    subtree's (player 0's, then player 1's, in forest order); `rows` `[S_k]` are those
    slots' rows in a board's forest slots `[s0 + s1]`."""
    root_of = np.asarray(whole.forest_root_of)
    keep = root_of == k
    new = np.cumsum(keep) - 1
    before = np.concatenate([[0], np.cumsum(keep)])                            # kept nodes before index i
    nodes = np.flatnonzero(keep)
    n = nodes.size
    s0, s1 = whole.forest_slots
    slot_node = np.asarray(whole.forest_slot_node)
    rows = np.flatnonzero(keep[slot_node])                                     # forest slot rows, in order
    k0 = int(np.count_nonzero(rows < s0))
    remap = np.full(s0 + s1 + 1, rows.size, np.int64)                          # sentinel -> the new sentinel
    remap[rows] = np.arange(rows.size)
    folds_old, sds_old = np.asarray(whole.forest_fold_node), np.asarray(whole.forest_showdown_node)
    fmask, smask = keep[folds_old], keep[sds_old]
    folds, sds = new[folds_old[fmask]], new[sds_old[smask]]
    F, K = folds.size, sds.size
    pos = np.full(n, F + K, np.int64)
    pos[folds], pos[sds] = np.arange(F), F + np.arange(K)
    child_start = np.concatenate([before[np.asarray(whole.forest_child_start)[nodes]], [n]])
    nchild = np.diff(child_start)
    levels = [int(before[x]) for x in whole.forest_levels]
    levels = tuple(levels[:1 + int(np.count_nonzero(np.diff(levels)))])      # the subtree's levels
    spans = list(zip(levels[:-1], levels[1:]))
    (t0, t1), split = whole.trunk_slots, whole.slot_split
    inf = np.asarray(whole.slot_infoset)[np.where(rows < s0, t0 + rows, split + t1 + rows - s0)]   # board 0's
    _, local = np.unique(inf, return_inverse=True)
    counts = np.bincount(local)
    start = np.concatenate([[0], np.cumsum(counts)])
    fdt = whole.slot_uniform.dtype
    i32 = lambda x: jnp.asarray(x, jnp.int32)   # noqa: E731
    empty = i32(np.zeros(0))
    raked = whole.raked
    sub = dataclasses.replace(
        whole,
        trunk_parent=empty, trunk_child_start=i32([0]), trunk_owner=empty, trunk_lane_slot=i32(np.zeros((0, 2))),
        trunk_term_pos=empty, trunk_fold_node=empty, trunk_fold_payoff=jnp.zeros(0, fdt), trunk_slot_node=empty,
        trunk_slot_child=empty, root_chance=i32([0]), trunk_dealt=None, board_group=None,
        trunk_fold_values=jnp.zeros((0, 2), fdt) if raked else None,
        forest_parent=i32(new[np.asarray(whole.forest_parent)[nodes]]), forest_child_start=i32(child_start),
        forest_owner=i32(np.asarray(whole.forest_owner)[nodes]),
        forest_lane_slot=i32(remap[np.asarray(whole.forest_lane_slot)[nodes]]), forest_term_pos=i32(pos),
        forest_slot_node=i32(new[slot_node[rows]]),
        forest_slot_child=i32(new[np.asarray(whole.forest_slot_child)[rows]]),
        forest_path=i32(remap[np.asarray(whole.forest_path)[nodes]]), forest_root_of=i32(np.zeros(n)),
        forest_fold_node=i32(folds), forest_fold_payoff=whole.forest_fold_payoff[fmask],
        forest_showdown_node=i32(sds), forest_showdown_stake=whole.forest_showdown_stake[smask],
        forest_fold_values=whole.forest_fold_values[fmask] if raked else None,
        forest_showdown_rake=whole.forest_showdown_rake[smask] if raked else None,
        board_live=whole.board_live[:1], sd_sorted=whole.sd_sorted[:1], sd_card_sorted=whole.sd_card_sorted[:1],
        sd_index=whole.sd_index[:1],
        dense_showdown=None if whole.dense_showdown is None else whole.dense_showdown[:1],
        slot_infoset=i32(local), infoset_slot_start=i32(start), slot_uniform=jnp.asarray(whole.slot_uniform)[
            jnp.asarray(np.where(rows < s0, t0 + rows, split + t1 + rows - s0))],
        num_nodes=int(n), num_slots=int(rows.size), num_infosets=int(counts.size), num_boards=1,
        trunk_levels=(), trunk_fanout=(), trunk_level_terms=(), trunk_level_dealt=(), board_groups=0,
        forest_levels=levels, forest_fanout=tuple(int(nchild[lo:hi].max(initial=0)) for lo, hi in spans),
        forest_level_terms=tuple(bool((pos[lo:hi] < F + K).any()) for lo, hi in spans),
        trunk_slots=(0, 0), forest_slots=(k0, int(rows.size) - k0), slot_split=k0,
        max_actions=int(counts.max(initial=1)), slot_runs=passes.slot_runs(start), forest_plan=None,
        trunk_plan=None, labels=None)
    return sub, rows


def _root_groups(whole: PublicGame) -> tuple:
    """The forest roots' subgames (`_root_subgame`), those of one shape stacked (one
    program solves them all): `((game, roots, rows), ...)`, `game`'s leaves with a leading
    axis over `roots` `[G_k]` (root ids) and `rows` `[G_k, S_k]`."""
    groups = {}
    for k in range(whole.num_roots):
        sub, rows = _root_subgame(whole, k)
        key = (jax.tree.structure(sub), tuple(jnp.shape(x) for x in jax.tree.leaves(sub)))
        groups.setdefault(key, []).append((k, sub, rows))
    # Stacked on the host (one transfer per leaf): `jnp.stack` op by op compiles a program per
    # leaf shape.
    return tuple((jax.tree.map(lambda *x: jnp.asarray(np.stack([np.asarray(a) for a in x])), *(g for _, g, _ in m)),
                  jnp.asarray([k for k, _, _ in m], jnp.int32), jnp.asarray(np.stack([r for _, _, r in m]), jnp.int32))
                 for m in groups.values())


def _on_board(sub: PublicGame, tables: dict, w) -> PublicGame:
    """`sub` (`_root_subgame`) on one board (`tables`: one board's slice of
    `forest.board_tables`) with the range weights `w` `[2, H]`. The normaliser stays the
    whole game's (`sub`'s), the same in every pass: a warm-started solve's regrets keep
    their units while the ranges move (`set_ranges` would divide each pass by its own)."""
    return dataclasses.replace(sub, board_live=tables["live"][None], weights=w,
                               **{k: tables[k][None] for k in _BOARD_TABLES if k in tables})


def _leaf_solve(data, rho, iterations: int, config, unheld: float, solvers=None):
    """The leaf solves: every board's forest below every leaf, each root's subtree a game of
    its own (`_root_subgame`) solved by the solver (`cfrjax.driver.run_steps`: `config`'s
    rule, order and averaging, the plan's kernels), from the leaves' normalised ranges
    `rho` `[B, R, 2, H]` (a hand a range does not hold weighted `unheld`, so that its
    average strategy is a solved one, not the uniform), `iterations` of them.

    `solvers`: the previous pass's states, one per group of `_root_groups`, `[G_k, B, ...]`
    (`None`: fresh solves): their regrets continue, their averages restart.

    Returns:
      `(policy, values, solvers)`: the average policies of these iterations in a board's
      forest slots `[B, s0 + s1, H]`; the root values `[B, R, 2, H]` per hand (chance
      included, times the whole game's normaliser: `_pot_relative` divides by the pot
      and chance); the solvers' states.
    """
    whole = data["game"]
    B, (s0, s1) = whole.num_boards, whole.forest_slots
    R, H = whole.num_roots, whole.num_hands
    dt = rho.dtype
    config = dataclasses.replace(config, dtype=jnp.dtype(dt).name)
    tables = forest.board_tables(whole, False)
    policy = jnp.zeros((B, s0 + s1, H), dt)
    vals = jnp.zeros((B, R, 2, H), dt)
    new = []
    for i, (sub, roots, rows) in enumerate(data["subgames"]):
        def one(sub, tb, r, state):
            game = _on_board(sub, tb, jnp.where(r > 0, r, jnp.asarray(unheld, dt)))
            if state is None:
                state = _fresh(game, config)
            else:
                state = dataclasses.replace(state, avg=jnp.zeros_like(state.avg),
                                            avg_comp=jnp.zeros_like(state.avg_comp),
                                            avg_weight=jnp.zeros_like(state.avg_weight))
            state = run_steps(game, state, iterations)
            pol = normalize(game, state.avg)
            return pol, pub_values.hand_values(game, pol) * game.norm, state
        boards = jax.vmap(one, in_axes=(None, 0, 0, 0))                        # over the boards
        ks = roots
        pol, v, state = jax.vmap(boards, in_axes=(0, None, 1, 0))(sub, tables, rho[:, ks],
                                                                    None if solvers is None else solvers[i])
        for j in range(len(roots)):                                            # [G_k, B, ...] -> the forest's
            policy = policy.at[:, rows[j]].set(pol[j])
        vals = vals.at[:, ks].set(jnp.moveaxis(v, 0, 1))
        new.append(state)
    return policy, vals, tuple(new)


def _fresh(game: PublicGame, config):
    """A fresh solver state of `game` under `config` (nothing locked)."""
    state = init(game, dtype=config.dtype)
    return dataclasses.replace(state, locked=None, locked_policy=None, config=config)


def _own_terms(g: PublicGame, policy, root):
    """One board's averaging terms `[s0 + s1, H]`: each player's own reach at a slot's node
    (from the forest roots' reach `root` `[R, 2, H]`) times the slot's probability."""
    s0, s1 = g.forest_slots
    node = g.forest_slot_node
    reach = tree_passes.forward(tree_passes.Tree(g, "forest"), jnp.concatenate([policy, jnp.ones_like(policy[:1])]),
                                root, 3)
    return jnp.concatenate([reach[node[:s0], 0], reach[node[s0:], 1]]) * policy


def _pot_relative(inputs, vals):
    """Leaf solves' root values `[B, R, 2, H]` (`_leaf_solve`'s, times the normaliser) as
    the contract's pot-relative `(v0, v1)`, each `[L, H]`."""
    B, R, _, H = vals.shape
    scale = 1.0 / (inputs["chance"] * inputs["pot"])
    v = vals.reshape(B * R, 2, H) * scale[:, None, None]
    return v[:, 0], v[:, 1]


def _ranges(inputs, r0, r1):
    """The leaves' normalised ranges `[B, R, 2, H]` from the contract's `r0, r1` `[L, H]`."""
    B = inputs["data"]["game"].num_boards
    L, H = r0.shape
    return jnp.stack([r0, r1], axis=1).reshape(B, L // B, 2, H)


def _exact(inputs, r0, r1, iterations: int, config, unheld: float):
    _, vals, _ = _leaf_solve(inputs["data"], _ranges(inputs, r0, r1), iterations, config, unheld)
    return _pot_relative(inputs, vals)


def _exact_init(inputs, dtype, config):
    data = inputs["data"]
    g = data["game"]
    config = dataclasses.replace(config, dtype=jnp.dtype(dtype).name)
    solvers = tuple(jax.tree.map(lambda x: jnp.broadcast_to(x, (len(roots), g.num_boards) + jnp.shape(x)),
                                 _fresh(jax.tree.map(lambda x: x[0], sub), config))
                    for sub, roots, _ in data["subgames"])
    return {"solvers": solvers, "avg": jnp.zeros((g.num_boards, sum(g.forest_slots), g.num_hands), dtype)}


def _exact_update(inputs, r0, r1, state, step, warm: int, config, unheld: float):
    """CFR-D's leaf solves (module docstring): `warm` iterations of every leaf's solver from
    the last pass's state; their average policy gives the values and enters the
    reach-weighted average."""
    policy, vals, solvers = _leaf_solve(inputs["data"], _ranges(inputs, r0, r1), warm, config, unheld,
                                        state["solvers"])
    g = inputs["data"]["game"]
    B, (s0, s1) = g.num_boards, g.forest_slots
    L, H = r0.shape
    root = (jnp.stack([r0, r1], axis=1) * step["mass"][:, :, None]).reshape(B, L // B, 2, H)   # own reach
    y = jax.vmap(functools.partial(_own_terms, g))(policy, root)
    w = jnp.concatenate([jnp.full((s0,), step["weight"][0]), jnp.full((s1,), step["weight"][1])])[None, :, None]
    avg = state["avg"] + w * (y - state["avg"])
    v0, v1 = _pot_relative(inputs, vals)
    return v0, v1, {"solvers": solvers, "avg": avg}


def exact_leaf(game: PublicGame, iterations: int = 200, warm: int | None = 3, config: rules.Config = _INNER,
               unheld: float = 1e-9) -> LeafFunction:
    """Solve the subtree below every leaf with the solver (`cfrjax.driver.run_steps`:
    `config`'s rule, order and averaging; the plan's kernels), each forest root's subtree
    on each board a game of its own, from the leaf's ranges, batched over the boards.

    Args:
      game: the whole turn spot the cut game is made from (its forest travels as the
        function's data).
      iterations: the iterations of a fresh leaf solve, for evaluations (`fn`: the values
        of its average strategy).
      warm: `None`: the solve's passes call `fn` too (stateless). An int: stateful (module
        docstring, CFR-D): each pass of a solve runs `warm` iterations from the previous
        pass's solver states (their regrets; the average restarts) and keeps the
        reach-weighted average of the leaf strategies, from which `completed_policy` makes
        a whole-game profile.
      config: the leaf solves' rule, order and averaging (`cfrjax.rules.Config`; its dtype
        is the cut solve's). Default DCFR (1.5, 0, 2), alternating.
      unheld: the range weight of a live hand a leaf's range does not hold (0 there), > 0
        and small against the normalised range's 1: the solver averages each hand's
        strategy with its own reach, range included, so with weight 0 such a hand would
        get the uniform strategy and its value; with a small weight its average is the
        solve's (an information set's normalised average does not depend on it), and the
        opponent's values move by about `unheld` per such hand.
    """
    _check_whole(game, flop=False)
    for name, n in (("iterations", iterations), ("warm", 1 if warm is None else warm)):
        if not isinstance(n, int) or n <= 0:
            raise ValueError(f"{name} must be a positive int, got {n!r}")
    if not isinstance(config, rules.Config):
        raise TypeError(f"config must be a cfrjax.rules.Config, got {type(config).__name__}")
    if not (isinstance(unheld, float) and 0.0 < unheld < 1e-3):
        raise ValueError(f"unheld must be a float in (0, 1e-3), got {unheld!r}")
    data = {"game": game, "slots": _forest_slots(game),
            "subgames": _root_groups(game)}
    fn = functools.partial(_exact, iterations=iterations, config=config, unheld=unheld)
    if warm is None:
        return LeafFunction(fn, data, f"exact{iterations}")
    return LeafFunction(fn, data, f"exact{iterations}w{warm}", init=functools.partial(_exact_init, config=config),
                        update=functools.partial(_exact_update, warm=warm, config=config, unheld=unheld))


def _whole_profile(whole: PublicGame, policy, below):
    """The whole game's profile `[S_whole, H]`: the trunk rows of `policy` (a cut game's),
    every board's forest rows from `below` `[B, s0 + s1, H]`."""
    (t0, t1), (s0, s1) = whole.trunk_slots, whole.forest_slots
    B, H = whole.num_boards, policy.shape[-1]
    return jnp.concatenate([policy[:t0], below[:, :s0].reshape(B * s0, H),
                            policy[t0:t0 + t1], below[:, s0:].reshape(B * s1, H)])


def completed_policy(cut_game: PublicGame, state, whole: PublicGame):
    """CFR-D's whole-game profile `[S_whole, H]` of a depth-limited solve with a stateful
    `exact_leaf`: `state`'s average trunk policy, and below the cut the leaf strategies of
    every pass averaged with the trunk's averaging weights times each player's reach at
    the leaf (`state.leaf["avg"]`, normalised per information set)."""
    if state.leaf is None or "avg" not in state.leaf:
        raise ValueError("state has no leaf average: solve the cut game with a stateful exact_leaf (warm=...)")
    slots = cut_game.leaf_data["data"]["slots"]
    below = jax.vmap(functools.partial(normalize, slots))(state.leaf["avg"])
    return _whole_profile(whole, average_policy(cut_game, state), below)


def exact_leaf_policy(cut_game: PublicGame, policy, leaf: LeafFunction, whole: PublicGame):
    """The whole game's profile `[S_whole, H]` made of a depth-limited solve's `policy`
    (`[S_cut, H]`, the trunk) and, below the cut, the fresh `exact_leaf` solves that an
    evaluation of `policy` runs (`leaf.fn`: from the leaf ranges `policy` reaches); and the
    leaf solves' total NashConv in the whole game's units (each player's gain from
    deviating below the cut only), the term of the root-value bound. (A low-exploitability
    whole-game profile is `completed_policy`'s, not this one.)

    Args:
      cut_game: the depth-limited game (`leaf` its leaf function).
      policy: its average policy.
      leaf: an `exact_leaf` of `whole`.
      whole: the whole turn spot.
    """
    kw = leaf.fn.keywords
    reach = leaf_reach(cut_game, policy)                                        # [B, R, 2, H]
    mass = jnp.sum(reach, axis=3, keepdims=True)
    rho = reach / jnp.where(mass > 0, mass, 1.0)
    below, _, _ = _leaf_solve(cut_game.leaf_data["data"], rho, kw["iterations"], kw["config"], kw["unheld"])
    full = _whole_profile(whole, policy, below)
    return full, below_cut_nashconv(whole, full, reach)


def below_cut_nashconv(whole: PublicGame, full, reach):
    """Sum over the leaves of each player's best-response gain below the cut, in the whole
    game's units: `sum_p sum_h reach_p(h) (v_p^BR(h) - v_p(h))` at every forest root, for
    the whole-game profile `full` and the leaves' reach `reach` `[B, R, 2, H]`
    (`leaf_reach`)."""
    (t0, t1), (s0, s1), split = whole.trunk_slots, whole.forest_slots, whole.slot_split
    B = whole.num_boards
    tables = forest.board_tables(whole, False)
    sig = jnp.concatenate([full[t0:t0 + B * s0].reshape(B, s0, -1), full[split + t1:].reshape(B, s1, -1)], axis=1)

    def board(tb, sg, root):
        xs = dict(tb, sig0=sg[:s0], sig1=sg[s0:])
        br = forest.board(whole, xs, root, sg, (0, 1), "br", False)["root"]
        ev = forest.board(whole, xs, root, sg, (0, 1), "ev", False)["root"]
        return jnp.sum(root * (br - ev))
    return jnp.sum(jax.vmap(board)(tables, sig, reach))
