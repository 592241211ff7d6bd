"""Checkpoints: a `SolverState` on disk, to stop a long solve and resume it bit for bit.

    cfrjax.save_checkpoint("run.ckpt", game, state)
    state = cfrjax.load_checkpoint("run.ckpt", game)          # same game, any process
    state = cfrjax.load_checkpoint("run.ckpt", game, config=cfrjax.Config(rule="cfr+"))

A checkpoint is one `.npz` file holding every `SolverState` leaf exactly (regret, avg,
avg_weight, iteration, and where the state has them the prediction and the node-locking
arrays, ...: every array field that is not `None`, with its dtype and shape, so a batch of
states works too), the rule `Config`, the game's `labels.fingerprint` (tree, information sets and
compiled arrays), a digest of the game's float leaves (payoffs and chance probabilities,
which `cfrjax.retarget` can change without changing the fingerprint), a SHA-256 of the
array bytes, and optional JSON-able `extra` data (the CLI keeps its exploitability curve
there).

Writing is atomic: the file is written to a temporary file in the same directory,
flushed and fsynced, then renamed over `path` with `os.replace`, so a crash or a kill at
any moment leaves either the previous checkpoint or the new one, never a torn file.

Loading refuses, with a `CheckpointError` that says what differs, a checkpoint of
another game (fingerprint), of the same tree with other payoffs or chance probabilities,
or made with another `Config` than the one asked for; and a truncated or corrupt file
gives a `CheckpointError` naming the file, never a half-loaded state.

Resuming is exact: the loaded leaves are the saved bits, so on the same machine and
software `solve(game, load_checkpoint(...), n)` equals the state the uninterrupted run
reaches (tested on CPU). Single-process only: a state sharded over several hosts must be
gathered first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import zipfile

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.game import fingerprint
from cfrjax.rules import Config, capabilities
from cfrjax.state import ARRAY_FIELDS, OPTIONAL_FIELDS, SolverState, compensation_dtype

__all__ = ["CheckpointError", "checkpoint_info", "load_checkpoint", "save_checkpoint"]

FORMAT = "cfrjax.checkpoint/1"
_PARAMS = ("alpha", "beta", "gamma")


_LEAVES = ARRAY_FIELDS
#: Leaves added since the format's first version: a checkpoint without one loads it as
#: zeros shaped like the named leaf (`avg_comp`, the float32 average's compensation:
#: zero is exact for float64 states and costs a float32 resume only the dropped low part).
_ADDED = {"avg_comp": "avg"}


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: unreadable, corrupt, or made for another game or config."""


def _config_dict(config: Config) -> dict:
    return {f.name: getattr(config, f.name) for f in dataclasses.fields(Config)}


def _config_from_dict(d: dict) -> Config:
    """Rebuild a `Config`: the rule's default parameters are filled in by `Config` itself
    (passing them explicitly is refused for some rules), so only non-default ones are given."""
    names = [f.name for f in dataclasses.fields(Config)]
    unknown = sorted(set(d) - set(names))
    if unknown:
        raise ValueError(f"unknown config field(s) {unknown} (made by another version of cfrjax?)")
    base = Config(**{k: d[k] for k in names if k in d and k not in _PARAMS})
    extra = {k: d[k] for k in _PARAMS if k in d and d[k] != getattr(base, k)}
    return dataclasses.replace(base, **extra) if extra else base


def _describe(config: Config) -> str:
    d = _config_dict(config)
    return ", ".join(f"{k}={v!r}" for k, v in d.items() if v is not None)


def game_data_digest(game) -> str:
    """Digest of the game's re-targetable leaves (`RETARGETABLE`: payoffs, chance
    probabilities, ranges and what derives from them), rounded to float32 so that the same
    game loaded with or without `jax_enable_x64` has the same digest."""
    return fingerprint({k: np.asarray(jax.device_get(getattr(game, k)), np.float32) for k in type(game).RETARGETABLE})


def _fits(game, shape) -> bool:
    """Whether a state leaf of `shape` holds slot arrays of `game` (a batch may lead)."""
    want = tuple(game.slot_shape)
    return tuple(shape[len(shape) - len(want):]) == want if len(shape) >= len(want) else False


