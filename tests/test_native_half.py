"""The public form's native CPU iteration (`cfrjax.public.native`: `forest`, `half`).

Each must give the XLA form's numbers to rounding: the boards' forests of a regret pass
(`passes._board`) and a whole (half-)update (regret matching, `regret_pass`, the rule's
hooks and the average update in `cfrjax.iteration`), on a river and a turn spot, every
rule the native update runs, both orders, float64 and float32. The comparisons are one
step from a random state: over a solve, ties between summation orders (a regret of 1e-17
against 0 turns a node from uniform to pure) make valid paths part. Where the native
update does not apply (predictive rules, a raked game, batch axes) the XLA form runs;
locked strategies (node locking) it plays as the XLA form does.
"""

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax import iteration
from cfrjax.kernels import KERNELS
from cfrjax.public import native
from cfrjax.public import native_calls
from cfrjax.public import passes as pp
from selection import cases

jax.config.update("jax_enable_x64", True)

FLAGS = ("native_half", "native_forest", "cpu_spot_half")
pytestmark = [pytest.mark.skipif(not native.available(), reason=f"native code unavailable: {native.why_unavailable()}"),
              pytest.mark.usefixtures("on_cpu")]   # the games of `spots` too (on a GPU machine: sorted, on the CPU)


@pytest.fixture(scope="module")
def spots():
    from cfrjax.games.poker import PokerSubgameSpec
    from cfrjax.games.poker.public_tree import build_public
    hands = ["AsAh", "QhJh", "KdQd", "9h8h", "7s6s", "TcTd"]
    flop = PokerSubgameSpec(board="Ks 7d 2c", pot=20, stack=30, bet_fractions=(1.0,), raise_fractions=None,
                            raise_cap=0, range0={h: 1.0 for h in hands}, range1={h: 0.5 for h in hands})
    return {"river": cfrjax.load_game("games/hunl_river.toml", form="public", random_hands=40, seed=7),
            "turn": cfrjax.load_game("games/hunl_turn.toml", form="public", random_hands=30, seed=3),
            "flop": build_public(flop, hands="range")}


def _planned(game, **flags):
    """`game` under a plan with the native library and the CPU fused updates `flags` (the
    others off)."""
    return cfrjax.plan.use(game, cfrjax.Plan(native=True, **{k: flags.get(k, False) for k in FLAGS}))


def _random_state(game, rule, order, dtype, seed=0, t=4):
    """A state at iteration `t` with random regrets (both signs) and a random average."""
    state = cfrjax.init(game, rule=rule, order=order, dtype=dtype)
    rng = np.random.default_rng(seed)
    shape = state.regret.shape
    dt = state.regret.dtype
    regret = jnp.asarray(rng.standard_normal(shape) * (rng.random(shape) < 0.8), dt)
    avg = jnp.asarray(rng.random(shape), dt)
    return dataclasses.replace(state, regret=regret, avg=avg, iteration=jnp.asarray(t, state.iteration.dtype),
                               avg_weight=jnp.asarray(3.0, state.avg_weight.dtype))


# On the river a clamped rule (CFR+, both orders), a discounted one (DCFR) and the unweighted
# average (postflop DCFR), alternating; on the turn (its trunk and boards, the same rule
# code) DCFR alternating: by default, the others slow
# (tests/selection.py): every rule the native update claims also runs against the XLA
# passes in tests/test_kernels.py.
ALL = [(spot, rule, order) for spot in ("river", "turn") for rule in cfrjax.rules.RULES
       if KERNELS["native_half"].supports(cfrjax.Config(rule=rule))
       for order in ("alternating", "simultaneous")]
FAST = [c for c in ALL if (c[0] == "river" and c[1] in ("cfr+", "dcfr", "dcfr-postflop")
                           and (c[2] == "alternating" or c[1] == "cfr+"))
        or (c[0] == "turn" and c[1:] == ("dcfr", "alternating"))]
CASES = cases(ALL, FAST, unpack=True)


def _step(game, state, native_on, monkeypatch):
    """One jitted `iteration.step` with the native update on or off, checked to run (or
    not run) the native update."""
    calls = _spy(monkeypatch)
    game = _planned(game, native_half=native_on)
    out = jax.jit(lambda s: iteration.step(game, s))(state)
    assert bool(calls) == native_on, "the native update did not run" if native_on else "it ran while off"
    return out


@pytest.mark.parametrize("spot,rule,order", CASES)
def test_half_equals_the_xla_form_one_step(spots, spot, rule, order, monkeypatch):
    game = spots[spot]
    out = {}
    for dtype in ("float64", "float32"):
        state = _random_state(game, rule, order, dtype)
        for native_on in (True, False):
            out[dtype, native_on] = _step(game, state, native_on, monkeypatch)
    for dtype, tol in (("float64", 1e-12), ("float32", 2e-5)):
        a, b = out[dtype, True], out[dtype, False]
        for field in ("regret", "avg"):
            x, y = np.asarray(getattr(a, field), np.float64), np.asarray(getattr(b, field), np.float64)
            np.testing.assert_allclose(x, y, rtol=tol, atol=tol, err_msg=f"{dtype} {field}")
        assert not np.array_equal(np.asarray(a.regret), np.asarray(state.regret))   # a step that moved


