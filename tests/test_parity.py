"""The compiled solver against OpenSpiel and against the independent reference solver.

Layers (paper, appendix C): OpenSpiel's Python CFR solvers (average policies after 1, 10
and 100 iterations on Kuhn, 1 and 10 on Leduc, float64, 1e-9), OpenSpiel's exact exploitability on random policies,
and the per-node reference solver of `tests/reference.py` (30 iterations, every rule x
averaging x order, 1e-9).

Compiling dominates on a CPU: the reference-solver comparison runs every rule x
averaging x order x chance mode of a game in one executable (`run_steps`, the scan that
`cfrjax.solve` compiles), and exploitability and value share one. OpenSpiel's Python
solvers run in another process, in the background from the start of the session
(`tests/background.py`).

Chance handling: `chance="explicit"` rounds exactly like OpenSpiel's Python CFR, so CFR+
(whose regret matching+ jumps where a regret is exactly 0) follows the same trajectory.
The default folded template rounds differently; it is held to the same tolerance for
vanilla CFR, whose iterates are continuous in the regrets.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import textwrap

import jax
import numpy as np
import pytest

import background
import cfrjax
from cfrjax.driver import run_steps
from random_games import random_spec
from reference import ReferenceCFR
from selection import cases, selected

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import cfr as os_cfr  # noqa: E402
from open_spiel.python.algorithms import exploitability as os_exploitability  # noqa: E402

TOL = 1e-9
COMBOS = [(rule, averaging, order) for rule in ("cfr", "cfr+") for averaging in ("uniform", "linear")
          for order in ("simultaneous", "alternating")]


def _dict_policy(game, vec):
    """`[S]` vector -> {infoset key: its entries}."""
    vec = np.asarray(vec)
    return {key: vec[sl] for key, sl in game.infoset_slots().items()}


# Leduc stops at 10: OpenSpiel's Python solvers take ~0.15 s a Leduc iteration, and Leduc's
# longer runs are held to the independent reference solver (30 iterations, 1e-9, below).
CHECKPOINTS = {"kuhn_poker": (1, 10, 100), "leduc_poker": (1, 10)}


@jax.jit
def _evaluate(game, policy):
    """Exploitability and value of `policy` in one executable."""
    return cfrjax.exploitability(game, policy), cfrjax.expected_value(game, policy)


# OpenSpiel's solvers are pure Python (Leduc: ~0.15 s an iteration): they run in another
# process, in the background from the start of the session (tests/background.py).
_OPENSPIEL_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pyspiel
    from open_spiel.python.algorithms import cfr
    out = {}
    for name, checkpoints in json.loads(sys.argv[2]).items():
        for solver in ("CFRSolver", "CFRPlusSolver"):
            sol = getattr(cfr, solver)(pyspiel.load_game(name))
            for it in range(1, checkpoints[-1] + 1):
                sol.evaluate_and_update_policy()
                if it in checkpoints:
                    out[f"{name}|{solver}|{it}"] = sol.average_policy().action_probability_array.copy()
    np.savez(sys.argv[1], **out)
""")


def _run_openspiel():
    """OpenSpiel's average policies at `CHECKPOINTS` (CFRSolver and CFRPlusSolver): `(process, .npz path)`."""
    work = tempfile.TemporaryDirectory(prefix="cfrjax-test-parity-")
    atexit.register(work.cleanup)
    path = os.path.join(work.name, "openspiel.npz")
    proc = subprocess.run([sys.executable, "-c", _OPENSPIEL_SCRIPT, path, json.dumps(CHECKPOINTS)],
                          capture_output=True, text=True, timeout=600)
    return proc, path


BACKGROUND = {"openspiel": _run_openspiel}


@pytest.fixture(scope="module")
def openspiel_runs():
    """OpenSpiel's average policies at the checkpoints, per (game, solver): `(TabularPolicy, [arrays])`."""
    proc, path = background.result(__name__, "openspiel")
    assert proc.returncode == 0, proc.stderr[-4000:]
    with np.load(path) as z:
        saved = dict(z)

    def get(name, solver):
        return (os_policy.TabularPolicy(pyspiel.load_game(name)),
                [saved[f"{name}|{solver}|{it}"] for it in CHECKPOINTS[name]])
    return get


