"""Per-hand answers at a public node (`cfrjax.public.report.node_report`) and `cfrjax show SPOT NODE`.

The issue's acceptance: the per-hand EVs weighted by the combos reaching the root (range
weight times the opponent's compatible mass) give the root value, `cfrjax.expected_value`.
Per-hand EVs, equities and weights at inner nodes (a river node just before showdown, a
turn spot's turn node and one of its river nodes) are checked against a brute-force count
deal by deal (`poker_brute_force.Spot`: its own betting tree, eval7 strengths, no cfrjax
code). Then the command line: the table with EV and equity columns, the `--csv` and `--npz`
exports read back, and one-line errors (unknown node, no solution, tabular form).

Fast: a river spot of six hands per player (the CLI's hand list: every live combo, so the
API and the CLI share one game and its executables) and a turn spot of three hands each,
under random policies (every line reached, no solve to compile).
"""

import csv
import dataclasses
import tomllib

import jax.numpy as jnp

import numpy as np
import pytest

import cfrjax
from cfrjax import cli
from cfrjax.games.poker import PokerSubgameSpec, load_poker_config
from cfrjax.games.poker.public_tree import build_public
from cfrjax.public.report import CSV_FIELDS, node_report

RIVER_TOML = """game = "poker_subgame"
name = "show_river"
board = "Ks Js Th 7d 2c"
pot = 20
stack = 100
[betting]
bet_fractions = [0.5, 1.0]
raise_cap = 0
[ranges.range0]
AsAh = 0.9
QhQd = 0.6
KhQh = 1.0
9h8h = 0.7
Ah2h = 0.4
7s7h = 0.5
[ranges.range1]
AdKd = 0.8
QsQc = 1.0
Td9d = 0.6
KhKd = 0.3
2s2h = 0.9
Ah3h = 0.5
"""


def random_policy(game, seed: int):
    """`[S, H]` random behaviour policy (some exact zeros), normalised per (node, hand)."""
    rng = np.random.default_rng(seed)
    x = rng.random(game.slot_shape) ** 2 * (rng.random(game.slot_shape) > 0.15)
    start = np.asarray(game.infoset_slot_start)
    tot = np.add.reduceat(x, start[:-1], axis=0)[np.asarray(game.slot_infoset)]
    return np.where(tot > 0, x / np.where(tot > 0, tot, 1), np.asarray(game.slot_uniform)[:, None])


@pytest.fixture(scope="module")
def river(tmp_path_factory):
    """`(spec path, game (every live combo, as the CLI builds it), state)`: a float64 state
    whose average policy is a random policy."""
    path = tmp_path_factory.mktemp("show") / "show_river.toml"
    path.write_text(RIVER_TOML)
    game = build_public(load_poker_config(path))
    state = dataclasses.replace(cfrjax.init(game, dtype="float64"), avg=jnp.asarray(random_policy(game, 3)))
    return str(path), game, state


# ----------------------------------------------------------------------------------------
# Brute force (poker_brute_force: no cfrjax code), deal by deal.


def _hand_name(spot):
    return __import__(type(spot).__module__).hand_name


def _value0(spot, s, deal, pol):
    """Player 0's expected payoff below state `s` for the deal `(h0, h1)` under `pol`."""
    hand_name = _hand_name(spot)
    if s["kind"] in ("fold", "showdown"):
        return spot.payoff0(s, *deal)
    if s["kind"] == "end":
        if s["street"] == 5:
            return _value0(spot, spot.after_end(s), deal, pol)
        cards = spot.next_cards(s, deal[0] + deal[1])
        return sum(_value0(spot, spot.after_end(s, c), deal, pol) for c in cards) / len(cards)
    probs = pol[f"P{s['p']}|{hand_name(deal[s['p']])}|{s['code']}"]
    return sum(q * _value0(spot, t, deal, pol) for q, (_, t) in zip(probs, spot.actions(s)) if q)


