"""Independent per-node reference CFR and best-response code, used as a test oracle.

Everything here is plain Python recursion over the game tree in float64. It shares no
code with `cfrjax` beyond reading a `GameSpec`'s arrays, so that a bug in the compiled
JAX solver cannot be mirrored here. Speed is secondary: Leduc (9,457 nodes) runs 30
iterations in a few seconds.

CFR conventions follow OpenSpiel's `open_spiel/python/algorithms/cfr.py`
(`_CFRSolverBase` / `_CFRSolver`), and `tests/test_reference.py` checks agreement
with it to 1e-12:

* regret matching: sigma(I, a) = max(R(I, a), 0) / sum_a' max(R(I, a'), 0), uniform
  when that sum is 0;
* iterations t = 1, 2, ...; averaging weight w_t = 1 ("uniform") or t ("linear");
* instantaneous regret of player i at I: r(I, a) = cfv_i(I, a) - cfv_i(I), with
  cfv_i(I, a) = sum_{h in I} pi_{-i}(h) v_i(h.a) (pi_{-i}: chance and opponent reach)
  and cfv_i(I) = sum_a sigma(I, a) cfv_i(I, a); R += r, then for CFR+ R = max(R, 0);
* strategy sum S(I, a) += w_t * pi_i(I) * sigma^t(I, a) (pi_i: player i's own reach);
* "simultaneous": one traversal with sigma^t = RM(R) updates both players;
  "alternating": for i in (0, 1), sigma = RM(current R) (player 1's half sees player
  0's regrets already updated this iteration) and only player i is updated.

Regrets are accumulated history by history in depth-first order, like OpenSpiel, so
rounding matches it closely (regret matching's "uniform when all regrets are <= 0" rule
is discontinuous, so the order of float additions can matter over many iterations).
"""

from __future__ import annotations

import itertools
import sys

import numpy as np

from cfrjax.spec import CHANCE, PLAYER0, PLAYER1, TERMINAL, GameSpec

__all__ = [
    "ReferenceCFR",
    "best_response",
    "best_response_value",
    "brute_force_best_response_value",
    "expected_value",
    "exploitability",
    "regret_matching",
]

RULES = ("cfr", "cfr+", "lcfr", "dcfr", "pcfr+", "pdcfr+", "dcfr-postflop")
_DISCOUNT_DEFAULTS = {"lcfr": (1.0, 1.0, 1.0), "dcfr": (1.5, 0.0, 2.0), "pdcfr+": (2.3, None, 5.0)}
_POSTFLOP_DEFAULTS = (1.5, 0.0, 3.0)
AVERAGINGS = ("uniform", "linear")
ORDERS = ("simultaneous", "alternating")


class _Tree:
    """Python-list view of a GameSpec: children ordered by action index, root, members."""

    def __init__(self, spec: GameSpec):
        n = spec.num_nodes
        self.spec = spec
        self.parent = [int(x) for x in spec.parent]
        self.kind = [int(x) for x in spec.kind]
        self.infoset = [int(x) for x in spec.infoset]
        self.prob = [float(x) for x in spec.chance_prob]
        self.payoff = [float(x) for x in spec.payoff]
        self.keys = list(spec.infoset_keys)
        self.owner = [int(x) for x in spec.infoset_player]
        self.num_actions = [len(a) for a in spec.action_names]
        action = [int(x) for x in spec.action]
        children: list[list[int]] = [[] for _ in range(n)]
        for h, p in enumerate(self.parent):
            if p >= 0:
                children[p].append(h)
        for ch in children:
            ch.sort(key=lambda c: action[c])
        self.children = children
        roots = [h for h, p in enumerate(self.parent) if p < 0]
        assert len(roots) == 1, "a GameSpec has exactly one root"
        self.root = roots[0]
        self.members: list[list[int]] = [[] for _ in self.keys]
        for h in range(n):
            if self.kind[h] in (PLAYER0, PLAYER1):
                self.members[self.infoset[h]].append(h)
        # Recursion depth is bounded by a small multiple of the tree depth.
        depth = _tree_depth(children, self.root)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * depth + 1000))


