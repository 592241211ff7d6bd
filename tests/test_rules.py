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
from selection import cases
from cfrjax import rules
from cfrjax.driver import run_steps
from random_games import kuhn_spec
from reference import ReferenceCFR

ALL_RULES = rules.RULES
ORDERS = ("simultaneous", "alternating")


@pytest.fixture(scope="module")
def kuhn_explicit():
    return cfrjax.compile.compile_game(kuhn_spec(), chance="explicit")


@pytest.fixture(scope="module")
def kuhn():
    return cfrjax.load_game("kuhn_poker")


def _as_dict(game, vec):
    """`[S]` vector -> {infoset key: its entries}."""
    vec = np.asarray(vec)
    return {key: vec[sl] for key, sl in game.infoset_slots().items()}


# Default suite: every rule once, the orders alternating down the list.
@pytest.mark.parametrize("rule,order", cases([(r, o) for r in ALL_RULES for o in ORDERS],
                                             [(r, ORDERS[i % 2]) for i, r in enumerate(ALL_RULES)], unpack=True))
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


def _solved(game, states, iterations):
    """`(state, average policy)` of each of `states` after `iterations` (`run_steps`, the
    scan `cfrjax.solve` compiles): one executable for all (compiling dominates on a CPU)."""
    def run(game, states):
        out = []
        for state in states:
            state = run_steps(game, state, iterations)
            out.append((state, cfrjax.average_policy(game, state)))
        return out
    return jax.jit(run)(game, states)


@pytest.mark.parametrize("order", cases(ORDERS, ["alternating"]))
def test_dcfr_111_equals_lcfr(kuhn_explicit, order):
    game = kuhn_explicit
    (a, pa), (b, pb) = _solved(game, [
        cfrjax.init(game, rule="dcfr", order=order, dtype="float64", alpha=1, beta=1, gamma=1),
        cfrjax.init(game, rule="lcfr", order=order, dtype="float64")], 50)
    np.testing.assert_allclose(a.regret, b.regret, atol=1e-12, rtol=0)
    np.testing.assert_allclose(pa, pb, atol=1e-12, rtol=0)


OPENSPIEL_DCFR = [("dcfr", {}), ("lcfr", {}), ("dcfr", dict(alpha=2.0, beta=-0.5, gamma=3.0))]


@pytest.fixture(scope="module")
def kuhn_dcfr_30(kuhn):
    """Average policies after 30 alternating iterations of each case of `OPENSPIEL_DCFR`."""
    states = [cfrjax.init(kuhn, rule=rule, order="alternating", dtype="float64", **kwargs)
              for rule, kwargs in OPENSPIEL_DCFR]
    return [policy for _, policy in _solved(kuhn, states, 30)]


@pytest.mark.parametrize("case", range(len(OPENSPIEL_DCFR)),
                         ids=[f"{rule}-kwargs{i}" for i, (rule, _) in enumerate(OPENSPIEL_DCFR)])
def test_dcfr_matches_openspiel(kuhn, kuhn_dcfr_30, case):
    """OpenSpiel's DCFRSolver / LCFRSolver (alternating, discount after the iteration):
    same average policy after 30 iterations."""
    rule, kwargs = OPENSPIEL_DCFR[case]
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import discounted_cfr
    os_game = pyspiel.load_game("kuhn_poker")
    sol = (discounted_cfr.LCFRSolver(os_game) if rule == "lcfr"
           else discounted_cfr.DCFRSolver(os_game, **kwargs))
    for _ in range(30):
        sol.evaluate_and_update_policy()
    theirs = sol.average_policy()
    ours = _as_dict(kuhn, kuhn_dcfr_30[case])
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
    """Only a predictive rule's state holds a prediction buffer (`None` for the others, at
    init and after a solve), and it holds the last instantaneous regret (non-zero)."""
    solved = _solved(kuhn, [cfrjax.init(kuhn, rule=rule) for rule in ALL_RULES], 3)
    for rule, (s, _) in zip(ALL_RULES, solved):
        assert int(s.iteration) == 3
        if rule in rules.PREDICTIVE:
            assert s.prediction.shape == s.regret.shape and bool(jnp.any(s.prediction != 0))
        else:
            assert s.prediction is None and cfrjax.init(kuhn, rule=rule).prediction is None


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
    fixed, full = cfrjax.solve_with_trace(kuhn, state, 1000, eval_every=50)
    eps = 1e-3
    first = int(np.argmax(np.asarray(full.exploitability) <= eps))
    assert float(full.exploitability[first]) <= eps and first > 0
    out, trace = cfrjax.solve_with_trace(kuhn, state, eval_every=50, target_exploitability=eps, max_iterations=1000)
    np.testing.assert_array_equal(np.asarray(trace.iteration), np.asarray(full.iteration)[:first + 1])
    np.testing.assert_allclose(trace.exploitability, full.exploitability[:first + 1], rtol=1e-12)
    assert int(out.iteration) == int(trace.iteration[-1]) == 50 * (first + 1)
    chex.assert_trees_all_equal(out, cfrjax.solve(kuhn, state, 50 * (first + 1)))
    # The target is a traced argument: the cases below reuse the executable of the run above
    # (same eval_every, same number of chunks); on a CPU compiling dominates.
    # Unreachable target: runs to the cap, evaluated there too (a last chunk of 49).
    out, trace = cfrjax.solve_with_trace(kuhn, state, eval_every=50, target_exploitability=0.0, max_iterations=1049)
    np.testing.assert_array_equal(np.asarray(trace.iteration), list(range(50, 1001, 50)) + [1049])
    assert int(out.iteration) == 1049
    # Already below target at the first checkpoint.
    out, trace = cfrjax.solve_with_trace(kuhn, state, eval_every=50, target_exploitability=1.0, max_iterations=1000)
    assert list(np.asarray(trace.iteration)) == [50]
    with pytest.raises(ValueError):
        cfrjax.solve_with_trace(kuhn, state, 10, target_exploitability=1e-3, max_iterations=100, eval_every=10)
    with pytest.raises(ValueError):
        cfrjax.solve_with_trace(kuhn, state, target_exploitability=1e-3)
    with pytest.raises(ValueError, match="-1"):
        cfrjax.solve_with_trace(kuhn, state, target_exploitability=-1, max_iterations=100)


