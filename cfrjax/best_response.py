"""Exact best response, exploitability and expected value, for every compiled form (jit-able).

The form's module (`cfrjax.forms`) computes the best-response values: sweeps of the
backward pass over information sets in the tabular form (`cfrjax.tabular`), one pass
with a max over actions per hand in the public form. Exploitability is their mean.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax.forms import form_of

__all__ = ["best_response_value", "best_response_values", "exploitability", "expected_value"]


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
    """NashConv / 2 of `policy`: the mean gain of the two best responses. Exact."""
    return 0.5 * jnp.sum(best_response_values(game, policy))


@jax.jit
def expected_value(game, policy):
    """Player 0's expected payoff when both play `policy` (in the source's units)."""
    return form_of(game).expected_value(game, policy)
