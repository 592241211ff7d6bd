"""The pull layout (`cfrjax.layout`) and the two lowerings of the passes (`cfrjax.passes`).

CI has no GPU, where `reduction="auto"` pulls; here the pull is forced on CPU and must
reproduce the scatter lowering. Both add the same numbers in the same order, but inside
one fused kernel XLA may contract a product and the following add into one fused
multiply-add (one rounding instead of two), so the two agree to rounding (1e-12 after
15 iterations of every rule), not bit for bit.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import passes
from cfrjax.driver import run_steps
from cfrjax.profile import kernels_per_iteration
from selection import cases
from random_games import random_spec

GAMES = ["kuhn_poker", "leduc_poker", "liars_dice(numdice=1,dice_sides=4)",
         "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))"]


@pytest.fixture(scope="module", params=cases(GAMES + ["random"], ["kuhn_poker"]))
def game(request):
    if request.param == "random":
        return cfrjax.compile.compile_game(random_spec(seed=7, depth=3))
    return cfrjax.load_game(request.param)


def _with(game, reduction):
    return dataclasses.replace(game, reduction=reduction)


def test_layout_matches_brute_force(game):
    parent = np.asarray(game.parent)
    n = game.num_nodes
    child_start = np.asarray(game.child_start)
    for i in range(n):
        kids = np.flatnonzero(parent == i)
        kids = kids[kids != 0]  # the root is its own parent
        assert list(range(child_start[i], child_start[i + 1])) == list(kids)
    dec_slot = np.asarray(game.dec_slot)
    ses = np.asarray(game.slot_edge_start)
    for s in range(game.num_slots):
        assert np.all(dec_slot[ses[s]:ses[s + 1]] == s)
    assert ses[-1] == game.num_decision_edges
    # path_slot: the own-decision slots on the path, root first (walk up the parents)
    lane = np.asarray(game.lane_slot)
    path = np.asarray(game.path_slot)
    for node in range(0, n, max(1, n // 300)):
        chain, c = [], node
        while c != 0:
            chain.append(c)
            c = parent[c]
        for p in (0, 1):
            slots = [lane[p, c] for c in reversed(chain) if lane[p, c] != game.num_slots]
            w = path.shape[1]
            assert list(path[p, :, node]) == slots + [game.num_slots] * (w - len(slots))


@pytest.mark.fixed_order
def test_pull_equals_scatter(game):
    """Whole solves, four rules, both orders: pull and scatter iterates agree to rounding.

    All eight 15-iteration solves (`run_steps`, the scan `cfrjax.solve` compiles) and both
    exploitabilities run in one executable: on a CPU compiling dominates."""
    pull, scatter = _with(game, "pull"), _with(game, "scatter")
    cases = [("cfr", "simultaneous"), ("cfr+", "alternating"), ("dcfr", "simultaneous"), ("pcfr+", "alternating")]

    @jax.jit
    def run(game, pull, scatter, states):
        solved = [(run_steps(pull, s, 15), run_steps(scatter, s, 15)) for s in states]
        policy = cfrjax.average_policy(game, solved[-1][0])
        return solved, cfrjax.exploitability(pull, policy), cfrjax.exploitability(scatter, policy)

    solved, e_pull, e_scatter = run(game, pull, scatter, [cfrjax.init(game, rule=r, order=o) for r, o in cases])
    for (rule, _), (a, b) in zip(cases, solved):
        assert int(a.iteration) == int(b.iteration) == 15
        np.testing.assert_allclose(np.asarray(a.regret), np.asarray(b.regret), rtol=1e-12, atol=1e-12, err_msg=rule)
        np.testing.assert_allclose(np.asarray(a.avg), np.asarray(b.avg), rtol=1e-12, atol=1e-12, err_msg=rule)
    assert float(e_pull) == pytest.approx(float(e_scatter), rel=1e-12, abs=1e-15)


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="auto scatters on CPU only")
def test_auto_is_scatter_on_cpu(game):
    state = cfrjax.init(game, rule="cfr+", order="simultaneous")
    assert kernels_per_iteration(game, state) == kernels_per_iteration(_with(game, "scatter"), state)
    pull_text = jax.jit(cfrjax.step).lower(_with(game, "pull"), state).as_text()
    assert "scatter" not in pull_text, "the pull lowering of a suite-like game uses no scatter-add"


@pytest.mark.skipif(jax.default_backend() == "cpu", reason="auto pulls off CPU")
def test_auto_is_pull_off_cpu(game):
    state = cfrjax.init(game, rule="cfr+", order="simultaneous")
    assert kernels_per_iteration(game, state) == kernels_per_iteration(_with(game, "pull"), state)


def test_pull_under_vmap_equals_loop():
    game = _with(cfrjax.load_game("leduc_poker"), "pull")
    rng = np.random.default_rng(0)
    payoffs = jnp.asarray(np.asarray(game.payoff) * (1 + 0.1 * rng.uniform(-1, 1, (3, game.num_nodes))))
    games = jax.vmap(cfrjax.set_payoffs, (None, 0), cfrjax.batch_axes(game))(game, payoffs)
    state = cfrjax.init(game, rule="cfr+")
    states = jax.vmap(lambda g: cfrjax.solve(g, state, 10), (cfrjax.batch_axes(game),))(games)
    for b in range(3):
        one = cfrjax.solve(cfrjax.set_payoffs(game, payoffs[b]), state, 10)
        np.testing.assert_allclose(np.asarray(states.regret[b]), np.asarray(one.regret), rtol=1e-12, atol=1e-13)


# Jitted: op by op, every operation (the segmented scan's dozens) compiled a program of its own.
_segment_total = jax.jit(passes.segment_total, static_argnames=("width", "pull"))


@pytest.mark.parametrize("width", [5, passes.UNROLL + 7])
def test_segment_total_paths(width):
    """Unrolled chain, reduction and scatter fallback agree (to rounding for the reduction)."""
    rng = np.random.default_rng(width)
    sizes = rng.integers(0, width + 1, 40)
    sizes[3] = width
    start = jnp.asarray(np.concatenate([[0], np.cumsum(sizes)]), jnp.int32)
    ids = jnp.asarray(np.repeat(np.arange(40), sizes), jnp.int32)
    x = jnp.asarray(rng.normal(size=int(sizes.sum())))
    init = jnp.asarray(rng.normal(size=40))
    pulled = _segment_total(x, start, width=width, segment_ids=ids, init=init, pull=True)
    scattered = _segment_total(x, start, width=width, segment_ids=ids, init=init, pull=False)
    if width <= passes.UNROLL and jax.default_backend() == "cpu":
        np.testing.assert_array_equal(np.asarray(pulled), np.asarray(scattered))
    else:  # a reduction tree; or on a GPU, a scatter-add of atomics in no fixed order
        np.testing.assert_allclose(np.asarray(pulled), np.asarray(scattered), rtol=1e-12, atol=1e-12)


def test_segment_total_beyond_the_padding_budget_scans():
    """A segment far wider than the others exceeds the padding budget: the segmented scan,
    no scatter (atomics on a GPU), with empty segments, batch axes and an initial value."""
    rng = np.random.default_rng(0)
    skew = rng.integers(0, 3, 200)
    skew[0] = 5000
    start = jnp.asarray(np.concatenate([[0], np.cumsum(skew)]), jnp.int32)
    ids = jnp.asarray(np.repeat(np.arange(200), skew), jnp.int32)
    x = jnp.asarray(rng.normal(size=(int(skew.sum()), 3)))
    init = jnp.asarray(rng.normal(size=(200, 3)))
    text = _segment_total.lower(x, start, width=5000, segment_ids=ids, init=init, pull=True).as_text()
    assert "scatter" not in text
    want = np.asarray(init) + np.stack([np.bincount(np.asarray(ids), np.asarray(x)[:, j], 200) for j in range(3)], 1)
    assert (skew == 0).any()
    for pull in (True, False):
        got = _segment_total(x, start, width=5000, segment_ids=ids, init=init, pull=pull)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_bad_reduction_names_allowed_values():
    game = cfrjax.load_game("kuhn_poker")
    with pytest.raises(ValueError, match=r"unknown reduction 'push'.*'auto', 'pull', 'scatter'"):
        _with(game, "push")
