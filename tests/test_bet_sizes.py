"""Bet sizes as the solvers write them (`cfrjax.games.poker.betting`, `PokerSubgameSpec(betting=...)`).

Each size kind on a tiny tree with the actions at named nodes worked out by hand below
(postflop-solver's definitions: whole chips, half away from zero; "pot after calling"
= the starting pot plus twice the larger commitment). Trees come from the tabular
builder with one deal (`build_spec`), and for one spot from the public form as well.
"""

import pytest

from cfrjax.compile import compile_game
from cfrjax.games.poker import BetSizes, PokerSpecError, PokerSubgameSpec, build_spec, load_poker_config
from cfrjax.games.poker.public_tree import build_public

RIVER = "Ks Js Th 7d 2c"
TURN = "Ks Js Th 7d"
DEAL = dict(range0="AsAh", range1="2s2h")


def actions(cfg) -> dict:
    """Public history -> action names, from the tabular game of one deal."""
    spec = build_spec(cfg)
    return {key.split("|", 2)[2]: tuple(names) for key, names in zip(spec.infoset_keys, spec.action_names)}


def river(betting, pot=20, stack=110):
    return actions(PokerSubgameSpec(board=RIVER, pot=pot, stack=stack, betting=betting, **DEAL))


# ----------------------------------------------------------------------------------------
# One size kind at a time.


def test_pot_fractions_round_to_whole_chips():
    a = river({"bet": "33%, 75%", "raise": "60%"})       # pot 20, 100 behind
    # Bets: 0.33 * 20 = 6.6 -> 7; 0.75 * 20 = 15.
    assert a[""] == ("check", "bet 7", "bet 15")
    # Facing 7: pot after calling 20 + 2*7 = 34; 0.6 * 34 = 20.4 -> 20; raise to 7 + 20 = 27.
    assert a["b7"] == ("fold", "call", "raise 27")
    # Facing 27: pot after calling 20 + 54 = 74; 0.6 * 74 = 44.4 -> 44; to 27 + 44 = 71.
    assert a["b7.b27"] == ("fold", "call", "raise 71")
    # Facing 71: 20 + 142 = 162; 0.6 * 162 = 97.2 -> 97; 71 + 97 = 168 > 100 behind: all-in.
    assert a["b7.b27.b71"] == ("fold", "call", "all-in 100")
    assert a["b7.b27.b71.b100"] == ("fold", "call")      # nothing left to raise
    # Halves round away from zero: 0.25 * 10 = 2.5 -> 3 (not to even).
    assert river({"bet": "25%"}, pot=10, stack=105)[""] == ("check", "bet 3")


def test_previous_bet_multiples_and_the_min_raise():
    a = river({"bet": "50%", "raise": "2.5x"})
    assert a[""] == ("check", "bet 10")                  # 0.5 * 20
    assert a["b10"] == ("fold", "call", "raise 25")      # 2.5 * 10
    assert a["b10.b25"] == ("fold", "call", "raise 63")  # 2.5 * 25 = 62.5 -> 63
    assert a["b10.b25.b63"] == ("fold", "call", "all-in 100")  # 2.5 * 63 = 157.5 > 100
    # 1.5x of 10 = 15 is below the min-raise 10 + (10 - 0) = 20: raised to 20.
    # Facing 20 (player 0 has 10 in): 1.5 * 20 = 30, min-raise 20 + 10 = 30.
    b = river({"bet": "50%", "raise": "1.5x"})
    assert b["b10"] == ("fold", "call", "raise 20")
    assert b["b10.b20"] == ("fold", "call", "raise 30")


