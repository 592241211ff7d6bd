"""Solving native poker subgames: the compiled solver against the per-node reference on
reduced river/turn instances, analytic anchors, and strategy export."""

from __future__ import annotations

import functools
import json

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax.driver import run_steps
from cfrjax.games.poker import (
    PokerSubgameSpec, build_spec, parse_range, read_strategy_csv, read_strategy_json, strategy_table,
    write_strategy_csv, write_strategy_json)
from reference import ReferenceCFR

RIVER = "Ks Js Th 7d 2c"
TURN = "Ks Js Th 7d"


def _dict_policy(game, vec):
    """`[S]` vector -> {infoset key: its entries}."""
    vec = np.asarray(vec)
    return {key: vec[sl] for key, sl in game.infoset_slots().items()}


def _pure(game, choose):
    """`[S]` pure policy: `choose(action_names) -> index` at every information set."""
    out = []
    for names in game.labels.action_names:
        row = np.zeros(len(names))
        row[choose(names)] = 1.0
        out.append(row)
    return np.concatenate(out)


def _passive(names):
    return names.index("check") if "check" in names else names.index("call")


@pytest.mark.parametrize("street,k,seed", [("river", 6, 2), ("turn", 2, 0)])
@pytest.mark.parametrize("rule,order,averaging", [
    pytest.param("cfr+", "alternating", "linear", marks=pytest.mark.fixed_order),
    ("cfr", "simultaneous", "uniform")])
def test_reference_agrees(street, k, seed, rule, order, averaging):
    spec = build_spec(PokerSubgameSpec(board=RIVER if street == "river" else TURN, random_hands=k, seed=seed))
    game = cfrjax.compile.compile_game(spec, chance="explicit")
    iters = 5
    ref = ReferenceCFR(spec, rule=rule, averaging=averaging, order=order).run(iters)
    state = cfrjax.solve(game, cfrjax.init(game, rule, order, averaging, dtype="float64"), iters)
    for name, ours, theirs in (("average", cfrjax.average_policy(game, state), ref.average_policy()),
                               ("current", cfrjax.current_policy(game, state), ref.current_policy())):
        ours = _dict_policy(game, ours)
        assert ours.keys() == theirs.keys()
        for key in ours:
            np.testing.assert_allclose(ours[key], theirs[key], atol=1e-9, rtol=0, err_msg=f"{name} {key}")
    theirs = ref.regrets()
    for key, r in _dict_policy(game, state.regret).items():
        np.testing.assert_allclose(r, theirs[key], atol=1e-9, rtol=1e-12, err_msg=f"regret {key}")


@functools.partial(jax.jit, static_argnums=2)
def _solve_and_evaluate(game, state, iterations, pure_policies):
    """`iterations` (`run_steps`, the scan `cfrjax.solve` compiles), the average policy, its
    value and best-response values, and the best-response values against each of
    `pure_policies`: one executable (compiling dominates on a CPU)."""
    state = run_steps(game, state, iterations)
    policy = cfrjax.average_policy(game, state)
    return (state, policy, cfrjax.expected_value(game, policy), cfrjax.best_response_values(game, policy),
            [cfrjax.best_response_values(game, p) for p in pure_policies])


def _solve_anchor(spec, iterations=1000):
    """`(game, state, policy, value, br0, br1, pure)`; `pure`: best-response values against
    the pure strategies check/call everywhere and first action everywhere."""
    game = cfrjax.compile.compile_game(spec)
    state, policy, value, brs, pure = _solve_and_evaluate(
        game, cfrjax.init(game, "cfr+", "alternating", "linear"), iterations,
        [_pure(game, _passive), _pure(game, lambda names: 0)])
    br0, br1 = (float(x) for x in brs)
    return game, state, policy, float(value), br0, br1, pure


def _check_anchor(value, br0, br1, pure, expl_tol):
    expl = 0.5 * (br0 + br1)
    # -br1 <= game value (10) <= br0 and -br1 <= value <= br0.
    assert -br1 <= 10.0 + 1e-9 <= br0 + 2e-9
    assert abs(value - 10.0) <= 2 * expl + 1e-9
    assert expl < expl_tol
    # Exact best responses to pure strategies pin the game value at 10.
    v_call = -float(pure[0][1])  # against check/call
    v_fold = float(pure[1][0])   # against check/fold
    assert v_call == pytest.approx(10.0, abs=1e-9) and v_fold == pytest.approx(10.0, abs=1e-9)
    return expl


def test_river_nuts_anchor_solved():
    # Board Ks Js Th 7d 2c: P0 holds only AQ (broadway, the nuts); P1 never ties.
    spec = build_spec(PokerSubgameSpec(board=RIVER, range0="AQ", range1="KK,AK,T9"))
    _, _, _, value, br0, br1, pure = _solve_anchor(spec)
    expl = _check_anchor(value, br0, br1, pure, 1e-3)
    print(f"nuts anchor: value {value:.9f}, exploitability {expl:.3g}")


