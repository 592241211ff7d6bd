"""The configuration of a HUNL river/turn subgame (`PokerSubgameSpec`), independent of
how it is compiled: `subgame.build_spec` (tabular form, one tree copy per deal) and
`public.build_public` (public form, vectors over hands) both start from it, and
`libratus` / `toml` produce it. It imports neither builder (no import cycles).

**Rake** (`rake_rate`, `rake_cap`), as postflop-solver defines it: at every terminal the
rake is `min(rake_rate * pot_at_terminal, rake_cap)` chips, where the pot at the terminal
is the starting pot plus twice the amount both players matched (at a fold: twice the
folder's commitment; an unmatched bet goes back to the bettor). The winner pays it (the
player who did not fold, or the stronger hand at a showdown); at a tied showdown each
player pays half. A raked game is not zero-sum, so only the public form solves it
(`PokerSubgameSpec.raked`; the tabular builder refuses it).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np

from cfrjax.games.poker.cards import PokerSpecError, board_str, parse_board
from cfrjax.games.poker.ranges import random_ranges, resolve_range

ALLIN = "allin"


def _norm_size(f, what: str):
    if isinstance(f, str):
        if f.strip().lower().replace("-", "").replace("_", "") in ("allin", "shove"):
            return ALLIN
        raise PokerSpecError(f"{what}: unknown bet size {f!r}; use a positive pot fraction or 'allin'")
    try:
        x = float(f)
    except (TypeError, ValueError):
        raise PokerSpecError(f"{what}: bet size {f!r} is not a number") from None
    if not math.isfinite(x) or x <= 0:
        raise PokerSpecError(f"{what}: bet size {f!r} must be a finite pot fraction > 0 (or 'allin')")
    return x


def _norm_range(r):
    """Hashable form of a range description (strings kept, arrays -> tuples)."""
    if r is None or isinstance(r, str):
        return r
    if isinstance(r, Mapping):
        return tuple((str(k), float(v)) for k, v in r.items())
    if isinstance(r, np.ndarray):
        return tuple(float(x) for x in r.ravel())
    out = []
    for x in r:
        if isinstance(x, (str, int, float, np.number)):
            out.append(x if isinstance(x, str) else float(x))
        else:
            out.append(tuple(x))
    return tuple(out)


def starting_pot(game) -> float | None:
    """The pot at the root of a poker subgame (chips), for any form (`GameSpec`, compiled
    tabular or public game); `None` for a game that is not a poker subgame. Poker solvers
    report exploitability as a percentage of this pot."""
    source = game.source if hasattr(game, "source") else getattr(getattr(game, "labels", None), "source", None)
    pot = ((source or {}).get("poker") or {}).get("pot")
    return None if pot is None else float(pot)


@dataclasses.dataclass(frozen=True)
class PokerSubgameSpec:
    """Configuration of a HUNL river/turn subgame (see the module docstring).

    Attributes:
      board: 4 (turn) or 5 (river) cards, e.g. "Ks Js Th 7d 2c"; stored normalized.
      pot: chips in the pot at the start of the subgame (both players put in half).
      stack: each player's stack at the start of the hand (includes the half-pot).
      bet_fractions: sizes of a first bet on a street, pot fractions or "allin".
      raise_fractions: sizes of raises; `None` = same as `bet_fractions`.
      raise_cap: raises allowed per street; 0 = none, `None` = unlimited.
      range0, range1: range descriptions (`ranges.resolve_range`): a range string,
        a hand->weight mapping, a list of hands, or 1,326 weights in combo order;
        `None` = every live combo with weight 1 (unless `random_hands` is set).
      random_hands: if set, each player gets this many random live combos
        (`ranges.random_ranges`, drawn from `seed`); excludes range0/range1.
      seed: seed of `random_hands`.
      name: name of the built GameSpec.
      rake_rate: fraction of the pot at a terminal taken as rake, in [0, 1]; 0 = no rake.
      rake_cap: the most rake taken at one terminal, chips >= 0 (`math.inf`: no cap,
        the default). See the module docstring.
      source: extra JSON-able provenance copied into `GameSpec.source["poker"]`.
    """

    board: Any
    pot: float = 20.0
    stack: float = 100.0
    bet_fractions: tuple = (0.5, 1.0)
    raise_fractions: tuple | None = None
    raise_cap: int | None = 0
    range0: Any = None
    range1: Any = None
    random_hands: int | None = None
    seed: int = 0
    name: str = "poker_subgame"
    rake_rate: float = 0.0
    rake_cap: float = math.inf
    source: Any = None

    def __post_init__(self):
        cards = parse_board(self.board)
        if cards.size not in (4, 5):
            raise PokerSpecError(f"board {self.board!r}: only turn (4 cards) and river (5 cards) subgames are supported")
        object.__setattr__(self, "board", board_str(cards))
        for field in ("pot", "stack"):
            try:
                v = float(getattr(self, field))
            except (TypeError, ValueError):
                raise PokerSpecError(f"{field} {getattr(self, field)!r} is not a number") from None
            object.__setattr__(self, field, v)
        if not math.isfinite(self.pot) or self.pot <= 0:
            raise PokerSpecError(f"pot {self.pot} must be a finite number > 0")
        if not math.isfinite(self.stack) or self.stack < 0:
            raise PokerSpecError(f"stack {self.stack} must be a finite number >= 0 (negative stacks are not allowed)")
        for field in ("rake_rate", "rake_cap"):
            v = getattr(self, field)
            try:
                v = float(v) if not isinstance(v, bool) else math.nan
            except (TypeError, ValueError):
                v = math.nan
            if math.isnan(v):
                raise PokerSpecError(f"{field} {getattr(self, field)!r} is not a number")
            object.__setattr__(self, field, v)
        if not 0.0 <= self.rake_rate <= 1.0:
            raise PokerSpecError(f"rake_rate {self.rake_rate!r} must be a fraction of the pot in [0, 1] (0: no rake)")
        if self.rake_cap < 0:
            raise PokerSpecError(f"rake_cap {self.rake_cap!r} must be chips >= 0 (inf: no cap)")
        if self.stack < self.pot / 2:
            raise PokerSpecError(f"stack {self.stack} is below the half-pot {self.pot / 2} each player already put in")
        if isinstance(self.bet_fractions, (str, int, float)):
            object.__setattr__(self, "bet_fractions", (self.bet_fractions,))
        bets = tuple(_norm_size(f, "bet_fractions") for f in self.bet_fractions)
        object.__setattr__(self, "bet_fractions", bets)
        if self.raise_fractions is not None:
            rf = self.raise_fractions
            if isinstance(rf, (str, int, float)):
                rf = (rf,)
            object.__setattr__(self, "raise_fractions", tuple(_norm_size(f, "raise_fractions") for f in rf))
        if self.raise_cap is not None:
            if isinstance(self.raise_cap, bool) or int(self.raise_cap) != self.raise_cap or self.raise_cap < 0:
                raise PokerSpecError(f"raise_cap {self.raise_cap!r} must be an integer >= 0 or None (unlimited)")
            object.__setattr__(self, "raise_cap", int(self.raise_cap))
        if self.random_hands is not None:
            if self.range0 is not None or self.range1 is not None:
                raise PokerSpecError("give either random_hands or explicit ranges (range0/range1), not both")
            object.__setattr__(self, "random_hands", int(self.random_hands))
        object.__setattr__(self, "range0", _norm_range(self.range0))
        object.__setattr__(self, "range1", _norm_range(self.range1))
        object.__setattr__(self, "seed", int(self.seed))
        if self.source is not None and isinstance(self.source, Mapping):
            object.__setattr__(self, "source", tuple(sorted(self.source.items())))
        self.ranges()  # validate now: unknown hands, no live hands

    @property
    def board_cards(self) -> np.ndarray:
        """`[4]` or `[5]` card ids of the board."""
        return parse_board(self.board)

    @property
    def street(self) -> str:
        """"turn" or "river"."""
        return "river" if len(self.board.split()) == 5 else "turn"

    @property
    def raked(self) -> bool:
        """Whether any terminal is raked (`rake_rate > 0` and `rake_cap > 0`)."""
        return self.rake_rate > 0 and self.rake_cap > 0

    def rake(self, pot_at_terminal):
        """Rake in chips, `min(rake_rate * pot_at_terminal, rake_cap)`, of pots (chips, any
        shape; NumPy float64). See the module docstring for which pot."""
        return np.minimum(self.rake_rate * np.asarray(pot_at_terminal, np.float64), self.rake_cap)

    @property
    def raise_sizes(self) -> tuple:
        return self.bet_fractions if self.raise_fractions is None else self.raise_fractions

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Both players' `[1326]` weights after card removal against the board."""
        b = self.board_cards
        if self.random_hands is not None:
            return random_ranges(self.random_hands, self.seed, b)
        out = []
        for p, r in enumerate((self.range0, self.range1)):
            out.append(resolve_range("any" if r is None else r, b, player=p))
        return out[0], out[1]