@pytest.mark.background("openspiel")
@pytest.mark.parametrize("name,chance", [("kuhn_poker", "explicit"), ("kuhn_poker", "folded"),
                                         ("leduc_poker", "explicit"), ("leduc_poker", "folded")])
@pytest.mark.parametrize("solver,rule,averaging", [("CFRSolver", "cfr", "uniform"), ("CFRPlusSolver", "cfr+", "linear")])
def test_average_policy_matches_openspiel(openspiel_runs, name, chance, solver, rule, averaging):
    if chance == "folded" and rule == "cfr+":
        pytest.skip("folded chance rounds differently from OpenSpiel; CFR+ bifurcates at exact ties "
                    "(covered with chance='explicit')")
    game = cfrjax.load_game(name, chance=chance)
    tabular, arrays = openspiel_runs(name, solver)
    state = cfrjax.init(game, rule=rule, order="alternating", averaging=averaging, dtype="float64")
    step = jax.jit(cfrjax.step)
    for checkpoint, array in zip(CHECKPOINTS[name], arrays):
        while int(state.iteration) < checkpoint:
            state = step(game, state)
        tabular.action_probability_array[:] = array
        theirs = cfrjax.games.openspiel.from_openspiel_policy(game, tabular)
        ours = np.asarray(cfrjax.average_policy(game, state))
        np.testing.assert_allclose(ours, theirs, atol=TOL, rtol=0, err_msg=f"after {checkpoint} iterations")


@pytest.mark.parametrize("name", cases([
    "kuhn_poker", "leduc_poker", "liars_dice(numdice=1,dice_sides=4)",
    "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
    "dark_hex(num_rows=2,num_cols=2)"], ["kuhn_poker", "leduc_poker"]))
def test_exploitability_matches_openspiel(name):
    game = cfrjax.load_game(name)
    os_game = pyspiel.load_game(name)
    rng = np.random.default_rng(0)
    for trial in range(1):
        raw = rng.random(game.num_slots) ** 3  # skewed, with near-zero entries
        policy = cfrjax.policy.normalize(game, raw)
        ours, value = (float(x) for x in _evaluate(game, policy))
        tabular = cfrjax.games.openspiel.to_openspiel_policy(game, policy)
        theirs = os_exploitability.exploitability(os_game, tabular)
        assert abs(ours - theirs) < TOL, (trial, ours, theirs)
        assert np.isclose(value, _os_value(os_game, tabular), atol=TOL)


def _os_value(os_game, tabular):
    from open_spiel.python.algorithms import expected_game_score
    return expected_game_score.policy_value(os_game.new_initial_state(), [tabular, tabular])[0]


def test_kuhn_value_is_minus_one_eighteenth():
    game = cfrjax.load_game("kuhn_poker")
    # 2000 iterations (`run_steps`, the scan `cfrjax.solve` compiles) and the evaluation: one executable
    eps, value = jax.jit(lambda g, s: _evaluate(g, cfrjax.average_policy(g, run_steps(g, s, 2000))))(
        game, cfrjax.init(game, order="alternating", dtype="float64"))
    eps, value = float(eps), float(value)
    assert eps < 1e-4
    # |v(sigma) - v*| <= NashConv(sigma) = 2 * exploitability.
    assert abs(value + 1 / 18) <= 2 * eps


# Kuhn is slow (tests/selection.py): Leduc and a random game are the default instances, and
# Kuhn's OpenSpiel parity runs above.
@pytest.fixture(scope="module", params=[pytest.param("kuhn", marks=pytest.mark.slow), "leduc", "random"])
def ref_game(request):
    if request.param == "random":
        spec = random_spec(11, depth=3)
    else:
        spec = cfrjax.games.openspiel.spec_from_openspiel(f"{request.param}_poker")
    return spec


