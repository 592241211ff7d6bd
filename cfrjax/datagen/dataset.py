"""`DatagenConfig`: everything that determines a dataset of solved river spots.

A dataset is `shards` shards of `spots` spots each; shard `i` is a pure function of the
config and `i` (`cfrjax.datagen.sampling.sample_shard`), so sharding, workers and resuming
never change the data. The config is frozen and hashable and validated at construction;
its JSON form (`manifest`) is kept next to the shards (`dataset.json`) so that a rerun
with other options into the same folder is refused.

Pots and trees. Bet sizes are (mostly) pot fractions, so a river spot's game divided by
its pot is the same for many pots: only what depends on the stack (an all-in cap, a bet
cut to the stack or merged with the all-in; sizes computed from the stack) or on whole
chips (sizes rounded to chips) makes the pot-relative game depend on the pot, and an
all-in cap does so continuously (the all-in is `behind / pot` pots). Pots therefore come
from a finite grid (`pots`, chips), and grid pots whose games divided by their pot are
equal (same betting tree, payoffs over the pot equal to 12 decimals: `tree_groups`, from
the actual chip builds, so nothing is assumed about the sizes) form one *tree group*.
A group is solved as the game of its first pot (`reference_pot`); its values, divided by
that pot, are every member's pot-relative values.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os

import numpy as np

from cfrjax.games.poker.config import PokerSubgameSpec
from cfrjax.games.poker.cards import PokerSpecError, board_str, parse_cards
from cfrjax.rules import AVERAGING, DEFAULT_ORDER, DEFAULT_RULE, DTYPES, ORDERS, RULES

__all__ = ["DatagenConfig", "SCHEMA_VERSION", "default_pots", "spot_spec"]

#: Version of the shard schema (`cfrjax.datagen` module docstring); in every shard's meta.
SCHEMA_VERSION = 2
#: Fields of a `PokerSubgameSpec` that a dataset samples or ignores (the rest is its betting).
_SAMPLED = ("board", "pot", "stack", "range0", "range1", "random_hands", "seed", "name", "source", "hands")


def default_pots(stack: float) -> tuple:
    """The default pot grid (chips): `2 stack / 2^k` for k = 5, 4, 3, 2, 1, i.e. from a
    32nd of the chips in play up to half of them (stack-to-pot ratios behind of about 15.5,
    7.5, 3.5, 1.5 and 0.5)."""
    return tuple(2.0 * stack / 2 ** k for k in (5, 4, 3, 2, 1))


def _resolve_spec(spec) -> tuple[PokerSubgameSpec, str]:
    """`(template, name)` of a spec name, a `.toml` path or a `PokerSubgameSpec`."""
    if isinstance(spec, PokerSubgameSpec):
        return spec, spec.name
    from cfrjax.games.poker.toml import load_poker_config
    from cfrjax.load import spec_path

    text = os.fspath(spec)
    path = text if os.path.isfile(text) else spec_path(text)
    if path is None:
        raise PokerSpecError(f"spec {text!r} is neither a .toml file nor a shipped spec (cfrjax games lists them)")
    cfg = load_poker_config(path)
    return cfg, cfg.name


def spot_spec(template: PokerSubgameSpec, board, pot: float, stack: float) -> PokerSubgameSpec:
    """The river spot on `board` with pot `pot` and stacks `stack` (chips), the template's
    betting, every live hand in range and in the hand list (`hands="all"`: the spots'
    ranges are set per spot; unmerged: the random ranges differ by suit)."""
    return dataclasses.replace(template, board=board, pot=float(pot), stack=float(stack), range0=None, range1=None,
                               random_hands=None, name="datagen_spot", source=None, hands="all",
                               isomorphism=False)


@dataclasses.dataclass(frozen=True)
class DatagenConfig:
    """A dataset of solved river spots (see the module docstring).

    Attributes:
      spec: the template spot: a shipped spec name (`"hunl_river_full"`), a `.toml` path
        or a `PokerSubgameSpec`; its betting (bet and raise sizes, raise cap) is the
        dataset's, its board, pot and ranges are replaced by samples. Stored resolved (a
        `PokerSubgameSpec`); a river spec (5 board cards).
      stack: each player's stack at the start of the hand (chips, fixed per dataset;
        `None`: the template's).
      pots: the pot grid in chips (`None`: `default_pots(stack)`); every pot in
        `(0, 2 stack]`, no repeats. Each spot's pot is uniform over the grid.
      spots: spots per shard, which is also the solve batch.
      shards: shards in the dataset.
      iterations: CFR iterations per spot.
      rule, order, averaging, dtype: the solver (`cfrjax.init`; default DCFR alternating,
        float32).
      seed: the dataset seed; shard `i` draws from `SeedSequence(seed, spawn_key=(i,))`.
      board: cards every spot's board holds (`"Ks Js Th 7d"`: 0 to 4 cards; `None`, the
        default: none), the others drawn uniformly from the rest of the deck, e.g. the
        river boards below one turn spot, for a value network that serves that spot
        alone. Stored as card ids, ascending.
    """

    spec: object = "hunl_river_full"
    stack: float | None = None
    pots: tuple | None = None
    spots: int = 1024
    shards: int = 1
    iterations: int = 1000
    rule: str = DEFAULT_RULE
    order: str = DEFAULT_ORDER
    averaging: str = "linear"
    dtype: str = "float32"
    seed: int = 0
    board: object = None

    def __post_init__(self):
        template, name = _resolve_spec(self.spec)
        if template.street != "river":
            raise PokerSpecError(f"spec {name!r} is a {template.street} spot; datagen samples river spots "
                                 "(a spec with a 5-card board)")
        object.__setattr__(self, "spec", template)
        stack = template.stack if self.stack is None else self.stack
        if isinstance(stack, bool) or not isinstance(stack, (int, float, np.number)) or not math.isfinite(stack) \
                or stack <= 0:
            raise PokerSpecError(f"stack {self.stack!r} must be a finite number of chips > 0")
        object.__setattr__(self, "stack", float(stack))
        pots = default_pots(self.stack) if self.pots is None else self.pots
        if isinstance(pots, (int, float, str)):
            pots = (pots,)
        try:
            pots = tuple(float(p) for p in pots)
        except (TypeError, ValueError):
            raise PokerSpecError(f"pots {self.pots!r} must be numbers of chips") from None
        if not pots:
            raise PokerSpecError("pots is empty; give at least one pot (chips)")
        for p in pots:
            if not math.isfinite(p) or p <= 0 or p > 2 * self.stack:
                raise PokerSpecError(f"pot {p:g} is outside (0, {2 * self.stack:g}]: a pot holds at most both "
                                     f"stacks ({self.stack:g} each)")
        if len(set(pots)) != len(pots):
            raise PokerSpecError(f"pots {pots} name a pot twice")
        object.__setattr__(self, "pots", pots)
        for field in ("spots", "shards", "iterations"):
            v = getattr(self, field)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{field} {v!r} must be an integer >= 1")
            object.__setattr__(self, field, int(v))
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ValueError(f"seed {self.seed!r} must be an integer >= 0")
        object.__setattr__(self, "seed", int(self.seed))
        if self.board is not None:
            cards = parse_cards(self.board, what="board")
            if cards.size > 4:
                raise PokerSpecError(f"board {self.board!r} fixes {cards.size} cards; at most 4 (the river card "
                                     "and any others not given are drawn per shard)")
            object.__setattr__(self, "board", tuple(sorted(int(c) for c in cards)) or None)
        for field, allowed in (("rule", RULES), ("order", ORDERS), ("averaging", AVERAGING), ("dtype", DTYPES)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"unknown {field} {getattr(self, field)!r}; allowed: {', '.join(allowed)}")

    @property
    def betting(self) -> dict:
        """The template's betting (every `PokerSubgameSpec` field a dataset does not sample)."""
        return {f.name: _jsonable(getattr(self.spec, f.name)) for f in dataclasses.fields(self.spec)
                if f.name not in _SAMPLED}

    @functools.cached_property
    def tree_groups(self) -> tuple:
        """`((pot indices), ...)`: the grid pots grouped by their game divided by the pot
        (the tabular build of one deal on a fixed board, NumPy only: tree shape and payoffs
        over the pot, rounded to 12 decimals), in order of their first pot."""
        from cfrjax.game import fingerprint
        from cfrjax.games.poker.subgame import build_spec

        keys = {}
        for i, pot in enumerate(self.pots):
            g = build_spec(dataclasses.replace(spot_spec(self.spec, "2s 3h 5d 8c Jh", pot, self.stack),
                                               range0="AsAh", range1="KsKh"))
            key = fingerprint(dict(parent=g.parent, action=g.action, kind=g.kind,
                                   payoff=np.round(g.payoff / pot, 12) + 0.0))
            keys.setdefault(key, []).append(i)
        return tuple(tuple(v) for v in keys.values())

    def reference_pot(self, group: int) -> float:
        """The pot (chips) whose game tree group `group` is solved as: its first pot."""
        return self.pots[self.tree_groups[group][0]]

    def manifest(self) -> dict:
        """The JSON form of the dataset (`dataset.json`): schema version, every field, the
        template's betting and the tree groups; `board` (the fixed cards, a string) only
        where cards are fixed, so a dataset written before that option still matches."""
        out = dict(schema=SCHEMA_VERSION, street="river", spec=self.spec.name, betting=self.betting,
                   stack=self.stack, pots=list(self.pots), spots=self.spots, shards=self.shards,
                   iterations=self.iterations, rule=self.rule, order=self.order, averaging=self.averaging,
                   dtype=self.dtype, seed=self.seed, tree_groups=[list(g) for g in self.tree_groups])
        if self.board is not None:
            out["board"] = board_str(self.board)
        return out


def _jsonable(x):
    """`x` as plain JSON values: dataclasses as dicts, tuples as lists, a non-finite float
    as its name, anything else unknown as its `repr`."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: _jsonable(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if isinstance(x, (tuple, list)):
        return [_jsonable(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (np.floating, np.integer)):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return repr(x)
