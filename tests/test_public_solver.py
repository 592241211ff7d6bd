"""The public-tree form through the generic solver API, against the tabular form.

The two forms are built independently below the betting tree (`build_public` vs
`build_spec` + `compile_game`); every comparison maps entries by information-set key
`P{p}|{hand}|{code}`. Mapping (../shared/reference/public-tree.md): the tabular deal
chance carries `w0 w1 / Z`, so a tabular regret equals the public regret times the
player's range weight `w_p[h]`; averages are compared as normalised policies; hands of
weight 0 have no tabular information set.
"""

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax.games.poker import PokerSubgameSpec, build_spec, load_poker_config
from cfrjax.games.poker.public_tree import build_public
from cfrjax.rules import ORDERS, RULES
from selection import cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIVER = "Ks Js Th 7d 2c"
# The tiny spot of the full rule x order cross product. Chosen without exact value ties:
# where two actions tie exactly, each form's rounding (a difference of sums vs a sum of
# differences) can leave a regret of +-1e-16 instead of 0, regret matching then plays
# another strategy, and the trajectories part (as the tests marked `fixed_order` note for
# CFR+); an earlier draw with a hand whose actions tied did that under alternating order.
TINY = PokerSubgameSpec(board=RIVER, pot=20, stack=110, range0={"AsQs": 1.0, "9h9d": 0.5, "AhAd": 0.7},
                        range1={"KhKd": 1.0, "8c8d": 0.3, "Qh9c": 0.9, "6h6d": 0.6}, bet_fractions=(0.5, 1.0),
                        raise_fractions=(1.0,), raise_cap=1)
AVERAGING = {"cfr": "linear", "cfr+": "linear", "pcfr+": "quadratic"}


def both_forms(cfg, hands="range"):
    return cfrjax.compile.compile_game(build_spec(cfg)), build_public(cfg, hands=hands)


def key_map(tab, pub):
    """Per tabular slot: `(public slot, public hand)`; also each tabular slot's player."""
    rows, cols, player = [], [], []
    pnames = {code: names for code, _, _, names in pub.labels.decision_nodes()}
    for key, names, p in zip(tab.labels.infoset_keys, tab.labels.action_names, tab.labels.infoset_player):
        sl, h = pub.infoset_index(key)
        assert tuple(pnames[key.split("|", 2)[2]]) == tuple(names), key
        rows += range(sl.start, sl.start + len(names))
        cols += [h] * len(names)
        player += [int(p)] * len(names)
    return np.array(rows), np.array(cols), np.array(player)


def run_steps(game, state, n):
    """`n` iterations (one executable; op-by-op steps would be 5x slower here)."""
    return cfrjax.solve(game, state, n)


_step = jax.jit(cfrjax.step)


def assert_states_agree(tab, pub, ts, ps, rtol=1e-9):
    rows, cols, player = key_map(tab, pub)
    w = np.asarray(pub.weights)[player, cols]
    scale = max(1.0, float(np.max(np.abs(ts.regret))))
    np.testing.assert_allclose(np.asarray(ps.regret)[rows, cols] * w, np.asarray(ts.regret), rtol=rtol,
                               atol=1e-12 * scale)
    tpol = np.asarray(cfrjax.average_policy(tab, ts))
    ppol = np.asarray(cfrjax.average_policy(pub, ps))[rows, cols]
    np.testing.assert_allclose(ppol, tpol, rtol=rtol, atol=1e-12)


def assert_evaluations_agree(tab, pub, ts, ps, rtol=1e-9):
    tpol, ppol = cfrjax.average_policy(tab, ts), cfrjax.average_policy(pub, ps)
    tv, pv = float(cfrjax.expected_value(tab, tpol)), float(cfrjax.expected_value(pub, ppol))
    tbr, pbr = np.asarray(cfrjax.best_response_values(tab, tpol)), np.asarray(cfrjax.best_response_values(pub, ppol))
    assert pv == pytest.approx(tv, rel=rtol, abs=1e-12)
    np.testing.assert_allclose(pbr, tbr, rtol=rtol, atol=1e-12)
    te, pe = float(cfrjax.exploitability(tab, tpol)), float(cfrjax.exploitability(pub, ppol))
    assert pe == pytest.approx(te, rel=rtol, abs=1e-12)


@pytest.fixture(scope="module")
def tiny():
    return both_forms(TINY)