def _tree_depth(children, root) -> int:
    depth, frontier = 0, [root]
    while frontier:
        frontier = [c for h in frontier for c in children[h]]
        depth += 1
    return depth


def regret_matching(regrets) -> np.ndarray:
    """Regret matching: positive part normalized, uniform when no regret is positive."""
    pos = [max(float(r), 0.0) for r in regrets]
    total = sum(pos)
    if total > 0:
        return np.array([p / total for p in pos])
    return np.full(len(pos), 1.0 / len(pos))


def _rm_list(regrets: list[float]) -> list[float]:
    total = sum(r for r in regrets if r > 0)
    if total > 0:
        return [max(0.0, r) / total for r in regrets]
    return [1.0 / len(regrets)] * len(regrets)


class ReferenceCFR:
    """Tabular CFR / CFR+ by recursion over histories (the test oracle).

    Args:
      spec: the game.
      rule: "cfr" (regret matching) or "cfr+" (regret matching+: regrets clamped at 0
        after each update).
      averaging: "uniform" (w_t = 1) or "linear" (w_t = t) weights of the average.
      order: "simultaneous" or "alternating" updates (see the module docstring).
    """

    def __init__(self, spec: GameSpec, rule: str = "cfr", averaging: str = "uniform",
                 order: str = "simultaneous", alpha=None, beta=None, gamma=None):
        if rule not in RULES or averaging not in AVERAGINGS or order not in ORDERS:
            raise ValueError(f"bad options rule={rule!r} averaging={averaging!r} order={order!r}; "
                             f"expected {RULES}, {AVERAGINGS}, {ORDERS}")
        self.spec = spec
        self.rule, self.averaging, self.order = rule, averaging, order
        self._t = _Tree(spec)
        self.iteration = 0
        self._regret = [[0.0] * k for k in self._t.num_actions]
        self._strategy_sum = [[0.0] * k for k in self._t.num_actions]
        # Extra rules (written from the papers, independently of cfrjax.rules):
        #  lcfr/dcfr (Brown & Sandholm 2019): after iteration t, R *= t^a/(t^a+1) where R > 0
        #    else t^b/(t^b+1); the strategy sum is S = S * ((t-1)/t)^gamma + s_t (weights
        #    prop. to t^gamma); lcfr = (1, 1, 1).
        #  pcfr+ (Farina et al. 2021): sigma = RM(R + m), R = max(R + r, 0), m = last r.
        #  pdcfr+ (Xu et al. 2024): R = max(R + r, 0) then R *= t^a/(t^a+1) at the end of
        #    iteration t; sigma = RM(R + m); S discounted by ((t-1)/t)^gamma.
        #  dcfr-postflop (postflop-solver's src/solver.rs, DiscountParams(s), s = t - 1 the
        #    0-based iteration): sigma = RM(R) of the stored R; when a player updates,
        #    R = R * (alpha_s if R > 0 else beta_s) + r with alpha_s = u^a/(u^a+1),
        #    beta_s = u^b/(u^b+1), u = max(s - 1, 0) (0^0 = 1); its strategy sum
        #    S = S * gamma_s + sigma (sigma itself, not reach-weighted, every infoset of
        #    the player), gamma_s = ((s - p)/(s - p + 1))^g, p = 0, 1, 4, 16, ... the
        #    largest power of 4 <= s (0 for s = 0).
        d = _POSTFLOP_DEFAULTS if rule == "dcfr-postflop" else _DISCOUNT_DEFAULTS.get(rule, (None, None, None))
        self.alpha = d[0] if alpha is None else alpha
        self.beta = d[1] if beta is None else beta
        self.gamma = d[2] if gamma is None else gamma
        self._pred = [[0.0] * k for k in self._t.num_actions]

    # ----------------------------------------------------------------- iterations
    def iterate(self) -> None:
        """Run one CFR iteration (both players)."""
        self.iteration += 1
        t = self.iteration
        discounted_avg = self.rule in _DISCOUNT_DEFAULTS
        weight = 1.0 if (self.averaging == "uniform" or discounted_avg) else float(t)
        if discounted_avg:  # the strategy sum decays, then adds weight 1
            decay = ((t - 1) / t) ** self.gamma
            self._strategy_sum = [[decay * x for x in s] for s in self._strategy_sum]
        passes = [(0, 1)] if self.order == "simultaneous" else [(0,), (1,)]
        predictive = self.rule in ("pcfr+", "pdcfr+")
        if self.rule == "dcfr-postflop":
            self._postflop_iterate(passes)
            return
        for players in passes:
            if predictive:
                sigma = [_rm_list([max(a, 0.0) + b for a, b in zip(r, m)])
                         for r, m in zip(self._regret, self._pred)]
            else:
                sigma = [_rm_list(r) for r in self._regret]
            before = [list(r) for r in self._regret]
            self._traverse(sigma, players, weight)
            for i, r in enumerate(self._regret):
                if self._t.owner[i] not in players:
                    continue
                if predictive:
                    inst = [a - b for a, b in zip(r, before[i])]
                    self._pred[i] = inst
                if self.rule in ("cfr+", "pcfr+", "pdcfr+"):
                    r = [max(x, 0.0) for x in r]
                if self.rule in ("lcfr", "dcfr"):
                    pa, pb = t ** self.alpha, t ** self.beta
                    r = [x * (pa / (pa + 1.0)) if x > 0 else x * (pb / (pb + 1.0)) for x in r]
                if self.rule == "pdcfr+":
                    pa = t ** self.alpha
                    r = [x * (pa / (pa + 1.0)) for x in r]
                self._regret[i] = r

    def _postflop_iterate(self, passes) -> None:
        """Iteration `self.iteration` of postflop-solver's DCFR (see `__init__`)."""
        s = self.iteration - 1
        p = 0
        while p * 4 <= s and s > 0:
            p = 1 if p == 0 else p * 4
        u = float(max(s - 1, 0))
        alpha_s = u ** self.alpha / (u ** self.alpha + 1.0)
        beta_s = u ** self.beta / (u ** self.beta + 1.0)
        gamma_s = ((s - p) / (s - p + 1.0)) ** self.gamma
        for players in passes:
            sigma = [_rm_list(r) for r in self._regret]
            before = [list(r) for r in self._regret]
            self._regret = [[0.0] * len(r) for r in self._regret]
            self._traverse(sigma, players, 0.0)  # instantaneous regrets only
            for i, r in enumerate(self._regret):
                if self._t.owner[i] not in players:
                    self._regret[i] = before[i]
                    continue
                self._regret[i] = [x * (alpha_s if x > 0 else beta_s) + y for x, y in zip(before[i], r)]
                self._strategy_sum[i] = [x * gamma_s + y for x, y in zip(self._strategy_sum[i], sigma[i])]

    def run(self, n: int) -> "ReferenceCFR":
        """Run `n` iterations; returns self."""
        for _ in range(n):
            self.iterate()
        return self

    def _traverse(self, sigma: list[list[float]], players: tuple[int, ...], weight: float) -> None:
        """One depth-first pass under `sigma`: add regrets and strategy sums of `players`."""
        t = self._t
        kind, children, infoset, prob, payoff = t.kind, t.children, t.infoset, t.prob, t.payoff
        regret = self._regret
        own_reach: dict[int, float] = {}  # infoset -> pi_i(I), same for all members

        def walk(h: int, r0: float, r1: float, rc: float) -> float:
            """Player 0's expected value of h under sigma; updates regrets on the way."""
            k = kind[h]
            if k == TERMINAL:
                return payoff[h]
            if k == CHANCE:
                v = 0.0
                for c in children[h]:
                    p = prob[c]
                    v += p * walk(c, r0, r1, rc * p)
                return v
            if r0 == 0.0 and r1 == 0.0:
                return 0.0  # unreachable for both players: contributes nothing
            i = infoset[h]
            s = sigma[i]
            vals = []
            v = 0.0
            for a, c in enumerate(children[h]):
                cv = walk(c, r0 * s[a], r1, rc) if k == PLAYER0 else walk(c, r0, r1 * s[a], rc)
                vals.append(cv)
                v += s[a] * cv
            if k in players:
                sign, own, cf = (1.0, r0, r1 * rc) if k == PLAYER0 else (-1.0, r1, r0 * rc)
                reg = regret[i]
                for a in range(len(vals)):
                    reg[a] += cf * (sign * (vals[a] - v))
                prev = own_reach.setdefault(i, own)
                if prev != own:
                    raise AssertionError(f"infoset {t.keys[i]!r}: members have different own reach "
                                         f"({prev} vs {own}); perfect recall is violated")
            return v

        walk(t.root, 1.0, 1.0, 1.0)
        for i, own in own_reach.items():
            acc, s = self._strategy_sum[i], sigma[i]
            for a in range(len(acc)):
                acc[a] += weight * own * s[a]

    # ------------------------------------------------------------------ accessors
    def regrets(self) -> dict[str, np.ndarray]:
        """Cumulative regrets per infoset key, in `action_names` order."""
        return {k: np.array(r, dtype=np.float64) for k, r in zip(self._t.keys, self._regret)}

    def strategy_sums(self) -> dict[str, np.ndarray]:
        """Unnormalized (weighted) strategy sums per infoset key."""
        return {k: np.array(s, dtype=np.float64) for k, s in zip(self._t.keys, self._strategy_sum)}

    def average_policy(self) -> dict[str, np.ndarray]:
        """Normalized strategy sums per infoset key; uniform where the sum is 0."""
        out = {}
        for k, s in zip(self._t.keys, self._strategy_sum):
            total = sum(s)
            out[k] = np.array([x / total for x in s]) if total != 0 else np.full(len(s), 1.0 / len(s))
        return out

    def current_policy(self) -> dict[str, np.ndarray]:
        """The next iterate: regret matching of the cumulative regrets (plus prediction)."""
        if self.rule in ("pcfr+", "pdcfr+"):
            return {k: np.array(_rm_list([max(a, 0.0) + b for a, b in zip(r, m)]))
                    for k, r, m in zip(self._t.keys, self._regret, self._pred)}
        return {k: np.array(_rm_list(r)) for k, r in zip(self._t.keys, self._regret)}


