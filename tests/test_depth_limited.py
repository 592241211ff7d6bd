"""Depth-limited public games (`cfrjax.public.depth`, `cfrjax.depth_limited`): a turn spot
cut below its river card, a flop spot below its turn card, the leaves valued by a leaf
function.

The contract (hand indexing, units, dead hands) is checked against an independent
construction: a turn spot whose river has no betting (a flop spot whose turn and river
have none) is the cut game with the `showdown` leaf function, exactly, for any trunk
policy (values and best responses). The leaf position map is checked against a sorted
list of the leaf board's live combos. CFR-D: the stateful `exact` leaf's average carries
the trunk's averaging weights, and the completed profile's exploitability on the whole
turn spot falls below 0.5% of the pot."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax.games.poker import PokerSubgameSpec, card_id, combo_index
from cfrjax.games.poker.public_tree import build_public
from test_public_form import random_policy
from selection import cases

R0 = {"AsAh": 1.0, "QhJh": 0.8, "8c7c": 0.6}
R1 = {"KdKc": 1.0, "Td9d": 0.7, "6s6h": 0.9}
BASE = dict(board="Ks Js Th 7d", pot=20, stack=60, range0=R0, range1=R1)


@pytest.fixture(scope="module")
def whole():
    return build_public(PokerSubgameSpec(**BASE, bet_fractions=(1.0,), raise_cap=0), hands="range")


# A flop spot cut below its turn card: 49 turn cards x the flop street's ends.
FLOP = dict(board="Ks Js 2h", pot=20, stack=60, range0=R0, range1=R1, raise_cap=0)


@pytest.fixture(scope="module")
def flop():
    return build_public(PokerSubgameSpec(**FLOP, betting={"bet": "100%"}), hands="range")


@pytest.mark.parametrize("street", ["turn", "flop"])
def test_leaf_inputs_contract(street, request):
    """Below a turn spot's river card (48 cards, five-card boards, 1,081 combos, chance
    1/44) and a flop spot's turn card (49, four cards, 1,128, 1/45)."""
    whole = request.getfixturevalue("whole" if street == "turn" else "flop")
    cards, combos, chance = (48, 1081, 1 / 44) if street == "turn" else (49, 1128, 1 / 45)
    above = ("Ks", "Js", "Th", "7d") if street == "turn" else ("Ks", "Js", "2h")
    seen = {}

    def spy(inputs, r0, r1):
        jax.debug.callback(lambda i, a, b: seen.update(inputs=i, r0=a, r1=b), inputs, r0, r1)
        return jnp.zeros_like(r0), jnp.zeros_like(r1)
    cut = cfrjax.depth_limited(whole, cfrjax.public.depth.LeafFunction(spy, name="spy"))
    jax.block_until_ready(cfrjax.expected_value(cut, cfrjax.policy.uniform_policy(cut)))
    x = jax.tree.map(np.asarray, seen["inputs"])
    r0, r1 = np.asarray(seen["r0"]), np.asarray(seen["r1"])
    R, B = cut.num_roots, cut.num_boards
    L, H = r0.shape
    assert (L, H) == (B * R, cut.num_hands) == (cards * 3, 6)
    assert x["board"].shape == (L, len(above) + 1)
    hands = x["hands"]
    assert sorted(hands.tolist()) == sorted(combo_index(h[:2], h[2:]) for h in list(R0) + list(R1))
    b4 = [card_id(c) for c in above]
    # Lines k: check-check, bet-call (both with 0 or 20 committed) -> pots 20, 60; stacks 50, 30.
    np.testing.assert_array_equal(x["pot"][:R], [20.0, 60.0, 60.0][:R])
    np.testing.assert_array_equal(x["stack"][:R], 50.0 - (x["pot"][:R] - 20.0) / 2)
    all_cards = list(range(52))
    for leaf in (0, 7, L - 1):
        board = x["board"][leaf].tolist()
        assert board[:-1] == b4 and board[-1] not in b4
        assert np.all(x["board"][leaf - leaf % R:leaf - leaf % R + R] == board)
        live_combos = [combo_index(a, b) for a, b in itertools.combinations(all_cards, 2)
                       if a not in board and b not in board]
        order = sorted(live_combos)
        for h, combo in enumerate(hands.tolist()):
            dead = combo not in order
            assert bool(x["live"][leaf, h]) == (not dead)
            assert x["leaf_hand"][leaf, h] == (-1 if dead else order.index(combo))
            if dead:   # a dead hand has no range
                assert r0[leaf, h] == 0 and r1[leaf, h] == 0
        assert len(order) == combos
        for r in (r0, r1):   # normalised ranges (uniform trunk policy: every leaf is reached)
            assert r[leaf].sum() == pytest.approx(1.0, rel=1e-12)
    assert float(x["chance"]) == pytest.approx(chance)
    if street == "flop":   # the exact leaf solves turn spots' rivers only
        with pytest.raises(ValueError, match="only a turn spot"):
            cfrjax.public.depth.exact_leaf(whole)


