"""Retargeting a tabular game: new payoffs or chance probabilities on the same tree.

(Poker ranges are re-targeted by `cfrjax.games.poker.set_root_ranges`, for either form;
batch axes of re-targeted games come from `cfrjax.batch.batch_axes`.)

The paper (appendix H) splits a compiled game into immutable fields (the index arrays:
tree shape, information sets, slots) and mutable ones (the float leaves: payoffs, chance
probabilities and what is derived from them). The functions here return a new
`CompiledGame` with only float leaves replaced. Static metadata (sizes, levels,
`labels`) is kept as is, so a jitted solve of the new game hits the cached executable
instead of retracing, and they are written with `jnp` ops so that they can run under
`jit` and `vmap` (e.g. a batch of games with different root ranges: `cfrjax.batch_axes`).

Derived leaves are recomputed the way `compile_game` computes them (same products in
the same order), so in float64 a retargeted game equals the game compiled from scratch
bit for bit. `labels.fingerprint` keeps describing the original compiled game (it is
the cache key of the static metadata and must not change).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.game import CompiledGame
from cfrjax.state import SolverState

__all__ = ["reset", "root_outcomes", "set_payoffs", "set_root_chance"]


def _is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _fdt(game: CompiledGame):
    return game.template.dtype


def set_payoffs(game: CompiledGame, payoff) -> CompiledGame:
    """A copy of `game` with player 0's terminal payoffs replaced.

    Args:
      game: the compiled game.
      payoff: `[N]` player-0 payoffs in the compiled node order (entries at non-terminal
        nodes must be 0, as in `game.payoff`).

    `template` is recomputed: `chance_reach * payoff` when chance is folded, else
    `payoff`.
    """
    payoff = jnp.asarray(payoff, _fdt(game))
    if payoff.shape[-1:] != (game.num_nodes,):
        raise ValueError(f"payoff has shape {payoff.shape}, expected [{game.num_nodes}]")
    template = game.chance_reach * payoff if game.chance_folded else payoff
    return dataclasses.replace(game, payoff=payoff, template=template)


def root_outcomes(game: CompiledGame) -> tuple[int, int]:
    """`(lo, hi)`: the root chance node's children are nodes `lo:hi` (level 1)."""
    if len(game.level_start) < 3:
        raise ValueError(f"{game.name}: the root has no children")
    lo, hi = game.level_start[1], game.level_start[2]
    if _is_concrete(game.lane_slot) and _is_concrete(game.val_slot):
        if np.any(np.asarray(game.val_slot[lo:hi]) != game.num_slots):
            raise ValueError(f"{game.name}: the root is a decision node, not a chance node")
    return lo, hi


def set_root_chance(game: CompiledGame, probs) -> CompiledGame:
    """A copy of `game` with new probabilities of the root chance node's outcomes.

    Args:
      game: the compiled game; its root must be a chance node.
      probs: `[K]` probabilities of the root's children in compiled order (for games
        built by `cfrjax.games.poker.build_spec`, the deals in `root_deals` order). They
        are used as given (not renormalized).

    Recomputes `edge_prob`, `chance_reach` (level by level, `pi_c(c) = pi_c(parent) *
    edge_prob(c)`, as `compile_game` does), `dec_chance` and `template`.
    """
    lo, hi = root_outcomes(game)
    dt = _fdt(game)
    probs = jnp.asarray(probs, dt)
    if probs.shape != (hi - lo,):
        raise ValueError(f"probs has shape {probs.shape}, expected [{hi - lo}] (the root's children)")
    return dataclasses.replace(game, **_root_chance_arrays(game, probs))


@jax.jit
def _root_chance_arrays(game: CompiledGame, probs) -> dict:
    # One executable per game structure (eager, the per-level ops cost seconds on the first call).
    # Arrays out, not the game: jit would hand back the labels of the game it was first
    # traced with (labels compare by fingerprint, which leaves out the name and source).
    lo, hi = game.level_start[1], game.level_start[2]
    dt = _fdt(game)
    edge_prob = game.edge_prob.at[lo:hi].set(probs)
    ls = game.level_start
    levels = [jnp.ones((1,), dt)]
    for d in range(1, len(ls) - 1):
        a, b = ls[d], ls[d + 1]
        par = game.parent[a:b] - ls[d - 1]
        levels.append(levels[-1][par] * edge_prob[a:b])
    chance_reach = jnp.concatenate(levels)
    template = chance_reach * game.payoff if game.chance_folded else game.template
    return dict(edge_prob=edge_prob, chance_reach=chance_reach, dec_chance=chance_reach[game.dec_parent],
                template=template)


def reset(state: SolverState) -> SolverState:
    """A fresh state with `state`'s configuration (and shapes, dtypes): zero regrets,
    empty average, iteration 0; node locks are kept. Works on a batch of states too."""
    zeroed = jax.tree.map(jnp.zeros_like, state)
    return dataclasses.replace(zeroed, locked=state.locked, locked_policy=state.locked_policy)
