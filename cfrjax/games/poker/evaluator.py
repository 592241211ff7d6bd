"""Exact 5-, 6- and 7-card poker hand evaluation, vectorized over arrays of hands.

`evaluate(cards)` maps an int array `[..., n]` of distinct card ids (`n` in 5..7, see
`cards.py`) to an int64 array `[...]` of hand values: the value of the best five-card
hand, higher is better, equal values exactly for equal-strength hands.

A value packs the category and up to five tie-break ranks (0..12) in 4-bit fields:
`category << 20 | r1 << 16 | r2 << 12 | r3 << 8 | r4 << 4 | r5`, categories 0 high
card, 1 pair, 2 two pair, 3 trips, 4 straight, 5 flush, 6 full house, 7 quads,
8 straight flush. Every hand is reduced to 13-bit rank masks (ranks present, present
at least twice / three times / four times, and the flush suit's ranks) and finished
with 8,192-entry lookup tables (highest set bit, top-k ranks, straight top), so the
work is a few dozen NumPy array operations whatever the batch size.
"""

from __future__ import annotations

import numpy as np

HIGH_CARD, PAIR, TWO_PAIR, TRIPS, STRAIGHT, FLUSH, FULL_HOUSE, QUADS, STRAIGHT_FLUSH = range(9)
CATEGORY_NAMES = ("high card", "pair", "two pair", "three of a kind", "straight", "flush",
                  "full house", "four of a kind", "straight flush")

_NMASK = 1 << 13


def _tables():
    masks = np.arange(_NMASK, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(13)) & 1                      # [8192, 13]
    popcount = bits.sum(1)
    # top-k ranks packed high first, 4 bits each; topk[k][m] for k = 1..5.
    order = np.argsort(-np.where(bits == 1, np.arange(13), -1), axis=1, kind="stable")  # ranks descending
    ranks_desc = np.where(np.take_along_axis(bits, order, 1) == 1, order, 0)
    topk = [np.zeros(_NMASK, np.int64)]
    for k in range(1, 6):
        topk.append(topk[-1] * 16 + ranks_desc[:, k - 1])
    top_bit = np.where(popcount > 0, ranks_desc[:, 0], -1)
    # Straight top rank: bit 0 of `ext` is the ace played low, bits 1..13 ranks 2..A.
    ext = ((masks << 1) | (masks >> 12)) & ((1 << 14) - 1)
    straight = np.full(_NMASK, -1, np.int64)
    for low in range(10):                                              # window ext bits low..low+4
        hit = ((ext >> low) & 0b11111) == 0b11111
        straight = np.where(hit, low + 3, straight)                    # top rank index = low + 4 - 1
    return popcount, top_bit, topk, straight


_POPCOUNT, _TOP_BIT, _TOPK, _STRAIGHT = _tables()


