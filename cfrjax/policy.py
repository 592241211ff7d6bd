"""Policies as slot arrays: both players' behaviour strategies, one entry per action
(`[S]` in the tabular form, `[S, H]` per hand in the public form)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax import passes, rules
from cfrjax.state import SolverState
from cfrjax.storage import decoded


def normalize(game, weights):
    """Per-information-set normalization of non-negative slot weights, uniform where all are 0. `[S, ...] -> [S, ...]`."""
    total = passes.segment_sum_slots(game, weights)
    safe = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, weights / safe, passes.lift(game.slot_uniform.astype(weights.dtype), weights.ndim))


@jax.jit
def average_policy(game, state: SolverState):
    """The average strategy (the one that converges to equilibrium), shaped `game.slot_shape`."""
    return normalize(game, decoded(game, state).avg)


@jax.jit
def current_policy(game, state: SolverState):
    """The strategy the next iteration will play (`game.slot_shape`): regret matching of the regrets
    after the rule's pending discount (plus the prediction for predictive rules)."""
    state = decoded(game, state)
    cfg = state.config
    regret = rules.discount(cfg, state.regret, state.iteration.astype(state.regret.dtype))
    sigma = passes.regret_matching(game, rules.strategy_regret(cfg, regret, state.prediction))
    if state.locked is None:   # nothing locked
        return sigma
    return jnp.where(state.locked, state.locked_policy.astype(sigma.dtype), sigma)


def uniform_policy(game, dtype=None):
    """The uniform random policy, shaped `game.slot_shape`."""
    u = game.slot_uniform if dtype is None else game.slot_uniform.astype(dtype)
    return jnp.broadcast_to(passes.lift(u, len(game.slot_shape)), game.slot_shape)
