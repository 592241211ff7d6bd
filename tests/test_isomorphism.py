"""Suit isomorphism (`isomorphism = true`, `cfrjax.games.poker.isomorphism`,
docs/design/isomorphism.md): the merged game against the unmerged one, in float64.

Entries are mapped by information-set key: every key of the unmerged game resolves in the
merged one (`infoset_index`: a member card's node is its representative's, the hand's
suits permuted), so a merged policy expands to the unmerged layout key by key. Spots: a
two-tone turn (d<->c), a monotone flop (any permutation of h, d, c) and a paired flop
(d<->c), one bet size, narrow rank-based ranges.

Equal solves: the iterations agree by key to 1e-9 until an exact tie (regret matching's
discontinuity at zero regret, rounded differently on two isomorphic boards of the
unmerged game, which then ceases to be suit-symmetric) parts them, as it parts the
unmerged game's own native and XLA updates: 20 iterations on the turn and the monotone
flop, 3 on the paired flop (`ITERATIONS`). The exact
claim is the passes', for any suit-symmetric profile: values per hand, both best responses
and the exploitability, checked on the average profile after the solve and on random
symmetric profiles (`test_symmetric_profile_values_equal`).
"""

import dataclasses
import itertools

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import strategy
from cfrjax.games.poker import PokerSubgameSpec, root_ranges, set_root_ranges
from cfrjax.games.poker.cards import COMBO_INDEX, PokerSpecError
from cfrjax.games.poker.public_tree import build_public, public_plan, public_shapes
from cfrjax.memory import memory_plan
from cfrjax.plan import MERGED, Plan, resolve_plan, use
from cfrjax.public import passes as public_passes
from key_index import key_index
from selection import cases

TURN = PokerSubgameSpec(board="Ks Js 7h 2h", pot=20, stack=30, bet_fractions=(0.75,), raise_cap=0,
                        range0="AA,KQs,T9s,QJo", range1="KK,JTs,A5s,98o")
MONOTONE = PokerSubgameSpec(board="8s 6s 2s", pot=20, stack=30, bet_fractions=(1.0,), raise_cap=0,
                            range0="AA,KQs", range1="99,JTs")
PAIRED = PokerSubgameSpec(board="Kd Kc 4h", pot=20, stack=30, bet_fractions=(1.0,), raise_cap=0,
                          range0="AA,K4s,QJs", range1="44,KQo,T9s")
SPOTS = {"turn": TURN, "monotone": MONOTONE, "paired": PAIRED}

_GAMES = {}


def _games(name):
    """`(merged, unmerged)` of spot `name`, both on the XLA passes (the merged game's only
    ones), built once per module run."""
    if name not in _GAMES:
        spot = SPOTS[name]
        _GAMES[name] = build_public(spot, isomorphism=True), use(build_public(spot), "xla")
    return _GAMES[name]


_SOLVED = {}
#: Iterations compared per spot: on the paired flop an exact tie parts the two trajectories
#: at the fourth or fifth iteration (the module docstring), on the others not within 20.
ITERATIONS = {"turn": 20, "monotone": 20, "paired": 3}


def _solved(name):
    """`(merged state, unmerged state)` after `ITERATIONS[name]` CFR iterations
    (simultaneous order, float64), once per run."""
    if name not in _SOLVED:
        kw = dict(rule="cfr", order="simultaneous", dtype="float64")   # one program per solve
        _SOLVED[name] = tuple(cfrjax.solve(g, cfrjax.init(g, **kw), ITERATIONS[name]) for g in _games(name))
    return _SOLVED[name]


@jax.jit
def _evaluated(game, policy):
    """`(best responses [2], expected values [2], root values per hand [2, H])`."""
    br, ev = public_passes.evaluation(game, policy)
    return br, ev, public_passes.hand_values(game, policy)


