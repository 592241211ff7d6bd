"""Many iterations inside one XLA executable (`lax.scan`), with optional evaluation checkpoints."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp

from cfrjax.best_response import exploitability, expected_value
from cfrjax.game import CompiledGame
from cfrjax.iteration import step
from cfrjax.policy import average_policy
from cfrjax.state import SolverState


@dataclasses.dataclass(frozen=True)
class Trace:
    """Evaluation checkpoints of a solve, each `[K]`: iteration, exploitability, value."""

    iteration: Any
    exploitability: Any
    value: Any


jax.tree_util.register_dataclass(Trace, data_fields=["iteration", "exploitability", "value"], meta_fields=[])


def _run(game: CompiledGame, state: SolverState, iterations: int) -> SolverState:
    if iterations == 0:
        return state
    state, _ = jax.lax.scan(lambda s, _: (step(game, s), None), state, None, length=iterations)
    return state


def _evaluate(game, state):
    policy = average_policy(game, state)
    return exploitability(game, policy), expected_value(game, policy)


@functools.partial(jax.jit, static_argnames=("iterations", "eval_every"))
def _solve(game, state, iterations, eval_every):
    if eval_every is None:
        return _run(game, state, iterations), None
    chunks, tail = divmod(iterations, eval_every)

    def chunk(s, _):
        s = _run(game, s, eval_every)
        e, v = _evaluate(game, s)
        return s, (s.iteration, e, v)

    state, (its, es, vs) = jax.lax.scan(chunk, state, None, length=chunks)
    if tail:
        state = _run(game, state, tail)
        e, v = _evaluate(game, state)
        its = jnp.concatenate([its, state.iteration[None]])
        es, vs = jnp.concatenate([es, e[None]]), jnp.concatenate([vs, v[None]])
    return state, Trace(iteration=its, exploitability=es, value=vs)


def solve(game: CompiledGame, state: SolverState, iterations: int, *, eval_every: int | None = None):
    """Run `iterations` CFR iterations in one compiled executable.

    Args:
      game: the compiled game.
      state: the state to continue from (its config selects the rule).
      iterations: number of iterations (a Python int; one executable per value).
      eval_every: if given, also evaluate the average policy's exploitability and value
        every `eval_every` iterations (and after the last one), inside the executable.

    Returns:
      The new state; with `eval_every`, the pair `(state, trace)` where `trace` is a
      `Trace` of `[K]` arrays.
    """
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a non-negative int, got {iterations!r}")
    if eval_every is not None and (not isinstance(eval_every, int) or eval_every <= 0):
        raise ValueError(f"eval_every must be a positive int or None, got {eval_every!r}")
    state, trace = _solve(game, state, iterations, eval_every)
    return state if eval_every is None else (state, trace)
