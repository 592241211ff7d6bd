"""Native HUNL subgames: cards, ranges, tree shape and counts, payoffs, anchors, errors."""

import os

import numpy as np
import pytest

from cfrjax.games.poker import (
    COMBO_NAMES, COMBOS, PokerSpecError, PokerSubgameSpec, build_spec, card_id, combo_index, combo_str,
    count_paper_sizes, load_libratus_endgame, load_poker_toml, parse_board, parse_range, random_ranges,
    range_from_hands, subgame_deals)
from cfrjax.spec import CHANCE, TERMINAL, bfs_levels

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRATUS = "/work/shared/data/libratus-endgames"
RIVER = "Ks Js Th 7d 2c"
TURN = "Ks Js Th 7d"


# ----------------------------------------------------------------------------------------
# Helpers: an exact (float64) tree evaluator independent of the builder.


def _edge_weights(spec, sigma, who):
    """Probability of the edge into each node: chance, or sigma for parents owned by `who`."""
    n = spec.num_nodes
    w = np.ones(n)
    nz = np.flatnonzero(spec.parent >= 0)
    par = spec.parent[nz]
    ch = spec.kind[par] == CHANCE
    w[nz[ch]] = spec.chance_prob[nz[ch]]
    for p in who:
        own = spec.kind[par] == p
        w[nz[own]] = sigma[spec.infoset[par[own]], spec.action[nz[own]]]
    return w


def expected_value(spec, sigma):
    """Player 0's expected payoff when both play `sigma` ([I, max_actions])."""
    w = _edge_weights(spec, sigma, (0, 1))
    v = np.where(spec.kind == TERMINAL, spec.payoff, 0.0)
    for level in reversed(bfs_levels(spec.parent, 0)[1:]):
        np.add.at(v, spec.parent[level], w[level] * v[level])
    return v[0]


def best_response_value(spec, p, sigma):
    """Player p's best-response payoff against the opponent's part of `sigma`.

    Every information set of these trees lies on one depth, so resolving decisions
    level by level from the bottom is exact.
    """
    n = spec.num_nodes
    opp = 1 - p
    w = _edge_weights(spec, sigma, (opp,))
    levels = bfs_levels(spec.parent, 0)
    reach = np.ones(n)
    for level in levels[1:]:
        reach[level] = reach[spec.parent[level]] * w[level]
    sign = 1.0 if p == 0 else -1.0
    v = np.where(spec.kind == TERMINAL, sign * spec.payoff, 0.0)
    A = int(spec.infoset_num_actions.max())
    for level in reversed(levels[1:]):
        par = spec.parent[level]
        mine = spec.kind[par] == p
        np.add.at(v, par[~mine], w[level[~mine]] * v[level[~mine]])
        if mine.any():
            c = level[mine]
            cf = np.full((spec.num_infosets, A), -np.inf)
            iset, act = spec.infoset[spec.parent[c]], spec.action[c]
            cf[iset, act] = 0.0
            np.add.at(cf, (iset, act), reach[spec.parent[c]] * v[c])
            best = cf.argmax(1)
            take = act == best[iset]
            v[spec.parent[c[take]]] = v[c[take]]
    return v[0]


def _pure(spec, choose):
    """[I, A] pure strategy: `choose(action_names) -> index`."""
    A = int(spec.infoset_num_actions.max())
    sigma = np.zeros((spec.num_infosets, A))
    for i, names in enumerate(spec.action_names):
        sigma[i, choose(names)] = 1.0
    return sigma


def _passive(names):
    """Check when possible, otherwise call."""
    return names.index("check") if "check" in names else names.index("call")


def _child(spec, node, name):
    kids = np.flatnonzero(spec.parent == node)
    if spec.kind[node] == CHANCE:
        return kids[spec.action[kids] == name][0]
    a = spec.action_names[spec.infoset[node]].index(name)
    return kids[spec.action[kids] == a][0]


def _follow(spec, node, path):
    for step in path:
        node = _child(spec, node, step)
    return node


# ----------------------------------------------------------------------------------------
# Cards and ranges.


