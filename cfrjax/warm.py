"""Warm start: continue solving a changed game from a solution of the same tree.

After a small change to a solved spot (a range narrowed with `set_root_ranges`, payoffs
or chance probabilities retargeted, an information set locked with `cfrjax.lock`), the
previous solver state is a far better start than zeros: its regrets already point at
the actions that were right, and its average is near the new equilibrium. On the
`hunl_river` public spot (DCFR alternating, K = 100 hands), with a tenth or a third of
player 0's hands removed, a warm start reached 0.3% of the pot after 10 and 20
iterations where a cold start needed 30 and 40 (evaluations every 10).

The state keeps its configuration and its iteration count (discounting and averaging
weights continue where they stopped), so a warm-started solve is the old solve carried
on against the new game.

**From a policy alone** (an `[S]` / `[S, H]` array, or a file written by `save_policy` /
`cfrjax solve --save-policy`: no regrets, no history) the state is the start of a new
solve whose regret minimizers begin at the policy `pi`: at each information set `I`
the cumulative regrets are

    R(I, a) = strength * D(I) * pi(I, a),    D(I) = max_a r(I, a) - min_a r(I, a),

with `r` the counterfactual regrets of `pi` against itself (one pass of the form's
`regret_pass`). Regret matching of `R` is `pi` exactly, so the first iteration plays the
policy; `D(I)` is the spread of the set's counterfactual action values, the most one
iteration of regret can move an action there (to first order), so `strength` counts
iterations: the solve keeps to `pi` at a set until about that many iterations' worth of
evidence says otherwise. The average and the iteration count start from zero (the
solve's own averaging builds the average from iterates that begin at `pi`). Claiming the
policy's past instead (its average with the weight of T iterations, and the regrets T
iterations of playing `pi` would accumulate, in the spirit of Brown & Sandholm's 2016
strategy-based warm start for CFR)
was slower than a cold start in every case tried while designing this: those regrets
do not regret-match to `pi`, and DCFR's weights then pin the average to a policy the new
iterates have left. The default strength 50 was picked among strengths from 30 to 1,000
tried on `hunl_river` (30 to 100 hands; DCFR and CFR+; `bench/warm_start.py`, measured:
`bench/README.md`, "History from the code"). A warm start usually, not always, beats a
cold one. A policy holds less than a state, whose regrets
carry the solve's own dynamics: warm start from the state where there is one.
"""

from __future__ import annotations

import dataclasses
import os

import jax
import jax.numpy as jnp

from cfrjax import passes
from cfrjax.checkpoint import load_checkpoint
from cfrjax.forms import form_name, form_of
from cfrjax.rules import Config
from cfrjax.state import SolverState, init_config, resolve_dtype
from cfrjax.storage import encode_regret
from cfrjax.strategy import is_policy_file, load_policy

__all__ = ["DEFAULT_STRENGTH", "policy_state", "warm_start"]

#: Iterations' worth of regret behind a policy warm start (module docstring).
DEFAULT_STRENGTH = 50.0


