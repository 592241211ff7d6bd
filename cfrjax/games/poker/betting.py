"""Bet sizes of a poker subgame per street and per player (`BetSizes`), written and sized
the way postflop-solver (b-inary), TexasSolver, PioSOLVER and GTO+ take them.

A size list is a comma-separated string, e.g. bets `"33%, 75%, a"`, raises `"2.5x, 60%"`:

* `N%`: N percent of the pot. A bet of `N%` is `N/100 * pot`; a raise of `N%` puts the
  raiser's street total at `the bet faced + N/100 * (pot after calling)`.
* `Nx` (raises only): the street total is N times the bet or raise faced (`2.5x` facing a
  bet of 10: raise to 25). N > 1.
* `e`, `Ne`, `eM%`, `NeM%`: the geometric size: the same pot fraction `r` on each of N
  streets gets the stack in, `r = ((2 * SPR + 1) ** (1 / N) - 1) / 2` with SPR the
  opponent's stack behind over the pot after calling; N defaults to the streets left
  (flop 3, turn 2, river 1), so `e` on the river is all-in; `M%` caps `r` at M/100. On a
  raise, N is reduced by the bets and raises already made on the street (at least 1).
* `a`: all-in.

`BetSizes.parse` reads the TOML-shaped table of a spec (`[betting]` in a spec file,
`PokerSubgameSpec(betting=...)` in Python):

```toml
[betting]                 # every street, both players
bet = "50%, 100%"
raise = "2.5x"
donk = "33%"              # optional: out of position leading into the previous street's
                          # aggressor (the street opened after player 0 called), turn and river
add_allin_threshold = 1.5     # add all-in when it is at most 1.5 pots (after calling)
force_allin_threshold = 0.15  # a size leaving an SPR <= 0.15 after the call becomes all-in
merging_threshold = 0.1       # merge near-equal sizes (PioSOLVER's rule, below)
[betting.ip]              # player 1 (in position) on every street
bet = "75%"
[betting.river]           # one street, both players (and its `donk`)
bet = "33%, a"
[betting.river.oop]       # one street, one player
raise = "3x"
```

A cell (street, player) takes each of `bet` / `raise` from the first of
`[betting.<street>.<player>]`, `[betting.<street>]`, `[betting.<player>]`, `[betting]` that
gives it; a size list not given anywhere is empty (no bets, or no raises; `""` says so
explicitly). `donk` not given: player 0 uses its `bet` sizes there too. Players are `oop`
(player 0, first to act) and `ip` (player 1).

**Amounts** follow postflop-solver's `ActionTree::push_actions` exactly (that is what the
peer comparison in `bench/peers/postflop_peer.py` checks): each computed size is rounded
to whole chips (half away from zero); a bet is at least 1 chip and a raise at least a
min-raise (raise by at least the last increment); sizes at or beyond the stack are the
all-in; all-in is added when it is at most `add_allin_threshold` pots (`pot` after
calling, measured from the bet faced); a size is replaced by all-in when the stack left
after it is called is at most `force_allin_threshold` times the pot then; equal amounts
are one action; with `merging_threshold` t > 0, going down from the largest kept size X
(as a pot fraction beyond the call), a size Y is dropped when `(1 + X) / (1 + Y) < 1 + t`.

The older `bet_fractions` / `raise_fractions` keys of `PokerSubgameSpec` are the same
pot fractions with exact amounts (nothing rounded, no minimum): `BetSizes.from_fractions`
(`chips=False`). Where every amount is a whole number of chips either way (e.g. 50% and
100% of a pot of 20) both build the same game.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Mapping, NamedTuple

from cfrjax.games.poker.cards import PokerSpecError

STREETS = ("flop", "turn", "river")
PLAYERS = ("oop", "ip")
#: Streets left to play from each street: the default N of a geometric size `e`.
STREETS_LEFT = {"flop": 3, "turn": 2, "river": 1}
SIZE_KEYS = ("bet", "raise")
THRESHOLDS = ("add_allin_threshold", "force_allin_threshold", "merging_threshold")
#: Keys of the `[betting]` table that `BetSizes.parse` reads (the spec loader routes them).
TABLE_KEYS = SIZE_KEYS + ("donk",) + THRESHOLDS + STREETS + PLAYERS
_USE = "use N% (pot fraction), Nx (multiple of the bet faced, raises only), e / Ne / NeM% (geometric), a (all-in)"
_NUM = re.compile(r"-?(\d+\.?\d*|\.\d+)")
_GEOM = re.compile(r"(?P<n>[^e]*)e(?P<cap>[^e]*)")


class Size(NamedTuple):
    """One size token: `kind` "%" (`value`: pot fraction), "x" (`value`: multiple of the
    bet faced), "e" (`streets`: streets to all-in, 0 = the streets left; `value`: the
    largest pot fraction, `inf` = none) or "a" (all-in)."""

    kind: str
    value: float = 0.0
    streets: int = 0

    def __str__(self) -> str:
        if self.kind == "%":
            return f"{100 * self.value:.10g}%"
        if self.kind == "x":
            return f"{self.value:.10g}x"
        if self.kind == "e":
            cap = "" if math.isinf(self.value) else f"{100 * self.value:.10g}%"
            return f"{self.streets or ''}e{cap}"
        return "a"


_ORDER = {"%": 0, "x": 1, "e": 2, "a": 3}


def _number(text: str, token: str, what: str) -> float:
    if not _NUM.fullmatch(text):
        raise PokerSpecError(f"{what}: unknown size {token!r}; {_USE}")
    x = float(text)
    if not x > 0:
        raise PokerSpecError(f"{what}: size {token!r} must be positive")
    return x


def parse_size(token: str, what: str, *, raises: bool) -> Size:
    """One token (`"75%"`, `"2.5x"`, `"2e150%"`, `"a"`) as a `Size`; `what` names the list
    in errors."""
    token = token.strip()
    t = token.lower()
    if not t:
        raise PokerSpecError(f"{what}: empty size; {_USE}")
    if t == "a":
        return Size("a")
    if t.endswith("x"):
        x = _number(t[:-1], token, what)
        if not raises:
            raise PokerSpecError(f"{what}: size {token!r} (a multiple of the bet faced) applies to raises only")
        if x <= 1:
            raise PokerSpecError(f"{what}: size {token!r}: the multiple must be > 1")
        return Size("x", x)
    m = _GEOM.fullmatch(t)
    if m:
        n = 0
        if m["n"]:
            x = _number(m["n"], token, what)
            if x != int(x) or x > 100:
                raise PokerSpecError(f"{what}: size {token!r}: the streets of a geometric size are a whole "
                                     f"number 1..100")
            n = int(x)
        cap = math.inf
        if m["cap"]:
            if not m["cap"].endswith("%"):
                raise PokerSpecError(f"{what}: unknown size {token!r}; {_USE}")
            cap = _number(m["cap"][:-1], token, what) / 100
        return Size("e", cap, n)
    if t.endswith("%"):
        return Size("%", _number(t[:-1], token, what) / 100)
    raise PokerSpecError(f"{what}: unknown size {token!r}; {_USE}")


def parse_sizes(text: str, what: str, *, raises: bool) -> tuple[Size, ...]:
    """A comma-separated size list as sorted, distinct `Size`s.

        parse_sizes("33%, 75%, a", "bet", raises=False)   # Size("%", 0.33), Size("%", 0.75), Size("a")

    Args:
      text: tokens `N%`, `Nx` (raises only), `e` / `Ne` / `eM%` / `NeM%`, `a` (module
        docstring); a trailing comma is allowed; `""` is the empty list (no bets).
      what: names the list in error messages (e.g. `"betting.river.ip: bet sizes"`).
      raises: whether the list is of raise sizes (`Nx` allowed).

    Returns:
      A tuple of `Size`, sorted by kind then value, duplicates removed.

    Raises:
      PokerSpecError: one line naming `what` and the bad token.
    """
    if not isinstance(text, str):
        raise PokerSpecError(f"{what}: {text!r} is not a size string such as \"33%, 75%, a\"")
    where = f'{what} "{" ".join(text.split())}"'
    parts = text.split(",")
    if parts and not parts[-1].strip():
        parts.pop()
    sizes = {parse_size(p, where, raises=raises) for p in parts}
    return tuple(sorted(sizes, key=lambda s: (_ORDER[s.kind], s.streets, s.value)))


def sizes_str(sizes) -> str:
    """The canonical string of a size list (`"50%, 100%, a"`)."""
    return ", ".join(str(s) for s in sizes)


def _round(x: float) -> float:
    """Round half away from zero (Rust's `f64::round`), for x >= 0."""
    r = math.floor(x)
    return r + 1.0 if x - r >= 0.5 else r


def _threshold(table: Mapping, key: str, where: str) -> float:
    v = table.get(key, 0.0)
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise PokerSpecError(f"{where}.{key}: {v!r} is not a number") from None
    if isinstance(v, bool) or not math.isfinite(x) or x < 0:
        raise PokerSpecError(f"{where}.{key}: {v!r} must be a finite number >= 0 (0 = off)")
    return x


def _check_keys(table, allowed, where):
    if not isinstance(table, Mapping):
        raise PokerSpecError(f"{where}: expected a table, got {table!r}")
    bad = sorted(set(table) - set(allowed))
    if bad:
        raise PokerSpecError(f"{where}: unknown key(s) {bad}; allowed: {sorted(allowed)}")


@dataclasses.dataclass(frozen=True)
class BetSizes:
    """The betting rules of a subgame (module docstring): frozen and hashable.

    Attributes:
      bets, raises: 6 size tuples each, cell `STREETS.index(street) * 2 + player`.
      donks: 3 entries, one per street: player 0's sizes when it opens a street after
        calling the previous street's last bet (`None`: its `bets`).
      add_allin_threshold, force_allin_threshold, merging_threshold: 0 = off.
      chips: amounts in whole chips with postflop-solver's minimums (string sizes);
        `False`: exact amounts (the `bet_fractions` keys).
      origins: where each cell's sizes came from, for error messages only (not compared):
        `(bets [6], raises [6], donks [3])` table names such as `"betting.river.ip"`
        (`parse`) or key names (`from_fractions`); `None`: unnamed.
    """

    bets: tuple
    raises: tuple
    donks: tuple = (None, None, None)
    add_allin_threshold: float = 0.0
    force_allin_threshold: float = 0.0
    merging_threshold: float = 0.0
    chips: bool = True
    origins: tuple | None = dataclasses.field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if len(self.bets) != 6 or len(self.raises) != 6 or len(self.donks) != 3:
            raise PokerSpecError("BetSizes: bets and raises need 6 cells (street x player), donks 3 (streets); "
                                 "build it with BetSizes.parse")

    @classmethod
    def parse(cls, table: Mapping, where: str = "betting") -> "BetSizes":
        """The rules from a TOML-shaped table, as a spec file's `[betting]` (module docstring).

            BetSizes.parse({"bet": "50%, 100%", "raise": "2.5x", "river": {"ip": {"bet": "33%, a"}}})

        Args:
          table: keys `bet`, `raise`, `donk`, the three thresholds, and sub-tables per
            street (`flop`, `turn`, `river`) and player (`oop`, `ip`).
          where: the table's name in error messages.

        Returns:
          The `BetSizes`; `PokerSubgameSpec(betting=table)` calls this and then refuses
          sizes its streets can never use (`check_usable`).

        Raises:
          PokerSpecError: one line naming the key and the bad value.
        """
        _check_keys(table, TABLE_KEYS, where)
        sub = {}
        for k in STREETS + PLAYERS:
            allowed = SIZE_KEYS if k in PLAYERS else SIZE_KEYS + PLAYERS + (("donk",) if k != "flop" else ())
            _check_keys(table.get(k, {}), allowed, f"{where}.{k}")
            sub[k] = table.get(k, {})
        for s in STREETS:
            for p in PLAYERS:
                _check_keys(sub[s].get(p, {}), SIZE_KEYS, f"{where}.{s}.{p}")
        if "donk" in sub["flop"]:
            raise PokerSpecError(f"{where}.flop: donk sizes apply to the turn and the river only")
        cells = {"bet": [], "raise": []}
        origins = {"bet": [], "raise": [], "donk": [None]}
        for s in STREETS:
            for p in PLAYERS:
                for key in SIZE_KEYS:
                    for t, name in ((sub[s].get(p, {}), f"{where}.{s}.{p}"), (sub[s], f"{where}.{s}"),
                                    (sub[p], f"{where}.{p}"), (table, where)):
                        if key in t:
                            cells[key].append(parse_sizes(t[key], f"{name}: {key} sizes", raises=key == "raise"))
                            origins[key].append(name)
                            break
                    else:
                        cells[key].append(())
                        origins[key].append(None)
        donks = [None]
        for s in STREETS[1:]:
            for t, name in ((sub[s], f"{where}.{s}"), (table, where)):
                if "donk" in t:
                    donks.append(parse_sizes(t["donk"], f"{name}: donk sizes", raises=False))
                    origins["donk"].append(name)
                    break
            else:
                donks.append(None)
                origins["donk"].append(None)
        return cls(bets=tuple(cells["bet"]), raises=tuple(cells["raise"]), donks=tuple(donks),
                   **{k: _threshold(table, k, where) for k in THRESHOLDS},
                   origins=tuple(tuple(origins[k]) for k in ("bet", "raise", "donk")))

    @classmethod
    def from_fractions(cls, bets, raises) -> "BetSizes":
        """The rules of `bet_fractions` / `raise_fractions` (pot fractions or "allin",
        already validated): every street and player, exact amounts."""
        def conv(fs):
            return tuple(Size("a") if isinstance(f, str) else Size("%", float(f)) for f in fs)
        return cls(bets=(conv(bets),) * 6, raises=(conv(raises),) * 6, chips=False,
                   origins=(("bet_fractions",) * 6, ("raise_fractions",) * 6, (None,) * 3))

    def check_usable(self, streets=STREETS, raise_cap: int | None = None) -> None:
        """Refuse sizes that no node of the betting tree can ever offer, one line naming
        the table (or key) and the street and player: raise sizes where the player never
        faces a bet (`bet = ""` with `raise = "3x"` built a check-down tree), raise sizes
        with `raise_cap = 0`, and donk sizes where player 0 never opens a street after
        calling (the subgame's first street, or a previous street where player 1 never
        bets). A table's sizes are refused only if they are unusable in every cell they
        fill of the `streets` played (a `[betting]` raise usable on the turn only is fine).
        An empty list is never refused; `add_allin_threshold > 0` counts as a size (it can
        add an all-in to an empty list).

        Raises:
          PokerSpecError: the first table whose sizes can never be used.
        """
        first = STREETS.index(streets[0])
        some = lambda sizes: bool(sizes) or self.add_allin_threshold > 0  # noqa: E731
        can_raise = lambda i, p: raise_cap != 0 and some(self.raises[2 * i + p])  # noqa: E731
        reraise = raise_cap is None or raise_cap >= 2
        opens, donk_spot, faces = {}, {}, {}
        for i in range(first, len(STREETS)):
            donk_spot[i] = i > first and (opens[i - 1, 1] or (opens[i - 1, 0] and can_raise(i - 1, 1)))
            d = self.donks[i]
            opens[i, 0] = some(self.bets[2 * i]) or (donk_spot[i] and d is not None and some(d))
            opens[i, 1] = some(self.bets[2 * i + 1])
            for p in (0, 1):   # faces a bet: the opponent opens, or p opens and is raised (then p re-raises)
                faces[p, i] = opens[i, 1 - p] or (reraise and opens[i, p] and can_raise(i, 1 - p))
        names = self.origins or ((None,) * 6, (None,) * 6, (None,) * 3)
        bad: dict = {}   # origin -> [sizes, usable anywhere?, cells where not]
        for i in range(first, len(STREETS)):
            for p in (0, 1):
                sizes = self.raises[2 * i + p]
                if sizes:
                    entry = bad.setdefault(("raise", names[1][2 * i + p] or "raise"), [sizes, False, []])
                    ok = raise_cap != 0 and faces[p, i]
                    entry[1] |= ok
                    if not ok:
                        entry[2].append(f"{PLAYERS[p]} on the {STREETS[i]}")
            if self.donks[i]:
                entry = bad.setdefault(("donk", names[2][i] or "donk"), [self.donks[i], False, []])
                entry[1] |= donk_spot[i]
                if not donk_spot[i]:
                    entry[2].append(STREETS[i])
        for (key, name), (sizes, ok, cells) in bad.items():
            if ok:
                continue
            if key == "donk":
                why = "; ".join(f"oop never opens the {s} after calling a bet (" + (
                    f"the subgame starts on the {s})" if STREETS.index(s) == first else
                    f"ip never bets on the {STREETS[STREETS.index(s) - 1]})") for s in cells)
            elif raise_cap == 0:
                why = "raise_cap = 0 allows no raises"
            else:
                why = f"no bet is ever made for them to raise ({', '.join(cells)}: the opponent has no bet sizes there)"
            raise PokerSpecError(f"{name}: {key} sizes \"{sizes_str(sizes)}\" can never be used: {why}")

    def options(self, street: str, player: int, *, facing: bool, donk: bool = False) -> tuple:
        """The sizes offered at a node: raises when `facing` a bet, else bets (player 0's
        donk sizes where `donk` and the street has them)."""
        cell = STREETS.index(street) * 2 + player
        if facing:
            return self.raises[cell]
        d = self.donks[STREETS.index(street)]
        return d if donk and player == 0 and d is not None else self.bets[cell]

    def targets(self, sizes, *, street: str, pot: float, t: tuple, player: int, start: float,
                behind: float, nbets: int) -> list[float]:
        """The amounts offered at one node, ascending, as the actor's total commitment in the
        subgame (chips, the betting tree's `t`).

        Args:
          sizes: `options(...)` of the node.
          street: its street (the default streets of `e`).
          pot: the subgame's starting pot; t: both players' commitments so far (the
            opponent's is larger when facing a bet); player: the actor; start: each
            player's commitment when the street began; behind: the most either can commit
            (stack - pot / 2).
          nbets: bets and raises already made on the street (0 at a bet).
        """
        chips = self.chips
        rnd = _round if chips else (lambda x: x)
        me, opp = t[player], t[1 - player]
        P = pot + t[0] + t[1] + (opp - me)  # the pot after calling (the pot itself at a bet)
        prev = opp - start                  # the street amount faced (0 at a bet)
        top = behind                        # all-in: the opponent's stack is the same
        spr = (behind - opp) / P

        def geometric(s):
            n = s.streets or STREETS_LEFT[street]
            if nbets:
                n = max(n - nbets + 1, 1)
            r = ((2.0 * spr + 1.0) ** (1.0 / n) - 1.0) / 2.0
            return opp + rnd(P * min(r, s.value))

        out = []
        for s in sizes:
            if s.kind == "%":
                out.append(min(top, opp + rnd(s.value * P)))
            elif s.kind == "x":
                out.append(min(top, start + rnd(prev * s.value)))
            elif s.kind == "e":
                out.append(min(top, geometric(s)))
            else:
                out.append(top)
        if self.add_allin_threshold and top <= opp + rnd(P * self.add_allin_threshold):
            out.append(top)
        if chips:   # at least 1 chip, a raise at least the last increment
            low = start + min(max(prev + (opp - me), 1.0), top - start)
            out = [max(x, low) for x in out]
        if self.force_allin_threshold:
            out = [top if top <= x + rnd((P + 2 * (x - opp)) * self.force_allin_threshold) else x for x in out]
        kept = []
        for x in out:
            if x > opp + 1e-9 and all(abs(x - y) > 1e-9 for y in kept):
                kept.append(x)
        kept.sort()
        if self.merging_threshold:
            t, cur, merged = self.merging_threshold, math.inf, []
            for x in reversed(kept):
                if (x - opp) / P < ((cur - opp) / P - t) / (1.0 + t) * (1.0 - 1e-12):
                    merged.append(x)
                    cur = x
            kept = merged[::-1]
        return kept

    def to_json(self, streets=STREETS) -> dict:
        """The rules as plain JSON (canonical size strings) for `source["poker"]`, for the
        given streets."""
        out: dict[str, Any] = {}
        for s in streets:
            i = STREETS.index(s)
            row = {p: {"bet": sizes_str(self.bets[2 * i + k]), "raise": sizes_str(self.raises[2 * i + k])}
                   for k, p in enumerate(PLAYERS)}
            if self.donks[i] is not None:
                row["donk"] = sizes_str(self.donks[i])
            out[s] = row
        out.update({k: getattr(self, k) for k in THRESHOLDS})
        out["chips"] = self.chips
        return out
