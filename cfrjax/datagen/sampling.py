"""The distribution of a dataset's river spots: boards, pots and ranges.

Shard `i` of a dataset draws, from `numpy.random.default_rng(SeedSequence(seed,
spawn_key=(i,)))` in this order:

1. **Boards**: per spot, 5 distinct cards, uniform over the deck (the first 5 of a
   uniformly random permutation, from one `rng.random((spots, 52))` call; one board
   per spot: a solve batch carries its boards' tables, `cfrjax.games.poker.boards`);
   with fixed cards (`DatagenConfig.board`, k of them), those and per spot the first
   5 - k of a random permutation of the other 52 - k cards.
2. **Tree group**: group `g` of `DatagenConfig.tree_groups` with probability (its grid
   pots) / (all grid pots).
3. **Pots**: per spot, uniform over the group's grid pots; with 2. each spot's pot is
   uniform over the whole grid.
4. **Ranges**: per spot, player 0's then player 1's, independently, by DeepStack's
   recursive range sampling (`recursive_ranges`).

Everything is NumPy on the host and depends only on the seed, the shard index and the
config, never on the worker, the device or what ran before.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses

import numpy as np

from cfrjax.datagen.dataset import DatagenConfig
from cfrjax.games.poker.boards import board_tables, host_workers, win_probability
from cfrjax.deck import NUM_CARDS
from cfrjax.games.poker.cards import NUM_COMBOS, parse_board

__all__ = ["ShardSpots", "hand_strength", "recursive_ranges", "sample_shard", "shard_rng"]


def shard_rng(seed: int, index: int) -> np.random.Generator:
    """The random generator of shard `index` of a dataset with seed `seed`."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(index),)))


def hand_strength(board) -> np.ndarray:
    """`[1326]` float64: for each combo not blocked by the 5-card `board`, the probability
    that it beats an opponent hand drawn uniformly from the combos that share no card
    with it or the board (a tie counts one half); NaN for blocked combos
    (`cfrjax.games.poker.boards.win_probability` of the board)."""
    b = parse_board(board)
    if b.size != 5:
        raise ValueError(f"hand_strength needs a river board (5 cards), got {b.size}")
    t = board_tables(b[None], workers=1)
    out = np.full(NUM_COMBOS, np.nan)
    out[t["hands"][0]] = win_probability(t)[0]
    return out