def test_card_and_combo_order_matches_libratus_readme():
    assert card_id("2s") == 0 and card_id("2h") == 1 and card_id("3s") == 4 and card_id("Ac") == 51
    # README (low card first): 2s2h, 2s2d, 2s2c, 2s3s, 2s3h, ..., 2sAc, 2h2d, 2h2c, ..., AdAc;
    # the same combos printed high card first.
    assert COMBO_NAMES[:5] == ("2s2h", "2s2d", "2s2c", "3s2s", "3h2s")
    assert COMBO_NAMES[50] == "Ac2s" and COMBO_NAMES[51:53] == ("2h2d", "2h2c")
    assert COMBO_NAMES[-1] == "AdAc" and len(COMBO_NAMES) == 1326
    assert combo_index("As", "Ks") == combo_index("Ks", "As")
    assert combo_str(combo_index("Ad", "Ac")) == "AdAc"
    assert np.all(COMBOS[:, 0] < COMBOS[:, 1])


def test_range_strings():
    def count(text, board=None):
        return int((parse_range(text, board) > 0).sum())

    assert count("AA") == 6 and count("AKs") == 4 and count("AKo") == 12 and count("AK") == 16
    assert count("22+") == 13 * 6
    assert count("T9s+") == 5 * 4                      # T9s, JTs, QJs, KQs, AKs
    assert count("A2s+") == 12 * 4                     # A2s..AKs
    assert count("A5s-A2s") == 4 * 4 and count("TT-77") == 4 * 6 and count("T9s-65s") == 5 * 4
    assert count("AsKh") == 1 and count("any") == 1326
    assert count("AA,KK,AKs,T9s+,22+,A5s-A2s,KQo") == 13 * 6 + 20 + 16 + 12   # AKs is inside T9s+
    # Card removal: the board holds Ks, Js, Th.
    assert count("KK", RIVER) == 3 and count("AKs", RIVER) == 3
    w = parse_range("AA:0.5,AsAh", RIVER)
    assert w[combo_index("As", "Ah")] == 1.0 and w[combo_index("Ad", "Ac")] == 0.5
    w = range_from_hands({"AsKh": 1.0, "QQ": 0.25}, RIVER)
    assert w.sum() == pytest.approx(1.0 + 6 * 0.25)
    a0, a1 = random_ranges(12, 0, parse_board(TURN))
    b0, b1 = random_ranges(12, 0, parse_board(TURN))
    np.testing.assert_array_equal(a0, b0)
    assert (a0 > 0).sum() == 12 and (a1 > 0).sum() == 12 and not np.any((a0 > 0) & (a1 > 0))


@pytest.mark.parametrize("make, match", [
    (lambda: PokerSubgameSpec(board="Ks Js Th 7d Ks", random_hands=5), "twice"),
    (lambda: PokerSubgameSpec(board="Ks Js Th 7d 1c", random_hands=5), "unknown card"),
    (lambda: PokerSubgameSpec(board="Ks Js Th 7d Xx", random_hands=5), "unknown card"),
    (lambda: PokerSubgameSpec(board=RIVER, range0="AsKs", range1="AA"), "no live hands"),
    (lambda: PokerSubgameSpec(board=RIVER, range0="AA", range1="KsKh,JsJh"), "no live hands"),
    (lambda: PokerSubgameSpec(board=RIVER, stack=-5, random_hands=5), "negative"),
    (lambda: PokerSubgameSpec(board=RIVER, bet_fractions=(0.5, 0.0), random_hands=5), "> 0"),
    (lambda: PokerSubgameSpec(board=RIVER, bet_fractions=(-1.0,), random_hands=5), "> 0"),
    (lambda: PokerSubgameSpec(board=RIVER, raise_fractions=(0.0,), raise_cap=1, random_hands=5), "> 0"),
    (lambda: PokerSubgameSpec(board=RIVER, range0="AZs", range1="AA"), "unknown rank"),
    (lambda: PokerSubgameSpec(board=RIVER, range0="AA:-1", range1="KK"), "non-negative"),
    (lambda: PokerSubgameSpec(board="Ks Js", random_hands=5), "flop"),
    (lambda: build_spec(PokerSubgameSpec(board="Ks Js Th", random_hands=5)), "no tabular form.*public"),
    (lambda: PokerSubgameSpec(board=RIVER, random_hands=5, range0="AA"), "not both"),
])
def test_bad_input_raises_clear_errors(make, match):
    with pytest.raises(PokerSpecError, match=match):
        make()
    assert issubclass(PokerSpecError, ValueError)


