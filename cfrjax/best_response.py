"""Exact best response, exploitability and expected value on the compiled arrays (jit-able).

A best response for player i is found by sweeps of the backward value pass: each sweep
picks, at every information set of i, the action maximizing the counterfactual value
`sum_{h in I} pi_{-i}(h) v_i(h.a)` under the current choice below it. After k sweeps every
set with at most k own decisions below it is exact (perfect recall orders i's sets as a
forest), so `game.br_rounds[i]` sweeps give the exact best response; a last value pass
scores it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax import passes
from cfrjax.game import CompiledGame


def _argmax_one_hot(game: CompiledGame, q, player: int):
    """One-hot of the first best action per information set over player's slots."""
    slo, shi = (0, game.slot_split) if player == 0 else (game.slot_split, game.num_slots)
    seg = game.slot_infoset[slo:shi]
    n = game.num_infosets
    qmax = jax.ops.segment_max(q, seg, num_segments=n, indices_are_sorted=True)[seg]
    idx = jnp.arange(shi - slo)
    first = jax.ops.segment_min(jnp.where(q >= qmax, idx, shi - slo), seg, num_segments=n,
                                indices_are_sorted=True)[seg]
    return (idx == first).astype(q.dtype)


def best_response_value(game: CompiledGame, policy, player: int):
    """Value to `player` of a best response against the opponent's part of `policy` `[S]`.

    In the zero-sum (shifted) game: player 1's value is the negated player-0 value.
    """
    slo, shi = (0, game.slot_split) if player == 0 else (game.slot_split, game.num_slots)
    reach_flat = passes.reach(game, passes.extend(policy)).reshape(-1)

    def sweep(_, mixed):
        vals = passes.values(game, passes.extend(mixed))
        q = passes.counterfactual_action_values(game, reach_flat, vals, player)
        return mixed.at[slo:shi].set(_argmax_one_hot(game, q, player))

    mixed = jax.lax.fori_loop(0, game.br_rounds[player], sweep, policy)
    v0 = passes.values(game, passes.extend(mixed))[0]
    return v0 if player == 0 else -v0


@jax.jit
def best_response_values(game: CompiledGame, policy):
    """`[2]` best-response values of both players against `policy`."""
    return jnp.stack([best_response_value(game, policy, 0), best_response_value(game, policy, 1)])


@jax.jit
def exploitability(game: CompiledGame, policy):
    """NashConv / 2 of `policy` `[S]`: the mean gain of the two best responses. Exact."""
    return 0.5 * jnp.sum(best_response_values(game, policy))


@jax.jit
def expected_value(game: CompiledGame, policy):
    """Player 0's expected payoff when both play `policy` `[S]` (in the source's units)."""
    v0 = passes.values(game, passes.extend(policy))[0]
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return v0 + offset
