"""Pins the reference CFR / best-response oracle (`tests/reference.py`) to outside facts.

The oracle checks the compiled JAX solver, so it is itself checked against: brute-force
pure-strategy enumeration, Kuhn poker's analytic equilibrium family (value -1/18), and
OpenSpiel's python CFR solvers and exploitability on kuhn_poker and leduc_poker.
"""

from __future__ import annotations

import numpy as np
import pytest

import dataclasses

from cfrjax.games.openspiel import spec_from_openspiel
from cfrjax.spec import CHANCE, PLAYER0, PLAYER1, TERMINAL, GameSpec

try:
    from tests.random_games import kuhn_spec, random_spec
    from tests.reference import (ReferenceCFR, best_response, best_response_value,
                                 brute_force_best_response_value, expected_value, exploitability)
except ImportError:  # tests/ on sys.path instead of the repository root
    from random_games import kuhn_spec, random_spec
    from reference import (ReferenceCFR, best_response, best_response_value,
                           brute_force_best_response_value, expected_value, exploitability)

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import cfr as os_cfr  # noqa: E402
from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402

TOL = 1e-12
SMALL = dict(depth=2, deal_sizes=(2,), chance_sizes=(2,), action_counts=(2,), end_prob=0.4)
SMALL_SEEDS = (2, 3, 4)  # at most 1024 pure strategies per player under SMALL


def random_policy(spec: GameSpec, seed: int, sparse: bool = False) -> dict:
    """A random behaviour policy; with `sparse`, some actions get probability 0."""
    rng = np.random.default_rng(seed)
    out = {}
    for key, names in zip(spec.infoset_keys, spec.action_names):
        p = rng.dirichlet(np.ones(len(names)))
        if sparse and rng.random() < 0.4:
            p[rng.integers(len(names))] = 0.0
            p /= p.sum()
        out[key] = p
    return out


# ------------------------------------------------------------------------- Kuhn
def kuhn_key(os_key: str) -> str:
    """OpenSpiel kuhn information_state_string ("0pb": card index, history) -> our key."""
    return f"{(len(os_key) - 1) % 2}:{'JQK'[int(os_key[0])]}:{os_key[1:]}"


def kuhn_equilibrium(alpha: float) -> dict:
    """Kuhn's equilibrium family: player 0 bets J with alpha, K with 3 alpha, calls Q with alpha + 1/3."""
    return {
        "0:J:": [1 - alpha, alpha], "0:J:pb": [1, 0],
        "0:Q:": [1, 0], "0:Q:pb": [2 / 3 - alpha, 1 / 3 + alpha],
        "0:K:": [1 - 3 * alpha, 3 * alpha], "0:K:pb": [0, 1],
        "1:J:p": [2 / 3, 1 / 3], "1:J:b": [1, 0],
        "1:Q:p": [1, 0], "1:Q:b": [2 / 3, 1 / 3],
        "1:K:p": [0, 1], "1:K:b": [0, 1],
    }


def test_kuhn_spec_structure():
    spec = kuhn_spec()
    assert spec.num_nodes == 58 and spec.num_infosets == 12
    assert int((spec.kind == TERMINAL).sum()) == 30 and int((spec.kind == CHANCE).sum()) == 4
    os_game = pyspiel.load_game("kuhn_poker")
    os_keys = set(os_policy.TabularPolicy(os_game).state_lookup)
    assert {kuhn_key(k) for k in os_keys} == set(spec.infoset_keys)


@pytest.mark.parametrize("seed", range(6))
def test_kuhn_best_response_matches_brute_force(seed):
    spec = kuhn_spec()
    pol = random_policy(spec, seed, sparse=seed % 2 == 1)
    for player in (0, 1):
        assert abs(best_response_value(spec, pol, player)
                   - brute_force_best_response_value(spec, pol, player)) < TOL


@pytest.mark.parametrize("alpha", [0.0, 1 / 6, 1 / 3])
def test_kuhn_analytic_equilibrium(alpha):
    spec = kuhn_spec()
    pol = {k: np.array(v, float) for k, v in kuhn_equilibrium(alpha).items()}
    assert abs(expected_value(spec, pol) + 1 / 18) < TOL
    assert abs(best_response_value(spec, pol, 0) + 1 / 18) < TOL
    assert abs(best_response_value(spec, pol, 1) - 1 / 18) < TOL
    assert abs(exploitability(spec, pol)) < TOL
    # Perturbing an equilibrium strategy makes it exploitable.
    pol["1:Q:b"] = np.array([0.5, 0.5])
    assert exploitability(spec, pol) > 1e-3