def _share(spot, s, deal, p):
    """Player p's showdown share at state `s` (1 win, 1/2 tie), over the river cards to come."""
    def one(board):
        a, b = spot.strength(deal[p], board), spot.strength(deal[1 - p], board)
        return 1.0 if a > b else 0.5 if a == b else 0.0
    if len(spot.board) == 5:
        return one(spot.board)
    if s["dealt"]:
        return one(spot.board + s["dealt"])
    cards = spot.next_cards(s, deal[0] + deal[1])
    return sum(one(spot.board + (c,)) for c in cards) / len(cards)


def brute_force(spot, pol, code):
    """`{(player, hand name): (weight, ev, equity)}` at decision node `code`: weight = the
    range weight times the player's own probabilities on the path; ev and equity averaged
    over the opponent's hands with weight (range x own path probabilities x chance), ev
    in postflop-solver's convention: the payoff plus the player's `pot / 2` and the chips
    it has put in on the path to the node (`s["c"]`, the brute force's own betting)."""
    hand_name = _hand_name(spot)
    acc = {}

    def walk(s, deal, reach, chance):
        if s["kind"] in ("fold", "showdown"):
            return
        if s["kind"] == "end":
            if s["street"] == 4:
                cards = spot.next_cards(s, deal[0] + deal[1])
                for c in cards:
                    walk(spot.after_end(s, c), deal, reach, chance / len(cards))
            return
        if s["code"] == code:
            u0 = _value0(spot, s, deal, pol)
            for p in (0, 1):
                w = spot.ranges[1 - p][deal[1 - p]] * reach[1 - p] * chance
                e = acc.setdefault((p, hand_name(deal[p])), [spot.ranges[p][deal[p]] * reach[p], 0.0, 0.0, 0.0,
                                                             spot.pot / 2 + s["c"][p]])
                e[1] += w
                e[2] += w * (u0 if p == 0 else -u0)
                e[3] += w * _share(spot, s, deal, p)
            return
        probs = pol[f"P{s['p']}|{hand_name(deal[s['p']])}|{s['code']}"]
        for q, (_, t) in zip(probs, spot.actions(s)):
            r = list(reach)
            r[s["p"]] *= q
            walk(t, deal, r, chance)

    for h0, h1, _ in spot.deals():
        walk(spot.root(), (h0, h1), [1.0, 1.0], 1.0)
    return {k: (w, ev / m + stake, eq / m) for k, (w, m, ev, eq, stake) in acc.items() if m > 0}


def _check_against_brute_force(game, policy, spot, codes):
    p = np.asarray(policy)
    pol = {key: tuple(p[sl, h]) for key, sl, h in game.labels.infoset_keys()}
    index = {name: h for h, name in enumerate(game.labels.hand_names)}
    for code in codes:
        r = node_report(game, policy, code)
        expected = brute_force(spot, pol, code)
        assert len(expected) >= 4, code
        for (player, hand), (w, ev, eq) in expected.items():
            h = index[hand]
            assert r.weight[player, h] == pytest.approx(w, rel=1e-12, abs=1e-15), (code, player, hand)
            assert r.ev[player, h] == pytest.approx(ev, rel=1e-9, abs=1e-9), (code, player, hand)
            assert r.equity[player, h] == pytest.approx(eq, rel=1e-9, abs=1e-12), (code, player, hand)


# ----------------------------------------------------------------------------------------
# The API.


