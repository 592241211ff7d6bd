"""Terminal values between two hand lists (a prototype of per-player lists, docs/design/hands.md).

Player `p`'s vectors run over its own list `H_p`, the opponent `q`'s over `H_q`; only the
terminals cross the two: player `p`'s value at a terminal reads `q`'s reach `r [H_q]` and
returns `[H_p]`, card removal exact:

* **Fold**: `C(h) = T - S_q[c1] - S_q[c2] + r[j(h)]` (`compat_sums` with `same`: `j(h)`
  is `h`'s position in `H_q`, or the zero row when `q` cannot hold `h`).
* **Showdown** (sorted): `cfrjax.public.terminals`' six-term formula with indices into
  the opponent's tables: `q`'s hands sorted by strength (and each card's hands of `q`),
  and per hand of `p` the counts of `q`'s hands weaker / not stronger (`cross_tables`).
  No own-hand correction: `h` ties with its own combo, and ties count 0.

One list for both players (`H_p = H_q`) gives `terminals.showdown_tables`' index exactly
(tested). The XLA showdown (`terminals._showdown_sorted_hm`) runs the cross tables as they
are: it gathers `q`'s rows by `sd_sorted` / `sd_card_sorted` and returns one row per row
of `sd_index`. Not wired into the passes yet (the design note says what remains).
"""

from __future__ import annotations

import numpy as np

from cfrjax.public.terminals import _showdown_sorted_hm, card_table, compat_sums, showdown_tables

__all__ = ["cross_tables", "fold_compat", "same_index", "showdown_diff"]


def same_index(hands_p: np.ndarray, hands_q: np.ndarray) -> np.ndarray:
    """`[H_p]` int32: each hand of `p`'s list (ascending combo ids) at its position in `q`'s
    list, or `H_q` (the zero row of `compat_sums`' padded reach) where `q` cannot hold it."""
    hp, hq = np.asarray(hands_p, np.int64), np.asarray(hands_q, np.int64)
    pos = np.searchsorted(hq, hp)
    found = (pos < hq.size) & (hq[np.minimum(pos, hq.size - 1)] == hp)
    return np.where(found, pos, hq.size).astype(np.int32)


def cross_tables(strength_p: np.ndarray, strength_q: np.ndarray, hand_cards_p: np.ndarray, hand_cards_q: np.ndarray,
                 same: np.ndarray) -> dict:
    """Sorted-showdown tables of `B` boards for player `p`'s values against `q`'s reach.

    Args:
      strength_p, strength_q: `[B, H_p]`, `[B, H_q]` int strengths per board (higher
        wins; dead hands any value, their reach and values are masked elsewhere).
      hand_cards_p, hand_cards_q: `[H_p, 2]`, `[H_q, 2]` card ids of the two lists.
      same: `[H_p]` from `same_index`.

    Returns:
      dict of NumPy arrays: `sd_sorted [B, H_q]` and `sd_card_sorted [B, C, M_q]` (`q`'s,
      as `showdown_tables` makes them), `sd_index [B, H_p, 6]` (rows of `q`'s prefix-sum
      table, `showdown_tables`' layout with `H = H_q`, `M = M_q`), and for the fold
      `hand_cards_p [H_p, 2]`, `card_hands_q [C, M_q]`, `same [H_p]` (`same_index`).
    """
    sp, sq = np.asarray(strength_p, np.int64), np.asarray(strength_q, np.int64)
    hc_p, hc_q = np.asarray(hand_cards_p, np.int32), np.asarray(hand_cards_q, np.int32)
    card_hands_q = card_table(hc_q)
    B, Hq = sq.shape
    C, M = card_hands_q.shape
    q = showdown_tables(sq, hc_q, card_hands_q)
    order = q["sd_sorted"]
    ranked = np.take_along_axis(sq, order.astype(np.int64), 1)                   # [B, H_q] ascending
    lt = np.stack([np.searchsorted(ranked[b], sp[b], side="left") for b in range(B)])
    le = np.stack([np.searchsorted(ranked[b], sp[b], side="right") for b in range(B)])
    # Each card's hands of q in ascending strength; the padding (index H_q) above every hand.
    top = np.iinfo(np.int64).max
    padded = np.concatenate([sq, np.full((B, 1), top)], axis=1)
    card_s = np.take_along_axis(padded[:, None, :], q["sd_card_sorted"].astype(np.int64).reshape(B, 1, -1),
                                2).reshape(B, C, M)                              # [B, C, M_q]
    cols = []
    for k in (0, 1):
        rows = card_s[:, hc_p[:, k]]                                             # [B, H_p, M_q]
        base = Hq + 1 + hc_p[:, k] * (M + 1)
        cols += [base + (rows < sp[..., None]).sum(-1), base + (rows <= sp[..., None]).sum(-1)]
    index = np.stack([lt, le] + cols, axis=2).astype(np.int32)
    return dict(sd_sorted=order, sd_card_sorted=q["sd_card_sorted"], sd_index=index, hand_cards_p=hc_p,
                card_hands_q=card_hands_q, same=np.asarray(same, np.int32))


def fold_compat(x_q, tables: dict, xp=np):
    """`C [H_p, ...]` of `q`'s hand-major reach `x_q [H_q, ...]`: the compatible opponent
    reach of each hand of `p` (`compat_sums` across the two lists)."""
    return compat_sums(x_q, tables["hand_cards_p"], tables["card_hands_q"], xp=xp, same=tables["same"])


def showdown_diff(x_q, tables: dict, board: int, cpu: bool = True):
    """`D [H_p, Q]` on board `board` of `q`'s hand-major reach `x_q [H_q, Q]` (JAX): the
    compatible reach of `q`'s weaker hands minus its stronger ones, per hand of `p`
    (`terminals`' XLA sorted showdown on the cross tables)."""
    import jax.numpy as jnp

    one = {k: jnp.asarray(tables[k][board]) for k in ("sd_sorted", "sd_card_sorted", "sd_index")}
    return _showdown_sorted_hm(one, x_q, cpu, None)