def test_bad_toml(tmp_path):
    good = {"board": f'"{RIVER}"', "pot": "20", "stack": "100", "bet_fractions": "[0.5, 1.0]",
            "raise_cap": "0", "random_hands": "10", "seed": "0"}
    cases = [
        ({"board": '"Ks Js Th 7d 7d"'}, "twice"),
        ({"board": '"Ks Js Th 7d 2x"'}, "unknown card"),
        ({"stack": "-100"}, "negative"),
        ({"bet_fractions": "[0.5, 0]"}, "> 0"),
        ({"sede": "1"}, "unknown key"),
        ({"random_hands": None, "seed": None, "player0": '"AsKs"', "player1": '"QQ"'}, "no live hands"),
    ]
    for i, (change, match) in enumerate(cases):
        fields = {**good, **change}
        path = tmp_path / f"bad{i}.toml"
        path.write_text("".join(f"{k} = {v}\n" for k, v in fields.items() if v is not None))
        with pytest.raises(PokerSpecError, match=match):
            load_poker_toml(path)
    path = tmp_path / "good.toml"
    path.write_text("".join(f"{k} = {v}\n" for k, v in good.items()))
    assert count_paper_sizes(load_poker_toml(path))["infosets"] == 2 * 10 * 15


# ----------------------------------------------------------------------------------------
# Tree shape and counts.


def _distinct_paper_infosets(spec, cfg):
    """Independent count: distinct (player, own hand, public action path) over non-chance nodes (river)."""
    h0, h1, _ = subgame_deals(cfg)
    path = {0: ()}
    deal = {0: -1}
    seen = set()
    for level in bfs_levels(spec.parent, 0)[1:]:
        for node in level.tolist():
            par = int(spec.parent[node])
            deal[node] = int(spec.action[node]) if par == 0 else deal[par]
            path[node] = () if par == 0 else path[par] + (int(spec.action[node]),)
            if spec.kind[node] != CHANCE:
                d = deal[node]
                seen.add((0, int(h0[d]), path[node]))
                seen.add((1, int(h1[d]), path[node]))
    return len(seen)


def test_river_counts_formula():
    cfg = PokerSubgameSpec(board=RIVER, pot=20, stack=100, bet_fractions=(0.5, 1.0), raise_cap=0,
                           random_hands=8, seed=3)
    spec = build_spec(cfg)
    c = count_paper_sizes(spec)
    assert c["public_nodes_per_deal"] == 15
    assert c["infosets"] == 2 * 8 * 15 == _distinct_paper_infosets(spec, cfg)
    assert c["states"] == c["deals"] * 15 and c["nodes"] == 1 + c["deals"] * 15
    assert spec.num_infosets == 2 * 8 * 3                # 3 decision public nodes per player
    np.testing.assert_array_equal(np.diff(spec.parent[1:]) >= 0, True)   # breadth-first layout


def test_hunl_river_toml():
    spec = load_poker_toml(os.path.join(ROOT, "games", "hunl_river.toml"))
    c = count_paper_sizes(spec)
    assert c["infosets"] == 3000 == 2 * 100 * 15
    assert c["states"] == 15 * c["deals"]
    # Deals: non-conflicting pairs of two disjoint 100-hand lists (the paper's seed gave 9,161).
    assert 9000 < c["deals"] < 9400
    assert spec.name == "hunl_river"
    assert spec.action_names[0] == ("check", "bet 10", "bet 20")


def test_hunl_turn_toml_structure():
    spec = load_poker_toml(os.path.join(ROOT, "games", "hunl_turn.toml"))
    c = count_paper_sizes(spec)
    # 10 turn-street public nodes + 44 river cards x 5 continuations x 15.
    assert c["public_nodes_per_deal"] == 10 + 44 * 5 * 15
    assert c["states"] == c["deals"] * 3310
    # Paper: 131 deals, 83,040 Infosets on 433,610 States; our seed-0 draw reproduces them.
    assert c["deals"] == 131 and c["states"] == 433_610 and c["infosets"] == 83_040
    assert c["infosets"] == 2 * 12 * (10 + 46 * 5 * 15)   # every (hand, river card) pair reachable