# Default suite: every hook of `cfrjax.rules` once, both orders: plain CFR, DCFR's discount
# (alternating), PDCFR+'s prediction, clamp and discount (alternating), dcfr-postflop's
# discount after matching; cfr+, lcfr and pcfr+ combine these hooks and run in the slow
# cases (`-m slow`), as do the other orders (fewer compiles: the suite's six minutes).
FAST_COMBOS = [("cfr", "simultaneous"), ("dcfr", "alternating"), ("pdcfr+", "alternating"),
               ("dcfr-postflop", "simultaneous")]


@pytest.mark.parametrize("rule,order", cases([(r, o) for r in RULES for o in ORDERS], FAST_COMBOS, unpack=True))
def test_every_rule_and_order_equals_tabular(tiny, rule, order):
    tab, pub = tiny
    kw = dict(rule=rule, order=order, averaging=AVERAGING.get(rule, "linear"), dtype="float64")
    ts, ps = run_steps(tab, cfrjax.init(tab, **kw), 5), run_steps(pub, cfrjax.init(pub, **kw), 5)
    assert ps.regret.shape == pub.slot_shape
    assert_states_agree(tab, pub, ts, ps)
    assert_evaluations_agree(tab, pub, ts, ps)


def _random_spot(seed, board):
    rng = np.random.default_rng(seed)
    from cfrjax.games.poker import COMBO_NAMES
    names = rng.choice(COMBO_NAMES, 14, replace=False)       # some are blocked by the board
    r0 = {n: float(rng.uniform(0.1, 1.0)) for n in names[:7]}
    r1 = {n: float(rng.uniform(0.1, 1.0)) for n in names[7:]}
    from cfrjax.games.poker.cards import combos_blocked_by, parse_combo, parse_board
    blocked = combos_blocked_by(parse_board(board))
    r0 = {n: w for n, w in r0.items() if not blocked[parse_combo(n)]} or {"2h3h": 1.0}
    r1 = {n: w for n, w in r1.items() if not blocked[parse_combo(n)]} or {"4h5h": 1.0}
    return PokerSubgameSpec(board=board, pot=20, stack=110, range0=r0, range1=r1, bet_fractions=(0.5, 1.0))


CASES = {
    "hunl_river_K100": (lambda: load_poker_config(os.path.join(ROOT, "games", "hunl_river.toml")), "range",
                        ("cfr+", "simultaneous")),
    "turn_K8": (lambda: load_poker_config(os.path.join(ROOT, "games", "hunl_turn.toml"), random_hands=8), "range",
                ("dcfr", "alternating")),
    "libratus4_top6": (lambda: load_poker_config(os.path.join(ROOT, "tests", "fixtures",
                                                              "libratus_endgame4_top6.toml")), "range",
                       ("pcfr+", "alternating")),
    "random_river": (lambda: _random_spot(1, RIVER), None, ("cfr", "simultaneous")),
    "random_turn": (lambda: _random_spot(2, "Ks Js Th 7d"), "range", ("cfr+", "alternating")),
}


def to_public(tab, pub, ts):
    """The public state holding tabular state `ts` (regret / w_p[h], average * w_p[h]; hands
    without a tabular information set get zeros)."""
    rows, cols, player = key_map(tab, pub)
    w = np.asarray(pub.weights)[player, cols]

    def lift(x):
        out = np.zeros(pub.slot_shape)
        out[rows, cols] = x
        return jnp.asarray(out)
    ps = cfrjax.init(pub, rule=ts.config.rule, order=ts.config.order, averaging=ts.config.averaging,
                     dtype="float64")
    return dataclasses.replace(ps, regret=lift(np.asarray(ts.regret) / w), avg=lift(np.asarray(ts.avg) * w),
                               avg_weight=ts.avg_weight, iteration=ts.iteration,
                               prediction=None if ts.prediction is None else lift(np.asarray(ts.prediction) / w))


@pytest.mark.parametrize("case", cases(sorted(CASES), ["libratus4_top6"]))
def test_spots_equal_tabular(case):
    """Five iterations, each one step of both forms from the same state (mapped), then the
    evaluations. Turn spots have many exact value ties (a river card that changes nothing
    for a hand), where the two forms' rounding leaves 0 in one and +-1e-18 in the other and
    regret matching then plays another strategy; stepping from the same state compares the
    forms' arithmetic, not those bifurcations (the tiny river spot above runs whole
    trajectories)."""
    make, hands, (rule, order) = CASES[case]
    tab, pub = both_forms(make(), hands)
    ts = cfrjax.init(tab, rule=rule, order=order, dtype="float64")
    for _ in range(5):
        ps = _step(pub, to_public(tab, pub, ts))
        ts = _step(tab, ts)
        assert_states_agree(tab, pub, ts, ps)
    assert_evaluations_agree(tab, pub, ts, ps)