def _without(mask: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """`mask` with bit `rank` cleared (no-op where rank < 0)."""
    return mask & ~np.where(rank >= 0, np.left_shift(1, np.maximum(rank, 0)), 0)


def evaluate(cards) -> np.ndarray:
    """Hand values of `[..., n]` distinct card ids, `n` in 5, 6, 7 -> int64 `[...]`.

    Higher is better; two hands tie exactly when their values are equal.
    """
    c = np.asarray(cards, dtype=np.int64)
    if c.ndim < 1 or not 5 <= c.shape[-1] <= 7:
        raise ValueError(f"evaluate expects [..., n] card ids with n in 5..7, got shape {c.shape}")
    lead = c.shape[:-1]
    n = c.shape[-1]
    c = c.reshape(-1, n)
    if c.size and (c.min() < 0 or c.max() > 51):
        raise ValueError("card ids must lie in 0..51")
    num = c.shape[0]
    rank = c >> 2
    suit = c & 3
    bit = np.left_shift(np.int64(1), rank)                             # [num, n]

    counts = np.bincount((np.arange(num)[:, None] * 13 + rank).ravel(), minlength=num * 13).reshape(num, 13)
    pow2 = np.left_shift(np.int64(1), np.arange(13))
    mask1 = (counts >= 1) @ pow2
    mask2 = (counts >= 2) @ pow2
    mask3 = (counts >= 3) @ pow2
    mask4 = (counts >= 4) @ pow2

    fmask = np.zeros(num, np.int64)
    for s in range(4):
        m = np.bitwise_or.reduce(np.where(suit == s, bit, 0), axis=1)
        fmask = np.where(_POPCOUNT[m] >= 5, m, fmask)

    top = _TOP_BIT
    val = _TOPK[5][mask1]                                              # high card (category 0)
    p1 = top[mask2]
    rest = _without(mask1, p1)
    val = np.maximum(val, np.where(p1 >= 0, (PAIR << 20) | (p1 << 16) | (_TOPK[3][rest] << 4), 0))
    p2 = top[_without(mask2, p1)]
    kick = np.maximum(top[_without(rest, p2)], 0)
    val = np.maximum(val, np.where(p2 >= 0, (TWO_PAIR << 20) | (p1 << 16) | (p2 << 12) | (kick << 8), 0))
    t = top[mask3]
    val = np.maximum(val, np.where(t >= 0, (TRIPS << 20) | (t << 16) | (_TOPK[2][_without(mask1, t)] << 8), 0))
    st = _STRAIGHT[mask1]
    val = np.maximum(val, np.where(st >= 0, (STRAIGHT << 20) | (st << 16), 0))
    val = np.maximum(val, np.where(fmask != 0, (FLUSH << 20) | _TOPK[5][fmask], 0))
    fp = top[_without(mask2, t)]
    val = np.maximum(val, np.where((t >= 0) & (fp >= 0), (FULL_HOUSE << 20) | (t << 16) | (fp << 12), 0))
    q = top[mask4]
    val = np.maximum(val, np.where(q >= 0, (QUADS << 20) | (q << 16) | (np.maximum(top[_without(mask1, q)], 0) << 12), 0))
    sf = _STRAIGHT[fmask]
    val = np.maximum(val, np.where(sf >= 0, (STRAIGHT_FLUSH << 20) | (sf << 16), 0))
    return val.reshape(lead)


def rank7(cards) -> np.ndarray:
    """Hand values of `[..., 7]` card ids (board + hole cards) -> int64 `[...]`."""
    c = np.asarray(cards)
    if c.shape[-1:] != (7,):
        raise ValueError(f"rank7 expects [..., 7] card ids, got shape {c.shape}")
    return evaluate(c)


def rank5(cards) -> np.ndarray:
    """Hand values of `[..., 5]` card ids -> int64 `[...]`."""
    c = np.asarray(cards)
    if c.shape[-1:] != (5,):
        raise ValueError(f"rank5 expects [..., 5] card ids, got shape {c.shape}")
    return evaluate(c)


def rank6(cards) -> np.ndarray:
    """Hand values of `[..., 6]` card ids -> int64 `[...]`."""
    c = np.asarray(cards)
    if c.shape[-1:] != (6,):
        raise ValueError(f"rank6 expects [..., 6] card ids, got shape {c.shape}")
    return evaluate(c)


def hand_category(value) -> np.ndarray:
    """Category (0 high card .. 8 straight flush) of hand values from `evaluate`."""
    return np.asarray(value) >> 20


def board_values(boards, hand_cards, out: np.ndarray | None = None) -> np.ndarray:
    """`[B, H]`: `evaluate` of each 5-card board `boards [B, 5]` with each hand
    `hand_cards [H, 2]` (the 7 cards), for all `B x H` pairs; an entry whose hand shares a
    card with its board is unspecified (callers mask those hands as dead). Written into
    `out` (an int32 or int64 `[B, H]` array) if given, else a new int64 array.

    Equal to `evaluate` entry by entry (tested) at a fraction of its cost: a 7-card value
    is the larger of a part read off the 7 ranks alone (pairs to quads, straights) and a
    flush part (the flush suit's ranks). The rank part depends only on the board's rank
    multiset and the hand's two ranks, so it is evaluated once per distinct (board ranks,
    hand ranks) pair (at most 91 x 91 on a flop's turn and river cards, with suits dealt
    round-robin so that no flush forms) and gathered; the flush part needs a board with 3
    or more cards of one suit, and comes from that suit's rank mask by the lookup tables.
    Boards are done a chunk at a time (the temporaries stay in cache)."""
    b = np.asarray(boards, np.int64)
    hc = np.asarray(hand_cards, np.int64)
    if b.ndim != 2 or b.shape[1] != 5 or hc.ndim != 2 or hc.shape[1] != 2:
        raise ValueError(f"board_values expects boards [B, 5] and hand_cards [H, 2], got {b.shape} and {hc.shape}")
    B, H = b.shape[0], hc.shape[0]
    out = np.empty((B, H), np.int64) if out is None else out
    if out.shape != (B, H):
        raise ValueError(f"board_values: out has shape {out.shape}, expected {(B, H)}")
    if B == 0 or H == 0:
        return out
    ub, binv = np.unique(np.sort(b >> 2, axis=1), axis=0, return_inverse=True)            # [U, 5]
    binv = binv.reshape(-1)
    hr = np.sort(hc >> 2, axis=1)
    up, pinv = np.unique(hr[:, 0] * 13 + hr[:, 1], return_inverse=True)                    # [P] rank pairs
    pinv = pinv.reshape(-1)
    U, P = ub.shape[0], up.size
    ranks = np.sort(np.concatenate([np.repeat(ub, P, axis=0),
                                    np.tile(np.stack([up // 13, up % 13], axis=1), (U, 1))], axis=1), axis=1)
    # Suit = position mod 4 in rank order: equal ranks get distinct suits, no suit 5 times.
    table = evaluate(ranks * 4 + np.arange(7) % 4).reshape(U, P)[:, pinv]                   # [U, H]
    suit = b & 3
    counts = np.stack([(suit == s).sum(1) for s in range(4)], axis=1)                        # [B, 4]
    fs = counts.argmax(1)                                                                    # the flush suit
    flush = counts.max(1) >= 3
    bmask = np.where(suit == fs[:, None], np.left_shift(1, b >> 2), 0).sum(1)                 # its ranks
    hmask = np.stack([np.where((hc & 3) == s, np.left_shift(1, hc >> 2), 0).sum(1) for s in range(4)])   # [4, H]
    step = max(1, (1 << 15) // H)
    for lo in range(0, B, step):
        val = table[binv[lo:lo + step]]                                                      # [b, H]
        rows = lo + np.flatnonzero(flush[lo:lo + step])
        if rows.size:
            fmask = bmask[rows, None] | hmask[fs[rows]]                                      # [r, H]
            sf = _STRAIGHT[fmask]
            fv = np.where(sf >= 0, (STRAIGHT_FLUSH << 20) | (sf << 16), (FLUSH << 20) | _TOPK[5][fmask])
            hit = _POPCOUNT[fmask] >= 5
            sub = val[rows - lo]
            val[rows - lo] = np.where(hit & (fv > sub), fv, sub)
        out[lo:lo + step] = val
    return out
