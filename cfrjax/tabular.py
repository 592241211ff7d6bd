"""The tabular form's passes (`cfrjax.game.CompiledGame`): one node per history, slots `[S]`.

This module is the tabular implementation of the form interface (`cfrjax.forms`): the
instantaneous regrets and average increments of one (half-)iteration, the exact best
response, the expected value, strategy-table rows and the scratch buffers of the memory
plan. The tree sums themselves are in `cfrjax.passes` (pull and scatter lowerings).

A best response for player i is found by sweeps of the backward value pass: each sweep
picks, at every information set of i, the action maximizing the counterfactual value
`sum_{h in I} pi_{-i}(h) v_i(h.a)` under the current choice below it. After k sweeps every
set with at most k own decisions below it is exact (perfect recall orders i's sets as a
forest), so `game.br_rounds[i]` sweeps give the exact best response; a last value pass
scores it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import passes
from cfrjax.game import CompiledGame

__all__ = ["best_response_value", "best_response_values", "expected_value", "expected_values", "infosets", "regret_pass",
           "scratch_elements", "strategy_rows"]


def regret_pass(game: CompiledGame, sigma_ext, regret, player):
    """One forward and one backward pass under `sigma_ext` `[S + 1, *batch]`.

    Returns `(regret + r, y)` for `player`'s slots (`None`: all): the instantaneous
    regrets `r` of its decision edges added one by one into `regret` (in member order, as
    OpenSpiel accumulates), and `y = pi_i(I) sigma(I, a)` (own reach times strategy).
    """
    reach = passes.reach(game, sigma_ext)
    vals = passes.values(game, sigma_ext)
    reach_flat = reach.reshape((-1,) + reach.shape[2:])
    lo, hi = passes.edge_range(game, player)
    slo, shi = passes.slot_range(game, player)
    new_regret = passes.accumulate_regret(game, regret, reach_flat, vals, lo, hi, slo)
    y = reach_flat[game.slot_own_reach[slo:shi]] * sigma_ext[slo:shi]
    return new_regret, y


def _argmax_one_hot(game: CompiledGame, q, player: int):
    """One-hot of the first best action per information set over player's slots."""
    slo, shi = passes.slot_range(game, player)
    seg = game.slot_infoset[slo:shi]
    n = game.num_infosets
    qmax = jax.ops.segment_max(q, seg, num_segments=n, indices_are_sorted=True)[seg]
    idx = jnp.arange(shi - slo)
    first = jax.ops.segment_min(jnp.where(q >= qmax, idx, shi - slo), seg, num_segments=n,
                                indices_are_sorted=True)[seg]
    return (idx == first).astype(q.dtype)


def best_response_value(game: CompiledGame, policy, player: int):
    """Value to `player` of a best response against the opponent's part of `policy` `[S]`.

    In the zero-sum (shifted) game: player 1's value is the negated player-0 value.
    """
    slo, shi = passes.slot_range(game, player)
    reach_flat = passes.reach(game, passes.extend(policy)).reshape(-1)

    def sweep(_, mixed):
        vals = passes.values(game, passes.extend(mixed))
        q = passes.counterfactual_action_values(game, reach_flat, vals, player)
        return mixed.at[slo:shi].set(_argmax_one_hot(game, q, player))

    mixed = jax.lax.fori_loop(0, game.br_rounds[player], sweep, policy)
    v0 = passes.values(game, passes.extend(mixed))[0]
    return v0 if player == 0 else -v0


def best_response_values(game: CompiledGame, policy):
    """`[2]` best-response values of both players against `policy` `[S]`."""
    return jnp.stack([best_response_value(game, policy, 0), best_response_value(game, policy, 1)])


def expected_value(game: CompiledGame, policy):
    """Player 0's expected payoff when both play `policy` `[S]` (in the source's units)."""
    v0 = passes.values(game, passes.extend(policy))[0]
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return v0 + offset


def expected_values(game: CompiledGame, policy):
    """`[2]`: both players' expected payoffs; the tabular form is zero-sum, so player 1's
    is minus player 0's (player 0's reporting offset, `payoff_offset`, not included)."""
    v0 = passes.values(game, passes.extend(policy))[0]
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return jnp.stack([v0 + offset, -v0])


def key_fields(game: CompiledGame) -> tuple | None:
    """Names of the `|`-separated parts of the information-set keys, if the source declared
    them (`GameSpec.source["key_fields"]`, e.g. poker: `("player", "hand", "history")`)."""
    source = game.labels.source if game.labels is not None else None
    fields = source.get("key_fields") if isinstance(source, dict) else None
    return tuple(fields) if fields else None


def infosets(game: CompiledGame):
    """Yield `(key, player, action names, slots)` per information set, in slot order."""
    labels, off = game.labels, 0
    for i, (key, names) in enumerate(zip(labels.infoset_keys, labels.action_names)):
        yield key, int(labels.infoset_player[i]), names, slice(off, off + len(names))
        off += len(names)


def strategy_rows(game: CompiledGame, policy: np.ndarray, min_probability: float = 0.0) -> list[dict]:
    """Rows `{"infoset", "player", "action", "probability"}` (plus the key's declared
    fields, `key_fields`), one per (information set, action), in slot order."""
    labels = game.labels
    fields = key_fields(game)
    rows, off = [], 0
    for i, (key, names) in enumerate(zip(labels.infoset_keys, labels.action_names)):
        player = int(labels.infoset_player[i])
        extra = {}
        if fields is not None:
            parts = str(key).split("|", len(fields) - 1)
            extra = {f: v for f, v in zip(fields, parts) if f != "player"} if len(parts) == len(fields) else {}
        for a, name in enumerate(names):
            prob = float(policy[off + a])
            if prob >= min_probability:
                rows.append({"infoset": key, "player": player, "action": str(name), "probability": prob, **extra})
        off += len(names)
    return rows


def scratch_elements(game: CompiledGame, order: str, *, config=None, platform: str | None = None,
                     donate: bool = False) -> dict:
    """Per-subgame elements of an iteration's scratch buffers (memory plan rows); the same
    on every platform, whatever the rules `config` and donation (`donate`)."""
    N, M, S, I = game.num_nodes, game.num_decision_edges, game.num_slots, game.num_infosets
    return scratch_from_sizes(N, M, S, I, order)


def scratch_from_sizes(N: int, M: int, S: int, I: int, order: str) -> dict:
    """`scratch_elements` from the counts alone (before the game is built)."""
    rows = {"strategy + sentinel": S + 1, "information-set totals": I, "reach (two lanes)": 2 * N,
            "values": N, "child contributions": N, "edge regret terms": M, "average term": S}
    if order == "alternating":
        rows["second half overlap"] = N
    return rows
