"""Policies as `[S]` slot vectors: both players' behaviour strategies, one entry per action."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax import passes, rules
from cfrjax.game import CompiledGame
from cfrjax.state import SolverState


def normalize(game: CompiledGame, weights):
    """Per-information-set normalization of non-negative slot weights, uniform where all are 0. `[S] -> [S]`."""
    total = passes.segment_sum_slots(game, weights)
    safe = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, weights / safe, game.slot_uniform.astype(weights.dtype))


@jax.jit
def average_policy(game: CompiledGame, state: SolverState):
    """The average strategy (the one that converges to equilibrium), `[S]`."""
    return normalize(game, state.avg)


@jax.jit
def current_policy(game: CompiledGame, state: SolverState):
    """The strategy the next iteration will play, `[S]`: regret matching of the regrets
    after the rule's pending discount (plus the prediction for predictive rules)."""
    cfg = state.config
    regret = rules.discount(cfg, state.regret, state.iteration.astype(state.regret.dtype))
    sigma = passes.regret_matching(game, rules.strategy_regret(cfg, regret, state.prediction))
    return jnp.where(state.locked, state.locked_policy.astype(sigma.dtype), sigma)


def uniform_policy(game: CompiledGame, dtype=None):
    """The uniform random policy, `[S]`."""
    return game.slot_uniform if dtype is None else game.slot_uniform.astype(dtype)
