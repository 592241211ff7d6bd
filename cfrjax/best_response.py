"""Exact best response, exploitability and expected value, for every compiled form (jit-able).

The form's module (`cfrjax.forms`) computes the best-response values: sweeps of the
backward pass over information sets in the tabular form (`cfrjax.tabular`), one pass
with a max over actions per hand in the public form. Exploitability is their mean in a
zero-sum game; in a raked (not zero-sum) poker spot it is, as postflop-solver defines it,
the mean over the players of (best-response value - the profile's value).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax.forms import form_of, raked

__all__ = ["best_response_value", "best_response_values", "exploitability", "expected_value", "expected_values"]


def best_response_value(game, policy, player: int):
    """Value to `player` of a best response against the opponent's part of `policy`.

    In the zero-sum (shifted) game: player 1's value is the negated player-0 value.
    """
    form = form_of(game)
    if hasattr(form, "best_response_value"):
        return form.best_response_value(game, policy, player)
    return form.best_response_values(game, policy)[player]


@jax.jit
def best_response_values(game, policy):
    """`[2]` best-response values of both players against `policy` (`game.slot_shape`)."""
    return form_of(game).best_response_values(game, policy)


@jax.jit
def exploitability(game, policy):
    """NashConv / 2 of `policy`: the mean gain of the two best responses. Exact.

    Zero-sum: `(BR_0 + BR_1) / 2`. Raked (`cfrjax.forms.raked`): `((BR_0 - v_0) + (BR_1 -
    v_1)) / 2` with `v = expected_values(game, policy)`, postflop-solver's
    `compute_exploitability`; 0 exactly at a Nash equilibrium in both cases."""
    if raked(game):
        return exploitability_and_value(game, policy)[0]
    return 0.5 * jnp.sum(best_response_values(game, policy))


def exploitability_and_value(game, policy):
    """`(exploitability, player 0's value)` of `policy` (traceable; what the solver's
    evaluations report). A raked game computes both players' values once, for both; a
    form with an `evaluation` (`cfrjax.forms`) gives both from one sweep."""
    form = form_of(game)
    if hasattr(form, "evaluation"):
        br, values = form.evaluation(game, policy)
        return 0.5 * jnp.sum(br - values if raked(game) else br, axis=0), values[0]
    if raked(game):
        values = expected_values(game, policy)
        return 0.5 * jnp.sum(best_response_values(game, policy) - values), values[0]
    return exploitability(game, policy), expected_value(game, policy)


@jax.jit
def expected_value(game, policy):
    """Player 0's expected payoff when both play `policy` (in the source's units)."""
    return form_of(game).expected_value(game, policy)


@jax.jit
def expected_values(game, policy):
    """`[2]`: each player's expected payoff when both play `policy`. Zero-sum games give
    `[v, -v]`; in a raked poker spot player 1's is not minus player 0's (`-(v_0 + v_1)`
    is the expected rake)."""
    return form_of(game).expected_values(game, policy)
