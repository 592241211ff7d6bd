"""The public form's information sets and strategy table rows, by key (`P{p}|{hand}|{code}`; the
hand of player p's own list where each player has one, `PublicLabels.hand_names_of`)."""

from __future__ import annotations

import jax
import numpy as np

from cfrjax.public.game import PublicGame

__all__ = ["infosets", "strategy_rows"]


def infosets(game: PublicGame):
    """Yield `(key, player, action names, (slots, hand))` per live (decision node, hand),
    node by node, hand by hand; `policy[(slots, hand)]` are the set's probabilities."""
    labels = game.labels
    for i, (code, player, sl, names) in enumerate(labels.decision_nodes()):
        prefix = f"P{player}|"
        hand_names = labels.hand_names_of(player)
        for h in np.flatnonzero(labels.live_hands(i)).tolist():
            yield f"{prefix}{hand_names[h]}|{code}", player, names, (sl, h)


def strategy_rows(game: PublicGame, policy, min_probability: float = 0.0) -> list[dict]:
    """Rows `{"infoset", "player", "action", "probability", "hand", "history"}`, one per
    live (decision node, hand, action), node by node, hand by hand."""
    p = np.asarray(jax.device_get(policy), np.float64)
    labels = game.labels
    rows = []
    for i, (code, player, sl, names) in enumerate(labels.decision_nodes()):
        hand_names = labels.hand_names_of(player)
        for h in np.flatnonzero(labels.live_hands(i)).tolist():
            hand = hand_names[h]
            key = f"P{player}|{hand}|{code}"
            for a, name in enumerate(names):
                prob = float(p[sl.start + a, h])
                if prob >= min_probability:
                    rows.append({"infoset": key, "player": player, "action": str(name), "probability": prob,
                                 "hand": hand, "history": code})
    return rows
