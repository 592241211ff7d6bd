"""Node locking: a locked information set plays its fixed strategy; the rest adapts to it."""

import dataclasses

import jax
import numpy as np
import pytest

import cfrjax


@pytest.fixture(scope="module")
def kuhn():
    return cfrjax.load_game("kuhn_poker")


def test_locked_sets_play_their_strategy(kuhn):
    slots = kuhn.infoset_slots()
    key = kuhn.labels.infoset_keys[0]
    state = cfrjax.lock(kuhn, cfrjax.init(kuhn, order="alternating"), {key: [0.25, 0.75]})
    state = cfrjax.solve(kuhn, state, 50)
    np.testing.assert_allclose(np.asarray(cfrjax.current_policy(kuhn, state))[slots[key]], [0.25, 0.75])
    np.testing.assert_allclose(np.asarray(cfrjax.average_policy(kuhn, state))[slots[key]], [0.25, 0.75], atol=1e-12)
    # reset keeps the lock; unlock releases it
    assert bool(cfrjax.retarget.reset(state).locked.any())
    free = cfrjax.unlock(kuhn, state)
    assert not bool(free.locked.any())


def test_locking_all_of_one_player_gives_a_best_response(kuhn):
    """With player 0 locked everywhere, player 1's average converges to a best response:
    player 0's value tends to minus player 1's best-response value against the lock."""
    rng = np.random.default_rng(0)
    slots = kuhn.infoset_slots()
    fixed = {k: rng.dirichlet(np.ones(sl.stop - sl.start)) for k, sl in slots.items()
             if kuhn.labels.infoset_player[list(slots).index(k)] == 0}
    state = cfrjax.lock(kuhn, cfrjax.init(kuhn, order="alternating", dtype="float64"), fixed)
    state = cfrjax.solve(kuhn, state, 2000)
    policy = cfrjax.average_policy(kuhn, state)
    # jitted (it is jit-able): run eagerly, op by op, it takes longer than the solve
    br1 = float(jax.jit(cfrjax.best_response.best_response_value, static_argnums=2)(kuhn, policy, 1))
    value = float(cfrjax.expected_value(kuhn, policy))
    assert abs(value + br1) < 1e-3


def test_lock_rejects_bad_input(kuhn):
    state = cfrjax.init(kuhn)
    key = kuhn.labels.infoset_keys[0]
    with pytest.raises(KeyError, match="no_such_set"):
        cfrjax.lock(kuhn, state, {"no_such_set": [1.0, 0.0]})
    with pytest.raises(ValueError, match="sum to 1"):
        cfrjax.lock(kuhn, state, {key: [0.5, 0.6]})
    with pytest.raises(ValueError, match="3 probabilities for 2 actions"):
        cfrjax.lock(kuhn, state, {key: [0.2, 0.2, 0.6]})


def test_locked_step_is_jittable(kuhn):
    key = kuhn.labels.infoset_keys[1]
    state = cfrjax.lock(kuhn, cfrjax.init(kuhn), {key: [1.0, 0.0]})
    a = jax.jit(cfrjax.step)(kuhn, state)
    b = cfrjax.solve(kuhn, state, 1)  # the scan's step (jit vs op-by-op: test_solver)
    np.testing.assert_array_equal(np.asarray(a.regret), np.asarray(b.regret))


def test_solve_without_locks_skips_them_and_keeps_them(kuhn):
    """With nothing locked `solve` and `solve_batch` drop the lock arrays from what they
    compile (regret matching does not read them) and hand them back; the iterations are
    those of the same solve with the arrays read (a solve inside a jit of the caller's,
    whose state values are unknown, keeps them). A locked state keeps its locks. A fresh
    state has none (`None`), nor has one with all its locks released."""
    from cfrjax import locking
    fresh = cfrjax.init(kuhn, order="alternating")
    assert fresh.locked is None and fresh.locked_policy is None and cfrjax.unlock(kuhn, fresh) is fresh
    key = kuhn.labels.infoset_keys[0]
    state = cfrjax.unlock(kuhn, cfrjax.lock(kuhn, fresh, {key: [1.0, 0.0]}))   # a mask that locks nothing
    dropped, kept = locking.drop_idle_locks(state)
    assert dropped.locked is None and dropped.locked_policy is None and kept[0] is state.locked
    out = cfrjax.solve(kuhn, state, 30)
    assert out.locked is state.locked and out.locked_policy is state.locked_policy
    traced = jax.jit(lambda g, s: cfrjax.solve(g, s, 30))(kuhn, state)
    for name in ("regret", "avg", "avg_comp"):
        np.testing.assert_allclose(getattr(out, name), getattr(traced, name), rtol=1e-6, atol=1e-7)
    from cfrjax.retarget import root_outcomes
    lo, hi = root_outcomes(kuhn)
    games = jax.vmap(cfrjax.set_root_chance, (None, 0), cfrjax.batch_axes(kuhn))(kuhn, np.full((2, hi - lo), 1 / (hi - lo)))
    states = cfrjax.batch.init_batch(kuhn, 2, order="alternating")
    states = dataclasses.replace(states, locked=jax.numpy.zeros(states.regret.shape, bool),
                                 locked_policy=jax.numpy.zeros_like(states.regret))
    batch = cfrjax.solve_batch(games, states, 30)
    assert batch.locked is states.locked
    np.testing.assert_allclose(batch.regret[1], out.regret, rtol=1e-5, atol=1e-6)
    locked = cfrjax.lock(kuhn, state, {key: [1.0, 0.0]})
    assert locking.drop_idle_locks(locked)[1] is None
    np.testing.assert_array_equal(cfrjax.solve(kuhn, fresh, 30).regret, out.regret)
