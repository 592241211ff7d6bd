"""What a Python user meets first: the poker spec helpers exported and documented, a batched
evaluation, and one-line errors where a spot was silently wrong (an unknown game name, a
range that deals nothing, bet sizes the tree can never offer)."""

from __future__ import annotations

import dataclasses
import glob
import importlib
import inspect
import os
import subprocess
import sys
from contextlib import nullcontext

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax.games.poker import PokerSpecError, PokerSubgameSpec, load_poker_config, parse_combo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIVER = "Ks Js Th 7d 2c"
TURN = "Ks Js Th 7d"


def test_parse_range_and_spec_helpers_are_exported_and_documented():
    assert cfrjax.poker is importlib.import_module("cfrjax.games.poker")
    assert cfrjax.poker.PokerSubgameSpec is PokerSubgameSpec
    for name in ("parse_range", "PokerSubgameSpec", "BetSizes", "parse_sizes", "parse_board", "parse_combo",
                 "root_ranges", "set_root_ranges", "load_poker_config", "COMBO_NAMES"):
        assert name in cfrjax.poker.__all__, name
    for fn in (cfrjax.poker.parse_range, cfrjax.poker.parse_sizes, cfrjax.poker.BetSizes.parse, cfrjax.poker.set_root_ranges,
               cfrjax.evaluate, cfrjax.evaluate_batch):
        doc = inspect.getdoc(fn)
        assert "Args:" in doc and "Returns:" in doc, fn.__qualname__
    # The docstring's example: AA on a board without aces is 6 combos, AKs at 0.5, the
    # board's Ks removes its combos.
    w = cfrjax.poker.parse_range("AA,KK,AKs:0.5,T9s-65s,A5s-A2s", board=RIVER)
    assert w.shape == (1326,) and w.dtype == np.float64
    assert w[parse_combo("AhAd")] == 1.0 and w[parse_combo("AhKh")] == 0.5 and w[parse_combo("AsKs")] == 0.0
    aa = [i for i, n in enumerate(cfrjax.poker.COMBO_NAMES) if n[0] == n[2] == "A"]
    kk = [i for i, n in enumerate(cfrjax.poker.COMBO_NAMES) if n[0] == n[2] == "K"]
    assert len(aa) == len(kk) == 6 and w[aa].sum() == 6 and w[kk].sum() == 3   # Ks on the board


def _spec_files():
    dirs = ("cfrjax/specs", "games", "bench/peers/spots", "tests/fixtures", "shared/spots")
    files = [f for d in dirs for f in sorted(glob.glob(os.path.join(ROOT, d, "*.toml")))]
    return [f for f in files if os.path.basename(f) != "suite.toml"]


def test_every_shipped_spec_parses():
    """The checks on ranges and sizes refuse no shipped spec (parsed, not built or solved)."""
    files = _spec_files()
    assert len(files) >= 17
    for f in files:
        assert isinstance(load_poker_config(f), PokerSubgameSpec), f


def test_unknown_game_name_is_one_error_without_openspiels_list(capfd):
    with pytest.raises(ValueError, match=r"^unknown game 'leduc_pokr': not a file and not an OpenSpiel game"):
        cfrjax.load_game("leduc_pokr")
    with pytest.raises(FileNotFoundError, match="no such file: missing.toml"):
        cfrjax.load_game("missing.toml")
    with pytest.raises(IsADirectoryError, match="is a directory, not a game"):
        cfrjax.load_game(ROOT)
    out = capfd.readouterr()
    assert out.err == "" and out.out == ""    # OpenSpiel printed its 120 game names to stderr


@pytest.fixture(scope="module")
def small_spot():
    return PokerSubgameSpec(board=RIVER, range0="AA,QQ", range1="KK,AdAc")