def test_one_step_from_the_same_state_after_100_iterations(tiny):
    """After 100 tabular iterations, one step of each form from that state (mapped) agrees."""
    tab, pub = tiny
    ts = cfrjax.solve(tab, cfrjax.init(tab, rule="cfr+", dtype="float64"), 100)
    ps = to_public(tab, pub, ts)
    assert_evaluations_agree(tab, pub, ts, ps)
    ts1, ps1 = _step(tab, ts), _step(pub, ps)
    assert_states_agree(tab, pub, ts1, ps1)
    assert_evaluations_agree(tab, pub, ts1, ps1)


def test_public_best_response_to_a_tabular_policy(tiny):
    tab, pub = tiny
    rows, cols, _ = key_map(tab, pub)
    rng = np.random.default_rng(0)
    raw = rng.uniform(0.01, 1.0, tab.num_slots)
    tpol = np.asarray(cfrjax.policy.normalize(tab, jnp.asarray(raw)))
    ppol = np.asarray(cfrjax.policy.uniform_policy(pub)).copy()
    ppol[rows, cols] = tpol
    np.testing.assert_allclose(np.asarray(cfrjax.best_response_values(pub, jnp.asarray(ppol))),
                               np.asarray(cfrjax.best_response_values(tab, jnp.asarray(tpol))), rtol=1e-9)
    assert float(cfrjax.expected_value(pub, jnp.asarray(ppol))) == pytest.approx(
        float(cfrjax.expected_value(tab, jnp.asarray(tpol))), rel=1e-9)


def test_policy_file_saved_from_the_public_form_loads_into_the_tabular_form(tiny, tmp_path):
    """`save_policy` of a public-form policy, `load_policy` into the tabular form (.json and
    .npz): the tabular entries are the public ones by name (the file's entries for hands
    without a tabular information set, such as player 0's sets for player 1's hands, are
    not needed), so both forms evaluate the same profile to the same numbers."""
    tab, pub = tiny
    rows, cols, _ = key_map(tab, pub)
    assert pub.num_infosets * pub.num_hands > tab.num_infosets   # the file has sets the tabular form lacks
    ppol = cfrjax.policy.normalize(pub, jnp.asarray(np.random.default_rng(2).uniform(0.01, 1.0, pub.slot_shape)))
    for name in ("policy.json", "policy.npz"):
        cfrjax.save_policy(tmp_path / name, pub, ppol)
        tpol = cfrjax.load_policy(tmp_path / name, tab, dtype="float64")
        np.testing.assert_array_equal(np.asarray(tpol), np.asarray(ppol)[rows, cols])
    np.testing.assert_allclose(np.asarray(cfrjax.best_response_values(tab, tpol)),
                               np.asarray(cfrjax.best_response_values(pub, ppol)), rtol=1e-12)
    assert float(cfrjax.expected_value(tab, tpol)) == pytest.approx(float(cfrjax.expected_value(pub, ppol)), rel=1e-12)


def test_retarget_ranges_without_retrace_equals_fresh_build():
    cfg = TINY
    pub = build_public(cfg, hands="all")                      # every live combo: any ranges can be set
    other = PokerSubgameSpec(board=RIVER, pot=20, stack=110, range0="AA,KK,QQ", range1="JJ,TT,AK",
                             bet_fractions=(0.5, 1.0), raise_fractions=(1.0,), raise_cap=1)
    fresh = build_public(other, hands="all")
    w0, w1 = other.ranges()
    traces = []

    @jax.jit
    def solve10(g, s):
        traces.append(1)
        return cfrjax.driver.run_steps(g, s, 10)

    s0 = cfrjax.init(pub, rule="cfr+", dtype="float64")
    solve10(pub, s0)
    moved = cfrjax.poker.set_root_ranges(pub, w0, w1)
    a = solve10(moved, s0)
    assert len(traces) == 1                                   # no retrace
    b = solve10(fresh, s0)
    np.testing.assert_allclose(np.asarray(moved.weights), np.asarray(fresh.weights), rtol=0, atol=0)
    assert float(moved.norm) == pytest.approx(float(fresh.norm), rel=1e-14)
    np.testing.assert_allclose(np.asarray(a.regret), np.asarray(b.regret), rtol=1e-12, atol=1e-15)


