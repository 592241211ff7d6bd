"""Rake in poker spots (`PokerSubgameSpec.rake_rate` / `rake_cap`, public form only).

Expected values come from the independent brute-force evaluator (`poker_brute_force.py`,
given the rake there deal by deal from the rules) and from hand calculation; a raked game
with its rake set to zero must give the unraked game's numbers; a CFR solve of a raked
spot drives postflop-solver's exploitability (mean of best response minus value) to zero;
the tabular builder refuses a raked spec.
"""

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax.games.poker import PokerSpecError, PokerSubgameSpec, build_spec, config_from_dict
from cfrjax.games.poker.public_tree import build_public

jax.config.update("jax_enable_x64", True)

RIVER = "Ks Js Th 7d 2c"
TURN = "Ks Js Th 7d"
# Pot 20, 50 behind: a called pot bet makes a pot of 60 (rake 3 = the cap), a half-pot bet
# called 40 (rake 2), a check-down 20 (rake 1): the cap binds at some terminals only.
RAKE = dict(rake_rate=0.05, rake_cap=3.0)
# River: AQ makes the broadway straight, so AcQd and AhQh tie, as do 9h9d and 9s9c (a pair
# of nines, K J T kickers): ties split the rake.
RIVER_HANDS = (["AcQd", "9h9d", "KhQh", "8h8c", "AsAh"], ["AhQh", "9s9c", "KdKc", "Ad2d", "7h6h"])
TURN_HANDS = (["AsAh", "QhQd", "9h8h"], ["AdKd", "Qs9s", "8c7c"])


@jax.jit
def _numbers(game, policy):
    """`(expected values [2], best-response values [2])`."""
    return cfrjax.best_response.expected_values(game, policy), cfrjax.best_response_values(game, policy)


def _spot(board, hands, seed, **kw) -> PokerSubgameSpec:
    """Weighted ranges over `hands`; on the river half-pot and pot bets and one pot raise,
    on the turn (whose compile costs more per node) pot bets only: a turn pot bet called
    leaves a river all-in."""
    rng = np.random.default_rng(seed)
    w = [{h: float(rng.uniform(0.2, 1.0)) for h in hs} for hs in hands]
    bets = dict(bet_fractions=(0.5, 1.0), raise_fractions=(1.0,), raise_cap=1) if len(board) > 11 else \
        dict(bet_fractions=(1.0,), raise_cap=0)
    return PokerSubgameSpec(board=board, pot=20, stack=60, range0=w[0], range1=w[1], **bets, **kw)


def _policy(game, seed):
    """`[S, H]` a fixed non-uniform behaviour policy (some exact zeros)."""
    rng = np.random.default_rng(seed)
    x = rng.random(game.slot_shape) ** 2
    x = np.where(rng.random(game.slot_shape) < 0.2, 0.0, x)
    start = np.asarray(game.infoset_slot_start)
    tot = np.add.reduceat(x, start[:-1], axis=0)[np.asarray(game.slot_infoset)]
    return jnp.asarray(np.where(tot > 0, x / np.where(tot > 0, tot, 1), np.asarray(game.slot_uniform)[:, None]))


# ----------------------------------------------------------------------------------------
# Configuration.


def test_spec_fields_and_validation():
    cfg = PokerSubgameSpec(board=RIVER, range0="AA", range1="KK")
    assert cfg.rake_rate == 0.0 and cfg.rake_cap == math.inf and not cfg.raked
    assert PokerSubgameSpec(board=RIVER, rake_rate=0.05, range0="AA", range1="KK").raked
    assert not PokerSubgameSpec(board=RIVER, rake_rate=0.05, rake_cap=0, range0="AA", range1="KK").raked
    raked = PokerSubgameSpec(board=RIVER, range0="AA", range1="KK", **RAKE)
    assert raked.raked and hash(raked) != hash(cfg)
    np.testing.assert_array_equal(raked.rake([20.0, 40.0, 60.0, 220.0]), [1.0, 2.0, 3.0, 3.0])
    for kw, msg in ((dict(rake_rate=-0.01), "rake_rate -0.01 must be a fraction of the pot in \\[0, 1\\]"),
                    (dict(rake_rate=1.5), "rake_rate 1.5 must be"), (dict(rake_rate="lots"), "rake_rate 'lots' is not"),
                    (dict(rake_rate=math.nan), "rake_rate nan is not a number"),
                    (dict(rake_cap=-1), "rake_cap -1.0 must be chips >= 0 \\(inf: no cap\\)"),
                    (dict(rake_cap=None), "rake_cap None is not a number")):
        with pytest.raises(PokerSpecError, match=msg) as e:
            PokerSubgameSpec(board=RIVER, range0="AA", range1="KK", **kw)
        assert "\n" not in str(e.value)


