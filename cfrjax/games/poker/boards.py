"""River boards as data: one solve over spots on different boards, and their tables for a batch of boards at once.

A river spot's public game (`build_public`, every live hand) depends on its board only
through the hands' strengths. Its hand list is the 1,081 combos not blocked by the
board, in combo order, i.e. the pairs `(i, j)`, `i < j`, of the 47 cards off the board
by position, lexicographically (`COMBOS` is lexicographic and the position of a card
among the 47 is monotone in its id). So hand `h` of every river board is the same pair
of positions, and which hands share a card (`hand_cards`, `card_hands`, fold values,
normalisers) is the same for every board once the 47 cards are relabelled by position:
the game of board `X`, hand `h` read as `river_hands(X)[h]`, is the game of any other
river board with the same betting, with board `X`'s showdown tables, all in position
labels (`HAND_CARDS`: card `i` is the `i`-th card off the board). Those tables
(`PublicGame.BOARD_TABLES`: `sd_sorted`, `sd_card_sorted`, `sd_index`,
`cfrjax.public.terminals.showdown_tables`) are all that differ, so they become a
batched leaf like the ranges:

    game = build_public(spec, hands="all")                # any river board: the betting tree
    boards = ...                                          # [B, 5] card ids, one board per spot
    tables = board_tables(boards)                         # hands [B, 1081]: combo of hand h on each board
    games = jax.vmap(set_ranges, (None, 0, 0), batch_axes(game))(game, w0, w1)   # w [B, 1081], by hand
    games = set_boards(games, tables)
    solved = solve_batch(games, init_batch(game, B), 1000)   # one executable for any boards

The per-board work is vectorised over boards: the 7-card evaluator on all `B x 1081`
hands at once (`river_strengths`) and one set of sorts for all boards
(`showdown_tables`), in chunks of boards over threads (`board_tables`). A game with per-subgame boards runs the sorted terminal form (the
dense one would need a `[1081, 1081]` matrix per spot; `set_boards` drops the shared one).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os

import jax.numpy as jnp
import numpy as np

from cfrjax.deck import NUM_CARDS
from cfrjax.games.poker.cards import COMBOS, NUM_COMBOS
from cfrjax.games.poker.evaluator import evaluate
from cfrjax.public import terminals as pt

__all__ = ["CARD_HANDS", "HAND_CARDS", "RIVER_HANDS", "board_tables", "river_hands", "river_strengths",
           "set_boards", "win_probability"]

#: Hands of a river spot's full hand list: pairs of the 47 cards off the board.
RIVER_HANDS = 47 * 46 // 2
#: `[1081, 2]` int32: the cards of each hand by position among the 47 cards off the board
#: (`(i, j)`, `i < j`, lexicographic): hand `h` of every river board.
HAND_CARDS = np.stack(np.triu_indices(47, k=1), axis=1).astype(np.int32)
#: `[47, 46]` int32: the hands holding each position (`cfrjax.public.terminals.card_table`).
CARD_HANDS = pt.card_table(HAND_CARDS, 47)
#: Boards per chunk of `board_tables`' threads.
_CHUNK = 128


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
    on = np.zeros((b.shape[0], NUM_CARDS), bool)
    np.put_along_axis(on, b, True, 1)
    blocked = on[:, COMBOS[:, 0]] | on[:, COMBOS[:, 1]]                                  # [B, 1326]
    return (np.flatnonzero(~blocked.ravel()) % NUM_COMBOS).reshape(b.shape[0], RIVER_HANDS)


def river_strengths(boards, hands=None) -> np.ndarray:
    """`[B, 1081]` int64: `evaluate` (the 7-card evaluator) of each board with each hand of
    its hand list (`hands`, default `river_hands(boards)`)."""
    b = _boards(boards)
    hands = river_hands(b) if hands is None else np.asarray(hands)
    cards = np.concatenate([np.broadcast_to(b[:, None, :], hands.shape + (5,)), COMBOS[hands]], axis=2)
    return evaluate(cards.reshape(-1, 7)).reshape(hands.shape)


def _tables(boards: np.ndarray) -> dict:
    hands = river_hands(boards)
    t = pt.showdown_tables(river_strengths(boards, hands), HAND_CARDS, CARD_HANDS)
    return dict(t, hands=hands)


def host_workers() -> int:
    """Threads for host work over chunks of boards or spots: the CPUs this process may use,
    at most 8 (`board_tables`, `cfrjax.datagen.recursive_ranges`)."""
    return min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def board_tables(boards, *, workers: int | None = None) -> dict:
    """Everything a batch of river boards `[B, 5]` needs, NumPy: `hands [B, 1081]`
    (`river_hands`) and the showdown tables (`PublicGame.BOARD_TABLES`, int32, with a
    leading `B` and one game's board axis: `sd_sorted [B, 1, 1081]`, `sd_card_sorted [B,
    1, 47, 46]`, `sd_index [B, 1, 1081, 6]`) in the position labels of `HAND_CARDS`.
    Chunks of boards run on `workers` threads (NumPy releases the GIL in its array
    operations; default: the CPUs this process may use, at most 8)."""
    b = _boards(boards)
    workers = host_workers() if workers is None else workers
    chunks = [b[i:i + _CHUNK] for i in range(0, b.shape[0], _CHUNK)] or [b]
    if workers <= 1 or len(chunks) <= 1:
        parts = [_tables(c) for c in chunks]
    else:
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(_tables, chunks))
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    for k in ("sd_sorted", "sd_card_sorted", "sd_index"):
        out[k] = out[k][:, None]
    return out


def win_probability(tables: dict) -> np.ndarray:
    """`[B, 1081]` float64 from `board_tables`: the probability that each hand beats an
    opponent hand drawn uniformly from those sharing no card with it (a tie counts one
    half; `cfrjax.datagen.hand_strength` of each board), read off the tables' counts of
    hands weaker / not stronger, in all and among those holding each of its cards."""
    # int32 as the tables are (their entries are below 2 * 47 * 47): int64 copies and
    # their `%` made this several times slower, the host's largest serial step per shard.
    ix = np.asarray(tables["sd_index"])[:, 0]                                             # [B, H, 6]
    H, M = RIVER_HANDS, CARD_HANDS.shape[1]
    lt, le = ix[..., 0], ix[..., 1]
    own = (ix[..., 2:] - (H + 1)) % (M + 1)                                              # lt1, le1, lt2, le2
    wins = lt - own[..., 0] - own[..., 2]
    ties = (le - lt) - (own[..., 1] - own[..., 0]) - (own[..., 3] - own[..., 2]) + 1
    return (wins + 0.5 * ties) / (H - 2 * M + 1)


def set_boards(games, tables: dict):
    """`games` (a river `PublicGame` with every live hand, batched or not) with one board
    per subgame: the showdown tables of `board_tables` (leading batch `B`) and the position
    labels `HAND_CARDS` / `CARD_HANDS` replace the game's own, and the sorted terminal
    form is used (the shared dense matrices are dropped). Hand `h` of subgame `b` is then
    combo `tables["hands"][b, h]`; ranges are given by hand in that order."""
    if (games.num_boards != 1 or games.dealt or games.num_hands != RIVER_HANDS or games.depth_limited
            or games.player_lists):
        raise ValueError(f"boards as data need a river spot's public game with every live hand ({RIVER_HANDS}; "
                         f"build it with hands=\"all\"); got {games.num_boards} board(s) and {games.num_hands} hands")
    leaves = {k: jnp.asarray(tables[k], jnp.int32) for k in games.BOARD_TABLES}
    want = dict(sd_sorted=(1, RIVER_HANDS), sd_card_sorted=(1,) + CARD_HANDS.shape, sd_index=(1, RIVER_HANDS, 6))
    for k, x in leaves.items():
        if x.ndim != len(want[k]) + 1 or tuple(x.shape[1:]) != want[k]:
            raise ValueError(f"board table {k} has shape {x.shape}, expected [B, {', '.join(map(str, want[k]))}] "
                             "(cfrjax.games.poker.boards.board_tables)")
    return dataclasses.replace(games, **leaves, hand_cards=jnp.asarray(HAND_CARDS), card_hands=jnp.asarray(CARD_HANDS),
                               card_matrix=jnp.asarray(pt.card_matrix(HAND_CARDS, CARD_HANDS.shape[0], xp=np)),
                               dense_showdown=None, dense_compat=None, terminals="sorted")