def _to_os_policy(game, spec: GameSpec, pol: dict, key_map) -> "os_policy.TabularPolicy":
    """Our key -> probs dict as an OpenSpiel TabularPolicy (action names are OpenSpiel ids)."""
    tab = os_policy.TabularPolicy(game)
    names = dict(zip(spec.infoset_keys, spec.action_names))
    for os_key, row in tab.state_lookup.items():
        key = key_map(os_key)
        tab.action_probability_array[row] = 0.0
        tab.action_probability_array[row, _os_actions(names[key])] = pol[key]
    return tab


def _os_actions(names) -> list[int]:
    return [int(a) if a.isdigit() else "pb".index(a) for a in names]


def _check_against_openspiel(game, spec, key_map, rule, averaging, order, checkpoints):
    """Run ReferenceCFR and OpenSpiel's CFR side by side; compare at each checkpoint."""
    alternating, plus, linear = order == "alternating", rule == "cfr+", averaging == "linear"
    if (alternating, plus, linear) == (True, False, False):
        solver = os_cfr.CFRSolver(game)
    elif (alternating, plus, linear) == (True, True, True):
        solver = os_cfr.CFRPlusSolver(game)
    else:  # _CFRSolver = _CFRSolverBase + its iteration loop
        solver = os_cfr._CFRSolver(game, alternating_updates=alternating,
                                   linear_averaging=linear, regret_matching_plus=plus)
    ref = ReferenceCFR(spec, rule=rule, averaging=averaging, order=order)
    names = dict(zip(spec.infoset_keys, spec.action_names))
    for n in checkpoints:
        while ref.iteration < n:
            ref.iterate()
            solver.evaluate_and_update_policy()
        avg, cur, reg = ref.average_policy(), ref.current_policy(), ref.regrets()
        os_avg, os_cur = solver.average_policy(), solver.current_policy()
        for os_key, row in os_avg.state_lookup.items():
            key = key_map(os_key)
            acts = _os_actions(names[key])
            np.testing.assert_allclose(avg[key], os_avg.action_probability_array[row, acts], rtol=0, atol=TOL)
            np.testing.assert_allclose(cur[key], os_cur.action_probability_array[row, acts], rtol=0, atol=TOL)
            os_reg = solver._info_state_nodes[os_key].cumulative_regret
            os_reg = np.array([os_reg[a] for a in acts])
            np.testing.assert_allclose(reg[key], os_reg, rtol=0, atol=TOL * max(1.0, np.abs(os_reg).max()))
    assert abs(exploitability(spec, avg) - os_exploitability.exploitability(game, os_avg)) < TOL


COMBOS = [(r, a, o) for o in ("alternating", "simultaneous") for r in ("cfr", "cfr+") for a in ("uniform", "linear")]


@pytest.mark.parametrize("rule,averaging,order", COMBOS)
def test_kuhn_cfr_matches_openspiel(rule, averaging, order):
    game = pyspiel.load_game("kuhn_poker")
    _check_against_openspiel(game, kuhn_spec(), kuhn_key, rule, averaging, order, (1, 10, 100))


@pytest.mark.parametrize("seed", range(4))
def test_kuhn_exploitability_matches_openspiel(seed):
    game, spec = pyspiel.load_game("kuhn_poker"), kuhn_spec()
    pol = random_policy(spec, seed, sparse=seed % 2 == 1)
    os_value = os_exploitability.exploitability(game, _to_os_policy(game, spec, pol, kuhn_key))
    assert abs(exploitability(spec, pol) - os_value) < TOL


# ------------------------------------------------------------------------ Leduc
@pytest.fixture(scope="module")
def leduc():
    game = pyspiel.load_game("leduc_poker")
    spec = spec_from_openspiel(game)
    spec = dataclasses.replace(spec, action_names=tuple(tuple(str(a) for a in ids) for ids in spec.action_ids))
    assert spec.num_nodes == 9457 and spec.num_infosets == 936
    return game, spec


@pytest.mark.parametrize("rule,averaging,order", [("cfr", "uniform", "alternating"),
                                                  ("cfr+", "linear", "simultaneous")])
def test_leduc_cfr_matches_openspiel(leduc, rule, averaging, order):
    game, spec = leduc
    _check_against_openspiel(game, spec, lambda k: k, rule, averaging, order, (1, 3))


