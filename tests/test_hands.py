"""The public form's hand list (`PokerSubgameSpec.hands`, `load_game(..., hands=...)`,
`--hands`): by default the ranges' hands, `"all"` every combo the board does not block.

The narrowed form is compared with the full-list public form (entries mapped by combo)
and with the tabular form (by information-set key, `test_public_solver`'s mapping), in
float64; ranges name hands the board blocks (dropped from both lists) and hands in one
range only (in the list, weight 0 for the other player).
"""

import numpy as np
import pytest

import cfrjax
from cfrjax import cli
from cfrjax.games.poker import PokerSubgameSpec, build_spec, combo_index, load_poker_config
from cfrjax.games.poker.cards import PokerSpecError, combos_blocked_by, parse_board
from cfrjax.games.poker.public_tree import check_public_fits, public_plan
from cfrjax.memory import MemoryPlanError
from cfrjax.spec import SpecError
from selection import cases
from test_public_solver import assert_states_agree

RIVER = "Ks Js Th 7d 2c"
# Blocked by the board: the KK, AK, QJs, JTs, A7s and 22 combos holding Ks, Js, Th, 7d or 2c.
RIVER_SPOT = PokerSubgameSpec(board=RIVER, pot=20, stack=110, bet_fractions=(0.5, 1.0), raise_fractions=(1.0,),
                              raise_cap=1, range0="AA,KK:0.5,AKs,QJs:0.8", range1="QQ:0.7,JTs,A7s:0.4,22,AKs:0.3")
# A turn spot without exact value ties among actions over these iterations: where two
# actions tie, each form's rounding (a sum over 8 or over 1,128 hands, most of weight 0)
# leaves a regret of +-1e-16 instead of 0 and the trajectories part (as in
# test_public_solver's TINY); the tabular form then agrees with neither.
TURN_SPOT = PokerSubgameSpec(board="Ks Js Th 7d", pot=20, stack=60, bet_fractions=(0.75,), raise_cap=0,
                             range0={"AhAd": 0.6, "KhQh": 0.9, "9c8c": 0.7, "QcQd": 0.3, "KsQs": 1.0},
                             range1={"QsQh": 1.0, "Tc9c": 0.5, "AsKd": 0.8, "7c7h": 0.4, "7d7c": 1.0})


def _in_range(cfg):
    w0, w1 = cfg.ranges()
    return np.flatnonzero((w0 > 0) | (w1 > 0))


def _columns(full, narrow):
    """Each narrowed hand's column in the full list."""
    return np.searchsorted(np.asarray(full.labels.hands), np.asarray(narrow.labels.hands))


# The turn (boards dealt below the trunk, dead hands) is slow: the same claim, one more compile of each form.
@pytest.mark.parametrize("spot, rule, order", cases(
    [(RIVER_SPOT, "cfr", "simultaneous"), (RIVER_SPOT, "dcfr", "alternating"), (TURN_SPOT, "cfr", "simultaneous")],
    [(RIVER_SPOT, "cfr", "simultaneous"), (RIVER_SPOT, "dcfr", "alternating")], key=lambda c: c, unpack=True))
def test_narrowed_equals_full_list_and_tabular(spot, rule, order):
    narrow, full = cfrjax.load_game(spot), cfrjax.load_game(spot, hands="all")
    blocked = combos_blocked_by(parse_board(spot.board))
    np.testing.assert_array_equal(np.asarray(narrow.labels.hands), _in_range(spot))
    assert not blocked[np.asarray(narrow.labels.hands)].any()
    assert narrow.num_hands < full.num_hands == int((~blocked).sum())
    assert narrow.labels.source["poker"]["hand_list"] == "range" and full.labels.source["poker"]["hand_list"] == "all"
    cols = _columns(full, narrow)
    # Entries of the acting player's in-range hands (a hand of the other range only has
    # weight 0 there: its regrets steer nothing, and a tie among them parts freely).
    acting = (np.arange(narrow.num_slots) >= narrow.slot_split).astype(int)
    live = np.asarray(narrow.weights)[acting] > 0                                      # [S, H]
    kw = dict(rule=rule, order=order, dtype="float64")
    ns = cfrjax.solve(narrow, cfrjax.init(narrow, **kw), 6)
    fs = cfrjax.solve(full, cfrjax.init(full, **kw), 6)
    scale = float(np.max(np.abs(fs.regret)))
    np.testing.assert_allclose(np.asarray(ns.regret)[live], np.asarray(fs.regret)[:, cols][live], rtol=1e-9,
                               atol=1e-12 * scale)
    npol, fpol = cfrjax.average_policy(narrow, ns), cfrjax.average_policy(full, fs)
    np.testing.assert_allclose(np.asarray(npol)[live], np.asarray(fpol)[:, cols][live], rtol=1e-9, atol=1e-12)
    # exploitability and value, one executable per game (an evaluation compiles for seconds)
    expl, value = cfrjax.evaluate(narrow, ns)
    np.testing.assert_allclose([expl, value], cfrjax.evaluate(full, fs), rtol=1e-9, atol=1e-12)
    tab = cfrjax.compile.compile_game(build_spec(spot))
    ts = cfrjax.solve(tab, cfrjax.init(tab, **kw), 6)
    assert_states_agree(tab, narrow, ts, ns)      # regrets and averages by information-set key
    if spot is RIVER_SPOT:
        np.testing.assert_allclose([expl, value], cfrjax.evaluate(tab, ts), rtol=1e-9, atol=1e-12)


