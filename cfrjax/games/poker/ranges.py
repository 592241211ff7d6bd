"""Ranges: non-negative weights over the 1,326 hole-card combos (`cards.COMBOS` order).

Three ways to describe a range, each returning a float64 `[1326]` weight vector with
combos that share a card with the board set to zero (card removal):

* `parse_range("AA,KK,AKs,T9s+,22+,A5s-A2s,KQo,AsKh:0.5", board)`: comma-separated
  tokens, each optionally followed by `:weight` (default 1; a later token overrides an
  earlier one on the combos they share). Tokens:
    - `AA` pair (6 combos), `AKs` suited (4), `AKo` offsuit (12), `AK` both (16);
    - `AsKh` one specific combo; `any` or `*` every combo;
    - `22+` pairs 22 and up; `A2s+` (likewise `o` / no suffix) the kicker from 2 up
      to one below the top card (A2s..AKs); for connectors, where the kicker is already
      one below the top card, `+` raises both ranks: `T9s+` = T9s, JTs, QJs, KQs, AKs;
    - dash ranges with the same top card (`A5s-A2s`, `KQo-K9o`), pairs (`TT-77`), or
      both ranks shifted in parallel (`T9s-65s`).
* `range_from_hands({"AsKs": 1.0, "QQ": 0.5}, board)`: explicit hands (any token above)
  with weights; a list of tokens or `(token, weight)` pairs is accepted too.
* `random_ranges(k, seed, board)`: `k` random live combos per player, weight 1.

Raises `PokerSpecError` for unparsable tokens, negative or non-finite weights, and a
range with no live hand on the board.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np

from cfrjax.games.poker.cards import (
    COMBOS, NUM_COMBOS, RANKS, SUITS, PokerSpecError, board_str, combos_blocked_by, parse_board, parse_combo)

_RANK_OF = {r: i for i, r in enumerate(RANKS)}
_combo_rank = COMBOS >> 2
_combo_suit = COMBOS & 3
_HI = np.maximum(_combo_rank[:, 0], _combo_rank[:, 1])
_LO = np.minimum(_combo_rank[:, 0], _combo_rank[:, 1])
_SUITED = _combo_suit[:, 0] == _combo_suit[:, 1]


def _rank(ch: str, token: str) -> int:
    r = _RANK_OF.get(ch.upper())
    if r is None:
        raise PokerSpecError(f"range token {token!r}: unknown rank {ch!r} (ranks are {RANKS})")
    return r


def _class_mask(hi: int, lo: int, suit: str) -> np.ndarray:
    """Combos of hand class (hi, lo, suitedness 's' / 'o' / '')."""
    m = (_HI == hi) & (_LO == lo)
    if hi != lo:
        if suit == "s":
            m &= _SUITED
        elif suit == "o":
            m &= ~_SUITED
    return m


def _parse_class(text: str, token: str) -> tuple[int, int, str]:
    """"AKs" -> (12, 11, 's'); "TT" -> (8, 8, '')."""
    if len(text) not in (2, 3):
        raise PokerSpecError(f"range token {token!r}: cannot read hand class {text!r} (e.g. 'AA', 'AKs', 'KQo')")
    a, b = _rank(text[0], token), _rank(text[1], token)
    suit = text[2].lower() if len(text) == 3 else ""
    if suit not in ("", "s", "o"):
        raise PokerSpecError(f"range token {token!r}: suffix {text[2]!r} must be 's' (suited) or 'o' (offsuit)")
    if a == b and suit:
        raise PokerSpecError(f"range token {token!r}: a pair cannot be suited or offsuit")
    return max(a, b), min(a, b), suit


def token_mask(token: str) -> np.ndarray:
    """`[1326]` bool: the combos one range token (without weight) stands for."""
    tok = token.strip()
    if not tok:
        raise PokerSpecError("empty range token")
    if tok.lower() in ("any", "*", "all"):
        return np.ones(NUM_COMBOS, dtype=bool)
    if len(tok) == 4 and tok[1].lower() in SUITS and tok[3].lower() in SUITS:
        m = np.zeros(NUM_COMBOS, dtype=bool)
        m[parse_combo(tok)] = True
        return m
    m = np.zeros(NUM_COMBOS, dtype=bool)
    if "-" in tok:
        left, right = (s.strip() for s in tok.split("-", 1))
        h1, l1, s1 = _parse_class(left, tok)
        h2, l2, s2 = _parse_class(right, tok)
        if s1 != s2:
            raise PokerSpecError(f"range token {tok!r}: both ends must have the same suitedness")
        if h1 == l1 and h2 == l2:                                     # TT-77
            for r in range(min(h1, h2), max(h1, h2) + 1):
                m |= _class_mask(r, r, "")
        elif h1 == h2:                                                # A5s-A2s
            for r in range(min(l1, l2), max(l1, l2) + 1):
                m |= _class_mask(h1, r, s1)
        elif h1 - l1 == h2 - l2 and h1 != l1:                         # T9s-65s
            for d in range(0, abs(h1 - h2) + 1):
                lo_h = min(h1, h2)
                m |= _class_mask(lo_h + d, lo_h + d - (h1 - l1), s1)
        else:
            raise PokerSpecError(
                f"range token {tok!r}: a dash range needs the same top card (A5s-A2s), two pairs (TT-77) "
                "or the same gap (T9s-65s)")
        return m
    plus = tok.endswith("+")
    hi, lo, suit = _parse_class(tok[:-1] if plus else tok, tok)
    if not plus:
        return _class_mask(hi, lo, suit)
    if hi == lo:                                                      # 22+
        for r in range(hi, 13):
            m |= _class_mask(r, r, "")
    elif lo < hi - 1:                                                 # A2s+ -> A2s..AKs
        for r in range(lo, hi):
            m |= _class_mask(hi, r, suit)
    else:                                                             # T9s+ -> T9s, JTs, ..., AKs
        for h in range(hi, 13):
            m |= _class_mask(h, h - 1, suit)
    return m


def _finish(weights: np.ndarray, board, what: str) -> np.ndarray:
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise PokerSpecError(f"{what}: weights must be finite and non-negative")
    w = weights.astype(np.float64).copy()
    if board is not None:
        b = parse_board(board) if isinstance(board, str) else np.asarray(board, dtype=np.int64)
        w[combos_blocked_by(b)] = 0.0
        where = f" on board {board_str(b)}"
    else:
        where = ""
    if not np.any(w > 0):
        raise PokerSpecError(f"{what} has no live hands{where} (every listed hand has weight 0 or shares a card with the board)")
    return w


def parse_range(text: str, board=None) -> np.ndarray:
    """A range string as weights per hole-card combo, with card removal against `board`.

        w = cfrjax.poker.parse_range("AA,KK,AKs:0.5,T9s-65s,A5s-A2s", board="Ks Js Th 7d 2c")
        w[cfrjax.poker.parse_combo("AhAd")]   # 1.0 (AA); AhKh 0.5 (AKs:0.5); AsKs 0.0 (the board's Ks)

    Args:
      text: comma-separated tokens, each optionally followed by `:weight` (default 1; a
        later token overrides an earlier one on the combos they share): `AA` a pair (6
        combos), `AKs` suited (4), `AKo` offsuit (12), `AK` both (16), `AsKh` one combo,
        `any` / `*` every combo, `22+` pairs from 22 up, `A2s+` kickers from 2 up to one
        below the top card, `T9s+` connectors up to AKs, dash ranges `A5s-A2s`,
        `TT-77`, `T9s-65s`. An empty token is skipped.
      board: the board (a string such as `"Ks Js Th"` or card ids); combos sharing a
        card with it get weight 0. `None`: no card removal.

    Returns:
      `[1326]` float64 weights in combo order (`cfrjax.poker.COMBO_NAMES` names each
      entry), the form `PokerSubgameSpec(range0=...)` and `cfrjax.poker.set_root_ranges` take.

    Raises:
      PokerSpecError: an unreadable token or weight, a negative or non-finite weight, or
        no live hand left (every weight 0 or blocked by the board).
    """
    if not isinstance(text, str):
        raise PokerSpecError(f"range {text!r} is not a string")
    w = np.zeros(NUM_COMBOS, dtype=np.float64)
    for raw in text.split(","):
        tok = raw.strip()
        if not tok:
            continue
        weight = 1.0
        if ":" in tok:
            tok, ws = (s.strip() for s in tok.split(":", 1))
            try:
                weight = float(ws)
            except ValueError:
                raise PokerSpecError(f"range {text!r}: weight {ws!r} of {tok!r} is not a number") from None
        if not math.isfinite(weight) or weight < 0:
            raise PokerSpecError(f"range {text!r}: weight {weight} of {tok!r} must be finite and non-negative")
        w[token_mask(tok)] = weight
    return _finish(w, board, f"range {text!r}")


def range_from_hands(hands: Mapping[str, float] | Iterable, board=None) -> np.ndarray:
    """Weights `[1326]` from explicit hands: `{"AsKs": 1, "QQ": 0.5}`, `["AsKs", "QQ"]`
    or `[("AsKs", 1.0), ...]` (each key any `parse_range` token)."""
    items = hands.items() if isinstance(hands, Mapping) else [
        (h, 1.0) if isinstance(h, str) else tuple(h) for h in hands]
    w = np.zeros(NUM_COMBOS, dtype=np.float64)
    for tok, weight in items:
        weight = float(weight)
        if not math.isfinite(weight) or weight < 0:
            raise PokerSpecError(f"hand {tok!r}: weight {weight} must be finite and non-negative")
        w[token_mask(str(tok))] = weight
    return _finish(w, board, "hand list")


def weights_from_array(weights, board=None, what: str = "range") -> np.ndarray:
    """Validate a `[1326]` weight vector (e.g. Libratus reach) and apply card removal."""
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (NUM_COMBOS,):
        raise PokerSpecError(f"{what}: expected {NUM_COMBOS} weights in combo order, got shape {w.shape}")
    return _finish(w, board, what)


def random_ranges(k: int, seed: int, board) -> tuple[np.ndarray, np.ndarray]:
    """`k` random live combos per player (weight 1), reproducible from `seed`.

    One permutation of the live combos from `np.random.default_rng(seed)`: player 0
    takes its first `k` entries, player 1 the next `k` (so the two candidate lists are
    disjoint; two hands may still share a card, and such pairs are never dealt).
    """
    k = int(k)
    b = parse_board(board) if isinstance(board, str) else np.asarray(board, dtype=np.int64)
    live = np.flatnonzero(~combos_blocked_by(b))
    if k <= 0 or 2 * k > live.size:
        raise PokerSpecError(f"random_hands={k}: need 1 <= k <= {live.size // 2} (two disjoint lists of live combos)")
    perm = np.random.default_rng(int(seed)).permutation(live)
    out = []
    for p in range(2):
        w = np.zeros(NUM_COMBOS, dtype=np.float64)
        w[perm[p * k:(p + 1) * k]] = 1.0
        out.append(w)
    return out[0], out[1]


def resolve_range(spec, board, *, player: int = 0) -> np.ndarray:
    """Weights `[1326]` from any range description: a range string, a mapping of hands
    to weights, a list of hands, or a `[1326]` array/sequence of numbers."""
    what = f"player {player} range"
    if isinstance(spec, str):
        try:
            return parse_range(spec, board)
        except PokerSpecError as e:
            raise PokerSpecError(f"{what}: {e}") from None
    if isinstance(spec, Mapping):
        try:
            return range_from_hands(spec, board)
        except PokerSpecError as e:
            raise PokerSpecError(f"{what}: {e}") from None
    seq = list(spec) if not isinstance(spec, np.ndarray) else spec
    if isinstance(seq, np.ndarray) or (len(seq) == NUM_COMBOS and all(isinstance(x, (int, float, np.number)) for x in seq)):
        return weights_from_array(seq, board, what)
    try:
        return range_from_hands(seq, board)
    except PokerSpecError as e:
        raise PokerSpecError(f"{what}: {e}") from None


def top_n(weights: np.ndarray, n: int) -> np.ndarray:
    """Keep the `n` combos with the largest weight (ties: lower combo index first)."""
    w = np.asarray(weights, dtype=np.float64)
    order = np.lexsort((np.arange(w.size), -w))
    keep = order[:int(n)]
    out = np.zeros_like(w)
    out[keep] = w[keep]
    return out
