"""Reading a policy: a table of action probabilities, and policy files by readable names.

A policy is an `[S]` slot vector (e.g. `cfrjax.average_policy(game, state)`); slots are
numbered information set by information set in `game.labels` order. Here it becomes

  * `strategy_table(game, policy)`: rows `{"infoset", "player", "action", "probability"}`
    (poker subgames also get `"hand"` and `"history"`, from
    `cfrjax.games.poker.strategy_table`);
  * a file, `save_policy(path, game, policy)`: `.json` keyed by the information sets'
    readable names (`{"infosets": {key: {"player": p, "actions": {name: prob}}}}`), or
    `.npz` (the slot vector plus the names). Probabilities are stored exactly (JSON
    floats round-trip float64, hence float32, exactly), so `load_policy(path, game)`
    returns the very vector that was saved and its exploitability is the same number.

`load_policy` matches by information-set and action names, so a policy saved from one
compilation of a game loads into another compilation of the same game (e.g. the other
`chance` mode); names that do not match are an error.
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.game import CompiledGame

__all__ = ["load_policy", "policy_dict", "read_policy_file", "save_policy", "strategy_table"]

FORMAT = "cfrjax.policy/1"


def _labels(game: CompiledGame):
    if game.labels is None:
        raise ValueError("game has no labels (information-set names); compile it with cfrjax.load_game")
    return game.labels


def _as_vector(game: CompiledGame, policy) -> np.ndarray:
    p = np.asarray(jax.device_get(policy))
    if p.shape != (game.num_slots,):
        raise ValueError(f"policy has shape {p.shape}, expected [{game.num_slots}] (one entry per slot of "
                         f"{game.name!r}; for a batch, pass one policy at a time)")
    return p


def _action_keys(names) -> list[str]:
    """Action labels as distinct strings (a repeated label gets `#k`, its index)."""
    names = [str(n) for n in names]
    if len(set(names)) == len(names):
        return names
    return [n if names.count(n) == 1 else f"{n}#{k}" for k, n in enumerate(names)]


def _is_poker(game: CompiledGame) -> bool:
    return isinstance(game.labels.source, dict) and "poker" in game.labels.source


def strategy_table(game: CompiledGame, policy, *, min_probability: float = 0.0) -> list[dict]:
    """One row per (information set, action): `{"infoset", "player", "action", "probability"}`.

    Args:
      game: the compiled game.
      policy: `[S]` slot probabilities (`cfrjax.average_policy(game, state)`).
      min_probability: leave out rows with a smaller probability (0 keeps every row).

    For poker subgames (built by `cfrjax.games.poker`) the rows also hold `"hand"` and
    `"history"` (the public betting sequence), as in `cfrjax.games.poker.strategy_table`.
    Rows are in slot order.
    """
    labels = _labels(game)
    p = _as_vector(game, policy).astype(np.float64)
    poker = None
    if _is_poker(game):
        from cfrjax.games.poker.strategy import strategy_table as poker_table
        try:
            poker = poker_table(game, p)
        except ValueError:
            poker = None
    rows, off = [], 0
    for i, (key, names) in enumerate(zip(labels.infoset_keys, labels.action_names)):
        player = int(labels.infoset_player[i])
        for a, name in enumerate(names):
            prob = float(p[off + a])
            if prob >= min_probability:
                row = {"infoset": key, "player": player, "action": str(name), "probability": prob}
                if poker is not None:
                    row["hand"], row["history"] = poker[off + a]["hand"], poker[off + a]["history"]
                rows.append(row)
        off += len(names)
    return rows


def policy_dict(game: CompiledGame, policy) -> dict:
    """`{infoset key: {"player": p, "actions": {action name: probability}}}` in slot order."""
    labels = _labels(game)
    p = _as_vector(game, policy)
    out, off = {}, 0
    for i, (key, names) in enumerate(zip(labels.infoset_keys, labels.action_names)):
        probs = [float(x) for x in p[off:off + len(names)]]
        out[str(key)] = {"player": int(labels.infoset_player[i]), "actions": dict(zip(_action_keys(names), probs))}
        off += len(names)
    return out


def save_policy(path: str | os.PathLike, game: CompiledGame, policy, *, meta: dict | None = None) -> None:
    """Write `policy` to `path`: `.json` (keyed by information-set names) or `.npz`.

    Args:
      path: ends with `.json` or `.npz`.
      game: the compiled game.
      policy: `[S]` slot probabilities.
      meta: optional JSON-able data stored with it (the CLI records iterations,
        exploitability, rule, ...).
    """
    labels = _labels(game)
    p = _as_vector(game, policy)
    path = os.fspath(path)
    head = dict(format=FORMAT, game=game.name, fingerprint=labels.fingerprint, dtype=p.dtype.name,
                meta=meta or {})
    tmp = path + ".tmp"
    if path.endswith(".json"):
        doc = dict(head, infosets=policy_dict(game, p))
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    elif path.endswith(".npz"):
        head.update(infoset_keys=[str(k) for k in labels.infoset_keys],
                    action_names=[[str(n) for n in a] for a in labels.action_names],
                    infoset_player=[int(x) for x in labels.infoset_player])
        with open(tmp, "wb") as f:
            np.savez_compressed(f, meta=np.frombuffer(json.dumps(head).encode(), np.uint8), policy=p)
    else:
        raise ValueError(f"policy file {path!r}: the name must end with .json or .npz")
    os.replace(tmp, path)


def read_policy_file(path: str | os.PathLike) -> dict:
    """A policy file without a game: `{"game", "fingerprint", "dtype", "meta", "infosets"}`
    with `infosets` as in `policy_dict` (used by `cfrjax show`)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"policy file {path} does not exist")
    try:
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as z:
                head = json.loads(z["meta"].tobytes().decode())
                p = z["policy"]
            if head.get("format") != FORMAT:
                raise ValueError(f"format {head.get('format')!r}")
            infosets, off = {}, 0
            for key, names, player in zip(head.pop("infoset_keys"), head.pop("action_names"),
                                          head.pop("infoset_player")):
                probs = [float(x) for x in p[off:off + len(names)]]
                infosets[key] = {"player": player, "actions": dict(zip(_action_keys(names), probs))}
                off += len(names)
            if off != p.shape[0]:
                raise ValueError(f"{p.shape[0]} probabilities for {off} actions")
            head["infosets"] = infosets
            return head
        with open(path) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("infosets"), dict):
            raise ValueError(f"format {doc.get('format') if isinstance(doc, dict) else None!r}")
        return doc
    except (OSError, ValueError, KeyError, TypeError, EOFError) as e:
        raise ValueError(f"{path}: not a readable cfrjax policy file ({e}; expected {FORMAT!r} .json or .npz "
                         "written by save_policy / cfrjax solve --save-policy)") from None