def _array_digest(arrays: dict) -> str:
    h = hashlib.sha256()
    for name in (k for k in _LEAVES if k in arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}:{a.dtype.str}:{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(path: str | os.PathLike, game, state: SolverState, *,
                    extra: dict | None = None) -> None:
    """Write `state` (for `game`) to `path` atomically.

    Args:
      path: the checkpoint file (any name; `.ckpt` or `.npz` are customary). Its
        directory must exist. An existing file is replaced only once the new one is
        complete on disk.
      game: the compiled game the state belongs to (its fingerprint is recorded).
      state: a `SolverState` (or a batch of them: leading axis on every leaf); every
        array field is saved, whatever fields this version of `SolverState` has.
      extra: optional JSON-able data stored alongside (read back with `checkpoint_info`).

    Raises:
      ValueError: `state` does not fit `game`, or `extra` is not JSON-able.
    """
    if not isinstance(state, SolverState):
        raise ValueError(f"state must be a SolverState, got {type(state).__name__}")
    if state.leaf is not None:
        raise ValueError("state carries a leaf function's state (a depth-limited solve with a stateful leaf "
                         "function): it is not checkpointed")
    if game.labels is None:
        raise ValueError("game has no labels (fingerprint); compile it with cfrjax.load_game / compile_game")
    # A bfloat16 leaf (a float32 solve's `avg_comp`) is stored widened to float32, exactly
    # (npz has no bfloat16), and read back in the state's dtype (`load_checkpoint`).
    arrays = {k: np.asarray(jax.device_get(getattr(state, k))) for k in _LEAVES if getattr(state, k) is not None}
    arrays = {k: a.astype(np.float32) if a.dtype == jnp.bfloat16 else a for k, a in arrays.items()}
    if not _fits(game, arrays["regret"].shape):
        raise ValueError(f"state has slot arrays of shape {arrays['regret'].shape}, the game {game.name!r} has "
                         f"{list(game.slot_shape)}: the state is not for this game")
    meta = dict(format=FORMAT, game=game.name, fingerprint=game.labels.fingerprint,
                game_data=game_data_digest(game), config=_config_dict(state.config),
                iteration=int(np.max(arrays["iteration"])) if arrays["iteration"].size else 0,
                leaves={k: [arrays[k].dtype.name, list(arrays[k].shape)] for k in _LEAVES if k in arrays},
                sha256=_array_digest(arrays), extra=extra)
    try:
        meta_bytes = json.dumps(meta, allow_nan=True).encode()
    except (TypeError, ValueError) as e:
        raise ValueError(f"extra is not JSON-able: {e}") from None
    atomic_write(path, lambda f: np.savez(f, meta=np.frombuffer(meta_bytes, np.uint8), **arrays))


def _read(path: str) -> tuple[dict, dict]:
    """Meta and arrays of a checkpoint file, verified; `CheckpointError` if unreadable."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files:
                raise CheckpointError(f"checkpoint {path}: not a cfrjax checkpoint (no metadata)")
            meta = json.loads(z["meta"].tobytes().decode())
            if not isinstance(meta, dict) or meta.get("format") != FORMAT:
                got = meta.get("format") if isinstance(meta, dict) else None
                raise CheckpointError(f"checkpoint {path}: not a cfrjax checkpoint (format {got!r}, "
                                      f"expected {FORMAT!r})")
            missing = [k for k in _LEAVES if k not in z.files and k not in _ADDED and k not in OPTIONAL_FIELDS]
            unknown = sorted(set(z.files) - set(_LEAVES) - {"meta"})
            if missing or unknown:
                raise CheckpointError(f"checkpoint {path}: its state has other fields than this version of cfrjax "
                                      f"(missing {missing}, unknown {unknown}); made by another version?")
            arrays = {k: z[k] for k in _LEAVES if k in z.files}
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError, UnicodeDecodeError) as e:
        size = os.path.getsize(path)
        raise CheckpointError(f"checkpoint {path} is truncated or corrupt ({size} bytes; "
                              f"{type(e).__name__}: {e}); delete it to start over") from None
    if _array_digest(arrays) != meta.get("sha256"):
        raise CheckpointError(f"checkpoint {path} is corrupt: its arrays do not match their recorded checksum")
    for name, like in _ADDED.items():
        arrays.setdefault(name, np.zeros_like(arrays[like]))
    return meta, arrays


def checkpoint_info(path: str | os.PathLike) -> dict:
    """The metadata of a checkpoint without loading it for a game: `game`, `fingerprint`,
    `config` (a `Config`), `iteration` (the largest, for a batch), `leaves` (dtype and
    shape per leaf) and `extra`. Raises `CheckpointError` for an unreadable file."""
    meta, _ = _read(os.fspath(path))
    info = dict(meta)
    info["config"] = _config_from_dict(meta["config"])
    return info


def load_checkpoint(path: str | os.PathLike, game, *,
                    config: Config | SolverState | None = None, retargeted: bool = False) -> SolverState:
    """Read a checkpoint written by `save_checkpoint` for `game`.

    Args:
      path: the checkpoint file.
      game: the compiled game; must be the one the checkpoint was made for (same
        fingerprint and the same payoffs / chance probabilities).
      config: if given (a `Config`, or a `SolverState` whose config is used), the
        checkpoint's config must equal it.
      retargeted: accept a checkpoint of the same tree with other payoffs, ranges or
        chance probabilities (`set_payoffs`, `set_root_ranges`, `set_root_chance`): a
        warm start (`cfrjax.warm_start`), not a resumption.

    Returns:
      The saved `SolverState`, leaves on the default device with their saved dtypes.

    Raises:
      FileNotFoundError: no file at `path`.
      CheckpointError: the file is truncated or corrupt, or was made for another game,
        other payoffs, or another config (the message says which and how).
    """
    path = os.fspath(path)
    meta, arrays = _read(path)
    labels = game.labels
    if labels is None or meta.get("fingerprint") != labels.fingerprint:
        raise CheckpointError(
            f"checkpoint {path} was made for game {meta.get('game')!r} (fingerprint {meta.get('fingerprint')}), "
            f"not for {game.name!r} (fingerprint {labels.fingerprint if labels else None}): another game, "
            "or the same game compiled differently (e.g. --chance or --hands); use another checkpoint path")
    if not retargeted and meta.get("game_data") != game_data_digest(game):
        raise CheckpointError(
            f"checkpoint {path} was made for game {meta.get('game')!r} with other payoffs or chance "
            "probabilities (same tree, retargeted: set_payoffs / set_root_ranges / set_root_chance); "
            "use another checkpoint path, or cfrjax.warm_start to start from it")
    try:
        saved = _config_from_dict(meta["config"])
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"checkpoint {path}: unreadable config {meta.get('config')!r} ({e})") from None
    want = config.config if isinstance(config, SolverState) else config
    if want is not None and want != saved:
        diff = [f"{k} {getattr(saved, k)!r} (asked: {getattr(want, k)!r})" for k in _config_dict(saved)
                if getattr(saved, k) != getattr(want, k)]
        raise CheckpointError(f"checkpoint {path} was made with a different config: {'; '.join(diff)}; "
                              "resume with the same options or use another checkpoint path")
    if saved.dtype == "float64" and not jax.config.jax_enable_x64:
        raise CheckpointError(f"checkpoint {path} holds a float64 state; enable 64-bit JAX "
                              "(jax.config.update('jax_enable_x64', True), or --dtype float64) to load it")
    if not _fits(game, arrays["regret"].shape):
        raise CheckpointError(f"checkpoint {path}: state has shape {arrays['regret'].shape}, the game has "
                              f"slot arrays of shape {list(game.slot_shape)}")
    _optional_leaves(path, saved, arrays)
    leaves = {k: jnp.asarray(arrays[k], arrays[k].dtype) if k in arrays else None for k in _LEAVES}
    for k in arrays:  # a silent dtype change (e.g. int64 -> int32) would break bit-exact resumption
        if leaves[k].dtype != arrays[k].dtype:
            raise CheckpointError(f"checkpoint {path}: leaf {k} is {arrays[k].dtype}, which this JAX "
                                  f"configuration stores as {leaves[k].dtype}")
    # The compensation in its dtype (`state.compensation_dtype`: stored widened; zeros from
    # a checkpoint without one; rounded from a float32 one of an earlier version).
    # A 16-bit state (`cfrjax.storage`) has none: its integers and node scales are stored.
    leaves["avg_comp"] = (None if saved.precision == "int16" else
                          leaves["avg_comp"].astype(compensation_dtype(saved.dtype)))
    return SolverState(**leaves, config=saved)


def _optional_leaves(path: str, config: Config, arrays: dict) -> None:
    """`arrays` (a checkpoint's, `_read`) with the leaves of `OPTIONAL_FIELDS` as
    `config`'s state holds them: a checkpoint written before they were optional stores a
    prediction for every rule (zeros, never read, unless the rule predicts: dropped) and
    a lock mask that may lock nothing (dropped with its policy, `cfrjax.init`'s `None`).
    A predictive rule's checkpoint without its prediction, or a mask without its policy,
    is refused (`CheckpointError`, one line)."""
    predictive = capabilities(config).predictive
    if not predictive:
        arrays.pop("prediction", None)
    elif "prediction" not in arrays:
        raise CheckpointError(f"checkpoint {path}: rule {config.rule!r} predicts but the checkpoint holds no "
                              "prediction buffer (written for another rule?); resume with the rule it was made with")
    if ("locked" in arrays) != ("locked_policy" in arrays):
        raise CheckpointError(f"checkpoint {path}: it holds a lock mask without its policy, or a policy without "
                              "its mask (locked, locked_policy); the file is not one save_checkpoint wrote")
    if "locked" in arrays and not arrays["locked"].any():
        del arrays["locked"], arrays["locked_policy"]
