"""Retargeting compiled games (`cfrjax.retarget`): same numbers as compiling from scratch,
no retrace, and batches of retargeted games under `vmap`."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from selection import cases
from cfrjax.game import _FLOAT_FIELDS, _INDEX_FIELDS
from cfrjax.games.poker import PokerSubgameSpec, build_spec, root_deals, subgame_deals

RIVER = "Ks Js Th 7d 2c"
ITERS = 30


@pytest.fixture(scope="module")
def river():
    cfg = PokerSubgameSpec(board=RIVER, random_hands=6, seed=1)
    spec = build_spec(cfg)
    return cfg, spec, cfrjax.compile.compile_game(spec)


def _random_ranges(cfg, seed, n=None):
    """Positive random weights on each player's built support (zero elsewhere)."""
    rng = np.random.default_rng(seed)
    w0, w1 = cfg.ranges()
    shape = (1326,) if n is None else (n, 1326)
    return (np.where(w0 > 0, rng.uniform(0.1, 1.0, shape), 0.0),
            np.where(w1 > 0, rng.uniform(0.1, 1.0, shape), 0.0))


def _assert_same_game(a, b):
    for k in _INDEX_FIELDS + _FLOAT_FIELDS:
        np.testing.assert_array_equal(np.asarray(getattr(a, k)), np.asarray(getattr(b, k)), err_msg=k)


def _assert_same_state(a, b):
    assert a.config == b.config
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


class _Counted:
    """A jitted solve that counts its traces."""

    def __init__(self, iterations):
        self.traces = 0

        def run(game, state):
            self.traces += 1
            return cfrjax.solve(game, state, iterations)

        self.fn = jax.jit(run)

    def __call__(self, game, state):
        return self.fn(game, state)


def test_root_deals_recorded(river):
    cfg, spec, game = river
    h0, h1, prob = subgame_deals(cfg)
    for g in (spec, game):
        d0, d1 = root_deals(g)
        np.testing.assert_array_equal(d0, h0)
        np.testing.assert_array_equal(d1, h1)
    lo, hi = cfrjax.retarget.root_outcomes(game)
    assert hi - lo == h0.size
    np.testing.assert_array_equal(np.asarray(game.edge_prob[lo:hi]), prob)


@pytest.mark.fixed_order
@pytest.mark.parametrize("chance", cases(["folded", "explicit"], ["folded"]))
def test_set_root_ranges_equals_fresh_compile_and_no_retrace(river, chance):
    cfg, spec, _ = river
    game = cfrjax.compile.compile_game(spec, chance)
    r0, r1 = _random_ranges(cfg, 7)
    fresh = cfrjax.compile.compile_game(build_spec(dataclasses.replace(cfg, random_hands=None, range0=r0, range1=r1)), chance)
    moved = cfrjax.poker.set_root_ranges(game, r0, r1)
    _assert_same_game(moved, fresh)
    # The original game is untouched.
    np.testing.assert_array_equal(np.asarray(game.edge_prob), np.asarray(cfrjax.compile.compile_game(spec, chance).edge_prob))

    solve = _Counted(ITERS)
    state = cfrjax.init(game, "cfr+", "alternating", "linear")
    solve(game, state)
    s_moved = solve(moved, state)
    assert solve.traces == 1                               # same static metadata: no retrace
    # `fresh` has other labels (name, fingerprint), which alone would retrace; with the
    # original labels it runs in the same executable and gives the same iterates.
    s_fresh = solve(dataclasses.replace(fresh, labels=game.labels), state)
    assert solve.traces == 1
    _assert_same_state(s_moved, s_fresh)
    # Back to the original ranges gives the original game.
    _assert_same_game(cfrjax.poker.set_root_ranges(moved, *cfg.ranges()), game)


@pytest.mark.fixed_order
@pytest.mark.parametrize("chance", cases(["folded", "explicit"], ["folded"]))
def test_set_payoffs_equals_fresh_compile_and_no_retrace(river, chance):
    _, spec, _ = river
    game = cfrjax.compile.compile_game(spec, chance)
    rng = np.random.default_rng(3)
    terminal = spec.kind == 3
    new_payoff = np.where(terminal, spec.payoff * 1.5 + rng.normal(size=spec.num_nodes), 0.0)
    fresh = cfrjax.compile.compile_game(dataclasses.replace(spec, payoff=new_payoff), chance)
    moved = cfrjax.set_payoffs(game, fresh.payoff)
    _assert_same_game(moved, fresh)

    solve = _Counted(ITERS)
    state = cfrjax.init(game, "cfr", "simultaneous", "uniform")
    solve(game, state)
    s_moved = solve(moved, state)
    s_fresh = solve(dataclasses.replace(fresh, labels=game.labels), state)
    assert solve.traces == 1
    _assert_same_state(s_moved, s_fresh)


