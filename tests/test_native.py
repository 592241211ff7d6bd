"""The native CPU showdown (`cfrjax.public.native`, an XLA FFI custom call) against a
brute-force pairwise sum that shares no code with either form, against the XLA form it
replaces on CPU, under `vmap`, and inside a whole public-form solve."""

import shutil
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from selection import cases

import cfrjax
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.cards import COMBOS
from cfrjax.public import native
from cfrjax.public import terminals as pt

jax.config.update("jax_enable_x64", True)
# CPU kernels: traced and run on the CPU also where the default device is a GPU.
pytestmark = pytest.mark.usefixtures("on_cpu")

TABLES = ("sd_sorted", "sd_card_sorted", "sd_index")


def _spot(seed: int, combos: int = 200, ties: int = 30, hands_seed: int | None = None):
    """A partial hand list (card lists padded; from `hands_seed` where given), random
    strengths with many ties, its tables."""
    rng = np.random.default_rng(seed)
    pick = np.random.default_rng(seed if hands_seed is None else hands_seed)
    hand_cards = np.asarray(COMBOS)[np.sort(pick.choice(len(COMBOS), combos, replace=False))]
    strength = rng.integers(0, ties, combos)
    tables = pt.showdown_tables(strength[None], hand_cards, pt.card_table(hand_cards))
    return hand_cards, strength, {k: jnp.asarray(tables[k][0]) for k in TABLES}


def _pairwise(hand_cards, strength, x):
    """`sum_{h'} compat(h, h') sign(s_h - s_h') x[h']`, in float64, pair by pair."""
    compat = ~(hand_cards[:, None, :, None] == hand_cards[None, :, None, :]).any(axis=(2, 3))
    sign = np.sign(strength[:, None] - strength[None, :])
    return (compat * sign) @ np.asarray(x, np.float64)


def test_builds_where_a_compiler_is():
    """With a C++ compiler on the machine (CI has one) the library builds and loads: a
    build that broke would otherwise leave every CPU solve on the XLA form unnoticed."""
    if not any(shutil.which(c) for c in ("c++", "g++", "clang++")):
        pytest.skip("no C++ compiler on this machine")
    assert native.available(), native.why_unavailable()


@pytest.mark.parametrize("q", [1, 5, 16, 17, 40])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_equals_the_pairwise_sums_and_the_xla_form(q, dtype):
    """Every fixed width (up to 16) and the generic loop: the pairwise sums to rounding, and
    the XLA form it replaces (`_showdown_sorted_hm`, CPU lowering) likewise."""
    if not native.available():
        pytest.skip(native.why_unavailable())
    hand_cards, strength, board = _spot(q)
    x = jnp.asarray(np.random.default_rng(q).random((len(hand_cards), q)), dtype)
    got = np.asarray(jax.jit(native.showdown)(x, *(board[k] for k in TABLES)))
    xla = np.asarray(jax.jit(lambda b, v: pt._showdown_sorted_hm(b, v, True, None))(board, x))
    want = _pairwise(hand_cards, strength, x)
    tol = (1e-5 if dtype == "float32" else 1e-12) * float(np.abs(np.asarray(x)).sum(axis=0).max())
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol)
    np.testing.assert_allclose(xla, want, rtol=0, atol=tol)


def test_under_vmap_over_reach_and_over_tables():
    """`vmap` over the reach (one set of tables, broadcast in the call) and over both (a
    board per entry), nested: each entry equals its own call."""
    if not native.available():
        pytest.skip(native.why_unavailable())
    spots = [_spot(s, combos=150, hands_seed=9) for s in (1, 2)]
    H = 150
    tables = {k: jnp.stack([s[2][k] for s in spots]) for k in TABLES}                 # [2, ...]
    x = jnp.asarray(np.random.default_rng(0).random((2, 3, H, 4)))                     # [board, range, H, Q]
    f = lambda v, *t: native.showdown(v, *t)                                            # noqa: E731
    over_reach = jax.jit(jax.vmap(f, in_axes=(0, None, None, None)))
    over_both = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None, None, None))))
    for b in range(2):
        one = [np.asarray(f(x[b, r], *(tables[k][b] for k in TABLES))) for r in range(3)]
        np.testing.assert_array_equal(np.asarray(over_reach(x[b], *(tables[k][b] for k in TABLES))), np.stack(one))
        np.testing.assert_array_equal(np.asarray(over_both(x, *(tables[k] for k in TABLES)))[b], np.stack(one))


def _traced_targets(fn, *args) -> str:
    return jax.jit(fn).lower(*args).as_text()


