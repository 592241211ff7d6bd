"""The public form's per-iteration buffers, for the memory plan (`cfrjax.memory`)."""

from __future__ import annotations

from cfrjax.public import terminals
from cfrjax.public.game import PublicGame

__all__ = ["scratch_elements"]


def scratch_elements(game: PublicGame, order: str) -> dict:
    """Per-subgame elements of an iteration's main buffers (memory plan rows), with every
    board's forest in flight at once (as on accelerators; the CPU loop holds one board)."""
    S, H, B = game.num_slots, game.num_hands, game.num_boards
    n1 = int(game.trunk_parent.shape[0])
    n2 = int(game.forest_parent.shape[0])
    f2, k = int(game.forest_fold_node.shape[0]), int(game.forest_showdown_node.shape[0])
    C, M = game.card_hands.shape
    lanes = 2 if order == "simultaneous" else 1
    rows = {"strategy + sentinel": (S + 1) * H, "information-set totals": S * H,
            "reach and strategy factors": 4 * (n1 + B * n2) * H,
            "values": lanes * (n1 + B * n2) * H, "child contributions": lanes * (n1 + B * n2) * H,
            "terminal reach and values": 2 * lanes * B * (f2 + k) * H,
            "regret terms": S * H, "average term": S * H}
    if not terminals.dense_used(game, cpu=False):
        rows["showdown prefix sums"] = lanes * B * k * ((H + 1) + C * (M + 1) + 8 * H)
    if game.raked:
        rows["raked showdown reach sums"] = lanes * B * k * (C + 3 * H)
    return rows
