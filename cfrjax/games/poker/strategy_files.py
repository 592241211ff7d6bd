"""A poker spot's strategy as a file: `cfrjax.strategy.strategy_table`'s rows as CSV or JSON.

The rows are those of `cfrjax.strategy.strategy_table(game, policy)` for a poker subgame of either
form: `{"infoset", "player", "action", "probability", "hand", "history"}`, one per
(information set, action), the key `"P{player}|{hand}|{history}"`
(`cfrjax.games.poker.subgame.KEY_FIELDS`). The files hold `FIELDS` (the key is made of
them); the readers return the same rows, key included.
"""

from __future__ import annotations

import csv
import json
import os

from cfrjax.atomic import atomic_write
from cfrjax.games.poker.cards import canonical_hand

FIELDS = ("player", "hand", "history", "action", "probability")


def _row(player, hand, history, action, probability) -> dict:
    """A row of `cfrjax.strategy.strategy_table` from the fields of a file (hands printed as now,
    high card first, whichever order the file has)."""
    player, hand = int(player), canonical_hand(hand, strict=False)
    return {"infoset": f"P{player}|{hand}|{history}", "player": player, "action": action,
            "probability": float(probability), "hand": hand, "history": history}


def _fields(rows: list[dict]):
    """Each row's `FIELDS` values; `ValueError` for a row without them (not a poker spot's)."""
    for r in rows:
        if any(f not in r for f in FIELDS):
            raise ValueError(f"row {r!r} has no {'/'.join(f for f in FIELDS if f not in r)}: not a row of a poker "
                             "spot's cfrjax.strategy.strategy_table")
        yield [r[f] for f in FIELDS]


def write_strategy_json(rows: list[dict], path: str | os.PathLike, *, meta: dict | None = None) -> None:
    """Write rows (from `cfrjax.strategy.strategy_table`) as JSON: `{"fields": [...], "rows": [[...], ...], "meta": {...}}`."""
    doc = {"fields": list(FIELDS), "rows": list(_fields(rows))}
    if meta is not None:
        doc["meta"] = meta
    atomic_write(path, lambda f: json.dump(doc, f), text=True)


def write_strategy_csv(rows: list[dict], path: str | os.PathLike) -> None:
    """Write rows (from `cfrjax.strategy.strategy_table`) as CSV with a header line (probabilities with full precision)."""
    values = list(_fields(rows))

    def write(f):
        w = csv.writer(f)
        w.writerow(FIELDS)
        for player, hand, history, action, probability in values:
            w.writerow([player, hand, history, action, repr(probability)])
    atomic_write(path, write, text=True)


def read_strategy_csv(path: str | os.PathLike) -> list[dict]:
    """Read a file written by `write_strategy_csv` back into `cfrjax.strategy.strategy_table`'s rows."""
    with open(os.fspath(path), newline="") as f:
        return [_row(*(d[k] for k in FIELDS)) for d in csv.DictReader(f)]


def read_strategy_json(path: str | os.PathLike) -> list[dict]:
    """Read a file written by `write_strategy_json` back into `cfrjax.strategy.strategy_table`'s rows."""
    with open(os.fspath(path)) as f:
        doc = json.load(f)
    return [_row(**dict(zip(doc["fields"], row))) for row in doc["rows"]]