def test_leduc_exploitability_matches_openspiel(leduc):
    game, spec = leduc
    pol = random_policy(spec, 7, sparse=True)
    os_value = os_exploitability.exploitability(game, _to_os_policy(game, spec, pol, lambda k: k))
    assert abs(exploitability(spec, pol) - os_value) < TOL


def test_leduc_thirty_iterations_converge(leduc):
    _, spec = leduc
    ref = ReferenceCFR(spec, rule="cfr+", averaging="linear", order="alternating")
    first = exploitability(spec, ref.run(1).average_policy())
    last = exploitability(spec, ref.run(29).average_policy())
    assert ref.iteration == 30 and 0 <= last < 0.25 * first


# ----------------------------------------------------------------- random games
@pytest.mark.parametrize("seed", range(8))
def test_random_spec_properties(seed):
    spec = random_spec(seed)  # GameSpec construction validates (incl. perfect recall)
    assert 200 <= spec.num_nodes <= 5000
    parent = spec.parent
    depth = np.zeros(spec.num_nodes, int)
    for h in range(spec.num_nodes):  # depth by walking up (small games)
        d, x = 0, h
        while parent[x] >= 0:
            x, d = parent[x], d + 1
        depth[h] = d
    chance = spec.kind == CHANCE
    assert len(set(depth[chance])) >= 3, "chance acts at several levels"
    kids = spec.chance_prob[parent >= 0][chance[parent[parent >= 0]]]
    assert np.unique(np.round(kids, 12)).size > 4, "chance probabilities are non-uniform"
    counts = np.bincount(spec.infoset[spec.kind <= PLAYER1], minlength=spec.num_infosets)
    assert counts.max() >= 2 and (counts >= 2).mean() > 0.3, "infosets group several histories"
    assert set(spec.infoset_num_actions.tolist()) <= {2, 3}
    again = random_spec(seed)
    assert np.array_equal(again.parent, spec.parent) and again.infoset_keys == spec.infoset_keys


def test_random_spec_permutation_invariance():
    a, b = random_spec(5, permute=True), random_spec(5, permute=False)
    assert int(np.flatnonzero(a.parent == -1)[0]) != 0 and int(np.flatnonzero(b.parent == -1)[0]) == 0
    ra = ReferenceCFR(a, rule="cfr", order="alternating").run(20)
    rb = ReferenceCFR(b, rule="cfr", order="alternating").run(20)
    pa, pb = ra.average_policy(), rb.average_policy()
    assert set(pa) == set(pb)
    for k in pa:
        np.testing.assert_allclose(pa[k], pb[k], rtol=0, atol=TOL)
    assert abs(exploitability(a, pa) - exploitability(b, pb)) < TOL


@pytest.mark.parametrize("seed", SMALL_SEEDS)
def test_random_best_response_matches_brute_force(seed):
    for zero_prob in (False, True):
        spec = random_spec(seed, zero_prob=zero_prob, **SMALL)
        for pseed in range(2):
            pol = random_policy(spec, 100 * seed + pseed, sparse=pseed == 1)
            for player in (0, 1):
                v = best_response_value(spec, pol, player)
                assert abs(v - brute_force_best_response_value(spec, pol, player)) < TOL
            # A best response is at least as good as following the policy.
            ev = expected_value(spec, pol)
            assert best_response_value(spec, pol, 0) >= ev - TOL
            assert best_response_value(spec, pol, 1) >= -ev - TOL


def test_best_response_choice_achieves_value():
    spec = random_spec(1)
    pol = random_policy(spec, 3)
    for player in (0, 1):
        value, choice = best_response(spec, pol, player)
        br = dict(pol)
        for key, a in choice.items():
            br[key] = np.eye(len(pol[key]))[a]
        ev = expected_value(spec, br)
        assert abs((ev if player == 0 else -ev) - value) < TOL


@pytest.mark.parametrize("order", ["simultaneous", "alternating"])
@pytest.mark.parametrize("rule", ["cfr", "cfr+"])
def test_random_game_cfr_converges(order, rule):
    spec = random_spec(0)
    ref = ReferenceCFR(spec, rule=rule, averaging="linear" if rule == "cfr+" else "uniform", order=order)
    early = exploitability(spec, ref.run(5).average_policy())
    late = exploitability(spec, ref.run(195).average_policy())
    assert 0 <= late < 0.2 * early


def test_brute_force_refuses_large_games(leduc):
    _, spec = leduc
    with pytest.raises(ValueError, match="pure strategies"):
        brute_force_best_response_value(spec, random_policy(spec, 0), 0)