# --------------------------------------------------------------------- evaluation
def _policy_lists(t: _Tree, policy: dict, players=(0, 1)) -> list:
    """Per-infoset action probabilities (as lists) for infosets owned by `players`."""
    out: list = [None] * len(t.keys)
    for i, key in enumerate(t.keys):
        if t.owner[i] in players:
            probs = [float(x) for x in np.asarray(policy[key], dtype=np.float64)]
            if len(probs) != t.num_actions[i]:
                raise ValueError(f"policy for {key!r} has {len(probs)} entries, expected {t.num_actions[i]}")
            out[i] = probs
    return out


def expected_value(spec: GameSpec, policy: dict) -> float:
    """Player 0's expected payoff when both players follow `policy` (key -> probs)."""
    t = _Tree(spec)
    pol = _policy_lists(t, policy)

    def value(h: int) -> float:
        k = t.kind[h]
        if k == TERMINAL:
            return t.payoff[h]
        ch = t.children[h]
        probs = [t.prob[c] for c in ch] if k == CHANCE else pol[t.infoset[h]]
        return sum(p * value(c) for p, c in zip(probs, ch))

    return value(t.root)


def best_response(spec: GameSpec, policy: dict, player: int) -> tuple[float, dict[str, int]]:
    """Exact best response of `player` to the opponent's part of `policy`.

    Returns (value in `player`'s units, {infoset key of `player`: chosen action index}).
    The choice at an infoset I maximizes sum_{h in I} pi_{-i}(h) V(h.a), where V is the
    subtree value with `player` already best-responding below. Choices are made lazily
    with memoization; by perfect recall every infoset met below h.a lies deeper in the
    player's own sequence, so this is the bottom-up (by own depth) order and terminates.
    """
    if player not in (0, 1):
        raise ValueError(f"player must be 0 or 1, got {player}")
    t = _Tree(spec)
    pol = _policy_lists(t, policy, players=(1 - player,))
    sign = 1.0 if player == 0 else -1.0

    # pi_{-i}(h): chance and opponent reach, top-down.
    cf_reach = [0.0] * len(t.kind)
    stack = [(t.root, 1.0)]
    while stack:
        h, r = stack.pop()
        cf_reach[h] = r
        k = t.kind[h]
        for a, c in enumerate(t.children[h]):
            if k == CHANCE:
                stack.append((c, r * t.prob[c]))
            elif k == player:
                stack.append((c, r))
            else:
                stack.append((c, r * pol[t.infoset[h]][a]))

    memo: dict[int, float] = {}
    choice: dict[int, int] = {}

    def value(h: int) -> float:
        if h in memo:
            return memo[h]
        k, ch = t.kind[h], t.children[h]
        if k == TERMINAL:
            v = sign * t.payoff[h]
        elif k == CHANCE:
            v = sum(t.prob[c] * value(c) for c in ch)
        elif k == player:
            v = value(ch[decide(t.infoset[h])])
        else:
            v = sum(p * value(c) for p, c in zip(pol[t.infoset[h]], ch))
        memo[h] = v
        return v

    def decide(i: int) -> int:
        if i not in choice:
            totals = [sum(cf_reach[h] * value(t.children[h][a]) for h in t.members[i])
                      for a in range(t.num_actions[i])]
            choice[i] = int(np.argmax(totals))
        return choice[i]

    v = value(t.root)
    for i in range(len(t.keys)):  # also fix choices at infosets the recursion skipped
        if t.owner[i] == player:
            decide(i)
    return v, {t.keys[i]: a for i, a in choice.items()}


