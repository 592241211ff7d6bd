"""Poker conventions: hand names as poker tools print them, either order read back, files
written before the change, and the stack as chips behind (`behind`).

* Hands print high card first, a pair's suits in postflop-solver's order s > h > d > c
  (its card ids run 2c, 2d, 2h, 2s, ..., As; a combo prints its higher id first, so its
  last combo is "AsAh"). Checked against that rule written out here, not against the
  table the code builds.
* Every place a hand is typed takes both orders: range tokens, information-set keys
  (`infoset_index`, `lock`), policy files, `cfrjax show POLICY INFOSET`.
* Files written before hands printed high card first (cfrjax up to 31c82a6 printed the
  lower card id first, ids `4 * rank + suit` with suits s, h, d, c: "QsAs", "9hQh") keep
  loading: a policy is saved, then its names are rewritten in that old order by
  `old_name` below (the old rule, written out here), and the rewritten file loads to the
  very same policy, warm start and locks included.
* `behind` (postflop-solver's `effective_stack`) builds the same game bit for bit as the
  equivalent `stack = behind + pot / 2`; both together, negative or non-finite values
  are one-line errors.
"""

import csv
import json
import os

import numpy as np
import pytest

import cfrjax
from cfrjax import cli
from cfrjax.games.poker import (
    COMBO_NAMES, PokerSpecError, PokerSubgameSpec, build_spec, combo_index, combo_str, config_from_dict,
    load_poker_config, parse_range, range_from_hands, read_strategy_csv, strategy_table, write_strategy_csv)
from cfrjax.games.poker.public_tree import build_public
from cfrjax.public.report import node_report

RANKS, SUITS = "23456789TJQKA", "shdc"
BOARD = "Ks Js Th 7d 2c"
SPEC = PokerSubgameSpec(board=BOARD, pot=20, behind=80, bet_fractions=(0.5, 1.0), raise_cap=0,
                        range0="AsQs,9hQh:0.5,QdQc,Ah9d", range1="KdAd,8c9c,TdTc:0.7,Qh8h", name="conv_river")


def old_name(hand: str) -> str:
    """A hand as cfrjax printed it before: the lower card id (4 * rank + suit, suits s, h,
    d, c) first."""
    cid = lambda c: 4 * RANKS.index(c[0]) + SUITS.index(c[1])   # noqa: E731
    a, b = hand[:2], hand[2:]
    return a + b if cid(a) < cid(b) else b + a


def old_key(key: str) -> str:
    p, hand, rest = key.split("|", 2)
    return f"{p}|{old_name(hand)}|{rest}"


def random_policy(game, seed: int) -> np.ndarray:
    """A random behaviour policy shaped `game.slot_shape` (no solve: nothing to compile)."""
    x = np.random.default_rng(seed).random(game.slot_shape) + 0.05
    start = np.asarray(game.infoset_slot_start)
    return x / np.add.reduceat(x, start[:-1], axis=0)[np.asarray(game.slot_infoset)]


@pytest.fixture(scope="module")
def solved():
    """`(tabular game, public game, tabular policy, public policy)`, random policies."""
    tab = cfrjax.compile.compile_game(build_spec(SPEC))
    pub = build_public(SPEC, hands="range")
    return tab, pub, random_policy(tab, 0), random_policy(pub, 1)


def test_hand_names_high_card_first():
    order = "cdhs"    # postflop-solver's suit ids 0..3: a pair prints its higher suit first
    for i, name in enumerate(COMBO_NAMES):
        (r1, s1), (r2, s2) = (RANKS.index(name[0]), name[1]), (RANKS.index(name[2]), name[3])
        assert r1 > r2 or (r1 == r2 and order.index(s1) > order.index(s2)), name
        assert combo_index(name[:2], name[2:]) == i
    assert [combo_str(combo_index(a, b)) for a, b in (("Ks", "As"), ("Jh", "Qh"), ("9c", "Td"), ("Ah", "As"),
                                                      ("Ac", "Ad"), ("2c", "2s"))] == \
        ["AsKs", "QhJh", "Td9c", "AsAh", "AdAc", "2s2c"]


