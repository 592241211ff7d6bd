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
from cfrjax.memory import guard
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


@functools.partial(jax.jit, static_argnames=("eval_every", "max_chunks"))
def _solve_to_target(game, state, target, eval_every, max_chunks):
    """`lax.while_loop` over chunks of `eval_every` scanned iterations; stops after the
    first chunk whose evaluation is below `target` or after `max_chunks` chunks."""
    dt = state.regret.dtype
    its = jnp.zeros((max_chunks,), jnp.int32)
    es = jnp.full((max_chunks,), jnp.nan, dt)
    vs = jnp.full((max_chunks,), jnp.nan, dt)

    def cond(carry):
        k, _, e, *_ = carry
        return (k < max_chunks) & ~(e < target)

    def body(carry):
        k, s, _, its, es, vs = carry
        s = _run(game, s, eval_every)
        e, v = _evaluate(game, s)
        return k + 1, s, e, its.at[k].set(s.iteration), es.at[k].set(e), vs.at[k].set(v)

    init = (jnp.zeros((), jnp.int32), state, jnp.asarray(jnp.inf, dt), its, es, vs)
    k, state, _, its, es, vs = jax.lax.while_loop(cond, body, init)
    return state, k, Trace(iteration=its, exploitability=es, value=vs)


def solve(game: CompiledGame, state: SolverState, iterations: int | None = None, *,
          eval_every: int | None = None, target_exploitability: float | None = None,
          max_iterations: int | None = None, check_memory: bool = True):
    """Run CFR iterations in one compiled executable.

    Two modes:
      * fixed: `solve(game, state, iterations[, eval_every=K])` runs exactly `iterations`.
      * target-driven: `solve(game, state, eval_every=K, target_exploitability=eps,
        max_iterations=N)` runs chunks of K scanned iterations inside a
        `lax.while_loop`, evaluating the average policy after each, and stops at the
        first checkpoint whose exploitability is below `eps` (or after `N // K` chunks,
        i.e. `N` rounded down to a multiple of K, at least one chunk).

    Args:
      game: the compiled game.
      state: the state to continue from (its config selects the rule).
      iterations: number of iterations (a Python int; one executable per value); `None`
        in target-driven mode.
      eval_every: if given, also evaluate the average policy's exploitability and value
        every `eval_every` iterations (and after the last one), inside the executable.
      target_exploitability: stop threshold (target-driven mode; needs `eval_every` and
        `max_iterations`).
      max_iterations: iteration cap of the target-driven mode.
      check_memory: first check the memory plan against the device's free memory
        (`cfrjax.memory.guard`; raises `cfrjax.memory.MemoryPlanError` stating both).

    Returns:
      The new state; with `eval_every`, the pair `(state, trace)` where `trace` is a
      `Trace` of `[K]` arrays. In target-driven mode the trace holds only the
      checkpoints actually run (`trace.iteration` holds the state's iteration counter at
      each, so `trace.iteration[-1]` is the iteration it stopped at); the returned state is the one at the
      stopping checkpoint.
    """
    if check_memory:
        guard(game, state)
    if target_exploitability is not None or max_iterations is not None:
        if iterations is not None:
            raise ValueError("give either iterations or target_exploitability/max_iterations, not both")
        if target_exploitability is None or max_iterations is None or eval_every is None:
            raise ValueError("target-driven solving needs eval_every, target_exploitability and max_iterations")
        if not isinstance(eval_every, int) or eval_every <= 0:
            raise ValueError(f"eval_every must be a positive int, got {eval_every!r}")
        if not isinstance(max_iterations, int) or max_iterations < eval_every:
            raise ValueError(f"max_iterations must be an int >= eval_every ({eval_every}), got {max_iterations!r}")
        target = float(target_exploitability)
        state, k, trace = _solve_to_target(game, state, jnp.asarray(target, state.regret.dtype),
                                           eval_every, max_iterations // eval_every)
        k = int(k)
        return state, jax.tree.map(lambda x: x[:k], trace)
    if iterations is None:
        raise ValueError("iterations is required unless target_exploitability and max_iterations are given")
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a non-negative int, got {iterations!r}")
    if eval_every is not None and (not isinstance(eval_every, int) or eval_every <= 0):
        raise ValueError(f"eval_every must be a positive int or None, got {eval_every!r}")
    state, trace = _solve(game, state, iterations, eval_every)
    return state if eval_every is None else (state, trace)
