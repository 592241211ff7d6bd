"""Solving a batch of subgames across devices: one tree, many payoffs / ranges, one mesh.

Batched games and states are those of `cfrjax.batch` (leading batch axis `B` on the
batched float leaves and on every state leaf; index arrays shared).

`solve_sharded(games, states, iterations)` splits the batch over the devices of a
`jax.sharding.Mesh` (one axis, default all devices) with `jax.shard_map`: every device
holds `B / n` subgames and states, the shared index arrays are replicated (one copy per
device, not per subgame), and each device runs `cfrjax.solve_batch`'s batch-last
`lax.scan` of `cfrjax.step` on its own slice. Subgames are independent, so the
iteration has no collective at all: no cross-device traffic until the caller gathers the
result. The output stays sharded (`NamedSharding(mesh, P(axis))` on every leaf); pass it
back to `solve_sharded` to continue, or call `cfrjax.average_policy` under `jax.vmap` on
it (also sharded, by GSPMD), or `jax.device_get` it.

The result equals `cfrjax.solve_batch` on one device bit for bit (tested with four CPU
devices): each subgame's arithmetic is the same, only where it runs changes.

Memory: per device, the index arrays once plus `B / n` times the per-subgame buffers;
`cfrjax.memory.memory_plan(game, batch=B // n)` estimates it and
`cfrjax.memory.check_fits` checks it against a device before you run.

Multi-host recipe (one process per host, every host running the same program; e.g. two
hosts with 8 GPUs each, a batch of 1,024 subgames = 64 per GPU):

    import jax, numpy as np, cfrjax
    from cfrjax import shard

    jax.distributed.initialize()        # coordinator / process id from the cluster env
                                         # (SLURM, Open MPI, TPU pods, or pass
                                         # coordinator_address=, num_processes=, process_id=)
    mesh = shard.batch_mesh()            # all jax.devices(): every host's GPUs, axis "batch"
    game = cfrjax.load_game("hunl_turn.npz")          # same tree on every host
    # this host's share of the batch: rows [lo, hi) of the global B
    lo, hi = shard.process_rows(B, mesh)
    local_probs = all_root_probs[lo:hi]                # or build them for these rows only
    local_games = jax.vmap(cfrjax.set_root_chance, (None, 0), cfrjax.batch_axes(game))(game, local_probs)
    local_states = cfrjax.batch.init_batch(game, hi - lo, rule="cfr+")
    games, states = shard.place(local_games, local_states, mesh, process_local=True)
    states = shard.solve_sharded(games, states, 1000, mesh=mesh)
    # each host reads back only its own rows:
    mine = [np.asarray(s.data) for s in states.avg.addressable_shards]

`place(..., process_local=True)` assembles global arrays from each process's rows with
`jax.make_array_from_process_local_data` (rows are laid out process by process, in the
order of the mesh's devices); the shared index arrays must be the same on every process
(the same compiled game). Nothing else changes: `solve_sharded` is a multi-controller
SPMD program and, having no collectives, runs at single-host speed per device.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from cfrjax.batch import batch_specs, check_batch, fields_or_inferred, scan_batch_last
from cfrjax.memory import guard
from cfrjax.state import SolverState
from cfrjax import xla_options

__all__ = ["batch_mesh", "place", "process_rows", "solve_sharded"]


def batch_mesh(devices=None, axis: str = "batch") -> Mesh:
    """A one-axis mesh over `devices` (default: all `jax.devices()`, every host's)."""
    devices = jax.devices() if devices is None else list(devices)
    return Mesh(np.asarray(devices), (axis,))


def place(games, states: SolverState, mesh: Mesh | None = None,
          batched_fields=None, *, process_local: bool = False):
    """Put a batched game and states on `mesh`: batched leaves split along the mesh axis,
    shared leaves replicated. Returns `(games, states)` as global `jax.Array`s.

    With `process_local=True` (multi-host), `games`/`states` hold only this process's
    rows (see `process_rows`) and the global arrays are assembled with
    `jax.make_array_from_process_local_data`.
    """
    mesh = batch_mesh() if mesh is None else mesh
    axis = _mesh_axis(mesh)
    fields = fields_or_inferred(batched_fields, games)
    split, repl = NamedSharding(mesh, P(axis)), NamedSharding(mesh, P())
    gsh = batch_specs(games, split, repl, fields)
    ssh = jax.tree.map(lambda _: split, states)
    if process_local and jax.process_count() > 1:
        # mapped over the shardings: a leaf the game leaves empty (None) maps to None
        def put(sh, x):
            return None if x is None else jax.make_array_from_process_local_data(sh, np.asarray(x))
        return jax.tree.map(put, gsh, games), jax.tree.map(put, ssh, states)
    return jax.device_put(games, gsh), jax.device_put(states, ssh)


def process_rows(batch: int, mesh: Mesh | None = None) -> tuple[int, int]:
    """`(lo, hi)`: the rows of a global batch of `batch` subgames that this process holds
    on `mesh` (its devices' contiguous blocks; single process: `(0, batch)`)."""
    mesh = batch_mesh() if mesh is None else mesh
    devs = list(mesh.devices.flat)
    if batch % len(devs):
        raise ValueError(f"batch size {batch} is not a multiple of the mesh's {len(devs)} devices")
    per = batch // len(devs)
    mine = [i for i, d in enumerate(devs) if d.process_index == jax.process_index()]
    if not mine:
        return 0, 0
    if mine != list(range(mine[0], mine[-1] + 1)):
        raise ValueError("this process's devices are not contiguous in the mesh; order the mesh by process "
                         "(batch_mesh() does)")
    return mine[0] * per, (mine[-1] + 1) * per


def _mesh_axis(mesh: Mesh) -> str:
    if len(mesh.axis_names) != 1:
        raise ValueError(f"solve_sharded needs a one-axis mesh (the batch axis), got axes {mesh.axis_names}")
    return mesh.axis_names[0]


@functools.partial(xla_options.jit, static_argnames=("iterations", "mesh", "batched_fields"))
def _solve_sharded(games, states, iterations, mesh, batched_fields):
    axis = mesh.axis_names[0]
    local = functools.partial(scan_batch_last, iterations=iterations, batched_fields=batched_fields)
    gspec = batch_specs(games, P(axis), P(), batched_fields)
    sspec = jax.tree.map(lambda _: P(axis), states)
    return jax.shard_map(local, mesh=mesh, in_specs=(gspec, sspec), out_specs=sspec)(games, states)


def solve_sharded(games, states: SolverState, iterations: int, mesh: Mesh | None = None,
                  batched_fields=None, *, check_memory: bool = True) -> SolverState:
    """Run `iterations` CFR iterations on a batch of subgames split across devices.

    Args:
      games: a batched game of any form: leaves named in `batched_fields` carry a leading
        `B`, all others (the index arrays and the other leaves) are shared by the batch.
      states: a batch of `SolverState`s (leading `B` on every leaf, one config).
      iterations: iterations per subgame (a Python int; one executable per value).
      mesh: a one-axis `jax.sharding.Mesh` (default `batch_mesh()`: all devices).
        `B` must be a multiple of its size.
      batched_fields: names of the float leaves that carry the batch axis; `None`
        (default) infers them: the 2-D float leaves (`batched_fields_of`). With
        `cfrjax.batch_axes` every float leaf is batched; a batch of payoffs alone can keep
        the others shared (`("template", "payoff")`), saving memory per subgame.
      check_memory: first check the per-device memory plan (`B / n` subgames) against the
        free memory of the mesh's first device (`cfrjax.memory.guard`).

    Returns:
      The batch of states after `iterations` more iterations, each leaf a `jax.Array`
      sharded along the batch axis over `mesh` (`NamedSharding(mesh, P(axis))`).
      Inputs not yet on the mesh are moved there first (`place`).

    Raises:
      ValueError: batch sizes disagree, `B` is not a multiple of the mesh size, a field
        is not a float leaf, or the mesh has more than one axis.
    """
    if not isinstance(iterations, int) or iterations < 0:
        raise ValueError(f"iterations must be a non-negative int, got {iterations!r}")
    mesh = batch_mesh() if mesh is None else mesh
    axis = _mesh_axis(mesh)
    fields = fields_or_inferred(batched_fields, games)
    check_batch(games, states, fields, mesh.shape[axis])
    if check_memory:
        guard(games, states, devices=mesh.shape[axis], device=mesh.devices.flat[0])
    split, repl = NamedSharding(mesh, P(axis)), NamedSharding(mesh, P())
    want = batch_specs(games, split, repl, fields)
    on_mesh = all(getattr(x, "sharding", None) == sh
                  for x, sh in zip(jax.tree.leaves(games) + jax.tree.leaves(states),
                                   jax.tree.leaves(want) + [split] * len(jax.tree.leaves(states))))
    if not on_mesh:
        games, states = place(games, states, mesh, fields)
    return _solve_sharded(games, states, iterations, mesh, fields)