@pytest.mark.parametrize("form", ["public", "tabular"])
def test_ranges_that_deal_nothing_are_refused(small_spot, form):
    """All zero (the issue's `(nan, nan)`), or zero on every hand the game deals, or no
    pair of hands without a shared card: one line before anything is traced."""
    game = cfrjax.load_game(small_spot, form=form)
    w0, w1 = small_spot.ranges()
    zero = np.zeros(1326)
    with pytest.raises(ValueError, match="^range0 has no weight on a hand the game deals"):
        cfrjax.poker.set_root_ranges(game, zero, w1)
    with pytest.raises(ValueError, match="^range1 has no weight on a hand the game deals"):
        cfrjax.poker.set_root_ranges(game, w0, zero)
    with pytest.warns(UserWarning, match="not in the game's deals") if form == "tabular" else nullcontext():
        with pytest.raises(ValueError, match="^range1 has no weight"):   # only on a hand the board blocks
            cfrjax.poker.set_root_ranges(game, w0, cfrjax.poker.parse_range("KsKh"))
    if form == "public":   # every pair shares a card (the tabular game deals AdAc only against AA and QQ)
        with pytest.raises(ValueError, match="^range0 and range1 deal nothing"):
            cfrjax.poker.set_root_ranges(game, cfrjax.poker.parse_range("AsAd"), cfrjax.poker.parse_range("AdAc"))
    moved = cfrjax.poker.set_root_ranges(game, cfrjax.poker.parse_range("AA"), w1)  # ranges that deal are taken
    probs = moved.weights if form == "public" else moved.edge_prob
    assert np.all(np.isfinite(np.asarray(probs)))


def test_all_zero_range_in_a_spec_is_one_line(tmp_path):
    with pytest.raises(PokerSpecError, match="player 0 range has no live hands"):
        PokerSubgameSpec(board=RIVER, range0=np.zeros(1326))
    path = tmp_path / "zero.toml"
    for r in ('""', '"AsAh:0"', '"KsKh"'):
        path.write_text(f'board = "{RIVER}"\n[ranges]\nrange0 = "AA"\nrange1 = {r}\n')
        with pytest.raises(PokerSpecError, match=f"^{path}: player 1 range: .* has no live hands") as e:
            load_poker_config(path)
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("board, kw, match", [
    (RIVER, dict(betting={"bet": "", "raise": "3x"}),
     r'^betting: raise sizes "3x" can never be used: no bet is ever made for them to raise \(oop on the river, '
     r"ip on the river"),
    (TURN, dict(betting={"bet": "", "raise": "3x"}), "oop on the turn, ip on the turn, oop on the river"),
    (RIVER, dict(betting={"bet": "", "ip": {"raise": "3x"}}), r"^betting.ip: raise sizes \"3x\" .* \(ip on the river"),
    (RIVER, dict(betting={"bet": "50%", "raise": "3x"}, raise_cap=0), "raise_cap = 0 allows no raises"),
    (RIVER, dict(bet_fractions=(0.5,), raise_fractions=(1.0,)), r'^raise_fractions: raise sizes "100%" .*raise_cap = 0'),
    (RIVER, dict(betting={"bet": "50%", "donk": "33%"}), "oop never opens the river after calling a bet "
                                                        r"\(the subgame starts on the river\)"),
    (TURN, dict(betting={"bet": "50%", "turn": {"donk": "33%"}}), r"^betting.turn: donk sizes .*starts on the turn"),
    (TURN, dict(betting={"bet": "50%", "ip": {"bet": ""}, "river": {"donk": "33%"}}),
     r"^betting.river: donk sizes \"33%\" .*\(ip never bets on the turn\)"),
])
def test_sizes_that_can_never_be_used_are_refused(board, kw, match):
    with pytest.raises(PokerSpecError, match=match) as e:
        PokerSubgameSpec(board=board, random_hands=3, **kw)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("board, kw", [
    (TURN, dict(betting={"bet": "50%", "donk": "33%"})),                      # the river's donk is used
    (TURN, dict(betting={"bet": "50%", "raise": "3x", "river": {"bet": ""}})),  # raises used on the turn
    (TURN, dict(betting={"bet": "50%", "ip": {"bet": ""}, "raise": "3x", "river": {"donk": "33%"}})),  # oop bets, ip raises, oop calls
    (RIVER, dict(betting={"bet": "", "raise": "3x", "add_allin_threshold": 1.5})),  # the threshold adds all-in bets
    (RIVER, dict(bet_fractions=(0.5,), raise_fractions=(1.0,), raise_cap=1)),
    (RIVER, dict(betting={"bet": "", "ip": {"bet": "50%"}, "oop": {"raise": "3x"}})),   # oop raises ip's bet
])
def test_sizes_used_somewhere_are_accepted(board, kw):
    PokerSubgameSpec(board=board, random_hands=3, **kw)


