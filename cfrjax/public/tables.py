"""The public form's information sets and strategy table rows, by key (`P{p}|{hand}|{code}`; the
hand of player p's own list where each player has one, `PublicLabels.hand_names_of`)."""

from __future__ import annotations

import jax
import numpy as np

from cfrjax.public.game import PublicGame

__all__ = ["infosets", "strategy_rows"]


def _entries(labels):
    """Yield `(code, player, slots, action names, hand, h)` per live (decision node, hand),
    node by node, hand by hand: `hand` the name, `h` its column. A suit-merged game
    (`PublicLabels.merge`) yields every member node of a representative's class (its cards
    and the hand's suits permuted, `Merge.node_members`) with the representative's
    column, as if the members had been solved apart."""
    for i, (code, player, sl, names) in enumerate(labels.decision_nodes()):
        hand_names = labels.hand_names_of(player)
        live = np.flatnonzero(labels.live_hands(i)).tolist()
        if labels.merge is None:
            for h in live:
                yield code, player, sl, names, hand_names[h], h
            continue
        for member, rename in labels.merge.node_members(code, labels.node_dealt[i]):
            for h in live:
                yield member, player, sl, names, rename(hand_names[h]), h


def infosets(game: PublicGame):
    """Yield `(key, player, action names, (slots, hand))` per live (decision node, hand),
    node by node, hand by hand (`_entries`); `policy[(slots, hand)]` are the set's
    probabilities."""
    for code, player, sl, names, hand, h in _entries(game.labels):
        yield f"P{player}|{hand}|{code}", player, names, (sl, h)


def strategy_rows(game: PublicGame, policy, min_probability: float = 0.0) -> list[dict]:
    """Rows `{"infoset", "player", "action", "probability", "hand", "history"}`, one per
    live (decision node, hand, action), node by node, hand by hand (`_entries`)."""
    p = np.asarray(jax.device_get(policy), np.float64)
    rows = []
    for code, player, sl, names, hand, h in _entries(game.labels):
        key = f"P{player}|{hand}|{code}"
        for a, name in enumerate(names):
            prob = float(p[sl.start + a, h])
            if prob >= min_probability:
                rows.append({"infoset": key, "player": player, "action": str(name), "probability": prob,
                             "hand": hand, "history": code})
    return rows