def test_toml_rake_table():
    base = dict(board=RIVER, ranges=dict(range0="AA", range1="KK"))
    cfg = config_from_dict(dict(base, rake=dict(rate=0.05, cap=3)))
    assert (cfg.rake_rate, cfg.rake_cap) == (0.05, 3.0)
    cfg = config_from_dict(dict(base, rake=dict(rate=0.1)))
    assert (cfg.rake_rate, cfg.rake_cap) == (0.1, math.inf)
    assert config_from_dict(dict(base, rake_rate=0.02, rake_cap=1)).rake_cap == 1.0
    with pytest.raises(PokerSpecError, match=r"spec: unknown key\(s\) \['percent'\] in \[rake\]; allowed: "
                                             r"\['rate', 'cap'\]"):
        config_from_dict(dict(base, rake=dict(percent=5)))
    with pytest.raises(PokerSpecError, match="key 'rake_rate' given twice"):
        config_from_dict(dict(base, rake=dict(rate=0.05), rake_rate=0.05))
    with pytest.raises(PokerSpecError, match="spec: rake_cap -2.0 must be"):
        config_from_dict(dict(base, rake=dict(rate=0.05, cap=-2)))


def test_tabular_form_refuses_rake():
    cfg = _spot(RIVER, RIVER_HANDS, 0, **RAKE)
    msg = r"rake \(rate 0.05, cap 3\) makes the game non-zero-sum.*build the public form"
    with pytest.raises(PokerSpecError, match=msg) as e:
        build_spec(cfg)
    assert "\n" not in str(e.value)
    with pytest.raises(PokerSpecError, match=msg):
        cfrjax.load_game(cfg, form="tabular")


# ----------------------------------------------------------------------------------------
# Against the brute-force evaluator.


@pytest.mark.parametrize("street", ["river", "turn"])
def test_brute_force(street):
    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    board, hands = (RIVER, RIVER_HANDS) if street == "river" else (TURN, TURN_HANDS)
    cfg = _spot(board, hands, 1, **RAKE)
    game = build_public(cfg, hands="range")
    assert game.raked and game.labels.source["poker"]["rake"] == {"rate": 0.05, "cap": 3.0}
    spot = bf.Spot(board, cfg.pot, cfg.stack, cfg.bet_fractions, cfg.raise_fractions, cfg.raise_cap,
                   dict(cfg.range0), dict(cfg.range1), **RAKE)
    pol = _policy(game, 3)
    d = {key: tuple(np.asarray(pol)[sl, h]) for key, sl, h in game.labels.infoset_keys()}
    ev, br = (np.asarray(x) for x in _numbers(game, pol))
    want_ev = [spot.expected_value(d, 0), spot.expected_value(d, 1)]
    want_br = [spot.best_response_value(d, 0), spot.best_response_value(d, 1)]
    np.testing.assert_allclose(ev, want_ev, rtol=0, atol=1e-9)
    np.testing.assert_allclose(br, want_br, rtol=0, atol=1e-9)
    # Not zero-sum: the expected rake is positive (and would hide in a zero-sum reading).
    assert -(want_ev[0] + want_ev[1]) > 0.1


def test_payoffs_by_hand():
    """One deal, pure lines, rake by hand: AsAh vs KdKc on the river (KK makes a set, AA a
    pair), pot 20, 50 behind: the river game of `test_brute_force` with new ranges (no
    new compile)."""
    game = build_public(_spot(RIVER, RIVER_HANDS, 1, **RAKE), hands="range")
    names = game.labels.hand_names
    w0, w1 = (np.array([float(n == hand) for n in names]) for hand in ("AsAh", "KdKc"))
    game = cfrjax.public.set_ranges(game, w0, w1)
    codes = [code for code, _, _, _ in game.labels.decision_nodes()]

    def pure(choice):   # decision-node code -> action index (others: the first action)
        p = np.zeros(game.slot_shape)
        for code, (_, _, sl, _) in zip(codes, game.labels.decision_nodes()):
            p[sl.start + choice.get(code, 0)] = 1.0
        return jnp.asarray(p)

    cases = {"check-down": ({}, [-10.0, 9.0]),                  # pot 20, rake 1
             "half-pot bet, call": ({"": 1, "b10": 1}, [-20.0, 18.0]),   # pot 40, rake 2
             "pot bet, call": ({"": 2, "b20": 1}, [-30.0, 27.0]),        # pot 60, rake 3 (the cap)
             "pot bet, fold": ({"": 2, "b20": 0}, [9.0, -10.0]),         # the bet returns: pot 20, rake 1
             "pot bet, all-in, call": ({"": 2, "b20": 2, "b20.b50": 1}, [-60.0, 57.0])}   # pot 120, rake 3
    for name, (choice, want) in cases.items():
        ev, _ = _numbers(game, pure(choice))
        np.testing.assert_allclose(np.asarray(ev), want, atol=1e-12, err_msg=name)


