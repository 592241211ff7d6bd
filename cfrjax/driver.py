"""Driving a solve: many iterations inside one XLA executable (`lax.scan`), evaluation
checkpoints inside it, a target-exploitability stop, and `solve_chunks`, the chunked,
checkpointed loop the command line stands on.

`run_steps` is the one scan of `step`: `solve` runs it on one game, `solve_batch` on a
batch laid out batch-last (`cfrjax.batch`), `solve_sharded` on each device's share.
(Named `driver` so that `cfrjax.solve` is only the function.)"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.best_response import exploitability_and_value, expected_values
from cfrjax.checkpoint import checkpoint_info, load_checkpoint, save_checkpoint
from cfrjax.host import default_platform
from cfrjax.iteration import SLOT_FIELDS, join_slots, split_slots, split_step
from cfrjax.locking import drop_idle_locks, restore_locks
from cfrjax.memory import guard
from cfrjax.policy import average_policy
from cfrjax.state import SolverState
from cfrjax.storage import decoded
from cfrjax import xla_options


@dataclasses.dataclass(frozen=True)
class Trace:
    """Evaluation checkpoints of a solve, each `[K]` (NumPy, on the host): iteration,
    exploitability (in the game's payoff units: chips for a poker spot, whose % of the pot
    is `cfrjax.poker.pct_of_pot`), value (player 0's); `precision` is the float type the
    evaluation used (`"float64"`: always, whatever the iteration dtype, see `evaluate`)."""

    iteration: Any
    exploitability: Any
    value: Any
    precision: str = "float64"


jax.tree_util.register_dataclass(Trace, data_fields=["iteration", "exploitability", "value"],
                                 meta_fields=["precision"])

#: The float type of every reported figure (`evaluate`, traces, the target stop).
EVAL_DTYPE = "float64"


#: The automatic evaluation schedule of a target-driven solve (`target_evaluations`):
#: iterations run in chunks of `TARGET_EVAL_EVERY` (one executable), evaluated after the
#: first chunk and then each time the iterations done have grown by `TARGET_EVAL_GROWTH`.
#: An evaluation (both best responses, in float64) costs several iterations: every ten
#: iterations it would double a solve's work; on this schedule a run of N iterations
#: evaluates about `log(N / 10) / log(1.25)` times and passes its target by at most a
#: quarter of its iterations (plus a chunk).
TARGET_EVAL_EVERY = 10
TARGET_EVAL_GROWTH = 1.25


def target_reached(exploitability, target):
    """The stop rule of every target-driven solve (`solve_with_trace`, `solve_chunks`, `cfrjax solve
    --target`, `solve-batch --target`): an evaluation at or below the target. Works on
    floats and arrays (a batch's `[B]` exploitabilities against a target)."""
    return exploitability <= target


def target_evaluations(total: int, eval_every: int | None = None) -> list[int]:
    """The iteration counts in `(0, total]` after which a target-driven solve evaluates:
    every `eval_every` iterations when given, else `TARGET_EVAL_EVERY` times 1, 2, 3, 4,
    5, 7, 9, 12, 15, 19, ... (each `ceil(1.25 n)`, at least `n + 1`); and `total`, the cap.
    Its chunks are `eval_every` (or `TARGET_EVAL_EVERY`) iterations long, the last one
    up to `total` excepted."""
    if eval_every is not None:
        points = list(range(eval_every, total, eval_every))
    else:
        points, n = [], 1
        while n * TARGET_EVAL_EVERY < total:
            points.append(n * TARGET_EVAL_EVERY)
            n = max(n + 1, math.ceil(n * TARGET_EVAL_GROWTH))
    return points + [total]


def _target(target) -> float:
    """`target` as a float: a number >= 0 (0 is never reached: the solve runs to its cap;
    `inf` stops at the first evaluation), else `ValueError` naming it."""
    try:
        t = float(target)
    except (TypeError, ValueError):
        raise ValueError(f"target_exploitability must be a number >= 0, got {target!r}") from None
    if not t >= 0:
        raise ValueError(f"target_exploitability must be a number >= 0, got {target!r}")
    return t


#: `lax.scan` unroll factor of a small solve off the CPU (`scan_unroll`): a small game's
#: iteration is a few dozen short kernels, and the loop's own per-trip work counts; larger
#: solves gain little and compile longer (`bench/loop_unroll.py`; measured: `bench/README.md`,
#: "History from the code").
SMALL_SOLVE_UNROLL = 4
#: Regret entries (slots x hands x batch) up to which a solve counts as small.
SMALL_SOLVE_ENTRIES = 2 ** 17
#: Default least seconds between two checkpoint writes of `solve_chunks` without
#: `checkpoint_every`: a full-range turn's checkpoint is about 600 MB, too much to
#: rewrite at every evaluation of a fast solve.
CHECKPOINT_MIN_INTERVAL_S = 60.0


def scan_unroll(state: SolverState) -> int:
    """The unroll factor of `run_steps`' scan: `SMALL_SOLVE_UNROLL` for a small solve
    traced for an accelerator, else 1 (on CPU the kernels, not the loop, are the cost, and
    unrolling only lengthens the compile). The same iterations either way."""
    if default_platform() == "cpu" or math.prod(jnp.shape(state.regret)) > SMALL_SOLVE_ENTRIES:
        return 1
    return SMALL_SOLVE_UNROLL


def run_steps(game, state: SolverState, iterations: int) -> SolverState:
    """`iterations` applications of `step` as one `lax.scan` (traceable; `iterations`
    static; unrolled by `scan_unroll`). The scan carries the slot arrays as the players'
    halves under alternating order (`cfrjax.iteration.split_slots`): split once before,
    joined once after."""
    if iterations == 0:
        return state
    unroll = min(scan_unroll(state), iterations)
    carry, _ = jax.lax.scan(lambda s, _: (split_step(game, s), None), split_slots(game, state), None,
                            length=iterations, unroll=unroll)
    return join_slots(carry)


def with_float_dtype(tree, dtype):
    """`tree` (a game, a state, a policy) with every floating-point leaf cast to `dtype`."""
    return jax.tree.map(lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x, tree)


def _policy64(game, state: SolverState):
    """`(game, average policy)` with every float in float64 (trace under x64)."""
    game64 = with_float_dtype(game, jnp.float64)
    state = decoded(game, state)
    return game64, average_policy(game64, dataclasses.replace(state, avg=state.avg.astype(jnp.float64)))


def _evaluate(game, state: SolverState):
    """`(exploitability, value)` of the average policy, in float64 (trace under x64)."""
    return exploitability_and_value(*_policy64(game, state))


_evaluate_jit = xla_options.jit(_evaluate)
_values_jit = xla_options.jit(lambda game, state: expected_values(*_policy64(game, state)))


def evaluate(game, state: SolverState) -> tuple[float, float]:
    """`(exploitability, value)` of `state`'s average policy, computed in float64 whatever
    the iteration dtype (NumPy float64 scalars). The value is player 0's (both players':
    `evaluate_values`); in a raked spot the exploitability is postflop-solver's
    (`cfrjax.exploitability`).

    The average policy is normalised, and the best responses and the value summed, in
    float64 on the same device (64-bit types are enabled for this computation only; the
    game's float leaves are widened as they are). Float32 sums over millions of nearly
    cancelling terms lose the digits exploitability is made of: on a 16M-node river spot
    a float32 evaluation reported a NashConv 25x too high.

    Traceable: under `jax.vmap` / `jax.jit` it returns float64 JAX scalars, e.g. a batch
    from `solve_batch` with `jax.vmap(cfrjax.evaluate, (cfrjax.batch_axes(game), 0))`
    (`cfrjax.batch.evaluate_batch` infers the axes).

    Args:
      game: a compiled game of any form.
      state: a `SolverState` of `game`.

    Returns:
      `(exploitability, value)`: float64 scalars, in the game's payoff units (chips in a
      poker spot; `cfrjax.poker.pct_of_pot` gives them in % of the pot).
    """
    with jax.enable_x64(True):
        e, v = _evaluate_jit(game, state)
        if isinstance(e, jax.core.Tracer):
            return e, v
        return np.float64(e), np.float64(v)


def evaluate_values(game, state: SolverState) -> np.ndarray:
    """`[2]` float64: each player's expected value under `state`'s average policy, computed
    in float64 as `evaluate`. In a raked poker spot player 1's is not minus player 0's
    (`evaluate` and the traces report player 0's; `-(v_0 + v_1)` is the expected rake)."""
    with jax.enable_x64(True):
        return np.asarray(_values_jit(game, state), np.float64)


@functools.partial(xla_options.jit, static_argnames=("iterations", "eval_every"))
def _solve(game, state, iterations, eval_every):
    if eval_every is None:
        return run_steps(game, state, iterations), None
    chunks, tail = divmod(iterations, eval_every)

    def chunk(s, _):
        s = run_steps(game, s, eval_every)
        e, v = _evaluate(game, s)
        return s, (s.iteration, e, v)

    state, (its, es, vs) = jax.lax.scan(chunk, state, None, length=chunks)
    if tail:
        state = run_steps(game, state, tail)
        e, v = _evaluate(game, state)
        its = jnp.concatenate([its, state.iteration[None]])
        es, vs = jnp.concatenate([es, e[None]]), jnp.concatenate([vs, v[None]])
    return state, Trace(iteration=its, exploitability=es, value=vs)


def lower_solve(game, state: SolverState, iterations: int, eval_every: int | None = None, *, donate: bool = False):
    """The executable `solve(game, state, iterations, eval_every=..., donate=...)` runs,
    lowered (its idle locks dropped, `drop_idle_locks`): to compile ahead of time or read
    its HLO."""
    state, locks = drop_idle_locks(state)
    if donate:
        return _solve_donating.lower(game, *_give(state, locks), iterations, eval_every)
    return _solve.lower(game, state, iterations, eval_every)


def _give(state: SolverState, kept=None) -> tuple:
    """`(state without its slot arrays, {name: slot array})`: the arguments of a donating
    program (`_solve_donating`, `_chunk_donating`), whose slot arrays (`SLOT_FIELDS`, the
    bulk of the state) XLA may overwrite with the new state's; the scalars stay the
    caller's (an interrupted chunk still tells its iteration). A slot array that is also
    another leaf, or one of `kept` (idle locks set aside), is copied first: a buffer is
    donated once, and what outlives the solve must not be donated."""
    slots = {f: getattr(state, f) for f in SLOT_FIELDS if getattr(state, f) is not None}
    rest = dataclasses.replace(state, **{f: None for f in slots})
    seen = {id(x) for x in jax.tree.leaves((rest, kept))}
    for f, x in slots.items():
        if id(x) in seen:
            slots[f] = jnp.copy(x)
        seen.add(id(x))
    return rest, slots


@functools.partial(xla_options.jit, static_argnames=("iterations", "eval_every"), donate_argnums=(2,))
def _solve_donating(game, state, slots, iterations, eval_every):
    """`_solve` of `state` with its slot arrays `slots` (`_give`) donated."""
    return _solve(game, dataclasses.replace(state, **slots), iterations, eval_every)


_CHUNK_OPTIONS = {"xla_gpu_enable_while_loop_double_buffering": False}


@functools.partial(xla_options.jit, static_argnames=("iterations",), options=_CHUNK_OPTIONS)
def _chunk(game, state, iterations):
    """`run_steps`: a chunk of the target-driven solve, between two evaluations.

    Compiled without XLA:GPU's while-loop double buffering (`cfrjax.xla_options`): this is
    the program that answers "how long to a target from here", where its compile and load
    weigh more than a few percent of its iterations. Unrolling the iteration scan by two
    made it about a third larger, so it compiled and read back more slowly than the
    milliseconds its iterations gained (`bench/README.md`, "History from the code")."""
    return run_steps(game, state, iterations)


@functools.partial(xla_options.jit, static_argnames=("iterations",), options=_CHUNK_OPTIONS, donate_argnums=(2,))
def _chunk_donating(game, state, slots, iterations):
    """`_chunk` of `state` with its slot arrays `slots` (`_give`) donated."""
    return _chunk(game, dataclasses.replace(state, **slots), iterations)


def _program(plain, donating, donate: bool, kept=None):
    """`f(game, state, *statics)` running `plain` (a jit of `(game, state, *statics)`, or a
    runner of `xla_options.compile_concurrently`), or with `donate` `donating` on the
    state's slot arrays (`_give`; `kept`: leaves that outlive the call)."""
    if not donate:
        return plain
    return lambda game, state, *statics: donating(game, *_give(state, kept), *statics)


def solve(game, state: SolverState, iterations: int, *, check_memory: bool = True,
          donate: bool = False) -> SolverState:
    """Run `iterations` CFR iterations in one compiled executable (a `lax.scan` of `step`).

    A state in, a state out, as `step`, whatever the arguments: traceable, so
    `jax.jit(lambda g, s: cfrjax.solve(g, s, 100))` and `jax.vmap` over a batch work (as
    `solve_batch`). The exploitability curve, or a stop at a target exploitability, is
    `solve_with_trace`; a chunked, checkpointed run is `solve_chunks`.

    Args:
      game: the compiled game (any form, `cfrjax.forms`).
      state: the state to continue from (its config selects the rule).
      iterations: number of iterations (a Python int >= 0; one executable per value).
      check_memory: first check the memory plan against the device's free memory
        (`cfrjax.memory.guard`; raises `cfrjax.memory.MemoryPlanError` stating both).
      donate: let the solve take over `state`'s slot arrays (regret, average, ...): the
        new state is written into their buffers, so the device holds one copy of the
        state instead of two (`cfrjax.memory.memory_plan(..., donate=True)`), and
        `state`'s slot arrays are deleted (reading them raises) where the platform
        honours donation; its scalars (`iteration`, `avg_weight`) and locks stay
        readable. For a caller that drops `state` (`state = solve(game, state, n,
        donate=True)`). The same iterations, bit for bit.

    Returns:
      The `SolverState` after `iterations` more iterations.
    """
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a non-negative int, got {iterations!r}")
    if check_memory:
        guard(game, state, donate=donate)
    state, locks = drop_idle_locks(state)
    return restore_locks(_program(_solve, _solve_donating, donate, locks)(game, state, iterations, None)[0], locks)


def solve_with_trace(game, state: SolverState, iterations: int | None = None, *, eval_every: int | None = None,
                     target_exploitability: float | None = None, max_iterations: int | None = None,
                     check_memory: bool = True, donate: bool = False) -> tuple[SolverState, Trace]:
    """Run CFR iterations and evaluate the average policy along the way: always the pair
    `(state, trace)`. Runs on the host (it reads evaluations back), so not under
    `jax.jit`; the iterations are those of `solve`, bit for bit.

    Two modes:
      * fixed: `solve_with_trace(game, state, iterations[, eval_every=K])` runs exactly
        `iterations` in one executable, evaluations inside it every K iterations and
        after the last (default: once, after the last).
      * target-driven: `solve_with_trace(game, state, target_exploitability=eps,
        max_iterations=N[, eval_every=K])` runs chunks of K scanned iterations,
        evaluating the average policy after each and after the `N`-th iteration (the cap;
        a last, shorter chunk when K does not divide N); without K, chunks of
        `TARGET_EVAL_EVERY` evaluated on the schedule of `target_evaluations`. It stops at
        the first evaluation at or below `eps` (`target_reached`), else at the cap. The
        chunk and the evaluation are two executables, compiled side by side
        (`cfrjax.xla_options.compile_concurrently`; the last chunk, when shorter, only if
        it runs), and the host reads each evaluation before it runs the next chunk. The
        same rule, schedule (counted from `state`'s iteration) and programs as
        `solve_chunks(target=...)` and `cfrjax solve --target`.

    Args:
      game: the compiled game (any form, `cfrjax.forms`).
      state: the state to continue from (its config selects the rule).
      iterations: number of iterations (a positive Python int; one executable per value);
        `None` in target-driven mode.
      eval_every: evaluate the average policy's exploitability and value every
        `eval_every` iterations (and after the last one); target-driven: the evaluation
        cadence (default: `target_evaluations`' schedule).
      target_exploitability: stop threshold in the game's unit (chips for poker: x% of
        the pot is `cfrjax.games.poker.pot.target_chips("x%", game)`), a number >= 0
        (target-driven mode; needs `max_iterations`).
      max_iterations: iteration cap of the target-driven mode (a positive int).
      check_memory: as `solve`.
      donate: as `solve`.

    Returns:
      `(state, trace)`: the new state and a `Trace` of `[K]` arrays, one row per
      evaluation (`trace.iteration` holds the state's iteration counter at each). In
      target-driven mode the trace holds only the evaluations actually run
      (`trace.iteration[-1]` is the iteration it stopped at) and the state is the one at
      the stopping evaluation.
    """
    if eval_every is not None and (not isinstance(eval_every, int) or eval_every <= 0):
        raise ValueError(f"eval_every must be a positive int or None, got {eval_every!r}")
    target_mode = target_exploitability is not None or max_iterations is not None
    if target_mode:
        if iterations is not None:
            raise ValueError("give either iterations or target_exploitability/max_iterations, not both")
        if target_exploitability is None or max_iterations is None:
            raise ValueError("target-driven solving needs target_exploitability and max_iterations")
        if not isinstance(max_iterations, int) or max_iterations <= 0:
            raise ValueError(f"max_iterations must be a positive int, got {max_iterations!r}")
        target = _target(target_exploitability)
    elif iterations is None:
        raise ValueError("iterations is required unless target_exploitability and max_iterations are given")
    elif not isinstance(iterations, int) or iterations <= 0:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    if check_memory:
        guard(game, state, donate=donate)
    state, locks = drop_idle_locks(state)
    if not target_mode:
        with jax.enable_x64(True):  # the evaluation (only) runs in float64
            program = _program(_solve, _solve_donating, donate, locks)
            state, trace = program(game, state, iterations, eval_every or iterations)
            return restore_locks(state, locks), _host(trace)
    every = min(eval_every or TARGET_EVAL_EVERY, max_iterations)
    with jax.enable_x64(True):  # the evaluation (only) runs in float64
        evaluate_, chunk = xla_options.compile_concurrently(
            [(_evaluate_jit, (game, state)),
             (_chunk_donating, (game, *_give(state), every)) if donate else (_chunk, (game, state, every))])
        chunk, other = _program(chunk, _chunk_donating, donate, locks), _program(_chunk, _chunk_donating, donate, locks)
        rows, done = [], 0
        for point in target_evaluations(max_iterations, eval_every):
            while done < point:
                size = min(every, point - done)
                state = chunk(game, state, every) if size == every else other(game, state, size)
                done += size
            rows.append(jax.device_get((state.iteration, *evaluate_(game, state))))
            if target_reached(rows[-1][1], target):
                break
    its, es, vs = (np.asarray(c) for c in zip(*rows))
    return restore_locks(state, locks), _host(Trace(iteration=its, exploitability=es, value=vs))


def _host(trace: Trace, k: int | None = None) -> Trace:
    """The trace as NumPy arrays (the first `k` checkpoints), float64 kept."""
    cut = (lambda x: np.asarray(x)[:k]) if k is not None else np.asarray
    return Trace(iteration=cut(trace.iteration), exploitability=cut(trace.exploitability),
                 value=cut(trace.value), precision=trace.precision)


def stop_points(start: int, total: int, every: int, checkpoint_every: int | None = None) -> list[int]:
    """Iteration counts after which `solve_chunks` returns to the host, in `(start, total]`.

    Without checkpoints: multiples of `every`, and `total`. With them, multiples of
    `gcd(every, checkpoint_every)` (one chunk size, one compilation) unless that makes more
    than 1,000 chunks, then the union of both multiples. Points are absolute, so a resumed
    run stops at the same points as an uninterrupted one.
    """
    if checkpoint_every:
        unit = math.gcd(every, checkpoint_every)
        steps = [unit] if (total - start) // unit <= 1000 else [every, checkpoint_every]
    else:
        steps = [every]
    points = {total}
    for k in steps:
        points.update(range((start // k + 1) * k, total, k))
    return sorted(p for p in points if start < p <= total)


@dataclasses.dataclass
class Chunk:
    """Where a chunked solve stands after one chunk (yielded by `SolveChunks`).

    Attributes:
      state: the state after `iteration` iterations.
      iteration: iterations done in all (a resumed run counts the saved ones).
      solve_s: solve seconds in all (the saved run's included), compilation excluded.
      exploitability, value: of the average policy, if this chunk ended on an evaluation
        point (a multiple of `eval_every`, or the last), else `None`.
      saved: whether the checkpoint was written after this chunk.
    """

    state: SolverState
    iteration: int
    solve_s: float
    exploitability: float | None
    value: float | None
    saved: bool


class SolveChunks:
    """A solve run as chunks of scanned iterations, evaluated and checkpointed between them.

    Built by `solve_chunks`; iterate it to run. Attributes: `state` (the latest),
    `history` (`[iteration, solve seconds, exploitability, value]` per evaluation, the
    resumed checkpoint's included), `resumed_from` (the checkpoint's iteration, or
    `None`), `start`, `points` (the iteration counts it stops at), `memory` (the memory
    guard's answer: plan and free bytes), `target` (or `None`), `reached` (the iteration
    whose evaluation met the target, or `None`), `evaluations` (with a target: the
    iteration counts it evaluates at), `origin` (the iteration its target schedule counts
    from), `eval_s` (this process's evaluation seconds), `trace_s` and `compile_s` (of
    `compile`).
    """

    def __init__(self, game, state: SolverState, iterations: int, *, eval_every: int | None = None,
                 checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
                 extra: dict | None = None, check_memory: bool = True, target: float | None = None,
                 checkpoint_min_interval_s: float = CHECKPOINT_MIN_INTERVAL_S, clock=time.monotonic,
                 donate: bool = False):
        if not isinstance(iterations, int) or iterations <= 0:
            raise ValueError(f"iterations must be a positive int, got {iterations!r}")
        if not isinstance(checkpoint_min_interval_s, (int, float)) or not checkpoint_min_interval_s >= 0:
            raise ValueError(f"checkpoint_min_interval_s must be a number of seconds >= 0, got "
                             f"{checkpoint_min_interval_s!r}")
        for name, v in (("eval_every", eval_every), ("checkpoint_every", checkpoint_every)):
            if v is not None and (not isinstance(v, int) or v <= 0):
                raise ValueError(f"{name} must be a positive int or None, got {v!r}")
        if checkpoint_every is not None and checkpoint is None:
            raise ValueError("checkpoint_every needs a checkpoint path")
        self.game, self.iterations, self.donate = game, iterations, bool(donate)
        self.checkpoint = None if checkpoint is None else os.fspath(checkpoint)
        self.extra = dict(extra or {})
        self.target = None if target is None else _target(target)
        self.every = eval_every or (TARGET_EVAL_EVERY if self.target is not None else max(1, iterations // 10))
        self.checkpoint_every = checkpoint_every
        self.checkpoint_min_interval_s, self._clock = float(checkpoint_min_interval_s), clock
        self._saved_at = None    # the clock at the last write (or at the first chunk)
        self.history: list = []
        self.solve_s = self.eval_s = self.trace_s = self.compile_s = 0.0
        self.resumed_from = self.reached = None
        origin = int(state.iteration)   # a target's schedule counts from here (a warm start's iteration)
        if self.checkpoint is not None and os.path.exists(self.checkpoint):
            saved = checkpoint_info(self.checkpoint).get("extra") or {}
            if saved.get("target") is not None and self.target is None:
                raise ValueError(f"checkpoint {self.checkpoint} is of a solve to the target exploitability "
                                 f"{saved['target']:.6g}; give a target again to resume it (the same to continue "
                                 "that run)")
            origin = int(saved.get("target_origin", 0))
            state = load_checkpoint(self.checkpoint, game, config=state.config)
            self.history = [list(r) for r in saved.get("history", [])]
            self.solve_s = float(saved.get("solve_s", 0.0))
            self.resumed_from = int(state.iteration)
        self.state = state
        self.memory = guard(game, state, donate=self.donate) if check_memory else None
        self.start = int(state.iteration)
        # the iterations it stops at and those it evaluates at (`None`: multiples of `every`, and the last)
        self.origin = origin if self.target is not None else 0
        self.points = [self.origin + p for p in stop_points(self.start - self.origin, iterations - self.origin,
                                                            self.every, self.checkpoint_every)]
        self.evaluations = None if self.target is None else {
            self.origin + p for p in target_evaluations(iterations - self.origin, eval_every)}
        if self.target is not None:
            self.extra.update(target=self.target, target_origin=self.origin)
        last = self.history[-1] if self.history else None
        if self.target is not None and last and last[0] == self.start and target_reached(last[2], self.target):
            self.reached, self.points = self.start, []   # resumed at its target: nothing to run

    def compile(self) -> float:
        """Compile every executable the run needs (one per chunk size, and the evaluation)
        ahead of time (`cfrjax.xla_options.compile_concurrently`: each compiled on a thread
        of its own while the next is lowered; kept programs, or JAX's persistent cache,
        serve the run); returns the seconds it took, and keeps them apart: `trace_s`
        (tracing and lowering every program, or finding the kept ones), `compile_s` (the
        compiles' wait after that: XLA's compile, or reading its persistent cache)."""
        t0 = time.perf_counter()
        sizes = sorted({b - a for a, b in zip([self.start] + self.points[:-1], self.points)})
        state = drop_idle_locks(self.state)[0]   # as `solve` calls it
        chunk, whole = (_chunk_donating, _solve_donating) if self.donate else (_chunk, _solve)
        args = (self.game, *_give(state)) if self.donate else (self.game, state)
        lowered = []
        xla_options.compile_concurrently(
            [(chunk, (*args, size)) if self.target is not None else (whole, (*args, size, None)) for size in sizes]
            + [(_evaluate_jit, (self.game, self.state), lambda: jax.enable_x64(True))],
            on_lowered=lambda: lowered.append(time.perf_counter()))
        t2 = time.perf_counter()
        self.trace_s, self.compile_s = lowered[0] - t0, t2 - lowered[0]
        return t2 - t0

    def save(self) -> None:
        """Write the checkpoint (state, history, solve seconds, `extra`) now."""
        if self.checkpoint is None:
            raise ValueError("this run has no checkpoint path")
        save_checkpoint(self.checkpoint, self.game, self.state,
                        extra=dict(self.extra, history=self.history, solve_s=self.solve_s))
        self._saved_at = self._clock()

    def _due(self, point: int, evaluated: bool) -> bool:
        """Whether to write the checkpoint after `point`: at the end or where the target is
        met; every `checkpoint_every` iterations (from the target's origin) if given; else
        at an evaluation at least `checkpoint_min_interval_s` after the last write (or the
        run's first chunk)."""
        if self.checkpoint is None:
            return False
        if point == self.iterations or self.reached is not None:
            return True
        if self.checkpoint_every is not None:
            return (point - self.origin) % self.checkpoint_every == 0
        return evaluated and self._clock() - self._saved_at >= self.checkpoint_min_interval_s

    def evaluate(self) -> tuple[float, float]:
        """`(exploitability, value)` of the current average policy, in float64 (`evaluate`;
        recorded in `history`)."""
        t0 = time.perf_counter()
        e, v = evaluate(self.game, self.state)
        e, v = float(e), float(v)
        self.eval_s += time.perf_counter() - t0
        if not self.history or self.history[-1][0] != int(self.state.iteration):
            self.history.append([int(self.state.iteration), self.solve_s, e, v])
        return e, v

    def _run(self, iterations: int) -> SolverState:
        """`iterations` more from `state`: `solve`'s executable, or with a target the
        chunk executable of `solve_with_trace`'s target mode (the same program as the Python API's)."""
        if self.target is None:
            return solve(self.game, self.state, iterations, check_memory=False, donate=self.donate)
        state, locks = drop_idle_locks(self.state)
        return restore_locks(_program(_chunk, _chunk_donating, self.donate, locks)(self.game, state, iterations), locks)

    def __iter__(self):
        done = self.start
        self._saved_at = self._clock() if self._saved_at is None else self._saved_at
        for point in self.points:
            t0 = time.perf_counter()
            self.state = jax.block_until_ready(self._run(point - done))
            self.solve_s += time.perf_counter() - t0
            done = point
            e = v = None
            evaluated = point in self.evaluations if self.evaluations is not None else (
                point % self.every == 0 or point == self.iterations)
            if evaluated:
                e, v = self.evaluate()
                if self.target is not None and target_reached(e, self.target):
                    self.reached = point
            saved = self._due(point, e is not None)
            if saved:
                self.save()
            yield Chunk(self.state, point, self.solve_s, e, v, saved)
            if self.reached is not None:
                return


def solve_chunks(game, state: SolverState, iterations: int, *, eval_every: int | None = None,
                 checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
                 extra: dict | None = None, check_memory: bool = True, target: float | None = None,
                 checkpoint_min_interval_s: float = CHECKPOINT_MIN_INTERVAL_S, clock=time.monotonic,
                 donate: bool = False) -> SolveChunks:
    """A solve up to `iterations` in all, run chunk by chunk: evaluated, checkpointed, resumable.

        run = cfrjax.solve_chunks(game, state, 10_000, eval_every=500, checkpoint="run.ckpt")
        for chunk in run:                         # stop any time: run.save() keeps the work
            print(chunk.iteration, chunk.exploitability)
        state = run.state

    Args:
      game, state: as `solve` (`state` fixes the config).
      iterations: total iterations; a resumed run continues up to this number.
      eval_every: evaluate exploitability and value every K iterations and after the last
        (default: 10 evaluations).
      checkpoint: a path; if the file exists the run resumes from it (same game, same
        config, else `CheckpointError`), and the state is saved there every
        `checkpoint_every` iterations and at the end.
      checkpoint_every: iterations between two writes; default: at an evaluation, when
        `checkpoint_min_interval_s` have passed since the last write (or the start), so
        a large spot's checkpoint (600 MB for a full-range turn) is not rewritten at
        every evaluation of a fast solve; `run.save()` writes it any time (the command
        line does at SIGTERM).
      checkpoint_min_interval_s: seconds (default 60); 0 writes at every evaluation.
      clock: the time in seconds for that interval (default `time.monotonic`).
      extra: JSON-able data stored in the checkpoint beside the history.
      donate: each chunk takes over the state it continues from (`solve`'s `donate`): one
        copy of the state on the device, not two; `state` and each `chunk.state` are
        then valid only until the next chunk runs (the command line's loop, which keeps
        only the latest).
      check_memory: check the memory plan first (`cfrjax.memory.guard`).
      target: stop at the first evaluation at or below this exploitability (the game's
        unit, a number >= 0; `target_reached`, the rule of `solve_with_trace`'s target mode), with
        `iterations` the cap; evaluations every `eval_every`, else on
        `target_evaluations`' schedule (chunks of `TARGET_EVAL_EVERY`), the checkpoint
        saved at each by default; chunks and schedule count from `state`'s iteration
        (a warm start's), as `solve_with_trace`'s target mode. The checkpoint keeps the target: resuming one written with a
        target needs a target again, and a run resumed at an evaluation that meets it
        runs nothing (`reached` is its iteration, `points` empty).

    Returns:
      A `SolveChunks`: iterate it to run; each step yields a `Chunk`. Between chunks
      control is back in Python (progress bars, signals, stopping early). Iterations
      inside a chunk run as one executable (`solve`), so the result equals one `solve`
      of the same total bit for bit.
    """
    return SolveChunks(game, state, iterations, eval_every=eval_every, checkpoint=checkpoint,
                       checkpoint_every=checkpoint_every, extra=extra, check_memory=check_memory, target=target,
                       checkpoint_min_interval_s=checkpoint_min_interval_s, clock=clock, donate=donate)