def test_memory_plan_and_refusal_use_the_narrowed_list():
    """`public_plan` (and the refusal before building, `check_public_fits` through
    `load_game`) sizes the spot by its hand list: a budget between the two plans builds
    the narrowed spot and refuses the full list."""
    small, large = public_plan(RIVER_SPOT), public_plan(RIVER_SPOT, hands="all")
    assert small.sizes["hands"] == _in_range(RIVER_SPOT).size and large.sizes["hands"] == 1081
    assert small.total_bytes < large.total_bytes
    budget = (small.total_bytes + large.total_bytes) // 2
    assert check_public_fits(RIVER_SPOT, budget_bytes=budget)["plan"].total_bytes == small.total_bytes
    assert cfrjax.load_game(RIVER_SPOT, budget_bytes=budget).num_hands == small.sizes["hands"]
    with pytest.raises(MemoryPlanError, match="1,081 hands"):
        cfrjax.load_game(RIVER_SPOT, hands="all", budget_bytes=budget)


def refused_on_the_host(monkeypatch, game, w0, w1) -> str:
    """The one-line message of `set_root_ranges(game, w0, w1)`'s refusal, checked to come
    from the host before any pass runs (`set_ranges` patched to fail)."""
    def reached(*args):
        raise AssertionError("the ranges reached the passes")

    with monkeypatch.context() as m:
        m.setattr(cfrjax.public.passes, "set_ranges", reached)
        with pytest.raises(ValueError) as err:
            cfrjax.poker.set_root_ranges(game, w0, w1)
    msg = str(err.value)
    assert "\n" not in msg, msg
    return msg


def test_set_root_ranges_within_the_list_and_outside(monkeypatch):
    """Ranges within the built list need no rebuild (the full-list game with the same
    ranges has the same values); a positive weight outside it is one line naming the
    combos and the remedy, raised on the host before the ranges reach JAX."""
    narrow, full = cfrjax.load_game(RIVER_SPOT), cfrjax.load_game(RIVER_SPOT, hands="all")
    w0, w1 = cfrjax.poker.root_ranges(narrow)
    w0 = w0 * np.linspace(0.2, 1.0, w0.size)
    w1[combo_index("As", "Ks")] = 0.0         # a sub-range: within the list
    moved, fmoved = cfrjax.poker.set_root_ranges(narrow, w0, w1), cfrjax.poker.set_root_ranges(full, w0, w1)
    assert moved.weights.shape == narrow.weights.shape and moved.labels == narrow.labels
    kw = dict(rule="cfr", order="simultaneous", dtype="float64")   # the executables of the river-cfr case
    np.testing.assert_allclose(cfrjax.evaluate(moved, cfrjax.init(narrow, **kw)),
                               cfrjax.evaluate(fmoved, cfrjax.init(full, **kw)), rtol=1e-12)
    outside = w0.copy()
    outside[combo_index("8h", "8d")] = 0.5    # live on the board, in neither range
    outside[combo_index("Ks", "Kd")] = 0.5    # blocked by the board: dropped as always

    msg = refused_on_the_host(monkeypatch, narrow, outside, w1)
    assert "range0" in msg and "1 hand(s)" in msg and "8h8d" in msg and 'hands = "all"' in msg
    cfrjax.poker.set_root_ranges(full, outside, w1)    # the full list takes it


def test_spec_key_argument_and_errors(tmp_path):
    path = tmp_path / "spot.toml"
    path.write_text(f'board = "{RIVER}"\npot = 20\nstack = 110\n[ranges]\nrange0 = "AA,KK"\nrange1 = "QQ"\n'
                    'hands = "all"\n')
    assert cfrjax.load_game(str(path)).num_hands == 1081
    assert cfrjax.load_game(str(path), hands="range").num_hands == 6 + 3 + 6
    with pytest.raises(PokerSpecError, match=r"hands 'most' is not a hand list; allowed: 'range', 'all', 'player'"):
        PokerSubgameSpec(board=RIVER, hands="most")
    with pytest.raises(PokerSpecError, match=r"spot.toml: hands 'most' .* allowed: 'range', 'all', 'player'"):
        cfrjax.load_game(str(path), hands="most")
    with pytest.raises(SpecError, match="kuhn_poker' is not a poker subgame spec"):
        cfrjax.load_game("kuhn_poker", hands="all")


