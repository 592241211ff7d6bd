"""Hand-built test games as `GameSpec`s: random chance-heavy imperfect-information games
and Kuhn poker (so tests do not need OpenSpiel for a tiny game).

Random games are two-player zero-sum with perfect recall by construction: every player
keeps one observation sequence (own private chance outcomes, "?" for the opponent's,
public chance outcomes, and every action of both players) and its information set key is
"<player>:<observations joined by '.'>". Chance acts at several levels (two private
deals, then a public or one-sided private event between betting rounds) with random
non-uniform probabilities; infosets have 2-3 actions and some actions end the game early.
"""

from __future__ import annotations

import numpy as np

from cfrjax.spec import CHANCE, PLAYER0, PLAYER1, TERMINAL, GameSpec

__all__ = ["random_spec", "kuhn_spec"]


class _Builder:
    """Accumulates nodes in depth-first order and interns information set keys."""

    def __init__(self):
        self.parent, self.action, self.kind, self.infoset = [], [], [], []
        self.prob, self.payoff = [], []
        self.keys: dict[str, int] = {}
        self.owner: list[int] = []
        self.names: list[tuple[str, ...]] = []

    def node(self, parent: int, action: int, kind: int, prob: float = 1.0, payoff: float = 0.0,
             key: str | None = None, names: tuple[str, ...] = ()) -> int:
        h = len(self.parent)
        iset = -1
        if key is not None:
            if key not in self.keys:
                self.keys[key] = len(self.owner)
                self.owner.append(kind)
                self.names.append(tuple(names))
            iset = self.keys[key]
        self.parent.append(parent)
        self.action.append(action)
        self.kind.append(kind)
        self.infoset.append(iset)
        self.prob.append(prob)
        self.payoff.append(payoff)
        return h

    def spec(self, name: str, rng: np.random.Generator | None = None, source: dict | None = None) -> GameSpec:
        """The GameSpec; with `rng`, node ids and infoset ids are randomly permuted."""
        n, m = len(self.parent), len(self.owner)
        parent = np.array(self.parent, np.int64)
        infoset = np.array(self.infoset, np.int64)
        keys = list(self.keys)  # insertion order == infoset id order
        owner, names = list(self.owner), list(self.names)
        node_perm = np.arange(n) if rng is None else rng.permutation(n)  # old -> new
        iset_perm = np.arange(m) if rng is None else rng.permutation(m)
        inv_node = np.argsort(node_perm)  # new -> old
        inv_iset = np.argsort(iset_perm)

        def by_node(a):
            return np.asarray(a)[inv_node]

        new_parent = np.where(parent >= 0, node_perm[np.maximum(parent, 0)], -1)
        new_infoset = np.where(infoset >= 0, iset_perm[np.maximum(infoset, 0)], -1)
        return GameSpec(
            parent=by_node(new_parent),
            action=by_node(self.action),
            kind=by_node(self.kind),
            infoset=by_node(new_infoset),
            chance_prob=by_node(self.prob),
            payoff=by_node(self.payoff),
            infoset_player=np.array([owner[j] for j in inv_iset], np.int8),
            infoset_keys=tuple(keys[j] for j in inv_iset),
            action_names=tuple(names[j] for j in inv_iset),
            name=name,
            source=source or {},
        )