def test_set_root_chance_renormalizes_nothing_and_matches_ranges(river):
    cfg, _, game = river
    r0, r1 = _random_ranges(cfg, 11)
    h0, h1 = root_deals(game)
    p = r0[h0] * r1[h1]
    a = cfrjax.poker.set_root_ranges(game, r0, r1)
    b = cfrjax.set_root_chance(game, p / p.sum())
    for k in _FLOAT_FIELDS:
        np.testing.assert_allclose(np.asarray(getattr(a, k)), np.asarray(getattr(b, k)), rtol=1e-14, atol=1e-16)
    with pytest.raises(ValueError, match="expected"):
        cfrjax.set_root_chance(game, p[:-1])
    # a game of the same fingerprint under another name keeps its own labels (the jitted
    # update had returned the game, so jit handed back the first game's labels)
    other = dataclasses.replace(game, labels=dataclasses.replace(game.labels, name="other"))
    assert cfrjax.set_root_chance(other, p / p.sum()).labels.name == "other"


@pytest.mark.fixed_order
def test_vmap_over_ranges_equals_separate_solves(river):
    cfg, _, game = river
    B = 8
    R0, R1 = _random_ranges(cfg, 5, B)
    axes = cfrjax.batch_axes(game)
    games = jax.jit(jax.vmap(cfrjax.poker.set_root_ranges, (None, 0, 0), axes))(game, jnp.asarray(R0), jnp.asarray(R1))
    assert games.template.shape == (B, game.num_nodes) and games.parent.shape == game.parent.shape
    state = cfrjax.init(game, "cfr+", "alternating", "linear")
    states = jax.tree.map(lambda x: jnp.broadcast_to(x, (B,) + x.shape), state)
    batched_solve = jax.jit(jax.vmap(lambda g, s: cfrjax.solve(g, s, ITERS), (axes, 0)))
    batched = batched_solve(games, states)
    lo, hi = cfrjax.retarget.root_outcomes(game)
    separate = [cfrjax.poker.set_root_ranges(game, R0[b], R1[b]) for b in range(B)]
    for b in range(B):
        # jnp normalization under vmap: equal to the NumPy one up to the sum's rounding.
        np.testing.assert_allclose(np.asarray(games.edge_prob[b]), np.asarray(separate[b].edge_prob),
                                   rtol=1e-14, atol=0)
        # The batched solve equals a separate solve of each game of the batch, bit for bit.
        g = cfrjax.set_root_chance(game, games.edge_prob[b, lo:hi])
        _assert_same_game(g, dataclasses.replace(game, **{k: getattr(games, k)[b] for k in _FLOAT_FIELDS}))
        _assert_same_state(jax.tree.map(lambda x: x[b], batched), cfrjax.solve(g, state, ITERS))
    # A batch stacked from separately retargeted (NumPy-normalized) games: same, bit for bit.
    stacked = dataclasses.replace(game, **{k: jnp.stack([getattr(g, k) for g in separate]) for k in _FLOAT_FIELDS})
    batched2 = batched_solve(stacked, states)
    for b in range(B):
        _assert_same_state(jax.tree.map(lambda x: x[b], batched2), cfrjax.solve(separate[b], state, ITERS))


def test_reset(river):
    _, _, game = river
    state = cfrjax.init(game, "cfr+", "alternating", "linear")
    solved = cfrjax.solve(game, state, ITERS)
    fresh = cfrjax.retarget.reset(solved)
    _assert_same_state(fresh, state)                      # every leaf (and the config), dtypes included


def test_saved_game_keeps_deals(river, tmp_path):
    cfg, _, game = river
    cfrjax.save_game(game, tmp_path / "g.npz")
    loaded = cfrjax.load_game(str(tmp_path / "g.npz"))
    r0, r1 = _random_ranges(cfg, 2)
    _assert_same_game(cfrjax.poker.set_root_ranges(loaded, r0, r1), cfrjax.poker.set_root_ranges(game, r0, r1))
    with pytest.warns(UserWarning, match="not in the game's deals"):
        cfrjax.poker.set_root_ranges(game, np.ones(1326), r1)