@pytest.mark.parametrize("name", cases(list(SPOTS), ["turn"]))
def test_merged_solve_equals_unmerged(name):
    """CFR (`ITERATIONS`): regrets, averages and the average policy equal by key (the
    unmerged key's entry is the merged representative's at the suit-permuted hand);
    game value, both best responses, exploitability and root values per hand of the
    average profile equal to 1e-9."""
    merged, unmerged = _games(name)
    assert merged.num_boards < unmerged.num_boards and merged.num_slots < unmerged.num_slots
    sm, su = _solved(name)
    iu, im = key_index(unmerged, merged)
    np.testing.assert_allclose(np.asarray(sm.regret)[im], np.asarray(su.regret)[iu], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.asarray(sm.avg)[im], np.asarray(su.avg)[iu], rtol=1e-9, atol=1e-12)
    pm, pu = cfrjax.average_policy(merged, sm), cfrjax.average_policy(unmerged, su)
    np.testing.assert_allclose(np.asarray(pm)[im], np.asarray(pu)[iu], rtol=1e-9, atol=1e-12)
    (bm, em, vm), (bu, eu, vu) = _evaluated(merged, pm), _evaluated(unmerged, pu)
    np.testing.assert_allclose(bm, bu, rtol=1e-9, atol=1e-12)      # both best responses
    np.testing.assert_allclose(em, eu, rtol=1e-9, atol=1e-12)      # the game value, both players
    np.testing.assert_allclose(float(np.mean(bm)), float(np.mean(bu)), rtol=1e-9)   # exploitability
    assert float(np.mean(bu)) > 1e-3                                   # not an equilibrium yet
    assert merged.labels.hand_names == unmerged.labels.hand_names
    np.testing.assert_allclose(vm, vu, rtol=1e-9, atol=1e-12)


def _symmetric_profile(merged, seed=0):
    """A random profile of the merged game that is suit-symmetric: at every decision node
    the strategy of hand h equals that of g(h) for each symmetry g fixing the node's dealt
    cards (drawn per orbit of hands, built here from the suit permutations)."""
    from cfrjax.games.poker.isomorphism import card_map, combo_map
    labels = merged.labels
    hands = np.asarray(labels.hands)
    rng = np.random.default_rng(seed)
    raw = np.zeros(merged.slot_shape)
    for i, (code, player, sl, names) in enumerate(labels.decision_nodes()):
        dealt = labels.node_dealt[i]
        perms = [p for p in labels.merge.perms if all(card_map(p)[c] == c for c in dealt)]
        orbit_min = np.min([combo_map(p)[hands] for p in perms], axis=0)          # [H] a label per orbit
        draws = {int(o): rng.random(len(names)) for o in np.unique(orbit_min)}
        x = np.stack([draws[int(o)] for o in orbit_min], axis=1)                   # [A, H]
        raw[sl] = x / x.sum(axis=0)
    return raw