def test_range_weighted_evs_are_the_root_value(river):
    """Sum over hands of combos x EV at the root, over Z, less pot / 2 (postflop-solver's
    EV counts the player's half of the starting pot) is player 0's expected value (player
    1's: its negative); every node's combos sum to the same deal mass for both players;
    the two players' range EVs add up to the pot at the node (20 at the root, 40 after a
    bet of 20); dead hands and hands outside the range carry no weight."""
    _, game, state = river
    policy = cfrjax.average_policy(game, state)
    value = float(cfrjax.expected_value(game, policy))
    root = node_report(game, policy, "")
    assert root.player == 0 and root.actions == ("check", "bet 10", "bet 20")
    np.testing.assert_array_equal(root.weight, np.asarray(game.weights))
    assert root.combos.sum(axis=1) == pytest.approx([root.norm, root.norm], rel=1e-12)
    for p, sign in ((0, 1.0), (1, -1.0)):
        held = root.combos[p] > 0
        assert held.sum() == 6 and not np.isnan(root.ev[p, held]).any()
        assert np.sum(root.combos[p, held] * root.ev[p, held]) / root.norm - 10 == pytest.approx(sign * value,
                                                                                                 abs=1e-12)
        assert root.summary(p)["ev"] - 10 == pytest.approx(sign * value, abs=1e-12)
    assert root.summary(0)["ev"] + root.summary(1)["ev"] == pytest.approx(20, abs=1e-12)
    inner = node_report(game, policy, "k.b20")
    assert inner.player == 0 and inner.actions == ("fold", "call") and inner.strategy.shape == (game.num_hands, 2)
    assert inner.combos[0].sum() == pytest.approx(inner.combos[1].sum(), rel=1e-12) and 0 < inner.combos[0].sum()
    assert inner.summary(0)["ev"] + inner.summary(1)["ev"] == pytest.approx(40, abs=1e-12)
    np.testing.assert_allclose(inner.summary()["frequencies"], np.average(
        inner.strategy[inner.combos[0] > 0], axis=0, weights=inner.combos[0][inner.combos[0] > 0]), rtol=1e-12)
    with pytest.raises(ValueError, match=r"no decision node 'k\.b30'.*'k\.b20'"):
        node_report(game, policy, "k.b30")


def test_river_against_brute_force(river):
    """EV, equity (k.b20: player 0 facing a pot bet, one call from showdown) and weight of
    every hand in either range at three river nodes equal a deal-by-deal count."""
    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    _, game, state = river
    policy = cfrjax.average_policy(game, state)
    ranges = tomllib.loads(RIVER_TOML)["ranges"]
    spot = bf.Spot("Ks Js Th 7d 2c", 20, 100, (0.5, 1.0), None, 0, ranges["range0"], ranges["range1"])
    _check_against_brute_force(game, policy, spot, ["", "k", "k.b20"])


def test_turn_against_brute_force():
    """A turn spot: at the root and at player 1's turn node `k` (equity averaged over the 44
    river cards live for each pair) and at a river node below the 2s (values carrying the
    1/44 chance), EV, equity and weight equal the brute-force count."""
    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    w0 = {"AsAh": 0.8, "QhQd": 0.5, "9h8h": 1.0}
    w1 = {"AdKd": 0.7, "Qs9s": 1.0, "8c7c": 0.4}
    cfg = PokerSubgameSpec(board="Ks Js Th 7d", pot=20, stack=60, bet_fractions=(1.0,), raise_cap=0, range0=w0,
                           range1=w1)
    game = build_public(cfg, hands="range")
    spot = bf.Spot("Ks Js Th 7d", 20, 60, (1.0,), None, 0, w0, w1)
    _check_against_brute_force(game, random_policy(game, 5), spot, ["", "k", "k.k/2s/"])


# ----------------------------------------------------------------------------------------
# The command line.


