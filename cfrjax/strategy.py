"""Reading a policy: a table of action probabilities, and policy files by readable names.

A policy is an `[S]` slot vector (e.g. `cfrjax.average_policy(game, state)`); slots are
numbered information set by information set in `game.labels` order. Here it becomes

  * `strategy_table(game, policy)`: rows `{"infoset", "player", "action", "probability"}`
    (poker subgames also get `"hand"` and `"history"`: the parts of their keys);
  * a file, `save_policy(path, game, policy)`: `.json` keyed by the information sets'
    readable names (`{"infosets": {key: {"player": p, "actions": {name: prob}}}}`), or
    `.npz` (the slot vector plus the names). Probabilities are stored exactly (JSON
    floats round-trip float64, hence float32, exactly), so `load_policy(path, game)`
    returns the very vector that was saved and its exploitability is the same number.
    A name without either extension gets the form's default (`policy_path`: `.npz` for
    the public form, whose spots run to millions of information sets; `.json` for the
    tabular form); a `.json` file estimated above `MAX_JSON_BYTES` is refused
    (`check_json_size`: a turn spot's JSON runs to gigabytes, its `.npz` to megabytes).

`load_policy` matches by information-set and action names, so a policy saved from one
compilation of a game loads into another compilation of the same game (e.g. the other
`chance` mode); names that do not match are an error. Poker hands in names are read in
either card order (`cfrjax.game.hand_swapped`), so files written before hands printed
high card first (`"P1|KsAs|k"`, now `"P1|AsKs|k"`) keep loading.
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.forms import form_name, form_of
from cfrjax.game import hand_swapped
from cfrjax.policy import uniform_policy

__all__ = ["MAX_JSON_BYTES", "check_json_size", "is_policy_file", "json_size", "load_policy", "policy_dict",
           "policy_info", "policy_path", "read_policy_file", "save_policy", "strategy_table"]

FORMAT = "cfrjax.policy/1"
#: The largest `.json` policy `save_policy` writes (bytes, as `json_size` estimates it):
#: above it a policy is a `.npz` (a full-range turn spot's JSON runs to gigabytes, written
#: and read back in minutes; its `.npz` is a few tens of MB).
MAX_JSON_BYTES = 50 * 10 ** 6
#: Default file extension per compiled form (`policy_path`).
DEFAULT_EXTENSION = {"public": ".npz", "tabular": ".json"}


def _labels(game):
    if game.labels is None:
        raise ValueError("game has no labels (information-set names); compile it with cfrjax.load_game")
    return game.labels


def _as_vector(game, policy) -> np.ndarray:
    p = np.asarray(jax.device_get(policy))
    if p.shape != tuple(game.slot_shape):
        raise ValueError(f"policy has shape {p.shape}, expected {list(game.slot_shape)} (one entry per slot of "
                         f"{game.name!r}; for a batch, pass one policy at a time)")
    return p


def _action_keys(names) -> list[str]:
    """Action labels as distinct strings (a repeated label gets `#k`, its index)."""
    names = [str(n) for n in names]
    if len(set(names)) == len(names):
        return names
    return [n if names.count(n) == 1 else f"{n}#{k}" for k, n in enumerate(names)]


def strategy_table(game, policy, *, min_probability: float = 0.0) -> list[dict]:
    """One row per (information set, action): `{"infoset", "player", "action", "probability"}`.

    Args:
      game: the compiled game (any form).
      policy: slot probabilities shaped `game.slot_shape` (`cfrjax.average_policy(game, state)`).
      min_probability: leave out rows with a smaller probability (0 keeps every row).

    Games whose source declares the parts of its keys (`GameSpec.source["key_fields"]`;
    poker subgames: `P{player}|{hand}|{history}`) also get those parts as columns
    (`"hand"`, `"history"`). Rows are in slot order.
    """
    _labels(game)
    p = _as_vector(game, policy).astype(np.float64)
    return form_of(game).strategy_rows(game, p, min_probability)


def _entries(game):
    """`(key, player, action names, index)` per information set, `index` selecting its
    entries in slot arrays (`cfrjax.forms`: `infosets`)."""
    return form_of(game).infosets(game)


def policy_dict(game, policy) -> dict:
    """`{infoset key: {"player": p, "actions": {action name: probability}}}` in slot order."""
    _labels(game)
    p = _as_vector(game, policy)
    return {str(key): {"player": player, "actions": dict(zip(_action_keys(names), (float(x) for x in p[index])))}
            for key, player, names, index in _entries(game)}


def _layout(game) -> dict:
    """What a `.npz` policy file needs to name its entries without the game."""
    labels = game.labels
    if form_name(game) == "public":
        return dict(form="public", node_codes=list(labels.node_codes), node_player=[int(x) for x in labels.node_player],
                    action_names=[[str(n) for n in a] for a in labels.action_names],
                    node_dealt=[[int(c) for c in d] for d in labels.node_dealt],
                    hand_names=list(labels.hand_names), hand_cards=np.asarray(labels.hand_cards).tolist(),
                    **({} if labels.player_hands is None else dict(player_hand_names=[
                        list(labels.hand_names_of(p)) for p in (0, 1)])))
    return dict(form="tabular", infoset_keys=[str(k) for k in labels.infoset_keys],
                action_names=[[str(n) for n in a] for a in labels.action_names],
                infoset_player=[int(x) for x in labels.infoset_player])


def _file_entries(head: dict):
    """`(key, player, action names, index)` of a `.npz` policy file's layout."""
    if head.get("form", "tabular") == "public":
        cards = dict(zip(head["hand_names"], (set(c) for c in head["hand_cards"])))
        lists = head.get("player_hand_names") or [head["hand_names"]] * 2   # one list per player, or one for both
        off = 0
        for code, player, names, dealt in zip(head["node_codes"], head["node_player"], head["action_names"],
                                              head["node_dealt"]):
            sl = slice(off, off + len(names))
            for h, hand in enumerate(lists[player]):
                if not (set(dealt) & cards[hand]):
                    yield f"P{player}|{hand}|{code}", player, names, (sl, h)
            off += len(names)
        return
    off = 0
    for key, names, player in zip(head["infoset_keys"], head["action_names"], head["infoset_player"]):
        yield key, player, names, slice(off, off + len(names))
        off += len(names)