def test_names_in_keys_reports_and_exports(solved, tmp_path):
    """Tabular keys, public keys, strategy tables and the node report's CSV name the hands
    high card first: searching them for "AsQs" finds it, for "QsAs" finds nothing."""
    tab, pub, ptab, ppub = solved
    keys = list(tab.labels.infoset_keys)
    assert "P0|AsQs|" in keys and "P0|Qh9h|" in keys and not any("QsAs" in k or "9hQh" in k for k in keys)
    assert "P1|AdKd|k" in keys and "P1|9c8c|k" in keys
    # the tabular slots keep the layout they had (by owner, then the key in the old names):
    # compiled games, fingerprints and checkpoints are unchanged
    owner = [int(x) for x in tab.labels.infoset_player]
    assert keys == [k for _, _, k in sorted(zip(owner, map(old_key, keys), keys))] != sorted(keys)
    assert {k for k, _, _ in pub.labels.infoset_keys()} >= set(keys)
    assert {r["hand"] for r in strategy_table(tab, ptab)} == {"AsQs", "Qh9h", "QdQc", "Ah9d", "AdKd", "9c8c",
                                                             "TdTc", "Qh8h"}
    path = tmp_path / "root.csv"
    node_report(pub, ppub, "").save_csv(path)
    with open(path, newline="") as f:
        hands = [row[0] for row in csv.reader(f)][1:]
    assert hands == ["Qh9h", "Ah9d", "AsQs", "QdQc"]    # player 0's range, hand-list (combo) order