def test_cli_flag_and_hand_count(tmp_path, capsys):
    """`cfrjax solve` prints the hand list's size with its memory plan; `--hands` is
    checked in one line (exit code 2)."""
    path = tmp_path / "narrow.toml"
    path.write_text(f'board = "{RIVER}"\npot = 20\nstack = 110\nbet_fractions = [1.0]\n[ranges]\n'
                    'range0 = "AA,KK"\nrange1 = "QQ,AKs"\n')
    H = _in_range(load_poker_config(path)).size
    for flag, want in (([], f"{H} hands: the ranges' hands"), (["--hands", "all"], "1,081 hands: every live combo")):
        assert cli.main(["solve", str(path), "--iterations", "2"] + flag) == 0
        err = capsys.readouterr().err
        assert want in next(line for line in err.splitlines() if line.startswith("cfrjax: memory plan")), err
    with pytest.raises(SystemExit) as e:
        cli.main(["solve", str(path), "--hands", "some"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1 and "invalid choice: 'some' (choose from 'range', 'all', 'player')" in err
    assert cli.main(["solve", "kuhn_poker", "--hands", "all"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cfrjax: error:") and err.count("\n") == 1 and "is not a poker subgame spec" in err, err


# ----------------------------------------------------------------------------------------
# Per-player lists (prototype, docs/design/hands.md): terminal values across two lists


def test_terminal_values_across_two_hand_lists():
    """Fold and sorted-showdown values of player p's list against q's reach on another
    list equal the dense `[H_p, H_q]` computation (compat, sign of strength difference)
    in float64, card removal exact: lists sharing some combos, hands the board's extra
    card kills, ties; and on one shared list the cross index is `showdown_tables`' own."""
    import jax
    import jax.numpy as jnp

    from cfrjax.games.poker.cards import COMBOS
    from cfrjax.games.poker.public_tree import _strengths
    from cfrjax.public import terminals as pt
    from cfrjax.public import two_lists

    cfg = PokerSubgameSpec(board="Ks Js Th 7d")
    live = np.flatnonzero(~combos_blocked_by(parse_board(cfg.board)))
    rng = np.random.default_rng(5)
    hands_p = np.sort(rng.choice(live, 70, replace=False))
    hands_q = np.sort(np.concatenate([rng.choice(np.setdiff1d(live, hands_p), 50, replace=False), hands_p[::3]]))
    extra = np.array([[3], [20], [51]])                                       # three river cards
    (sp, lp), (sq, lq) = (_strengths(cfg, h, extra) for h in (hands_p, hands_q))
    hc_p, hc_q = COMBOS[hands_p], COMBOS[hands_q]
    same = two_lists.same_index(hands_p, hands_q)
    assert np.array_equal(hands_q[same[same < hands_q.size]], np.intersect1d(hands_p, hands_q))
    tables = two_lists.cross_tables(sp, sq, hc_p, hc_q, same)
    compat = ~(hc_p[:, None, :, None] == hc_q[None, :, None, :]).any((2, 3))  # [H_p, H_q]
    x = rng.uniform(size=(hands_q.size, 3))
    np.testing.assert_allclose(two_lists.fold_compat(x, tables), compat @ x, rtol=1e-12)
    # One executable for the three boards (op by op, the showdown compiles ~130 small ones).
    diff = jax.jit(lambda x, one: two_lists.showdown_diff(x, one, 0))
    for b in range(extra.shape[0]):
        xb = x * lq[b][:, None]                                               # dead hands of q hold no reach
        sign = np.sign(sp[b][:, None] - sq[b][None, :]) * compat
        got = np.asarray(diff(jnp.asarray(xb), {k: tables[k][b:b + 1] for k in ("sd_sorted", "sd_card_sorted",
                                                                                  "sd_index")}))
        np.testing.assert_allclose(got[lp[b]], (sign @ xb)[lp[b]], rtol=1e-12, atol=1e-12)
    one = two_lists.cross_tables(sp, sp, hc_p, hc_p, two_lists.same_index(hands_p, hands_p))
    own = pt.showdown_tables(sp, hc_p.astype(np.int32), pt.card_table(hc_p.astype(np.int32)))
    for k in ("sd_sorted", "sd_card_sorted", "sd_index"):
        np.testing.assert_array_equal(one[k], own[k], err_msg=k)