def test_turn_structure_small():
    cfg = PokerSubgameSpec(board=TURN, random_hands=3, seed=1)
    spec = build_spec(cfg)
    h0, h1, prob = subgame_deals(cfg)
    D = h0.size
    chance = np.flatnonzero(spec.kind == CHANCE)
    assert chance.size == 1 + 5 * D                       # root + 5 river deals per deal
    for node in chance[1:]:
        kids = np.flatnonzero(spec.parent == node)
        assert kids.size == 44
        np.testing.assert_allclose(spec.chance_prob[kids], 1 / 44)
    # Per deal: 10 turn-street non-chance nodes, 5 x 44 river subtrees of 15 nodes.
    assert count_paper_sizes(spec)["states"] == D * (10 + 5 * 44 * 15)
    # River cards in the keys are live: not on the board, not in either player's hand.
    board = set(TURN.split())
    for key in spec.infoset_keys:
        player, hand, seq = key.split("|")
        if "/" in seq:
            card = seq.split("/")[1]
            assert card not in board and card not in (hand[:2], hand[2:])
    # Each deal's river chance nodes carry exactly the 44 cards held by nobody.
    deal0 = int(np.flatnonzero(spec.parent == 0)[0])
    cc = _follow(spec, deal0, ["check", "check"])
    cards = set()
    for kid in np.flatnonzero(spec.parent == cc):
        key = spec.infoset_keys[spec.infoset[kid]]
        cards.add(key.split("|")[2].split("/")[1])
    held = {COMBO_NAMES[h0[0]][:2], COMBO_NAMES[h0[0]][2:], COMBO_NAMES[h1[0]][:2], COMBO_NAMES[h1[0]][2:]}
    assert len(cards) == 44 and not cards & (held | board)


# ----------------------------------------------------------------------------------------
# Payoffs.


def test_river_payoffs_sunk_cost():
    # P0 holds AsAh (pair), P1 2s2h (trips): P1 wins every showdown.
    spec = build_spec(PokerSubgameSpec(board=RIVER, range0="AsAh", range1="2s2h"))
    deal = int(np.flatnonzero(spec.parent == 0)[0])

    def pay(*path):
        node = _follow(spec, deal, path)
        assert spec.kind[node] == TERMINAL
        return spec.payoff[node]

    assert pay("check", "check") == -10
    assert pay("bet 10", "call") == -20 and pay("bet 20", "call") == -30
    assert pay("bet 10", "fold") == 10 and pay("bet 20", "fold") == 10
    assert pay("check", "bet 10", "fold") == -10 and pay("check", "bet 20", "call") == -30


def test_turn_payoffs_sunk_cost():
    spec = build_spec(PokerSubgameSpec(board=TURN, range0="AsAh", range1="2s2h"))
    deal = int(np.flatnonzero(spec.parent == 0)[0])
    turn_fold = _follow(spec, deal, ["bet 10", "fold"])
    assert spec.payoff[turn_fold] == 10                                  # turn fold: half-pot
    chance = _follow(spec, deal, ["bet 10", "call"])
    assert spec.kind[chance] == CHANCE
    for r in range(44):
        river = _child(spec, chance, r)
        # River fold also loses the folder's turn chips (10): 10 + 10.
        assert spec.payoff[_follow(spec, river, ["check", "bet 20", "fold"])] == -20
        assert spec.payoff[_follow(spec, river, ["bet 40", "fold"])] == 20
        assert abs(spec.payoff[_follow(spec, river, ["bet 40", "call"])]) in (60, 0)
    assert spec.action_names[spec.infoset[_child(spec, chance, 0)]] == ("check", "bet 20", "bet 40")