def test_both_orders_accepted(solved, tmp_path, capsys):
    tab, pub, ptab, _ = solved
    np.testing.assert_array_equal(parse_range("QsAs,Qh9h:0.5,QdQc,9dAh", BOARD), parse_range(SPEC.range0, BOARD))
    np.testing.assert_array_equal(range_from_hands({"KsAs": 1.0, "JcQc": 0.5}), range_from_hands({"AsKs": 1.0,
                                                                                                    "QcJc": 0.5}))
    for g in (tab, pub):
        for key in ("P0|AsQs|", "P1|AdKd|k", "P1|9c8c|b10", "P0|Qh9h|k.b20"):
            assert g.infoset_index(old_key(key)) == g.infoset_index(key), key
        with pytest.raises(KeyError):
            g.infoset_index("P0|KsAs|")    # no such hand in the range (Ks is on the board)
        state = cfrjax.init(g)
        a = cfrjax.lock(g, state, {"P0|QsAs|": [0.25, 0.25, 0.5]})
        b = cfrjax.lock(g, state, {"P0|AsQs|": [0.25, 0.25, 0.5]})
        np.testing.assert_array_equal(np.asarray(a.locked), np.asarray(b.locked))
        np.testing.assert_array_equal(np.asarray(a.locked_policy), np.asarray(b.locked_policy))
        assert np.asarray(a.locked).any()
    path = str(tmp_path / "p.json")
    cfrjax.save_policy(path, tab, ptab)
    assert cli.main(["show", path, "P0|QsAs|"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "P0|AsQs|  (player 0)"
    assert cli.main(["show", path, "QsAs", "--limit", "100"]) == 0
    out = [line for line in capsys.readouterr().out.splitlines() if not line.startswith(" ")]
    assert len(out) == sum(1 for k in tab.labels.infoset_keys if "AsQs" in k) > 1 and all("|AsQs|" in k for k in out)


def test_old_convention_files_load(solved, tmp_path, capsys):
    """A policy saved (JSON; NPZ of either form) then rewritten with the names low card
    first, as cfrjax wrote them before, loads to the same policy; a warm start from it is
    the same state; a strategy CSV with old names reads back to today's rows."""
    tab, pub, ptab, ppub = solved
    for g, pol, ext in ((tab, ptab, "json"), (tab, ptab, "npz"), (pub, ppub, "json"), (pub, ppub, "npz")):
        new, old = str(tmp_path / f"new.{ext}"), str(tmp_path / f"old.{ext}")
        cfrjax.save_policy(new, g, pol)
        if ext == "json":
            with open(new) as f:
                doc = json.load(f)
            changed = sum(old_key(k) != k for k in doc["infosets"])
            doc["infosets"] = {old_key(k): v for k, v in doc["infosets"].items()}
            with open(old, "w") as f:
                json.dump(doc, f)
        else:
            with np.load(new) as z:
                head, p = json.loads(z["meta"].tobytes().decode()), z["policy"]
            field = "hand_names" if head["form"] == "public" else "infoset_keys"
            rename = old_name if field == "hand_names" else old_key
            changed = sum(rename(n) != n for n in head[field])
            head[field] = [rename(n) for n in head[field]]
            np.savez_compressed(old, meta=np.frombuffer(json.dumps(head).encode(), np.uint8), policy=p)
        assert changed > 0, (ext, "the old names must differ from today's")
        back = cfrjax.load_policy(old, g)
        np.testing.assert_array_equal(np.asarray(back), np.asarray(pol), err_msg=f"{cfrjax.forms.form_name(g)} {ext}")
        w_old, w_new = cfrjax.warm_start(g, old), cfrjax.warm_start(g, new)
        np.testing.assert_array_equal(np.asarray(w_old.regret), np.asarray(w_new.regret))
        assert cli.main(["show", old, "P0|AsQs|"]) == 0           # `cfrjax show POLICY INFOSET` names it as printed now
        assert capsys.readouterr().out.splitlines()[0] == "P0|AsQs|  (player 0)"
    rows = strategy_table(tab, ptab)
    path = tmp_path / "s.csv"
    write_strategy_csv([dict(r, hand=old_name(r["hand"])) for r in rows], path)
    assert any(r["hand"] != old_name(r["hand"]) for r in rows)
    assert read_strategy_csv(path) == rows


# ----------------------------------------------------------------------------------------
# The stack as chips behind.


def _toml(tmp_path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return str(path)


def test_behind_builds_the_same_game_as_stack(tmp_path):
    """The shipped hunl_river.toml (`stack = 100`, pot 20) with `behind = 90` instead: the
    same spec and the same game, tabular and public, bit for bit (12 random hands each, for
    speed)."""
    shipped = os.path.join(os.path.dirname(cfrjax.__file__), "specs", "hunl_river.toml")
    text = open(shipped).read()
    assert "\nstack = 100 " in text
    other = _toml(tmp_path, "hunl_river", text.replace("\nstack = 100 ", "\nbehind = 90 "))
    a, b = load_poker_config(shipped, random_hands=12), load_poker_config(other, random_hands=12)
    assert a == b and hash(a) == hash(b) and (a.stack, b.stack, a.effective_stack, b.effective_stack) == (100, 100,
                                                                                                           90, 90)
    assert load_poker_config(shipped, random_hands=12, behind=90) == a          # an override replaces stack
    ta, tb = cfrjax.compile.compile_game(build_spec(a)), cfrjax.compile.compile_game(build_spec(b))
    assert ta.labels.fingerprint == tb.labels.fingerprint and ta.labels.infoset_keys == tb.labels.infoset_keys
    np.testing.assert_array_equal(np.asarray(ta.payoff), np.asarray(tb.payoff))
    pa, pb = build_public(a, hands="range"), build_public(b, hands="range")
    assert pa.labels.fingerprint == pb.labels.fingerprint
    for name in ("forest_fold_payoff", "forest_showdown_stake"):
        np.testing.assert_array_equal(np.asarray(getattr(pa, name)), np.asarray(getattr(pb, name)))


def test_behind_is_chips_behind(tmp_path):
    """`behind = 975` with pot 55 puts 975 chips behind (the root's all-in is 975); the old
    `stack = 972.5` meant the whole stack, half-pot included: 945 behind."""
    base = 'board = "Qs 7h 2c 9d 3s"\npot = 55\nrange0 = "AA"\nrange1 = "KK"\n[betting]\nbet = "a"\n'
    for key, allin in (("behind = 975", "all-in 975"), ("stack = 972.5", "all-in 945"), ("stack = 1002.5",
                                                                                          "all-in 975")):
        cfg = load_poker_config(_toml(tmp_path, "spot", base.replace("pot = 55", f"pot = 55\n{key}")))
        game = build_public(cfg, hands="range")
        assert game.labels.action_names[game.labels.node_codes.index("")] == ("check", allin), key
        assert game.labels.source["poker"]["behind"] == float(allin.split()[1])


def test_behind_errors_are_one_line(tmp_path, capsys):
    base = {"board": "Qs 7h 2c 9d 3s", "pot": 55}
    cases = [({"behind": 975, "stack": 1002.5}, "not both"), ({"behind": -1}, "behind -1.0 must be a finite"),
             ({"behind": float("inf")}, "behind inf must be a finite"),
             ({"behind": float("nan")}, "behind nan must be a finite"), ({"behind": "lots"}, "behind 'lots' is not")]
    for extra, needle in cases:
        with pytest.raises(PokerSpecError, match=needle):
            config_from_dict({**base, **extra})
    with pytest.raises(PokerSpecError, match="not both"):
        PokerSubgameSpec(board="Qs 7h 2c 9d 3s", pot=55, behind=975, stack=1002.5)
    path = _toml(tmp_path, "both", 'board = "Qs 7h 2c 9d 3s"\npot = 55\nbehind = 975\nstack = 1002.5\n'
                                   'range0 = "AA"\nrange1 = "KK"\n')
    assert cli.main(["solve", path, "--iterations", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cfrjax: error:") and "not both" in err[0], err
