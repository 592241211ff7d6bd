"""River boards as data: one solve over spots on different boards, and their tables for a batch of boards at once.

A river spot's public game (`build_public`, every live hand) depends on its board only
through the hands' strengths. Its hand list is the 1,081 combos not blocked by the
board, in combo order, i.e. the pairs `(i, j)`, `i < j`, of the 47 cards off the board
by position, lexicographically (`COMBOS` is lexicographic and the position of a card
among the 47 is monotone in its id). So hand `h` of every river board is the same pair
of positions, and which hands share a card (`hand_cards`, `card_hands`, fold values,
normalisers) is the same for every board once the 47 cards are relabelled by position:
the game of board `X`, hand `h` read as `river_hands(X)[h]`, is the game of any other
river board with the same betting, with board `X`'s showdown tables. Those tables
(`PublicGame.BOARD_TABLES`: `sd_sorted`, `sd_card_sorted`, `sd_index`,
`cfrjax.public.terminals.showdown_tables`) are all that differ, so they become a
batched leaf like the ranges:

    game = build_public(spec)                             # any river board: the betting tree
    boards = ...                                          # [B, 5] card ids, one board per spot
    hands = river_hands(boards)                           # [B, 1081] combo of hand h on each board
    games = jax.vmap(set_ranges, (None, 0, 0), batch_axes(game))(game, w0, w1)   # w [B, 1081], by hand
    games = set_boards(games, board_tables(game, boards))
    solved = solve_batch(games, init_batch(game, B), 1000)   # one executable for any boards

The per-board work is vectorised over the batch: one call of the 7-card evaluator on all
`B x 1081` hands (`river_strengths`, split over threads: NumPy releases the GIL in its
array operations) and one set of sorts and `searchsorted`s for all boards
(`showdown_tables`). A game with per-subgame boards runs the sorted terminal form (the
dense one would need a `[1081, 1081]` matrix per spot; `set_boards` drops the shared one).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os

import jax.numpy as jnp
import numpy as np

from cfrjax.games.poker.cards import COMBOS, NUM_COMBOS
from cfrjax.games.poker.evaluator import evaluate
from cfrjax.public import terminals as pt

__all__ = ["RIVER_HANDS", "board_tables", "river_hands", "river_strengths", "set_boards", "win_probability"]

#: Hands of a river spot's full hand list: pairs of the 47 cards off the board.
RIVER_HANDS = 47 * 46 // 2
#: Hands per evaluator call of `river_strengths` (a chunk's temporaries stay small).
_CHUNK = 1 << 16


def _boards(boards) -> np.ndarray:
    b = np.asarray(boards, np.int64)
    if b.ndim != 2 or b.shape[1] != 5:
        raise ValueError(f"boards must be [B, 5] card ids, got shape {b.shape}")
    if b.size and (b.min() < 0 or b.max() > 51 or (np.diff(np.sort(b, 1), axis=1) == 0).any()):
        raise ValueError("boards must hold 5 distinct card ids in 0..51 each")
    return b


def river_hands(boards) -> np.ndarray:
    """`[B, 1081]` int64: the combos of each board's hand list (those not blocked by the
    board, in combo order): hand `h` of board `b` is combo `river_hands(boards)[b, h]`."""
    b = _boards(boards)
    blocked = (COMBOS[None, :, :, None] == b[:, None, None, :]).any((2, 3))             # [B, 1326]
    return (np.flatnonzero(~blocked.ravel()) % NUM_COMBOS).reshape(b.shape[0], RIVER_HANDS)


def river_strengths(boards, hands=None, *, workers: int | None = None) -> np.ndarray:
    """`[B, 1081]` int64: `evaluate` (the 7-card evaluator) of each board with each hand of
    its hand list (`hands`, default `river_hands(boards)`), in chunks of `_CHUNK` hands
    over `workers` threads (default: the CPUs this process may use, at most 8)."""
    b = _boards(boards)
    hands = river_hands(b) if hands is None else np.asarray(hands)
    cards = np.concatenate([np.broadcast_to(b[:, None, :], hands.shape + (5,)), COMBOS[hands]], axis=2)
    cards = cards.reshape(-1, 7)
    if workers is None:
        workers = min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    chunks = [cards[i:i + _CHUNK] for i in range(0, cards.shape[0], _CHUNK)]
    if workers <= 1 or len(chunks) <= 1:
        out = [evaluate(c) for c in chunks]
    else:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            out = list(pool.map(evaluate, chunks))
    return (np.concatenate(out) if out else np.zeros(0, np.int64)).reshape(hands.shape)


def board_tables(game, boards, strength=None) -> dict:
    """The showdown tables of `boards` `[B, 5]` for the river game `game` (`build_public`
    of any river board, every live hand): `PublicGame.BOARD_TABLES` with a leading `B`
    and the board axis of one game (`sd_sorted [B, 1, H]`, ...), int32, in `game`'s card
    labels (module docstring). `strength`: `river_strengths(boards)` if already computed."""
    _check_river(game)
    s = river_strengths(boards) if strength is None else np.asarray(strength, np.int64)
    t = pt.showdown_tables(s, np.asarray(game.hand_cards), np.asarray(game.card_hands))
    return {k: v[:, None] for k, v in t.items()}


def win_probability(tables: dict) -> np.ndarray:
    """`[B, 1081]` float64 from `board_tables`: the probability that each hand beats an
    opponent hand drawn uniformly from those sharing no card with it (a tie counts one
    half): `cfrjax.datagen.hand_strength` of each board, read off the tables' counts
    (hands weaker / not stronger, in all and among those holding each of its cards)."""
    ix = np.asarray(tables["sd_index"])[:, 0].astype(np.int64)                           # [B, H, 6]
    H = ix.shape[1]
    M = 46                                                                               # hands holding a card
    lt, le = ix[..., 0], ix[..., 1]
    own = (ix[..., 2:] - (H + 1)) % (M + 1)                                              # lt1, le1, lt2, le2
    wins = lt - own[..., 0] - own[..., 2]
    ties = (le - lt) - (own[..., 1] - own[..., 0]) - (own[..., 3] - own[..., 2]) + 1
    return (wins + 0.5 * ties) / (H - 2 * M + 1)


def set_boards(games, tables: dict):
    """`games` (a river `PublicGame`, batched or not) with one board per subgame: the
    tables of `board_tables` (leading batch `B`) replace its own, and the sorted terminal
    form is used (the shared dense matrices are dropped). Hand `h` of subgame `b` is then
    `river_hands(boards)[b, h]`; ranges are given by hand in that order."""
    _check_river(games)
    leaves = {k: jnp.asarray(tables[k], jnp.int32) for k in games.BOARD_TABLES}
    for k, x in leaves.items():
        want = (1,) + tuple(getattr(games, k).shape[-(games.BOARD_TABLES[k] - 1):])
        if x.ndim != games.BOARD_TABLES[k] + 1 or tuple(x.shape[1:]) != want:
            raise ValueError(f"board table {k} has shape {x.shape}, expected [B, {', '.join(map(str, want))}] "
                             "(board_tables of this game)")
    return dataclasses.replace(games, **leaves, dense_showdown=None, dense_compat=None, terminals="sorted")


def _check_river(game) -> None:
    if game.num_boards != 1 or game.dealt or game.num_hands != RIVER_HANDS or game.depth_limited:
        raise ValueError(f"boards as data need a river spot's public game with every live hand ({RIVER_HANDS}); "
                         f"got {game.num_boards} board(s) and {game.num_hands} hands")
