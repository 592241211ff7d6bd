"""Node locking: fix the strategy at chosen information sets, solve the rest.

The locked slots and their strategy live in the state (`SolverState.locked`,
`SolverState.locked_policy`), so a locked solve is the same jitted iteration: regret
matching's output is overridden at locked slots before the passes. The other player then
learns a best response to the locked play, and the unlocked sets of the locking player
the best continuation given it.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from cfrjax.game import CompiledGame
from cfrjax.state import SolverState


def lock(game: CompiledGame, state: SolverState, strategies: Mapping[str, Sequence[float]]) -> SolverState:
    """Return `state` with the strategy at the given information sets fixed.

    Args:
      game: the compiled game.
      state: the solver state (locks already present are kept unless overridden).
      strategies: information-set key -> action probabilities, in the set's action order
        (`game.labels.action_names`).

    Raises:
      KeyError: an unknown information-set key.
      ValueError: a probability vector of the wrong length, negative, or not summing to 1.
    """
    slots = game.infoset_slots()
    mask = np.asarray(state.locked).copy()
    values = np.asarray(state.locked_policy).copy()
    for key, probs in strategies.items():
        if key not in slots:
            raise KeyError(f"{game.name}: no information set {key!r} to lock")
        sl = slots[key]
        p = np.asarray(probs, np.float64)
        if p.shape != (sl.stop - sl.start,):
            raise ValueError(f"lock {key!r}: {p.shape[0] if p.ndim == 1 else p.shape} probabilities for "
                             f"{sl.stop - sl.start} actions")
        if not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(f"lock {key!r}: probabilities {p.tolist()} must be non-negative and sum to 1")
        mask[sl] = True
        values[sl] = p
    return dataclasses.replace(state, locked=jnp.asarray(mask), locked_policy=jnp.asarray(values, state.regret.dtype))


def unlock(game: CompiledGame, state: SolverState, keys: Sequence[str] | None = None) -> SolverState:
    """Release the locks at `keys` (all locks when `None`)."""
    mask = np.asarray(state.locked).copy()
    if keys is None:
        mask[:] = False
    else:
        slots = game.infoset_slots()
        for key in keys:
            if key not in slots:
                raise KeyError(f"{game.name}: no information set {key!r} to unlock")
            mask[slots[key]] = False
    return dataclasses.replace(state, locked=jnp.asarray(mask))