def test_cli_show_table_and_exports(river, tmp_path, capsys):
    """`cfrjax show SPOT NODE --checkpoint`: a table of player 0's hands with action, EV and
    equity columns (the report of the checkpoint's average policy, sorted by equity), the
    exploitability the solve recorded for that iteration; `--csv` (player 0's range: the
    hands of weight > 0, in hand-list order) and `--npz` read back to that report exactly;
    `--csv --all` lists every live hand."""
    path, game, state = river
    ckpt, out_csv, out_npz = (str(tmp_path / n) for n in ("s.ckpt", "r.csv", "r.npz"))
    # as `cfrjax solve --checkpoint` writes it: the evaluations [iteration, seconds, exploitability, value]
    cfrjax.save_checkpoint(ckpt, game, state, extra={"history": [[0, 0.5, 0.125, -0.25]]})
    assert cli.main(["show", path, "k.b20", "--checkpoint", ckpt, "--csv", out_csv, "--npz", out_npz]) == 0
    out = capsys.readouterr().out.splitlines()
    report = node_report(game, state, "k.b20")
    head = next(i for i, line in enumerate(out) if line.split()[:3] == ["hand", "weight", "combos"])
    assert out[head].split()[3:] == ["fold", "call", "EV", "equity"]
    held = np.flatnonzero(report.weight[0] > 0)
    rows = [line.split() for line in out[head + 1:head + 1 + len(held)]]
    order = held[np.argsort(-report.equity[0, held], kind="stable")]
    assert [r[0] for r in rows] == [report.hands[h] for h in order]
    for r, h in zip(rows, order):
        assert float(r[3]) == pytest.approx(report.strategy[h, 0], abs=5e-4)
        assert float(r[5]) == pytest.approx(report.ev[0, h], abs=5e-5)
        assert float(r[6].rstrip("%")) == pytest.approx(100 * report.equity[0, h], abs=5e-3)
    assert f"{len(held)} hands of player 0" in out[head + 1 + len(held)]
    assert f"  csv: {out_csv}" in out and f"  npz: {out_npz}" in out
    assert out[1] == f"  solution: checkpoint {ckpt} (dcfr alternating, iteration 0); exploitability 0.125 " \
                     "(0.6250% of the pot)"
    back = cfrjax.public.report.load_report(out_npz)
    assert (back.game, back.node, back.player, back.actions, back.hands) == \
        (report.game, "k.b20", 0, ("fold", "call"), report.hands)
    for name in ("weight", "combos", "ev", "equity", "strategy"):
        np.testing.assert_array_equal(getattr(back, name), getattr(report, name), err_msg=name)
    with open(out_csv, newline="") as f:
        table = list(csv.reader(f))
    assert table[0] == list(CSV_FIELDS) + ["fold", "call"] and len(table) == 1 + len(held)
    got = np.array([[float(x) for x in row[1:]] for row in table[1:]])
    want = np.concatenate([report.weight.T, report.combos.T, report.ev.T, report.equity.T, report.strategy], axis=1)
    assert [row[0] for row in table[1:]] == [report.hands[h] for h in held]
    np.testing.assert_array_equal(got, want[held])
    assert cli.main(["show", path, "k.b20", "--checkpoint", ckpt, "--csv", out_csv, "--all", "--limit", "3"]) == 0
    live = np.flatnonzero(~np.isnan(report.equity[0]))
    assert live.size == game.num_hands and set(held) <= set(live)   # a river: every hand has an opponent hand
    with open(out_csv, newline="") as f:
        table = list(csv.reader(f))
    assert [row[0] for row in table[1:]] == [report.hands[h] for h in live]
    np.testing.assert_array_equal(np.array([[float(x) for x in row[1:]] for row in table[1:]]), want[live])


def test_cli_show_errors_are_one_line(river, tmp_path, capsys):
    path, game, _ = river
    ckpt = str(tmp_path / "s.ckpt")
    cfrjax.save_checkpoint(ckpt, game, cfrjax.init(game, dtype="float64"))
    cases = [
        (["show", path, "k.b25", "--checkpoint", ckpt], "no decision node 'k.b25'; e.g. 'k.b20'"),
        (["show", path, "k"], "needs one solution of the spot, got none"),
        (["show", path, "k", "--checkpoint", ckpt, "--iterations", "5"], "got 2 (--checkpoint, --iterations)"),
        (["show", path, "k", "--iterations", "5", "--form", "tabular"], "compiled to the tabular form"),
        (["show", path, "k", "--checkpoint", ckpt, "--csv", "r.txt"], "--csv 'r.txt': the file name must end"),
    ]
    for args, needle in cases:
        assert cli.main(args) == 2, args
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("cfrjax: error:") and needle in lines[0], (args, lines)


@pytest.mark.slow
def test_cli_show_solves_on_the_fly(river, capsys):
    """`--iterations N` solves the spot here (its exploitability from the solve's own
    evaluation) and reports the root."""
    path, _, _ = river
    assert cli.main(["show", path, "root", "--iterations", "30", "--dtype", "float64", "--sort", "ev"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("show_river: the root, player 0 to act (check, bet 10, bet 20)")
    assert out[1].startswith("  solution: solved here: 30 iterations, dcfr alternating float64; exploitability ")
    assert "6 hands of player 0 (sorted by ev" in out[-1]
