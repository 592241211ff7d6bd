"""Native heads-up no-limit hold'em subgames (river and turn) as `GameSpec`s.

The construction follows the paper's appendix A ("HUNL Subgame Construction"):

* **Deal.** A chance root deals a pair (hand0, hand1) of hole-card combos. Deals are the
  pairs with positive weight in both players' ranges that share no card (with each
  other; combos touching the board already have weight 0). The probability of a deal
  is `w0[hand0] * w1[hand1]`, normalized over those pairs, i.e. uniform over
  non-conflicting pairs for 0/1 ranges. Deals are ordered by (hand0, hand1) combo
  index.
* **Betting.** Player 0 (out of position; the first 1,326 reach values of a Libratus
  file) acts first on every street. Without a bet: check or bet; facing a bet: fold,
  call, or raise. With `pot` = all chips in the middle (`config.pot` plus every
  wager so far) and `to_call` = the amount the actor must call, a size `f` puts the
  actor's street total to `opp + f * (pot + to_call)` (for a first bet this is
  `f * pot`: the paper's `b = min(stack - committed, f * pot)`; for raises it is the
  usual pot-fraction raise measured after calling), capped at all-in. `"allin"` in a
  size list is the all-in bet itself. Sizes that collapse onto the same amount (e.g.
  two fractions both capped at all-in) are one action. `raise_cap` raises per street
  (`0`: no raises, `None`: unlimited, the stack ends them). Facing an all-in, only
  fold and call remain, and after an all-in is called no later street has betting.
  With `betting` strings the sizes are per street and player (`2.5x`, `e`, donk
  sizes, all-in thresholds, merging) in whole chips, exactly as postflop-solver
  builds its tree (`cfrjax.games.poker.betting`); the node's sizes and amounts come
  from `config.bet_sizes` either way.
  `behind` is the most a player can add in the subgame (postflop-solver's
  `effective_stack`); the older `stack` is each player's stack at the start of the
  hand, of which `pot / 2` is already in the pot, so `behind = stack - pot / 2`.
* **Turn subgames.** Betting on the turn; every turn line that ends in check-check or
  a call reaches a chance node dealing the river card uniformly over the 44 cards that
  are neither on the board nor in either player's hand (48 - 4: the chance node has
  exactly 44 children for every deal, matching the paper's 44-card river layer and
  its 433,610-state count), followed by river betting (or directly a showdown after
  an all-in).
* **Payoffs (sunk cost).** Player 0's payoff; each player is treated as having put
  `pot / 2` plus their own wagers in the subgame into the pot. A fold loses the
  folder's half-pot plus every chip the folder committed in the subgame (so a turn
  fold facing a bet loses the half-pot; a river fold additionally loses the chips the
  folder put in on the turn, e.g. a called turn bet); a showdown transfers the
  half-pot plus the matched wagers from the worse hand to the better (0 on a tie).
  Amounts are exact floats; nothing is rounded to whole chips.

Information sets: key `"P{player}|{own hand}|{public sequence}"`, e.g.
`"P1|2s2h|k.b10.c/Qh/k"` (public actions `k` check, `c` call, `f` fold, `b{x}` bet or
raise to street total `x`, streets separated by `/{river card}/`). Action names:
`"check"`, `"bet 10"`, `"fold"`, `"call"`, `"raise 40"`, `"all-in 90"` (amounts are
the actor's street total after the action).

Layout: the GameSpec's nodes are in breadth-first order (parent indices are
non-decreasing), built by replicating one per-deal "deal template" (the public tree,
with river slots 0..43 standing for that deal's live river cards) over all deals
with vectorized NumPy, level by level (build times: `cfrjax.games.poker.sizes`).

Sizes "the paper's way" (`count_paper_sizes`): States = non-chance nodes (terminals
included), Infosets = distinct (player, own hand, public node) over the same nodes.
River with fractions {0.5, 1}, no raises: 15 public nodes per deal, Infosets =
2 * K * 15. Turn: 10 turn-street public nodes plus 5 river continuations of 15.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from cfrjax.deck import NO_CARD, NUM_CARDS
from cfrjax.games.poker.cards import (
    CARD_NAMES, COMBOS, NUM_COMBOS, PokerSpecError, board_str, combo_str, combos_conflict, parse_board)
from cfrjax.games.poker.evaluator import evaluate
from cfrjax.games.poker.config import PokerSubgameSpec
from cfrjax.games.poker.deals import subgame_deals
from cfrjax.spec import CHANCE, PLAYER0, PLAYER1, TERMINAL, GameSpec

#: The parts of an information-set key `P{player}|{hand}|{history}` (`cfrjax.strategy.strategy_table` columns).
KEY_FIELDS = ("player", "hand", "history")
RIVER_CARDS = 44  # live river cards of a turn deal: 52 - 4 board - 4 hole cards


def _fmt(x: float) -> str:
    return f"{float(x):.10g}"


# ----------------------------------------------------------------------------------------
# Public betting tree of one street.


class _Tree:
    """Growing node lists of a public betting tree (parents before children)."""

    def __init__(self):
        self.parent, self.action, self.kind, self.code = [], [], [], []
        self.labels, self.tot, self.fold, self.sd, self.allin = [], [], [], [], []
        self.oop_call = []   # CHANCE nodes: the street ended with player 0 calling

    def add(self, parent, action, kind, code, tot, labels=(), fold=0.0, sd=0.0, allin=False,
            oop_call=False) -> int:
        self.parent.append(parent)
        self.action.append(action)
        self.kind.append(kind)
        self.code.append(code)
        self.labels.append(tuple(labels))
        self.tot.append(tot)
        self.fold.append(fold)
        self.sd.append(sd)
        self.allin.append(allin)
        self.oop_call.append(oop_call)
        return len(self.parent) - 1

    def __len__(self):
        return len(self.parent)


def _street_tree(cfg: PokerSubgameSpec, start: float, last: bool, street: str | None = None,
                 oop_called: bool = False) -> _Tree:
    """Betting on one street, both players having committed `start` so far.

    Node 0 is player 0's first decision. Street ends become showdown terminals on the
    last street and CHANCE nodes (deal the next card) otherwise; a CHANCE node records
    whether the street ended with player 0 calling (`_Tree.oop_call`), which the next
    street takes as `oop_called`.

    Args:
      street: "flop", "turn" or "river": which street's sizes apply and how many
        streets a geometric size `e` spans (3, 2, 1). Default: "river" if `last` else
        "turn" (a flop must say so).
      oop_called: the previous street ended with player 0 calling (player 1 was its
        aggressor): player 0's first bet here uses the street's donk sizes, if any.
    """
    street = street or ("river" if last else "turn")
    half = cfg.pot / 2
    behind = cfg.effective_stack                  # most a player can commit in the subgame
    cap = cfg.raise_cap
    rules = cfg.bet_sizes
    tree = _Tree()

    def targets(t, p, facing, nbets, donk=False):
        sizes = rules.options(street, p, facing=facing, donk=donk)
        return rules.targets(sizes, street=street, pot=cfg.pot, t=t, player=p, start=start, behind=behind,
                             nbets=nbets)

    def join(code, a):
        return a if not code else code + "." + a

    def end(parent, action, code, t, oop_call=False):
        if last:
            tree.add(parent, action, TERMINAL, code, t, sd=half + t[0])
        else:
            tree.add(parent, action, CHANCE, code, t, allin=t[0] >= behind - 1e-9, oop_call=oop_call)

    def decide(parent, action, code, p, t, facing, nraises):
        opp = t[1 - p]
        if facing:
            labels = ["fold", "call"]
            can_raise = opp < behind - 1e-9 and (cap is None or nraises < cap)
            tg = targets(t, p, True, nraises + 1) if can_raise else []
            verb = "raise"
        else:
            labels = ["check"]
            tg = targets(t, p, False, 0, donk=oop_called and parent < 0)
            verb = "bet"
        labels += [("all-in " if x >= behind - 1e-9 else verb + " ") + _fmt(x - start) for x in tg]
        me = tree.add(parent, action, p, code, t, labels=labels)
        a = 0
        if facing:
            fold = -(half + t[0]) if p == 0 else half + t[1]
            tree.add(me, 0, TERMINAL, join(code, "f"), t, fold=fold)
            end(me, 1, join(code, "c"), (opp, opp), oop_call=p == 0)
            a = 2
        else:
            if p == 0:
                decide(me, 0, join(code, "k"), 1, t, False, 0)
            else:
                end(me, 0, join(code, "k"), t)
            a = 1
        for x in tg:
            nt = (x, t[1]) if p == 0 else (t[0], x)
            decide(me, a, join(code, "b" + _fmt(x - start)), 1 - p, nt, True, nraises + 1 if facing else 0)
            a += 1

    decide(-1, -1, "", 0, (start, start), False, 0)
    return tree


# ----------------------------------------------------------------------------------------
# Deal template: the public tree of one deal, river cards as slots 0..43.


@dataclasses.dataclass
class _Template:
    parent: np.ndarray      # [B] template parent, -1 at the deal node
    action: np.ndarray      # [B]
    kind: np.ndarray        # [B] int8
    fold: np.ndarray        # [B] player 0's payoff at fold terminals
    sd: np.ndarray          # [B] stake at showdown terminals (0 elsewhere)
    slot: np.ndarray        # [B] river slot (0..43) or -1 before the river card
    spid: np.ndarray        # [B] public node id ignoring the river card
    prob: np.ndarray        # [B] chance probability of the edge into the node (1 if none)
    spid_code: list         # per spid: (code before the river card, code after or None)
    spid_labels: list       # per spid: action labels (decision nodes)
    spid_owner: np.ndarray  # per spid: kind of the node


def _template(cfg: PokerSubgameSpec) -> _Template:
    first = _street_tree(cfg, 0.0, last=cfg.street == "river", street=cfg.street)
    n0 = len(first)
    parent = [np.array(first.parent, np.int64)]
    action = [np.array(first.action, np.int64)]
    kind = [np.array(first.kind, np.int8)]
    fold = [np.array(first.fold, np.float64)]
    sd = [np.array(first.sd, np.float64)]
    slot = [np.full(n0, -1, np.int64)]
    spid = [np.arange(n0, dtype=np.int64)]
    prob = [np.ones(n0)]
    codes = [(c, None) for c in first.code]
    labels = list(first.labels)
    owner = list(first.kind)
    size = n0
    nspid = n0
    if cfg.street == "turn":
        for c in range(n0):
            if first.kind[c] != CHANCE:
                continue
            t = first.tot[c]
            if first.allin[c]:
                sub = _Tree()
                sub.add(-1, -1, TERMINAL, "", t, sd=cfg.pot / 2 + t[0])
            else:
                sub = _street_tree(cfg, t[0], last=True, street="river", oop_called=first.oop_call[c])
            m = len(sub)
            lp = np.array(sub.parent, np.int64)
            s = np.repeat(np.arange(RIVER_CARDS), m)
            base = size + s * m
            par = np.where(np.tile(lp, RIVER_CARDS) < 0, c, base + np.tile(lp, RIVER_CARDS))
            act = np.where(np.tile(lp, RIVER_CARDS) < 0, s, np.tile(np.array(sub.action, np.int64), RIVER_CARDS))
            parent.append(par)
            action.append(act)
            kind.append(np.tile(np.array(sub.kind, np.int8), RIVER_CARDS))
            fold.append(np.tile(np.array(sub.fold), RIVER_CARDS))
            sd.append(np.tile(np.array(sub.sd), RIVER_CARDS))
            slot.append(s)
            spid.append(nspid + np.tile(np.arange(m), RIVER_CARDS))
            prob.append(np.where(np.tile(lp, RIVER_CARDS) < 0, 1.0 / RIVER_CARDS, 1.0))
            codes += [(first.code[c], rc) for rc in sub.code]
            labels += list(sub.labels)
            owner += list(sub.kind)
            size += m * RIVER_CARDS
            nspid += m
    return _Template(
        parent=np.concatenate(parent), action=np.concatenate(action), kind=np.concatenate(kind),
        fold=np.concatenate(fold), sd=np.concatenate(sd), slot=np.concatenate(slot),
        spid=np.concatenate(spid), prob=np.concatenate(prob), spid_code=codes, spid_labels=labels,
        spid_owner=np.array(owner, np.int8))


def _bfs_levels(parent: np.ndarray) -> list[np.ndarray]:
    """Template nodes by depth; each level ordered by (parent position, action)."""
    levels = [np.array([0], np.int64)]
    pos = np.zeros(parent.size, np.int64)
    depth = np.zeros(parent.size, np.int64)
    for i in range(1, parent.size):            # parents precede children
        depth[i] = depth[parent[i]] + 1
    for d in range(1, int(depth.max()) + 1):
        nodes = np.flatnonzero(depth == d)
        prev = levels[-1]
        pos[prev] = np.arange(prev.size)
        nodes = nodes[np.lexsort((np.arange(nodes.size), pos[parent[nodes]]))]
        levels.append(nodes)
    return levels


# ----------------------------------------------------------------------------------------
# Deals and showdowns.


def _river_cards(board: np.ndarray, h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
    """`[D, 44]` live river cards of each turn deal, ascending."""
    rest = np.setdiff1d(np.arange(NUM_CARDS), board)                          # 48 cards
    held = np.concatenate([COMBOS[h0], COMBOS[h1]], axis=1)            # [D, 4]
    alive = ~(rest[None, :, None] == held[:, None, :]).any(-1)         # [D, 48]
    return np.broadcast_to(rest, alive.shape)[alive].reshape(-1, RIVER_CARDS)


def _showdown_signs(cfg, board, h0, h1, cards):
    """Sign of player 0's showdown result: `[D]` (river) or `[D, 44]` (turn), int8."""
    hands = np.union1d(h0, h1)
    if cards is None:
        cards7 = np.concatenate([np.broadcast_to(board, (hands.size, 5)), COMBOS[hands]], axis=1)
        value = np.zeros(NUM_COMBOS, np.int64)
        value[hands] = evaluate(cards7)
        return np.sign(value[h0] - value[h1]).astype(np.int8)
    rest = np.setdiff1d(np.arange(NUM_CARDS), board)
    hb = np.concatenate([np.broadcast_to(board, (hands.size, 4)), COMBOS[hands]], axis=1)  # [H, 6]
    cards7 = np.concatenate([np.repeat(hb[:, None, :], rest.size, 1),
                             np.broadcast_to(rest[None, :, None], (hands.size, rest.size, 1))], axis=2)
    blocked = (COMBOS[hands][:, None, :] == rest[None, :, None]).any(-1)
    cards7 = np.where(blocked[..., None], np.array([0, 4, 9, 14, 19, 24, 29]), cards7)  # dummy distinct cards
    value = np.zeros((NUM_COMBOS, NUM_CARDS), np.int64)
    value[hands[:, None], rest[None, :]] = evaluate(cards7)
    return np.sign(value[h0[:, None], cards] - value[h1[:, None], cards]).astype(np.int8)


