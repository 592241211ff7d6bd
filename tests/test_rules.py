"""The CFR update-rule family (lcfr, dcfr, pcfr+, pdcfr+ besides cfr, cfr+): each rule
against the independent reference solver, DCFR(1,1,1) = LCFR, OpenSpiel's DCFR/LCFR,
jit/scan/vmap equivalence, no retrace, config validation, and target-driven solving."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import rules
from random_games import kuhn_spec
from reference import ReferenceCFR

ALL_RULES = rules.RULES
ORDERS = ("simultaneous", "alternating")


@pytest.fixture(scope="module")
def kuhn_explicit():
    return cfrjax.compile_game(kuhn_spec(), chance="explicit")


@pytest.fixture(scope="module")
def kuhn():
    return cfrjax.load_game("kuhn_poker")


def _as_dict(game, vec):
    """`[S]` vector -> {infoset key: its entries}."""
    vec = np.asarray(vec)
    return {key: vec[sl] for key, sl in game.infoset_slots().items()}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("rule", ALL_RULES)
def test_first_iterations_match_reference(kuhn_explicit, rule, order):
    game = kuhn_explicit
    state = cfrjax.init(game, rule=rule, order=order, dtype="float64")
    ref = ReferenceCFR(kuhn_spec(), rule=rule, averaging="linear", order=order)
    for _ in range(2):
        state = cfrjax.step(game, state)
        ref.iterate()
        # The reference discounts at the end of an iteration, cfrjax before the next one.
        regret = rules.discount(state.config, state.regret, state.iteration.astype(jnp.float64))
        for name, ours, theirs in [("regret", _as_dict(game, regret), ref.regrets()),
                                   ("average", _as_dict(game, cfrjax.average_policy(game, state)),
                                    ref.average_policy()),
                                   ("current", _as_dict(game, cfrjax.current_policy(game, state)),
                                    ref.current_policy())]:
            for key in theirs:
                np.testing.assert_allclose(ours[key], theirs[key], atol=1e-12, rtol=0, err_msg=f"{name} {key}")


@pytest.mark.parametrize("order", ORDERS)
def test_dcfr_111_equals_lcfr(kuhn_explicit, order):
    game = kuhn_explicit
    a = cfrjax.solve(game, cfrjax.init(game, rule="dcfr", order=order, dtype="float64", alpha=1, beta=1, gamma=1), 50)
    b = cfrjax.solve(game, cfrjax.init(game, rule="lcfr", order=order, dtype="float64"), 50)
    np.testing.assert_allclose(a.regret, b.regret, atol=1e-12, rtol=0)
    np.testing.assert_allclose(cfrjax.average_policy(game, a), cfrjax.average_policy(game, b), atol=1e-12, rtol=0)


@pytest.mark.parametrize("rule,kwargs", [("dcfr", {}), ("lcfr", {}), ("dcfr", dict(alpha=2.0, beta=-0.5, gamma=3.0))])
def test_dcfr_matches_openspiel(kuhn, rule, kwargs):
    """OpenSpiel's DCFRSolver / LCFRSolver (alternating, discount after the iteration):
    same average policy after 30 iterations."""
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import discounted_cfr
    os_game = pyspiel.load_game("kuhn_poker")
    sol = (discounted_cfr.LCFRSolver(os_game) if rule == "lcfr"
           else discounted_cfr.DCFRSolver(os_game, **kwargs))
    for _ in range(30):
        sol.evaluate_and_update_policy()
    theirs = sol.average_policy()
    state = cfrjax.solve(kuhn, cfrjax.init(kuhn, rule=rule, order="alternating", dtype="float64", **kwargs), 30)
    ours = _as_dict(kuhn, cfrjax.average_policy(kuhn, state))
    for key, probs in ours.items():
        np.testing.assert_allclose(probs, theirs.policy_for_key(key), atol=1e-10, rtol=0, err_msg=key)


@pytest.mark.parametrize("rule", ALL_RULES)
def test_step_does_not_retrace(kuhn, rule):
    traces = []

    @jax.jit
    def counted(game, state):
        traces.append(1)
        return cfrjax.step(game, state)

    state = cfrjax.init(kuhn, rule=rule)
    for _ in range(4):
        state = counted(kuhn, state)
    assert len(traces) == 1


def test_prediction_buffer(kuhn):
    for rule in ALL_RULES:
        s = cfrjax.solve(kuhn, cfrjax.init(kuhn, rule=rule), 3)
        assert s.prediction.shape == s.regret.shape
        assert bool(jnp.any(s.prediction != 0)) == (rule in rules.PREDICTIVE)


@pytest.mark.parametrize("kwargs,match", [
    (dict(rule="dcfr++"), "pdcfr\\+"), (dict(rule="dcfr", alpha=-1.0), "alpha"),
    (dict(rule="dcfr", alpha=float("nan")), "alpha"), (dict(rule="dcfr", gamma="2"), "gamma"),
    (dict(rule="cfr+", alpha=1.0), "alpha"), (dict(rule="lcfr", beta=0.5), "beta"),
    (dict(rule="dcfr", averaging="uniform"), "averaging")])
def test_config_validation(kuhn, kwargs, match):
    with pytest.raises(ValueError, match=match):
        cfrjax.init(kuhn, **kwargs)


def test_config_defaults():
    c = cfrjax.Config(rule="dcfr")
    assert (c.alpha, c.beta, c.gamma) == (1.5, 0.0, 2.0)
    c = cfrjax.Config(rule="pdcfr+")
    assert (c.alpha, c.beta, c.gamma) == (2.3, None, 5.0)
    assert hash(cfrjax.Config(rule="dcfr", alpha=2)) == hash(cfrjax.Config(rule="dcfr", alpha=2.0))


def test_target_driven_solve(kuhn):
    state = cfrjax.init(kuhn, rule="cfr+", order="alternating", dtype="float64")
    fixed, full = cfrjax.solve(kuhn, state, 1000, eval_every=50)
    eps = 1e-3
    first = int(np.argmax(np.asarray(full.exploitability) < eps))
    assert float(full.exploitability[first]) < eps and first > 0
    out, trace = cfrjax.solve(kuhn, state, eval_every=50, target_exploitability=eps, max_iterations=1000)
    np.testing.assert_array_equal(np.asarray(trace.iteration), np.asarray(full.iteration)[:first + 1])
    np.testing.assert_allclose(trace.exploitability, full.exploitability[:first + 1], rtol=1e-12)
    assert int(out.iteration) == int(trace.iteration[-1]) == 50 * (first + 1)
    chex.assert_trees_all_equal(out, cfrjax.solve(kuhn, state, 50 * (first + 1)))
    # Unreachable target: runs to the cap (rounded down to a chunk multiple).
    out, trace = cfrjax.solve(kuhn, state, eval_every=40, target_exploitability=0.0, max_iterations=130)
    np.testing.assert_array_equal(np.asarray(trace.iteration), [40, 80, 120])
    assert int(out.iteration) == 120
    # Already below target at the first checkpoint.
    out, trace = cfrjax.solve(kuhn, state, eval_every=10, target_exploitability=1.0, max_iterations=100)
    assert list(np.asarray(trace.iteration)) == [10]
    with pytest.raises(ValueError):
        cfrjax.solve(kuhn, state, 10, target_exploitability=1e-3, max_iterations=100, eval_every=10)
    with pytest.raises(ValueError):
        cfrjax.solve(kuhn, state, target_exploitability=1e-3, max_iterations=100)