def test_leaf_function_is_traced_a_fixed_number_of_times(whole):
    calls = []

    def counted(inputs, r0, r1):
        calls.append(1)
        return cfrjax.public.depth.showdown_leaf(whole).fn(inputs, r0, r1)
    leaf = cfrjax.public.depth.LeafFunction(counted, cfrjax.public.depth.showdown_leaf(whole).data, "counted")
    cut = cfrjax.depth_limited(whole, leaf)
    state = cfrjax.solve(cut, cfrjax.init(cut, dtype="float64"), 5)
    first = len(calls)
    assert 0 < first <= 4          # once per lowering of each half-iteration's pass
    state = cfrjax.solve(cut, state, 5)
    cfrjax.solve(cut, cfrjax.init(cut, dtype="float64"), 5)
    assert len(calls) == first     # the compiled solve is reused: no new trace


@pytest.mark.parametrize("leaf", ["showdown", pytest.param("exact", marks=pytest.mark.slow)])
def test_solve_batch_equals_separate_solves(whole, leaf):
    """8 spots (ranges) in one batch; `exact`: the stateful leaf, its state batched too."""
    fn = cfrjax.public.depth.showdown_leaf if leaf == "showdown" else (lambda g: cfrjax.public.depth.exact_leaf(g, 20, warm=2))
    cut = cfrjax.depth_limited(whole, fn)
    n = 8
    rng = np.random.default_rng(3)
    live = np.asarray(cut.weights) > 0
    w = rng.uniform(0.1, 1.0, (n, 2, cut.num_hands)) * live
    games = jax.vmap(cfrjax.public.passes.set_ranges, (None, 0, 0), cfrjax.batch_axes(cut))(
        cut, jnp.asarray(w[:, 0]), jnp.asarray(w[:, 1]))
    out = cfrjax.solve_batch(games, cfrjax.batch.init_batch(cut, n, dtype="float64"), 10)
    for b in range(n):
        g = cfrjax.public.passes.set_ranges(cut, jnp.asarray(w[b, 0]), jnp.asarray(w[b, 1]))
        one = cfrjax.solve(g, cfrjax.init(cut, dtype="float64"), 10)
        np.testing.assert_allclose(np.asarray(out.regret[b]), np.asarray(one.regret), rtol=1e-10, atol=1e-12)
        for x, y in zip(jax.tree.leaves(jax.tree.map(lambda a: a[b], out.leaf)), jax.tree.leaves(one.leaf)):
            np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-10, atol=1e-12)


@pytest.mark.slow   # nested scans, about a minute on a busy 2-core CPU: `pytest -m slow tests/test_depth_limited.py`
def test_exact_leaf_value_within_the_bound(whole):
    """The cut game with `exact` leaves (leaf solves of DCFR) against the whole game: root
    values within NashConv_cut + NashConv_whole + the leaf solves' NashConv (all in chips)."""
    sw = cfrjax.solve(whole, cfrjax.init(whole, dtype="float64"), 300)
    e_w, v_w = cfrjax.evaluate(whole, sw)
    leaf = cfrjax.public.depth.exact_leaf(whole, 100)
    cut = cfrjax.depth_limited(whole, leaf)
    sc = cfrjax.solve(cut, cfrjax.init(cut, dtype="float64"), 60)
    e_c, v_c = cfrjax.evaluate(cut, sc)
    full, nc_leaf = cfrjax.public.depth.exact_leaf_policy(cut, cfrjax.average_policy(cut, sc), leaf, whole)
    assert 0 <= float(nc_leaf) < 0.1
    assert abs(v_c - v_w) <= 2 * e_c + 2 * e_w + float(nc_leaf)
    # the completed profile is a whole-game profile: its exploitability is finite and its
    # value agrees with the cut game's to within the same bound
    assert abs(float(cfrjax.expected_value(whole, full)) - v_c) <= 2 * e_c + float(nc_leaf) + 1e-9