def test_showdown_diff_runs_it_on_cpu_and_the_xla_form_when_off(monkeypatch):
    """`showdown_diff` on CPU calls the native showdown where it is available, and the XLA
    form under a plan without it; both give the same values to rounding."""
    if not native.available():
        pytest.skip(native.why_unavailable())
    hand_cards, strength, board = _spot(4)
    r = jnp.asarray(np.random.default_rng(4).random((3, 1, len(hand_cards))))              # [K, L, H]
    games = {on: types.SimpleNamespace(terminals="sorted", dense_showdown=None, plan=cfrjax.Plan(native=on))
             for on in (True, False)}
    diff = lambda on: lambda b, v: pt.showdown_diff(games[on], b, v, True)                  # noqa: E731
    assert "CfrjaxShowdownF64" in _traced_targets(diff(True), board, r)
    on = np.asarray(jax.jit(diff(True))(board, r))
    assert "CfrjaxShowdown" not in _traced_targets(diff(False), board, r)
    off = np.asarray(jax.jit(diff(False))(board, r))
    np.testing.assert_allclose(on, off, rtol=0, atol=1e-12 * float(np.asarray(r).sum(axis=2).max()))


@pytest.mark.parametrize("rule", cases(["dcfr", "cfr+"], ["cfr+"]))   # dcfr slow: the registry test covers it
def test_public_solve_with_and_without_it(monkeypatch, rule):
    """A public-form poker spot solved in float64 with the native showdown and with the XLA
    form: the same regrets and averages to rounding on every hand in its player's range,
    and the same exploitability. (A hand outside the range has no reach and its regrets
    start tied at zero, so the last bits decide its regret matching: its trajectory may
    part between any two summation orders, as the tabular form has no key for it.)"""
    if not native.available():
        pytest.skip(native.why_unavailable())
    game = cfrjax.load_game(PokerSubgameSpec(board="Ks Js Th 7d 2c", pot=20, stack=60, bet_fractions=(0.5, 1.0),
                                             raise_cap=1, random_hands=60, seed=3), form="public")
    runs = {}
    for on in (True, False):
        game = cfrjax.plan.use(game, "auto" if on else cfrjax.Plan(native=False))
        assert game.plan.native == on
        state = cfrjax.init(game, rule=rule, order="alternating", dtype="float64")
        state = cfrjax.solve(game, state, 20)
        runs[on] = [np.asarray(state.regret), np.asarray(state.avg)], cfrjax.evaluate(game, state)
    weights = np.asarray(game.weights)                                                   # [2, H]
    rows = np.arange(runs[True][0][0].shape[0])
    in_range = weights[(rows >= game.slot_split).astype(int)] > 0                         # [S, H]: the slot's player's
    assert 0 < in_range.mean() < 1
    for a, b in zip(runs[True][0], runs[False][0]):
        np.testing.assert_allclose(a[in_range], b[in_range], rtol=1e-9, atol=1e-12)
    assert not all(np.array_equal(a[in_range], b[in_range]) for a, b in zip(runs[True][0], runs[False][0]))   # two forms ran
    np.testing.assert_allclose(np.asarray(runs[True][1]), np.asarray(runs[False][1]), rtol=1e-9, atol=1e-12)


def test_a_board_per_subgame_in_one_call(monkeypatch):
    """A batch whose subgames each have a board (tables batch-last, as
    `cfrjax.games.poker.boards.set_boards` leaves them) runs one native call for all of
    them: each subgame's pairwise sums, and the XLA form's values, to rounding."""
    if not native.available():
        pytest.skip(native.why_unavailable())
    spots = [_spot(s, combos=120, hands_seed=5) for s in (11, 12, 13)]
    hand_cards = spots[0][0]
    board = {k: jnp.stack([s[2][k] for s in spots], axis=-1) for k in TABLES}            # [..., nb]
    r = jnp.asarray(np.random.default_rng(6).random((2, 1, len(hand_cards), 3)))          # [K, L, H, nb]
    games = {on: types.SimpleNamespace(terminals="sorted", dense_showdown=None, plan=cfrjax.Plan(native=on))
             for on in (True, False)}
    diff = lambda on: lambda b, v: pt.showdown_diff(games[on], b, v, True)                  # noqa: E731
    text = _traced_targets(diff(True), board, r)
    assert text.count("CfrjaxShowdownF64") == 1
    got = np.asarray(jax.jit(diff(True))(board, r))
    xla = np.asarray(jax.jit(diff(False))(board, r))
    tol = 1e-12 * float(np.asarray(r).sum(axis=2).max())
    for i, (hc, strength, _) in enumerate(spots):
        want = np.stack([_pairwise(hc, strength, np.asarray(r)[k, 0, :, i]) for k in range(2)])
        np.testing.assert_allclose(got[:, 0, :, i], want, rtol=0, atol=tol)
    np.testing.assert_allclose(got, xla, rtol=0, atol=tol)
