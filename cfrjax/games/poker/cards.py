"""Cards, boards and the 1,326 hole-card combos.

A card is an int `4 * rank + suit` with ranks `2..A` -> `0..12` and suits `s, h, d, c`
-> `0..3`, so `2s = 0, 2h = 1, 2d = 2, 2c = 3, 3s = 4, ..., Ac = 51`. Cards print as
"As", "Td", "2c".

Hole-card combos are the 1,326 pairs `(lo, hi)` of card ids with `lo < hi`, in
lexicographic order of `(lo, hi)`. This is the order of the reach vectors in the
Libratus endgame files (their README), so a reach vector indexes `COMBOS` directly.

A combo prints as poker tools print it (postflop-solver, PioSOLVER): the higher rank
first, and for a pair the suits in the order s > h > d > c (postflop-solver's card order,
`"AsAh"` its last combo): `"AsKs"`, `"QhJh"`, `"Td9c"`, `"AsAh"`, `"AdAc"`. In `COMBOS`
order the names run `2s2h, 2s2d, 2s2c, 3s2s, 3h2s, ..., Ac2s, 2h2d, ..., AdAc`. Every
parser (`parse_combo`, range tokens, information-set keys (`cfrjax.game.hand_swapped`),
policy and strategy files, `canonical_key`) takes the two cards in either order.
"""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np

from cfrjax.deck import NUM_CARDS
from cfrjax.spec import SpecError

RANKS = "23456789TJQKA"
SUITS = "shdc"
NUM_COMBOS = 1326


class PokerSpecError(SpecError):
    """A poker subgame description that cannot be built (bad card, range, size...)."""


#: `[52]` card names, `CARD_NAMES[4 * rank + suit]`.
CARD_NAMES: tuple[str, ...] = tuple(r + s for r in RANKS for s in SUITS)
_CARD_LOOKUP = {name: i for i, name in enumerate(CARD_NAMES)}


def _combo_tables():
    lo, hi = np.triu_indices(NUM_CARDS, k=1)          # lexicographic (lo, hi), lo < hi
    combos = np.stack([lo, hi], axis=1).astype(np.int64)
    index = np.full((NUM_CARDS, NUM_CARDS), -1, dtype=np.int64)
    index[lo, hi] = np.arange(lo.size)
    index[hi, lo] = np.arange(lo.size)
    return combos, index


#: `[1326, 2]` int, the two cards (low id first) of each combo, Libratus order.
COMBOS, COMBO_INDEX = _combo_tables()
COMBOS.setflags(write=False)
#: `[52, 52]` int, combo index of a card pair (symmetric), `-1` on the diagonal.
COMBO_INDEX.setflags(write=False)


def _hand_name(a: int, b: int) -> str:
    """The printed name of cards `a`, `b` (module docstring): the higher rank first; at
    equal rank the lower suit index (s, h, d, c), i.e. the lower card id, first."""
    hi_first = (a >> 2) > (b >> 2) or ((a >> 2) == (b >> 2) and a < b)
    return CARD_NAMES[a] + CARD_NAMES[b] if hi_first else CARD_NAMES[b] + CARD_NAMES[a]


#: `[1326]` combo names, high card first, e.g. `COMBO_NAMES[0] == "2s2h"`,
#: `COMBO_NAMES[3] == "3s2s"`, `COMBO_NAMES[-1] == "AdAc"`.
COMBO_NAMES: tuple[str, ...] = tuple(_hand_name(int(a), int(b)) for a, b in COMBOS)
_NAME_INDEX = {name: i for i, name in enumerate(COMBO_NAMES)}


def card_id(name: str) -> int:
    """Parse one card ("As", "td", "2C" are accepted: rank any case, suit any case)."""
    if not isinstance(name, str) or len(name.strip()) != 2:
        raise PokerSpecError(f"unknown card {name!r}: expected a rank in {RANKS} and a suit in {SUITS}, e.g. 'As'")
    s = name.strip()
    key = s[0].upper() + s[1].lower()
    if key not in _CARD_LOOKUP:
        raise PokerSpecError(f"unknown card {name!r}: expected a rank in {RANKS} and a suit in {SUITS}, e.g. 'As'")
    return _CARD_LOOKUP[key]


def card_str(card: int) -> str:
    """Name of card id `card` (0..51)."""
    c = int(card)
    if not 0 <= c < NUM_CARDS:
        raise PokerSpecError(f"card id {card} outside 0..51")
    return CARD_NAMES[c]