@pytest.fixture(scope="module")
def cfrd(whole):
    """A CFR-D solve of the cut game (stateful `exact` leaves, 3 warm-started DCFR iterations
    per pass): the cut game, the state after 100 and after 200 iterations."""
    cut = cfrjax.depth_limited(whole, cfrjax.public.depth.exact_leaf(whole, 100, warm=3))
    s100 = cfrjax.solve(cut, cfrjax.init(cut, dtype="float64"), 100)
    return cut, s100, cfrjax.solve(cut, s100, 100)


def _last_own_slot(cut, node, p):
    """The cut game's slot of player p's last action above trunk node `node` (None: none)."""
    lane, parent, sentinel = np.asarray(cut.trunk_lane_slot), np.asarray(cut.trunk_parent), cut.num_slots
    while node != 0:
        if lane[node, p] != sentinel:
            return int(lane[node, p])
        node = int(parent[node])
    return None


def test_leaf_average_weights_match_the_trunk(whole, cfrd):
    """The leaf strategies' average carries the trunk's averaging weights: at each player's
    first decisions below leaf k of board b, its total over the actions is the trunk's
    average term of that player's last action above the leaf (both: the DCFR running mean
    of the player's reach of the leaf), times the hand's live mask on the board."""
    cut, _, state = cfrd
    avg, lavg = np.asarray(state.avg), np.asarray(state.leaf["avg"])               # [S, H], [B, s0 + s1, H]
    live, weights = np.asarray(whole.board_live), np.asarray(whole.weights)
    owner, root_of = np.asarray(whole.forest_owner), np.asarray(whole.forest_root_of)
    path, node_of = np.asarray(whole.forest_path), np.asarray(whole.forest_slot_node)
    sentinel = sum(whole.forest_slots)
    checked = 0
    for k, chance_node in enumerate(np.asarray(cut.root_chance).tolist()):
        for p in (0, 1):
            slot = _last_own_slot(cut, chance_node, p)
            trunk = weights[p] if slot is None else avg[slot]
            first = [n for n in range(owner.size)
                     if owner[n] == p and root_of[n] == k and np.all(path[n, p] == sentinel)]
            assert first
            for n in first:
                total = lavg[:, node_of == n].sum(axis=1)                          # [B, H]
                np.testing.assert_allclose(total, trunk[None] * live, rtol=1e-10, atol=1e-14)
                checked += 1
    assert checked >= 2 * cut.num_roots


def test_completed_profile_exploitability_falls_below_half_a_percent_of_the_pot(whole, cfrd):
    """CFR-D (module docstring of `cfrjax.public.depth`): the cut solve's average trunk,
    completed below the cut by the reach-weighted average of the leaf solves' strategies, is
    a whole-game profile whose exploitability on the whole turn spot falls with iterations:
    <= 0.5% of the pot after 200 (measured: 0.47% after 100, 0.24% after 200)."""
    cut, s100, s200 = cfrd
    pot = 20.0
    e100, e200 = (float(cfrjax.exploitability(whole, cfrjax.public.depth.completed_policy(cut, s, whole))) for s in (s100, s200))
    assert e200 < e100
    assert 100 * e200 / pot <= 0.5
    with pytest.raises(ValueError, match="leaf function's state"):
        cfrjax.save_checkpoint("unused.npz", cut, s200)
    with pytest.raises(ValueError, match="both init and update"):
        cfrjax.public.depth.LeafFunction(lambda i, a, b: (a, b), init=lambda i, d: None)


def _by_code(cut, game, policy):
    """A cut game's policy written into `game`'s layout at the information sets of the same
    public node code (the others uniform)."""
    full = np.asarray(cfrjax.policy.uniform_policy(game)).copy()
    codes, start = list(game.labels.node_codes), game.labels.node_slot_start
    for i, code in enumerate(cut.labels.node_codes):
        a, b = cut.labels.node_slot_start[i], cut.labels.node_slot_start[i + 1]
        c = start[codes.index(code)]
        full[c:c + b - a] = np.asarray(policy)[a:b]
    return jnp.asarray(full)


