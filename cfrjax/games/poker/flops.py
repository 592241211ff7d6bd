"""The 22,100 flops under suit isomorphism: 1,755 classes, their weights, textures and subsets.

Two flops are isomorphic when a permutation of the four suits maps one's card set onto
the other's: every solve on one is a solve on the other with the suits renamed (ranges
written by rank, as spot files write them, are unchanged by the renaming). Each class is
named by its representative, the flop whose sorted card ids `(a, b, c)` are smallest
(lexicographically) among the class, and weighted by its size: the number of the 22,100
flops in it, so a sum over classes weighted by `weight` is a sum over every flop. There
are 299 classes of weight 4 (the monotone flops and the trips), 1,170 of weight 12 and
286 of weight 24 (rainbow flops of three ranks).

Textures (`flop_textures`) are what aggregated reports group by: the highest rank, the
suits (`"rainbow"`, `"two-tone"`, `"monotone"`), the pairing (`"unpaired"`, `"paired"`,
`"trips"`) and whether a straight is possible (three distinct ranks within five
consecutive ranks, the ace also low).

`stratified_flops(n)` picks `n` classes for a quick look at a tree across textures, the
same every time: the classes fall into five strata by suits x pairing (rainbow, two-tone
and monotone unpaired; rainbow and two-tone paired, trips counted as paired); each
stratum gets one flop and a share of the other `n - 5` proportional to its flops' total
weight (largest remainders, at most its number of classes), and within a stratum the
classes, ordered by highest rank (aces first) then by representative, are taken at
evenly spaced quantiles, so the high cards spread over each stratum.
"""

from __future__ import annotations

import itertools

import numpy as np

from cfrjax.deck import NUM_CARDS
from cfrjax.games.poker.cards import CARD_NAMES, RANKS, PokerSpecError, parse_cards
from cfrjax.games.poker.isomorphism import SUIT_PERMS, card_map

__all__ = ["FLOP_SETS", "SUIT_PERMUTATIONS", "canonical_flop", "flop_classes", "flop_members", "flop_set",
           "flop_str", "flop_textures", "permute_suits", "stratified_flops"]

#: `[24, 4]` every permutation of the suits `s, h, d, c` (suit `i` becomes `perm[i]`; the
#: order of `cfrjax.games.poker.isomorphism.SUIT_PERMS`).
SUIT_PERMUTATIONS = np.array(SUIT_PERMS, np.int64)
SUIT_PERMUTATIONS.setflags(write=False)
#: Named flop sets of `flop_set`: every class, and the stratified subset.
FLOP_SETS = ("all", "stratified")


def permute_suits(cards, perm) -> np.ndarray:
    """Cards `[...]` (ids `4 * rank + suit`) with suit `s` renamed `perm[s]`
    (`isomorphism.card_map`): `perm [4]` gives `[...]`, a stack of permutations `[P, 4]`
    gives `[P, ...]`."""
    cards, perm = np.asarray(cards, np.int64), np.asarray(perm, np.int64)
    maps = np.stack([card_map(p) for p in perm.reshape(-1, 4)])          # [P, 52]
    out = maps[:, cards]
    return out[0] if perm.ndim == 1 else out


def _keys(flops: np.ndarray) -> np.ndarray:
    """`[..., 3]` sorted card ids -> one int per flop, ordered as the sorted triples are."""
    return (flops[..., 0] * NUM_CARDS + flops[..., 1]) * NUM_CARDS + flops[..., 2]


def _canonical_keys(flops: np.ndarray) -> np.ndarray:
    """`[F, 3]` flops -> `[F]` the key of each one's class representative."""
    images = np.sort(permute_suits(flops, SUIT_PERMUTATIONS), axis=-1)       # [24, F, 3]
    return _keys(images).min(axis=0)