def _postflop_params(s):
    """postflop-solver's `DiscountParams::new(s)` (src/solver.rs), transcribed: (alpha_t,
    beta_t, gamma_t) for its 0-based iteration `s`, in float64."""
    p4 = 0 if s == 0 else 1 << ((s.bit_length() - 1) & ~1)  # (x.leading_zeros() ^ 31) & !1
    t_alpha = float(max(s - 1, 0))
    t_gamma = float(s - p4)
    pow_alpha = t_alpha * t_alpha ** 0.5
    return pow_alpha / (pow_alpha + 1.0), 0.5, (t_gamma / (t_gamma + 1.0)) ** 3


def test_dcfr_postflop_weights():
    """The rule's regret discounts and average decay, iteration by iteration, against
    hand-computed values and the transcription of postflop-solver's `DiscountParams`."""
    cfg = cfrjax.Config(rule="dcfr-postflop", dtype="float64")
    assert (cfg.alpha, cfg.beta, cfg.gamma) == (1.5, 0.0, 3.0)
    by_hand = {  # t (1-based): (positive factor, negative factor, a_t)
        1: (0.0, 0.5, 0.0), 2: (0.0, 0.5, 0.0), 3: (0.5, 0.5, 1 / 8),
        4: (2 ** 1.5 / (2 ** 1.5 + 1), 0.5, 8 / 27), 5: (3 ** 1.5 / (3 ** 1.5 + 1), 0.5, 0.0),
        6: (8 / 9, 0.5, 1 / 8), 16: (14 ** 1.5 / (14 ** 1.5 + 1), 0.5, (11 / 12) ** 3),
        17: (15 ** 1.5 / (15 ** 1.5 + 1), 0.5, 0.0), 65: (63 ** 1.5 / (63 ** 1.5 + 1), 0.5, 0.0),
        100: (98 ** 1.5 / (98 ** 1.5 + 1), 0.5, (35 / 36) ** 3)}
    probe = jnp.array([2.0, -2.0])
    for t in range(1, 300):
        tt = jnp.float64(t)
        pos, neg = np.asarray(rules.update_discount(cfg, probe, tt)) / np.array([2.0, -2.0])
        a_t, b_t = rules.average_step(cfg, tt)
        alpha_t, beta_t, gamma_t = _postflop_params(t - 1)
        np.testing.assert_allclose([pos, neg, float(a_t), float(b_t)], [alpha_t, beta_t, gamma_t, 1.0],
                                   rtol=1e-14, atol=0, err_msg=f"t={t}")
        if t in by_hand:
            np.testing.assert_allclose([pos, neg, float(a_t)], by_hand[t], rtol=1e-14, atol=0, err_msg=f"t={t}")
    # Discounting first (the `discount` hook) is left to the other rules.
    np.testing.assert_array_equal(rules.discount(cfg, probe, jnp.float64(5.0)), probe)


@pytest.mark.parametrize("order", ORDERS)
def test_dcfr_postflop_matches_reference_over_resets(kuhn_explicit, order):
    """70 iterations (average resets at 2, 5, 17 and 65) against the reference solver's
    independent transcription of postflop-solver: regrets and average policies."""
    game = kuhn_explicit
    state, _ = _solved(game, [cfrjax.init(game, rule="dcfr-postflop", order=order, dtype="float64")], 70)[0]
    ref = ReferenceCFR(kuhn_spec(), rule="dcfr-postflop", averaging="linear", order=order).run(70)
    ours_r, ours_p = _as_dict(game, state.regret), _as_dict(game, cfrjax.average_policy(game, state))
    for key, probs in ref.average_policy().items():
        np.testing.assert_allclose(ours_p[key], probs, atol=1e-12, rtol=0, err_msg=key)
        np.testing.assert_allclose(ours_r[key], ref.regrets()[key], atol=1e-10, rtol=1e-12, err_msg=key)


def test_dcfr_postflop_converges_on_kuhn(kuhn):
    """Kuhn poker (game value -1/18): exploitability falls towards 0 and the value
    reaches -1/18, float64, alternating (postflop-solver's order)."""
    state = cfrjax.init(kuhn, rule="dcfr-postflop", order="alternating", dtype="float64")
    _, trace = cfrjax.solve_with_trace(kuhn, state, 1024, eval_every=256)
    expl = np.asarray(trace.exploitability)
    assert np.all(np.diff(expl) < 0), expl
    assert expl[-1] < 1.5e-4, expl
    np.testing.assert_allclose(float(trace.value[-1]), -1 / 18, atol=1e-5)
