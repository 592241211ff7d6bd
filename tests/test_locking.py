"""Node locking: a locked information set plays its fixed strategy; the rest adapts to it."""

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
    assert bool(cfrjax.reset(state).locked.any())
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
    br1 = float(jax.jit(cfrjax.best_response_value, static_argnums=2)(kuhn, policy, 1))
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
