"""One hand list per player (`hands="player"`, docs/design/hands.md) against the one-list
public form (`hands="range"`: the union of the two ranges' hands), in float64.

Entries are mapped by information-set key `P{p}|{hand}|{code}`: each key of the
per-player game (player p's hands, those of positive weight in its range) has its
(slots, hand) in both games; values per hand by hand name. The union form itself is
compared with the tabular form and the full list in `test_public_solver` / `test_hands`.
Spots: `test_public_solver`'s TINY river (every rule, both orders), `test_hands`' river
(ranges naming hands the board blocks, hands in one range only) and turn, and a reduced
flop (49 x 48 boards below a tiny tree).
"""

import dataclasses

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import cli, memory, strategy
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public, public_plan
from cfrjax.plan import TWO_LISTS, Plan, plan_of, resolve_plan, use
from cfrjax.policy import uniform_policy
from cfrjax.public import passes as public_passes
from cfrjax.rules import ORDERS, RULES
from key_index import key_index
from selection import cases
from test_hands import RIVER_SPOT, TURN_SPOT, refused_on_the_host
from test_public_solver import AVERAGING, TINY

FLOP_SPOT = PokerSubgameSpec(board="Ks Js 2d", pot=20, stack=30, bet_fractions=(1.0,), raise_cap=0,
                             range0={"AhAd": 0.6, "KhQh": 0.9, "9c8c": 0.7, "Js2s": 0.5},
                             range1={"QsQh": 1.0, "Tc9c": 0.5, "AsKd": 0.8, "7c7h": 0.4})

_GAMES = {}


def _games(spot):
    """`(per-player game, union game)` of `spot`, built once per module run."""
    if spot not in _GAMES:
        _GAMES[spot] = build_public(spot, hands="player"), build_public(spot, hands="range")
    return _GAMES[spot]


def _hand_columns(per, uni):
    """Per player: its hands' columns in `per` and in `uni`."""
    names = list(uni.labels.hand_names)
    own = [per.labels.hand_names_of(p) for p in (0, 1)]
    return [(np.arange(len(o)), np.array([names.index(n) for n in o])) for o in own]


@jax.jit
def _evaluated(game, policy):
    """`(best responses [2], expected values [2], root values per hand [2, H])` of `policy`:
    one executable per game (an evaluation compiles for seconds)."""
    br, ev = public_passes.evaluation(game, policy)
    return br, ev, public_passes.hand_values(game, policy)


