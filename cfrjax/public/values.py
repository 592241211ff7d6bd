"""Values of a public-form profile: per hand, best responses, expected values, every node.

Each is one sweep (`cfrjax.public.sweep`) under the profile `policy` `[S, H, *batch]`: the
backward pass as it is (`"ev"`), with the max over the player's own actions (`"br"`), or
both at once (`evaluation`); `node_values` keeps every node's reach and values (reports,
`cfrjax.public.report`). Best response: `BR_p = sum_h w_p[h] v_p(root, h)`.
"""

from __future__ import annotations

import jax.numpy as jnp

from cfrjax import passes
from cfrjax.passes import lift
from cfrjax.public import sweep, tree_passes
from cfrjax.public.game import PublicGame

__all__ = ["best_response_values", "evaluation", "expected_value", "expected_values", "hand_values", "node_values",
           "trunk_values"]


def hand_values(game: PublicGame, policy):
    """`[2, H, *batch]`: both players' counterfactual values per hand at the root when
    both play `policy` `[S, H, *batch]`: `v_p[h] = sum_h' compat(h, h') w_q[h'] u_p(h, h')
    / Z` (q the opponent; `u_p` player p's expected payoff of the deal under `policy`,
    chance included), the own range weight not included, so `sum_h w_p[h] v_p[h]` is
    player p's expected value (`expected_value` for p = 0). A hand the opponent's range
    cannot meet has value 0."""
    return tree_passes.on_platform(lambda cpu: sweep.sweep(game, passes.extend(policy), (0, 1), "ev", cpu)[0])


def _weighted(game: PublicGame, root, lanes):
    w = game.weights.astype(root.dtype)[lanes[0]:lanes[-1] + 1]
    return jnp.sum(lift(w, root.ndim) * root, axis=1)


def best_response_values(game: PublicGame, policy):
    """`[2, *batch]`: `BR_p = sum_h w_p[h] v_p^BR(root, h)`, the value of player p's best
    response to the opponent's part of `policy` `[S, H, *batch]` (exact, one pass; in a
    raked game each player's own raked payoffs)."""
    def run(cpu):
        return _weighted(game, sweep.sweep(game, passes.extend(policy), (0, 1), "br", cpu)[0], (0, 1))
    return tree_passes.on_platform(run)


def evaluation(game: PublicGame, policy):
    """`(best_response_values, expected_values)` of `policy` `[S, H, *batch]`, each `[2,
    *batch]` and each as its own function gives it, from one sweep: the forward pass and
    the terminal values are the same for both, only the backward passes differ. Every
    evaluation of a solve computes this (`cfrjax.best_response.exploitability_and_value`):
    one forward pass and one set of terminals instead of two, a smaller program to
    compile on a cold solve's path."""
    def run(cpu):
        root = sweep.sweep(game, passes.extend(policy), (0, 1), "br_ev", cpu)[0]
        return _weighted(game, root[:2], (0, 1)), _weighted(game, root[2:], (0, 1))
    br, ev = tree_passes.on_platform(run)
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    v0 = ev[0] + offset
    return br, ev.at[0].set(v0) if game.raked else jnp.stack([v0, -v0])


def expected_value(game: PublicGame, policy):
    """Player 0's expected payoff `[*batch]` when both play `policy` `[S, H, *batch]`."""
    def run(cpu):
        return _weighted(game, sweep.sweep(game, passes.extend(policy), (0,), "ev", cpu)[0], (0,))[0]
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return tree_passes.on_platform(run) + offset


def expected_values(game: PublicGame, policy):
    """`[2, *batch]`: each player's expected payoff when both play `policy` `[S, H, *batch]`.

    Unraked: `[v, -v]` from one lane (`expected_value`); raked (not zero-sum: the rake
    leaves the table, `-(v0 + v1)` is the expected rake): both lanes of one pass."""
    if not game.raked:
        v = expected_value(game, policy)
        return jnp.stack([v, -v])

    def run(cpu):
        return _weighted(game, sweep.sweep(game, passes.extend(policy), (0, 1), "ev", cpu)[0], (0, 1))
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return tree_passes.on_platform(run).at[0].add(offset)
def node_values(game: PublicGame, policy) -> dict:
    """Both players' reach and counterfactual values at every public node when both play
    `policy` `[S, H, *batch]` (one pass; for reports, `cfrjax.public.report`, not the
    iteration).

    Returns a dict of arrays (`N1` trunk nodes, `B` boards of `n2` forest nodes, node
    order as `PublicGame`'s stages; lane `p` is player p):
      trunk_reach, trunk_values: `[N1, 2, H, *batch]` (`[0, 2, H, *batch]` on a river).
      forest_reach, forest_values: `[B, n2, 2, H, *batch]`.
    `reach[n, p, h]`: player p's own reach of node n with hand h, range weight included
    (0 for a hand holding a card dealt above n). `values[n, p, h]`: player p's
    counterfactual value of n with hand h, as the passes compute it (module docstring:
    the opponent's reach, chance (1/44 below a turn spot's river card) and `1 / Z`
    included, the own reach not); on a trunk node, the sum over the boards below. Memory:
    `2 (N1 + B n2) 2 H` numbers (the full-range turn with one raise: about 150 MB each
    in float64).
    """
    return tree_passes.on_platform(lambda cpu: sweep.sweep(game, passes.extend(policy), (0, 1), "nodes", cpu))


def trunk_values(game: PublicGame, policy) -> dict:
    """`node_values`' `trunk_reach` and `trunk_values` alone (a game with a trunk: a turn
    or flop spot), the forests' nodes not kept: a flop's forests hold most of its nodes
    (every river board's), too many to keep at once on one device for a realistic flop."""
    return tree_passes.on_platform(lambda cpu: sweep.sweep(game, passes.extend(policy), (0, 1), "trunk_nodes", cpu))