def test_bet_empty_with_raises_in_a_spec_file(tmp_path):
    path = tmp_path / "spot.toml"
    path.write_text(f'board = "{RIVER}"\n[betting]\nbet = ""\nraise = "3x"\n')
    with pytest.raises(PokerSpecError, match=f'^{path}: betting: raise sizes "3x" can never be used'):
        load_poker_config(path)


def test_evaluate_batch_equals_a_loop_of_evaluations():
    """A batch over player 0's range, each subgame with its own random average policy:
    `evaluate_batch` and `jax.vmap(cfrjax.evaluate)` equal `cfrjax.evaluate` subgame by
    subgame."""
    spot = PokerSubgameSpec(board=RIVER, random_hands=6, seed=1)
    game = cfrjax.load_game(spot)
    B = 3
    rng = np.random.default_rng(0)
    r0, r1 = cfrjax.poker.root_ranges(game)
    singles = [cfrjax.poker.set_root_ranges(game, np.where(r0 > 0, rng.uniform(0.1, 1.0, 1326), 0.0), r1) for _ in range(B)]
    axes = cfrjax.batch_axes(game)
    fields = [f for f in type(game).RETARGETABLE if getattr(axes, f) == 0]
    games = dataclasses.replace(game, **{f: jnp.stack([getattr(g, f) for g in singles]) for f in fields})
    states = cfrjax.batch.init_batch(game, B, rule="cfr+")
    states = dataclasses.replace(states, avg=jnp.asarray(rng.uniform(0.0, 1.0, states.avg.shape), states.avg.dtype))
    expl, value = cfrjax.evaluate_batch(games, states)
    assert expl.shape == value.shape == (B,) and expl.dtype == value.dtype == np.float64
    loop = np.array([cfrjax.evaluate(singles[b], jax.tree.map(lambda x: x[b], states)) for b in range(B)])
    np.testing.assert_allclose(expl, loop[:, 0], rtol=1e-12, atol=0)
    np.testing.assert_allclose(value, loop[:, 1], rtol=1e-12, atol=0)
    assert np.all(expl > 0) and len(set(np.round(np.asarray(expl), 9))) == B    # B different subgames and policies
    e2, v2 = jax.vmap(cfrjax.evaluate, (axes, 0))(games, states)     # `evaluate` itself maps over a batch
    np.testing.assert_allclose(np.asarray(e2), expl, rtol=1e-12, atol=0)
    np.testing.assert_allclose(np.asarray(v2), value, rtol=1e-12, atol=0)