def json_size(game) -> int:
    """The size in bytes `save_policy` would write as `.json` for `game`, estimated from
    the counts alone (information sets, actions, the lengths of their names; 20
    characters per probability), without building the document: within about 20% of the
    file (tested)."""
    labels = _labels(game)
    if form_name(game) == "public":
        hand = float(np.mean([len(h) for h in labels.hand_names]))
        sets = names = actions = 0.0
        for i, (code, _, _, acts) in enumerate(labels.decision_nodes()):
            live = int(np.count_nonzero(labels.live_hands(i)))
            sets += live
            names += live * (len(code) + hand + 4 + sum(len(str(a)) for a in acts))
            actions += live * len(acts)
    else:
        sets = len(labels.infoset_keys)
        names = sum(len(str(k)) + sum(len(str(a)) for a in acts)
                    for k, acts in zip(labels.infoset_keys, labels.action_names))
        actions = sum(len(acts) for acts in labels.action_names)
    # per set: '  "KEY": {', '   "player": 0,', '   "actions": {', '   }', '  },' (50 bytes);
    # per action: '    "NAME": PROB,' (10 bytes and the number)
    return int(names + 50 * sets + (10 + 20) * actions)


def policy_path(path: str | os.PathLike, game) -> str:
    """`path` as `save_policy` writes it: unchanged when it ends with `.json` or `.npz`;
    a name without an extension gets the form's default, `.npz` for the public form (a
    poker spot's millions of information sets as one array) and `.json` for the tabular
    form. Raises `ValueError` for another extension."""
    path = os.fspath(path)
    if path.endswith((".json", ".npz")):
        return path
    if os.path.splitext(os.path.basename(path))[1]:
        raise ValueError(f"policy file {path!r}: the name must end with .json or .npz (or have no extension: "
                         f"{DEFAULT_EXTENSION[form_name(game)]} for {game.name!r})")
    return path + DEFAULT_EXTENSION[form_name(game)]


def check_json_size(path: str | os.PathLike, game, max_json_bytes: int | None = None) -> None:
    """Refuse (`ValueError`, one line naming `.npz`) a `.json` policy file of `game`
    estimated (`json_size`) above `max_json_bytes` (default `MAX_JSON_BYTES`, 50 MB);
    nothing for a `.npz` path. Fast: the command line calls it before solving."""
    path = os.fspath(path)
    limit = MAX_JSON_BYTES if max_json_bytes is None else int(max_json_bytes)
    if not path.endswith(".json"):
        return
    size = json_size(game)
    if size > limit:
        npz = path[:-len(".json")] + ".npz"
        raise ValueError(f"policy file {path}: {game.name!r} would take about {size / 1e6:,.0f} MB as JSON, over the "
                         f"{limit / 1e6:g} MB limit for .json (slow to write and to read back); write it as .npz "
                         f"instead ({npz}: the same policy, loaded by load_policy and cfrjax show)")