def test_geometric_sizes():
    cfg = PokerSubgameSpec(board=TURN, pot=20, stack=110, betting={"bet": "e, 50%", "raise": "e"}, **DEAL)
    a = actions(cfg)
    # Turn, 2 streets left, SPR = 100 / 20 = 5: r = (sqrt(2*5 + 1) - 1) / 2 = 1.1583;
    # 20 * 1.1583 = 23.17 -> 23.
    assert a[""] == ("check", "bet 10", "bet 23")
    # River after 23 is called (46 in, 77 behind, pot 66): 1 street left, r = SPR = 77/66,
    # 66 * 77/66 = 77: all-in.  Half pot: 33.
    assert a["b23.c/2c/"] == ("check", "bet 33", "all-in 77")
    # A raise facing the turn's first bet spans 2 - 1 + 1 = 2 streets: pot after calling
    # 40, SPR 90/40 = 2.25, r = (sqrt(5.5) - 1) / 2 = 0.6726; 40 * 0.6726 = 26.9 -> 27;
    # to 10 + 27 = 37.
    assert a["b10"] == ("fold", "call", "raise 37")
    # Facing that raise, 2 - 2 + 1 = 1 street: r = SPR = 63/94; 94 * 63/94 = 63 -> 37 + 63 = 100.
    assert a["b10.b37"] == ("fold", "call", "all-in 100")
    # e50%: r capped at 0.5 (river, SPR 5: r = 5); "2e" on the river spans 2 streets:
    # r = (sqrt(11) - 1) / 2 = 1.1583 -> 23 as on the turn.
    assert river({"bet": "e50%, 2e"})[""] == ("check", "bet 10", "bet 23")


def test_allin_size():
    a = river({"bet": "50%, a", "raise": "a"})
    assert a[""] == ("check", "bet 10", "all-in 100")
    assert a["b10"] == ("fold", "call", "all-in 100")
    assert a["b100"] == ("fold", "call")
    # 300% of 20 = 60 > 50 behind: capped at all-in and merged with "a".
    assert river({"bet": "300%, a"}, stack=60)[""] == ("check", "all-in 50")


def test_donk_sizes():
    cfg = PokerSubgameSpec(board=TURN, pot=20, stack=110, betting={"bet": "50%", "river": {"donk": "75%"}}, **DEAL)
    a = actions(cfg)
    # Player 0 checked, player 1 bet 10, player 0 called: player 0 opens the river into the
    # aggressor: donk 0.75 * 40 = 30 instead of the half pot (20).
    assert a["k.b10.c/2c/"] == ("check", "bet 30")
    # Player 1 called player 0's bet: no donk; half of 40 = 20.  Checked through: 10.
    assert a["b10.c/2c/"] == ("check", "bet 20")
    assert a["k.k/2c/"] == ("check", "bet 10")
    assert a["k.b10.c/2c/k"] == ("check", "bet 20")    # player 1 keeps its bet sizes
    # Both forms take it: the public form's nodes carry the same names.
    g = build_public(cfg, hands="range")
    public = {code: tuple(names) for code, _, _, names in g.decision_nodes()}
    assert all(public[k] == v for k, v in a.items())


def test_add_allin_threshold():
    bet = {"bet": "50%", "raise": "2.5x"}
    # 50 behind.  At the root all-in is 50 > 1.5 * 20 = 30 pots: not added.  Facing 10:
    # 50 <= 10 + 1.5 * 40 = 70: all-in added next to the 2.5x raise (25).
    a = river({**bet, "add_allin_threshold": 1.5}, stack=60)
    assert a[""] == ("check", "bet 10")
    assert a["b10"] == ("fold", "call", "raise 25", "all-in 50")
    assert river(bet, stack=60)["b10"] == ("fold", "call", "raise 25")
    # Threshold 3: 50 <= 3 * 20 = 60 at the root too.
    assert river({**bet, "add_allin_threshold": 3}, stack=60)[""] == ("check", "bet 10", "all-in 50")


def test_force_allin_threshold():
    # 50 behind, threshold 0.5 of the pot after the call.  Bet 10: pot 40 after the call,
    # 40 left; 50 <= 10 + 0.5 * 40 = 30? no.  Bet 20: pot 60, 30 left; 50 <= 20 + 30: all-in.
    a = river({"bet": "50%, 100%", "force_allin_threshold": 0.5}, stack=60)
    assert a[""] == ("check", "bet 10", "all-in 50")
    assert river({"bet": "50%, 100%"}, stack=60)[""] == ("check", "bet 10", "bet 20")