# ----------------------------------------------------------------------------------------
# The builder.


def _check_tabular(cfg: PokerSubgameSpec) -> None:
    """The spots the tabular form cannot hold (`build_spec`'s `PokerSpecError`s)."""
    if cfg.street == "flop":
        raise PokerSpecError(f"{cfg.name}: a flop spot ({cfg.board}) has no tabular form (one tree copy per deal "
                             f"and runout is far too large); build it in the public form (form='public')")
    if cfg.raked:
        raise PokerSpecError(
            f"{cfg.name}: rake (rate {cfg.rake_rate:g}, cap {cfg.rake_cap:g}) makes the game non-zero-sum, which the "
            "tabular form cannot represent (one payoff per terminal, player 1's = -player 0's); build the public "
            "form instead (load_game(..., form='public'), the default, or build_public)")


def tabular_sizes(config: PokerSubgameSpec) -> dict:
    """Counts of `build_spec(config)`'s compiled tree from its deals and betting template
    alone (nothing per deal is built): `deals`, `nodes` and `decision_edges` (exact: one
    template copy per deal below the chance root) and `path_width` (the most own decisions
    of one player on a path, the width of `path_slot`)."""
    _check_tabular(config)
    h0 = subgame_deals(config)[0]
    tpl = _template(config)
    D, n = int(h0.size), int(tpl.parent.size)
    own = np.zeros((n, 2), np.int64)
    for i in range(n):   # parents come before their children
        p = tpl.parent[i]
        if p >= 0:
            own[i] = own[p] + (tpl.kind[p] == np.arange(2))
    decision_edges = int(np.count_nonzero((tpl.parent >= 0) & (tpl.kind[np.maximum(tpl.parent, 0)] <= PLAYER1)))
    return dict(deals=D, nodes=1 + D * n, decision_edges=D * decision_edges, path_width=int(own.max(initial=0)))