def save_policy(path: str | os.PathLike, game, policy, *, meta: dict | None = None,
                max_json_bytes: int | None = None) -> str:
    """Write `policy` to `path`: `.json` (keyed by information-set names) or `.npz`.

    Args:
      path: ends with `.json` or `.npz` (the compact choice for large spots: the slot
        array and the names it needs, e.g. a public-form turn's 1.6M information sets
        as one `[S, H]` array and the node codes and hands), or has no extension: the
        form's default is added (`policy_path`: `.npz` for the public form).
      game: the compiled game (any form).
      policy: slot probabilities shaped `game.slot_shape`.
      meta: optional JSON-able data stored with it (the CLI records iterations,
        exploitability, rule, ...).
      max_json_bytes: a `.json` file estimated larger (`json_size`) is refused
        (`check_json_size`; default `MAX_JSON_BYTES`, 50 MB).

    Returns:
      The path written.

    Raises:
      ValueError: another extension, or a `.json` file over `max_json_bytes` (the message
        names the `.npz` to write instead).
    """
    labels = _labels(game)
    p = _as_vector(game, policy)
    path = policy_path(path, game)
    check_json_size(path, game, max_json_bytes)
    head = dict(format=FORMAT, game=game.name, fingerprint=labels.fingerprint, dtype=p.dtype.name,
                form=form_name(game), meta=meta or {})
    if path.endswith(".json"):
        doc = dict(head, infosets=policy_dict(game, p))
        atomic_write(path, lambda f: f.write(json.dumps(doc, indent=1) + "\n"), text=True)
    else:
        head.update(_layout(game))
        atomic_write(path, lambda f: np.savez_compressed(f, meta=np.frombuffer(json.dumps(head).encode(), np.uint8),
                                                         policy=p))
    return path


def is_policy_file(path: str | os.PathLike) -> bool:
    """Whether `path` names a policy file: a `.json` name, or an existing `.npz` written by
    `save_policy` (not a checkpoint or a saved game, which are `.npz` files too)."""
    path = os.fspath(path)
    if path.endswith(".json"):
        return True
    if not (path.endswith(".npz") and os.path.isfile(path)):
        return False
    try:
        with np.load(path, allow_pickle=False) as z:
            return "meta" in z.files and json.loads(z["meta"].tobytes().decode()).get("format") == FORMAT
    except (OSError, ValueError, KeyError, EOFError):
        return False