@pytest.mark.slow  # the turn's chance layer is checked in the default suite against brute force (test_public_form)
def test_turn_quads_anchor_solved():
    # Board 7s 7d 7h Ks, P0 holds 7c 2d: quads win on every river.
    spec = build_spec(PokerSubgameSpec(board="7s 7d 7h Ks", range0="7c2d", range1="AA,QQ"))
    _, _, _, value, br0, br1, pure = _solve_anchor(spec)
    expl = _check_anchor(value, br0, br1, pure, 1e-3)
    print(f"quads anchor: value {value:.9f}, exploitability {expl:.3g}")


def test_strategy_table_and_writers(tmp_path):
    spec = build_spec(PokerSubgameSpec(board=RIVER, random_hands=4, seed=0))
    game = cfrjax.compile.compile_game(spec)
    state = cfrjax.solve(game, cfrjax.init(game), 50)
    policy = np.asarray(cfrjax.average_policy(game, state))
    rows = strategy_table(game, policy)
    assert len(rows) == game.num_slots
    assert rows[0] == {"infoset": game.labels.infoset_keys[0], "player": 0, "hand": rows[0]["hand"], "history": "",
                       "action": "check", "probability": float(policy[0])}
    assert rows[0]["infoset"] == f"P0|{rows[0]['hand']}|" and strategy_table is cfrjax.strategy.strategy_table  # one table
    sums = {}
    for r in rows:
        assert r["player"] in (0, 1) and len(r["hand"]) == 4
        sums[r["player"], r["hand"], r["history"]] = sums.get((r["player"], r["hand"], r["history"]), 0) + r["probability"]
    assert len(sums) == game.num_infosets
    np.testing.assert_allclose(list(sums.values()), 1.0, atol=1e-12)
    assert {r["history"] for r in rows if r["player"] == 1} == {"k", "b10", "b20"}
    assert {r["history"] for r in rows if r["player"] == 0} == {"", "k.b10", "k.b20"}
    write_strategy_json(rows, tmp_path / "s.json", meta={"game": game.name})
    write_strategy_csv(rows, tmp_path / "s.csv")
    assert read_strategy_json(tmp_path / "s.json") == rows
    assert read_strategy_csv(tmp_path / "s.csv") == rows
    assert len(strategy_table(game, policy, min_probability=0.5)) < len(rows)
    with pytest.raises(ValueError, match="expected"):
        strategy_table(game, policy[:-1])
    kuhn = cfrjax.load_game("kuhn_poker")     # no hand, no history: not a poker spot's table
    with pytest.raises(ValueError, match="has no hand/history: not a row of a poker spot"):
        write_strategy_csv(strategy_table(kuhn, cfrjax.policy.uniform_policy(kuhn)), tmp_path / "k.csv")


def test_nuts_range_sanity():
    assert parse_range("AQ").sum() == 16


def test_sizes_command(tmp_path, capsys):
    from cfrjax.games.poker.sizes import game_sizes, main
    row = game_sizes(PokerSubgameSpec(board=RIVER, random_hands=3, seed=0))
    assert row["infosets"] == 2 * 3 * 15 and row["nodes"] == 1 + 15 * row["deals"]
    assert row["slots"] == 2 * 3 * 7 and row["build_s"] >= 0 and row["compile_s"] >= 0
    path = tmp_path / "tiny.toml"
    path.write_text('board = "Ks Js Th 7d"\nrandom_hands = 2\n')
    assert main(["--json", str(path)]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["name"] == "tiny" and out["street"] == "turn" and out["states"] == out["deals"] * 3310


def test_river_nuts_anchor_brute_force():
    """The nuts anchor by brute-force enumeration of pure strategies (reference oracle, no
    code shared with the compiled path), against the solver's value: 10 to 1e-10."""
    from reference import brute_force_best_response_value
    spec = build_spec(PokerSubgameSpec(board=RIVER, range0="AsQs,AhQh", range1="KK"))
    _, _, _, value, br0, br1, _ = _solve_anchor(spec)
    policy = {}
    for key, names in zip(spec.infoset_keys, spec.action_names):
        p = np.zeros(len(names))
        p[_passive(names) if key.startswith("P0") else 0] = 1.0  # P0: check/call; P1: check, fold
        policy[key] = p
    # Against P0's check/call no P1 strategy holds P0 below 10, and against P1's check/fold
    # no P0 strategy wins more than 10.
    assert -brute_force_best_response_value(spec, policy, 1) == pytest.approx(10.0, abs=1e-10)
    assert brute_force_best_response_value(spec, policy, 0) == pytest.approx(10.0, abs=1e-10)
    assert abs(value - 10.0) <= br0 + br1 + 1e-10  # solver value within NashConv of the anchor