def check_tabular_fits(config: PokerSubgameSpec, *, dtype=None, device=None, budget_bytes: int | None = None) -> dict:
    """Refuse a spot whose tabular form cannot fit, before building it (`cfrjax.load_game`
    calls it for `form="tabular"`).

    The plan is `cfrjax.memory.plan_from_sizes` of `tabular_sizes` (exact nodes and decision
    edges; slots and information sets, a few percent of a poker tree's plan, left out: a
    lower bound of the built game's `memory_plan`, 0.97-1.0 of it on the shipped river and
    turn). It is checked against `device`'s free memory (default the first device) or
    `budget_bytes`, and twice it against the host's, where the tree is built (building
    `hunl_river_full`'s 16 million nodes took 1.7 times its plan).

    Raises:
      MemoryPlanError: naming the deals and nodes, the plan and what to change; `err.plan`.
    """
    import jax

    from cfrjax.game import default_float_dtype
    from cfrjax.memory import check_fits, plan_from_sizes

    z = tabular_sizes(config)
    plan = plan_from_sizes(z["nodes"], z["decision_edges"], 0, 0, path_width=z["path_width"],
                           dtype=dtype or default_float_dtype())
    what = (f"{config.name!r} in the tabular form (one tree copy per deal: {z['deals']:,} deals, {z['nodes']:,} nodes), "
            "refused before building it,")
    remedy = ("use the public form (form='public', the default: vectors over hands, one tree), fewer bet and raise "
              "sizes, narrower ranges, or a machine with more memory")
    device = jax.devices()[0] if device is None and budget_bytes is None else device
    out = check_fits(plan, device, budget_bytes=budget_bytes, what=what, remedy=remedy)
    if budget_bytes is None:
        try:
            host = jax.devices("cpu")[0]
        except RuntimeError:   # JAX_PLATFORMS without the CPU: the host is not checked
            return out
        check_fits(plan, host, margin=1.0, what=what + " built on the host (twice the plan)", remedy=remedy)
    return out


