"""Loader for the released Libratus endgames (`subgame{1..4}.txt`).

File format (see the data set's README): `-round 3|4` (turn / river), `-board` (card
string), `-pot` (total pot, each player put in half), `-reach` followed by 2 x 1,326
reach probabilities in combo order (`cards.COMBOS`): the first 1,326 for the out of
position player (player 0, first to act), the rest for the button (player 1).

Bet abstraction (chosen to reproduce the paper's sizes for endgames 3 and 4, i.e.
57 and 93 public nodes per deal, 96,159 / 194,556 Infosets, 36,098,784 States for
endgame 4): a first bet of {0.5, 1, all-in} x pot, raises of {1, all-in} x pot
(measured after calling, see `subgame.py`), no raise cap (the stacks end the raising),
stacks of 20,000 chips per player at the start of the hand (200 big blinds of 100).
A player's range is its reach vector (card removal against the board applied); the
deal distribution is proportional to reach0 * reach1 over non-conflicting pairs.
"""

from __future__ import annotations

import os

import numpy as np

from cfrjax.games.poker.cards import NUM_COMBOS, PokerSpecError, board_str, parse_board
from cfrjax.games.poker.ranges import top_n as _top_n
from cfrjax.games.poker.ranges import weights_from_array
from cfrjax.games.poker.config import ALLIN, PokerSubgameSpec

LIBRATUS_STACK = 20000.0
LIBRATUS_BET_FRACTIONS = (0.5, 1.0, ALLIN)
LIBRATUS_RAISE_FRACTIONS = (1.0, ALLIN)
LIBRATUS_RAISE_CAP = None


def read_libratus_file(path: str | os.PathLike) -> dict:
    """Parse one endgame file: `{"round": int, "board": str, "pot": float, "reach": [2, 1326]}`."""
    path = os.fspath(path)
    fields: dict[str, list[str]] = {}
    key = None
    with open(path) as f:
        for tok in f.read().split():
            if tok.startswith("-") and tok[1:2].isalpha():
                key = tok[1:]
                fields[key] = []
            elif key is None:
                raise PokerSpecError(f"{path}: expected a '-round', '-board', '-pot' or '-reach' field first, got {tok!r}")
            else:
                fields[key].append(tok)
    for k in ("round", "board", "pot", "reach"):
        if k not in fields:
            raise PokerSpecError(f"{path}: missing field -{k}")
    try:
        rnd = int(fields["round"][0])
        pot = float(fields["pot"][0])
        reach = np.array([float(x) for x in fields["reach"]], dtype=np.float64)
    except (ValueError, IndexError) as e:
        raise PokerSpecError(f"{path}: cannot read the numbers: {e}") from None
    if reach.size != 2 * NUM_COMBOS:
        raise PokerSpecError(f"{path}: -reach has {reach.size} values, expected {2 * NUM_COMBOS}")
    board = parse_board("".join(fields["board"]))
    expect = {3: 4, 4: 5}.get(rnd)
    if expect is None or board.size != expect:
        raise PokerSpecError(f"{path}: round {rnd} with a {board.size}-card board; expected round 3 (4 cards) or 4 (5 cards)")
    return {"round": rnd, "board": board_str(board), "pot": pot, "reach": reach.reshape(2, NUM_COMBOS)}


def load_libratus_endgame(path: str | os.PathLike, top_n: int | None = None, **overrides) -> PokerSubgameSpec:
    """A `PokerSubgameSpec` for one Libratus endgame file.

    Args:
      path: a `subgameN.txt` file.
      top_n: keep only each player's `top_n` live hands of highest reach (ties: lower
        combo index), for small test instances; `None` keeps every hand with reach > 0.
      **overrides: replace config fields (e.g. `stack`, `bet_fractions`, `raise_cap`).
    """
    data = read_libratus_file(path)
    board = parse_board(data["board"])
    ranges = []
    for p in range(2):
        w = weights_from_array(data["reach"][p], board, f"{os.fspath(path)}: player {p} reach")
        if top_n is not None:
            if int(top_n) < 1:
                raise PokerSpecError(f"top_n={top_n} must be >= 1")
            w = _top_n(w, int(top_n))
        ranges.append(w)
    name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    kw = dict(
        board=data["board"], pot=data["pot"], stack=LIBRATUS_STACK,
        bet_fractions=LIBRATUS_BET_FRACTIONS, raise_fractions=LIBRATUS_RAISE_FRACTIONS,
        raise_cap=LIBRATUS_RAISE_CAP, range0=ranges[0], range1=ranges[1],
        name=f"libratus_{name}" + (f"_top{int(top_n)}" if top_n is not None else ""),
        source={"libratus_file": os.path.basename(os.fspath(path)), "round": data["round"], "top_n": top_n},
    )
    if "behind" in overrides:   # chips behind instead of the Libratus stack
        del kw["stack"]
    if overrides.get("raise_cap") == 0 and "raise_fractions" not in overrides:
        del kw["raise_fractions"]   # no raises: the Libratus raise sizes are not offered (an error if given)
    kw.update(overrides)
    return PokerSubgameSpec(**kw)
