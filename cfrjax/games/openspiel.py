"""OpenSpiel games as `GameSpec`s, and policies in both directions.

Any two-player zero-sum (or constant-sum, shifted to zero-sum) perfect-recall OpenSpiel
game with a finite tree qualifies. Simultaneous-move games are converted to their
turn-based form (`pyspiel.convert_to_turn_based`), as OpenSpiel's own solvers do.
Information sets are OpenSpiel's `information_state_string`; within a set, actions keep
OpenSpiel's legal-action order (increasing action id).
"""

from __future__ import annotations

import numpy as np

from cfrjax.spec import CHANCE, TERMINAL, GameSpec, SpecError, zero_sum_payoffs

#: Refuse to walk trees larger than this many histories unless asked to.
DEFAULT_MAX_NODES = 50_000_000


def _pyspiel():
    try:
        import pyspiel
    except ImportError as e:  # pragma: no cover - exercised only without OpenSpiel
        raise ImportError(
            "OpenSpiel is needed to load games by name: `pip install open_spiel` "
            "(or load a game saved with `cfrjax.save_game`)") from e
    return pyspiel


def load_openspiel_game(game):
    """`game` as a turn-based two-player `pyspiel.Game` (from a string or a Game)."""
    pyspiel = _pyspiel()
    if isinstance(game, str):
        try:
            game = pyspiel.load_game(game)
        except Exception as e:  # pyspiel raises a bare SpielError/RuntimeError
            raise SpecError(f"OpenSpiel cannot load game {game!r}: {str(e).splitlines()[0]}") from None
    gtype = game.get_type()
    name = str(game)
    if game.num_players() != 2:
        raise SpecError(f"{name}: has {game.num_players()} players; cfrjax solves two-player games")
    if gtype.utility not in (pyspiel.GameType.Utility.ZERO_SUM, pyspiel.GameType.Utility.CONSTANT_SUM):
        raise SpecError(f"{name}: is {gtype.utility.name.lower()}, not zero-sum or constant-sum; "
                        "cfrjax solves two-player zero-sum games")
    if gtype.dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    elif gtype.dynamics != pyspiel.GameType.Dynamics.SEQUENTIAL:
        raise SpecError(f"{name}: dynamics {gtype.dynamics} are not supported")
    if not gtype.provides_information_state_string:
        raise SpecError(f"{name}: does not provide information state strings")
    return game


#: Playouts of `estimate_tree_size` before a walk, and the factor over `max_nodes` above
#: which the estimate alone refuses the game (the estimator is unbiased but heavy-tailed).
ESTIMATE_PLAYOUTS = 64
ESTIMATE_MARGIN = 4.0


def estimate_tree_size(game, *, playouts: int = ESTIMATE_PLAYOUTS, cap: float = float("inf"), seed: int = 0) -> float:
    """Estimated number of histories of an OpenSpiel game, from random playouts.

    Knuth's estimator (1975): along a root-to-leaf path chosen uniformly at random among
    the children at every step, `1 + b1 + b1 b2 + ...` (b_k: the number of children at
    depth k) is an unbiased estimate of the tree's node count; this averages `playouts`
    of them. A playout stops early once its partial sum passes `cap * playouts` (the mean
    is then above `cap` whatever the others give), so a game like chess is refused in
    milliseconds instead of walked.
    """
    game = load_openspiel_game(game)
    rng = np.random.default_rng(seed)
    total, limit = 0.0, cap * playouts
    for _ in range(playouts):
        state, est, width = game.new_initial_state(), 1.0, 1.0
        while not state.is_terminal() and est <= limit:
            acts = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
            width *= len(acts)
            est += width
            state.apply_action(acts[int(rng.integers(len(acts)))])
        total += est
        if total > limit:
            break
    return total / playouts


