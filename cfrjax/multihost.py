"""Multi-host batch solving: one process per host, each solving its share of a batch of
subgames and writing it to a shared (or per-host) output directory.

    # on host 0 (10.0.0.1) and host 1, the same command but --process-id:
    cfrjax solve-batch hunl_river --batch 64 --iterations 1000 --out runs/river64 \\
        --coordinator 10.0.0.1:61234 --num-processes 2 --process-id 0

or from Python, `solve_batch_to_dir(...)` (what the command calls). Step by step:

1. `cluster_config` resolves `(coordinator, num_processes, process_id)`: arguments first,
   then `CFRJAX_COORDINATOR` / `CFRJAX_NUM_PROCESSES` / `CFRJAX_PROCESS_ID`, then SLURM
   (`SLURM_NTASKS`, `SLURM_PROCID`, coordinator = the first host of
   `SLURM_STEP_NODELIST` on port `CFRJAX_COORDINATOR_PORT`, default JAX's own SLURM port
   `61440 + SLURM_JOB_ID % 4096`). One process: no distributed runtime at all.
2. `initialize` calls `jax.distributed.initialize` with explicit timeouts (connecting,
   heartbeats, shutdown) and JAX's recoverable mode, so that a process that loses a peer
   is not aborted by the runtime but notices it (`live_processes`) and stops with a
   `PeerLostError` naming the lost process.
3. `random_batch` builds the batch on every process (same seed, same bits): random ranges
   (public form: uniform weights per hand and player) or random root-chance distributions
   (tabular form: Dirichlet(1) over the root's outcomes).
4. `solve_shards` places this process's rows (`cfrjax.shard.process_rows`) on the global
   mesh (`place(..., process_local=True)`), runs `cfrjax.shard.solve_sharded` chunk by
   chunk (no collective: every host computes on its own), and after each chunk rewrites
   its shard file atomically, so a run that is stopped keeps its last completed chunk and
   the same command resumes from it. At the end the processes wait for each other (a
   lost peer is an error there too).

Each process writes `OUT/shard-<process>-of-<count>.npz` (`shard_path`): `rows` (the
global row indices), the state leaves (`state.regret`, `state.avg`, `state.avg_weight`,
`state.iteration`, ...; leading axis = rows), the batched game leaves that define each
subgame (`game.weights` / `game.norm` for ranges, `game.edge_prob` ... for root chance)
and `meta` (JSON: game, fingerprint, batch, seed, rule, iterations done and asked,
process, devices, timings). `read_shards(OUT)` joins them into one batch (rows in order)
and checks that they belong to one run.

The result equals `cfrjax.solve_batch` of the whole batch on one process bit for bit
(tested with 2 processes x 2 CPU devices, `tests/test_multiprocess.py`).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import batch as _batch, shard as _shard
from cfrjax.atomic import atomic_write
from cfrjax.driver import TARGET_EVAL_EVERY, _target, target_evaluations, target_reached
from cfrjax.rules import DEFAULT_ORDER, DEFAULT_RULE
from cfrjax.state import ARRAY_FIELDS

__all__ = ["Cluster", "PeerLostError", "cluster_config", "initialize", "live_processes", "random_batch",
           "read_shards", "shard_files", "shard_path", "solve_batch_to_dir", "solve_shards"]

ENV_COORDINATOR = "CFRJAX_COORDINATOR"
ENV_NUM_PROCESSES = "CFRJAX_NUM_PROCESSES"
ENV_PROCESS_ID = "CFRJAX_PROCESS_ID"
ENV_COORDINATOR_PORT = "CFRJAX_COORDINATOR_PORT"

#: Default timeouts (seconds) passed to `jax.distributed.initialize`.
INITIALIZATION_TIMEOUT = 120
HEARTBEAT_TIMEOUT = 10
SHUTDOWN_TIMEOUT = 10

_STATE_FIELDS = ARRAY_FIELDS
_KV_DONE = "cfrjax/solve_batch/done/"


class PeerLostError(RuntimeError):
    """Another process of the run stopped (crashed, killed, lost its host) before the run
    finished. `lost`: the lost process ids; `process_id`, `iteration`, `path`: this
    process, the iteration its rows reached and the shard file that holds them."""

    def __init__(self, message, lost=(), process_id=None, iteration=None, path=None):
        super().__init__(message)
        self.lost, self.process_id, self.iteration, self.path = tuple(lost), process_id, iteration, path


# ----------------------------------------------------------------------------------------
# cluster


@dataclasses.dataclass(frozen=True)
class Cluster:
    """Where this process sits in a run: `num_processes` processes, this one `process_id`,
    process 0 serving at `coordinator` (`HOST:PORT`; `None` for one process). `source`:
    where the values came from ("arguments", "environment", "slurm", "default")."""

    coordinator: str | None
    num_processes: int
    process_id: int
    source: str = "arguments"


def first_slurm_host(nodelist: str) -> str:
    """The first host of a SLURM node list (`"node[07-09,12],gpu3"` -> `"node07"`)."""
    nodelist = nodelist.strip()
    m = re.match(r"([^,\[]+)(?:\[([^\]]+)\])?", nodelist)
    if not m:
        raise ValueError(f"cannot read a host from the SLURM node list {nodelist!r}")
    prefix, ranges = m.group(1), m.group(2)
    if ranges is None:
        return prefix
    return prefix + ranges.split(",")[0].split("-")[0]


def cluster_config(coordinator: str | None = None, num_processes: int | None = None,
                   process_id: int | None = None, environ=None) -> Cluster:
    """Resolve the run's processes: each value from the argument, else from
    `CFRJAX_COORDINATOR` / `CFRJAX_NUM_PROCESSES` / `CFRJAX_PROCESS_ID`, else from SLURM
    (`SLURM_NTASKS`, `SLURM_PROCID`; coordinator: the first host of `SLURM_STEP_NODELIST`
    (or `SLURM_JOB_NODELIST`) on port `CFRJAX_COORDINATOR_PORT`, default
    `61440 + SLURM_JOB_ID % 4096` as JAX's SLURM detection uses). Nothing set: one process.

    Raises:
      ValueError: the values are incomplete or inconsistent (e.g. more than one process
        and no coordinator, or `process_id` not in `[0, num_processes)`).
    """
    env = os.environ if environ is None else environ
    source = "arguments"

    def pick(value, name, slurm, conv):
        nonlocal source
        if value is not None:
            return value
        for key, src in ((name, "environment"), (slurm, "slurm")):
            if key and env.get(key, "").strip():
                try:
                    out = conv(env[key].strip())
                except ValueError:
                    raise ValueError(f"{key}={env[key]!r} is not a valid value") from None
                if source == "arguments":
                    source = src
                return out
        return None

    num_processes = pick(num_processes, ENV_NUM_PROCESSES, "SLURM_NTASKS", int)
    process_id = pick(process_id, ENV_PROCESS_ID, "SLURM_PROCID", int)
    if coordinator is None and env.get(ENV_COORDINATOR, "").strip():
        coordinator = env[ENV_COORDINATOR].strip()
        source = "environment" if source == "arguments" else source
    if coordinator is None and num_processes not in (None, 1):
        nodes = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST")
        if nodes:
            port = env.get(ENV_COORDINATOR_PORT) or (
                str(61440 + int(env["SLURM_JOB_ID"]) % 4096) if env.get("SLURM_JOB_ID", "").isdigit() else None)
            if port is None:
                raise ValueError(f"no coordinator port: set {ENV_COORDINATOR_PORT} (or {ENV_COORDINATOR}=HOST:PORT)")
            coordinator = f"{first_slurm_host(nodes)}:{port}"
            source = "slurm"
    if num_processes is None:
        if process_id not in (None, 0):
            raise ValueError(f"process id {process_id} given but no number of processes (--num-processes or "
                             f"{ENV_NUM_PROCESSES})")
        return Cluster(None, 1, 0, "default")
    if num_processes < 1:
        raise ValueError(f"the number of processes must be positive, got {num_processes}")
    if num_processes == 1:
        if process_id not in (None, 0):
            raise ValueError(f"process id {process_id} is not in [0, 1)")
        return Cluster(coordinator, 1, 0, source)
    if process_id is None:
        raise ValueError(f"{num_processes} processes but no process id (--process-id, {ENV_PROCESS_ID} or "
                         "SLURM_PROCID)")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"process id {process_id} is not in [0, {num_processes})")
    if not coordinator:
        raise ValueError(f"{num_processes} processes but no coordinator (--coordinator HOST:PORT, "
                         f"{ENV_COORDINATOR} or a SLURM step)")
    host, sep, port = coordinator.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"coordinator {coordinator!r} is not HOST:PORT")
    return Cluster(coordinator, num_processes, process_id, source)


def initialize(cluster: Cluster, *, initialization_timeout: int = INITIALIZATION_TIMEOUT,
               heartbeat_timeout: int = HEARTBEAT_TIMEOUT, shutdown_timeout: int = SHUTDOWN_TIMEOUT) -> None:
    """Start JAX's distributed runtime for `cluster` (nothing for one process). Must run
    before any JAX computation. Every process sees all its local devices.

    Timeouts (seconds): `initialization_timeout` for all processes to connect,
    `heartbeat_timeout` after which a silent process counts as lost, `shutdown_timeout`
    for the final handshake. Recoverable mode is switched on
    (`jax_enable_recoverability`), so a lost process is reported to the others
    (`live_processes`) instead of aborting them.

    If the processes do not all connect within `initialization_timeout`, jaxlib 0.10
    aborts the process itself (a fatal error "DEADLINE_EXCEEDED ... RegisterTask" on
    stderr, exit by SIGABRT), and so does the loss of process 0, which hosts the
    coordination service; neither can be caught here. Errors jaxlib does raise come out
    as `ConnectionError`.
    """
    if cluster.num_processes <= 1:
        return
    jax.config.update("jax_enable_recoverability", True)
    try:
        jax.distributed.initialize(coordinator_address=cluster.coordinator, num_processes=cluster.num_processes,
                                   process_id=cluster.process_id, cluster_detection_method="deactivate",
                                   initialization_timeout=int(initialization_timeout),
                                   heartbeat_timeout_seconds=int(heartbeat_timeout),
                                   shutdown_timeout_seconds=int(shutdown_timeout))
    except Exception as e:  # noqa: BLE001 - jaxlib raises its own error types
        if isinstance(e, (ValueError, TypeError)):
            raise
        first = " ".join(str(e).split())[:200]
        raise ConnectionError(f"process {cluster.process_id} of {cluster.num_processes}: could not start the "
                              f"distributed run with coordinator {cluster.coordinator} within "
                              f"{initialization_timeout} s (are all processes started, with the same "
                              f"--num-processes, and is the port reachable?): {first}") from None


def _client():
    from jax._src import distributed  # the runtime client of jax.distributed.initialize

    return distributed.global_state.client


def live_processes() -> set:
    """The process ids the distributed runtime currently sees alive (all of them for one
    process)."""
    n = jax.process_count()
    client = _client()
    if n <= 1 or client is None:
        return set(range(n))
    return {int(k) for k in client.get_live_nodes(list(range(n)))}


# ----------------------------------------------------------------------------------------
# the batch


def random_batch(game, batch: int, seed: int = 0):
    """`batch` copies of `game` with random ranges (public form: each player's weight per
    hand uniform in [0, 1)) or random root-chance probabilities (tabular form: Dirichlet(1)
    over the root's outcomes), from `numpy.random.default_rng(seed)`. The same arguments
    give the same bits on every process. Returns a batched game (`cfrjax.batch_axes`)."""
    from cfrjax.forms import form_name

    if not isinstance(batch, int) or batch <= 0:
        raise ValueError(f"batch must be a positive int, got {batch!r}")
    rng = np.random.default_rng(seed)
    axes = _batch.batch_axes(game)
    if form_name(game) == "public":
        from cfrjax.public.passes import set_ranges

        if game.iso_perm is not None:   # random weights differ by suit
            raise ValueError(f"{game.name}: random ranges differ by suit, which a suit-merged game (isomorphism = "
                             "true) cannot hold; build it with isomorphism = false")
        dt = np.dtype(game.weights.dtype)
        w = rng.uniform(size=(batch, 2, game.num_hands)).astype(dt)
        return jax.vmap(set_ranges, (None, 0, 0), axes)(game, jnp.asarray(w[:, 0]), jnp.asarray(w[:, 1]))
    from cfrjax.retarget import root_outcomes, set_root_chance

    lo, hi = root_outcomes(game)
    probs = rng.dirichlet(np.ones(hi - lo), size=batch).astype(np.dtype(game.template.dtype))
    return jax.vmap(set_root_chance, (None, 0), axes)(game, jnp.asarray(probs))


#: A shard file's name, whatever its zero-padding (`shard_path` writes 5 digits; datagen
#: datasets written before the two shard names became one have 6).
SHARD_FILE = re.compile(r"shard-(\d+)-of-(\d+)\.npz")


def shard_path(out_dir: str | os.PathLike, index: int, count: int) -> str:
    """`OUT/shard-<index>-of-<count>.npz`, both numbers zero-padded to 5 digits: the one
    name of a shard file, process `index` of `count`'s rows of a `solve-batch` run and shard
    `index` of a `cfrjax.datagen` dataset's `count`."""
    return os.path.join(os.fspath(out_dir), f"shard-{index:05d}-of-{count:05d}.npz")


def shard_files(out_dir: str | os.PathLike) -> dict[tuple[int, int], str]:
    """`{(index, count): path}` of the shard files in `out_dir` (`SHARD_FILE`: any
    zero-padding, so a folder written with the older 6-digit names keeps reading)."""
    out_dir = os.fspath(out_dir)
    return {(int(m.group(1)), int(m.group(2))): os.path.join(out_dir, name)
            for name in sorted(os.listdir(out_dir)) if (m := SHARD_FILE.fullmatch(name))}


def _local_rows(x) -> np.ndarray:
    """This process's rows of a batch-sharded global array, in row order."""
    if jax.process_count() == 1:
        return np.asarray(x)
    shards = sorted(x.addressable_shards, key=lambda s: s.index[0].start or 0)
    return np.concatenate([np.asarray(s.data) for s in shards])


def _write_shard(path, rows, state_leaves, game_leaves, meta, extra=None):
    arrays = {"rows": np.asarray(rows, np.int64), "meta": np.frombuffer(json.dumps(meta).encode(), np.uint8),
              **(extra or {})}
    arrays.update({f"state.{k}": v for k, v in state_leaves.items()})
    arrays.update({f"game.{k}": v for k, v in game_leaves.items()})

    def write(f):
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        f.write(buf.getvalue())
    atomic_write(path, write)


def _read_npz(path) -> tuple[dict, dict]:
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    return arrays, meta


_SAME_RUN = ("game", "fingerprint", "form", "batch", "seed", "rule", "order", "averaging", "dtype",
             "num_processes", "process_id", "rows_lo", "rows_hi", "target")


def solve_shards(games, iterations: int, out_dir: str, *, rule: str = DEFAULT_RULE, order: str = DEFAULT_ORDER,
                 averaging: str = "linear", dtype: str = "float32", chunk: int | None = None, mesh=None,
                 meta: dict | None = None, resume: bool = True, on_chunk=None, target: float | None = None) -> dict:
    """Solve this process's rows of the batched game `games` (every process passes the
    whole batch, e.g. `random_batch`; leading batch `B`, a multiple of the number of
    devices) and write them to `shard_path(out_dir, process, count)` after every chunk.

    Args:
      games: the whole batched game (the same on every process).
      iterations: total iterations per subgame (a resumed run continues up to it).
      out_dir: output directory (created; may be shared by the hosts or not).
      rule, order, averaging, dtype: the solver configuration (`cfrjax.init`).
      chunk: iterations between two writes of the shard (default: a tenth of
        `iterations`, rounded up); each distinct chunk length compiles once. With a
        `target`: the evaluation cadence (default: `cfrjax.driver.target_evaluations`'
        schedule, chunks of `TARGET_EVAL_EVERY`), the shard written at each evaluation.
      mesh: a one-axis mesh over every process's devices (default `shard.batch_mesh()`).
      meta: extra JSON-able fields recorded in the shard's `meta`.
      resume: continue from an existing shard file of the same run (else start over).
      on_chunk: called as `on_chunk(iteration)` after each chunk is written.
      target: stop each subgame at its first evaluation at or below this exploitability
        (the game's unit; `cfrjax.driver.target_reached`), `iterations` the cap. A
        stopped subgame's state is kept bit for bit from then on (`batch.keep_stopped`;
        its `state.iteration` is where it stopped), the shard records `target.stopped`
        and `target.exploitability` (`[rows]`, at each row's last evaluation), and a
        single process ends once all its rows stopped (several processes run to the cap,
        each chunk a program of all). A resumed run keeps the target it was started with.

    Returns:
      A summary dict (path, rows, iterations, devices, timings).

    Raises:
      PeerLostError: another process was lost; this process's shard holds what it finished.
      ValueError: bad arguments, or the shard file belongs to another run.
    """
    if not isinstance(iterations, int) or iterations <= 0:
        raise ValueError(f"iterations must be a positive int, got {iterations!r}")
    target = None if target is None else _target(target)
    evaluations = None if target is None else set(target_evaluations(iterations, chunk))
    chunk = (TARGET_EVAL_EVERY if target is not None else -(-iterations // 10)) if chunk is None else chunk
    if not isinstance(chunk, int) or chunk <= 0:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    mesh = _shard.batch_mesh() if mesh is None else mesh
    n, pid = jax.process_count(), jax.process_index()
    fields = _batch.batched_fields_of(games)
    if not fields:
        raise ValueError("games is not a batched game (build one with random_batch or jax.vmap(..., "
                         "out_axes=cfrjax.batch_axes(game)))")
    B = int(getattr(games, fields[0]).shape[0])
    lo, hi = _shard.process_rows(B, mesh)
    local_devices = [d for d in mesh.devices.flat if d.process_index == pid]
    game_leaves = {f: np.asarray(getattr(games, f))[lo:hi] for f in fields}
    local_games = dataclasses.replace(games, **{f: jnp.asarray(v) for f, v in game_leaves.items()})
    states = _batch.init_batch(games, hi - lo, rule=rule, order=order, averaging=averaging, dtype=dtype)
    stopped, expl = np.zeros(hi - lo, bool), np.full(hi - lo, np.inf)   # target: rows stopped, last evaluations
    from cfrjax.forms import form_name

    labels = getattr(games, "labels", None)
    info = dict(meta or {}, game=games.name, fingerprint=getattr(labels, "fingerprint", None),
                form=form_name(games), batch=B, rule=rule, order=order, averaging=averaging, dtype=dtype,
                num_processes=n, process_id=pid, rows_lo=lo, rows_hi=hi, iterations_asked=iterations,
                devices=len(local_devices), device_kind=str(local_devices[0].device_kind) if local_devices else None,
                mesh_devices=int(mesh.devices.size), chunk=chunk, target=None if target is None else float(target))
    info.setdefault("seed", None)
    os.makedirs(out_dir, exist_ok=True)
    path = shard_path(out_dir, pid, n)
    done, resumed_from = 0, None
    if resume and os.path.exists(path):
        arrays, old = _read_npz(path)
        diff = [k for k in _SAME_RUN if old.get(k) != info.get(k)]
        if diff:
            raise ValueError(f"{path} holds another run (differs in {', '.join(diff)}); remove it or choose "
                             "another output directory")
        states = dataclasses.replace(states, **{k: jnp.asarray(arrays[f"state.{k}"]) for k in _STATE_FIELDS
                                                if getattr(states, k) is not None})
        done = resumed_from = int(old["iterations_done"])
        if target is not None:
            stopped, expl = arrays.get("target.stopped", stopped), arrays.get("target.exploitability", expl)
    gs, ss = _shard.place(local_games, states, mesh, process_local=True)
    rows_sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(mesh.axis_names[0]))
    first_s, solve_s, eval_s, timed_iters, t_start = None, 0.0, 0.0, 0, time.perf_counter()
    ran = 0   # iterations since the last write
    while done < iterations and not (target is not None and n == 1 and stopped.all()):
        k = min(chunk, iterations - done)
        t0 = time.perf_counter() if ran == 0 else t0
        new = _shard.solve_sharded(gs, ss, k, mesh=mesh)
        if stopped.any():   # rows at their target keep their state, bit for bit
            new = _batch.keep_stopped(jax.make_array_from_process_local_data(rows_sharding, stopped), ss, new)
        ss, done, ran = new, done + k, ran + k
        if evaluations is not None and done not in evaluations:
            continue   # a target's chunks between two evaluations: the shard is written at evaluations
        leaves = {f: _local_rows(getattr(ss, f)) for f in _STATE_FIELDS
                  if getattr(ss, f) is not None}  # waits for the chunk
        dt_chunk = time.perf_counter() - t0
        if first_s is None:
            first_s = dt_chunk  # includes compiling
        else:
            solve_s += dt_chunk
            timed_iters += ran
        ran, extra = 0, {}
        if target is not None:
            t1 = time.perf_counter()
            e = _local_rows(_batch.evaluate_batch(gs, ss)[0])
            eval_s += time.perf_counter() - t1
            expl = np.where(stopped, expl, e)
            stopped = stopped | target_reached(e, target)
            extra = {"target.stopped": stopped, "target.exploitability": expl}
        _write_shard(path, range(lo, hi), leaves, game_leaves,
                     dict(info, iterations_done=done, resumed_from=resumed_from, first_chunk_s=first_s,
                          solve_s=solve_s, eval_s=eval_s, timed_iterations=timed_iters), extra)
        if on_chunk is not None:
            on_chunk(done)
        if n > 1 and done < iterations:
            _check_peers(n, pid, done, iterations, path)
    if n > 1:
        _wait_for_peers(n, pid, done, path)
    if target is not None:
        info.update(stopped=int(stopped.sum()), exploitability_max=float(expl.max()) if expl.size else None)
    return dict(info, path=path, rows=[lo, hi], iterations_done=done, resumed_from=resumed_from,
                first_chunk_s=first_s, solve_s=solve_s, eval_s=eval_s, timed_iterations=timed_iters,
                ms_per_iter=(1e3 * solve_s / timed_iters) if timed_iters else None,
                wall_s=time.perf_counter() - t_start)


def _lost_error(lost, n, pid, done, iterations, path, when):
    who = ", ".join(str(p) for p in sorted(lost))
    mine = (f"process {pid} finished its rows ({done} iterations), saved in {path}; run the same command on "
            "every host to finish the lost rows") if done >= iterations else (
            f"process {pid} stopped at iteration {done} of {iterations}, its rows are saved in {path} (run the same "
            "command on every host to resume)")
    return PeerLostError(f"lost process {who} of {n} {when} (it stopped sending heartbeats: crashed, killed or "
                         f"its host is gone); {mine}", lost=sorted(lost), process_id=pid, iteration=done, path=path)


def _check_peers(n, pid, done, iterations, path):
    lost = set(range(n)) - live_processes()
    if lost:
        raise _lost_error(lost, n, pid, done, iterations, path, "during the run")


def _wait_for_peers(n, pid, done, path, poll_s: float = 0.2):
    """Tell the others this process is done and wait until all are (a lost one: error).
    Process 0 hosts the runtime, so it then waits for the others to disconnect first."""
    client = _client()
    client.key_value_set(f"{_KV_DONE}{pid}", str(done))
    waiting = set(range(n)) - {pid}
    while waiting:
        live = live_processes()  # before reading the keys: a process sets its key before it disconnects
        waiting = {p for p in waiting if not _has_key(client, f"{_KV_DONE}{p}")}
        lost = waiting - live
        if lost:
            raise _lost_error(lost, n, pid, done, done, path, "before it finished")
        if waiting:
            time.sleep(poll_s)
    if pid != 0:
        jax.distributed.shutdown()
        return
    deadline = time.monotonic() + SHUTDOWN_TIMEOUT
    while time.monotonic() < deadline and live_processes() - {0}:
        time.sleep(poll_s)
    jax.distributed.shutdown()


def _has_key(client, key) -> bool:
    try:
        client.key_value_try_get(key)
        return True
    except Exception:  # noqa: BLE001 - NOT_FOUND comes as a jaxlib error
        return False


# ----------------------------------------------------------------------------------------
# reading


def read_shards(out_dir: str) -> dict:
    """Join the shard files of one run in `out_dir` into one batch.

    Returns `{"rows": [B], "state": {leaf: [B, ...]}, "game": {leaf: [B, ...]},
    "meta": [per-shard meta], "iterations": [B] iterations done per row}`.

    Raises:
      FileNotFoundError: no shard file, or one of the run's shards is missing.
      ValueError: shards of different runs.
    """
    paths = list(shard_files(out_dir).values()) if os.path.isdir(out_dir) else []
    if not paths:
        raise FileNotFoundError(f"no shard files (shard-*-of-*.npz) in {out_dir}")
    parts = [_read_npz(p) for p in paths]
    counts = {m["num_processes"] for _, m in parts}
    if len(counts) != 1:
        raise ValueError(f"{out_dir} mixes runs with {sorted(counts)} processes")
    n = counts.pop()
    have = sorted(m["process_id"] for _, m in parts)
    if have != list(range(n)):
        missing = sorted(set(range(n)) - set(have))
        raise FileNotFoundError(f"{out_dir}: shards of processes {missing} of {n} are missing")
    keys = ("game", "fingerprint", "batch", "seed", "rule", "order", "averaging", "dtype")
    runs = {tuple(json.dumps(m.get(k)) for k in keys) for _, m in parts}
    if len(runs) != 1:
        raise ValueError(f"{out_dir}: the shards belong to different runs")
    parts.sort(key=lambda am: am[1]["rows_lo"])
    rows = np.concatenate([a["rows"] for a, _ in parts])
    out = {"rows": rows, "meta": [m for _, m in parts], "state": {}, "game": {}}
    for prefix in ("state", "game"):
        names = [k[len(prefix) + 1:] for k in parts[0][0] if k.startswith(prefix + ".")]
        out[prefix] = {k: np.concatenate([a[f"{prefix}.{k}"] for a, _ in parts]) for k in names}
    out["iterations"] = np.concatenate([np.full(m["rows_hi"] - m["rows_lo"], m["iterations_done"])
                                        for _, m in parts])
    return out


# ----------------------------------------------------------------------------------------
# the whole run


def solve_batch_to_dir(game, out_dir: str, *, batch: int, iterations: int, seed: int = 0, form: str | None = None,
                       rule: str = DEFAULT_RULE, order: str = DEFAULT_ORDER, averaging: str = "linear",
                       dtype: str = "float32", chunk: int | None = None, cluster: Cluster | None = None,
                       initialization_timeout: int = INITIALIZATION_TIMEOUT,
                       heartbeat_timeout: int = HEARTBEAT_TIMEOUT, resume: bool = True, on_chunk=None,
                       on_ready=None, target: float | Callable[[Any], float] | None = None, plan="auto",
                       hands: str | None = None) -> dict:
    """Start the distributed runtime (`cluster`, default `cluster_config()`), load `game`
    (anything `cfrjax.load_game` takes: a shipped spec name, a `.toml`, ...), build
    `random_batch(game, batch, seed)` and solve this process's rows with `solve_shards`
    (`target`: an exploitability in the game's unit, or a function of the built game giving
    one: `cfrjax solve-batch --target x%` passes `cfrjax.games.poker.pot.target_chips`'s
    conversion of x% of the spot's starting pot, as `cfrjax solve --target`). `on_ready(summary)` is called once the game is built and the rows are
    known. `plan`: the implementation plan (`cfrjax.plan.resolve_plan`'s choice: "auto",
    "xla" or a `Plan`); `hands`: a poker spec's hand list (`load_game`; the random ranges
    weigh the game's hands). Returns `solve_shards`'s summary with the plan that ran
    (`Plan.describe`). What `cfrjax solve-batch` runs, on every process."""
    cluster = cluster_config() if cluster is None else cluster
    initialize(cluster, initialization_timeout=initialization_timeout, heartbeat_timeout=heartbeat_timeout)
    from cfrjax.load import load_game

    source = game if isinstance(game, str) else getattr(game, "name", "game")
    t0 = time.perf_counter()
    from cfrjax.plan import use
    g = use(load_game(game, form=form, hands=hands), plan)
    build_s = time.perf_counter() - t0
    mesh = _shard.batch_mesh()
    if batch % mesh.devices.size:
        raise ValueError(f"--batch {batch} is not a multiple of the {mesh.devices.size} devices of the run "
                         f"({cluster.num_processes} process(es) x {len(jax.local_devices())} local devices)")
    games = random_batch(g, batch, seed)
    if on_ready is not None:
        lo, hi = _shard.process_rows(batch, mesh)
        on_ready(dict(game=g.name, process_id=jax.process_index(), num_processes=jax.process_count(),
                      rows=[lo, hi], local_devices=len(jax.local_devices()), devices=int(mesh.devices.size),
                      plan=g.plan))
    out = solve_shards(games, iterations, out_dir, rule=rule, order=order, averaging=averaging, dtype=dtype,
                       chunk=chunk, mesh=mesh, meta=dict(source=source, seed=seed, build_s=build_s),
                       target=target(g) if callable(target) else target,
                       resume=resume, on_chunk=on_chunk)
    return dict(out, build_s=build_s, cluster_source=cluster.source, coordinator=cluster.coordinator,
                plan=g.plan.describe())
