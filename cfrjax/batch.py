"""Solving a batch of subgames that share one tree, on one device, batch-last.

A *batched game* is a compiled game (any form, `cfrjax.forms`) whose re-targetable leaves
(`RETARGETABLE`; tabular: some or all of `template`, `payoff`, `chance_reach`,
`edge_prob`, `dec_chance`, ...: what `cfrjax.retarget` rewrites; public: the ranges)
carry a leading batch axis `B`, while the index arrays (tree shape, information sets,
slots) and any leaf without the axis are shared, e.g.

    games = jax.vmap(cfrjax.set_root_chance, (None, 0), cfrjax.batch_axes(game))(game, probs)
    states = cfrjax.batch.init_batch(game, B, rule="cfr+")
    states = cfrjax.solve_batch(games, states, 1000)          # leading B on every leaf

`solve_batch` equals `jax.vmap(lambda g, s: cfrjax.solve(g, s, iterations))` (tested to
rounding) but runs differently: it moves the batch axis *last* once (`[S, B]`,
`[N, B]`), runs the same `lax.scan` of `cfrjax.step` (`cfrjax.driver.run_steps`) on those arrays (the passes accept
trailing batch axes, see `cfrjax.passes`) and moves it back at the end. Under `vmap`
every gather of the tree passes reads one number per index from each subgame's row
(strided, and for a large batch the subgames' slot vectors no longer fit in cache);
batch-last, each index reads one contiguous row of `B` numbers. Inputs and outputs keep
the leading batch axis, as `vmap` users expect; `cfrjax.shard.solve_sharded` runs this
on each device's share of a batch.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from cfrjax.driver import _evaluate, run_steps
from cfrjax.locking import drop_idle_locks, restore_locks
from cfrjax.memory import guard
from cfrjax.state import SolverState, init
from cfrjax import xla_options

__all__ = ["batch_axes", "batch_specs", "batched_fields_of", "check_batch", "evaluate_batch", "init_batch",
           "keep_stopped", "retargetable", "solve_batch"]


def retargetable(game) -> dict:
    """The game's leaves that may carry a batch axis: its re-targetable float leaves
    (`cfrjax.forms`) and, for the public form, the per-board index tables
    (`PublicGame.BOARD_TABLES`: a batch of river spots on different boards); name ->
    dimensions of one game's leaf (without a batch axis)."""
    return {**type(game).RETARGETABLE, **getattr(game, "BOARD_TABLES", {})}


def batched_fields_of(games) -> tuple:
    """The re-targetable leaves of `games` that carry a leading batch axis (one more
    dimension than one game's leaf), in declaration order."""
    out = []
    for f, ndim in retargetable(games).items():
        x = getattr(games, f)
        if x is not None and jnp.ndim(x) == ndim + 1:
            out.append(f)
    return tuple(out)


def fields_or_inferred(batched_fields, games=None) -> tuple:
    """`batched_fields` validated, or (`None`) inferred from `games` (`batched_fields_of`)."""
    if batched_fields is None:
        fields = batched_fields_of(games)
        if not fields:
            raise ValueError("games has no batched float leaf (none has a leading batch axis); build a batched game "
                             "with jax.vmap(..., out_axes=cfrjax.batch_axes(game)) or pass batched_fields")
        return fields
    fields = tuple(batched_fields)
    allowed = tuple(retargetable(games))
    bad = [f for f in fields if f not in allowed]
    if bad:
        raise ValueError(f"batched_fields {bad} are not float leaves of {type(games).__name__} that can differ per "
                         f"game; choose from its re-targetable leaves {allowed} (index arrays are the shared tree "
                         "and cannot be batched)")
    return fields


def batch_specs(game, batched, shared, batched_fields=None):
    """`game` with each leaf replaced by `batched` (fields in `batched_fields`; `None`:
    `batched_fields_of(game)`) or `shared` (all others): an in_axes / PartitionSpec /
    sharding tree for a batched game. The one place batch axes are built."""
    fields = fields_or_inferred(batched_fields, game)
    names = [f.name for f in dataclasses.fields(game) if not f.metadata.get("static")]
    return dataclasses.replace(game, **{k: (batched if k in fields else shared) for k in names})


def batch_axes(game, axis: int | None = 0):
    """A `vmap` axes spec for a batch of re-targeted games: every re-targetable float leaf
    (`RETARGETABLE`) mapped over `axis`, the shared tree not mapped (a public river
    game's board tables are batched by `cfrjax.games.poker.boards.set_boards`).

    E.g. `games = jax.vmap(set_root_ranges, (None, 0, 0), batch_axes(game))(game, r0, r1)`
    then `cfrjax.solve_batch(games, states, 100)`.
    """
    return batch_specs(game, axis, None, tuple(type(game).RETARGETABLE))