def test_merging_threshold():
    # 10, 11, 20 (0.5, 0.55, 1 pot).  From the largest: 20 stays; 11: (1 + 1)/(1 + 0.55)
    # = 1.29 >= 1.1 stays; 10: (1 + 0.55)/(1 + 0.5) = 1.033 < 1.1: merged into 11.
    a = river({"bet": "50%, 55%, 100%", "merging_threshold": 0.1})
    assert a[""] == ("check", "bet 11", "bet 20")
    assert river({"bet": "50%, 55%, 100%"})[""] == ("check", "bet 10", "bet 11", "bet 20")


def test_per_street_and_player_layers():
    cfg = PokerSubgameSpec(board=TURN, pot=20, stack=110, betting={
        "bet": "50%", "ip": {"bet": "100%"}, "river": {"bet": "25%", "ip": {"bet": "a"}}}, **DEAL)
    a = actions(cfg)
    assert a[""] == ("check", "bet 10")                    # turn oop: [betting]
    assert a["k"] == ("check", "bet 20")                   # turn ip: [betting.ip]
    assert a["k.k/2c/"] == ("check", "bet 5")              # river oop: [betting.river]
    assert a["k.k/2c/k"] == ("check", "all-in 100")        # river ip: [betting.river.ip]
    # The same cells written another way are the same (hashable) configuration.
    other = PokerSubgameSpec(board=TURN, pot=20, stack=110, betting={
        "turn": {"oop": {"bet": "50%"}, "ip": {"bet": "100%"}}, "river": {"oop": {"bet": "25%"}, "ip": {"bet": "a"}},
        "flop": {"bet": "50%", "ip": {"bet": "100%"}}}, **DEAL)
    assert other == cfg and hash(other) == hash(cfg) and cfg.raise_cap is None
    assert PokerSubgameSpec(board=RIVER, **DEAL).raise_cap == 0  # the fractions keep their default


# ----------------------------------------------------------------------------------------
# The old keys, the spec file, the recorded settings.


def test_old_keys_and_equivalent_strings_give_the_same_game():
    old = PokerSubgameSpec(board=TURN, pot=20, stack=110, bet_fractions=(0.5, 1.0), raise_fractions=(1.0, "allin"),
                           raise_cap=1, **DEAL)
    new = PokerSubgameSpec(board=TURN, pot=20, stack=110, betting={"bet": "50%, 100%", "raise": "100%, a"},
                           raise_cap=1, **DEAL)
    assert compile_game(build_spec(old)).labels.fingerprint == compile_game(build_spec(new)).labels.fingerprint
    assert build_public(old, hands="range").labels.fingerprint == build_public(new, hands="range").labels.fingerprint
    # Where the fractions give fractional chips, the strings round: another game.
    odd = PokerSubgameSpec(board=RIVER, bet_fractions=(0.33,), **DEAL)
    assert actions(odd)[""] == ("check", "bet 6.6")
    assert river({"bet": "33%"})[""] == ("check", "bet 7")


def test_spec_file_and_meta(tmp_path):
    path = tmp_path / "spot.toml"
    path.write_text(f'board = "{TURN}"\npot = 20\nstack = 110\nrange0 = "AsAh"\nrange1 = "2s2h"\n'
                    '[betting]\nbet = "50%, 100%"\nraise = "2.5x"\nadd_allin_threshold = 1.5\n'
                    '[betting.river.ip]\nbet = "33%, a"\n[betting.river]\ndonk = "50%"\n')
    cfg = load_poker_config(path)
    assert cfg == PokerSubgameSpec(board=TURN, pot=20, stack=110, name="spot", **DEAL, betting={
        "bet": "50%, 100%", "raise": "2.5x", "add_allin_threshold": 1.5,
        "river": {"ip": {"bet": "33%, a"}, "donk": "50%"}})
    meta = build_spec(cfg).source["poker"]
    assert meta["raise_cap"] is None and meta["bet_fractions"] is None
    assert meta["betting"]["river"]["ip"] == {"bet": "33%, a", "raise": "2.5x"}
    assert meta["betting"]["turn"]["oop"] == {"bet": "50%, 100%", "raise": "2.5x"} and "flop" not in meta["betting"]
    assert meta["betting"]["river"]["donk"] == "50%" and meta["betting"]["add_allin_threshold"] == 1.5
    assert build_public(cfg, hands="range").labels.source["poker"]["betting"] == meta["betting"]
    # The recorded sizes read back as the same rules.
    again = BetSizes.parse({**{k: meta["betting"][k] for k in ("add_allin_threshold", "force_allin_threshold",
                                                              "merging_threshold")},
                            **{s: meta["betting"][s] for s in ("turn", "river")},
                            "flop": {p: meta["betting"]["turn"][p] for p in ("oop", "ip")}})
    assert again == cfg.betting


