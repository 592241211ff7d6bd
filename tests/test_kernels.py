"""Every registered kernel (`cfrjax.kernels.KERNELS`) against the XLA passes, on each form it
claims: the same call under a plan with only that kernel on and under the `xla` plan, the
kernel seen to run in the first and not in the second, the values equal to the kernel's
rounding. Pallas kernels run in Pallas's interpreter on a CPU (compiled on an NVIDIA GPU);
what cannot run here is skipped with the reason."""

import dataclasses
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import iteration, passes
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public
from cfrjax.kernels import KERNELS, OPERATIONS, by_operation
from cfrjax.pallas_gpu import nvidia_gpu
from cfrjax.public import passes as pp
from cfrjax.public import sweep
from selection import cases

GPU = nvidia_gpu()
#: Kernels that could run here but are not run in the suite, and why.
TOO_SLOW = {"turn": "one step of a turn spot in Pallas's interpreter takes 25 s (tests/test_spot_kernel.py runs it "
                    "compiled on an NVIDIA GPU)"}


def _river(terminals: str):
    return build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", random_hands=14, seed=3), hands="range",
                        terminals=terminals)


def _random_state(game, dtype):
    """A DCFR simultaneous state at iteration 4 with random regrets (both signs) and average,
    nothing locked (as `cfrjax.solve` runs it: `cfrjax.locking.drop_idle_locks`)."""
    state = cfrjax.init(game, rule="dcfr", order="simultaneous", dtype=dtype)
    rng = np.random.default_rng(0)
    shape = state.regret.shape
    regret = jnp.asarray(rng.standard_normal(shape) * (rng.random(shape) < 0.8), state.regret.dtype)
    return dataclasses.replace(state, regret=regret, avg=jnp.asarray(rng.random(shape), state.avg.dtype),
                               iteration=jnp.asarray(4, state.iteration.dtype),
                               avg_weight=jnp.asarray(3.0, state.avg_weight.dtype), locked=None, locked_policy=None)


def _sigma(game, dtype, batch=()):
    rng = np.random.default_rng(1)
    S, H = game.num_slots, game.num_hands
    return jnp.asarray(rng.random((S + 1, H) + batch), dtype).at[S].set(1.0)


# One exercise per operation: `(game, dtype) -> arrays`, run under the game's plan.

def _half_update(game, dtype):
    out = jax.jit(iteration.step)(game, _random_state(game, dtype))
    return out.regret, out.avg


def _cpu_pass(game, dtype):
    """A regret pass of both players as the CPU traces it."""
    return jax.jit(lambda g, s, r: pp.regret_pass(g, s, r, None))(game, _sigma(game, dtype),
                                                                   jnp.zeros(game.slot_shape, dtype))


def _accelerator_pass(game, dtype):
    """A regret pass of both players as an accelerator traces it (all boards at once,
    pulled sums), here on any platform."""
    return jax.jit(lambda g, s, r: sweep.sweep(g, s, (0, 1), "regret", False, r)[1:])(
        game, _sigma(game, dtype), jnp.zeros(game.slot_shape, dtype))


def _batch_pass(game, dtype):
    """`_accelerator_pass` of 32 subgames with their own ranges (the fold kernel's block)."""
    rng = np.random.default_rng(2)
    w = rng.random((2, game.num_hands, 32))
    g = pp.set_ranges(game, w[0], w[1])
    return jax.jit(lambda g, s, r: sweep.sweep(g, s, (0, 1), "regret", False, r)[1:])(
        g, _sigma(g, dtype), jnp.zeros(g.slot_shape + (32,), dtype))


def _matching(game, dtype):
    r = jnp.asarray(np.random.default_rng(3).normal(size=(game.num_slots, game.num_hands, 3)), dtype)
    factors = (jnp.asarray([0.5, 0.9, 0.25], dtype), jnp.asarray([0.5, 0.4, 0.75], dtype))
    return (jax.jit(lambda x: passes.regret_matching(game, x, None, factors))(r),)