def load_policy(path: str | os.PathLike, game: CompiledGame, dtype=None):
    """Read a policy written by `save_policy` (or `cfrjax solve --save-policy`) for `game`.

    Args:
      path: a `.json` or `.npz` policy file.
      game: the compiled game; its information sets and actions are matched by name.
      dtype: the result's dtype; `None`: the dtype it was saved in (float64 only under
        `jax_enable_x64`, else JAX's default float).

    Returns:
      `[S]` slot probabilities in `game`'s slot order: exactly the saved values.

    Raises:
      ValueError: unreadable file, or its information sets / actions do not match `game`.
    """
    labels = _labels(game)
    path = os.fspath(path)
    doc = read_policy_file(path)
    saved = doc.get("dtype", "float32")
    if dtype is None:
        dtype = saved if saved in ("float32", "float64") else "float32"
        if dtype == "float64" and not jax.config.jax_enable_x64:
            dtype = "float32"
    table = doc["infosets"]
    out = np.empty(game.num_slots, np.float64)
    off, missing = 0, []
    for key, names in zip(labels.infoset_keys, labels.action_names):
        entry = table.get(str(key))
        if entry is None:
            missing.append(key)
            off += len(names)
            continue
        actions = entry.get("actions", {}) if isinstance(entry, dict) else {}
        want = _action_keys(names)
        if set(actions) != set(want):
            raise ValueError(f"{path}: information set {key!r} has actions {sorted(actions)} in the file, "
                             f"{want} in {game.name!r}: the policy is for another game")
        out[off:off + len(names)] = [actions[a] for a in want]
        off += len(names)
    if missing:
        raise ValueError(f"{path}: {len(missing)} of {game.num_infosets} information sets of {game.name!r} are not "
                         f"in the policy file (e.g. {missing[0]!r}); it was saved for {doc.get('game')!r}")
    extra = len(table) - game.num_infosets
    if extra > 0:
        raise ValueError(f"{path}: the file has {extra} information sets that {game.name!r} does not have; "
                         f"it was saved for {doc.get('game')!r}")
    # float64 holds every saved value exactly (JSON floats are float64; float32 values widen exactly).
    return jnp.asarray(out.astype(dtype), dtype)
