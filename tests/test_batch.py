"""Batch-last batched solving (`cfrjax.solve_batch`): equals a loop of single solves and
`jax.vmap(cfrjax.solve)` for every rule and order, with node locking, payoff-only and
chance batches, under both lowerings; clear errors for malformed batches.

Compiling dominates on a CPU: the every-rule comparisons run on Kuhn in one executable
(the functions that `solve_batch` and `solve` compile, nested in one `jax.jit`);
`test_public_functions_on_leduc` runs the public functions themselves on Leduc."""

from __future__ import annotations

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import batch
from cfrjax.driver import run_steps
from selection import cases, selected

COMBOS = [(rule, order) for rule in cfrjax.rules.RULES for order in cfrjax.rules.ORDERS]
# Default suite: every hook of `cfrjax.rules` once, both orders: plain CFR, DCFR's discount
# (alternating), PDCFR+'s prediction, clamp and discount (alternating), dcfr-postflop's
# discount after matching; cfr+, lcfr and pcfr+ combine these hooks and run in the slow
# cases (`-m slow`), as do the other orders (fewer compiles: the suite's six minutes).
FAST_COMBOS = [("cfr", "simultaneous"), ("dcfr", "alternating"), ("pdcfr+", "alternating"),
               ("dcfr-postflop", "simultaneous")]
B, T = 3, 6
FIELDS = ("payoff", "template")


@pytest.fixture(scope="module")
def leduc():
    return cfrjax.load_game("leduc_poker")


def payoff_batch(game, seed=0):
    """`B` copies of `game` with payoffs scaled by `1 + 0.2 u` per terminal (payoff and template batched)."""
    u = np.random.default_rng(seed).uniform(-1, 1, (B, game.num_nodes))
    pay = jnp.asarray(np.asarray(game.payoff)[None] * (1 + 0.2 * u))
    return jax.vmap(cfrjax.set_payoffs, (None, 0), batch.batch_specs(game, 0, None, ("payoff", "template")))(
        game, pay)


def states_with_locks(game, rule, order):
    """Batch of fresh states; subgame 1 locks the first information set to its first action."""
    states = batch.init_batch(game, B, rule=rule, order=order)
    lo, hi = [int(x) for x in np.asarray(game.infoset_slot_start)[:2]]
    locked = np.zeros((B, game.num_slots), bool)
    locked[1, lo:hi] = True
    policy = np.zeros((B, game.num_slots))
    policy[1, lo] = 1.0
    return dataclasses.replace(states, locked=jnp.asarray(locked), locked_policy=jnp.asarray(policy))


