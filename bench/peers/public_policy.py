"""A peer solver's strategy in cfrjax's public form, and its float64 evaluation there.

Shared by the arms whose same-game check hands cfrjax another solver's average strategy
(`postflop_peer.py`: postflop-solver; `texassolver_peer.py`: TexasSolver). Each arm turns its
solver's dump into decision nodes; this module matches them to cfrjax's public nodes by
betting history and the hands by their two cards, and evaluates the policy.

A node, as the arms give it: `history` (action labels from the root, postflop-solver's
spelling: "check", "call", "fold", "bet 10", "raise 25", "allin 100", "deal 2c"), `player`
(cfrjax's numbering: 0 is OOP, the first to act), `actions` (labels, cfrjax's spelling:
"check", "bet 10", "raise 25", "all-in 100", "call", "fold"), `strategy` (array `[len(actions), H]`, columns in the order of `hands[player]`).
"""

from __future__ import annotations

import numpy as np


def history_code(history: list[str]) -> str:
    """Action labels from the root -> cfrjax public node code ('k.b10', 'k.k/2s/k.b20'); a bet,
    raise or all-in to street total X ("bet 10", "raise 25", "allin 100", "all-in 100") is bX."""
    tok = {"check": "k", "call": "c", "fold": "f"}
    code = ""
    for lab in history:
        if lab.startswith("deal "):
            code += f"/{lab[5:]}/"
            continue
        word = lab.split()[0]
        t = tok.get(lab) or ("b" + lab.split()[1] if word in ("bet", "raise", "allin", "all-in") else None)
        if t is None:
            raise ValueError(f"action {lab!r} has no cfrjax code")
        code += ("." if code and not code.endswith("/") else "") + t
    return code


def policy_from_nodes(game, hands, nodes, peer: str = "peer") -> np.ndarray:
    """The peer's decision nodes as a cfrjax public-form policy `[S, H]` (float64).

    `hands[p]`: the peer's hands of cfrjax player p, 4-character names ("AsKd", either card
    first). Every cfrjax decision node must be given exactly once."""
    import cfrjax
    labels = game.labels
    policy = np.asarray(cfrjax.policy.uniform_policy(game), np.float64).copy()
    codes = {c: k for k, c in enumerate(labels.node_codes)}
    hand_index = {frozenset((n[:2], n[2:])): h for h, n in enumerate(labels.hand_names)}
    cols = [np.array([hand_index[frozenset((s[:2], s[2:]))] for s in hs]) for hs in hands]
    starts = np.asarray(labels.node_slot_start)
    seen = set()
    for node in nodes:
        code = history_code(node["history"])
        k = codes.get(code)
        if k is None:
            raise ValueError(f"{peer} node {node['history']} has no cfrjax node ({code})")
        if k in seen:
            raise ValueError(f"{peer} node {node['history']} given twice")
        if int(labels.node_player[k]) != node["player"]:
            raise ValueError(f"node {labels.node_codes[k]}: player {node['player']} there, "
                             f"{labels.node_player[k]} in cfrjax")
        names = list(labels.action_names[k])
        if sorted(names) != sorted(node["actions"]):
            raise ValueError(f"node {labels.node_codes[k]}: actions {node['actions']} there, {names} in cfrjax")
        H = len(cols[node["player"]])
        s = np.asarray(node["strategy"], np.float64).reshape(len(node["actions"]), H)
        for i, a in enumerate(node["actions"]):
            policy[starts[k] + names.index(a), cols[node["player"]]] = s[i]
        seen.add(k)
    if len(seen) != len(labels.node_codes):
        raise ValueError(f"{len(seen)} {peer} decision nodes, {len(labels.node_codes)} cfrjax nodes")
    return policy


def evaluate(game, policy) -> dict:
    """cfrjax's float64 value, best-response values (cfrjax convention: pot/2 subtracted) and
    exploitability (BR_0 + BR_1)/2 of a public-form policy; of a raked game also player 1's
    value `value1` (not minus player 0's), the exploitability then being ((BR_0 - v_0) +
    (BR_1 - v_1))/2. Needs jax_enable_x64."""
    import jax.numpy as jnp
    import cfrjax
    pol = jnp.asarray(policy, jnp.float64)
    br = [float(x) for x in np.asarray(cfrjax.best_response_values(game, pol))]
    out = dict(value=float(cfrjax.expected_value(game, pol)), br0=br[0], br1=br[1],
               exploitability=float(cfrjax.exploitability(game, pol)))
    if cfrjax.forms.raked(game):
        out["value1"] = float(cfrjax.best_response.expected_values(game, pol)[1])
    return out