def test_all_in_handling_and_dedup():
    # Pot 20, stack 30: 20 behind. Fractions 0.5, 1, 2 -> 10, 20 (all-in), 40 -> all-in again.
    cfg = PokerSubgameSpec(board=TURN, pot=20, stack=30, bet_fractions=(0.5, 1.0, 2.0),
                           raise_fractions=(1.0,), raise_cap=2, range0="AsAh", range1="2s2h")
    spec = build_spec(cfg)
    deal = int(np.flatnonzero(spec.parent == 0)[0])
    assert spec.action_names[spec.infoset[deal]] == ("check", "bet 10", "all-in 20")
    facing = _follow(spec, deal, ["bet 10"])
    assert spec.action_names[spec.infoset[facing]] == ("fold", "call", "all-in 20")
    assert spec.action_names[spec.infoset[_follow(spec, facing, ["all-in 20"])]] == ("fold", "call")
    # All-in called on the turn: the river is dealt, then straight to showdown (no betting).
    chance = _follow(spec, deal, ["all-in 20", "call"])
    kids = np.flatnonzero(spec.parent == chance)
    assert kids.size == 44 and np.all(spec.kind[kids] == TERMINAL)
    assert set(np.abs(spec.payoff[kids])) <= {30.0, 0.0}
    # After 10 is called on the turn, 10 remain: every river bet is the all-in 10.
    river = _child(spec, _follow(spec, deal, ["bet 10", "call"]), 0)
    assert spec.action_names[spec.infoset[river]] == ("check", "all-in 10")


# ----------------------------------------------------------------------------------------
# Analytic anchors, checked with the exact evaluator above.