#: The call each kernel is checked on: (exercise, game builder, dtype, tolerance relative
#: to the values' scale).
CASES = {
    "matching": (_matching, lambda: dataclasses.replace(_river("sorted"), reduction="pull"), "float32", 2e-6),
    "native_showdown": (_cpu_pass, lambda: _river("sorted"), "float64", 1e-12),
    "pallas_showdown": (_accelerator_pass, lambda: _river("sorted"), "float32", 2e-5),
    "cuda_showdown": (_accelerator_pass, lambda: _river("sorted"), "float32", 2e-5),
    "fold": (_batch_pass, lambda: _river("sorted"), "float32", 2e-5),
    "native_forest": (_cpu_pass, lambda: _river("sorted"), "float64", 1e-12),
    "native_half": (_half_update, lambda: _river("sorted"), "float64", 1e-12),
    "spot_half": (_half_update, lambda: _river("sorted"), "float64", 0.0),     # bit for bit
    "spot": (_half_update, lambda: _river("dense"), "float32", 2e-5),
    "turn": (_half_update, lambda: cfrjax.load_game("games/hunl_turn.toml", form="public", random_hands=10),
             "float32", 2e-5),
}


def test_every_kernel_has_a_case_and_the_registry_is_well_formed():
    assert set(CASES) == set(KERNELS)
    assert {k.operation for k in KERNELS.values()} == set(OPERATIONS)
    assert sum(len(by_operation(op)) for op in OPERATIONS) == len(KERNELS)
    with pytest.raises(ValueError, match="unknown operation 'sort'; allowed: regret_matching"):
        by_operation("sort")
    # The half-updates' rules, by the capabilities they implement.
    supported = {name: [r for r in cfrjax.rules.RULES if KERNELS[name].supports(cfrjax.Config(rule=r))]
                 for name in ("native_half", "spot_half", "spot", "turn")}
    assert supported["native_half"] == ["cfr", "cfr+", "lcfr", "dcfr", "dcfr-postflop"]
    assert supported["spot_half"] == supported["spot"] == supported["turn"] == ["cfr", "cfr+", "lcfr", "dcfr"]
    if jax.config.jax_enable_x64:
        assert not KERNELS["spot"].supports(cfrjax.Config(dtype="float64"))


def _spy(monkeypatch, kernel):
    module, name = kernel.entry.split(":")
    mod = importlib.import_module(module)
    real = getattr(mod, name)
    calls = []
    monkeypatch.setattr(mod, name, lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


#: Cases the default suite runs; the others (`slow`: seconds each in Pallas's interpreter)
#: are checked by default against the XLA form in their own files: `pallas_showdown` and
#: `fold` in tests/test_boards.py, `spot` in tests/test_spot_kernel.py.
FAST = ("matching", "native_showdown", "native_forest", "native_half", "spot_half", "cuda_showdown", "turn")


@pytest.mark.parametrize("name", cases(sorted(KERNELS), FAST))
def test_kernel_equals_the_xla_passes(name, monkeypatch):
    kernel = KERNELS[name]
    on_device = ("gpu" in kernel.devices and GPU) or ("cpu" in kernel.devices and not GPU)
    if not on_device and not kernel.interpretable:
        pytest.skip(f"{name} compiles for {', '.join(kernel.devices)} only")
    if name in TOO_SLOW and not on_device:
        pytest.skip(TOO_SLOW[name])
    if kernel.implementation == "native":
        from cfrjax.public import native
        if not native.available():
            pytest.skip(f"native code unavailable: {native.why_unavailable()}")
    if dtype_skip := (CASES[name][2] == "float64" and not jax.config.jax_enable_x64):
        pytest.skip("float64 needs jax_enable_x64")
    exercise, build, dtype, tol = CASES[name]
    for form in kernel.forms:
        assert form == "public" and not dtype_skip     # every kernel runs the public form only
        game = build()
        xla = cfrjax.plan.resolve_plan(game, choice="xla")
        calls = _spy(monkeypatch, kernel)
        want = exercise(cfrjax.plan.use(game, xla), dtype)
        assert not calls, f"{name} ran under the xla plan"
        plan = kernel.enabled(xla, interpret=not on_device)
        if on_device:   # compiled kernels run from measured sizes (the plan's thresholds); these cases are small
            plan = dataclasses.replace(plan, matching_min_columns=1, fold_min_subgames=1)
        got = exercise(cfrjax.plan.use(game, plan), dtype)
        assert calls, f"{name} did not run under its plan"
        monkeypatch.undo()
        for a, b in zip(got, want):
            a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
            assert a.shape == b.shape and np.abs(b).max() > 0
            np.testing.assert_allclose(a, b, rtol=0, atol=tol * np.abs(b).max(), err_msg=name)