def spec_from_openspiel(game, *, max_nodes: int = DEFAULT_MAX_NODES) -> GameSpec:
    """Walk an OpenSpiel game (string or `pyspiel.Game`) into a validated `GameSpec`.

    Before the walk, `estimate_tree_size` refuses a game whose estimated size is far
    above `max_nodes` (within seconds, naming the estimate); the walk itself stops at
    `max_nodes` histories.

    Raises:
      SpecError: the game has more than two players, is general-sum, has (or is
        estimated to have) more than `max_nodes` histories, or violates a `GameSpec`
        rule (e.g. imperfect recall).
    """
    game = load_openspiel_game(game)
    game_string = str(game)
    estimate = estimate_tree_size(game, cap=ESTIMATE_MARGIN * max_nodes)
    if estimate > ESTIMATE_MARGIN * max_nodes:
        raise SpecError(f"{game_string}: about {estimate:.1e} histories or more (estimated from random playouts), "
                        f"far more than max_nodes={max_nodes:,}: too large to solve as a table")
    parent, action, kind, infoset, prob = [], [], [], [], []
    term_nodes, term_returns = [], []
    keys: dict[str, int] = {}
    key_list, owners, names, ids = [], [], [], []

    stack = [(game.new_initial_state(), -1, -1, 1.0)]
    while stack:
        state, par, act, p = stack.pop()
        node = len(parent)
        if node >= max_nodes:
            raise SpecError(f"{game_string}: more than {max_nodes} histories; pass a larger max_nodes "
                            "if this is intended")
        parent.append(par)
        action.append(act)
        prob.append(p)
        if state.is_terminal():
            kind.append(TERMINAL)
            infoset.append(-1)
            term_nodes.append(node)
            term_returns.append(state.returns())
            continue
        if state.is_chance_node():
            kind.append(CHANCE)
            infoset.append(-1)
            outcomes = state.chance_outcomes()
            for i in range(len(outcomes) - 1, -1, -1):
                a, q = outcomes[i]
                stack.append((state.child(a), node, i, float(q)))
            continue
        player = state.current_player()
        if player not in (0, 1):
            raise SpecError(f"{game_string}: history {state.history_str()!r} is owned by player {player}; "
                            "only players 0 and 1, chance and terminals are supported")
        key = state.information_state_string(player)
        legal = state.legal_actions(player)
        k = keys.get(key)
        if k is None:
            k = keys[key] = len(key_list)
            key_list.append(key)
            owners.append(player)
            ids.append(tuple(legal))
            names.append(tuple(state.action_to_string(player, a) for a in legal))
        elif owners[k] != player:
            raise SpecError(f"{game_string}: information set {key!r} has two owners ({owners[k]} and {player})")
        elif ids[k] != tuple(legal):
            raise SpecError(f"{game_string}: information set {key!r} has two action lists: "
                            f"{list(ids[k])} and {list(legal)} (at history {state.history_str()!r})")
        kind.append(player)
        infoset.append(k)
        for i in range(len(legal) - 1, -1, -1):
            stack.append((state.child(legal[i]), node, i, 1.0))

    n = len(parent)
    payoff = np.zeros(n)
    u0, offset = zero_sum_payoffs(np.array(term_returns, np.float64).reshape(-1, 2),
                                  where=[f"{game_string}: terminal node {t}" for t in term_nodes])
    payoff[np.array(term_nodes, np.int64)] = u0
    return GameSpec(
        parent=np.array(parent), action=np.array(action), kind=np.array(kind, np.int8),
        infoset=np.array(infoset), chance_prob=np.array(prob), payoff=payoff,
        infoset_player=np.array(owners, np.int8), infoset_keys=tuple(key_list),
        action_names=tuple(names), action_ids=tuple(ids), name=game_string,
        payoff_offset=offset, source={"openspiel": game_string})


def _openspiel_for(game):
    source = (game.labels.source or {}).get("openspiel") if game.labels is not None else None
    if source is None or game.labels.action_ids is None:
        raise ValueError(f"{game.name}: not compiled from an OpenSpiel game, so it has no OpenSpiel policy form")
    return load_openspiel_game(source)


def to_openspiel_policy(game, policy):
    """A `[S]` policy as an OpenSpiel `TabularPolicy` of the (turn-based) OpenSpiel game."""
    from open_spiel.python import policy as os_policy

    tabular = os_policy.TabularPolicy(_openspiel_for(game))
    probs = np.asarray(policy, np.float64)
    offset = 0
    for key, ids in zip(game.labels.infoset_keys, game.labels.action_ids):
        row = tabular.state_lookup.get(key)
        if row is not None:
            tabular.action_probability_array[row, :] = 0.0
            tabular.action_probability_array[row, list(ids)] = probs[offset:offset + len(ids)]
        offset += len(ids)
    return tabular


def from_openspiel_policy(game, tabular_policy):
    """An OpenSpiel `TabularPolicy` (or a dict `infoset key -> {action id: prob}`) as `[S]`."""
    _openspiel_for(game)
    out = []
    for key, ids in zip(game.labels.infoset_keys, game.labels.action_ids):
        if isinstance(tabular_policy, dict):
            row = tabular_policy[key]
            out.extend(float(row.get(a, 0.0)) for a in ids)
        else:
            row = tabular_policy.action_probability_array[tabular_policy.state_lookup[key]]
            out.extend(float(row[a]) for a in ids)
    return np.asarray(out, np.float64)