def row(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


@pytest.fixture(scope="module")
def kuhn():
    return cfrjax.load_game("kuhn_poker")


@pytest.fixture(scope="module")
def solved(kuhn, request):
    """Every rule x order on `payoff_batch(kuhn)` with `states_with_locks`, in one executable
    (on a CPU compiling dominates): {combo: (batch-last solve, single solves, vmap of the
    single solve, average policies of the batch-last solve)}.

    The batch-last solve is `cfrjax.batch.scan_batch_last`, what `cfrjax.solve_batch`
    compiles; the single solve is `cfrjax.driver.run_steps`, what `cfrjax.solve` compiles,
    looped over the subgames (`lax.map`). `test_public_functions_on_leduc` runs the
    public functions themselves."""
    games = payoff_batch(kuhn)
    specs = batch.batch_specs(games, 0, None)
    combos = selected(request, "test_solve_batch_equals_loop_and_vmap", "rule", "order")
    all_states = {combo: states_with_locks(kuhn, *combo) for combo in combos}

    def single(g, s):
        return run_steps(g, s, T)

    @jax.jit
    def run(game, games, all_states):
        out = {}
        for combo, states in all_states.items():
            last = batch.scan_batch_last(games, states, T, FIELDS)
            loop = jax.lax.map(lambda x: single(dataclasses.replace(game, **dict(zip(FIELDS, x[0]))), x[1]),
                               (tuple(getattr(games, f) for f in FIELDS), states))
            vmapped = jax.vmap(single, (specs, 0))(games, states)
            out[combo] = (last, loop, vmapped, jax.vmap(cfrjax.average_policy, (None, 0))(game, last))
        return out

    return run(kuhn, games, all_states)


def check_batch_result(game, out, loop, vmapped, pol):
    """`out` is `T` iterations of a `B` batch, equal to the loop of single solves (to
    rounding) and to their vmap (bitwise on CPU); subgame 1 kept its lock."""
    assert out.regret.shape == (B, game.num_slots) and out.iteration.tolist() == [T] * B
    for i in range(B):
        chex.assert_trees_all_close(row(out, i), row(loop, i), atol=1e-13, rtol=0)
    if jax.default_backend() == "cpu":  # same scatter-add lowering, same order: bitwise
        chex.assert_trees_all_equal(out, vmapped)
    else:
        chex.assert_trees_all_close(out, vmapped, atol=1e-12, rtol=0)
    # the locked subgame kept its fixed strategy at the locked set, the others did not lock
    lo, hi = [int(x) for x in np.asarray(game.infoset_slot_start)[:2]]
    np.testing.assert_allclose(np.asarray(pol[1, lo:hi]), np.eye(hi - lo)[0], atol=1e-12)


@pytest.mark.parametrize("rule,order", cases(COMBOS, FAST_COMBOS, unpack=True))
def test_solve_batch_equals_loop_and_vmap(kuhn, solved, rule, order):
    check_batch_result(kuhn, *solved[rule, order])


def test_public_functions_on_leduc(leduc):
    """`cfrjax.solve_batch` against a loop of `cfrjax.solve` and `jax.vmap(cfrjax.solve)`
    on Leduc (chance inside the tree), with the rule with every hook (pdcfr+, alternating)."""
    games = payoff_batch(leduc)
    states = states_with_locks(leduc, "pdcfr+", "alternating")
    out = cfrjax.solve_batch(games, states, T)
    loop = [cfrjax.solve(dataclasses.replace(leduc, **{f: getattr(games, f)[i] for f in FIELDS}), row(states, i), T)
            for i in range(B)]
    vmapped = jax.jit(jax.vmap(lambda g, s: cfrjax.solve(g, s, T), (batch.batch_specs(games, 0, None), 0)))(
        games, states)
    pol = jax.vmap(cfrjax.average_policy, (None, 0))(leduc, out)
    check_batch_result(leduc, out, jax.tree.map(lambda *x: jnp.stack(x), *loop), vmapped, pol)


@pytest.fixture(scope="module")
def pulled_and_scattered(leduc):
    """pdcfr+ batches, both orders, under the pull and the scatter lowering: one executable."""
    lowered = {r: payoff_batch(dataclasses.replace(leduc, reduction=r)) for r in ("pull", "scatter")}
    states = {order: batch.init_batch(leduc, B, rule="pdcfr+", order=order) for order in cfrjax.rules.ORDERS}
    run = jax.jit(lambda lowered, states: {(r, o): batch.scan_batch_last(g, s, T, FIELDS)
                                           for r, g in lowered.items() for o, s in states.items()})
    return run(lowered, states)


@pytest.mark.parametrize("order", cfrjax.rules.ORDERS)
def test_pull_lowering_batch_last(pulled_and_scattered, order):
    """The pull lowering with trailing batch axes (what a GPU runs) equals the scatter, per subgame."""
    chex.assert_trees_all_close(pulled_and_scattered["pull", order], pulled_and_scattered["scatter", order],
                                atol=1e-12, rtol=0)


def test_chance_batch_and_continuation():
    """A root-chance batch (every float leaf batched, `cfrjax.batch_axes`), continued in two calls."""
    game = cfrjax.load_game("kuhn_poker")
    lo, hi = game.level_start[1], game.level_start[2]
    probs = np.random.default_rng(1).dirichlet(np.ones(hi - lo), size=B)
    games = jax.vmap(cfrjax.set_root_chance, (None, 0), cfrjax.batch_axes(game))(game, jnp.asarray(probs))
    states = batch.init_batch(game, B, rule="dcfr", order="alternating")
    chex.assert_trees_all_equal(cfrjax.solve_batch(games, states, 0), states)  # zero iterations: unchanged
    two = cfrjax.solve_batch(games, cfrjax.solve_batch(games, states, 4), 4)  # one executable, called twice
    one = cfrjax.solve_batch(games, states, 8)
    chex.assert_trees_all_equal(two, one)
    for i in range(B):
        g = jax.tree.map(lambda x, ax: x if ax is None else x[i], games, cfrjax.batch_axes(game),
                         is_leaf=lambda x: x is None)
        chex.assert_trees_all_close(row(one, i), cfrjax.solve(g, row(states, i), 8), atol=1e-13, rtol=0)


def test_solve_batch_errors(leduc):
    games = payoff_batch(leduc)
    states = batch.init_batch(leduc, B)
    cases = {
        "not float leaves": lambda: cfrjax.solve_batch(games, states, 2, batched_fields=("parent",)),
        "no batched float leaf": lambda: cfrjax.solve_batch(leduc, states, 2),
        "inconsistent batch axis": lambda: cfrjax.solve_batch(games, batch.init_batch(leduc, B + 1), 2),
        "non-negative int": lambda: cfrjax.solve_batch(games, states, 2.0),
    }
    for needle, call in cases.items():
        with pytest.raises(ValueError, match=needle):
            call()
