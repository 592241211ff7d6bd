"""Aggregated reports over flops (`cfrjax report`): two workers solving one flop each write
what one run over both does, a killed run resumes to the same report, bad input is one
line, and the hand classes of hands whose class a poker player names at sight."""

import csv
import itertools
import dataclasses
import json
import os

import numpy as np
import pytest

from cfrjax import cli
from cfrjax.games.poker import flop_report as fr
from cfrjax.games.poker.cards import parse_cards
from cfrjax.games.poker.flops import canonical_flop, flop_str

TREE = """
game = "poker_subgame"
name = "tiny_tree"
pot = 10
behind = 10
[betting]
bet = "a"
raise = ""
[ranges]
range0 = "AA,KK,AKs"
range1 = "QQ,JJ,AQs"
"""
# Two flops of one tree, one after the other in one process (rainbow, blocking no hand of the
# ranges: one shape, so one compile for the whole file).
FLOPS = "9d5c3h,Td6c2h"
# Simultaneous order: a batch (XLA passes under vmap) then follows the single solves (the
# native passes on a CPU) to rounding; under alternating order an exact tie in regret
# matching can part two implementations' trajectories (docs/design/hands.md).
OPTIONS = fr.ReportOptions(target="1%", max_iterations=40, order="simultaneous", dtype="float64")


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    path = tmp_path_factory.mktemp("tree") / "tree.toml"
    path.write_text(TREE)
    return str(path)


def _records(out):
    folder = os.path.join(out, "flops")
    recs = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json"):
            with open(os.path.join(folder, name)) as f:
                r = json.load(f)
            r.pop("seconds")
            recs[r["flop"]] = r
    return recs


def _csv(out):
    with open(os.path.join(out, "report.csv")) as f:
        return [{k: v for k, v in row.items() if k != "seconds"} for row in csv.DictReader(f)]


def _assert_records_close(a, b):
    assert a.keys() == b.keys()
    for flop in a:
        x, y = a[flop], b[flop]
        for k in ("flop", "weight", "high", "suits", "pairing", "straight", "iterations", "target_reached"):
            assert x[k] == y[k], (flop, k)
        np.testing.assert_allclose(x["exploitability"], y["exploitability"], rtol=1e-9)
        np.testing.assert_allclose(x["ev"] + x["equity"], y["ev"] + y["equity"], rtol=1e-9)
        for node in ("root", "after_check"):
            np.testing.assert_allclose(x[node]["frequencies"], y[node]["frequencies"], rtol=1e-9, atol=1e-12)


@pytest.fixture(scope="module")
def whole(tree, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("whole"))
    solved = fr.run_report(tree, FLOPS, out, options=OPTIONS)
    fr.collect(out)
    return out, solved


def test_report_over_flops(whole):
    out, solved = whole
    assert solved == [flop_str(canonical_flop(f)) for f in FLOPS.split(",")]    # named by their classes
    recs = _records(out)
    for r in recs.values():
        assert r["target_reached"] and r["exploitability_pct_pot"] <= 1
        assert r["weight"] == 24 and r["suits"] == "rainbow"
        # no rake: the two players' EVs share the pot (postflop-solver's convention)
        np.testing.assert_allclose(sum(r["ev"]), 10.0, rtol=1e-9)
        assert abs(sum(r["root"]["frequencies"]) - 1) < 1e-9
    summary = json.load(open(os.path.join(out, "summary.json")))
    w = np.array([r["weight"] for r in recs.values()], float)
    ev0 = np.array([r["ev"][0] for r in recs.values()])
    np.testing.assert_allclose(summary["all"]["ev0"], (w * ev0).sum() / w.sum(), rtol=1e-12)
    for png in ("bet_frequency.png", "ev.png", "textures.png"):
        assert os.path.getsize(os.path.join(out, png)) > 0


def test_batch_of_flops_equals_each_flop_alone(tree, whole, tmp_path):
    out = str(tmp_path / "batch")
    batch = dataclasses.replace(OPTIONS, batch=2)
    assert fr.run_report(tree, FLOPS, out, options=batch) == whole[1]
    _assert_records_close(_records(out), _records(whole[0]))


