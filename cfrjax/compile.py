"""GameSpec -> CompiledGame (NumPy, once per game; paper, appendix H, steps 2-7).

Passes: slots (information sets sorted by owner then key, offsets by prefix sum), a
breadth-first node numbering (parent before child, depth levels contiguous), per-node
lane and value slot indices with the sentinel for chance and opponent edges, chance
folding into the values template, decision edges sorted by slot (per-player halves for
alternating updates), and the best-response sweep count per player.
"""

from __future__ import annotations

import numpy as np

from cfrjax.game import CompiledGame, GameLabels, fingerprint, from_numpy
from cfrjax.spec import CHANCE, PLAYER1, GameSpec, bfs_levels


CHANCE_MODES = ("folded", "explicit")


def _layout_key(source):
    """What slots are ordered by besides the owner: the key, or for a source that names the
    card order of its keys' `hand` part (`source["hand_layout"]`, card names lowest first,
    with `source["key_fields"]`) the key with the hand's lower card first. Poker keys print
    hands high card first now, and were printed lower card id first before; ordering by
    that former name keeps every compiled poker game, its fingerprint, checkpoints and
    recorded runs as they were."""
    source = source if isinstance(source, dict) else {}
    cards, fields = source.get("hand_layout"), list(source.get("key_fields") or ())
    if not cards or "hand" not in fields:
        return str
    rank, at, n = {c: i for i, c in enumerate(cards)}, fields.index("hand"), len(fields)

    def key(k: str) -> str:
        parts = k.split("|", n - 1)
        h = parts[at] if len(parts) == n else ""
        if len(h) == 4 and rank.get(h[:2], -1) > rank.get(h[2:], -1):
            parts[at] = h[2:] + h[:2]
            return "|".join(parts)
        return k
    return key