def _decode(keys: np.ndarray) -> np.ndarray:
    return np.stack([keys // NUM_CARDS ** 2, keys // NUM_CARDS % NUM_CARDS, keys % NUM_CARDS], axis=-1)


def _all_flops() -> np.ndarray:
    return np.array(list(itertools.combinations(range(NUM_CARDS), 3)), np.int64)


def flop_classes() -> tuple[np.ndarray, np.ndarray]:
    """Every class of flops: `(flops [1755, 3] int, weights [1755] int)`, each flop its
    class representative (sorted card ids, the smallest in the class), ordered by it; the
    weights (class sizes, 4, 12 or 24) sum to 22,100."""
    keys, weights = np.unique(_canonical_keys(_all_flops()), return_counts=True)
    return _decode(keys), weights.astype(np.int64)


def canonical_flop(flop) -> np.ndarray:
    """The representative `[3]` of a flop's class (cards as a string like `"Ks7h2c"` or ids)."""
    cards = _parse_flop(flop)
    return _decode(_canonical_keys(np.sort(cards)[None]))[0]


def flop_members(flop) -> np.ndarray:
    """`[weight, 3]` every flop of a flop's class, sorted card ids, in ascending order."""
    cards = _parse_flop(flop)
    images = np.sort(permute_suits(cards, SUIT_PERMUTATIONS), axis=-1)
    return _decode(np.unique(_keys(images)))


def flop_textures(flops) -> dict[str, np.ndarray]:
    """Textures of flops `[F, 3]` (module docstring): arrays `[F]` named `high` (rank
    character of the highest card), `suits`, `pairing`, `straight` (bool)."""
    flops = np.asarray(flops, np.int64).reshape(-1, 3)
    ranks, suits = flops // 4, flops % 4
    n_suits = np.array([len(set(s)) for s in suits.tolist()])
    n_ranks = np.array([len(set(r)) for r in ranks.tolist()])
    straight = np.zeros(len(flops), bool)
    for i, r in enumerate(ranks.tolist()):
        if len(set(r)) == 3:
            for rs in (r, [x if x != 12 else -1 for x in r]):      # the ace high, then low
                straight[i] |= max(rs) - min(rs) <= 4
    return {"high": np.array([RANKS[r] for r in ranks.max(axis=1)]),
            "suits": np.array(["", "monotone", "two-tone", "rainbow"])[n_suits],
            "pairing": np.array(["", "trips", "paired", "unpaired"])[n_ranks],
            "straight": straight}


def stratified_flops(n: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """`n` classes across textures (module docstring): `(flops [n, 3], weights [n])`, the
    weights the classes' sizes (a weighted mean over them estimates one over all flops)."""
    flops, weights = flop_classes()
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= len(flops):
        raise PokerSpecError(f"bad number of stratified flops {n!r}; allowed: 1 to {len(flops)}")
    tex = flop_textures(flops)
    high = flops.max(axis=1) // 4
    strata = np.char.add(tex["suits"], np.where(tex["pairing"] == "unpaired", "|unpaired", "|paired"))
    names, which = np.unique(strata, return_inverse=True)
    if n < len(names):
        raise PokerSpecError(f"bad number of stratified flops {n!r}; allowed: {len(names)} (one per stratum) to {len(flops)}")
    mass = np.bincount(which, weights=weights)
    sizes = np.bincount(which)
    share = 1 + mass / mass.sum() * (n - len(names))
    take = np.minimum(np.floor(share).astype(np.int64), sizes)
    for s in np.argsort(-(share - take), kind="stable"):          # largest remainders first
        if take.sum() >= n:
            break
        if take[s] < sizes[s]:
            take[s] += 1
    picked = []
    for s in range(len(names)):
        members = np.flatnonzero(which == s)
        members = members[np.lexsort((_keys(flops[members]), -high[members]))]
        picked += [members[int((i + 0.5) * len(members) / take[s])] for i in range(take[s])]
    picked = np.sort(np.array(picked, np.int64))
    return flops[picked], weights[picked]


def flop_set(which, n: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """Flops to solve a tree on: `"all"` (every class), `"stratified"` (`n` of them), or a
    list of flops (strings like `"Ks7h2c"` or a comma-separated string of them), each
    mapped to its class (weights from the classes; a class named twice is an error)."""
    if isinstance(which, str) and which in FLOP_SETS:
        return flop_classes() if which == "all" else stratified_flops(n)
    items = which.split(",") if isinstance(which, str) else list(which)
    if not items or any(isinstance(x, str) and not x.strip() for x in items):
        raise PokerSpecError(f"bad flops {which!r}; allowed: {', '.join(FLOP_SETS)} or a list of flops like Ks7h2c,8s6s2s")
    reps = np.array([canonical_flop(x) for x in items])
    keys = _keys(reps)
    if len(np.unique(keys)) != len(keys):
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        dup = flop_str(reps[first[np.flatnonzero(counts > 1)[0]]])
        raise PokerSpecError(f"bad flops {which!r}: two of them are the same flop up to suits ({dup})")
    all_flops, weights = flop_classes()
    return reps, weights[np.searchsorted(_keys(all_flops), keys)]


def flop_str(flop) -> str:
    """A flop as poker tools print it, highest card first: `"Kd7h2s"`."""
    return "".join(CARD_NAMES[c] for c in sorted(np.asarray(flop, np.int64).tolist(), reverse=True))


def _parse_flop(flop) -> np.ndarray:
    cards = parse_cards(flop, what="flop")
    if len(cards) != 3:
        raise PokerSpecError(f"bad flop {flop!r}: {len(cards)} cards; a flop has 3, e.g. Ks7h2c")
    return np.asarray(cards, np.int64)
