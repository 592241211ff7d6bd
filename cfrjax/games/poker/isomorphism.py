"""Suit isomorphism: the turn and river cards of a spot whose suits are interchangeable.

A suit permutation `g` (one of the 24 of `s, h, d, c`) is a **symmetry** of a spot when it
maps the board's card set to itself and both players' range weights are invariant under it
(`w_p[g(h)] == w_p[h]` for every combo `h`): then the subgame below turn (or river) card
`g(c)` is the subgame below `c` with every suit renamed, and player p's value for hand `h`
there is its value for hand `g^-1(h)` below `c`. The symmetries form a group (`group`);
its orbits on the undealt cards are the card **classes** (`classes`): one representative
(the lowest card id) is solved, and a chance node sums over a class's members `c' = g(c)`
the representative's value vector gathered by the hand permutation of `g` (`hand_perms`).
Reach passes down to the representative unchanged (it is invariant under the group too,
as long as the strategies above are: CFR keeps a symmetric profile symmetric).

On a flop the turn cards are merged under the board's group, and the river cards below a
representative turn card `t` under the stabiliser of `t` (the symmetries that fix `t`;
trivial when `t`'s suit is unique). `docs/design/isomorphism.md` says what breaks the
symmetry and what is refused.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np

from cfrjax.deck import NUM_CARDS
from cfrjax.games.poker.cards import CARD_NAMES, COMBO_INDEX, COMBOS, NUM_COMBOS

__all__ = ["Merge", "card_map", "check_lock", "check_ranges", "classes", "combo_map", "group", "hand_perms",
           "merge_of", "node_members", "symmetric_weights"]

#: The 24 permutations of the four suits, `perm[suit] -> suit`, the identity first.
SUIT_PERMS = tuple(itertools.permutations(range(4)))


def card_map(perm) -> np.ndarray:
    """`[52]` the card each card becomes under the suit permutation `perm` (card `4 r + s`
    -> `4 r + perm[s]`)."""
    c = np.arange(NUM_CARDS)
    return 4 * (c // 4) + np.asarray(perm)[c % 4]


def combo_map(perm) -> np.ndarray:
    """`[1326]` the combo each combo becomes under the suit permutation `perm`."""
    m = card_map(perm)
    return COMBO_INDEX[m[COMBOS[:, 0]], m[COMBOS[:, 1]]]


def symmetric_weights(weights, perm) -> bool:
    """Whether `weights [..., 1326]` (combo order) are invariant under `perm`:
    `w[g(h)] == w[h]` for every combo."""
    w = np.asarray(weights)
    return bool(np.array_equal(w[..., combo_map(perm)], w))


def group(board, weights=None) -> tuple:
    """The suit permutations (`SUIT_PERMS` entries, the identity first) that map the card
    set `board` to itself and leave `weights [2, 1326]` (both players' ranges; `None`: not
    checked) unchanged: the spot's symmetry group."""
    board = set(int(c) for c in np.asarray(board).ravel())
    out = []
    for perm in SUIT_PERMS:
        if set(card_map(perm)[list(board)].tolist()) != board:
            continue
        if weights is not None and not symmetric_weights(weights, perm):
            continue
        out.append(perm)
    return tuple(out)


def stabiliser(perms, card: int) -> tuple:
    """The permutations of `perms` that fix `card`."""
    return tuple(p for p in perms if card_map(p)[card] == card)


def classes(cards, perms) -> list:
    """The orbits of `cards` (ascending ids) under the group `perms`: a list, ascending by
    representative, of `(rep, [(member, perm), ...])` with the representative (the lowest
    card id of its orbit) first as `(rep, identity)`, each member with the first
    permutation of `perms` that maps `rep` to it."""
    cards = sorted(int(c) for c in cards)
    maps = [card_map(p) for p in perms]
    seen, out = set(), []
    for c in cards:
        if c in seen:
            continue
        members = {}
        for p, m in zip(perms, maps):
            members.setdefault(int(m[c]), p)
        seen.update(members)
        out.append((c, sorted(members.items())))
    return out


def compose(g, u) -> tuple:
    """The suit permutation `g . u` (`u` first)."""
    return tuple(int(g[u[s]]) for s in range(4))


def hand_perms(perms, hands) -> np.ndarray:
    """`[len(perms), H]` int: row `k` holds, for each hand `h` of the list `hands [H]`
    (combo ids), the position in `hands` of `g_k^-1(h)`: the gather that turns the
    representative's value vector into the value vector of its member `g_k(rep)`.

    Raises:
      ValueError: the list is not closed under a permutation (a hand's image is not in it).
    """
    hands = np.asarray(hands)
    at = np.full(NUM_COMBOS, -1, np.int64)
    at[hands] = np.arange(hands.size)
    rows = []
    for p in perms:
        inv = np.argsort(np.asarray(p))        # g^-1 on suits
        img = at[combo_map(inv)[hands]]
        if (img < 0).any():
            raise ValueError("the hand list is not closed under the suit permutation")
        rows.append(img)
    return np.stack(rows) if rows else np.zeros((0, hands.size), np.int64)