def build_spec(config: PokerSubgameSpec) -> GameSpec:
    """Build (and validate) the `GameSpec` of a river or turn subgame.

    Node 0 is the chance root; the tree is stored breadth-first. Metadata (config
    summary, deals, counts the paper's way, build time) goes to
    `spec.source["poker"]`.

    Raises:
      PokerSpecError: a raked spec (`config.raked`): the tabular form is zero-sum; the
        public form (`cfrjax.games.poker.public_tree.build_public`) solves raked spots.
    """
    t_start = time.perf_counter()
    cfg = config
    _check_tabular(cfg)
    board = cfg.board_cards
    h0, h1, prob = subgame_deals(cfg)
    D = h0.size
    tpl = _template(cfg)
    levels = _bfs_levels(tpl.parent)
    turn = cfg.street == "turn"
    cards = _river_cards(board, h0, h1) if turn else None
    sign = _showdown_signs(cfg, board, h0, h1, cards)

    sizes = [lv.size for lv in levels]
    starts = np.concatenate([[1], 1 + D * np.cumsum(sizes)]).astype(np.int64)
    N = int(starts[-1])
    parent = np.empty(N, np.int64)
    action = np.empty(N, np.int64)
    kind = np.empty(N, np.int8)
    infoset = np.empty(N, np.int64)
    chance_prob = np.empty(N, np.float64)
    payoff = np.empty(N, np.float64)
    parent[0], action[0], kind[0], infoset[0], chance_prob[0], payoff[0] = -1, -1, CHANCE, -1, 1.0, 0.0

    ncard = NO_CARD + 1 if turn else 1
    hands = (h0, h1)
    # Dense infoset key: ((spid * ncard + card) * 1326 + own hand); remapped to 0..I-1 below.
    pos = np.zeros(tpl.parent.size, np.int64)
    darange = np.arange(D, dtype=np.int64)
    for li, lv in enumerate(levels):
        n = lv.size
        lo, hi = int(starts[li]), int(starts[li + 1])
        pos[lv] = np.arange(n)
        if li == 0:
            parent[lo:hi] = 0
            action[lo:hi] = darange
            chance_prob[lo:hi] = prob
        else:
            ppos = pos[tpl.parent[lv]]
            pstart = int(starts[li - 1])
            np.add(pstart + darange[:, None] * sizes[li - 1], ppos[None, :], out=parent[lo:hi].reshape(D, n))
            action[lo:hi].reshape(D, n)[:] = tpl.action[lv][None, :]
            chance_prob[lo:hi].reshape(D, n)[:] = tpl.prob[lv][None, :]
        kind[lo:hi].reshape(D, n)[:] = tpl.kind[lv][None, :]
        # Payoffs.
        pay = payoff[lo:hi].reshape(D, n)
        pay[:] = tpl.fold[lv][None, :]
        sdcols = np.flatnonzero(tpl.sd[lv] != 0)
        if sdcols.size:
            stake = tpl.sd[lv][sdcols]
            if turn:
                sl = tpl.slot[lv][sdcols]
                pay[:, sdcols] += stake[None, :] * sign[:, sl]
            else:
                pay[:, sdcols] += stake[None, :] * sign[:, None]
        # Information sets (dense keys for now).
        inf = infoset[lo:hi].reshape(D, n)
        inf[:] = -1
        for p in (PLAYER0, PLAYER1):
            cols = np.flatnonzero(tpl.kind[lv] == p)
            if not cols.size:
                continue
            sp = tpl.spid[lv][cols]
            if turn:
                sl = tpl.slot[lv][cols]
                card = np.where(sl[None, :] >= 0, cards[:, np.maximum(sl, 0)], NO_CARD)
                key = (sp[None, :] * ncard + card) * NUM_COMBOS
            else:
                key = np.broadcast_to((sp * NUM_COMBOS)[None, :], (D, cols.size))
            inf[:, cols] = key + hands[p][:, None]

    # Compact the dense keys to infoset ids 0..I-1 (sorted by key).
    nkeys = len(tpl.spid_code) * ncard * NUM_COMBOS
    dec = np.flatnonzero(kind <= PLAYER1)
    used = np.zeros(nkeys, bool)
    used[infoset[dec]] = True
    used_keys = np.flatnonzero(used)
    remap = np.full(nkeys, -1, np.int32 if used_keys.size < 2**31 else np.int64)
    remap[used_keys] = np.arange(used_keys.size)
    infoset[dec] = remap[infoset[dec]]
    del remap, used, dec

    k_hand = used_keys % NUM_COMBOS
    k_card = (used_keys // NUM_COMBOS) % ncard
    k_spid = used_keys // (NUM_COMBOS * ncard)
    keys, names, owners = [], [], tpl.spid_owner[k_spid]
    for s, c, h, o in zip(k_spid.tolist(), k_card.tolist(), k_hand.tolist(), owners.tolist()):
        before, after = tpl.spid_code[s]
        seq = before if after is None else f"{before}/{CARD_NAMES[c]}/{after}"
        keys.append(f"P{o}|{combo_str(h)}|{seq}")
        names.append(tpl.spid_labels[s])

    paper = _paper_sizes(tpl, h0, h1, cards)
    meta = {
        "street": cfg.street,
        "board": cfg.board,
        "pot": cfg.pot,
        "stack": cfg.stack,
        "behind": cfg.effective_stack,
        **cfg.betting_meta(),
        "random_hands": cfg.random_hands,
        "seed": cfg.seed,
        "deals": int(D),
        "hands": [int(np.unique(h0).size), int(np.unique(h1).size)],
        # Each player's hands with positive weight (combo indices, ascending): the root's
        # children are the non-conflicting pairs of these, ordered by (hand0, hand1), so
        # `root_deals` rebuilds the child -> (hand0, hand1) map (`cfrjax.poker.set_root_ranges`).
        "range_support": [np.unique(h0).tolist(), np.unique(h1).tolist()],
        "public_nodes_per_deal": int(np.count_nonzero(tpl.kind != CHANCE)),
        "paper_infosets": paper["infosets"],
        "paper_states": paper["states"],
    }
    if cfg.source:
        meta.update(dict(cfg.source))
    build_s = time.perf_counter() - t_start
    spec = GameSpec(parent=parent, action=action, kind=kind, infoset=infoset, chance_prob=chance_prob,
                    payoff=payoff, infoset_player=owners.astype(np.int8), infoset_keys=tuple(keys),
                    action_names=tuple(names), name=cfg.name,
                    source={"poker": meta, "key_fields": list(KEY_FIELDS), "hand_layout": list(CARD_NAMES)})
    meta["arrays_s"] = round(build_s, 3)
    meta["build_s"] = round(time.perf_counter() - t_start, 3)
    return spec


def _paper_sizes(tpl: _Template, h0, h1, cards) -> dict:
    """Infosets / States the paper's way, by counting distinct (player, hand, public node)."""
    nonchance = tpl.kind != CHANCE
    D = h0.size
    states = int(D * np.count_nonzero(nonchance))
    pre = int(np.count_nonzero(nonchance & (tpl.slot < 0)))
    per_slot = int(np.count_nonzero(nonchance & (tpl.slot >= 0))) // RIVER_CARDS if cards is not None else 0
    infosets = 0
    for h in (h0, h1):
        infosets += np.unique(h).size * pre
        if cards is not None:
            seen = np.zeros((NUM_COMBOS, NUM_CARDS), bool)
            seen[np.repeat(h, RIVER_CARDS), cards.ravel()] = True
            infosets += int(seen.sum()) * per_slot
    return {"infosets": int(infosets), "states": states}


def count_paper_sizes(spec: GameSpec) -> dict:
    """Sizes of a subgame built by `build_spec`, counted the paper's way.

    Returns a dict with `infosets` (pairs (player, information set) over non-chance
    histories, terminals included), `states` (non-chance histories), `nodes`, `deals`,
    `public_nodes_per_deal` and `decision_infosets` (the GameSpec's own infosets).
    States is recounted from `spec.kind`; Infosets comes from the builder's count of
    distinct (player, hand, public node) triples (stored in `spec.source["poker"]`).
    """
    meta = (spec.source or {}).get("poker")
    if meta is None or "paper_infosets" not in meta:
        raise PokerSpecError(f"{spec.name}: not a poker subgame built by cfrjax.games.poker.build_spec")
    states = int(np.count_nonzero(spec.kind != CHANCE))
    if states != meta["paper_states"]:
        raise PokerSpecError(f"{spec.name}: {states} non-chance nodes, but the builder recorded {meta['paper_states']}")
    return {
        "infosets": int(meta["paper_infosets"]),
        "states": states,
        "nodes": spec.num_nodes,
        "deals": int(meta["deals"]),
        "public_nodes_per_deal": int(meta["public_nodes_per_deal"]),
        "decision_infosets": spec.num_infosets,
    }
