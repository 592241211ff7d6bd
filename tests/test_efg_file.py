"""LiteEFG text format: exact round trip, streaming writer, label checks, LiteEFG itself."""

import numpy as np
import pytest

import cfrjax
from cfrjax.compile import compile_arrays
from cfrjax.games.efg_file import read_efg, write_efg
from cfrjax.spec import SpecError


def assert_same_compiled(a, b):
    arr_a, static_a, lab_a = compile_arrays(a)
    arr_b, static_b, lab_b = compile_arrays(b)
    assert static_a == static_b
    assert arr_a.keys() == arr_b.keys()
    for k in arr_a:
        assert arr_a[k].dtype == arr_b[k].dtype and np.array_equal(arr_a[k], arr_b[k]), k
    for f in ("name", "infoset_keys", "action_names", "action_ids", "payoff_offset", "source", "fingerprint"):
        assert getattr(lab_a, f) == getattr(lab_b, f), f
    assert np.array_equal(lab_a.infoset_player, lab_b.infoset_player)


@pytest.fixture(scope="module")
def leduc_spec():
    return cfrjax.games.openspiel.spec_from_openspiel("leduc_poker")


def test_round_trip_kuhn(tmp_path):
    spec = cfrjax.games.openspiel.spec_from_openspiel("kuhn_poker")
    write_efg(spec, tmp_path / "kuhn.efg")
    assert_same_compiled(spec, read_efg(tmp_path / "kuhn.efg"))


def test_round_trip_leduc(tmp_path, leduc_spec):
    write_efg(leduc_spec, tmp_path / "leduc.efg")
    assert_same_compiled(leduc_spec, read_efg(tmp_path / "leduc.efg"))


def test_round_trip_hunl_river(tmp_path):
    from cfrjax.games.poker import load_poker_toml
    spec = load_poker_toml("games/hunl_river.toml", ranges={"random_hands": 12})
    write_efg(spec, tmp_path / "river.efg")
    back = read_efg(tmp_path / "river.efg")
    assert_same_compiled(spec, back)
    assert back.num_nodes == spec.num_nodes


def test_file_layout_is_what_liteefg_parses(tmp_path):
    spec = cfrjax.games.openspiel.spec_from_openspiel("kuhn_poker")
    write_efg(spec, tmp_path / "kuhn.efg")
    lines = (tmp_path / "kuhn.efg").read_text().split("\n")
    assert lines[-1] == ""  # ends in a newline
    assert "#     num_players: 2," in lines and "# }" in lines
    body = [l for l in lines if l and not l.startswith("#")]
    assert body[0].startswith("node / chance actions ")  # root first
    nodes = [l for l in body if l.startswith("node ")]
    isets = [l for l in body if l.startswith("infoset ")]
    assert len(nodes) == 58 and len(isets) == 12 and body == nodes + isets  # nodes before infosets
    assert all(not l.endswith(" ") for l in body)
    assert "node /C:0/C:1 player 1 actions Pass Bet" in body


def test_mislabeled_member_is_rejected(tmp_path):
    spec = cfrjax.games.openspiel.spec_from_openspiel("kuhn_poker")
    write_efg(spec, tmp_path / "bad.efg", mislabel_infoset=spec.infoset_keys.index("1p"))
    with pytest.raises(SpecError, match="lists actions"):
        read_efg(tmp_path / "bad.efg")
    positional = read_efg(tmp_path / "bad.efg", check_labels=False)  # LiteEFG's reading: another game
    assert positional.num_nodes == spec.num_nodes


def test_errors_name_the_place(tmp_path):
    p = tmp_path / "broken.efg"
    p.write_text("# x\n# Opt {\n#     num_players: 2,\n# }\nnode / player 1 actions a b\nnode /P1:a leaf payoffs 1=1 2=-1\n")
    with pytest.raises(SpecError, match="child '/P1:b'"):
        read_efg(p)
    p.write_text("node / leaf payoffs 1=1 2=-1\n")
    with pytest.raises(SpecError, match="num_players"):
        read_efg(p)


def test_reads_foreign_file_with_singletons_and_unnormalized_chance(tmp_path):
    p = tmp_path / "tiny.efg"
    p.write_text("# tiny\n# Opt {\n#     num_players: 2,\n# }\n"
                 "node / chance actions x=0.33333333 y=0.66666667\n"
                 "node /C:x player 1 actions l r\nnode /C:y player 1 actions l r\n"
                 "node /C:x/P1:l leaf payoffs 1=1 2=-1\nnode /C:x/P1:r leaf payoffs 1=0 2=0\n"
                 "node /C:y/P1:l leaf payoffs 1=0 2=0\nnode /C:y/P1:r player 2 actions a\n"
                 "node /C:y/P1:r/P2:a leaf payoffs 1=3 2=-3\n"
                 "infoset pl1_0__I nodes /C:x /C:y\n")
    spec = read_efg(p)
    assert spec.num_infosets == 2 and spec.infoset_keys[0] == "pl1_0__I"
    assert spec.infoset_keys[1].startswith("singleton:")
    assert spec.chance_prob[spec.parent == 0].sum() == pytest.approx(1.0, abs=1e-15)  # renormalized
    game = cfrjax.load_game(spec)
    assert float(cfrjax.expected_value(game, cfrjax.policy.uniform_policy(game))) == pytest.approx(1 / 6 + 1.0, rel=1e-6)
