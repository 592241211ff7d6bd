"""GameSpec: the one tabular game representation every game source produces.

A `GameSpec` is a finite two-player zero-sum game tree stored as flat NumPy arrays,
one entry per history ("node"). Sources (OpenSpiel, native poker subgames, files) build
one; `cfrjax.compile` turns it into the static index arrays the solver runs on.

Node kinds: `PLAYER0 = 0`, `PLAYER1 = 1` (decision nodes, owned by that player),
`CHANCE = 2`, `TERMINAL = 3`.

Construction validates the tree (paper, appendix H step 1) and raises `SpecError`
naming the offending node or information set: one root and a tree, child actions
numbered 0..k-1 under every node, one owner and one action count per information set,
chance probabilities that are finite, non-negative and sum to one, finite payoffs, and
perfect recall.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

PLAYER0, PLAYER1, CHANCE, TERMINAL = 0, 1, 2, 3
KIND_NAMES = ("player 0", "player 1", "chance", "terminal")

#: Chance probabilities under one node must sum to one within this tolerance.
PROB_TOL = 1e-9


class SpecError(ValueError):
    """A game description that cannot be solved, with the reason and the place."""


@dataclasses.dataclass(frozen=True, eq=False)
class GameSpec:
    """A validated game tree.

    Attributes:
      parent: `[N]` int, parent node of each node, `-1` at the (single) root.
      action: `[N]` int, index of the edge into each node within its parent's action
        list (`-1` at the root).
      kind: `[N]` int8, `PLAYER0`, `PLAYER1`, `CHANCE` or `TERMINAL`.
      infoset: `[N]` int, information set of each decision node, `-1` elsewhere.
      chance_prob: `[N]` float64, probability of the edge into a node whose parent is a
        chance node; `1.0` for every other node.
      payoff: `[N]` float64, player 0's payoff at terminals, `0` elsewhere. Player 1
        receives the negation.
      infoset_player: `[I]` int8, owner of each information set.
      infoset_keys: `I` strings naming the information sets (unique).
      action_names: `I` tuples of action labels, one per action of the information set.
      name: a human-readable name of the game.
      payoff_offset: constant added back to player 0's value when reporting it (for
        constant-sum sources shifted to zero-sum).
      node_labels: optional callable `node -> str` used in error messages.
      source: free-form provenance (e.g. `{"openspiel": "kuhn_poker"}`), JSON-able.
    """

    parent: np.ndarray
    action: np.ndarray
    kind: np.ndarray
    infoset: np.ndarray
    chance_prob: np.ndarray
    payoff: np.ndarray
    infoset_player: np.ndarray
    infoset_keys: tuple[str, ...]
    action_names: tuple[tuple[str, ...], ...]
    name: str = "game"
    payoff_offset: float = 0.0
    source: dict = dataclasses.field(default_factory=dict)
    # Extra per-infoset action identifiers (e.g. OpenSpiel action ids), JSON-able.
    action_ids: tuple[tuple[int, ...], ...] | None = None

    def __post_init__(self):
        conv = {
            "parent": np.int64,
            "action": np.int64,
            "kind": np.int8,
            "infoset": np.int64,
            "chance_prob": np.float64,
            "payoff": np.float64,
            "infoset_player": np.int8,
        }
        for field, dtype in conv.items():
            object.__setattr__(self, field, np.ascontiguousarray(getattr(self, field), dtype=dtype))
        object.__setattr__(self, "infoset_keys", tuple(self.infoset_keys))
        object.__setattr__(self, "action_names", tuple(tuple(a) for a in self.action_names))
        if self.action_ids is not None:
            object.__setattr__(self, "action_ids", tuple(tuple(int(x) for x in a) for a in self.action_ids))
        _validate(self)

    @property
    def num_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def num_infosets(self) -> int:
        return len(self.infoset_keys)

    @property
    def infoset_num_actions(self) -> np.ndarray:
        """`[I]` number of actions of each information set."""
        return np.array([len(a) for a in self.action_names], dtype=np.int64)

    def describe_node(self, node: int) -> str:
        """A short description of a node for error messages: its path of action labels."""
        path = []
        h = int(node)
        while h >= 0 and len(path) < 64:
            p = int(self.parent[h])
            if p < 0:
                break
            a = int(self.action[h])
            if self.kind[p] in (PLAYER0, PLAYER1) and 0 <= self.infoset[p] < self.num_infosets:
                names = self.action_names[self.infoset[p]]
                path.append(names[a] if 0 <= a < len(names) else f"#{a}")
            else:
                path.append(f"chance#{a}")
            h = p
        return f"node {node} (path: {' / '.join(reversed(path)) or 'root'})"


def _fail(spec: GameSpec, node: int, what: str) -> None:
    raise SpecError(f"{spec.name}: {spec.describe_node(node)}: {what}")


def _validate(spec: GameSpec) -> None:
    n = spec.parent.shape[0]
    arrays = dict(action=spec.action, kind=spec.kind, infoset=spec.infoset,
                  chance_prob=spec.chance_prob, payoff=spec.payoff)
    if n == 0:
        raise SpecError(f"{spec.name}: the game has no nodes")
    for name, arr in arrays.items():
        if arr.shape != (n,):
            raise SpecError(f"{spec.name}: `{name}` has shape {arr.shape}, expected ({n},) like `parent`")
    num_inf = len(spec.infoset_keys)
    if spec.infoset_player.shape != (num_inf,) or len(spec.action_names) != num_inf:
        raise SpecError(
            f"{spec.name}: infoset tables disagree: {num_inf} keys, "
            f"{spec.infoset_player.shape[0]} owners, {len(spec.action_names)} action lists")
    if len(set(spec.infoset_keys)) != num_inf:
        seen = set()
        for k in spec.infoset_keys:
            if k in seen:
                raise SpecError(f"{spec.name}: information set key {k!r} appears twice in the infoset table")
            seen.add(k)
    if spec.action_ids is not None and [len(a) for a in spec.action_ids] != [len(a) for a in spec.action_names]:
        raise SpecError(f"{spec.name}: action_ids and action_names disagree in length")

    # Kinds and players.
    bad = np.flatnonzero((spec.kind < 0) | (spec.kind > 3))
    if bad.size:
        _fail(spec, bad[0], f"unknown node kind {int(spec.kind[bad[0]])}; allowed: 0, 1 (players), 2 (chance), 3 (terminal)")
    bad = np.flatnonzero((spec.infoset_player != 0) & (spec.infoset_player != 1))
    if bad.size:
        k = spec.infoset_keys[bad[0]]
        raise SpecError(f"{spec.name}: information set {k!r} is owned by player {int(spec.infoset_player[bad[0]])}; "
                        "cfrjax solves two-player games (players 0 and 1)")

    # Tree structure: one root, parents in range, every node reachable from the root.
    roots = np.flatnonzero(spec.parent == -1)
    if roots.size != 1:
        raise SpecError(f"{spec.name}: expected exactly one root (parent == -1), found {roots.size}")
    root = int(roots[0])
    bad = np.flatnonzero((spec.parent < -1) | (spec.parent >= n))
    if bad.size:
        raise SpecError(f"{spec.name}: node {bad[0]} has parent {int(spec.parent[bad[0]])}, outside 0..{n - 1}")
    nonroot = np.flatnonzero(spec.parent >= 0)
    par = spec.parent[nonroot]
    bad = nonroot[spec.kind[par] == TERMINAL]
    if bad.size:
        _fail(spec, int(spec.parent[bad[0]]), "a terminal node has children")
    levels = bfs_levels(spec.parent, root)
    order = np.concatenate(levels)
    if order.size != n:
        seen = np.zeros(n, bool)
        seen[order] = True
        lost = int(np.flatnonzero(~seen)[0])
        raise SpecError(f"{spec.name}: node {lost} is not reachable from the root (the parent links contain a cycle)")

    # Child actions are 0..k-1 under every node, without gaps or repeats.
    num_children = np.bincount(par, minlength=n)
    if np.any((num_children == 0) & (spec.kind != TERMINAL)):
        _fail(spec, int(np.flatnonzero((num_children == 0) & (spec.kind != TERMINAL))[0]), "a non-terminal node has no children")
    act = spec.action[nonroot]
    bad = nonroot[(act < 0) | (act >= num_children[par])]
    if bad.size:
        _fail(spec, int(spec.parent[bad[0]]),
              f"child {bad[0]} has action index {int(spec.action[bad[0]])}, expected 0..{num_children[spec.parent[bad[0]]] - 1}")
    key = par * (int(act.max(initial=0)) + 1) + act
    uniq, counts = np.unique(key, return_counts=True)
    if np.any(counts > 1):
        dup = uniq[counts > 1][0]
        p = int(dup // (int(act.max(initial=0)) + 1))
        _fail(spec, p, "two children share one action index")

    # Decision nodes: valid information set, owner and action count match the set.
    dec = np.flatnonzero(spec.kind <= PLAYER1)
    iset = spec.infoset[dec]
    bad = dec[(iset < 0) | (iset >= num_inf)]
    if bad.size:
        _fail(spec, bad[0], f"decision node has information set index {int(spec.infoset[bad[0]])}, outside 0..{num_inf - 1}")
    bad = dec[spec.infoset_player[iset] != spec.kind[dec]]
    if bad.size:
        h = int(bad[0])
        k = spec.infoset_keys[spec.infoset[h]]
        _fail(spec, h, f"information set {k!r} has two owners: player {int(spec.infoset_player[spec.infoset[h]])} "
                       f"in the infoset table and player {int(spec.kind[h])} at this node")
    num_act = np.array([len(a) for a in spec.action_names], dtype=np.int64)
    bad = dec[num_children[dec] != num_act[iset]]
    if bad.size:
        h = int(bad[0])
        k = spec.infoset_keys[spec.infoset[h]]
        _fail(spec, h, f"information set {k!r} has {num_act[spec.infoset[h]]} actions but this member node has "
                       f"{num_children[h]} children: one action list per information set")
    used = np.zeros(num_inf, bool)
    used[iset] = True
    if not used.all():
        k = spec.infoset_keys[int(np.flatnonzero(~used)[0])]
        raise SpecError(f"{spec.name}: information set {k!r} has no member node")

    # Payoffs and probabilities.
    bad = np.flatnonzero(~np.isfinite(spec.payoff))
    if bad.size:
        _fail(spec, bad[0], f"payoff is {spec.payoff[bad[0]]} (payoffs must be finite numbers)")
    bad = np.flatnonzero((spec.kind != TERMINAL) & (spec.payoff != 0))
    if bad.size:
        _fail(spec, bad[0], "a non-terminal node carries a payoff; only terminals pay")
    chance_child = nonroot[spec.kind[par] == CHANCE]
    probs = spec.chance_prob[chance_child]
    bad = chance_child[~np.isfinite(probs) | (probs < 0)]
    if bad.size:
        _fail(spec, int(spec.parent[bad[0]]), f"chance probability {spec.chance_prob[bad[0]]} of child {bad[0]} is not a finite non-negative number")
    sums = np.bincount(spec.parent[chance_child], weights=probs, minlength=n)
    chance_nodes = np.flatnonzero(spec.kind == CHANCE)
    bad = chance_nodes[np.abs(sums[chance_nodes] - 1.0) > PROB_TOL]
    if bad.size:
        _fail(spec, bad[0], f"chance probabilities sum to {float(sums[bad[0]])!r}, not 1")
    other = nonroot[spec.kind[par] != CHANCE]
    if np.any(spec.chance_prob[other] != 1.0) or spec.chance_prob[root] != 1.0:
        bad = np.concatenate([other[spec.chance_prob[other] != 1.0], [root] if spec.chance_prob[root] != 1.0 else []]).astype(int)
        _fail(spec, bad[0], "a node below a decision node (or the root) has chance_prob != 1")

    _check_perfect_recall(spec, levels)


def bfs_levels(parent: np.ndarray, root: int) -> list[np.ndarray]:
    """Nodes level by level from `root` (vectorized), following parent links.

    Returns a list whose entry `d` holds the nodes at depth `d`, children grouped by
    parent in parent order and, under one parent, in node order.
    """
    n = parent.shape[0]
    nonroot = np.flatnonzero(parent >= 0)
    by_parent = nonroot[np.argsort(parent[nonroot], kind="stable")]
    start = np.searchsorted(parent[by_parent], np.arange(n + 1))
    levels = [np.array([root], dtype=np.int64)]
    total = 1
    while total <= n:
        frontier = levels[-1]
        lo, hi = start[frontier], start[frontier + 1]
        cnt = hi - lo
        m = int(cnt.sum())
        if m == 0:
            break
        idx = np.repeat(lo - np.concatenate([[0], np.cumsum(cnt)[:-1]]), cnt) + np.arange(m)
        levels.append(by_parent[idx])
        total += m
    return levels


def _check_perfect_recall(spec: GameSpec, levels: list[np.ndarray]) -> None:
    """Each information set's members share the owner's previous (infoset, action) pair.

    By induction over the owner's decisions this is equivalent to every member having
    the same sequence of own information sets and actions (perfect recall).
    """
    n = spec.num_nodes
    max_a = max((len(a) for a in spec.action_names), default=1)
    # last[p, h]: player p's last decision (infoset * max_a + action) strictly above h, or -1.
    last = np.full((2, n), -1, dtype=np.int64)
    for level in levels[1:]:
        par = spec.parent[level]
        move = spec.infoset[par] * max_a + spec.action[level]
        for p in (0, 1):
            last[p, level] = np.where(spec.kind[par] == p, move, last[p, par])
    dec = np.flatnonzero(spec.kind <= PLAYER1)
    prev = last[spec.kind[dec], dec]
    iset = spec.infoset[dec]
    srt = np.lexsort((prev, iset))
    iset_s, prev_s = iset[srt], prev[srt]
    clash = np.flatnonzero((iset_s[1:] == iset_s[:-1]) & (prev_s[1:] != prev_s[:-1]))
    if clash.size:
        a, b = dec[srt[clash[0]]], dec[srt[clash[0] + 1]]
        k = spec.infoset_keys[spec.infoset[a]]
        raise SpecError(
            f"{spec.name}: information set {k!r} violates perfect recall: its members "
            f"{spec.describe_node(a)} and {spec.describe_node(b)} differ in the owner's own earlier "
            "information sets or actions")


def zero_sum_payoffs(returns: np.ndarray, where: Sequence[str] | None = None, tol: float = 1e-9) -> tuple[np.ndarray, float]:
    """Check `[Z, 2]` terminal returns are constant-sum; return player 0's zero-sum payoff.

    A constant-sum game with `u0 + u1 = c` is solved as the zero-sum game `u0 - c/2`;
    the offset `c/2` is returned so reported values stay in the source's units.

    Raises:
      SpecError: the returns are not finite or their sum is not constant (general-sum).
    """
    returns = np.asarray(returns, np.float64)
    if returns.ndim != 2 or returns.shape[1] != 2:
        raise SpecError(f"terminal returns have shape {returns.shape}; cfrjax solves two-player games")
    bad = np.flatnonzero(~np.isfinite(returns).all(axis=1))
    if bad.size:
        label = where[bad[0]] if where is not None else f"terminal {bad[0]}"
        raise SpecError(f"{label}: returns {returns[bad[0]].tolist()} are not finite")
    if returns.shape[0] == 0:
        return returns[:, 0], 0.0
    total = returns.sum(axis=1)
    c = float(total[0])
    bad = np.flatnonzero(np.abs(total - c) > tol * max(1.0, abs(c)))
    if bad.size:
        label = where[bad[0]] if where is not None else f"terminal {bad[0]}"
        raise SpecError(
            f"the game is not zero-sum (nor constant-sum): {label} pays {returns[bad[0]].tolist()} "
            f"(sum {total[bad[0]]}), while another terminal's payoffs sum to {c}")
    return returns[:, 0] - c / 2.0, c / 2.0
