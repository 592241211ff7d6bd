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

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import xla_options
from cfrjax.state import SolverState


def _index(game, key, verb):
    """Where `key`'s entries sit in the slot arrays (`game.infoset_index`)."""
    try:
        return game.infoset_index(key)
    except KeyError:
        raise KeyError(f"{game.name}: no information set {key!r} to {verb}") from None


def _num_actions(index) -> int:
    sl = index[0] if isinstance(index, tuple) else index
    return sl.stop - sl.start


def lock(game, state: SolverState, strategies: Mapping[str, Sequence[float]]) -> SolverState:
    """Return `state` with the strategy at the given information sets fixed.

    Args:
      game: the compiled game (any form; keys as in `cfrjax.strategy.strategy_table`).
      state: the solver state (locks already present are kept unless overridden); one
        without locks (`locked` `None`, `cfrjax.init`'s) gets its mask and policy here.
      strategies: information-set key -> action probabilities, in the set's action order
        (`game.labels.action_names`).

    Raises:
      KeyError: an unknown information-set key.
      ValueError: a probability vector of the wrong length, negative, or not summing to 1;
        on a suit-merged game (`isomorphism = true`) a lock that breaks its symmetry
        (`cfrjax.games.poker.isomorphism.check_lock`).
    """
    if state.locked is None:   # nothing locked yet
        mask, values = np.zeros(np.shape(state.regret), bool), np.zeros(np.shape(state.regret), state.config.dtype)
    else:
        mask, values = np.asarray(state.locked).copy(), np.asarray(state.locked_policy).copy()
    merge = getattr(getattr(game, "labels", None), "merge", None)
    if merge is not None:   # a suit-merged public game
        merge.check_lock(game.labels, strategies)
    for key, probs in strategies.items():
        sl = _index(game, key, "lock")
        n = _num_actions(sl)
        p = np.asarray(probs, np.float64)
        if p.shape != (n,):
            raise ValueError(f"lock {key!r}: {p.shape[0] if p.ndim == 1 else p.shape} probabilities for "
                             f"{n} actions")
        if not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-9:
            raise ValueError(f"lock {key!r}: probabilities {p.tolist()} must be non-negative and sum to 1")
        mask[sl] = True
        values[sl] = p
    return dataclasses.replace(state, locked=jnp.asarray(mask), locked_policy=jnp.asarray(values, state.config.dtype))


def unlock(game, state: SolverState, keys: Sequence[str] | None = None) -> SolverState:
    """Release the locks at `keys` (all locks when `None`); a state without locks (`locked`
    `None`) is returned as it is (its keys still checked)."""
    if state.locked is None:
        for key in keys or ():
            _index(game, key, "unlock")
        return state
    mask = np.asarray(state.locked).copy()
    if keys is None:
        mask[:] = False
    else:
        for key in keys:
            mask[_index(game, key, "unlock")] = False
    return dataclasses.replace(state, locked=jnp.asarray(mask))


#: Lock-mask entries up to which `drop_idle_locks` reads the mask on the host: the copy
#: takes about a millisecond where compiling `_any` in a new process takes far longer
#: (cold, on the path from the build to a solved spot).
HOST_READ_ENTRIES = 2 ** 23

#: `jnp.any` as one jitted program (kept where the store is on, `cfrjax.programs`).
_any = xla_options.jit(lambda x: jnp.any(x))


def drop_idle_locks(state: SolverState) -> tuple[SolverState, tuple]:
    """`(state with locked = locked_policy = None, the two arrays)` when nothing is locked,
    else `(state, None)`; `restore_locks` puts them back.

    For the solve entry points (`cfrjax.solve`, `solve_batch`), outside any trace: with
    no lock, regret matching need not read two more slot-sized arrays every
    half-iteration (`cfrjax.iteration` skips the override when they are `None`). A state
    inside a trace (a jit of the caller's) keeps them: its values are unknown."""
    locked = state.locked
    if locked is None or isinstance(locked, jax.core.Tracer):
        return state, None
    # Small masks are read on the host (no executable to compile per shape), large ones
    # reduced where they live (a batch's mask is as large as its regrets).
    if bool(np.any(np.asarray(locked)) if np.size(locked) <= HOST_READ_ENTRIES else _any(locked)):
        return state, None
    return dataclasses.replace(state, locked=None, locked_policy=None), (locked, state.locked_policy)


def restore_locks(state: SolverState, dropped: tuple | None) -> SolverState:
    """The inverse of `drop_idle_locks` on the solved state (a solve never changes them)."""
    if dropped is None:
        return state
    return dataclasses.replace(state, locked=dropped[0], locked_policy=dropped[1])