def recursive_ranges(strength: np.ndarray, size: int, rng: np.random.Generator, *,
                     workers: int | None = None) -> np.ndarray:
    """`[size, 1326]` float64 ranges drawn by DeepStack's recursive procedure.

    `R(S, p)` gives the hands `S` (sorted by `strength`, ascending) the probability `p`:
    a single hand gets `p`; otherwise `p1 ~ U(0, p)`, the weaker `floor(|S| / 2)` hands
    get `R(S1, p1)` and the others `R(S2, p - p1)`. Starting from every live hand (finite
    `strength`; ties in strength ordered by combo index) with `p = 1`, each range sums to
    1 and is zero on blocked combos. `strength` is `[1326]` (every range on one board) or
    `[size, 1326]` (range `i` on its own board, all with as many live hands). The `size`
    ranges are drawn together level by level (one `rng.random((size, splits))` call per
    level), so the stream, and the ranges, are fixed by the generator's state; the
    masses are then computed for chunks of ranges on `workers` threads (default
    `host_workers()`; NumPy releases the GIL in its array operations), the same numbers
    whatever the count.
    """
    live = np.isfinite(strength).sum(-1)
    n = int(np.max(live))
    if np.any(live != n):
        raise ValueError("every range's board must have as many live hands")
    order = np.argsort(np.where(np.isfinite(strength), strength, np.inf), axis=-1, kind="stable")[..., :n]
    # The segments of every level (they depend on n alone) and the level's draws, in order.
    levels = []
    lo, hi = np.zeros(1, np.int64), np.full(1, n, np.int64)
    while True:
        split = hi - lo > 1
        if not split.any():
            break
        mid = lo + (hi - lo) // 2
        draws = rng.random((size, int(split.sum())))
        parent = np.repeat(np.arange(lo.size), np.where(split, 2, 1))       # each new segment's parent
        first = np.concatenate([[True], parent[1:] != parent[:-1]])           # the weaker half (or unsplit)
        levels.append((split, parent, first, draws))
        lo = np.where(first, lo[parent], mid[parent])
        hi = np.where(first & split[parent], mid[parent], hi[parent])

    def masses(rows: slice) -> np.ndarray:
        mass = np.ones((rows.stop - rows.start, 1))
        for split, parent, first, draws in levels:
            u = np.ones((mass.shape[0], split.size))
            u[:, split] = draws[rows]
            m = mass[:, parent]
            part = m * u[:, parent]
            mass = np.where(first, part, m - part)
        return mass

    chunk = max(1, -(-size // (host_workers() if workers is None else max(1, workers))))
    rows = [slice(i, min(size, i + chunk)) for i in range(0, size, chunk)] or [slice(0, 0)]
    if len(rows) > 1:
        with concurrent.futures.ThreadPoolExecutor(len(rows)) as pool:
            mass = np.concatenate(list(pool.map(masses, rows)))
    else:
        mass = masses(rows[0])
    out = np.zeros((size, NUM_COMBOS))
    np.put_along_axis(out, np.broadcast_to(order, (size, n)), mass, 1)
    return out


@dataclasses.dataclass(frozen=True)
class ShardSpots:
    """The sampled spots of one shard (`spots` of them).

    Attributes:
      index: the shard.
      boards: `[spots, 5]` card ids, each board ascending.
      group: the tree group (index into `DatagenConfig.tree_groups`).
      pots: `[spots]` float64 chips.
      ranges: `[spots, 2, 1326]` float32, each row sums to 1 (to float32 rounding), zero
        on blocked combos: the spots' ranges exactly as solved and stored.
      tables: the boards' `cfrjax.games.poker.boards.board_tables` (hand lists and
        showdown tables, `[spots, ...]`), made while sampling (the ranges follow the
        hands' strength); not stored.
    """

    index: int
    boards: np.ndarray
    group: int
    pots: np.ndarray
    ranges: np.ndarray
    tables: dict = dataclasses.field(repr=False, compare=False, default=None)


def sample_shard(config: DatagenConfig, index: int) -> ShardSpots:
    """The spots of shard `index` (module docstring: the distribution and the draw order)."""
    if not 0 <= index < config.shards:
        raise ValueError(f"shard {index} is outside 0..{config.shards - 1}")
    rng = shard_rng(config.seed, index)
    B = config.spots
    fixed = np.asarray(() if config.board is None else config.board, np.int64)
    rest = np.setdiff1d(np.arange(NUM_CARDS), fixed)          # the whole deck when nothing is fixed
    drawn = rest[np.argsort(rng.random((B, rest.size)), axis=1)[:, :5 - fixed.size]]
    boards = np.sort(np.concatenate([np.broadcast_to(fixed, (B, fixed.size)), drawn], axis=1), axis=1)
    groups = config.tree_groups
    sizes = np.array([len(g) for g in groups], np.float64)
    group = int(rng.choice(len(groups), p=sizes / sizes.sum()))
    grid = np.asarray(config.pots)[list(groups[group])]
    pots = grid[rng.integers(0, grid.size, size=B)]
    tables = board_tables(boards)
    strength = np.full((B, NUM_COMBOS), np.nan)
    np.put_along_axis(strength, tables["hands"], win_probability(tables), 1)
    ranges = np.stack([recursive_ranges(strength, B, rng) for _ in (0, 1)], axis=1)
    return ShardSpots(index=int(index), boards=boards, group=group, pots=pots, ranges=ranges.astype(np.float32),
                      tables=tables)