@pytest.mark.parametrize("order", ["alternating", "simultaneous"])
def test_locked_rows_play_their_policy(spots, order, monkeypatch):
    """Node locking (`cfrjax.locking`): a third of the turn's slot entries locked to a
    random policy; the native update plays it as the XLA form does."""
    game = spots["turn"]
    state = _random_state(game, "dcfr", order, "float64")
    rng = np.random.default_rng(4)
    shape = state.regret.shape
    state = dataclasses.replace(state, locked=jnp.asarray(rng.random(shape) < 0.3),
                                locked_policy=jnp.asarray(rng.random(shape), state.regret.dtype))
    a, b = (_step(game, state, on, monkeypatch) for on in (True, False))
    for field in ("regret", "avg"):
        np.testing.assert_allclose(np.asarray(getattr(a, field)), np.asarray(getattr(b, field)), rtol=1e-12,
                                   atol=1e-12, err_msg=field)
    idle = _step(game, dataclasses.replace(state, locked=jnp.zeros(shape, bool)), True, monkeypatch)
    assert not np.allclose(np.asarray(idle.avg), np.asarray(a.avg))     # the locks changed the update


# Both players' passes and the whole iteration's on every street; each player alone on one
# street by default, the other cases slow.
@pytest.mark.parametrize("spot,player", cases([(s, p) for p in (None, 0, 1) for s in ("river", "turn", "flop")],
                                              [(s, None) for s in ("river", "turn", "flop")] + [("turn", 0),
                                                                                                 ("river", 1)],
                                              unpack=True))
def test_forest_equals_the_xla_boards(spots, spot, player):
    """A regret pass's boards (on a flop: its forest roots per turn card)."""
    game = spots[spot]
    rng = np.random.default_rng(1)
    S, H = game.num_slots, game.num_hands
    sigma = jnp.asarray(rng.random((S + 1, H))).at[S].set(1.0)
    lo, hi = (0, S) if player is None else ((0, game.slot_split) if player == 0 else (game.slot_split, S))
    regret = jnp.asarray(rng.standard_normal((hi - lo, H)))
    out = {}
    for on in (True, False):
        planned = _planned(game, native_forest=on)
        out[on] = jax.jit(lambda s, r: pp.regret_pass(planned, s, r, player))(sigma, regret)
    for a, b in zip(out[True], out[False]):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


def _spy(monkeypatch):
    calls = []
    real = native_calls.half
    monkeypatch.setattr(native_calls, "half", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_applies_only_where_it_runs(spots, monkeypatch):
    calls = _spy(monkeypatch)
    for spot in ("river", "turn"):
        game = _planned(spots[spot], native_half=True, native_forest=True, cpu_spot_half=True)
        cfrjax.solve(game, cfrjax.init(game, rule="dcfr", order="alternating", dtype="float32"), 2)
        assert calls, f"a {spot} spot's update ran the XLA form"
        calls.clear()
    river = _planned(spots["river"], native_half=True, native_forest=True, cpu_spot_half=True)
    cfrjax.solve(river, cfrjax.init(river, rule="pcfr+", order="alternating", dtype="float32"), 2)
    assert not calls                                   # predictive: the XLA updates
    raked = cfrjax.load_game("hunl_river_full_rake")
    state = cfrjax.init(raked, rule="dcfr", order="alternating", dtype="float32")
    assert not native_calls.half_applies(raked, state.config, state.regret, state.avg_comp, None, None)   # raked
    state = cfrjax.init(river, rule="dcfr", order="alternating", dtype="float32")
    assert native_calls.half_applies(river, state.config, state.regret, state.avg_comp, None, None)
    batch = pp.set_ranges(river, np.ones((river.num_hands, 2)), np.ones((river.num_hands, 2)))
    assert not native_calls.half_applies(batch, state.config, state.regret, state.avg_comp, None, None)  # batch axes


def test_under_vmap_equals_a_loop(spots, monkeypatch):
    """`vmap` over subgames with their own ranges: the native call runs once per subgame."""
    calls = _spy(monkeypatch)
    game = _planned(spots["river"], native_half=True, native_forest=True)
    rng = np.random.default_rng(5)
    ranges = [rng.random((2, game.num_hands)) for _ in range(3)]
    games = [pp.set_ranges(game, w[0], w[1]) for w in ranges]
    state = _random_state(game, "dcfr", "alternating", "float32")
    batch = jax.tree.map(lambda *xs: jnp.asarray(np.stack([np.asarray(x) for x in xs])), *games)  # no op-by-op stack
    run = jax.vmap(lambda g: iteration.step(g, state).regret)
    got = np.asarray(run(batch))
    assert calls, "the native update did not run under vmap"
    one = jax.jit(lambda g: iteration.step(g, state).regret)   # the loop: one executable for the three games
    for k, g in enumerate(games):
        np.testing.assert_array_equal(got[k], np.asarray(one(g)))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_boards_on_two_threads_equal_one(spots, monkeypatch):
    """A turn's boards split over the process's cores give the numbers of one core, bit for
    bit (each board is computed alone; the trunk sums them in board order)."""
    calls = _spy(monkeypatch)
    game = _planned(spots["turn"], native_half=True, native_forest=True)
    state = _random_state(game, "dcfr", "simultaneous", "float32")
    cores = os.sched_getaffinity(0)
    step = jax.jit(lambda s: iteration.step(game, s))
    try:
        os.sched_setaffinity(0, {min(cores)})
        one = step(state)
    finally:
        os.sched_setaffinity(0, cores)
    two = step(state)
    assert calls, "the native update did not run"
    for field in ("regret", "avg", "avg_comp"):
        np.testing.assert_array_equal(np.asarray(getattr(one, field)), np.asarray(getattr(two, field)))
