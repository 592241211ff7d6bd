"""Retargeting a compiled game: new payoffs or chance probabilities on the same tree.

The paper (appendix H) splits a compiled game into immutable fields (the index arrays:
tree shape, information sets, slots) and mutable ones (the float leaves: payoffs, chance
probabilities and what is derived from them). The functions here return a new
`CompiledGame` with only float leaves replaced. Static metadata (sizes, levels,
`labels`) is kept as is, so a jitted solve of the new game hits the cached executable
instead of retracing, and they are written with `jnp` ops so that they can run under
`jit` and `vmap` (e.g. a batch of games with different root ranges: `batch_axes`).

Derived leaves are recomputed the way `compile_game` computes them (same products in
the same order), so in float64 a retargeted game equals the game compiled from scratch
bit for bit. `labels.fingerprint` keeps describing the original compiled game (it is
the cache key of the static metadata and must not change).
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.game import _DERIVED_FIELDS, _FLOAT_FIELDS, _INDEX_FIELDS, CompiledGame
from cfrjax.state import SolverState

__all__ = ["batch_axes", "reset", "root_outcomes", "set_payoffs", "set_root_chance", "set_root_ranges"]


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
    return _set_root_chance(game, probs)


@jax.jit
def _set_root_chance(game: CompiledGame, probs) -> CompiledGame:
    # One executable per game structure (eager, the per-level ops cost seconds on the first call).
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
    return dataclasses.replace(game, edge_prob=edge_prob, chance_reach=chance_reach,
                               dec_chance=chance_reach[game.dec_parent], template=template)


def set_root_ranges(game: CompiledGame, range0, range1) -> CompiledGame:
    """A copy of a poker subgame with new ranges (root deal probabilities).

    Args:
      game: compiled from `cfrjax.games.poker.build_spec` (the deals' hands are recorded
        in `game.labels.source["poker"]["range_support"]`).
      range0, range1: `[1326]` weights per combo (combo index order), >= 0.

    A deal's probability is `range0[hand0] * range1[hand1]` normalized over the game's
    deals (the non-conflicting pairs of the ranges it was built with). The tree is fixed:
    weight on a hand outside the built support is ignored, and a hand given weight 0
    keeps its deals with probability 0 (strategically the same as the smaller game).
    With concrete (non-traced) inputs the probabilities are computed in NumPy exactly
    as `build_spec` computes them, so the result equals the game built from scratch with
    these ranges (same support) bit for bit in float64; under `jit`/`vmap` they are
    computed with `jnp` (equal up to the rounding of the normalizing sum).
    """
    from cfrjax.games.poker.subgame import deal_probabilities, root_deals
    h0, h1 = _cached_root_deals(game, root_deals)
    if _is_concrete(range0) and _is_concrete(range1):
        w0, w1 = np.asarray(range0, np.float64), np.asarray(range1, np.float64)
        for p, w in enumerate((w0, w1)):
            if w.shape != (1326,):
                raise ValueError(f"range{p} has shape {w.shape}, expected [1326]")
            if np.any(w < 0) or not np.all(np.isfinite(w)):
                raise ValueError(f"range{p} has negative or non-finite weights")
            outside = np.setdiff1d(np.flatnonzero(w > 0), h0 if p == 0 else h1)
            if outside.size:
                warnings.warn(f"range{p}: {outside.size} hand(s) with positive weight are not in the game's "
                              "deals (built with a smaller range); their weight is ignored", stacklevel=2)
        probs = deal_probabilities(w0, w1, h0, h1)
    else:
        dt = _fdt(game)
        w0, w1 = jnp.asarray(range0, dt), jnp.asarray(range1, dt)
        p = w0[h0] * w1[h1]
        probs = p / jnp.sum(p)
    return set_root_chance(game, probs)


_DEALS_CACHE: dict = {}


def _cached_root_deals(game, root_deals):
    key = game.labels.fingerprint if game.labels is not None else None
    if key is not None and key in _DEALS_CACHE:
        return _DEALS_CACHE[key]
    out = root_deals(game)
    if key is not None:
        if len(_DEALS_CACHE) > 32:
            _DEALS_CACHE.clear()
        _DEALS_CACHE[key] = out
    return out


def batch_axes(game: CompiledGame, axis: int | None = 0) -> CompiledGame:
    """A `vmap` axes spec for a batch of retargeted games: the float leaves mapped over
    `axis`, the shared index arrays not mapped.

    E.g. `games = jax.vmap(set_root_ranges, (None, 0, 0), batch_axes(game))(game, r0, r1)`
    then `jax.vmap(lambda g, s: cfrjax.solve(g, s, 100), (batch_axes(game), 0))(games, states)`.
    """
    return dataclasses.replace(game, **{k: None for k in _INDEX_FIELDS + _DERIVED_FIELDS},
                               **{k: axis for k in _FLOAT_FIELDS})


def reset(state: SolverState) -> SolverState:
    """A fresh state with `state`'s configuration (and shapes, dtypes): zero regrets,
    empty average, iteration 0; node locks are kept. Works on a batch of states too."""
    zeroed = jax.tree.map(jnp.zeros_like, state)
    return dataclasses.replace(zeroed, locked=state.locked, locked_policy=state.locked_policy)
