"""The distribution of a dataset's river spots: boards, pots and ranges.

Shard `i` of a dataset draws, from `numpy.random.default_rng(SeedSequence(seed,
spawn_key=(i,)))` in this order:

1. **Board**: 5 distinct cards, uniform over the deck (one board per shard: the spots
   of a solve batch share the board's hand list and strength tables); with fixed cards
   (`DatagenConfig.board`), those and the others uniform over the rest of the deck.
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

import dataclasses

import numpy as np

from cfrjax.datagen.config import DatagenConfig
from cfrjax.games.poker.cards import COMBOS, NUM_COMBOS, combos_blocked_by, parse_board
from cfrjax.games.poker.evaluator import evaluate

__all__ = ["ShardSpots", "hand_strength", "recursive_ranges", "sample_shard", "shard_rng"]


def shard_rng(seed: int, index: int) -> np.random.Generator:
    """The random generator of shard `index` of a dataset with seed `seed`."""
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(index),)))


def hand_strength(board) -> np.ndarray:
    """`[1326]` float64: for each combo not blocked by the 5-card `board`, the probability
    that it beats an opponent hand drawn uniformly from the combos that share no card
    with it or the board (a tie counts one half); NaN for blocked combos.

    Counted over all live hands, less those holding one of the hand's two cards (each
    card's hands compared directly): `O(H log H + H M)` for `H` live hands, `M` per card."""
    b = parse_board(board)
    if b.size != 5:
        raise ValueError(f"hand_strength needs a river board (5 cards), got {b.size}")
    live = np.flatnonzero(~combos_blocked_by(b))
    cards = COMBOS[live]                                                               # [H, 2]
    s = evaluate(np.concatenate([np.broadcast_to(b, (live.size, 5)), cards], axis=1)).astype(np.float64)
    ordered = np.sort(s)
    below = np.searchsorted(ordered, s, "left")                                        # incl. conflicting hands
    equal = np.searchsorted(ordered, s, "right") - below                               # incl. the hand itself
    holding = [np.flatnonzero((cards == c).any(1)) for c in range(52)]
    M = max(len(x) for x in holding)
    table = np.full((52, M), live.size)
    for c, x in enumerate(holding):
        table[c, :len(x)] = x
    s_pad = np.append(s, np.nan)
    same = [s_pad[table[cards[:, k]]] for k in (0, 1)]                                 # [H, M] each
    count = [np.isfinite(x).sum(1) for x in same]                                      # hands holding each card
    # A hand's conflicts are the hands holding its first or its second card; only itself holds both.
    wins = below - sum((x < s[:, None]).sum(1) for x in same)
    ties = equal - sum((x == s[:, None]).sum(1) for x in same) + 1
    total = live.size - (count[0] + count[1] - 1)
    out = np.full(NUM_COMBOS, np.nan)
    out[live] = (wins + 0.5 * ties) / total
    return out


def recursive_ranges(strength: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """`[size, 1326]` float64 ranges drawn by DeepStack's recursive procedure.

    `R(S, p)` gives the hands `S` (sorted by `strength`, ascending) the probability `p`:
    a single hand gets `p`; otherwise `p1 ~ U(0, p)`, the weaker `floor(|S| / 2)` hands
    get `R(S1, p1)` and the others `R(S2, p - p1)`. Starting from every live hand (finite
    `strength`; ties in strength ordered by combo index) with `p = 1`, each range sums to
    1 and is zero on blocked combos. The `size` ranges are drawn together level by level
    (one `rng.random((size, splits))` call per level), so the stream, and the ranges, are
    fixed by the generator's state.
    """
    live = np.flatnonzero(np.isfinite(strength))
    order = live[np.argsort(strength[live], kind="stable")]
    lo, hi = np.zeros(1, np.int64), np.full(1, order.size, np.int64)
    mass = np.ones((size, 1))
    while True:
        split = hi - lo > 1
        if not split.any():
            break
        mid = lo + (hi - lo) // 2
        u = np.ones((size, lo.size))
        u[:, split] = rng.random((size, int(split.sum())))
        parent = np.repeat(np.arange(lo.size), np.where(split, 2, 1))       # each new segment's parent
        first = np.concatenate([[True], parent[1:] != parent[:-1]])           # the weaker half (or unsplit)
        new_lo = np.where(first, lo[parent], mid[parent])
        new_hi = np.where(first & split[parent], mid[parent], hi[parent])
        m = mass[:, parent]
        part = m * u[:, parent]
        mass = np.where(first, part, m - part)
        lo, hi = new_lo, new_hi
    out = np.zeros((size, NUM_COMBOS))
    out[:, order] = mass
    return out


@dataclasses.dataclass(frozen=True)
class ShardSpots:
    """The sampled spots of one shard (`spots` of them).

    Attributes:
      index: the shard.
      board: `[5]` card ids, ascending.
      group: the tree group (index into `DatagenConfig.tree_groups`).
      pots: `[spots]` float64 chips.
      ranges: `[spots, 2, 1326]` float32, each row sums to 1 (to float32 rounding), zero
        on blocked combos: the spots' ranges exactly as solved and stored.
    """

    index: int
    board: np.ndarray
    group: int
    pots: np.ndarray
    ranges: np.ndarray


def sample_shard(config: DatagenConfig, index: int) -> ShardSpots:
    """The spots of shard `index` (module docstring: the distribution and the draw order)."""
    if not 0 <= index < config.shards:
        raise ValueError(f"shard {index} is outside 0..{config.shards - 1}")
    rng = shard_rng(config.seed, index)
    if config.board is None:
        board = np.sort(rng.choice(52, size=5, replace=False))
    else:
        fixed = np.asarray(config.board, np.int64)
        rest = rng.choice(np.setdiff1d(np.arange(52), fixed), size=5 - fixed.size, replace=False)
        board = np.sort(np.concatenate([fixed, rest]))
    groups = config.tree_groups
    sizes = np.array([len(g) for g in groups], np.float64)
    group = int(rng.choice(len(groups), p=sizes / sizes.sum()))
    grid = np.asarray(config.pots)[list(groups[group])]
    pots = grid[rng.integers(0, grid.size, size=config.spots)]
    strength = hand_strength(board)
    ranges = np.stack([recursive_ranges(strength, config.spots, rng) for _ in (0, 1)], axis=1)
    return ShardSpots(index=int(index), board=board, group=group, pots=pots, ranges=ranges.astype(np.float32))
