"""Poker subgame specs as TOML files (`games/*.toml`): file -> `PokerSubgameSpec` -> game.

A raked spot adds a `[rake]` table, `rate` (fraction of the pot at a terminal) and `cap`
(chips; leave it out for no cap), e.g. `[rake]` / `rate = 0.05` / `cap = 3`; the top-level
keys `rake_rate` / `rake_cap` are the same (`PokerSubgameSpec`'s docstring says how the
rake is taken).
"""

from __future__ import annotations

import os
import tomllib
from typing import Mapping

from cfrjax.games.poker.betting import TABLE_KEYS as BETTING_KEYS
from cfrjax.games.poker.cards import PokerSpecError
from cfrjax.games.poker.config import PokerSubgameSpec
from cfrjax.games.poker.libratus import load_libratus_endgame
from cfrjax.games.poker.subgame import build_spec
from cfrjax.spec import GameSpec

_TOML_KEYS = {
    "name", "board", "pot", "behind", "stack", "bet_fractions", "raise_fractions", "raise_cap",
    "range0", "range1", "player0", "player1", "random_hands", "seed", "libratus", "top_n", "game", "kind",
    "betting", "rake_rate", "rake_cap", "hands", "pad_hands", "isomorphism",
}
#: Keys of the `[rake]` table (lifted as `rake_<key>`).
_RAKE_KEYS = ("rate", "cap")


def _flatten(d: Mapping, where: str) -> dict:
    """The keys of the `[betting]` / `[ranges]` tables lifted to the top level, except the
    size-string keys of `[betting]` (`bet`, `raise`, `donk`, thresholds, street and player
    tables), which stay together as `flat["betting"]`; those of `[rake]` as `rake_rate` /
    `rake_cap`."""
    flat: dict = {}
    for k, v in d.items():
        if k == "rake" and isinstance(v, Mapping):
            unknown = sorted(set(v) - set(_RAKE_KEYS))
            if unknown:
                raise PokerSpecError(f"{where}: unknown key(s) {unknown} in [rake]; allowed: {list(_RAKE_KEYS)}")
            items = [(f"rake_{k2}", v2) for k2, v2 in v.items()]
        else:
            items = v.items() if k in ("betting", "ranges", "game_config") and isinstance(v, Mapping) else [(k, v)]
        for k2, v2 in items:
            if k == "betting" and k2 in BETTING_KEYS:
                flat.setdefault("betting", {})[k2] = v2
                continue
            if k2 in flat:
                raise PokerSpecError(f"{where}: key {k2!r} given twice")
            flat[k2] = v2
    return flat


def config_from_dict(d: Mapping, *, base_dir: str | None = None, where: str = "spec") -> PokerSubgameSpec:
    """A `PokerSubgameSpec` from a (TOML-shaped) mapping.

    Keys may sit at the top level or in `[betting]` / `[ranges]` tables: `name`,
    `board`, `pot`, `behind` (chips each player has behind, postflop-solver's
    `effective_stack`) or `stack` (the whole stack, the half-pot included: `stack =
    behind + pot / 2`; not both), `bet_fractions`, `raise_fractions`, `raise_cap` (an
    integer, or "unlimited"), `range0` / `player0`, `range1` / `player1` (a range
    string, a table hand -> weight or an array of hands), `random_hands`, `seed`,
    `hands` (the public form's hand list: "range" or "all", `PokerSubgameSpec.hands`),
    and `libratus = "path/to/subgameN.txt"` with optional `top_n` (board, pot, ranges
    and bet abstraction from the Libratus file; other keys override). Rake: a `[rake]`
    table with `rate` and `cap` (or top-level `rake_rate`, `rake_cap`; no cap when
    left out).

    Bet sizes as the solvers write them live in `[betting]` only (instead of
    `bet_fractions` / `raise_fractions`): `bet`, `raise`, `donk` (size strings such as
    "33%, 75%, a" or "2.5x"), `add_allin_threshold`, `force_allin_threshold`,
    `merging_threshold`, and the tables `[betting.<street>]`, `[betting.<player>]`,
    `[betting.<street>.<player>]` (streets flop, turn, river; players oop, ip) with
    `bet` / `raise` (and `donk` on a street); see `cfrjax.games.poker.betting`. With
    them `raise_cap` defaults to unlimited.
    """
    flat = _flatten(d, where)
    unknown = sorted(set(flat) - _TOML_KEYS)
    if unknown:
        hint = "; bet size strings (bet, raise, donk, ...) go in [betting]" if set(unknown) & set(BETTING_KEYS) else ""
        raise PokerSpecError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_TOML_KEYS)}{hint}")
    kind = flat.pop("game", flat.pop("kind", "poker_subgame"))
    if kind not in ("poker_subgame", "hunl_subgame", "poker"):
        raise PokerSpecError(f"{where}: game = {kind!r} is not a poker subgame")
    for a, b in (("player0", "range0"), ("player1", "range1")):
        if a in flat:
            if b in flat:
                raise PokerSpecError(f"{where}: give {a} or {b}, not both")
            flat[b] = flat.pop(a)
    if flat.get("raise_cap") in ("unlimited", "none", "None", -1):
        flat["raise_cap"] = None
    kw = dict(flat)
    lib = kw.pop("libratus", None)
    top_n = kw.pop("top_n", None)
    try:
        if lib is not None:
            path = lib if os.path.isabs(lib) or base_dir is None else os.path.join(base_dir, lib)
            return load_libratus_endgame(path, top_n=top_n, **kw)
        if top_n is not None:
            raise PokerSpecError(f"{where}: top_n only applies to a libratus endgame")
        if "board" not in kw:
            raise PokerSpecError(f"{where}: missing key 'board'")
        return PokerSubgameSpec(**kw)
    except PokerSpecError as e:
        raise PokerSpecError(f"{where}: {e}") from None


def load_poker_config(path: str | os.PathLike, **overrides) -> PokerSubgameSpec:
    """Read a poker subgame TOML file into a `PokerSubgameSpec`.

    `overrides` replace keys wherever the file has them (top level or a table), e.g.
    `random_hands=10`; `behind` replaces the file's `stack` and the reverse; giving
    `range0`/`range1` replaces the file's ranges altogether.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise PokerSpecError(f"{path}: not valid TOML: {e}") from None
    data = _flatten(data, path)
    overrides = _flatten(overrides, "overrides")
    data.setdefault("name", os.path.splitext(os.path.basename(path))[0])
    if any(k in overrides for k in ("range0", "range1", "player0", "player1")):
        # Explicit ranges replace the file's ranges, random hands included.
        for k in ("range0", "range1", "player0", "player1", "random_hands", "seed"):
            if k not in overrides:
                data.pop(k, None)
    for a, b in (("behind", "stack"), ("stack", "behind")):
        if a in overrides:   # the chips behind given one way replace the file's, given either way
            data.pop(b, None)
    data.update(overrides)
    return config_from_dict(data, base_dir=os.path.dirname(os.path.abspath(path)), where=path)


def load_poker_toml(path: str | os.PathLike, **overrides) -> GameSpec:
    """Build the `GameSpec` described by a poker subgame TOML file (see `config_from_dict`)."""
    return build_spec(load_poker_config(path, **overrides))
