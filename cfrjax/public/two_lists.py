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
of `sd_index`.

A game with one list per player (`player_game`, `hands="player"`) holds these tables per
lane, padded to one width `H = max(H_0, H_1)` (`PublicGame.player_lists`), and the passes
call `lane_fold_compat` / `lane_showdown_diff` at its terminals (the XLA passes only:
`cfrjax.plan.resolve_plan`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from cfrjax.deck import NUM_CARDS
from cfrjax.game import fingerprint

from cfrjax.public.terminals import (_materialise, _showdown_sorted_hm, card_table, compat_sums, showdown_tables,
                                     widen_tables)

__all__ = ["cross_tables", "fold_compat", "lane_fold_compat", "lane_showdown_diff", "player_game", "player_lists",
           "player_shapes",
           "range_weights", "same_index", "showdown_diff"]


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


# ----------------------------------------------------------------------------------------
# A game with one hand list per player (`PublicGame.player_lists`).


def player_lists(weights) -> tuple:
    """`(idx_0 [H_0], idx_1 [H_1])`: each player's hands of positive weight, as positions
    in the shared list the weights `[2, H]` run over."""
    w = np.asarray(weights)
    return tuple(np.flatnonzero(w[p] > 0) for p in (0, 1))


def _pad_rows(a: np.ndarray, rows: int, fill, axis: int) -> np.ndarray:
    pad = [(0, 0)] * a.ndim
    pad[axis] = (0, rows - a.shape[axis])
    return np.pad(a, pad, constant_values=fill)


def _lane_tables(strength, hand_cards, live, idx, W: int, M: int) -> dict:
    """Both lanes' terminal tables, padded to `W` hands and `M` hands per card (see
    `PublicGame.player_lists`); `strength [B, H]`, `hand_cards [H, 2]`, `live [B, H]` of the
    shared list, `idx` from `player_lists`."""
    C = NUM_CARDS
    own_cards, own_card_hands, same, live_p = [], [], [], []
    sorted_l, card_sorted_l, index_l = [], [], []
    hc = [hand_cards[i] for i in idx]
    for p in (0, 1):
        q = 1 - p
        Hp, Hq = idx[p].size, idx[q].size
        own_cards.append(_pad_rows(hc[p], W, 0, 0))
        ch = card_table(hc[p], C)
        own_card_hands.append(_pad_rows(np.where(ch == Hp, W, ch), M, W, 1))
        sm = same_index(idx[p], idx[q])
        same.append(_pad_rows(np.where(sm == Hq, W, sm), W, W, 0))
        live_p.append(_pad_rows(live[:, idx[p]], W, 0, 1))
        # q's sorted tables widened to W hands (padding, zero reach, after q's), M per card;
        # p's index rows padded to W.
        t = widen_tables(cross_tables(strength[:, idx[p]], strength[:, idx[q]], hc[p], hc[q], sm), W, M)
        sorted_l.append(t["sd_sorted"])
        card_sorted_l.append(t["sd_card_sorted"])
        index_l.append(_pad_rows(t["sd_index"], W, 0, 1))
    return dict(hand_cards=np.stack(own_cards).astype(np.int32), card_hands=np.stack(own_card_hands).astype(np.int32),
                same_hand=np.stack(same).astype(np.int32), board_live=np.stack(live_p, 1),
                sd_sorted=np.stack(sorted_l, 1).astype(np.int32),
                sd_card_sorted=np.stack(card_sorted_l, 1).astype(np.int32),
                sd_index=np.stack(index_l, 1).astype(np.int32))


def player_game(game):
    """The public game `game` (one list for both players, the ranges' hands: `hands =
    "range"`, sorted terminals, no rake kernels needed) with one hand list per player:
    player p's hands are those of positive weight in its range (`player_lists`), at
    columns `0..H_p - 1` of `H = max(H_0, H_1)` (`PublicGame.player_lists`). The tree, its
    slots and the normaliser are `game`'s; the hand leaves are re-indexed per player, the
    showdown tables rebuilt across the lists (`cross_tables`) from `game`'s strength
    order on each board (`sd_index[..., 0]`, the hands below each hand).

    Raises:
      ValueError: a depth-limited game (its leaf function takes one list).
    """
    from cfrjax.host import device_array
    import jax.numpy as jnp

    if game.leaf_fn is not None or game.leaf_data is not None:
        raise ValueError(f"{game.name}: hands='player' does not apply to a depth-limited game (its leaf function "
                         "reads one hand list); build it with hands='range'")
    labels = game.labels
    weights = np.asarray(game.weights)
    idx = player_lists(weights)
    W = max(i.size for i in idx)
    hand_cards = np.asarray(game.hand_cards)
    strength = np.asarray(game.sd_index)[..., 0].astype(np.int64)   # hands below each: the strength order
    live = np.asarray(game.board_live)
    M = max(card_table(hand_cards[i]).shape[1] for i in idx)
    t = _lane_tables(strength, hand_cards, live, idx, W, M)
    fdt = game.weights.dtype
    w = np.stack([_pad_rows(weights[p, idx[p]], W, 0, 0) for p in (0, 1)])
    hands = np.asarray(labels.hands)
    digest = fingerprint({"union": np.frombuffer(labels.fingerprint.encode(), np.uint8),
                          "hands0": hands[idx[0]], "hands1": hands[idx[1]]})
    source = dict(labels.source)
    poker = dict(source.get("poker", {}))
    poker.update(hand_list="player", hands=int(W), player_hands=[int(i.size) for i in idx])
    source["poker"] = poker
    new_labels = dataclasses.replace(labels, fingerprint=digest, source=source,
                                     player_hands=tuple(hands[i].copy() for i in idx))
    leaves = {k: device_array(v, jnp.int32) for k, v in t.items() if k != "board_live"}
    leaves["board_live"] = device_array(t["board_live"], game.board_live.dtype)
    return dataclasses.replace(
        game, **leaves, weights=device_array(w, fdt), card_matrix=None, dense_showdown=None, dense_compat=None,
        num_hands=int(W), forest_plan=None, trunk_plan=None, terminals="sorted", labels=new_labels,
        player_lists=tuple(int(i.size) for i in idx),
        plan=None)


def player_shapes(leaves: dict, weights, hand_cards) -> tuple:
    """`(leaves, (H_0, H_1))`: `cfrjax.games.poker.public_tree.public_shapes`' leaves
    (`jax.ShapeDtypeStruct`s of the one-list game, the ranges' union, whose hands have
    `weights [2, H]` and `hand_cards [H, 2]`) as `player_game` lays them out
    (`PublicGame.player_lists`), for the memory plan."""
    import jax

    idx = player_lists(weights)
    W = max(i.size for i in idx)
    B = leaves["board_live"].shape[0]
    C = leaves["card_hands"].shape[0]
    cards = np.asarray(hand_cards)
    M = max(max(1, int(np.bincount(cards[i].ravel(), minlength=C).max(initial=0))) for i in idx)
    shapes = dict(hand_cards=(2, W, 2), card_hands=(2, C, M), same_hand=(2, W), sd_sorted=(B, 2, W),
                  sd_card_sorted=(B, 2, C, M), sd_index=(B, 2, W, 6), board_live=(B, 2, W), weights=(2, W))
    out = {k: v for k, v in leaves.items() if k not in ("card_matrix", "dense_showdown", "dense_compat")}
    for k, shape in shapes.items():
        dt = leaves["hand_cards" if k == "same_hand" else k].dtype
        out[k] = jax.ShapeDtypeStruct(shape, dt)
    return out, tuple(int(i.size) for i in idx)


def range_weights(game, w0, w1, xp=np):
    """`(weights [2, H, *batch], norm [*batch])` of a game with one list per player
    (`weights.range_weights` across the two lists): `w_p` over player p's list (padded to
    `H`), `Z = sum_h w0[h] sum_{h'} compat(h, h') w1[h']`."""
    weights = xp.stack(xp.broadcast_arrays(w0, w1))
    compat = compat_sums(weights[1], game.hand_cards[0], game.card_hands[1], xp, same=game.same_hand[0])
    return weights, xp.sum(weights[0] * compat, axis=0)


def _own(game, p: int, y):
    """`y [H, ...]` of lane `p` with the padding rows (`H_p..H - 1`) zero."""
    import jax.numpy as jnp

    mask = jnp.arange(y.shape[0]) < game.player_lists[p]
    return jnp.where(mask.reshape((-1,) + (1,) * (y.ndim - 1)), y, 0.0)


def _hand_major(x):
    """`[T, H, *batch] -> ([H, Q], restore)`."""
    import jax.numpy as jnp

    moved = jnp.moveaxis(x, 1, 0)
    return moved.reshape((moved.shape[0], -1)), lambda y: jnp.moveaxis(y.reshape(moved.shape), 0, 1)


def lane_fold_compat(game, reach, lanes, cpu: bool):
    """`[T, L, H, *batch]`: per lane p of `lanes` the compatible reach of the opponent q
    (`reach [T, 2, H, *batch]`, both players' own reach at the terminals) for each hand of
    p's list (`compat_sums` across the two lists; on CPU the reach written out first, as
    `terminals.fold_compat` does)."""
    import jax.numpy as jnp

    out = []
    for p in lanes:
        x, back = _hand_major(reach[:, 1 - p])
        x = _materialise(x) if cpu else x
        c = compat_sums(x, game.hand_cards[p], game.card_hands[1 - p], same=game.same_hand[p])
        out.append(back(_own(game, p, c)))
    return jnp.stack(out, axis=1)


def lane_showdown_diff(game, board: dict, reach, lanes, cpu: bool):
    """`[K, L, H, *batch]`: per lane p of `lanes` the opponent's compatible reach with
    weaker minus stronger hands (`reach [K, 2, H, *batch]` both players' own reach at one
    board's showdowns; `board`'s lane tables, `sd_sorted [2, H]`, ...; on CPU the reach
    written out first, as `terminals.showdown_diff` does)."""
    import jax.numpy as jnp

    out = []
    for p in lanes:
        x, back = _hand_major(reach[:, 1 - p])
        x = _materialise(x) if cpu else x
        one = {k: board[k][p] for k in ("sd_sorted", "sd_card_sorted", "sd_index")}
        out.append(back(_own(game, p, _showdown_sorted_hm(one, x, cpu, None))))
    return jnp.stack(out, axis=1)