def _read_npz(path: str) -> tuple[dict, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        head = json.loads(z["meta"].tobytes().decode())
        p = z["policy"]
    if head.get("format") != FORMAT:
        raise ValueError(f"format {head.get('format')!r}")
    return head, p


def policy_info(path: str | os.PathLike) -> dict:
    """A policy file's header without its probabilities: `{"game", "fingerprint", "dtype",
    "form", "meta"}` (`meta` as `save_policy` got it: `cfrjax solve --save-policy` records
    the iterations, the exploitability, the rule, ...). A `.npz` file's probabilities are
    not read. Raises `ValueError` if it is not a policy file."""
    path = os.fspath(path)
    if not path.endswith(".npz"):
        doc = read_policy_file(path)
        return {k: v for k, v in doc.items() if k != "infosets"}
    try:
        with np.load(path, allow_pickle=False) as z:
            head = json.loads(z["meta"].tobytes().decode())
        if head.get("format") != FORMAT:
            raise ValueError(f"format {head.get('format')!r}")
    except (OSError, ValueError, KeyError, EOFError) as e:
        raise ValueError(f"{path}: not a readable cfrjax policy file ({e}; expected {FORMAT!r} .npz written by "
                         "save_policy / cfrjax solve --save-policy)") from None
    return {k: head.get(k) for k in ("game", "fingerprint", "dtype", "form", "meta")}


def read_policy_file(path: str | os.PathLike) -> dict:
    """A policy file without a game: `{"game", "fingerprint", "dtype", "meta", "infosets"}`
    with `infosets` as in `policy_dict` (used by `cfrjax show`)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"policy file {path} does not exist")
    try:
        if path.endswith(".npz"):
            head, p = _read_npz(path)
            entries = list(_file_entries(head))
            size = max((idx[0].stop if isinstance(idx, tuple) else idx.stop) for *_, idx in entries) if entries else 0
            if size != p.shape[0]:
                raise ValueError(f"{p.shape[0]} slots for {size} actions")
            head["infosets"] = {key: {"player": player, "actions": dict(zip(_action_keys(names),
                                                                            (float(x) for x in p[idx])))}
                                for key, player, names, idx in entries}
            return head
        with open(path) as f:
            doc = json.load(f)
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("infosets"), dict):
            raise ValueError(f"format {doc.get('format') if isinstance(doc, dict) else None!r}")
        return doc
    except (OSError, ValueError, KeyError, TypeError, EOFError, IndexError) as e:
        raise ValueError(f"{path}: not a readable cfrjax policy file ({e}; expected {FORMAT!r} .json or .npz "
                         "written by save_policy / cfrjax solve --save-policy)") from None


def load_policy(path: str | os.PathLike, game, dtype=None):
    """Read a policy written by `save_policy` (or `cfrjax solve --save-policy`) for `game`.

    Args:
      path: a `.json` or `.npz` policy file.
      game: the compiled game (any form); its information sets and actions are matched
        by name, so a policy saved from one form loads into the other (entries of hands
        the other form does not have are not needed; every information set of `game`
        must be in the file).
      dtype: the result's dtype; `None`: the dtype it was saved in (float64 only under
        `jax_enable_x64`, else JAX's default float).

    Returns:
      Slot probabilities shaped `game.slot_shape`: exactly the saved values.

    Raises:
      ValueError: unreadable file, or its information sets / actions do not match `game`.
    """
    labels = _labels(game)
    path = os.fspath(path)
    if path.endswith(".npz") and os.path.isfile(path):
        try:
            head, p = _read_npz(path)
        except (OSError, ValueError, KeyError, EOFError):
            head, p = None, None
        if head is not None and head.get("fingerprint") == labels.fingerprint and p.shape == tuple(game.slot_shape) \
                and {k: v for k, v in head.items() if k in _layout(game)} == _layout(game):
            return jnp.asarray(p.astype(_dtype(dtype, head.get("dtype"))))   # the same layout: no name matching
    doc = read_policy_file(path)
    dtype = _dtype(dtype, doc.get("dtype", "float32"))
    table = doc["infosets"]
    out = np.asarray(uniform_policy(game), np.float64).copy()
    missing, seen = [], 0
    merged = {} if getattr(labels, "merge", None) is not None else None   # entry -> the first key read into it
    for key, _, names, index in _entries(game):
        entry = table.get(str(key))
        if entry is None:   # a poker hand written the other way round (before hands printed high card first)
            entry = table.get(hand_swapped(str(key), labels.source))
        if entry is None:
            missing.append(key)
            continue
        seen += 1
        actions = entry.get("actions", {}) if isinstance(entry, dict) else {}
        want = _action_keys(names)
        if set(actions) != set(want):
            raise ValueError(f"{path}: information set {key!r} has actions {sorted(actions)} in the file, "
                             f"{want} in {game.name!r}: the policy is for another game")
        probs = [actions[a] for a in want]
        if merged is not None:   # a suit-merged game: every member key reads into its representative's entry
            at = (index[0].start, index[1])
            if at in merged and not np.allclose(out[index], probs, rtol=0, atol=1e-9):
                raise ValueError(f"{path}: information sets {merged[at]!r} and {key!r} have different strategies, "
                                 f"which the suit-merged game {game.name!r} solves as one; load the policy into "
                                 "the game built with isomorphism = false")
            merged.setdefault(at, key)
        out[index] = probs
    if missing:
        raise ValueError(f"{path}: {len(missing)} information sets of {game.name!r} are not in the policy file "
                         f"(e.g. {missing[0]!r}); it was saved for {doc.get('game')!r}")
    # A public-form file also names the hands a tabular form has no information set for
    # (weight 0, or no compatible opponent hand): extra names are refused only in a tabular file.
    if form_name(game) == "tabular" and doc.get("form", "tabular") == "tabular" and len(table) > seen:
        raise ValueError(f"{path}: the file has {len(table) - seen} information sets that {game.name!r} does not "
                         f"have; it was saved for {doc.get('game')!r}")
    # float64 holds every saved value exactly (JSON floats are float64; float32 values widen exactly).
    return jnp.asarray(out.astype(dtype), dtype)


def _dtype(dtype, saved):
    if dtype is not None:
        return dtype
    dtype = saved if saved in ("float32", "float64") else "float32"
    return "float32" if dtype == "float64" and not jax.config.jax_enable_x64 else dtype