def warm_start(game, source, *, config: Config | None = None, strength: float = DEFAULT_STRENGTH) -> SolverState:
    """A state to solve `game` from, taken from a solution of the same tree.

    Args:
      game: the changed game (any form, `cfrjax.forms`).
      source: the previous `SolverState`; the path of a checkpoint (`cfrjax.save_checkpoint`)
        made for a game with the same tree: other payoffs, ranges or chance probabilities
        are what a warm start is for (`load_checkpoint` refuses those, to keep resumption
        exact); or a policy alone: an array shaped `game.slot_shape`
        (`cfrjax.average_policy(old_game, state)`), or the path of a policy file
        (`save_policy`, `cfrjax solve --save-policy`: `.json`, or `.npz`), read by
        `load_policy` (matched by information-set names).
      config: if given, the source's config must equal it (the command line passes the
        one its options ask for); for a policy, the config of the new state (default:
        `Config()` in JAX's default float, as `cfrjax.init`).
      strength: for a policy: how many iterations' worth of regret hold the solve to it
        (`policy_state`).

    Returns:
      The state, ready for `cfrjax.solve(game, state, ...)`: a state or checkpoint keeps
      its config and iteration; a policy gives `policy_state`'s (iteration 0).

    Raises:
      CheckpointError: the checkpoint was made for another tree or another config, or is
        unreadable.
      ValueError: the state's (or policy's) arrays do not have the game's slot shape
        (another tree or form), the state has another config, or a policy file does
        not match the game.
    """
    if isinstance(source, (str, os.PathLike)):
        if is_policy_file(source):
            return policy_state(game, load_policy(source, game), config=config, strength=strength)
        return load_checkpoint(source, game, config=config, retargeted=True)
    if not isinstance(source, SolverState):
        return policy_state(game, source, config=config, strength=strength)
    if config is not None and source.config != config:
        raise ValueError(f"warm_start: the state was solved with {source.config}, not {config}")
    shape = tuple(source.regret.shape)
    if shape != tuple(game.slot_shape):
        raise ValueError(f"warm_start: the state's slot arrays are {list(shape)}, the {form_name(game)} game's are "
                         f"{list(game.slot_shape)}: a warm start needs a solution of the same tree and form")
    return source


@jax.jit
def _policy_regret(game, policy, strength):
    """`strength * D(I) * policy` (module docstring), `D(I)` the spread of the
    counterfactual regrets of `policy` against itself at each information set. Where
    `D(I) = 0` (every action worth the same, e.g. a set the opponent never reaches), a
    millionth of the largest spread, so that regret matching still returns the policy."""
    zeros = jnp.zeros(game.slot_shape, policy.dtype)
    r, _ = form_of(game).regret_pass(game, passes.extend(policy), zeros, None)
    seg = game.slot_infoset

    def set_max(x):
        return jax.ops.segment_max(x, seg, num_segments=game.num_infosets, indices_are_sorted=True)[seg]
    spread = set_max(r) + set_max(-r)
    spread = jnp.maximum(spread, 1e-6 * jnp.max(spread))
    return strength * spread * policy


def policy_state(game, policy, *, config: Config | None = None, strength: float = DEFAULT_STRENGTH) -> SolverState:
    """A fresh state whose first iteration plays `policy` (module docstring).

    Args:
      game: the compiled game (any form).
      policy: both players' policy shaped `game.slot_shape` (probabilities per
        information set).
      config: the new state's config (default: `Config()` in JAX's default float).
      strength: iterations' worth of regret behind the policy: regrets
        `strength * D(I) * policy`, `D(I)` the spread of the set's counterfactual action
        values under the policy (positive; default `DEFAULT_STRENGTH`).

    Returns:
      `init(game)`'s state (iteration 0, empty average) with those regrets.

    Raises:
      ValueError: a policy of another shape, or a strength that is not positive.
    """
    if isinstance(strength, bool) or not (isinstance(strength, (int, float)) and 0 < strength < float("inf")):
        raise ValueError(f"warm_start: strength must be a positive number of iterations, got {strength!r}")
    config = config if config is not None else Config(dtype=resolve_dtype(None))
    state = init_config(game, config)
    dt = jnp.dtype(config.dtype)
    policy = jnp.asarray(policy, dt)
    if policy.shape != tuple(game.slot_shape):
        raise ValueError(f"warm_start: the policy has shape {list(policy.shape)}, the {form_name(game)} game's slot "
                         f"arrays are {list(game.slot_shape)}: a warm start needs a policy of the same tree and form")
    regret = _policy_regret(game, policy, jnp.asarray(strength, dt))
    if config.precision == "int16":   # stored in 16 bits with its node scales (`cfrjax.storage`)
        regret, scale = encode_regret(game, regret)
        return dataclasses.replace(state, regret=regret, regret_scale=scale)
    return dataclasses.replace(state, regret=regret)