@pytest.mark.parametrize("name", cases(list(SPOTS), ["turn"]))
def test_symmetric_profile_values_equal(name):
    """Any suit-symmetric profile (random, drawn per orbit of hands), expanded by key to
    the unmerged layout: values per hand, both best responses and the expected values
    agree to 1e-9 (the passes' claim, beyond the solve's first iterations)."""
    merged, unmerged = _games(name)
    iu, im = key_index(unmerged, merged)
    pm = _symmetric_profile(merged)
    pu = np.full(unmerged.slot_shape, 0.5)
    pu[iu] = pm[im]
    (bm, em, vm), (bu, eu, vu) = _evaluated(merged, pm), _evaluated(unmerged, pu)
    np.testing.assert_allclose(bm, bu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(em, eu, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(vm, vu, rtol=1e-9, atol=1e-12)
    assert float(np.mean(bu)) > 1e-2


def _brute_force_orbits(board, cards, fixed=()):
    """Orbits of `cards` under every suit permutation that maps `board` onto itself and
    fixes each card of `fixed` (the turn card above a river), computed here by
    enumeration (not by the code under test)."""
    perms = []
    for p in itertools.permutations(range(4)):
        image = {4 * (c // 4) + p[c % 4] for c in board}
        if image == set(board) and all(4 * (c // 4) + p[c % 4] == c for c in fixed):
            perms.append(p)
    orbits = {frozenset(4 * (c // 4) + p[c % 4] for p in perms) for c in cards}
    return orbits


def test_monotone_flop_has_23_turn_classes():
    """8s6s2s: 10 spade turn cards stay alone, the 39 others fall into 13 classes (one
    per rank, its h, d and c cards): 23, counted by brute force here; the merged game
    deals one representative (the lowest card id) per class."""
    merged, unmerged = _games("monotone")
    board = [int(c) for c in MONOTONE.board_cards]
    rest = [c for c in range(52) if c not in board]
    orbits = _brute_force_orbits(board, rest)
    assert len(orbits) == 23 and sum(len(o) == 1 for o in orbits) == 10
    assert merged.board_groups == 23 and unmerged.board_groups == 49
    turns = merged.labels.merge.turn_cards().tolist()
    assert sorted(turns) == sorted(min(o) for o in orbits)
    # below a heart turn card (d <-> c left) and a spade one (h, d, c all interchangeable)
    for t in (4 * 12 + 1, 4 * 12 + 0):   # Ah, As
        stay = [c for c in rest if c != t]
        want = _brute_force_orbits(board, stay, fixed=[t])
        got = [r for (tt, r) in _boards(merged) if tt == t]
        assert sorted(got) == sorted(min(o) for o in want)


def test_paired_flop_and_two_tone_turn_classes():
    """KdKc4h (d <-> c): 25 turn cards alone (spades, hearts) + 12 d/c pairs = 37 classes,
    counted by brute force here, as the river cards below each representative turn card
    and the two-tone turn's river cards (KsJs7h2h, d <-> c: 22 alone + 13 pairs = 35)."""
    merged, _ = _games("paired")
    board = [int(c) for c in PAIRED.board_cards]
    rest = [c for c in range(52) if c not in board]
    turns = _brute_force_orbits(board, rest)
    assert len(turns) == 37 and merged.board_groups == 37
    assert sorted(merged.labels.merge.turn_cards().tolist()) == sorted(min(o) for o in turns)
    boards = _boards(merged)
    for t in sorted(min(o) for o in turns):
        want = _brute_force_orbits(board, [c for c in rest if c != t], fixed=[t])
        assert sorted(r for tt, r in boards if tt == t) == sorted(min(o) for o in want)
    turn, _ = _games("turn")
    board = [int(c) for c in TURN.board_cards]
    want = _brute_force_orbits(board, [c for c in range(52) if c not in board])
    assert len(want) == 35 and turn.num_boards == 35
    assert sorted(d[0] for d in set(turn.labels.node_dealt) if d) == sorted(min(o) for o in want)


def _boards(game):
    """`[(turn, river)]` of a flop game's boards, from its labels."""
    out = []
    for d in game.labels.node_dealt:
        if len(d) == 2 and tuple(d) not in out:
            out.append(tuple(d))
    return out


def test_strategy_table_answers_for_every_member():
    """The merged game's strategy table lists every key of the unmerged game (each member
    card's nodes, the hands' suits permuted), with the probabilities of the policy the
    unmerged layout gets by key; policies by key read the same entries."""
    merged, unmerged = _games("turn")
    iu, im = key_index(unmerged, merged)
    pm = np.asarray(cfrjax.average_policy(merged, _solved("turn")[0]))
    pu = np.zeros(unmerged.slot_shape)
    pu[iu] = pm[im]
    rows_m = {(r["infoset"], r["action"]): r["probability"] for r in strategy.strategy_table(merged, pm)}
    rows_u = {(r["infoset"], r["action"]): r["probability"] for r in strategy.strategy_table(unmerged, pu)}
    assert rows_m.keys() == rows_u.keys()
    assert all(abs(rows_m[k] - rows_u[k]) <= 1e-12 for k in rows_u)
    assert strategy.policy_dict(merged, pm) == strategy.policy_dict(unmerged, pu)


def test_ranges_that_differ_by_suit_build_unmerged():
    """AdKd without AcKc: no symmetry keeps the ranges, so the game is built unmerged
    (no error), as it is with isomorphism off."""
    spot = dataclasses.replace(TURN, range0="AA,AdKd,T9s")
    game = build_public(spot, isomorphism=True)
    assert game.iso_perm is None and game.num_boards == 48
    assert resolve_plan(game, "cpu").fallbacks != (MERGED,)


def test_set_root_ranges_refuses_suit_asymmetric_weights():
    merged, _ = _games("turn")
    w0, w1 = root_ranges(merged)
    set_root_ranges(merged, w0 * 0.5, w1)          # symmetric: accepted
    w0 = w0.copy()
    w0[int(COMBO_INDEX[4 * 12 + 1, 4 * 12 + 2])] *= 0.5   # AhAd, not its image AhAc
    with pytest.raises(ValueError, match="isomorphism = false") as err:
        set_root_ranges(merged, w0, w1)
    assert "\n" not in str(err.value)
    hands = list(merged.labels.hands)   # the passes' own re-targeting checks the same
    with pytest.raises(ValueError, match="isomorphism = false"):
        public_passes.set_ranges(merged, w0[hands], w1[hands])
    with pytest.raises(ValueError, match="concrete ranges"):
        jax.jit(public_passes.set_ranges)(merged, np.ones(merged.num_hands), np.ones(merged.num_hands))


def test_locks_that_break_the_symmetry_are_refused():
    """A lock on a member card's node (Tc, solved as Td) or on one suit's hand alone where
    a symmetry keeps the node's cards (below 3s, above the river) is refused in one line;
    the same lock on every suit-isomorphic hand is taken."""
    merged, _ = _games("turn")
    state = cfrjax.init(merged, rule="cfr", dtype="float64")
    code = next(c for c, d in zip(merged.labels.node_codes, merged.labels.node_dealt) if d == (4 * 8 + 2,)
                and merged.labels.node_player[merged.labels.node_codes.index(c)] == 0)   # below Td
    member = code.replace("/Td/", "/Tc/")
    with pytest.raises(ValueError, match="isomorphism = false") as err:
        cfrjax.lock(merged, state, {f"P0|AhAd|{member}": [1.0, 0.0]})
    assert "\n" not in str(err.value)
    ok = cfrjax.lock(merged, state, {f"P0|AhAd|{code}": [1.0, 0.0]})   # Td is moved by d <-> c: no image
    assert int(np.asarray(ok.locked).sum()) == 2
    three = code.replace("/Td/", "/3s/")                                # d <-> c keeps 3s: AhAd's image is AhAc
    with pytest.raises(ValueError, match="not locked the same way"):
        cfrjax.lock(merged, state, {f"P0|AhAd|{three}": [1.0, 0.0]})
    locked = cfrjax.lock(merged, state, {f"P0|AhAd|{three}": [1.0, 0.0], f"P0|AhAc|{three}": [1.0, 0.0]})
    assert int(np.asarray(locked.locked).sum()) == 4
    with pytest.raises(ValueError, match="not locked the same way"):   # above the river: every symmetry
        cfrjax.lock(merged, state, {f"P0|KdQd|{merged.labels.node_codes[0]}": [1.0, 0.0]})


def test_random_ranges_are_unmerged_or_refused():
    """The data generator's spots take random ranges (different by suit): their spec
    turns isomorphism off whatever the template says; a batch of random ranges
    (`solve-batch`'s `random_batch`) on a merged game is refused in one line."""
    from cfrjax.datagen.dataset import spot_spec
    from cfrjax.multihost import random_batch
    template = dataclasses.replace(TURN, board="Ks Js 7h 2h 3d", isomorphism=True)
    assert spot_spec(template, template.board, 20.0, 30.0).isomorphism is False
    with pytest.raises(ValueError, match="isomorphism = false"):
        random_batch(_games("turn")[0], 2)


def test_plan_and_memory_count_the_merged_game():
    """The plan declines the kernels with a `fallbacks` entry (MERGED) and refuses a plan
    asking for them; the memory plan before building (`public_shapes`) is the built
    merged game's, smaller than the unmerged one's."""
    merged, unmerged = _games("turn")
    plan = resolve_plan(merged, "cpu")
    assert plan.fallbacks == (MERGED,) and not plan.native_forest and "suit-merged" in plan.summary()
    with pytest.raises(ValueError, match="suit-merged"):
        use(merged, Plan(native=True))
    shapes = public_shapes(TURN, isomorphism=True)
    assert shapes.sizes() == merged.sizes()
    assert memory_plan(shapes).total_bytes == memory_plan(merged).total_bytes
    merged_state = public_plan(dataclasses.replace(TURN, isomorphism=True)).group_bytes()["state"]
    assert merged_state < public_plan(TURN).group_bytes()["state"]   # (on a CPU the unmerged plan runs native code)


def test_node_reports_of_a_merged_turn():
    """Node reports of the merged turn spot equal the unmerged one's under the expanded
    policy: at the root (the trunk: equities over every member river card), at a
    representative river card's node and at a member's (its rows the representative's,
    suits permuted)."""
    from cfrjax.public.report import node_report
    merged, unmerged = _games("turn")
    iu, im = key_index(unmerged, merged)
    pm = np.asarray(cfrjax.average_policy(merged, _solved("turn")[0]))
    pu = np.full(unmerged.slot_shape, 0.5)
    pu[iu] = pm[im]
    rep = next(c for c in merged.labels.node_codes if "/Td/" in c)
    for code in ("", rep, rep.replace("/Td/", "/Tc/")):
        a, b = node_report(merged, pm, code), node_report(unmerged, pu, code)
        assert a.hands == b.hands and a.player == b.player and a.node == b.node == code
        for f in ("weight", "combos", "ev", "equity", "strategy"):
            np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=1e-9, atol=1e-12, equal_nan=True)
        assert np.isfinite(a.ev).any()


def test_what_a_merged_game_refuses():
    """Node reports of a merged flop, depth-limited cuts and per-player or padded hand
    lists: one line each."""
    merged, _ = _games("turn")
    from cfrjax.games.poker.depth import leaf_inputs
    from cfrjax.public.report import check_reportable
    with pytest.raises(ValueError, match="isomorphism = false"):
        check_reportable(build_public(PAIRED, isomorphism=True))
    with pytest.raises(PokerSpecError, match="isomorphism = false"):
        leaf_inputs(merged)
    with pytest.raises(PokerSpecError, match="isomorphism = false"):
        build_public(TURN, hands="player", isomorphism=True)
    with pytest.raises(PokerSpecError, match="must be true or false"):
        dataclasses.replace(TURN, isomorphism="yes")


def test_policy_files_by_key(tmp_path):
    """A merged game's JSON policy names every member key: it loads into the unmerged game
    (the expanded policy) and back; a policy with different strategies on two isomorphic
    keys is refused when loaded into the merged game (one line)."""
    merged, unmerged = _games("turn")
    iu, im = key_index(unmerged, merged)
    pm = np.asarray(cfrjax.average_policy(merged, _solved("turn")[0]))
    path = str(tmp_path / "merged.json")
    strategy.save_policy(path, merged, pm)
    pu = np.array(strategy.load_policy(path, unmerged, dtype="float64"))
    np.testing.assert_array_equal(pu[iu], pm[im])
    np.testing.assert_array_equal(np.asarray(strategy.load_policy(path, merged, dtype="float64")), pm)
    sl, h = unmerged.infoset_index(next(k for k, _, _ in unmerged.labels.infoset_keys() if "/Tc/" in k))
    pu[sl, h] = [1.0, 0.0] if pu[sl.start, h] != 1.0 else [0.0, 1.0]   # one suit's node alone
    other = str(tmp_path / "asymmetric.json")
    strategy.save_policy(other, unmerged, pu)
    with pytest.raises(ValueError, match="isomorphism = false") as err:
        strategy.load_policy(other, merged)
    assert "\n" not in str(err.value)


def test_command_line_flag(tmp_path, capsys):
    """`--isomorphism on` builds the merged game (`cfrjax show` of a flop then refuses in
    one line before solving, exit code 2); on a game that is not a poker spec the flag is
    refused in one line."""
    from cfrjax import cli
    path = tmp_path / "paired.toml"
    path.write_text('board = "Kd Kc 4h"\npot = 20\nstack = 30\nbet_fractions = [1.0]\nraise_cap = 0\n'
                    'range0 = "AA,K4s,QJs"\nrange1 = "44,KQo,T9s"\n')
    assert cli.main(["show", str(path), "k", "--isomorphism", "on", "--iterations", "10"]) == 2   # before solving
    err = capsys.readouterr().err.strip()
    assert err.startswith("cfrjax: error:") and "isomorphism = false" in err and "\n" not in err
    pytest.importorskip("pyspiel", reason="the game that is not a poker spec: Kuhn poker from OpenSpiel")
    assert cli.main(["solve", "kuhn_poker", "--isomorphism", "on", "--iterations", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "isomorphism=True" in err and "\n" not in err
