"""A one-board spot's (half-)update on CPU in one piece (`cfrjax.public.cpu_spot.half`).

It must give the generic updates' numbers (regret matching of the whole slot arrays,
`regret_pass`, `cfrjax.iteration`'s rule hooks and average) bit for bit: the same
regrets, average and compensation after a solve, for every rule it runs, both orders,
float32 and float64. Where it does not apply (a turn spot, a predictive rule, locked
strategies) the generic form runs.
"""

import dataclasses

import numpy as np
import pytest

import cfrjax
from cfrjax.kernels import KERNELS
from cfrjax.public import cpu_spot

# The CPU's path: on the CPU also on a GPU machine (the `river` game built there too).
pytestmark = pytest.mark.usefixtures("on_cpu")

RIVER = "games/hunl_river.toml"
CONFIGS = [(rule, order, "float32") for rule in cfrjax.rules.RULES if KERNELS["spot_half"].supports(cfrjax.Config(rule=rule))
           for order in ("simultaneous", "alternating")] + [("dcfr", "alternating", "float64"),
                                                           ("cfr+", "simultaneous", "float64")]


def _plan(on: bool):
    """The auto plan with the native update (`_native_half`, tests/test_native_half.py) off
    (the path where native code cannot be built) and `_spot_half` on or off."""
    return dataclasses.replace(cfrjax.plan.resolve_plan(platform="cpu"), native_half=False, cpu_spot_half=on)


@pytest.fixture(scope="module")
def river():
    return cfrjax.plan.use(cfrjax.load_game(RIVER, form="public", random_hands=40, seed=7), _plan(True))


def _solve(game, rule, order, dtype, on, iterations=12):
    game = cfrjax.plan.use(game, _plan(on))
    state = cfrjax.init(game, rule=rule, order=order, dtype=dtype)
    return cfrjax.solve(game, state, iterations)


@pytest.mark.parametrize("rule,order,dtype", CONFIGS, ids=["-".join(c) for c in CONFIGS])
def test_spot_half_equals_generic_updates_bit_for_bit(river, rule, order, dtype):
    on, off = (_solve(river, rule, order, dtype, flag) for flag in (True, False))
    for field in ("regret", "avg", "avg_comp"):
        a, b = np.asarray(getattr(on, field)), np.asarray(getattr(off, field))
        assert a.dtype == b.dtype and np.array_equal(a, b), (field, np.max(np.abs(a.astype(float) - b.astype(float))))
    assert np.any(np.asarray(on.regret) != 0)     # a solve that moved


def test_spot_half_applies_only_where_it_runs(river, monkeypatch):
    calls = []
    real = cpu_spot.half
    monkeypatch.setattr(cpu_spot, "half", lambda *a, **k: calls.append(1) or real(*a, **k))
    cfrjax.solve(river, cfrjax.init(river, rule="dcfr", order="alternating", dtype="float32"), 2)
    assert calls, "a river spot's update ran the generic form"
    calls.clear()
    cfrjax.solve(river, cfrjax.init(river, rule="pcfr+", order="alternating", dtype="float32"), 2)
    assert not calls                               # predictive: the generic form
    turn = cfrjax.load_game("games/hunl_turn.toml", form="public", random_hands=12)
    state = cfrjax.init(turn, rule="dcfr", order="alternating", dtype="float32")
    assert not cpu_spot.applies(turn, state.config, state.regret, None, None)