def test_locking_by_key_matches_tabular(tiny):
    tab, pub = tiny
    key = next(k for k in tab.labels.infoset_keys if k.startswith("P0|"))
    n = len(tab.labels.action_names[tab.labels.infoset_keys.index(key)])
    probs = np.eye(n)[-1]
    traces = []

    @jax.jit
    def four(g, s):
        traces.append(1)
        return cfrjax.driver.run_steps(g, s, 4)

    free = four(pub, cfrjax.init(pub, dtype="float64"))
    ts = cfrjax.lock(tab, cfrjax.init(tab, dtype="float64"), {key: probs})
    ps = cfrjax.lock(pub, cfrjax.init(pub, dtype="float64"), {key: probs})
    ts, ps = run_steps(tab, ts, 4), four(pub, ps)
    # one program without locks (`None`, a fresh state's) and one with; other locks: no retrace
    assert len(traces) == 2 and not np.array_equal(np.asarray(free.regret), np.asarray(ps.regret))
    four(pub, cfrjax.lock(pub, cfrjax.init(pub, dtype="float64"), {key: probs[::-1]}))
    assert len(traces) == 2
    sl, h = pub.infoset_index(key)
    np.testing.assert_array_equal(np.asarray(cfrjax.current_policy(pub, ps))[sl, h], probs)
    assert_states_agree(tab, pub, ts, ps)


def test_strategy_table_keys_are_the_tabular_keys(tiny):
    tab, pub = tiny
    trows = cfrjax.strategy.strategy_table(tab, cfrjax.policy.uniform_policy(tab))
    prows = cfrjax.strategy.strategy_table(pub, cfrjax.policy.uniform_policy(pub))
    assert {r["infoset"] for r in trows} <= {r["infoset"] for r in prows}
    assert {"hand", "history"} <= set(prows[0]) and {"hand", "history"} <= set(trows[0])


def test_solve_batch_and_eval_trace_and_checkpoint(tiny, tmp_path):
    _, pub = tiny
    B = 3
    rng = np.random.default_rng(0)
    w = rng.uniform(0.0, 1.0, (B, 2, pub.num_hands)) * (np.asarray(pub.weights) > 0)
    games = jax.vmap(cfrjax.public.passes.set_ranges, (None, 0, 0), cfrjax.batch_axes(pub))(
        pub, jnp.asarray(w[:, 0]), jnp.asarray(w[:, 1]))
    states = cfrjax.batch.init_batch(pub, B, rule="cfr+", dtype="float64")
    out = cfrjax.solve_batch(games, states, 6)
    for b in range(B):
        g = cfrjax.public.passes.set_ranges(pub, jnp.asarray(w[b, 0]), jnp.asarray(w[b, 1]))
        one = cfrjax.solve(g, cfrjax.init(pub, rule="cfr+", dtype="float64"), 6)
        np.testing.assert_allclose(np.asarray(out.regret[b]), np.asarray(one.regret), rtol=1e-10, atol=1e-13)
    state, trace = cfrjax.solve_with_trace(pub, cfrjax.init(pub, dtype="float64"), 20, eval_every=5)
    assert trace.exploitability.shape == (4,)
    assert float(trace.exploitability[-1]) == pytest.approx(
        float(cfrjax.exploitability(pub, cfrjax.average_policy(pub, state))), rel=1e-12)
    # poker's unit, % of the starting pot, is the poker layer's conversion of the trace's chips
    np.testing.assert_allclose(cfrjax.poker.pct_of_pot(pub, trace.exploitability), 100 * trace.exploitability / TINY.pot,
                               rtol=1e-15)
    path = tmp_path / "pub.ckpt"
    cfrjax.save_checkpoint(path, pub, state)
    back = cfrjax.load_checkpoint(path, pub)
    np.testing.assert_array_equal(np.asarray(back.regret), np.asarray(state.regret))
    with pytest.raises(cfrjax.CheckpointError):
        cfrjax.load_checkpoint(path, cfrjax.poker.set_root_ranges(pub, *TINY.ranges()[::-1]))


def test_forms_and_errors():
    pub = cfrjax.load_game(os.path.join(ROOT, "tests", "fixtures", "libratus_endgame4_top6.toml"), hands="all")
    assert cfrjax.forms.form_name(pub) == "public" and pub.num_hands == 1081
    tab = cfrjax.load_game(os.path.join(ROOT, "tests", "fixtures", "libratus_endgame4_top6.toml"), form="tabular")
    assert cfrjax.forms.form_name(tab) == "tabular"
    with pytest.raises(cfrjax.SpecError, match="only in the 'tabular' form"):
        cfrjax.load_game("kuhn_poker", form="public")
    with pytest.raises(ValueError, match="unknown form 'dense'"):
        cfrjax.load_game("kuhn_poker", form="dense")
    plan = cfrjax.memory.memory_plan(pub)
    assert plan.total_bytes > 0 and "state.regret [in]" in plan.table()