def _ref_cases():
    for rule, averaging, order in COMBOS:
        for chance in ("explicit", "folded"):
            if not (chance == "folded" and rule == "cfr+"):  # see module docstring
                yield rule, averaging, order, chance


@pytest.fixture(scope="module")
def compiled_runs(ref_game, request):
    """30 iterations of every case of `_ref_cases` on `ref_game`: {case: (game, average policy, regret)}.

    One executable for all cases (each `cfrjax.driver.run_steps`, the scan `cfrjax.solve`
    runs, then `cfrjax.average_policy`)."""
    games = {chance: cfrjax.compile.compile_game(ref_game, chance=chance) for chance in ("explicit", "folded")}
    chosen = selected(request, "test_reference_solver_agrees", "rule", "averaging", "order")
    cases = [c for c in _ref_cases() if tuple(c[:3]) in chosen]
    states = [cfrjax.init(games[c], rule=r, order=o, averaging=a, dtype="float64") for r, a, o, c in cases]

    @jax.jit
    def run(games, states):
        out = []
        for (*_, chance), state in zip(cases, states):
            state = run_steps(games[chance], state, 30)
            out.append((cfrjax.average_policy(games[chance], state), state.regret))
        return out

    return {case: (games[case[-1]], *res) for case, res in zip(cases, run(games, states))}


# Default suite: both rules, both averagings and both orders, in four of the eight combinations.
FAST_COMBOS = [("cfr", "uniform", "simultaneous"), ("cfr", "linear", "alternating"),
               ("cfr+", "uniform", "alternating"), ("cfr+", "linear", "simultaneous")]


@pytest.mark.parametrize("rule,averaging,order", cases(COMBOS, FAST_COMBOS, unpack=True))
def test_reference_solver_agrees(ref_game, compiled_runs, rule, averaging, order):
    ref = ReferenceCFR(ref_game, rule=rule, averaging=averaging, order=order).run(30)
    for chance in ("explicit", "folded"):
        if chance == "folded" and rule == "cfr+":
            continue  # see module docstring
        game, policy, regret = compiled_runs[rule, averaging, order, chance]
        ours = _dict_policy(game, policy)
        regrets = _dict_policy(game, regret)
        expected = ref.average_policy()
        expected_r = ref.regrets()
        for key in expected:
            np.testing.assert_allclose(ours[key], expected[key], atol=TOL, rtol=0, err_msg=f"{chance} {key}")
            np.testing.assert_allclose(regrets[key], expected_r[key], atol=TOL, rtol=1e-12, err_msg=f"{chance} {key}")


def test_random_game_is_chance_heavy(ref_game):
    spec = ref_game
    chance_levels = set()
    from cfrjax.spec import CHANCE, bfs_levels
    levels = bfs_levels(spec.parent, int(np.flatnonzero(spec.parent < 0)[0]))
    for d, lv in enumerate(levels):
        if np.any(spec.kind[lv] == CHANCE):
            chance_levels.add(d)
    assert len(chance_levels) >= 1


def test_folded_and_explicit_agree_on_values():
    spec = random_spec(5)
    folded, explicit = cfrjax.compile.compile_game(spec), cfrjax.compile.compile_game(spec, chance="explicit")
    rng = np.random.default_rng(1)
    policy = cfrjax.policy.normalize(folded, rng.random(folded.num_slots))
    (e_f, v_f), (e_e, v_e) = jax.jit(lambda a, b, p: (_evaluate(a, p), _evaluate(b, p)))(folded, explicit, policy)
    assert abs(float(e_f) - float(e_e)) < 1e-12
    assert abs(float(v_f) - float(v_e)) < 1e-12


def test_openspiel_policy_round_trip():
    game = cfrjax.load_game("leduc_poker")
    policy = cfrjax.policy.normalize(game, np.random.default_rng(3).random(game.num_slots))
    tab = cfrjax.games.openspiel.to_openspiel_policy(game, policy)
    assert isinstance(tab, os_policy.TabularPolicy)
    np.testing.assert_array_equal(cfrjax.games.openspiel.from_openspiel_policy(game, tab), np.asarray(policy))