def parse_cards(cards: str | Iterable[str | int], *, what: str = "cards") -> np.ndarray:
    """Parse cards without duplicates into an int array.

    Args:
      cards: "KsJsTh7d2c", "Ks Js Th 7d 2c", "Ks,Js,Th", or an iterable of names/ids.
      what: how to call them in error messages ("board", "hand", ...).

    Raises:
      PokerSpecError: an unknown card string or a card that appears twice.
    """
    if isinstance(cards, str):
        text = re.sub(r"[\s,;\[\]]+", "", cards)
        if len(text) % 2:
            raise PokerSpecError(f"{what} {cards!r}: cannot split into two-character cards such as 'As'")
        names: list = [text[i:i + 2] for i in range(0, len(text), 2)]
    else:
        names = list(cards)
    ids = []
    for c in names:
        try:
            if isinstance(c, (int, np.integer)):
                card_str(c)  # range check
                ids.append(int(c))
            else:
                ids.append(card_id(c))
        except PokerSpecError as e:
            raise PokerSpecError(f"{what} {cards!r}: {e}") from None
    seen = set()
    for i in ids:
        if i in seen:
            raise PokerSpecError(f"{what} {cards!r}: card {CARD_NAMES[i]} appears twice")
        seen.add(i)
    return np.array(ids, dtype=np.int64)


def parse_board(board: str | Iterable[str | int]) -> np.ndarray:
    """Parse a 3-, 4- or 5-card board (see `parse_cards`); raises `PokerSpecError`."""
    ids = parse_cards(board, what="board")
    if ids.size not in (3, 4, 5):
        raise PokerSpecError(f"board {board!r} has {ids.size} cards; expected 3 (flop), 4 (turn) or 5 (river)")
    return ids


def board_str(board: Iterable[int]) -> str:
    """"Ks Js Th 7d 2c" for a board of card ids."""
    return " ".join(card_str(c) for c in board)


def combo_index(c1: int | str, c2: int | str) -> int:
    """Combo index of two distinct cards (any order, ids or names)."""
    a = card_id(c1) if isinstance(c1, str) else int(c1)
    b = card_id(c2) if isinstance(c2, str) else int(c2)
    if a == b or not (0 <= a < NUM_CARDS and 0 <= b < NUM_CARDS):
        raise PokerSpecError(f"no hole-card combo of cards {c1!r}, {c2!r}")
    return int(COMBO_INDEX[a, b])


def combo_str(index: int) -> str:
    """Name of combo `index`, high card first ("2s2h", "AsKh"; module docstring)."""
    return COMBO_NAMES[int(index)]


def canonical_hand(text: str, *, strict: bool = True) -> str:
    """The printed name of a four-character hand given in either card order ("KsAs" ->
    "AsKs", "jdKD" -> "KdJd": any case). Not two cards: `PokerSpecError` if `strict`,
    else `text` unchanged (names read from files, which may hold other games' names)."""
    if text in _NAME_INDEX:
        return text
    try:
        return COMBO_NAMES[parse_combo(text)]
    except PokerSpecError:
        if strict:
            raise
        return text


def canonical_key(key: str) -> str:
    """A poker information-set key `"P{player}|{hand}|{history}"` with its hand as printed
    (`canonical_hand`), so keys written low card first (cfrjax before the printed order
    changed, e.g. `"P1|KsAs|k.b10"`) name the same set as `"P1|AsKs|k.b10"`. Any other
    string (another game's key, a malformed hand) comes back unchanged."""
    if len(key) < 8 or key[0] != "P" or key[2] != "|" or key[7] != "|" or key[3:7] in _NAME_INDEX:
        return key
    return key[:3] + canonical_hand(key[3:7], strict=False) + key[7:]


def parse_combo(text: str) -> int:
    """Combo index of a four-character hand such as "AsKs" (either card order)."""
    ids = parse_cards(text, what="hand")
    if ids.size != 2:
        raise PokerSpecError(f"hand {text!r}: expected two cards such as 'AsKs'")
    return int(COMBO_INDEX[ids[0], ids[1]])


def combos_blocked_by(cards: Iterable[int]) -> np.ndarray:
    """`[1326]` bool: combos sharing a card with `cards` (card removal)."""
    dead = np.zeros(NUM_CARDS, dtype=bool)
    dead[np.asarray(list(cards), dtype=np.int64)] = True
    return dead[COMBOS[:, 0]] | dead[COMBOS[:, 1]]


def combos_conflict(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise: do combo(s) `a` and `b` (broadcast int arrays) share a card?"""
    ca, cb = COMBOS[np.asarray(a)], COMBOS[np.asarray(b)]
    return ((ca[..., 0] == cb[..., 0]) | (ca[..., 0] == cb[..., 1])
            | (ca[..., 1] == cb[..., 0]) | (ca[..., 1] == cb[..., 1]))
