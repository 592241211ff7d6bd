"""Shard files, the dataset manifest, the split over workers and the generating loop.

A dataset folder holds `dataset.json` (`DatagenConfig.manifest`) and the shards
`shard-<index>-of-<count>.npz` (`cfrjax.multihost.shard_path`, 5 digits each; folders
written with 6 are read and resumed too). Each shard is written once, atomically
(`cfrjax.atomic.atomic_write`: a temporary file in the folder, renamed over the name),
so a file under a shard's name is complete; the generator skips the shards that exist
and writes the others. Worker `I` of `N` owns the shards `I, I + N, I + 2N, ...`; it
removes leftover temporary files of its own shards (a killed writer's) when it starts,
never another worker's. Since shard `i` depends only on the config and `i`, any split,
order or number of restarts gives the same files' arrays.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import time
from typing import Callable, Iterator

import jax
import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.datagen.dataset import SCHEMA_VERSION, DatagenConfig
from cfrjax.datagen.sampling import sample_shard
from cfrjax.datagen.solve import solve_spots, spot_game
from cfrjax.multihost import shard_files, shard_path
from cfrjax.plan import resolve_plan, use

__all__ = ["ARRAYS", "MANIFEST", "ShardWritten", "generate", "generate_shards", "load_shard", "read_dataset",
           "shard_path", "worker_from_env", "worker_shards"]

#: The manifest's file name in a dataset folder.
MANIFEST = "dataset.json"
#: The arrays of a shard (`cfrjax.datagen` docstring), besides `meta`.
ARRAYS = ("board", "pot", "stack", "ranges", "values", "norm", "value", "exploitability", "exploitability_pct_pot")


def worker_shards(shards: int, worker: int, num_workers: int) -> range:
    """The shards worker `worker` of `num_workers` owns: `worker, worker + num_workers, ...`."""
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"num_workers {num_workers!r} must be an integer >= 1")
    if isinstance(worker, bool) or not isinstance(worker, int) or not 0 <= worker < num_workers:
        raise ValueError(f"worker {worker!r} must be an integer in 0..{num_workers - 1}")
    return range(worker, shards, num_workers)


def worker_from_env(environ=None) -> tuple[int, int]:
    """`(worker, num_workers)` from a SLURM job array (`SLURM_ARRAY_TASK_ID`,
    `SLURM_ARRAY_TASK_MIN`, `SLURM_ARRAY_TASK_STEP`, `SLURM_ARRAY_TASK_COUNT`: worker
    `(id - min) / step` of `count`), else `(0, 1)`. An array of evenly spaced task ids
    (`--array=0-63`, `--array=0-126:2`) is expected."""
    env = os.environ if environ is None else environ
    if "SLURM_ARRAY_TASK_ID" not in env:
        return 0, 1
    try:
        task, low = int(env["SLURM_ARRAY_TASK_ID"]), int(env.get("SLURM_ARRAY_TASK_MIN", 0))
        step, count = int(env.get("SLURM_ARRAY_TASK_STEP", 1) or 1), int(env["SLURM_ARRAY_TASK_COUNT"])
    except (KeyError, ValueError):
        raise ValueError("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT / _MIN / _STEP are missing or not "
                         "integers; pass --worker and --num-workers") from None
    worker, rest = divmod(task - low, step)
    if rest or not 0 <= worker < count:
        raise ValueError(f"SLURM array task {task} (min {low}, step {step}, count {count}) is not one of evenly "
                         "spaced task ids; use --array=A-B[:S] or pass --worker and --num-workers")
    return worker, count


def _check_manifest(config: DatagenConfig, out: str) -> None:
    """Write `out/dataset.json`, or check that the one there describes this dataset."""
    path = os.path.join(out, MANIFEST)
    want = json.loads(json.dumps(config.manifest()))       # as read back
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            have = json.load(f)
        diff = [k for k in sorted(set(want) | set(have)) if want.get(k) != have.get(k)]
        if diff:
            k = diff[0]
            raise ValueError(f"{path} describes another dataset: {k} {have.get(k)!r} there, {want.get(k)!r} here "
                             "(use another folder, or the options it was made with)")
        return
    atomic_write(path, lambda f: f.write(json.dumps(want, indent=1) + "\n"), text=True)


def _remove_stale(out: str, indices, shards: int) -> None:
    """Remove temporary files a killed writer left for the shards `indices`."""
    mine = {os.path.basename(shard_path(out, i, shards)) for i in indices}
    for name in os.listdir(out):
        if name.startswith(".") and name.endswith(".tmp") and name[1:].rsplit(".", 2)[0] in mine:
            os.unlink(os.path.join(out, name))


def _write(path: str, arrays: dict, meta: dict) -> None:
    blob = np.frombuffer(json.dumps(meta, sort_keys=True).encode(), np.uint8)
    atomic_write(path, lambda f: np.savez(f, meta=blob, **arrays))


def load_shard(path: str | os.PathLike) -> dict:
    """A shard's arrays (`ARRAYS`) and `meta` (a dict).

    Raises:
      ValueError: not a shard of this schema (missing arrays, another schema version).
    """
    with np.load(os.fspath(path), allow_pickle=False) as z:
        if "meta" not in z.files or any(k not in z.files for k in ARRAYS):
            raise ValueError(f"{path} is not a datagen shard (arrays {sorted(z.files)}; expected meta and "
                             f"{', '.join(ARRAYS)})")
        out = {k: z[k] for k in ARRAYS}
        out["meta"] = json.loads(z["meta"].tobytes().decode())
    if out["meta"].get("schema") != SCHEMA_VERSION:
        raise ValueError(f"{path} has schema {out['meta'].get('schema')!r}; this cfrjax reads schema {SCHEMA_VERSION}")
    return out


def read_dataset(out: str | os.PathLike, *, complete: bool = True) -> dict:
    """Every shard of a dataset folder, concatenated in shard order: the arrays of
    `ARRAYS` with a leading spot axis, plus `shard` `[N]` (each spot's shard) and
    `manifest` (the dataset's `dataset.json`).

    Raises:
      ValueError: `complete` and a shard is missing, or a shard of another dataset.
    """
    out = os.fspath(out)
    with open(os.path.join(out, MANIFEST), encoding="utf-8") as f:
        manifest = json.load(f)
    n = manifest["shards"]
    files = {i: path for (i, count), path in shard_files(out).items() if count == n}
    found = sorted(files)
    if complete and len(found) != n:
        missing = sorted(set(range(n)) - set(found))
        raise ValueError(f"{out}: {len(missing)} of {n} shards missing (e.g. {missing[0]}); run the generator again")
    parts = [load_shard(files[i]) for i in found]
    for i, p in zip(found, parts):
        if p["meta"]["shard"] != i or p["meta"]["seed"] != manifest["seed"]:
            raise ValueError(f"{files[i]} does not belong to this dataset (its meta: shard "
                             f"{p['meta']['shard']}, seed {p['meta']['seed']})")
    data = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros((0,)) for k in ARRAYS}
    data["shard"] = np.concatenate([np.full(p["pot"].size, i) for i, p in zip(found, parts)]) if parts \
        else np.zeros(0, np.int64)
    data["manifest"] = manifest
    return data


class ShardWritten(dict):
    """What `generate_shards` yields per shard written: `index`, `path`, `spots`,
    `exploitability_pct_pot` (`[spots]`) and host `timings` (seconds: `sample_s` and
    `sample_cpu_s`, wall and thread CPU time of sampling on the background thread, boards'
    tables included; `sample_wait_s`, the main loop waiting for it; `build_s`, the tree
    group's game when first needed, else 0; `dispatch_s`, `wait_s`: for the device;
    `write_s`)."""

    __getattr__ = dict.__getitem__


def generate_shards(config: DatagenConfig, out: str | os.PathLike, worker: int = 0, num_workers: int = 1,
                    stop: Callable[[], bool] | None = None, plan="auto") -> Iterator[ShardWritten]:
    """Write the missing shards of worker `worker` of `num_workers`, yielding each one once
    written.

    One shard is in flight on the device while the host writes the previous one, and a
    background thread samples the next (its boards' tables and ranges: JAX dispatches
    asynchronously; one game per tree group is built once). `stop()` is asked before
    each new shard is dispatched: once it is true, the shard in flight is written and the
    iterator ends. Closing the iterator early drops the shard in flight (nothing of it
    is written). `plan`: the implementation plan of the solves (`cfrjax.plan.resolve_plan`'s
    choice: "auto", "xla" or a `Plan`).
    """
    out = os.fspath(out)
    mine = worker_shards(config.shards, worker, num_workers)
    os.makedirs(out, exist_ok=True)
    _check_manifest(config, out)
    _remove_stale(out, mine, config.shards)
    have = shard_files(out)
    todo = [i for i in mine if (i, config.shards) not in have]
    device = jax.devices()[0].device_kind
    base = dict(schema=SCHEMA_VERSION, shards=config.shards, seed=config.seed, spots=config.spots,
                iterations=config.iterations, rule=config.rule, order=config.order, averaging=config.averaging,
                dtype=config.dtype, stack=config.stack, device=device)

    def finish(pending) -> ShardWritten:
        arrays = pending.result()
        s = pending.spots
        meta = dict(base, shard=s.index, tree_group=s.group,
                    tree_pots=[config.pots[k] for k in config.tree_groups[s.group]])
        t0 = time.perf_counter()
        path = shard_path(out, s.index, config.shards)
        _write(path, {k: arrays[k] for k in ARRAYS}, meta)
        pending.timings["write_s"] = time.perf_counter() - t0
        return ShardWritten(index=s.index, path=path, spots=s.pots.size,
                            exploitability_pct_pot=arrays["exploitability_pct_pot"], timings=pending.timings)

    # The next shard is sampled (boards, their tables, ranges: NumPy, mostly outside the
    # GIL) on a background thread while the device solves the current one.
    games = {}
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="datagen-sample")

    def sample(i):
        t0, c0 = time.perf_counter(), time.thread_time()
        spots = sample_shard(config, i)
        return spots, dict(sample_s=time.perf_counter() - t0, sample_cpu_s=time.thread_time() - c0)

    pending = None
    ahead = pool.submit(sample, todo[0]) if todo else None
    try:
        for k, i in enumerate(todo):
            if stop is not None and stop():
                break
            t0 = time.perf_counter()
            spots, times = ahead.result()
            ready_s = time.perf_counter() - t0
            ahead = pool.submit(sample, todo[k + 1]) if k + 1 < len(todo) else None
            t0 = time.perf_counter()
            if spots.group not in games:
                games[spots.group] = use(spot_game(config, spots.group), plan)
            build_s = time.perf_counter() - t0
            job = solve_spots(config, spots, games[spots.group])
            job.timings.update(times, sample_wait_s=ready_s, build_s=build_s)
            if pending is not None:
                yield finish(pending)
            pending = job
        if pending is not None:
            yield finish(pending)
    finally:
        if ahead is not None:
            ahead.cancel()
        pool.shutdown(wait=True)


def generate(config: DatagenConfig, out: str | os.PathLike, *, worker: int | None = None,
             num_workers: int | None = None, progress: bool | None = True, stop: Callable[[], bool] | None = None,
             on_shard: Callable[[ShardWritten], None] | None = None, plan="auto") -> dict:
    """Fill `out` with worker `worker`'s shards of the dataset (`generate_shards`, `stop`
    as there), with a tqdm progress bar over its spots on stderr (`progress`; `None`: only
    on a terminal), calling
    `on_shard` after each shard is written. `worker` / `num_workers` default to
    `worker_from_env()` (SLURM job arrays), else 0 of 1.

    Returns a summary: worker, num_workers, shards of this worker (`owned`), already
    there (`skipped`), written now (`written`), spots written, seconds, solves per minute,
    the written spots' exploitability in % of the pot (median, max), summed host timings
    and the plan that ran (`plan`: `cfrjax.plan.resolve_plan`'s choice; `Plan.describe`).
    """
    from tqdm import tqdm

    if (worker is None) != (num_workers is None):
        raise ValueError("give both worker and num_workers, or neither (then a SLURM job array's variables, "
                         "else worker 0 of 1)")
    if worker is None:
        worker, num_workers = worker_from_env()
    mine = worker_shards(config.shards, worker, num_workers)
    out = os.fspath(out)
    have = shard_files(out) if os.path.isdir(out) else {}
    skipped = sum((i, config.shards) in have for i in mine)
    bar = tqdm(total=len(mine) * config.spots, initial=skipped * config.spots, unit="spot",
               disable=None if progress is None else not progress,
               dynamic_ncols=True, desc=f"datagen worker {worker}/{num_workers}")
    t0 = time.perf_counter()
    written, expl, timings = [], [], {}
    try:
        plan = resolve_plan(choice=plan)
        for shard in generate_shards(config, out, worker, num_workers, stop, plan):
            written.append(shard.index)
            expl.append(shard.exploitability_pct_pot)
            for k, v in shard.timings.items():
                timings[k] = timings.get(k, 0.0) + v
            bar.update(shard.spots)
            bar.set_postfix(expl_pct_pot=f"{np.median(shard.exploitability_pct_pot):.3g}")
            if on_shard is not None:
                on_shard(shard)
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    done = shard_files(out)
    e = np.concatenate(expl) if expl else np.zeros(0)
    spots = len(written) * config.spots
    return dict(worker=worker, num_workers=num_workers, owned=len(mine), skipped=skipped, written=len(written),
                shards_written=written, spots=spots, seconds=seconds,
                solves_per_minute=60.0 * spots / seconds if spots else None,
                exploitability_pct_pot_median=float(np.median(e)) if e.size else None,
                exploitability_pct_pot_max=float(e.max()) if e.size else None,
                complete=all((i, config.shards) in done for i in mine),
                timings=timings, plan=plan.describe())