def compile_arrays(spec: GameSpec, chance: str = "folded") -> tuple[dict, dict, GameLabels]:
    """The host-side arrays, static sizes and labels of `spec`'s compiled form."""
    if chance not in CHANCE_MODES:
        raise ValueError(f"unknown chance mode {chance!r}; allowed: 'folded', 'explicit'")
    n = spec.num_nodes
    num_inf = spec.num_infosets

    # Slots: information sets by (owner, key); offsets by prefix sum.
    order = _layout_key(spec.source)
    iset_order = sorted(range(num_inf), key=lambda i: (int(spec.infoset_player[i]), order(spec.infoset_keys[i])))
    iset_new = np.empty(num_inf, np.int64)
    iset_new[np.array(iset_order, np.int64)] = np.arange(num_inf)
    num_act = spec.infoset_num_actions[np.array(iset_order, np.int64)] if num_inf else np.zeros(0, np.int64)
    offset = np.concatenate([[0], np.cumsum(num_act)]).astype(np.int64)
    num_slots = int(offset[-1])
    sentinel = num_slots
    owner = spec.infoset_player[np.array(iset_order, np.int64)] if num_inf else np.zeros(0, np.int8)
    slot_infoset = np.repeat(np.arange(num_inf), num_act)
    slot_split = int(offset[int(np.sum(owner == 0))])

    # Breadth-first numbering; within a level children are grouped by parent in parent
    # order and, under one parent, by action index.
    root = int(np.flatnonzero(spec.parent < 0)[0])
    levels = bfs_levels(spec.parent, root)
    for d in range(1, len(levels)):
        lv = levels[d]
        levels[d] = lv[np.lexsort((spec.action[lv], _position(levels[d - 1], spec.parent[lv], n)))]
    order = np.concatenate(levels)
    new_id = np.empty(n, np.int64)
    new_id[order] = np.arange(n)
    level_start = tuple(int(x) for x in np.concatenate([[0], np.cumsum([lv.size for lv in levels])]))

    kind = spec.kind[order]
    parent_old = spec.parent[order]
    parent = np.where(parent_old >= 0, new_id[np.maximum(parent_old, 0)], 0)
    iset = np.where(kind <= PLAYER1, iset_new[np.maximum(spec.infoset[order], 0)], -1)
    action = spec.action[order]

    # Slot of the edge into each node (sentinel below chance and at the root).
    pkind = kind[parent]
    is_dec_edge = (np.arange(n) > 0) & (pkind <= PLAYER1)
    edge_slot = np.full(n, sentinel, np.int64)
    edge_slot[is_dec_edge] = offset[iset[parent[is_dec_edge]]] + action[is_dec_edge]
    lane_slot = np.full((2, n), sentinel, np.int64)
    for p in (0, 1):
        own = is_dec_edge & (pkind == p)
        lane_slot[p, own] = edge_slot[own]

    # Chance folding: pi_c along the levels, template = pi_c * u.
    prob = spec.chance_prob[order]
    chance_reach = np.ones(n)
    for d in range(1, len(levels)):
        lo, hi = level_start[d], level_start[d + 1]
        chance_reach[lo:hi] = chance_reach[parent[lo:hi]] * np.where(pkind[lo:hi] == CHANCE, prob[lo:hi], 1.0)
    payoff = spec.payoff[order]
    edge_prob = np.where((np.arange(n) > 0) & (pkind == CHANCE), prob, 1.0)
    template = chance_reach * payoff if chance == "folded" else payoff

    # Decision edges sorted by slot (stable: by child within a slot).
    dec = np.flatnonzero(is_dec_edge)
    dec = dec[np.argsort(edge_slot[dec], kind="stable")]
    dec_parent = parent[dec]
    dec_owner = pkind[dec]
    dec_split = int(np.sum(dec_owner == 0))

    # One member per information set for the owner's reach (equal at all members).
    dec_nodes = np.flatnonzero(kind <= PLAYER1)
    rep = np.full(num_inf, -1, np.int64)
    rep[iset[dec_nodes][::-1]] = dec_nodes[::-1]
    slot_own_reach = owner[slot_infoset].astype(np.int64) * n + rep[slot_infoset]

    # Best-response sweeps: the longest chain of own decisions, per player.
    own_depth = np.zeros((2, n), np.int64)
    for d in range(1, len(levels)):
        lo, hi = level_start[d], level_start[d + 1]
        par = parent[lo:hi]
        for p in (0, 1):
            own_depth[p, lo:hi] = own_depth[p, par] + (pkind[lo:hi] == p)
    br_rounds = tuple(int(own_depth[p][kind == p].max(initial=0)) + 1 for p in (0, 1))

    arrays = dict(
        parent=parent, lane_slot=lane_slot, val_slot=edge_slot, template=template, payoff=payoff, chance_reach=chance_reach,
        dec_child=dec, dec_parent=dec_parent, dec_slot=edge_slot[dec], dec_opp=(1 - dec_owner.astype(np.int64)) * n + dec_parent,
        dec_sign=np.where(dec_owner == 0, 1.0, -1.0), dec_chance=chance_reach[dec_parent],
        edge_prob=edge_prob, slot_infoset=slot_infoset, slot_own_reach=slot_own_reach,
        slot_uniform=1.0 / num_act[slot_infoset] if num_slots else np.zeros(0))
    static = dict(num_nodes=n, num_slots=num_slots, num_infosets=num_inf, level_start=level_start,
                  slot_split=slot_split, dec_split=dec_split, br_rounds=br_rounds,
                  chance_folded=chance == "folded")
    ids = None if spec.action_ids is None else tuple(spec.action_ids[i] for i in iset_order)
    labels = GameLabels(
        name=spec.name, infoset_keys=tuple(spec.infoset_keys[i] for i in iset_order),
        action_names=tuple(spec.action_names[i] for i in iset_order), action_ids=ids,
        infoset_player=owner.astype(np.int8), payoff_offset=float(spec.payoff_offset), source=dict(spec.source),
        fingerprint=fingerprint({**arrays, "level_start": np.array(level_start)}))
    return arrays, static, labels


def _position(prev_level: np.ndarray, parents: np.ndarray, n: int) -> np.ndarray:
    """Position of each parent within the previous level's order."""
    pos = np.empty(n, np.int64)
    pos[prev_level] = np.arange(prev_level.size)
    return pos[parents]


def compile_game(spec: GameSpec, chance: str = "folded") -> CompiledGame:
    """Compile a validated `GameSpec` into a `CompiledGame` on the default device.

    Args:
      spec: the game.
      chance: `"folded"` (the paper's design: chance probabilities enter only through the
        values template `pi_c(z) u(z)`) or `"explicit"` (values are expectations given the
        node, chance edges weight the backward pass by their probability and the regret
        of an edge is scaled by `pi_c(h)`, in exactly the order of OpenSpiel's Python CFR).
        Both compute the same numbers in exact arithmetic. In floating point they round
        differently, and regret matching(+) is discontinuous where regrets are exactly 0:
        near such ties two solvers can part ways in the last bit and then follow different
        trajectories. `"explicit"` reproduces OpenSpiel's rounding and so its iterates.

    Float leaves take JAX's default float dtype (float64 only when `jax_enable_x64` is
    on), so enable x64 before compiling when you want a float64 solve.
    """
    arrays, static, labels = compile_arrays(spec, chance)
    return from_numpy(arrays, static, labels)