@dataclasses.dataclass(frozen=True, eq=False)
class Merge:
    """The card classes of a spot (`merge_of`).

    Attributes:
      perms: the symmetry group (`SUIT_PERMS` entries, identity first); `K` its size.
      turns: a flop spot's `(rep, [(member, perm), ...])` turn classes (`classes`), else `()`.
      rivers: per representative turn card (a flop), or one entry (a turn spot), the river
        classes: a tuple of `classes` lists.
    """

    perms: tuple
    turns: tuple
    rivers: tuple

    @property
    def index(self) -> dict:
        return {p: k for k, p in enumerate(self.perms)}

    def turn_cards(self) -> np.ndarray:
        """`[G]` the representative turn cards (a flop)."""
        return np.array([c for c, _ in self.turns], np.int64)

    def river_cards(self) -> list:
        """Per turn card (or the one turn board) `[R_g]` the representative river cards."""
        return [np.array([c for c, _ in cl], np.int64) for cl in self.rivers]

    def members(self, cls, width: int) -> np.ndarray:
        """`[len(cls), width]` each class's members' permutation indices into `perms`,
        padded with `K` (no member)."""
        out = np.full((len(cls), width), len(self.perms), np.int64)
        for i, (_, ms) in enumerate(cls):
            out[i, :len(ms)] = [self.index[p] for _, p in ms]
        return out

    @functools.cached_property
    def _lookup(self) -> tuple:
        """`(first, rivers)`: card -> `(rep, perm)` of a flop's turn card classes (empty on
        a turn spot), and per representative turn card (`None` on a turn spot) the same of
        its river card classes."""
        first = {m: (rep, p) for rep, ms in self.turns for m, p in ms}
        rivers = {}
        for k, cl in enumerate(self.rivers):
            above = self.turns[k][0] if self.turns else None
            rivers[above] = {m: (rep, p) for rep, ms in cl for m, p in ms}
        return first, rivers

    def canonical(self, cards) -> tuple:
        """`(rep_cards, perm)`: the dealt cards `cards` (a flop's `(turn,)` or `(turn,
        river)`, a turn spot's `(river,)`) as the representative cards solved, and the
        suit permutation `g` with `g(rep_cards) == cards` (a hand `h` there is hand
        `g^-1(h)` below the representatives)."""
        first, rivers = self._lookup
        ident = self.perms[0]
        cards = [int(c) for c in cards]
        if not cards:
            return (), ident
        if not self.turns:   # a turn spot: the river card
            rep, g = rivers[None][cards[0]]
            return (rep,), g
        t, g = first[cards[0]]
        if len(cards) == 1:
            return (t,), g
        inv = card_map(np.argsort(np.asarray(g)))
        r, u = rivers[t][int(inv[cards[1]])]
        return (t, r), compose(g, u)

    def representative(self, hand: str, code: str) -> tuple:
        """`(hand, code)` below the representative cards where `code` deals a member card:
        its cards (the `/card/` segments) replaced by the representatives', the hand's
        suits by the inverse permutation; as given where nothing is dealt or a name does
        not parse (the key lookup then fails as for any unknown key)."""
        from cfrjax.games.poker.cards import card_id, combo_str, parse_combo

        segs = code.split("/")
        if len(segs) < 3:
            return hand, code
        try:
            combo = parse_combo(hand)
            reps, g = self.canonical([card_id(c) for c in segs[1::2]])
        except Exception:   # noqa: BLE001 (not a card or hand name, or a card not dealt there: no such key)
            return hand, code
        segs[1::2] = [CARD_NAMES[c] for c in reps]
        inv = card_map(np.argsort(np.asarray(g)))
        a, b = COMBOS[combo]
        return combo_str(int(COMBO_INDEX[inv[a], inv[b]])), "/".join(segs)

    def node_of(self, code: str) -> tuple:
        """`(code, k)`: the representative node of the node `code` (its `/card/` segments
        replaced by the representatives') and the index `k` into `perms` of the permutation
        that maps the representative onto it (0: the node itself); `code` unchanged, 0,
        where it deals nothing or a card does not parse."""
        from cfrjax.games.poker.cards import card_id

        segs = code.split("/")
        if len(segs) < 3:
            return code, 0
        try:
            reps, g = self.canonical([card_id(c) for c in segs[1::2]])
        except Exception:   # noqa: BLE001 (not a card, or a card not dealt there: no such node)
            return code, 0
        segs[1::2] = [CARD_NAMES[c] for c in reps]
        return "/".join(segs), self.index[g]

    def node_members(self, code: str, dealt) -> list:
        """The member nodes of representative node `code` (module function `node_members`):
        what strategy tables list for it (`cfrjax.public.tables`)."""
        return node_members(self, code, dealt)

    def check_lock(self, labels, strategies) -> None:
        """Refuse locks that break the symmetry (module function `check_lock`), for
        `cfrjax.lock` on a merged game."""
        check_lock(labels, strategies)

    def width(self) -> int:
        """The most members of one class (turn or river)."""
        sizes = [len(ms) for cl in (self.turns,) + tuple(self.rivers) for _, ms in cl]
        return max(sizes, default=1)