# ----------------------------------------------------------------------------------------
# Zero rake is the unraked game.


def test_zero_rake_is_the_unraked_game():
    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    cfg = _spot(RIVER, RIVER_HANDS, 2)
    plain = build_public(cfg, hands="range")
    for zero in (dict(rake_rate=0.0, rake_cap=3.0), dict(rake_rate=0.05, rake_cap=0.0)):
        g = build_public(dataclasses.replace(cfg, **zero), hands="range")
        assert not g.raked and g.labels.fingerprint == plain.labels.fingerprint
        assert jax.tree.structure(g) == jax.tree.structure(plain)
        assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(plain)))
    # The raked code path with every rake zeroed gives the zero-sum numbers (the unraked
    # brute force; test_public_form checks the unraked code path against it).
    raked = build_public(dataclasses.replace(cfg, **RAKE), hands="range")
    assert raked.labels.fingerprint != plain.labels.fingerprint
    zeroed = dataclasses.replace(
        raked, trunk_fold_values=jnp.stack([raked.trunk_fold_payoff, -raked.trunk_fold_payoff], 1),
        forest_fold_values=jnp.stack([raked.forest_fold_payoff, -raked.forest_fold_payoff], 1),
        forest_showdown_rake=jnp.zeros_like(raked.forest_showdown_rake))
    pol = _policy(plain, 4)
    d = {key: tuple(np.asarray(pol)[sl, h]) for key, sl, h in plain.labels.infoset_keys()}
    spot = bf.Spot(RIVER, cfg.pot, cfg.stack, cfg.bet_fractions, cfg.raise_fractions, cfg.raise_cap,
                   dict(cfg.range0), dict(cfg.range1))
    v = spot.expected_value(d)
    want_br = [spot.best_response_value(d, 0), spot.best_response_value(d, 1)]
    ev, br = (np.asarray(x) for x in _numbers(zeroed, pol))
    np.testing.assert_allclose(ev, [v, -v], rtol=0, atol=1e-9)
    np.testing.assert_allclose(br, want_br, rtol=0, atol=1e-9)
    assert np.all(np.asarray(_numbers(raked, pol)[1]) < np.array(want_br) - 0.1)   # the rake costs both


# ----------------------------------------------------------------------------------------
# Solving.


def test_cfr_solves_a_raked_spot():
    """CFR (the default DCFR, float64) on a raked river spot, to a target exploitability:
    the exploitability postflop's way (`cfrjax.exploitability` inside the solve's
    evaluation) falls below 0.01% of the pot, and equals the mean of best response minus
    value of the average policy."""
    cfg = _spot(RIVER, RIVER_HANDS, 5, **RAKE)
    game = build_public(cfg, hands="range")
    target = 1e-4 * cfg.pot
    state, trace = cfrjax.solve_with_trace(game, cfrjax.init(game, dtype="float64"), eval_every=50,
                                target_exploitability=target, max_iterations=1000)
    e = np.asarray(trace.exploitability)
    assert e[0] > 20 * target and e[-1] < target and len(e) < 20
    pol = cfrjax.average_policy(game, state)
    ev, br = (np.asarray(x) for x in _numbers(game, pol))
    assert e[-1] == pytest.approx(0.5 * np.sum(br - ev), rel=1e-10)       # postflop-solver's definition
    assert trace.value[-1] == pytest.approx(ev[0], rel=1e-10)
    assert np.all(br - ev > -1e-12) and np.all(br - ev < 2 * target)   # each player near a best response
    np.testing.assert_allclose(cfrjax.driver.evaluate_values(game, state), ev, rtol=1e-10)