def test_every_public_name_imports_from_its_module():
    """`import cfrjax` is lazy (`cfrjax.__getattr__`): every name of `__all__` resolves to
    the object its module defines, in a fresh process that had not imported JAX before."""
    code = ("import sys, importlib, cfrjax; assert 'jax' not in sys.modules; "
            "bad = [n for n in cfrjax.__all__ if getattr(cfrjax, n) is not (importlib.import_module("
            "cfrjax._API[n][0] + '.' + cfrjax._API[n][1]) if cfrjax._API[n][0] in ('cfrjax', 'cfrjax.games') else "
            "getattr(importlib.import_module(cfrjax._API[n][0]), cfrjax._API[n][1]))]; print(len(cfrjax.__all__), bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    count, bad = out.stdout.split(" ", 1)
    assert 0 < int(count) <= 40 and bad.strip() == "[]", out.stdout


def test_public_api_is_short_and_documented():
    """At most 40 public names, each named in the package docstring (which says why these) and
    with its entry on the API reference page (`::: cfrjax.NAME`);
    a name left out of `__all__` (`compile_game`) is no attribute of `cfrjax` but reachable by
    its module's full name (`cfrjax.compile.compile_game`, `cfrjax.public.depth.exact_leaf`:
    submodules import on first use)."""
    assert len(cfrjax.__all__) <= 40
    assert {n for n in dir(cfrjax) if not n.startswith("__")} == set(cfrjax.__all__)   # no `ast`, `sys`, `_API`
    with open(os.path.join(ROOT, "docs", "api.md")) as f:
        entries = {line.split()[1] for line in f if line.startswith("::: ")}
    missing = [n for n in cfrjax.__all__ if f"cfrjax.{n}" not in entries]
    assert not missing, missing
    unexplained = [n for n in cfrjax.__all__ if f"`{n}`" not in cfrjax.__doc__]   # the docstring says why each
    assert not unexplained, unexplained
    for name in ("compile_game", "checkpoint_info", "strategy_table", "use_plan", "parse_range"):
        assert name not in cfrjax.__all__
        with pytest.raises(AttributeError, match=f"module 'cfrjax' has no attribute '{name}'"):
            getattr(cfrjax, name)
    from cfrjax.compile import compile_game
    from cfrjax.games.openspiel import spec_from_openspiel
    from cfrjax.public.report import node_report
    assert (cfrjax.compile.compile_game, cfrjax.games.openspiel.spec_from_openspiel,
            cfrjax.public.report.node_report) == (compile_game, spec_from_openspiel, node_report)
    with pytest.raises(AttributeError, match="module 'cfrjax.public' has no attribute 'nope'"):
        cfrjax.public.nope


def test_solve_returns_a_state_whatever_its_keywords():
    """`solve` has one return type, a `SolverState`, for every keyword it takes (and under
    `jax.jit`); `solve_with_trace` always the pair `(SolverState, Trace)`, in its fixed mode
    (with and without `eval_every`) and its target mode; equal states for equal iterations."""
    kuhn = cfrjax.load_game("kuhn_poker")
    s0 = cfrjax.init(kuhn)
    plain = [cfrjax.solve(kuhn, s0, 6), cfrjax.solve(kuhn, s0, 6, check_memory=False),
             cfrjax.solve(kuhn, s0, iterations=6), jax.jit(lambda g, s: cfrjax.solve(g, s, 6))(kuhn, s0)]
    assert all(type(out) is cfrjax.SolverState for out in plain)
    for out in plain[1:]:
        jax.tree.map(np.testing.assert_array_equal, out, plain[0])
    assert int(cfrjax.solve(kuhn, s0, 0).iteration) == 0
    with pytest.raises(TypeError, match="eval_every"):
        cfrjax.solve(kuhn, s0, 6, eval_every=3)
    traced = [cfrjax.solve_with_trace(kuhn, s0, 6), cfrjax.solve_with_trace(kuhn, s0, 6, eval_every=3),
              cfrjax.solve_with_trace(kuhn, s0, target_exploitability=0.0, max_iterations=6, eval_every=3)]
    for out, its in zip(traced, ([6], [3, 6], [3, 6])):
        state, trace = out
        assert type(out) is tuple and type(state) is cfrjax.SolverState and type(trace) is cfrjax.Trace
        assert trace.iteration.tolist() == its and trace.exploitability.shape == (len(its),)
        jax.tree.map(np.testing.assert_array_equal, state, plain[0])
    with pytest.raises(ValueError, match="iterations must be a positive int, got 0"):
        cfrjax.solve_with_trace(kuhn, s0, 0)