def merge_of(board, weights) -> Merge | None:
    """The card classes of a flop or turn spot on `board` with ranges `weights [2, 1326]`,
    or `None` where nothing merges (a river spot, a trivial group)."""
    board = np.asarray(board)
    if board.size not in (3, 4):
        return None
    perms = group(board, weights)
    if len(perms) < 2:
        return None
    rest = np.setdiff1d(np.arange(NUM_CARDS), board)
    if board.size == 4:
        return Merge(perms, (), (tuple(classes(rest, perms)),))
    turns = classes(rest, perms)
    rivers = tuple(tuple(classes(np.setdiff1d(rest, [t]), stabiliser(perms, t))) for t, _ in turns)
    return Merge(perms, tuple(turns), rivers)


def rename_hand(perm):
    """`name -> name` of a hand under the suit permutation `perm` (either card order in)."""
    from cfrjax.games.poker.cards import combo_str, parse_combo

    m = card_map(perm)

    def rename(name: str) -> str:
        a, b = COMBOS[parse_combo(name)]
        return combo_str(int(COMBO_INDEX[m[a], m[b]]))
    return rename


def node_members(merge: Merge, code: str, dealt) -> list:
    """`[(code, rename), ...]` the member nodes of the representative node `code` (dealt
    cards `dealt`, as `PublicLabels.node_dealt`): the distinct images of its cards under
    the group, ascending (the representative first), each with its hand renaming
    (`rename_hand` of the permutation that maps the representative there)."""
    if not dealt:
        return [(code, lambda name: name)]
    seen = {}
    for g in merge.perms:
        m = card_map(g)
        seen.setdefault(tuple(int(m[c]) for c in dealt), g)
    out = []
    for img, g in sorted(seen.items()):
        segs = code.split("/")
        segs[1::2] = [CARD_NAMES[c] for c in img]
        out.append(("/".join(segs), rename_hand(g)))
    return out


def check_ranges(merge: Merge, weights, name: str) -> None:
    """Refuse (one line) ranges `weights [2, 1326]` that a symmetry of the merged game
    `name` does not keep (`set_root_ranges`): the merged cards would then differ."""
    for perm in merge.perms[1:]:
        if not symmetric_weights(weights, perm):
            raise ValueError(f"{name}: the ranges give suit-isomorphic hands different weights (suits "
                             f"{''.join('shdc'[s] for s in range(4))} -> {''.join('shdc'[s] for s in perm)}), which "
                             "this suit-merged game cannot hold; build it with isomorphism = false (spec key, "
                             "load_game(..., isomorphism=False), --isomorphism off) to set them")


def check_lock(labels, strategies) -> None:
    """Refuse (one line) locks `strategies` (key -> probabilities) on a suit-merged game
    (`labels.merge`) that break its symmetry: a key naming a member card's node (not the
    representative solved), or a lock whose hands' suit-permuted images (under the
    permutations that fix the node's cards) are not locked to the same probabilities."""
    merge = labels.merge
    for key, probs in strategies.items():
        parts = str(key).split("|", 2)
        if len(parts) != 3:
            continue   # the lookup names the bad key
        if labels.representative(parts[1], parts[2])[1] != parts[2]:
            raise ValueError(f"lock {key!r}: a node below a suit-merged card (solved as its representative's); "
                             "locking one suit's node breaks the symmetry: build the game with isomorphism = false "
                             "to lock it")
        node = labels._code_index.get(parts[2])
        dealt = labels.node_dealt[node] if node is not None else ()
        for g in merge.perms[1:]:
            m = card_map(g)
            if any(int(m[c]) != int(c) for c in dealt):
                continue
            image = f"{parts[0]}|{rename_hand(g)(parts[1])}|{parts[2]}"
            other = next((v for k, v in strategies.items() if _same_key(k, image)), None)
            if other is None or not np.allclose(np.asarray(other, np.float64), np.asarray(probs, np.float64),
                                                rtol=0, atol=1e-12):
                raise ValueError(f"lock {key!r}: its suit-isomorphic image {image!r} is not locked the same way, "
                                 "which breaks the suit-merged game's symmetry; lock both alike or build the game "
                                 "with isomorphism = false")


def _same_key(a: str, b: str) -> bool:
    """Whether two information-set keys name the same set (the hand's cards in either order)."""
    from cfrjax.games.poker.cards import canonical_key

    try:
        return canonical_key(a) == canonical_key(b)
    except Exception:   # noqa: BLE001 (a malformed key names no set)
        return False