# ----------------------------------------------------------------------------------------
# Errors: one line, naming the token.


@pytest.mark.parametrize("betting, match", [
    ({"bet": "33%, 7q"}, r"betting: bet sizes \"33%, 7q\": unknown size '7q'; use N% \(pot fraction\), Nx"),
    ({"river": {"ip": {"bet": "50%, 0%"}}}, "betting.river.ip: bet sizes \"50%, 0%\": size '0%' must be positive"),
    ({"bet": "-30%"}, "size '-30%' must be positive"),
    ({"bet": "2.5x"}, "size '2.5x' .* applies to raises only"),
    ({"raise": "1x"}, "size '1x': the multiple must be > 1"),
    ({"raise": "2.7e"}, "size '2.7e': the streets of a geometric size are a whole number"),
    ({"bet": "e50"}, "unknown size 'e50'"),
    ({"bet": "50%,,75%"}, "empty size"),
    ({"bet": "inf%"}, "unknown size 'inf%'"),
    ({"bet": "+42%"}, "unknown size '\\+42%'"),
    ({"bet": 0.5}, "betting: bet sizes: 0.5 is not a size string"),
    ({"bets": "50%"}, r"betting: unknown key\(s\) \['bets'\]"),
    ({"river": {"mid": {"bet": "50%"}}}, r"betting.river: unknown key\(s\) \['mid'\]"),
    ({"oop": {"donk": "50%"}}, r"betting.oop: unknown key\(s\) \['donk'\]"),
    ({"flop": {"donk": "50%"}}, "betting.flop: unknown key"),
    ({"add_allin_threshold": -1}, "betting.add_allin_threshold: -1 must be a finite number >= 0"),
    ({"merging_threshold": "x"}, "betting.merging_threshold: 'x' is not a number"),
])
def test_errors_are_one_line(betting, match):
    with pytest.raises(PokerSpecError, match=match) as e:
        PokerSubgameSpec(board=RIVER, betting=betting, **DEAL)
    assert "\n" not in str(e.value)


def test_errors_in_spec_files(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(f'board = "{RIVER}"\n[betting]\nbet = "50%"\nbet_fractions = [0.5]\n')
    with pytest.raises(PokerSpecError, match="not both"):
        load_poker_config(path)
    path.write_text(f'board = "{RIVER}"\n[betting.river.ip]\nbet = "33%, 7q"\n')
    with pytest.raises(PokerSpecError, match=f"{path}: betting.river.ip: bet sizes \"33%, 7q\": unknown size '7q'"):
        load_poker_config(path)
    path.write_text(f'board = "{RIVER}"\nbet = "50%"\n')
    with pytest.raises(PokerSpecError, match=r"unknown key\(s\) \['bet'\].*go in \[betting\]"):
        load_poker_config(path)


def test_rounding_and_empty_lists():
    from cfrjax.games.poker.betting import _round
    assert [_round(x) for x in (0.5, 1.5, 2.5, 2.4999999999999996, 62.5, 7.0)] == [1, 2, 3, 2, 63, 7]
    # A list given nowhere is empty (no bets / no raises); a trailing comma is allowed.
    assert BetSizes.parse({}).bets == ((),) * 6 and BetSizes.parse({"bet": ""}) == BetSizes.parse({})
    assert BetSizes.parse({"bet": "50%, a,"}) == BetSizes.parse({"bet": "a, 50%"})
    assert river({})[""] == ("check",) and river({"bet": "50%"})["b10"] == ("fold", "call")