def test_river_nuts_anchor():
    # Board Ks Js Th 7d 2c: AQ (broadway) is the nuts. P1 holds anything but AQ.
    not_aq = np.ones(1326)
    not_aq[parse_range("AQ") > 0] = 0
    cfg = PokerSubgameSpec(board=RIVER, range0="AQ", range1=not_aq)
    spec = build_spec(cfg)
    # P1 cannot win: every terminal where P0 loses chips is a P0 fold.
    losing = np.flatnonzero((spec.kind == TERMINAL) & (spec.payoff < 0))
    for node in losing[:: max(1, losing.size // 500)]:
        par = spec.parent[node]
        assert spec.kind[par] == 0 and spec.action_names[spec.infoset[par]][spec.action[node]] == "fold"
    showdown_min = spec.payoff[(spec.kind == TERMINAL) & (spec.payoff > 0)].min()
    assert showdown_min == 10
    always_check = _pure(spec, lambda names: 0)
    assert expected_value(spec, always_check) == pytest.approx(10.0, abs=1e-9)
    # Game value is exactly the half-pot: P0 check-call guarantees 10, P1 check-fold concedes only 10.
    check_call = _pure(spec, _passive)
    check_fold = _pure(spec, lambda names: 0)
    assert -best_response_value(spec, 1, check_call) == pytest.approx(10.0, abs=1e-9)
    assert best_response_value(spec, 0, check_fold) == pytest.approx(10.0, abs=1e-9)


def test_river_nuts_anchor_with_ties():
    # P1 may hold AQ too: those deals split. Always-check value = 10 * P(P1 not AQ).
    cfg = PokerSubgameSpec(board=RIVER, range0="AQ", range1="AQ,KQ,QQ,22")
    spec = build_spec(cfg)
    h0, h1, prob = subgame_deals(cfg)
    tie = np.array([{COMBO_NAMES[h][0], COMBO_NAMES[h][2]} == {"A", "Q"} for h in h1])
    value = expected_value(spec, _pure(spec, lambda names: 0))
    assert value == pytest.approx(10.0 * prob[~tie].sum(), abs=1e-12)
    assert 0 < prob[tie].sum() < 1


def test_turn_quads_anchor():
    # Board 7s 7d 7h Ks, P0 holds 7c 2d: quads beat every P1 hand on every river.
    cfg = PokerSubgameSpec(board="7s 7d 7h Ks", range0="7c2d", range1="AA,QQ,AQ")
    spec = build_spec(cfg)
    assert np.all(spec.payoff[(spec.kind == TERMINAL) & (spec.payoff < 0)] <= -10)
    check_call = _pure(spec, _passive)
    check_fold = _pure(spec, lambda names: 0)
    assert -best_response_value(spec, 1, check_call) == pytest.approx(10.0, abs=1e-9)
    assert best_response_value(spec, 0, check_fold) == pytest.approx(10.0, abs=1e-9)


# ----------------------------------------------------------------------------------------
# Libratus endgames.


@pytest.mark.skipif(not os.path.isdir(LIBRATUS), reason="Libratus endgames not available")
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_libratus_endgames_top5(k):
    cfg = load_libratus_endgame(os.path.join(LIBRATUS, f"subgame{k}.txt"), top_n=5)
    assert cfg.street == ("turn" if k <= 2 else "river")
    spec = build_spec(cfg)                                 # validates
    c = count_paper_sizes(spec)
    h = spec.source["poker"]["hands"]
    assert h == [5, 5]
    if k == 4:                                             # 57 public nodes (paper: 36,098,784 = 633,312 x 57)
        assert c["public_nodes_per_deal"] == 57 and c["infosets"] == 10 * 57
        nact = spec.infoset_num_actions
        # Paper: 19,741 / 27,497 sequences at full range = 1 + hands x 28.
        assert [int(nact[spec.infoset_player == p].sum()) for p in (0, 1)] == [5 * 28, 5 * 28]
    if k == 3:                                             # 93 public nodes (93,168,610 = 1 + 1,001,813 x 93)
        assert c["public_nodes_per_deal"] == 93 and c["infosets"] == 10 * 93


@pytest.mark.skipif(not os.path.isdir(LIBRATUS), reason="Libratus endgames not available")
def test_libratus_full_range_deal_counts():
    # Full-range deal counts of the paper (building the trees is left to benchmarks).
    for k, deals in ((3, 1_001_813), (4, 633_312)):
        cfg = load_libratus_endgame(os.path.join(LIBRATUS, f"subgame{k}.txt"))
        assert subgame_deals(cfg)[0].size == deals


def test_toml_overrides_replace_keys_inside_tables():
    from cfrjax.games.poker import load_poker_toml
    small = load_poker_toml("games/hunl_river.toml", random_hands=5)
    assert small.num_nodes < 137_716
    ranged = load_poker_toml("games/hunl_river.toml", range0="AA,KK", range1="QQ,JJ")
    assert ranged.num_nodes < small.num_nodes * 10
    tabled = load_poker_toml("games/hunl_river.toml", ranges={"random_hands": 5})
    assert tabled.num_nodes == small.num_nodes


def test_starting_pot_of_each_form():
    """Poker answers are reported in % of the starting pot: it is read back from the game
    in every form, and is None for a game that is not a poker subgame."""
    import cfrjax
    from cfrjax.games.poker import starting_pot
    from cfrjax.games.poker.public_tree import build_public

    cfg = PokerSubgameSpec(board=RIVER, pot=30, stack=100, random_hands=2, seed=0)
    spec = build_spec(cfg)
    assert starting_pot(spec) == 30.0
    assert starting_pot(cfrjax.compile.compile_game(spec)) == 30.0
    assert starting_pot(build_public(cfg)) == 30.0
    assert starting_pot(cfrjax.games.openspiel.spec_from_openspiel("kuhn_poker")) is None


def test_percent_of_the_pot_is_the_poker_layers():
    """The solver reports chips; the poker layer converts to and from % of the pot (30 here)."""
    import dataclasses

    import cfrjax
    from cfrjax.games.poker.pot import pct_of_pot, target_chips
    from cfrjax.games.poker.public_tree import build_public

    game = build_public(PokerSubgameSpec(board=RIVER, pot=30, stack=100, random_hands=2, seed=0))
    assert pct_of_pot(game, 1.5) == 5.0 and target_chips("5%", game) == 1.5 and target_chips("0.25", game) == 0.25
    kuhn = cfrjax.load_game("kuhn_poker")
    assert pct_of_pot(kuhn, 1.5) is None and target_chips("0.25", kuhn) == 0.25
    with pytest.raises(ValueError, match="has no pot"):
        target_chips("2%", kuhn)
    assert not any("pot" in f.name for f in dataclasses.fields(cfrjax.Trace))   # the generic trace: chips only
