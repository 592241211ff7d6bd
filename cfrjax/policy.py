"""Policies as `[S]` slot vectors: both players' behaviour strategies, one entry per action."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from cfrjax import passes
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
    """The strategy the next iteration will play (regret matching of the regrets), `[S]`."""
    return passes.regret_matching(game, state.regret)


def uniform_policy(game: CompiledGame, dtype=None):
    """The uniform random policy, `[S]`."""
    return game.slot_uniform if dtype is None else game.slot_uniform.astype(dtype)