@functools.partial(jax.jit, static_argnums=1)
def _stacked(state: SolverState, batch: int) -> SolverState:
    """`state`'s arrays broadcast to a leading `batch` axis, in one compiled program (run
    eagerly, each array's broadcast compiled a program of its own)."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)


def init_batch(game, batch: int, *args, **kwargs) -> SolverState:
    """`batch` fresh states stacked on a leading axis (arguments as `cfrjax.init`)."""
    return _stacked(init(game, *args, **kwargs), batch)


def check_batch(games, states: SolverState, batched_fields, multiple_of: int = 1) -> int:
    """The common leading batch size `B` of the batched game fields and every state leaf.

    Raises:
      ValueError: sizes disagree, a batched field is not `[B, n]`, or `B` is not a
        multiple of `multiple_of` (the number of devices it is split over).
    """
    sizes = {f"game.{f}": getattr(games, f).shape[0] if getattr(games, f).ndim else None for f in batched_fields}
    for name in ("regret", "avg", "avg_weight", "iteration", "prediction"):
        x = getattr(states, name)
        if x is None:   # a rule without prediction (`SolverState.prediction`)
            continue
        sizes[f"state.{name}"] = x.shape[0] if x.ndim else None
    if any(v is None for v in sizes.values()) or len(set(sizes.values())) != 1:
        raise ValueError(f"inconsistent batch axis (leading sizes {sizes}); batched game fields and every state "
                         "leaf need the same leading batch size B (use init_batch / jax.vmap(cfrjax.init))")
    dims = retargetable(games)
    for f in batched_fields:
        x = getattr(games, f)
        if x.ndim != dims[f] + 1:
            raise ValueError(f"game.{f} has shape {x.shape}, expected a leading batch axis B (a batched game: leading batch "
                             f"axis on {tuple(batched_fields)}); build one with jax.vmap(..., out_axes="
                             "cfrjax.batch_axes(game)) or broadcast the leaf")
    b = next(iter(sizes.values()))
    if b % multiple_of:
        raise ValueError(f"batch size {b} is not a multiple of the mesh's {multiple_of} devices; pad the batch "
                         f"to {-(-b // multiple_of) * multiple_of} (e.g. repeat a subgame) or use fewer devices")
    return b


def scan_batch_last(games, states: SolverState, iterations: int, batched_fields) -> SolverState:
    """`iterations` steps of a batch (leading `B` in and out), run batch-last. Traceable."""
    if iterations == 0:
        return states
    last = lambda x: jnp.moveaxis(x, 0, -1)  # noqa: E731
    games = dataclasses.replace(games, **{f: last(getattr(games, f)) for f in batched_fields})
    states = run_steps(games, jax.tree.map(last, states), iterations)
    return jax.tree.map(lambda x: jnp.moveaxis(x, -1, 0), states)


@functools.partial(xla_options.jit, static_argnames=("iterations", "batched_fields"))
def _solve_batch(games, states, iterations, batched_fields):
    return scan_batch_last(games, states, iterations, batched_fields)


def solve_batch(games, states: SolverState, iterations: int, batched_fields=None, *,
                check_memory: bool = True) -> SolverState:
    """Run `iterations` CFR iterations on every subgame of a batch, on one device.

    Args:
      games: a batched game of any form: leaves named in `batched_fields` carry a leading
        `B`, all others (the index arrays and the other float leaves) are shared.
      states: a batch of `SolverState`s (leading `B` on every leaf, one config), e.g.
        `init_batch(game, B, rule="cfr+")`.
      iterations: iterations per subgame (a Python int; one executable per value).
      batched_fields: names of the float leaves that carry the batch axis; `None`
        (default) infers them: the 2-D float leaves (`batched_fields_of`).
      check_memory: first check the memory plan of the whole batch against the device's
        free memory (`cfrjax.memory.guard`).

    Returns:
      The batch of states after `iterations` more iterations (leading `B` on every leaf).

    Raises:
      ValueError: batch sizes disagree, a field is not a float leaf, or no leaf is batched.
      cfrjax.memory.MemoryPlanError: the batch does not fit (the message gives the largest
        batch that does).
    """
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a non-negative int, got {iterations!r}")
    fields = fields_or_inferred(batched_fields, games)
    check_batch(games, states, fields)
    if check_memory:
        guard(games, states)
    states, locks = drop_idle_locks(states)
    return restore_locks(_solve_batch(games, states, iterations, fields), locks)


@functools.partial(xla_options.jit, static_argnames=("batched_fields",))
def _evaluate_batch(games, states, batched_fields):
    axes = batch_specs(games, 0, None, batched_fields)
    return jax.vmap(_evaluate, (axes, 0))(games, states)


def evaluate_batch(games, states: SolverState, batched_fields=None):
    """Each subgame's `(exploitability, value)` in a batch, as `cfrjax.evaluate` gives them
    for one subgame (float64 whatever the iteration dtype), in one compiled program:
    `evaluate` mapped over the batch axes that `solve_batch` uses.

        states = cfrjax.solve_batch(games, states, 1000)
        expl, value = cfrjax.evaluate_batch(games, states)     # [B] each

    Equal, to rounding, to a loop of `cfrjax.evaluate` over the subgames.

    Args:
      games: a batched game (as `solve_batch`: the leaves in `batched_fields` carry a
        leading `B`, the tree is shared).
      states: the batch of states, leading `B` on every leaf.
      batched_fields: names of the leaves that carry the batch axis; `None` (default)
        infers them (`batched_fields_of`).

    Returns:
      `(exploitability [B], value [B])`: float64 JAX arrays (sharded inputs are evaluated
      where they lie; `np.asarray` gives NumPy), player 0's value, in the game's payoff
      units (chips in a poker spot).

    Raises:
      ValueError: batch sizes disagree, a field is not a float leaf, or no leaf is batched.
    """
    fields = fields_or_inferred(batched_fields, games)
    check_batch(games, states, fields)
    with jax.enable_x64(True):  # the evaluation (only) runs in float64, as `cfrjax.evaluate`
        return _evaluate_batch(games, states, fields)


@jax.jit
def keep_stopped(stopped, old: SolverState, new: SolverState) -> SolverState:
    """`new` with the rows where `stopped` (`[B]` bool) is set replaced by `old`'s, bit for
    bit: a batch whose subgames stopped (met their target) keeps their states while the
    others run on."""
    return jax.tree.map(lambda o, n: jnp.where(stopped.reshape(stopped.shape + (1,) * (n.ndim - 1)), o, n), old, new)
