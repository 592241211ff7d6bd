"""Strategy export for poker subgames: one row per (player, hand, public node, action).

Information-set keys of `build_spec` games are `"P{player}|{hand}|{public sequence}"`
(see `cfrjax.games.poker.subgame`); a policy is an `[S]` slot vector (e.g.
`cfrjax.average_policy(game, state)`), slots numbered information set by information
set in `game.labels` order.
"""

from __future__ import annotations

import csv
import json
import os

import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.games.poker.cards import canonical_hand

FIELDS = ("player", "hand", "history", "action", "probability")


def strategy_table(game, policy, *, min_probability: float = 0.0) -> list[dict]:
    """Rows `{"player", "hand", "history", "action", "probability"}` of `policy`.

    Args:
      game: a `CompiledGame` of a poker subgame (keys `P{player}|{hand}|{history}`).
      policy: `[S]` slot probabilities.
      min_probability: leave out rows with a smaller probability (0 keeps every row).

    `history` is the public betting sequence leading to the decision (`""` at the
    street's first decision; `k` check, `c` call, `f` fold, `b{x}` bet/raise to street
    total `x`, streets separated by `/{river card}/`). Rows are in slot order.
    """
    labels = game.labels
    if labels is None:
        raise ValueError("game has no labels")
    policy = np.asarray(policy, np.float64)
    if policy.shape != (game.num_slots,):
        raise ValueError(f"policy has shape {policy.shape}, expected [{game.num_slots}]")
    rows, off = [], 0
    for key, names in zip(labels.infoset_keys, labels.action_names):
        parts = key.split("|", 2)
        if len(parts) != 3 or not parts[0].startswith("P"):
            raise ValueError(f"information set key {key!r} is not a poker subgame key 'P<player>|<hand>|<history>'")
        player, hand, history = int(parts[0][1:]), parts[1], parts[2]
        for a, name in enumerate(names):
            p = float(policy[off + a])
            if p >= min_probability:
                rows.append({"player": player, "hand": hand, "history": history, "action": name, "probability": p})
        off += len(names)
    return rows


def write_strategy_json(rows: list[dict], path: str | os.PathLike, *, meta: dict | None = None) -> None:
    """Write rows (from `strategy_table`) as JSON: `{"fields": [...], "rows": [[...], ...], "meta": {...}}`."""
    doc = {"fields": list(FIELDS), "rows": [[r[f] for f in FIELDS] for r in rows]}
    if meta is not None:
        doc["meta"] = meta
    atomic_write(path, lambda f: json.dump(doc, f), text=True)


def write_strategy_csv(rows: list[dict], path: str | os.PathLike) -> None:
    """Write rows (from `strategy_table`) as CSV with a header line (probabilities with full precision)."""
    def write(f):
        w = csv.writer(f)
        w.writerow(FIELDS)
        for r in rows:
            w.writerow([r["player"], r["hand"], r["history"], r["action"], repr(r["probability"])])
    atomic_write(path, write, text=True)


def read_strategy_csv(path: str | os.PathLike) -> list[dict]:
    """Read a file written by `write_strategy_csv` back into rows (hands as printed now,
    high card first, whichever order the file has)."""
    with open(os.fspath(path), newline="") as f:
        r = csv.DictReader(f)
        return [{"player": int(d["player"]), "hand": canonical_hand(d["hand"], strict=False), "history": d["history"],
                 "action": d["action"], "probability": float(d["probability"])} for d in r]


def read_strategy_json(path: str | os.PathLike) -> list[dict]:
    """Read a file written by `write_strategy_json` back into rows (hands as in
    `read_strategy_csv`)."""
    with open(os.fspath(path)) as f:
        doc = json.load(f)
    rows = [dict(zip(doc["fields"], row)) for row in doc["rows"]]
    for r in rows:
        r["hand"] = canonical_hand(r["hand"], strict=False)
    return rows
