"""A brute-force HUNL flop/turn/river subgame evaluator for tests, independent of cfrjax.

Nothing here imports cfrjax: cards, combos, the betting tree and payoffs are written
again from the rules (`cfrjax/games/poker/subgame.py`'s docstring), hand strength comes
from `eval7`. Deals are enumerated one by one (both hands, then the turn and river cards
still to come), so it is only for tiny spots (a few hands per player).

Rules: player 0 acts first on every street; without a bet: check or bet; facing a bet:
fold, call or raise (at most `raise_cap` raises per street, `None` = unlimited). A size
`f` puts the actor's subgame total to `opp + f * (pot_now + to_call)`, capped at all-in
(`stack - pot / 2`); `"allin"` is the all-in itself; sizes collapsing onto one amount are
one action. After an all-in is called no later street has betting. Payoffs
(player 0's view, sunk cost): a fold loses the folder's half-pot plus everything it put
in during the subgame; a showdown moves the half-pot plus the matched wager from the
worse hand to the better (0 on a tie). Rake (postflop-solver's definition): the pot at a
terminal is the starting pot plus twice what both players matched (at a fold the folder's
subgame chips, which the winner matched; an unmatched bet goes back); the rake
`min(rate * that pot, cap)` comes out of the winner's gain, at a tie half from each player,
so player 1's payoff is no longer minus player 0's. Each card still to come is uniform over
the cards not on the board and in neither hand (45 for a flop's turn card, 44 for a river
card). Information-set keys: `P{player}|{hand}|{code}`, codes
`k`, `c`, `f`, `b{x}` (street total `x`) joined by `.`, streets joined by `/{card}/`.
"""

from __future__ import annotations

import itertools

import eval7

RANKS = "23456789TJQKA"
SUITS = "shdc"
ALLIN = "allin"


def card_id(name: str) -> int:
    return 4 * RANKS.index(name[0].upper()) + SUITS.index(name[1].lower())


