"""The configuration of a HUNL river/turn subgame (`PokerSubgameSpec`), independent of
how it is compiled: `subgame.build_spec` (tabular form, one tree copy per deal) and
`public.build_public` (public form, vectors over hands) both start from it, and
`libratus` / `toml` produce it. It imports neither builder (no import cycles).

Bet sizes come one of two ways: `bet_fractions` / `raise_fractions` / `raise_cap` (pot
fractions shared by both players and every street, exact amounts), or `betting`, the
solvers' size strings per street and per player (`"33%, 75%, a"`, `"2.5x"`, `e`, donk
sizes, all-in thresholds, merging; `cfrjax.games.poker.betting`). Either way the spec's
`bet_sizes` is the one `BetSizes` the betting tree is built from.

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

from cfrjax.games.poker.betting import STREETS, BetSizes
from cfrjax.games.poker.cards import PokerSpecError, board_str, parse_board
from cfrjax.games.poker.ranges import random_ranges, resolve_range

ALLIN = "allin"
DEFAULT_BET_FRACTIONS = (0.5, 1.0)
#: `raise_cap`'s default: 0 (no raises) with `bet_fractions`, unlimited with `betting`.
AUTO = "auto"
#: `PokerSubgameSpec.hands`: the public form's hand list, the ranges' hands or every live combo,
#: or one list per player (each range's own hands, `cfrjax.public.two_lists.player_game`).
HAND_LISTS = ("range", "all", "player")


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


@dataclasses.dataclass(frozen=True)
class PokerSubgameSpec:
    """Configuration of a HUNL river/turn subgame (see the module docstring).

    Attributes:
      board: 3 (flop), 4 (turn) or 5 (river) cards, e.g. "Ks Js Th 7d 2c"; stored
        normalized. Flop spots compile to the public form only.
      pot: chips in the pot at the start of the subgame (both players put in half).
      behind: chips each player has behind at the start of the subgame, the most either
        can still put in (postflop-solver's `effective_stack`, what poker tools call the
        stack). Give `behind` or `stack`, not both; neither: `stack` = 100.
      stack: the older way to give it: each player's whole stack at the start of the
        hand, the half-pot already in included, so `behind = stack - pot / 2` (a spot
        with pot 55 and 975 behind has `stack = 1002.5`). After construction `stack` is
        `behind + pot / 2` either way (specs are compared and hashed by it).
      effective_stack: (set at construction, not an argument) the chips behind the tree
        is built with: `behind` exactly as given, or `stack - pot / 2`.
        (`dataclasses.replace` keeps `stack`: the chips behind follow a changed pot.)
      bet_fractions: sizes of a first bet on a street, pot fractions or "allin"
        (default (0.5, 1.0) unless `betting` is given).
      raise_fractions: sizes of raises; `None` = same as `bet_fractions`.
      raise_cap: raises allowed per street; 0 = none, `None` = unlimited; default
        ("auto"): 0 with `bet_fractions`, unlimited with `betting` (the solvers' way).
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
      betting: bet sizes as the solvers write them, per street and per player: the
        `[betting]` table of a spec file as a mapping (e.g. `{"bet": "50%, 100%",
        "raise": "2.5x", "river": {"ip": {"bet": "33%, a"}}}`, keys in
        `cfrjax.games.poker.betting`) or a `BetSizes`; stored as a `BetSizes`. Excludes
        `bet_fractions` / `raise_fractions`.
      hands: the public form's hand list (`cfrjax.games.poker.public_tree.public_hands`; the
        tabular form deals the ranges' hands either way): `"range"` (the default) the
        combos of positive weight in either range (the board blocks none of them), so
        every vector and the memory plan scale with the ranges; `"all"` every combo the
        board does not block (1,081 on a river, 1,128 on a turn, 1,176 on a flop), for
        re-targeting arbitrary ranges (`set_root_ranges`) without rebuilding.
      pad_hands: pad the public form's hand list (and the most hands holding one card)
        to its size class (`cfrjax.games.poker.public_tree.hand_class`, at most 1.25x) with
        hands of zero weight, so that spots of one betting tree and street whose ranges
        fall in one class have the same shapes and share their compiled programs
        (`build_public`; no result changes). Off by default: the `[S, H]` arrays then
        have one column per real hand. Ignored with `hands = "all"` (its count is
        already the same on every board of a street).
      isomorphism: the public form solves one representative per class of suit-isomorphic
        turn and river cards (`cfrjax.games.poker.isomorphism`; on a board and ranges that
        a suit permutation keeps, e.g. d<->c on KdKc4h); off by default. Ranges whose
        weights differ by suit build the game unmerged.
    """

    board: Any
    pot: float = 20.0
    stack: float | None = None
    bet_fractions: tuple | None = None
    raise_fractions: tuple | None = None
    raise_cap: int | None | str = AUTO
    range0: Any = None
    range1: Any = None
    random_hands: int | None = None
    seed: int = 0
    name: str = "poker_subgame"
    rake_rate: float = 0.0
    rake_cap: float = math.inf
    source: Any = None
    betting: Any = None
    hands: str = "range"
    pad_hands: bool = False
    isomorphism: bool = False
    behind: dataclasses.InitVar[float | None] = None
    effective_stack: float = dataclasses.field(init=False, compare=False)

    def __post_init__(self, behind):
        cards = parse_board(self.board)
        if cards.size not in (3, 4, 5):
            raise PokerSpecError(f"board {self.board!r} has {cards.size} card(s); a subgame starts on the flop "
                                 f"(3 cards), the turn (4) or the river (5)")
        object.__setattr__(self, "board", board_str(cards))
        if behind is not None and self.stack is not None:
            raise PokerSpecError(f"give behind = {behind!r} (chips behind, postflop-solver's effective_stack) or "
                                 f"stack = {self.stack!r} (the whole stack, the half-pot included), not both")
        given = {"pot": self.pot, **({"behind": behind} if behind is not None else
                                     {"stack": 100.0 if self.stack is None else self.stack})}
        num = {}
        for field, v in given.items():
            try:
                num[field] = float(v)
            except (TypeError, ValueError):
                raise PokerSpecError(f"{field} {v!r} is not a number") from None
        object.__setattr__(self, "pot", num["pot"])
        if not math.isfinite(self.pot) or self.pot <= 0:
            raise PokerSpecError(f"pot {self.pot} must be a finite number > 0")
        if "behind" in num:
            if not math.isfinite(num["behind"]) or num["behind"] < 0:
                raise PokerSpecError(f"behind {num['behind']} must be a finite number of chips >= 0")
            object.__setattr__(self, "stack", num["behind"] + self.pot / 2)
            object.__setattr__(self, "effective_stack", num["behind"])
        else:
            object.__setattr__(self, "stack", num["stack"])
            if not math.isfinite(self.stack) or self.stack < 0:
                raise PokerSpecError(f"stack {self.stack} must be a finite number >= 0 (negative stacks are not "
                                     "allowed)")
            object.__setattr__(self, "effective_stack", self.stack - self.pot / 2)
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
        if self.betting is not None:
            if self.bet_fractions is not None or self.raise_fractions is not None:
                raise PokerSpecError("give bet sizes either as betting strings (bet, raise, ...) or as "
                                     "bet_fractions/raise_fractions, not both")
            if not isinstance(self.betting, BetSizes):
                object.__setattr__(self, "betting", BetSizes.parse(self.betting))
        else:
            bf = DEFAULT_BET_FRACTIONS if self.bet_fractions is None else self.bet_fractions
            if isinstance(bf, (str, int, float)):
                bf = (bf,)
            object.__setattr__(self, "bet_fractions", tuple(_norm_size(f, "bet_fractions") for f in bf))
            if self.raise_fractions is not None:
                rf = self.raise_fractions
                if isinstance(rf, (str, int, float)):
                    rf = (rf,)
                object.__setattr__(self, "raise_fractions", tuple(_norm_size(f, "raise_fractions") for f in rf))
        if isinstance(self.raise_cap, str) and self.raise_cap == AUTO:
            object.__setattr__(self, "raise_cap", None if self.betting is not None else 0)
        if self.raise_cap is not None:
            if isinstance(self.raise_cap, (bool, str)) or int(self.raise_cap) != self.raise_cap or self.raise_cap < 0:
                raise PokerSpecError(f"raise_cap {self.raise_cap!r} must be an integer >= 0 or None (unlimited)")
            object.__setattr__(self, "raise_cap", int(self.raise_cap))
        if self.betting is not None or self.raise_fractions is not None:
            self.bet_sizes.check_usable(self.streets, self.raise_cap)   # sizes the tree can never offer
        if not isinstance(self.hands, str) or self.hands not in HAND_LISTS:
            raise PokerSpecError(f"hands {self.hands!r} is not a hand list; allowed: "
                                 f"{', '.join(map(repr, HAND_LISTS))} (the ranges' hands, every live combo, or each "
                                 "player's own range's hands)")
        if not isinstance(self.pad_hands, (bool, np.bool_)):
            raise PokerSpecError(f"pad_hands {self.pad_hands!r} must be true or false")
        object.__setattr__(self, "pad_hands", bool(self.pad_hands))
        if not isinstance(self.isomorphism, (bool, np.bool_)):
            raise PokerSpecError(f"isomorphism {self.isomorphism!r} must be true or false")
        object.__setattr__(self, "isomorphism", bool(self.isomorphism))
        if self.pad_hands and self.hands == "player":
            raise PokerSpecError("pad_hands pads one hand list for both players; with hands = 'player' each "
                                 "player's list is already padded to the longer one: drop one of the two")
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
        """`[3]`, `[4]` or `[5]` card ids of the board."""
        return parse_board(self.board)

    @property
    def street(self) -> str:
        """"flop", "turn" or "river"."""
        return {3: "flop", 4: "turn", 5: "river"}[len(self.board.split())]

    @property
    def raked(self) -> bool:
        """Whether any terminal is raked (`rake_rate > 0` and `rake_cap > 0`)."""
        return self.rake_rate > 0 and self.rake_cap > 0

    def rake(self, pot_at_terminal):
        """Rake in chips, `min(rake_rate * pot_at_terminal, rake_cap)`, of pots (chips, any
        shape; NumPy float64). See the module docstring for which pot."""
        return np.minimum(self.rake_rate * np.asarray(pot_at_terminal, np.float64), self.rake_cap)

    @property
    def raise_sizes(self) -> tuple | None:
        """The raise fractions (`bet_fractions` unless `raise_fractions` is given); `None`
        when the sizes are `betting` strings."""
        return self.bet_fractions if self.raise_fractions is None else self.raise_fractions

    @property
    def bet_sizes(self) -> BetSizes:
        """The betting rules the tree is built from: `betting`, or the fractions as exact
        pot-fraction sizes on every street (`BetSizes.from_fractions`)."""
        if self.betting is not None:
            return self.betting
        return BetSizes.from_fractions(self.bet_fractions, self.raise_sizes)

    @property
    def streets(self) -> tuple:
        """The streets played in the subgame, e.g. ("turn", "river")."""
        return STREETS[STREETS.index(self.street):]

    def betting_meta(self) -> dict:
        """The bet-size settings for a built game's `source["poker"]`: `bet_fractions`,
        `raise_fractions`, `raise_cap` as before, and `betting` (per street and player,
        `BetSizes.to_json`) when the sizes are strings."""
        out = {"bet_fractions": None if self.bet_fractions is None else list(self.bet_fractions),
               "raise_fractions": None if self.raise_sizes is None else list(self.raise_sizes),
               "raise_cap": self.raise_cap}
        if self.betting is not None:
            out["betting"] = self.betting.to_json(self.streets)
        return out

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Both players' `[1326]` weights after card removal against the board."""
        b = self.board_cards
        if self.random_hands is not None:
            return random_ranges(self.random_hands, self.seed, b)
        out = []
        for p, r in enumerate((self.range0, self.range1)):
            out.append(resolve_range("any" if r is None else r, b, player=p))
        return out[0], out[1]