def test_killed_run_resumes_to_the_same_report(tree, whole, tmp_path, monkeypatch):
    out = str(tmp_path / "killed")
    real = fr.flop_records
    calls = []

    def dies_on_the_second(*args, **kwargs):
        calls.append(args[1])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)
    monkeypatch.setattr(fr, "flop_records", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        fr.run_report(tree, FLOPS, out, options=OPTIONS)
    first, second = (flop_str(canonical_flop(f)) for f in FLOPS.split(","))
    assert sorted(os.listdir(os.path.join(out, "flops"))) == [first + ".json", first + ".npz"]   # no torn file
    monkeypatch.setattr(fr, "flop_records", real)
    assert fr.run_report(tree, FLOPS, out, options=OPTIONS) == [second]   # the first not solved again
    fr.collect(out)
    _assert_records_close(_records(out), _records(whole[0]))
    assert _csv(out) == _csv(whole[0])


def test_two_workers_write_what_one_does(tree, whole, tmp_path, capsys):
    """Each worker solves one flop alone (in this process, after the others: compiled
    programs shared); together they write the run over both flops."""
    out = str(tmp_path / "two")
    for worker in (1, 0):
        assert cli.main(["report", tree, "--flops", FLOPS, "--out", out, "--worker", str(worker), "--num-workers", "2",
                         "--max-iterations", "40", "--target", "1%", "--order", "simultaneous", "--dtype", "float64"]) == 0
    _assert_records_close(_records(out), _records(whole[0]))
    assert _csv(out) == _csv(whole[0])
    capsys.readouterr()
    assert cli.main(["report", "show", out, "--flop", "9s5h3c", "--limit", "3"]) == 0   # any member of the class
    shown = capsys.readouterr().out
    assert f"flop {flop_str(canonical_flop('9d5c3h'))} (weight 24)" in shown and "3 of " in shown


@pytest.mark.parametrize("argv, words", [
    (["--flops", "Ks7h"], "a flop has 3"),
    (["--flops", "Ks7h2c,Kd7h2s"], "same flop up to suits"),
    (["--target=-1%"], "target '-1%'"),
    (["--rule", "cfr++"], "bad rule 'cfr++'"),
    (["--worker", "2", "--num-workers", "2"], "worker 2 must be an integer in 0..1"),
    (["--batch", "0"], "bad batch 0"),
])
def test_bad_input_is_one_line(tree, tmp_path, capsys, argv, words):
    assert cli.main(["report", tree, "--out", str(tmp_path / "r")] + argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("cfrjax: error:") and words in err and err.count("\n") == 1


def test_show_without_a_report_is_one_line(tmp_path, capsys):
    assert cli.main(["report", "show", str(tmp_path)]) == 2
    assert "holds no report" in capsys.readouterr().err


@pytest.mark.parametrize("board, hand, expected", [
    ("Ks7h2c", "AsKd", "made"),        # top pair
    ("Ks7h2c", "8d8c", "made"),        # an underpair is still a pair with the hole cards
    ("Ks7h2c", "AdQd", "air"),
    ("KdKc4h", "As5s", "air"),         # the board's pair is not the hand's
    ("KdKc4h", "5s5h", "made"),        # two pair with a pocket pair
    ("8s6s2s", "AsQd", "draw"),        # four spades: the nut flush draw
    ("8s6s2s", "AhQd", "air"),
    ("9d8c2h", "7s6s", "draw"),        # open-ended: a 5 or a T
    ("9d8c2h", "Js6s", "air"),         # a gutshot (T) only
    ("Td9c2h", "QhJh", "draw"),        # open-ended: an 8 or a K
    ("5d4c2h", "AsKs", "air"),         # a wheel gutshot: only a 3 completes it
    ("5d4c2h", "As3s", "made"),        # the wheel
    ("5d4c2h", "6s3s", "made"),        # a straight
    ("Th8h4c", "9h7h", "draw"),        # flush draw and straight draws
    ("7s7h7d", "AsKs", "air"),
    ("7s7h7d", "2s2h", "made"),        # a full house
])
def test_hand_classes(board, hand, expected):
    got = fr.hand_classes(parse_cards(board), parse_cards(hand)[None])[0]
    assert fr.HAND_CLASSES[got] == expected


def test_root_equity_of_a_flop_equals_a_brute_force(whole):
    """A flop's root report (the record's `.npz`): one hand's equity against the
    opponent's range there, over every turn and river card live for both hands, equals an
    enumeration with eval7 (shares no code with cfrjax)."""
    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    from cfrjax.public.report import load_report

    out, solved = whole
    flop = solved[0]
    report = load_report(os.path.join(out, "flops", flop + ".npz"))
    board = [bf.card_id(flop[i:i + 2]) for i in (0, 2, 4)]
    hand = "AsAh"
    mine = bf.parse_hand(hand)
    win = total = 0.0
    for j, name in enumerate(report.hands):
        w = report.weight[1][j]
        theirs = bf.parse_hand(name)
        if w <= 0 or set(theirs) & set(mine):
            continue
        rest = [c for c in range(52) if c not in board + list(mine) + list(theirs)]
        for turn, river in itertools.permutations(rest, 2):
            a = bf.eval7.evaluate([bf.eval7.Card(bf.card_name(c)) for c in board + [turn, river] + list(mine)])
            b = bf.eval7.evaluate([bf.eval7.Card(bf.card_name(c)) for c in board + [turn, river] + list(theirs)])
            win += w * (1.0 if a > b else 0.5 if a == b else 0.0)
            total += w
    assert report.equity[0][report.hands.index(hand)] == pytest.approx(win / total, rel=1e-9)


def test_report_at_a_flops_turn_node_is_refused(tree):
    """A flop's turn-street nodes (below a turn card, on its trunk) have no node report yet:
    one line, before anything is computed."""
    import cfrjax
    from cfrjax.games.poker.toml import load_poker_config
    from cfrjax.public.report import node_report

    game = cfrjax.load_game(load_poker_config(tree, board="9d 5c 3h"))
    turn_node = next(c for c in game.labels.node_codes if c.count("/") == 2 and c.endswith("/"))
    with pytest.raises(ValueError, match="turn-street nodes"):
        node_report(game, np.ones(game.slot_shape), turn_node)