def best_response_value(spec: GameSpec, policy: dict, player: int) -> float:
    """Best-response value of `player` (in its own units) against `policy`'s opponent part."""
    return best_response(spec, policy, player)[0]


def exploitability(spec: GameSpec, policy: dict) -> float:
    """(BR_0 + BR_1) / 2 = NashConv / 2 in a zero-sum game (OpenSpiel's definition)."""
    return 0.5 * (best_response_value(spec, policy, 0) + best_response_value(spec, policy, 1))


def brute_force_best_response_value(spec: GameSpec, policy: dict, player: int,
                                    max_strategies: int = 10**6) -> float:
    """Best-response value by enumerating every pure strategy of `player` (tiny games only).

    Independent of `best_response`: the value of a pure strategy s is
    sum_z pi_{-i}(z) u_i(z) [s plays all of i's actions on the path to z].

    Raises:
      ValueError: more than `max_strategies` pure strategies.
    """
    t = _Tree(spec)
    pol = _policy_lists(t, policy, players=(1 - player,))
    sign = 1.0 if player == 0 else -1.0
    own = [i for i in range(len(t.keys)) if t.owner[i] == player]
    col = {i: j for j, i in enumerate(own)}
    sizes = [t.num_actions[i] for i in own]
    total = 1
    for s in sizes:
        total *= s
    if total > max_strategies:
        raise ValueError(f"player {player} has {total} pure strategies (> {max_strategies})")

    # Terminals: weight pi_{-i}(z) * u_i(z) and the player's own (column, action) pairs.
    terms: list[tuple[float, list[tuple[int, int]]]] = []
    stack = [(t.root, 1.0, ())]
    while stack:
        h, r, path = stack.pop()
        k = t.kind[h]
        if k == TERMINAL:
            terms.append((r * sign * t.payoff[h], list(path)))
            continue
        for a, c in enumerate(t.children[h]):
            if k == CHANCE:
                stack.append((c, r * t.prob[c], path))
            elif k == player:
                stack.append((c, r, path + ((col[t.infoset[h]], a),)))
            else:
                stack.append((c, r * pol[t.infoset[h]][a], path))

    best = -np.inf
    strategies = itertools.product(*[range(s) for s in sizes])
    chunk = 1 << 16
    while True:
        rows = list(itertools.islice(strategies, chunk))
        if not rows:
            break
        block = np.array(rows, dtype=np.int64).reshape(len(rows), len(own))
        vals = np.zeros(block.shape[0])
        for w, path in terms:
            if w == 0.0:
                continue
            ind = np.ones(block.shape[0], dtype=bool)
            for j, a in path:
                ind &= block[:, j] == a
            vals += w * ind
        best = max(best, float(vals.max()))
    return best
