"""The public form's terminal values `[T, L, H, *batch]` from the opponent's reach.

Folds and showdowns (`cfrjax.public.terminals` sums the opponent's compatible reach with
card removal) times the stake (chance folded in: 1/44 per river card, 1/45 per flop's
turn card, as the tabular form's `pi_c u`), the player's sign and `1 / Z`:
counterfactual values (the opponent's range weight and chance included, the own weight
not), equal to the tabular form's divided by `w_p[h]`. A raked game (`PublicGame.raked`,
static) is not zero-sum: each player's fold payoff is its own (`*_fold_values [F, 2]`,
the winner's less the rake) and a showdown's value is `(sd - r/2)(Wk - St) - (r/2) C`
(`showdown_values`); an unraked game runs the zero-sum code, unchanged.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from cfrjax.passes import lift
from cfrjax.public import terminals, tree_passes, two_lists

__all__ = ["fold_values", "showdown_values"]


def fold_values(game, reach, nodes, payoff, lanes, inv_z, cpu: bool, values=None, compat=None):
    """Fold terminals' values `[F, L, H, *batch]` of `lanes`' players: player 0's `payoff
    [F]` with the sign of each lane, or in a raked game each player's own `values [F, 2]`.
    `compat`: the compatible opponent reach already summed (`terminals.dense_pair`)."""
    nd = reach.ndim
    # (The sign constant is made first, as before rake existed: the unraked program stays the same, bit for bit.)
    sign = None if values is not None else jnp.asarray(np.array([1.0, -1.0])[list(lanes)], reach.dtype)
    row = (values.astype(reach.dtype)[:, lanes[0]:lanes[-1] + 1] if values is not None
           else payoff.astype(reach.dtype)[:, None] * sign[None, :])                 # [F, L]: stake and sign
    if compat is not None:
        return compat * lift(row, nd) * inv_z
    if game.player_lists:   # one hand list per player: the XLA sums across the two lists
        return two_lists.lane_fold_compat(game, reach[nodes], lanes, cpu) * lift(row, nd) * inv_z
    return terminals.fold_values(game, tree_passes.opponent(reach[nodes], lanes, 1), lift(row, nd), inv_z, cpu)


def showdown_values(game, board: dict, reach, lanes, inv_z, cpu: bool, diff=None):
    """One board's showdown values `[K, L, H, *batch]` of `lanes`' players.

    Unraked: `stake * (Wk - St)`. Raked (rake `r` per showdown, paid by the winner, half
    each at a tie): with the opponent's compatible reach `W` weaker, `L` stronger, `T`
    tied and `C = W + L + T`, the value `(sd - r) W - sd L - (r / 2) T` is
    `(sd - r / 2)(W - L) - (r / 2) C`: one more compatible-reach sum (as at folds).
    `diff`: `Wk - St` already summed (`terminals.dense_pair`, unraked)."""
    nd = reach.ndim
    dt = reach.dtype
    if game.player_lists:   # one hand list per player: the XLA sums across the two lists
        own = reach[game.forest_showdown_node]
        diff = two_lists.lane_showdown_diff(game, board, own, lanes, cpu)
        total = (lambda: two_lists.lane_fold_compat(game, own, lanes, cpu))      # noqa: E731
    else:
        opp = tree_passes.opponent(reach[game.forest_showdown_node], lanes, 1)
        total = (lambda: terminals.fold_compat(game, opp, cpu))              # noqa: E731
    if diff is None:
        diff = terminals.showdown_diff(game, board, opp, cpu)
    stake = game.forest_showdown_stake.astype(dt)
    if not game.raked:
        return diff * lift(stake[:, None], nd) * inv_z
    half = 0.5 * game.forest_showdown_rake.astype(dt)
    total = total()
    return (diff * lift((stake - half)[:, None], nd) - total * lift(half[:, None], nd)) * inv_z