def card_name(c: int) -> str:
    return RANKS[c // 4] + SUITS[c % 4]


def hand_name(cards) -> str:
    """High card first; a pair's suits in the order s, h, d, c (postflop-solver's)."""
    a, b = sorted(cards, key=lambda c: (-(c // 4), c % 4))
    return card_name(a) + card_name(b)


def parse_hand(name: str) -> tuple:
    return tuple(sorted((card_id(name[:2]), card_id(name[2:4]))))


def _fmt(x: float) -> str:
    return f"{float(x):.10g}"


class Spot:
    """A river (5-card board), turn (4-card) or flop (3-card) spot with explicit weighted ranges.

    Args:
      board: e.g. "Ks Js Th 7d 2c".
      pot, stack: chips in the pot (half from each player), each player's stack at the
        start of the hand.
      bet_fractions, raise_fractions, raise_cap: the bet abstraction.
      range0, range1: dict hand name ("AsKs") -> weight.
      rake_rate, rake_cap: the rake (module docstring); rate 0 = none.
    """

    def __init__(self, board, pot, stack, bet_fractions, raise_fractions=None, raise_cap=0, range0=None,
                 range1=None, rake_rate=0.0, rake_cap=float("inf")):
        self.rake_rate, self.rake_cap = float(rake_rate), float(rake_cap)
        self.board = tuple(card_id(board.replace(" ", "")[i:i + 2]) for i in range(0, len(board.replace(" ", "")), 2))
        self.pot, self.stack = float(pot), float(stack)
        self.bets = tuple(bet_fractions)
        self.raises = self.bets if raise_fractions is None else tuple(raise_fractions)
        self.cap = raise_cap
        self.behind = self.stack - self.pot / 2
        self.ranges = []
        for r in (range0, range1):
            out = {}
            for name, w in r.items():
                h = parse_hand(name)
                if w > 0 and not set(h) & set(self.board):
                    out[h] = float(w)
            self.ranges.append(out)
        self._strength = {}

    # -- betting ---------------------------------------------------------------------
    def _targets(self, c, p, sizes):
        me, opp = c[p], c[1 - p]
        pot_now = self.pot + c[0] + c[1]
        out = []
        for f in sizes:
            t = self.behind if f == ALLIN else min(self.behind, opp + f * (pot_now + (opp - me)))
            if t > opp + 1e-9 and all(abs(t - x) > 1e-9 for x in out):
                out.append(t)
        return sorted(out)

    def root(self):
        return dict(kind="decide", street=len(self.board), start=0.0, c=(0.0, 0.0), p=0, facing=False,
                    nraises=0, code="", dealt=())

    def actions(self, s):
        """[(name, next_state)] of a decision state."""
        p, c, start = s["p"], s["c"], s["start"]
        out = []

        def nxt(token, **kw):
            code = s["code"] + ("." if s["code"] and not s["code"].endswith("/") else "") + token
            return {**s, **kw, "code": code}

        if s["facing"]:
            out.append(("fold", nxt("f", kind="fold", folder=p)))
            call = (c[1 - p], c[1 - p])
            out.append(("call", nxt("c", kind="end", c=call)))
            can_raise = c[1 - p] < self.behind - 1e-9 and (self.cap is None or s["nraises"] < self.cap)
            sizes, verb = (self._targets(c, p, self.raises) if can_raise else []), "raise"
            nr = s["nraises"] + 1
        else:
            if p == 0:
                out.append(("check", nxt("k", p=1)))
            else:
                out.append(("check", nxt("k", kind="end")))
            sizes, verb, nr = self._targets(c, p, self.bets), "bet", 0
        for t in sizes:
            x = _fmt(t - start)
            name = ("all-in " if t >= self.behind - 1e-9 else verb + " ") + x
            nc = (t, c[1]) if p == 0 else (c[0], t)
            out.append((name, nxt("b" + x, p=1 - p, c=nc, facing=True, nraises=nr)))
        return out

    def after_end(self, s, card=None):
        """The state after a street ends (`card`: the next card dealt before the river)."""
        if s["street"] == 5:
            return {**s, "kind": "showdown"}
        code = s["code"] + "/" + card_name(card) + "/"
        street, dealt = s["street"] + 1, s["dealt"] + (card,)
        if s["c"][0] >= self.behind - 1e-9:   # all-in called: no more betting
            kind = "showdown" if street == 5 else "end"
            return {**s, "kind": kind, "street": street, "code": code, "dealt": dealt}
        return {**s, "kind": "decide", "street": street, "start": s["c"][0], "p": 0, "facing": False, "nraises": 0,
                "code": code, "dealt": dealt}

    # -- payoffs ---------------------------------------------------------------------
    def strength(self, hand, board):
        key = (hand, board)
        if key not in self._strength:
            self._strength[key] = eval7.evaluate([eval7.Card(card_name(x)) for x in board + hand])
        return self._strength[key]

    def payoff0(self, s, h0, h1):
        """Player 0's payoff at a terminal state."""
        return self.payoff(s, h0, h1, 0)

    def payoff(self, s, h0, h1, p):
        """Player p's payoff at a terminal state (hands h0, h1 of players 0, 1)."""
        matched = min(s["c"])                       # what both players put in, each
        each = self.pot / 2 + matched               # each player's share of the pot at the end
        rake = min(self.rake_rate * 2 * each, self.rake_cap) if self.rake_rate > 0 else 0.0
        if s["kind"] == "fold":
            winner = 1 - s["folder"]
        else:
            board = self.board + s["dealt"]
            a, b = self.strength(h0, board), self.strength(h1, board)
            if a == b:
                return -rake / 2
            winner = 0 if a > b else 1
        return each - rake if p == winner else -each

    def deals(self):
        """[(h0, h1, weight)] of compatible pairs (unnormalised)."""
        out = []
        for h0, w0 in self.ranges[0].items():
            for h1, w1 in self.ranges[1].items():
                if not set(h0) & set(h1):
                    out.append((h0, h1, w0 * w1))
        return out

    def norm(self):
        return sum(w for _, _, w in self.deals())

    def next_cards(self, s, dead):
        """The cards that can come next after state `s` (neither on the board nor in `dead`)."""
        return [c for c in range(52) if c not in self.board + s["dealt"] and c not in dead]

    # -- evaluation ------------------------------------------------------------------
    def expected_value(self, policy, p=0):
        """Player p's expected payoff when both play `policy` (key -> action probabilities)."""
        def ev(s, h):
            if s["kind"] in ("fold", "showdown"):
                return self.payoff(s, *h, p)
            if s["kind"] == "end":
                if s["street"] == 5:
                    return ev(self.after_end(s), h)
                cards = self.next_cards(s, h[0] + h[1])
                assert len(cards) == 48 - len(self.board + s["dealt"])
                return sum(ev(self.after_end(s, c), h) for c in cards) / len(cards)
            actor = s["p"]
            probs = policy[f"P{actor}|{hand_name(h[actor])}|{s['code']}"]
            return sum(q * ev(t, h) for q, (_, t) in zip(probs, self.actions(s)) if q != 0)
        total = sum(w * ev(self.root(), (h0, h1)) for h0, h1, w in self.deals())
        return total / self.norm()

    def best_response_value(self, policy, p):
        """Value to player p of a best response to the opponent's part of `policy`."""
        o = 1 - p

        def br(s, h, opp):
            if s["kind"] in ("fold", "showdown"):
                total = 0.0
                for g, w in opp.items():
                    hh = (h, g) if p == 0 else (g, h)
                    total += w * self.payoff(s, *hh, p)
                return total
            if s["kind"] == "end":
                if s["street"] == 5:
                    return br(self.after_end(s), h, opp)
                total = 0.0
                n = 48 - len(self.board + s["dealt"])   # live cards for any deal of two hands
                for c in self.next_cards(s, h):
                    sub = {g: w / n for g, w in opp.items() if c not in g}
                    total += br(self.after_end(s, c), h, sub)
                return total
            acts = self.actions(s)
            if s["p"] == p:
                return max(br(t, h, opp) for _, t in acts)
            total = 0.0
            for a, (_, t) in enumerate(acts):
                sub = {g: w * policy[f"P{o}|{hand_name(g)}|{s['code']}"][a] for g, w in opp.items()}
                total += br(t, h, sub)
            return total

        total = 0.0
        for h, w in self.ranges[p].items():
            opp = {g: v for g, v in self.ranges[o].items() if not set(g) & set(h)}
            if opp:
                total += w * br(self.root(), h, opp)
        return total / self.norm()

    def infosets(self):
        """[(key, action names)] of every information set reachable with positive weight."""
        out = {}

        def walk(s, hands):
            if s["kind"] in ("fold", "showdown"):
                return
            if s["kind"] == "end":
                if s["street"] == 5:
                    return
                for c in self.next_cards(s, ()):
                    live = [{h for h in hs if c not in h} for hs in hands]
                    walk(self.after_end(s, c), live)
                return
            acts = self.actions(s)
            for h in hands[s["p"]]:
                out[f"P{s['p']}|{hand_name(h)}|{s['code']}"] = tuple(n for n, _ in acts)
            for _, t in acts:
                walk(t, hands)

        walk(self.root(), [set(r) for r in self.ranges])
        return out


def all_pairs(cards):
    """Every two-card hand name from a list of card names."""
    return [hand_name((card_id(a), card_id(b))) for a, b in itertools.combinations(cards, 2)]