@pytest.mark.parametrize("street", cases(["turn", "flop"], ["flop"]))
def test_showdown_leaf_is_the_spot_without_later_betting(street, request):
    """The showdown leaf (checking down; below a flop's turn card, its mean over the rivers)
    makes the cut game the spot whose later streets have no betting: the same value and
    best responses for any trunk policy. A turn spot is cut below its river card, a flop
    spot below its turn card."""
    spot, later = (BASE, ("river",)) if street == "turn" else (FLOP, ("turn", "river"))
    whole = request.getfixturevalue("whole" if street == "turn" else "flop")
    betting = {"bet": "100%", **{s: {"bet": ""} for s in later}}
    nobet = build_public(PokerSubgameSpec(**dict(spot, raise_cap=0), betting=betting), hands="range")
    cut = cfrjax.depth_limited(whole, cfrjax.public.depth.showdown_leaf)
    assert cut.depth_limited and cut.num_slots == 8 and cut.num_infosets == 4
    assert (cut.num_boards, cut.num_roots) == ((48, 3) if street == "turn" else (49, 3))
    assert cut.labels.node_codes == ("", "k.b20", "k", "b20")
    for seed in range(2):
        pol = random_policy(cut, seed)
        ref = _by_code(cut, nobet, pol)
        assert float(cfrjax.expected_value(cut, pol)) == pytest.approx(float(cfrjax.expected_value(nobet, ref)),
                                                                       rel=1e-12)
        np.testing.assert_allclose(np.asarray(cfrjax.best_response_values(cut, pol)),
                                   np.asarray(cfrjax.best_response_values(nobet, ref)), rtol=1e-12)


def test_root_subgame_is_the_forest_below_its_root(whole):
    """A leaf solve's game (`_root_subgame`: one forest root's subtree on one board, its own
    public game) has, under the same strategies and the root's reach as its ranges, every
    node's reach and values of the whole game's forest below that root, to the bit."""
    from cfrjax.public import depth, forest
    rng = np.random.default_rng(0)
    pol = cfrjax.policy.normalize(whole, jnp.asarray(rng.random(whole.slot_shape)))
    node_values = jax.jit(cfrjax.public.values.node_values)
    nodes = node_values(whole, pol)
    (t0, t1), (s0, s1), split, B = whole.trunk_slots, whole.forest_slots, whole.slot_split, whole.num_boards
    below = jnp.concatenate([pol[t0:t0 + B * s0].reshape(B, s0, -1), pol[split + t1:].reshape(B, s1, -1)], axis=1)
    root_of = np.asarray(whole.forest_root_of)
    tables = forest.board_tables(whole, False)
    for k in range(whole.num_roots):
        sub, rows = depth._root_subgame(whole, k)
        assert sub.num_boards == 1 and sub.num_roots == 1 and not sub.trunk_levels
        for b in (0, B - 1):
            g = depth._on_board(sub, {n: v[b] for n, v in tables.items()}, nodes["forest_reach"][b, k])
            out = node_values(g, below[b, rows])
            for name in ("forest_reach", "forest_values"):
                np.testing.assert_array_equal(np.asarray(out[name][0]), np.asarray(nodes[name][b, root_of == k]))


def test_exact_leaf_values_agree_with_a_full_depth_solve(whole):
    """The leaf solves (`exact_leaf`, on the solver) against a full-depth solve of the same
    spot, below the full solve's trunk: at every leaf, player 0's value of the subgame under
    the leaf solves' strategies and under the full solve's are each within their profile's
    gain from deviating below the cut (both players', at that leaf) of the subgame's
    equilibrium value, so they differ by at most the sum; summed over the leaves, in
    chips."""
    from cfrjax.public import depth
    pol = cfrjax.average_policy(whole, cfrjax.solve(whole, cfrjax.init(whole, dtype="float64"), 200))
    leaf = cfrjax.public.depth.exact_leaf(whole, 100, warm=None)
    cut = cfrjax.depth_limited(whole, leaf)
    (t0, t1), split, R = whole.trunk_slots, whole.slot_split, whole.num_roots
    trunk = jnp.concatenate([pol[:t0], pol[split:split + t1]])
    full, nc_leaf = jax.jit(lambda p: cfrjax.public.depth.exact_leaf_policy(cut, p, leaf, whole))(trunk)

    @jax.jit
    def check(full, pol):
        nodes = cfrjax.public.values.node_values(whole, pol)
        reach = nodes["forest_reach"][:, :R]                                      # [B, R, 2, H] at the leaves

        def value(values):   # [B, R]: player 0's value of each leaf's subgame
            return jnp.sum(reach[:, :, 0] * values[:, :R, 0], axis=-1)
        ours = value(cfrjax.public.values.node_values(whole, full)["forest_values"])
        return jnp.sum(jnp.abs(ours - value(nodes["forest_values"]))), depth.below_cut_nashconv(whole, pol, reach)
    gap, nc_whole = map(float, check(full, pol))
    assert 0 <= float(nc_leaf) < 0.05 and 0 <= nc_whole < 0.05
    assert gap <= float(nc_leaf) + nc_whole + 1e-9
    assert gap > 0                                                                  # two different profiles