def random_spec(seed: int, depth: int = 2, deal_sizes=(2, 3), chance_sizes=(2, 3),
                action_counts=(2, 3), end_prob: float = 0.25, zero_prob: bool = False,
                permute: bool = True) -> GameSpec:
    """A random two-player zero-sum perfect-recall game, deterministic in `seed`.

    Stages: chance deals a private signal to player 0, then one to player 1 (hidden from
    the other); then `depth` betting rounds (both players act once, in a random order per
    round) separated by chance events that are public or seen by one player only.

    Args:
      seed: RNG seed.
      depth: number of betting rounds (node count grows roughly like 25**depth).
      deal_sizes / chance_sizes / action_counts: choices for the number of outcomes of
        the deals, of the mid-game chance events and of actions per infoset.
      end_prob: probability that an action (fixed per infoset) ends the game at once.
      zero_prob: give one outcome probability 0 at about a quarter of the chance nodes.
      permute: shuffle node and infoset ids (the root is then usually not node 0 and
        siblings are not contiguous), to exercise code that must not assume an order.
    """
    rng = np.random.default_rng(seed)
    # The stage script is shared by all histories: ("chance", who_sees, size) or ("move", player).
    script: list[tuple] = [("chance", (0,), int(rng.choice(deal_sizes))),
                           ("chance", (1,), int(rng.choice(deal_sizes)))]
    for r in range(depth):
        if r > 0:
            sees = [(0, 1), (0,), (1,)][int(rng.integers(3))]
            script.append(("chance", sees, int(rng.choice(chance_sizes))))
        first = int(rng.integers(2))
        script += [("move", first), ("move", 1 - first)]

    b = _Builder()
    layout: dict[str, tuple[int, list[bool]]] = {}  # infoset key -> (num actions, ends game?)

    def build(parent: int, action: int, prob: float, stage: int, obs: tuple[tuple[str, ...], ...]) -> None:
        if stage == len(script):
            b.node(parent, action, TERMINAL, prob, payoff=round(float(rng.uniform(-4, 4)), 3))
            return
        step = script[stage]
        if step[0] == "chance":
            _, sees, size = step
            probs = rng.dirichlet(np.ones(size))
            if zero_prob and rng.random() < 0.25:
                probs[int(rng.integers(size))] = 0.0
                probs /= probs.sum()
            h = b.node(parent, action, CHANCE, prob)
            tag = "d" if stage < 2 else ("c" if len(sees) == 2 else "s")
            for o in range(size):
                seen = tuple(ob + ((f"{tag}{o}",) if p in sees else ("?",)) for p, ob in enumerate(obs))
                build(h, o, float(probs[o]), stage + 1, seen)
            return
        p = step[1]
        key = f"{p}:" + ".".join(obs[p])
        if key not in layout:
            k = int(rng.choice(action_counts))
            ends = [bool(rng.random() < end_prob) for _ in range(k)]
            layout[key] = (k, ends)
        k, ends = layout[key]
        letter = "AB"[p]
        h = b.node(parent, action, PLAYER0 if p == 0 else PLAYER1, prob, key=key,
                   names=tuple(f"{letter}{a}" for a in range(k)))
        for a in range(k):
            seen = tuple(ob + (f"{letter}{a}",) for ob in obs)
            if ends[a]:
                b.node(h, a, TERMINAL, payoff=round(float(rng.uniform(-4, 4)), 3))
            else:
                build(h, a, 1.0, stage + 1, seen)

    build(-1, -1, 1.0, 0, ((), ()))
    return b.spec(f"random_{seed}", rng if permute else None,
                  source={"random_spec": dict(seed=seed, depth=depth)})


KUHN_CARDS = "JQK"


def kuhn_spec() -> GameSpec:
    """Classic Kuhn poker (ante 1, one bet of 1), built by hand.

    Chance deals player 0's card, then player 1's from the remaining two (in card order,
    like OpenSpiel's kuhn_poker). Actions are ("p", "b") = pass/check/fold, bet/call.
    Infoset keys: "<player>:<card>:<history>", e.g. "0:J:" or "1:Q:p".
    """
    b = _Builder()
    root = b.node(-1, -1, CHANCE)

    def payoff(c0: int, c1: int, hist: str) -> float | None:
        """Player 0's payoff at a terminal history, None if the history continues."""
        win = 1.0 if c0 > c1 else -1.0
        return {"pp": win, "pbp": -1.0, "pbb": 2 * win, "bp": 1.0, "bb": 2 * win}.get(hist)

    def play(parent: int, action: int, prob: float, c0: int, c1: int, hist: str) -> None:
        pay = payoff(c0, c1, hist)
        if pay is not None:
            b.node(parent, action, TERMINAL, payoff=pay)
            return
        p = len(hist) % 2
        card = (c0, c1)[p]
        h = b.node(parent, action, PLAYER0 if p == 0 else PLAYER1, prob,
                   key=f"{p}:{KUHN_CARDS[card]}:{hist}", names=("p", "b"))
        for a, move in enumerate("pb"):
            play(h, a, 1.0, c0, c1, hist + move)

    for c0 in range(3):
        deal = b.node(root, c0, CHANCE, prob=1.0 / 3.0)
        for j, c1 in enumerate(c for c in range(3) if c != c0):
            play(deal, j, 0.5, c0, c1, "")
    return b.spec("kuhn_hand_built", source={"hand_built": "kuhn_poker"})