def assert_forms_agree(per, uni, ps, us, evaluate=True):
    """Regrets, averages and average policies by key; with `evaluate` both best responses
    (so the exploitability, their mean), the expected values and the root values per hand
    of the average policy."""
    ip, iu = key_index(per, uni)
    scale = max(1.0, float(np.max(np.abs(us.regret))))
    np.testing.assert_allclose(np.asarray(ps.regret)[ip], np.asarray(us.regret)[iu], rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(np.asarray(ps.avg)[ip], np.asarray(us.avg)[iu], rtol=1e-9, atol=1e-12)
    ppol, upol = cfrjax.average_policy(per, ps), cfrjax.average_policy(uni, us)
    np.testing.assert_allclose(np.asarray(ppol)[ip], np.asarray(upol)[iu], rtol=1e-9, atol=1e-12)
    if evaluate:
        assert_evaluations_agree(per, uni, ppol, upol)


def assert_evaluations_agree(per, uni, ppol, upol):
    (pbr, pev, pv), (ubr, uev, uv) = _evaluated(per, ppol), _evaluated(uni, upol)
    np.testing.assert_allclose(pbr, ubr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(pev, uev, rtol=1e-9, atol=1e-12)
    assert abs(float(ubr.sum())) > 1e-6                # a profile that is not yet an equilibrium
    for p, (cp, cu) in enumerate(_hand_columns(per, uni)):
        np.testing.assert_allclose(np.asarray(pv)[p, cp], np.asarray(uv)[p, cu], rtol=1e-9, atol=1e-12)
        assert not np.asarray(pv)[p, len(cp):].any()   # the padding columns hold nothing


def _solve_both(spot, rule, order, iterations):
    per, uni = _games(spot)
    kw = dict(rule=rule, order=order, averaging=AVERAGING.get(rule, "linear"), dtype="float64")
    return per, uni, cfrjax.solve(per, cfrjax.init(per, **kw), iterations), cfrjax.solve(uni, cfrjax.init(uni, **kw),
                                                                                         iterations)


def test_lists_are_each_players_range():
    """Player p's list is its own range's hands the board does not block, ascending; the
    slot arrays are `[S, max(H_0, H_1)]`, the union list's game `[S, |H_0 u H_1|]`."""
    per, uni = _games(RIVER_SPOT)
    w = np.stack(RIVER_SPOT.ranges())
    for p in (0, 1):
        np.testing.assert_array_equal(per.labels.player_hands[p], np.flatnonzero(w[p] > 0))
    h0, h1 = per.player_lists
    assert (h0, h1) == (per.labels.player_hands[0].size, per.labels.player_hands[1].size)
    assert per.slot_shape == (uni.num_slots, max(h0, h1)) and uni.num_hands == len(set(
        np.concatenate(per.labels.player_hands).tolist())) > max(h0, h1)
    assert per.labels.source["poker"]["hand_list"] == "player" and per.labels != uni.labels
    only0 = next(n for n in per.labels.hand_names_of(0) if n not in per.labels.hand_names_of(1))
    p1_node = per.labels.node_player.index(1)
    key = f"P1|{only0}|{per.labels.node_codes[p1_node]}"          # a hand of player 0's range only
    with pytest.raises(KeyError):
        per.infoset_index(key)
    uni.infoset_index(key)                           # the union list holds it for both players


@pytest.mark.parametrize("rule,order", cases([(r, o) for r in RULES for o in ORDERS], [("pdcfr+", "alternating")],
                                              unpack=True))
def test_every_rule_and_order_equals_union_list(rule, order):
    """The tiny river spot, every rule and order (the slow cases: `-m slow`)."""
    per, uni, ps, us = _solve_both(TINY, rule, order, 5)
    assert ps.regret.shape == per.slot_shape
    assert_forms_agree(per, uni, ps, us)


# The turn's alternating order is compared over 3 iterations: at 5 an exact tie between two
# actions parts the union and full lists' trajectories too (rounding of +-1e-16, test_hands).
@pytest.mark.parametrize("spot,rule,order,iterations", cases(
    [(RIVER_SPOT, "dcfr", "alternating", 6), (RIVER_SPOT, "pcfr+", "simultaneous", 6),
     (TURN_SPOT, "cfr", "simultaneous", 5), (TURN_SPOT, "dcfr-postflop", "alternating", 3)],
    [(TURN_SPOT, "cfr", "simultaneous", 5)], unpack=True,
    key=lambda c: c))
def test_river_and_turn_equal_union_list(spot, rule, order, iterations):
    """Narrow weighted ranges, hands blocked by the board (dropped from both lists), hands
    in one range only (in the union list, not in the other player's)."""
    per, uni, ps, us = _solve_both(spot, rule, order, iterations)
    assert_forms_agree(per, uni, ps, us)


@pytest.mark.slow   # another instance of the claims above (tests/selection.py)
def test_raked_river_equals_union_list():
    """A raked spot (per-player fold payoffs, the showdown's rake times the compatible
    reach): each player's own values, so not zero-sum: the regrets, and `cfrjax.evaluate`'s
    exploitability (best responses less the profile's values) and value."""
    spot = dataclasses.replace(RIVER_SPOT, rake_rate=0.05, rake_cap=3.0)
    per, uni, ps, us = _solve_both(spot, "dcfr", "alternating", 6)
    assert per.raked
    assert_forms_agree(per, uni, ps, us, evaluate=False)
    np.testing.assert_allclose(cfrjax.evaluate(per, ps), cfrjax.evaluate(uni, us), rtol=1e-9, atol=1e-12)


@pytest.mark.slow   # another instance of the claims above (tests/selection.py)
def test_batch_of_ranges_equals_one_by_one():
    """Ranges re-targeted within the lists under `vmap` (`batch_axes`) solve as a batch,
    each subgame as the game re-targeted alone (`solve_batch`)."""
    per, _ = _games(RIVER_SPOT)
    w0, w1 = cfrjax.poker.root_ranges(per)
    r0 = np.stack([w0, w0 * np.linspace(0.3, 1.0, w0.size)])
    r1 = np.stack([w1 * np.linspace(1.0, 0.5, w1.size), w1])
    games = jax.vmap(cfrjax.poker.set_root_ranges, (None, 0, 0), cfrjax.batch_axes(per))(per, r0, r1)
    kw = dict(rule="dcfr", order="alternating", dtype="float64")
    states = jax.vmap(lambda _: cfrjax.init(per, **kw))(np.arange(2))
    out = cfrjax.solve_batch(games, states, 4)
    for b in range(2):
        one = cfrjax.poker.set_root_ranges(per, r0[b], r1[b])
        alone = cfrjax.solve(one, cfrjax.init(per, **kw), 4)
        np.testing.assert_allclose(np.asarray(out.regret[b]), np.asarray(alone.regret), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("order", cases(list(ORDERS), ["simultaneous"]))
def test_reduced_flop_equals_union_list(order):
    """A flop: turn cards dealt in the trunk (per-player dead hands there), 49 x 48 boards
    (the evaluations, seconds of compiling, in the slow case)."""
    per, uni, ps, us = _solve_both(FLOP_SPOT, "cfr", order, 2)
    assert per.board_groups and per.num_boards == 49 * 48
    assert_forms_agree(per, uni, ps, us, evaluate=order == "alternating")


@pytest.mark.slow   # another instance of the claims above (tests/selection.py)
def test_accelerator_lowering_equals_union_list(monkeypatch):
    """The passes as traced for an accelerator (JAX's default backend faked as a GPU:
    boards `vmap`ped, pulled sums, `cumsum`; the union game then built with its dense
    terminal matrices), run on the CPU: a turn spot against the union list. The games
    carry the GPU plan (a static field), so nothing traced for the CPU is reused."""
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not cfrjax.passes.traced_for_cpu()
    per = use(build_public(TURN_SPOT, hands="player"), "auto", platform="gpu")
    uni = use(build_public(TURN_SPOT, hands="range"), "auto", platform="gpu")
    assert uni.dense_showdown is not None and per.dense_showdown is None
    assert TWO_LISTS in per.plan.fallbacks and per.plan.platform == "gpu"
    kw = dict(rule="cfr", order="simultaneous", dtype="float64")
    ps, us = cfrjax.solve(per, cfrjax.init(per, **kw), 3), cfrjax.solve(uni, cfrjax.init(uni, **kw), 3)
    assert_forms_agree(per, uni, ps, us)


def test_plan_runs_the_xla_passes():
    """The plan of a per-player game is the XLA passes, saying so (`fallbacks`); a plan
    asking for the one-list kernels is refused in one line."""
    per, uni = _games(TINY)
    for platform in ("cpu", "gpu"):
        plan = resolve_plan(per, platform)
        assert not (plan.native or plan.cuda_showdown or plan.native_forest or plan.native_half or plan.cpu_spot_half)
        assert set(plan.pallas) <= {"matching"} and TWO_LISTS in plan.fallbacks
        assert "one hand list per player" in plan.summary()
    assert plan_of(per) == resolve_plan(per)
    assert TWO_LISTS not in resolve_plan(uni, "cpu").fallbacks
    for bad in (Plan(native=True), Plan(cuda_showdown=True), Plan(interpret=("showdown",))):
        with pytest.raises(ValueError) as err:
            use(per, bad)
        assert "\n" not in str(err.value) and "hands='player'" in str(err.value)
    assert use(per, "xla").plan.name == "xla"
    with pytest.raises(ValueError, match="dense"):
        build_public(TINY, hands="player", terminals="dense")


def test_strategy_table_policy_files_and_locks(tmp_path):
    """Strategy rows are the union's rows of each player's own hands; a policy saved from
    the union game loads into the per-player one by key (and a per-player `.npz` back into
    it); a lock by key fixes the per-player entry."""
    per, uni, ps, us = _solve_both(TINY, "cfr", "simultaneous", 5)
    ppol, upol = cfrjax.average_policy(per, ps), cfrjax.average_policy(uni, us)
    rows = strategy.strategy_table(per, ppol)
    urows = {(r["infoset"], r["action"]): r["probability"] for r in strategy.strategy_table(uni, upol)}
    assert len(rows) == sum(len(per.labels.action_names[i]) * int(per.labels.live_hands(i).sum())
                            for i in range(per.num_infosets))
    for r in rows:
        assert r["probability"] == pytest.approx(urows[(r["infoset"], r["action"])], rel=1e-9, abs=1e-12)
    cfrjax.save_policy(tmp_path / "union.npz", uni, upol)
    ip, iu = key_index(per, uni)
    loaded = np.asarray(cfrjax.load_policy(tmp_path / "union.npz", per))
    np.testing.assert_array_equal(loaded[ip], np.asarray(upol)[iu])
    cfrjax.save_policy(tmp_path / "per.npz", per, ppol)
    np.testing.assert_array_equal(np.asarray(cfrjax.load_policy(tmp_path / "per.npz", per)), np.asarray(ppol))
    back = strategy.read_policy_file(tmp_path / "per.npz")["infosets"]
    assert set(back) == {r["infoset"] for r in rows}
    key, _, h = next(iter(per.labels.infoset_keys()))
    names = per.labels.action_names[0]
    locked = cfrjax.lock(per, cfrjax.init(per, dtype="float64"), {key: [1.0] + [0.0] * (len(names) - 1)})
    sl, h = per.infoset_index(key)
    assert bool(np.asarray(locked.locked)[sl, h].all()) and int(np.asarray(locked.locked).sum()) == len(names)


def test_set_root_ranges_within_each_list_and_outside(monkeypatch):
    """Weights within each player's list re-target without a rebuild (the union game with
    the same ranges has the same values); weight on a hand of the other player's list
    only is one line naming it and the remedy, on the host."""
    per, uni = _games(RIVER_SPOT)
    w0, w1 = cfrjax.poker.root_ranges(per)
    np.testing.assert_array_equal(np.stack([w0, w1]), np.stack(cfrjax.poker.root_ranges(uni)))
    w0 = w0 * np.linspace(0.2, 1.0, w0.size)
    moved, umoved = cfrjax.poker.set_root_ranges(per, w0, w1), cfrjax.poker.set_root_ranges(uni, w0, w1)
    assert moved.weights.shape == per.weights.shape and moved.labels == per.labels
    np.testing.assert_array_equal(cfrjax.poker.root_ranges(moved)[0], w0)
    # (the evaluations' executables of the river spot's case: same shapes and labels)
    assert_evaluations_agree(moved, umoved, uniform_policy(per, "float64"), uniform_policy(uni, "float64"))
    traced = jax.jit(lambda a, b: cfrjax.poker.set_root_ranges(per, a, b).norm)(w0, w1)
    np.testing.assert_allclose(traced, moved.norm, rtol=1e-12)
    only1 = next(h for h in per.labels.player_hands[1] if h not in set(per.labels.player_hands[0].tolist()))
    outside = w0.copy()
    outside[only1] = 0.5                      # in player 1's list (and the union's), not in player 0's

    msg = refused_on_the_host(monkeypatch, per, outside, w1)
    assert "range0" in msg and "player 0's hand list" in msg and "1 hand(s)" in msg
    assert cfrjax.games.poker.combo_str(only1) in msg and 'hands = "range"' in msg
    cfrjax.poker.set_root_ranges(uni, outside, w1)      # the union list takes it


@pytest.mark.parametrize("rule,order,donate", cases([("dcfr", "simultaneous", True), ("pcfr+", "alternating", False)],
                                                    [("dcfr", "simultaneous", True)], unpack=True))
def test_memory_plan_of_two_lists(rule, order, donate):
    """`public_plan(hands="player")` is the built game's plan (from the spec alone),
    smaller than the union list's, and on CPU within 20% of XLA's buffer assignment of a
    turn spot's solve (as `test_memory.test_public_plan_close_to_xla_on_cpu`)."""
    if jax.default_backend() != "cpu":
        pytest.skip("the CPU plan of the public form")
    from cfrjax.driver import lower_solve
    spec = dataclasses.replace(TURN_SPOT, range1={"QsQh": 1.0, "Tc9c": 0.5, "AsKd": 0.8, "7c7h": 0.4, "7d7c": 1.0,
                                                  "8c8h": 0.3, "6c6h": 0.2})
    game = build_public(spec, hands="player", dtype="float32")
    kw = dict(dtype="float32", order=order, rule=rule)
    before = public_plan(spec, hands="player", **{k: kw[k] for k in ("dtype", "order")})
    assert before.total_bytes == memory.memory_plan(game, dtype="float32", order=order).total_bytes
    union_hands = public_plan(spec, hands="range").sizes["hands"]
    assert before.sizes["hands"] == game.num_hands == max(game.player_lists) < union_hands
    union = public_plan(spec, hands="range", dtype="float32", order=order)
    assert before.group_bytes()["state"] < union.group_bytes()["state"]
    state = cfrjax.init(game, **kw)
    plan = memory.memory_plan(game, state, donate=donate)
    xla = memory.executable_memory(lower_solve(game, state, 5, donate=donate).compile())
    assert 0.8 <= plan.total_bytes / xla["total_bytes"] <= 1.2, (plan.total_bytes, xla)


def test_cli_hands_player(tmp_path, capsys):
    path = tmp_path / "spot.toml"
    path.write_text('board = "Ks Js Th 7d 2c"\npot = 20\nstack = 110\nbet_fractions = [1.0]\n[ranges]\n'
                    'range0 = "AA,KK"\nrange1 = "QQ,AKs"\n')
    assert cli.main(["solve", str(path), "--iterations", "2", "--hands", "player"]) == 0
    err = capsys.readouterr().err
    line = next(x for x in err.splitlines() if x.startswith("cfrjax: memory plan"))
    assert "9 / 9 hands: each player's range (9 columns)" in line, line
