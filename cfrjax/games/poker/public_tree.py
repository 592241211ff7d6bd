"""A HUNL flop/turn/river subgame as a `PublicGame` (the public-tree form, `cfrjax.public`).

Built from the configuration directly, independently of the tabular builder
(`cfrjax.games.poker.subgame.build_spec`) below the betting tree, so the tests comparing
the two forms compare two constructions. Shared with it: the betting tree of one street
(`subgame._street_tree`: sizes, action names, codes, fold payoffs and showdown stakes in
chips, sunk cost), cards, ranges and the hand evaluator. Flop spots exist in this form
only (checked against the independent brute-force evaluator of the tests).

* **Hands.** One list for both players (`public_hands`), by the spec's `hands`
  (`PokerSubgameSpec.hands`): `"range"` (the default) the combos of positive weight in
  either range, so every vector and the memory plan scale with the ranges; `"all"` every
  combo not blocked by the board (1,081 on a river, 1,128 on a turn, 1,176 on a flop),
  fixed per board so that new ranges (`set_root_ranges`) never change a shape (weights
  may be 0). Card removal is exact either way: a hand outside the list has weight 0 in
  both ranges, so it adds nothing to any sum over opponent hands.
* **Tree.** The street's public betting tree; every street end before the river is a
  chance node with one child per card not on the board, followed by the next street's
  betting tree (after a called all-in, no more betting: the cards still to come, then a
  showdown). Laid out as `PublicGame`'s trunk (the turn street on a turn; the flop
  street and the 49 turn streets below it on a flop; none on a river) and, per board,
  the forest of river trees below the trunk's river-dealing chance nodes (the whole
  river tree on a river). A turn spot's boards are its 48 river cards, a flop's the
  49 x 48 (turn, river) pairs. Below a card hands holding it are dead. Chance is folded
  into the stakes: for any deal of two hands exactly 45 turn cards (below a flop) and
  44 river cards are live, so each card weighs 1/45 or 1/44.
* **Terminals.** Folds pay `fold` to player 0 (the betting tree's fold payoff);
  showdowns move `sd` (half pot plus the matched wager) from the weaker hand to the
  stronger, ties 0; strengths per board by the 7-card evaluator. A raked spec
  (`PokerSubgameSpec.raked`) adds each terminal's rake `config.rake(pot)`, the pot at
  the terminal being `2 |fold|` or `2 sd` (both players' matched chips): per-player fold
  payoffs (the winner's less the rake) and the showdowns' rake, both times the chance
  reach (`PublicGame.raked`).
* **Ranges.** `config.ranges()` restricted to the hand list, normaliser
  `Z = sum compat(h, h') w0[h] w1[h']` (the tabular deal distribution is `w0 w1 / Z`).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.deck import NO_CARD, NUM_CARDS
from cfrjax.game import default_float_dtype, fingerprint
from cfrjax.host import default_platform
from cfrjax.games.poker.cards import (
    CARD_NAMES, COMBOS, NUM_COMBOS, PokerSpecError, combo_str, combos_blocked_by, parse_combo)
from cfrjax.games.poker.config import HAND_LISTS, PokerSubgameSpec
from cfrjax.games.poker.evaluator import evaluate
from cfrjax.games.poker.subgame import KEY_FIELDS, RIVER_CARDS, _street_tree, _Tree
from cfrjax.host import device_array
from cfrjax.passes import slot_runs
from cfrjax.public import passes as public_passes
from cfrjax.public import showdown_kernel, spot_kernel, terminals as pt
from cfrjax.public.game import TERMINAL_MODES, PublicGame, PublicLabels
from cfrjax.spec import CHANCE, TERMINAL

__all__ = ["DENSE_LIMIT_BYTES", "build_public", "check_public_fits", "public_hands", "public_plan", "public_shapes"]

#: Under `terminals="auto"` the dense matrices are built (for accelerators) only below this size.
DENSE_LIMIT_BYTES = 2 * 2 ** 30
#: Live turn cards below a flop for any deal of two hands: 52 - 3 board - 4 hole cards.
FLOP_TURN_CARDS = 45

def public_hands(config: PokerSubgameSpec, hands=None) -> np.ndarray:
    """`[H]` the hand list (ascending combo indices) of `hands`: `None` (the spec's own
    `config.hands`), `"range"` (the combos of positive weight in either range), `"all"`
    (every combo not blocked by the board), or the given hands (names such as "AsKs" or
    combo ids)."""
    blocked = combos_blocked_by(config.board_cards)
    hands = config.hands if hands is None else hands
    if isinstance(hands, str):
        if hands == "all":
            return np.flatnonzero(~blocked)
        if hands in ("range", "player"):   # "player": the union of the two players' lists
            w0, w1 = config.ranges()
            return np.flatnonzero((w0 > 0) | (w1 > 0))
        raise PokerSpecError(f"hands {hands!r} is not a hand list; allowed: {', '.join(map(repr, HAND_LISTS))} "
                             "or a list of combos")
    ids = []
    for h in hands:
        i = parse_combo(h) if isinstance(h, str) else int(h)
        if not 0 <= i < NUM_COMBOS:
            raise PokerSpecError(f"hand id {h!r} outside 0..{NUM_COMBOS - 1}")
        if blocked[i]:
            raise PokerSpecError(f"hand {combo_str(i)} shares a card with the board {config.board}")
        ids.append(i)
    out = np.unique(np.array(ids, np.int64))
    if out.size != len(ids):
        raise PokerSpecError("the hand list names a hand twice")
    if out.size == 0:
        raise PokerSpecError("the hand list is empty")
    return out


def _per_player(config: PokerSubgameSpec, hands) -> bool:
    """Whether `hands` (`None`: the spec's) asks for one list per player (`"player"`)."""
    hands = config.hands if hands is None else hands
    return isinstance(hands, str) and hands == "player"


# ----------------------------------------------------------------------------------------
# The two stages: breadth-first arrays of a forest of street trees.


@dataclasses.dataclass
class _Stage:
    """Street trees laid out together breadth-first (roots first, in order)."""

    parent: np.ndarray      # [n] local parent (roots: themselves)
    child_start: np.ndarray  # [n + 1]
    kind: np.ndarray        # [n] 0 / 1 decision, 2 chance, 3 terminal
    fold: np.ndarray        # [n] player 0's fold payoff (0 elsewhere)
    sd: np.ndarray          # [n] showdown stake (0 elsewhere)
    root: np.ndarray        # [n] which root's tree holds the node
    codes: list             # [n] the street tree's codes
    labels: list            # [n] action names
    tot: list               # [n] street totals (t0, t1)
    allin: np.ndarray       # [n] bool, a chance node after an all-in was called
    oop_call: np.ndarray    # [n] bool, a chance node after player 0 called (donk sizes next)
    levels: tuple           # level offsets
    fanout: tuple           # the most children per level
    terms: tuple            # a level holds terminals or chance nodes (leaves of the stage)
    new: np.ndarray         # [n] breadth-first position of each node in the trees' own order
    dealt: np.ndarray       # [n] card dealt above the node inside the stage (52: none)

    @property
    def size(self) -> int:
        return self.parent.size


def _stage(trees: list) -> _Stage:
    """Lay out `trees` (`subgame._Tree`s; one with a `dealt` list carries the card dealt
    above each node) breadth-first, roots first."""
    parent, kind, root, fold, sd, codes, labels, tot, allin, oop_call, dealt = [], [], [], [], [], [], [], [], [], [], []
    for r, t in enumerate(trees):
        off = len(parent)
        seen = {}
        for i in range(len(t)):
            parent.append(-1 if t.parent[i] < 0 else off + t.parent[i])
            kind.append(int(t.kind[i]))
            root.append(r)
            fold.append(float(t.fold[i]))
            sd.append(float(t.sd[i]))
            codes.append(t.code[i])
            labels.append(tuple(t.labels[i]))
            tot.append(tuple(t.tot[i]))
            allin.append(bool(t.allin[i]))
            oop_call.append(bool(t.oop_call[i]))
            dealt.append(t.dealt[i] if hasattr(t, "dealt") else NO_CARD)
            if t.parent[i] >= 0:
                if t.action[i] != seen.get(t.parent[i], 0):
                    raise AssertionError("betting tree children out of action order")
                seen[t.parent[i]] = t.action[i] + 1
    n = len(parent)
    children = [[] for _ in range(n)]
    for i, p in enumerate(parent):
        if p >= 0:
            children[p].append(i)
    order, queue = [], deque(i for i in range(n) if parent[i] < 0)
    while queue:
        i = queue.popleft()
        order.append(i)
        queue.extend(children[i])
    order = np.array(order, np.int64)
    new = np.empty(n, np.int64)
    new[order] = np.arange(n)
    old_parent = np.array(parent, np.int64)[order]
    par = np.where(old_parent < 0, np.arange(n), new[np.maximum(old_parent, 0)])
    nchild = np.array([len(children[o]) for o in order], np.int64)
    nroots = int(np.count_nonzero(old_parent < 0))
    child_start = np.concatenate([[nroots], nroots + np.cumsum(nchild)])
    depth = np.zeros(n, np.int64)
    for i in range(nroots, n):
        depth[i] = depth[par[i]] + 1
    D = int(depth.max(initial=0))
    levels = tuple(int(x) for x in np.searchsorted(depth, np.arange(D + 2)))
    k = np.array(kind, np.int64)[order]
    spans = [(levels[d], levels[d + 1]) for d in range(D + 1)]
    return _Stage(
        parent=par, child_start=child_start, kind=k, fold=np.array(fold)[order], sd=np.array(sd)[order],
        root=np.array(root, np.int64)[order], codes=[codes[o] for o in order], labels=[labels[o] for o in order],
        tot=[tot[o] for o in order], allin=np.array(allin, bool)[order],
        oop_call=np.array(oop_call, bool)[order], levels=levels,
        fanout=tuple(int(nchild[lo:hi].max(initial=0)) for lo, hi in spans),
        terms=tuple(bool((k[lo:hi] >= CHANCE).any()) for lo, hi in spans), new=new,
        dealt=np.array(dealt, np.int64)[order])


def _strengths(cfg: PokerSubgameSpec, hands: np.ndarray, extra: np.ndarray):
    """`(strength [B, H] int64, live [B, H] bool)` on the boards `cfg.board + extra[b]`
    (`extra [B, 0]`: the river board itself; `[B, 1]`: a turn's river cards; `[B, 2]`: a
    flop's turn and river cards). Dead hands hold an extra card: strength -1."""
    board = cfg.board_cards
    hc = COMBOS[hands]
    B, H, k = extra.shape[0], hands.size, extra.shape[1]
    live = ~(hc[None, :, :, None] == extra[:, None, None, :]).any((-1, -2))          # [B, H]
    cards7 = np.concatenate([np.broadcast_to(board, (B, H, board.size)),
                             np.broadcast_to(extra[:, None, :], (B, H, k)), np.broadcast_to(hc, (B, H, 2))], axis=2)
    cards7 = np.where(live[..., None], cards7, np.array([0, 4, 9, 14, 19, 24, 29]))  # dummy distinct cards
    return np.where(live, evaluate(cards7.reshape(B * H, 7)).reshape(B, H), -1), live


def _river_tree(cfg: PokerSubgameSpec, tot: tuple, allin: bool, oop_called: bool) -> _Tree:
    """The river below a street end with street totals `tot` (`oop_called`: the street
    ended with player 0 calling, for donk sizes): its betting tree, or a lone showdown
    after a called all-in."""
    if not allin:
        return _street_tree(cfg, tot[0], last=True, street="river", oop_called=bool(oop_called))
    sub = _Tree()
    sub.add(-1, -1, TERMINAL, "", tot, sd=cfg.pot / 2 + tot[0])
    return sub


def _flop_trunk(cfg: PokerSubgameSpec, rest: np.ndarray):
    """A flop spot's trunk: the flop street, and below each of its street ends (chance
    nodes) one child per turn card (49) holding that card's turn street (or, after a called
    all-in, a river-dealing leaf). Returns `(trunk stage, root_chance [G, R], the R river
    trees, turn cards [G])`: `root_chance[g, k]` is the trunk leaf that deals the river
    after turn card `g` on the `k`-th line, in the same order for every card."""
    flop = _street_tree(cfg, 0.0, last=False, street="flop")
    tree = _Tree()
    tree.dealt = []
    for i in range(len(flop)):
        tree.add(flop.parent[i], flop.action[i], flop.kind[i], flop.code[i], flop.tot[i], flop.labels[i],
                 fold=flop.fold[i], sd=flop.sd[i], allin=flop.allin[i], oop_call=flop.oop_call[i])
        tree.dealt.append(NO_CARD)
    ends = [c for c in range(len(flop)) if flop.kind[c] == CHANCE]
    turns = {c: None if flop.allin[c] else
             _street_tree(cfg, flop.tot[c][0], last=False, street="turn", oop_called=bool(flop.oop_call[c]))
             for c in ends}
    leaves, subs = [], []
    for g, card in enumerate(rest):
        row = []
        for c in ends:
            prefix = f"{flop.code[c]}/{CARD_NAMES[card]}/"
            t = turns[c]
            if t is None:
                row.append(tree.add(c, g, CHANCE, prefix, flop.tot[c], allin=True))
                tree.dealt.append(int(card))
                if g == 0:
                    subs.append(_river_tree(cfg, flop.tot[c], True, False))
                continue
            off = len(tree)
            for i in range(len(t)):
                tree.add(c if t.parent[i] < 0 else off + t.parent[i], g if t.parent[i] < 0 else t.action[i],
                         t.kind[i], prefix + t.code[i], t.tot[i], t.labels[i], fold=t.fold[i], sd=t.sd[i],
                         allin=t.allin[i], oop_call=t.oop_call[i])
                tree.dealt.append(int(card))
                if t.kind[i] == CHANCE:
                    row.append(off + i)
                    if g == 0:
                        subs.append(_river_tree(cfg, t.tot[i], t.allin[i], t.oop_call[i]))
        leaves.append(row)
    stage = _stage([tree])
    return stage, stage.new[np.array(leaves, np.int64)], subs, rest


def _trunk_forest(cfg: PokerSubgameSpec):
    """The two stages of a spot and its boards: `(trunk, forest, root_chance, extra [B, k],
    groups G, board_group [B] or None, turn_cards [G] or None, chance_reach)` (the
    module docstring's layout; `extra` holds each board's cards beyond `cfg.board`).
    Betting trees only: fast (a flop with three sizes per street: well under a second),
    so `public_shapes` sizes a spot from it before anything per board is built."""
    board = cfg.board_cards
    rest = np.setdiff1d(np.arange(NUM_CARDS), board)
    groups, board_group, turn_cards = 0, None, None
    if cfg.street == "flop":
        trunk, root_chance, subs, turn_cards = _flop_trunk(cfg, rest)
        forest = _stage(subs)
        groups = turn_cards.size
        rivers = [np.setdiff1d(rest, [t]) for t in turn_cards]
        extra = np.array([(t, r) for t, rs in zip(turn_cards, rivers) for r in rs], np.int64)   # [B, 2]
        board_group = np.repeat(np.arange(groups), [r.size for r in rivers])
        chance_reach = 1.0 / (FLOP_TURN_CARDS * RIVER_CARDS)
    elif board.size == 4:
        first = _street_tree(cfg, 0.0, last=False, street="turn")
        trunk = _stage([first])
        chance = np.flatnonzero(trunk.kind == CHANCE)
        forest = _stage([_river_tree(cfg, trunk.tot[c], trunk.allin[c], trunk.oop_call[c]) for c in chance])
        extra = rest[:, None]
        chance_reach = 1.0 / RIVER_CARDS
        root_chance = chance
    else:   # no trunk: the forest is the river tree, fed by the ranges
        trunk = _stage([])
        forest = _stage([_street_tree(cfg, 0.0, last=True, street="river")])
        extra = np.zeros((1, 0), np.int64)
        chance_reach = 1.0
        root_chance = np.zeros(1, np.int64)
    return trunk, forest, root_chance, extra, groups, board_group, turn_cards, chance_reach


def _builds_dense(terminals: str, boards: int, hands: int, dense_limit_bytes: int) -> bool:
    """Whether `build_public` builds the dense terminal matrices (its `terminals` argument)."""
    return terminals == "dense" or (terminals == "auto" and default_platform() != "cpu"
                                    and (boards == 1 or not showdown_kernel.available())
                                    and pt.dense_bytes(boards, hands, np.dtype(pt.DENSE_DTYPE).itemsize)
                                    <= dense_limit_bytes)


def _own_paths(stage: _Stage, lane: np.ndarray, sentinel: int) -> np.ndarray:
    """`[n, 2, W]`: per node and player the slots of the player's own decisions on the path
    from the node's root (root first), padded with `sentinel`."""
    paths = [[[], []] for _ in range(stage.size)]
    for n in range(stage.size):
        if stage.parent[n] != n:
            for p in (0, 1):
                paths[n][p] = paths[stage.parent[n]][p] + ([int(lane[n, p])] if lane[n, p] != sentinel else [])
    W = max([len(x) for pp in paths for x in pp] + [0])
    out = np.full((stage.size, 2, W), sentinel, np.int64)
    for n, pp in enumerate(paths):
        for p in (0, 1):
            out[n, p, :len(pp[p])] = pp[p]
    return out


def _raked_folds(cfg: PokerSubgameSpec, fold: np.ndarray) -> np.ndarray:
    """`[F, 2]` each player's payoff at folds paying `fold [F]` to player 0 (chips): the
    winner (the player who did not fold) collects `|fold|` less the rake of the pot at the
    fold (`2 |fold|`: both players' matched chips), the folder loses `|fold|`."""
    rake = cfg.rake(2 * np.abs(fold))
    return np.stack([fold - rake * (fold > 0), -fold - rake * (fold < 0)], axis=1)


def _slots(stage: _Stage, player: int):
    """`(decision nodes, their action counts)` of `player` in a stage, node order."""
    nodes = np.flatnonzero(stage.kind == player)
    return nodes, np.diff(stage.child_start)[nodes]


def build_public(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None,
                 reduction: str = "auto", dense_limit_bytes: int = DENSE_LIMIT_BYTES) -> PublicGame:
    """Build the public-tree form of a flop, turn or river subgame.

    Args:
      config: the subgame (`PokerSubgameSpec`, e.g. from `load_poker_config` or
        `load_libratus_endgame`).
      hands: the hand list (`public_hands`): `None` (the spec's `config.hands`, by
        default `"range"`), `"range"` (the ranges' hands), `"all"` (every combo not
        blocked by the board), `"player"` (one list per player, its own range's hands:
        `cfrjax.public.two_lists.player_game`; sorted terminals, the XLA passes), or an
        iterable of combos (names or ids) covering the ranges' hands.
      terminals: `"auto"` (sorted on CPU; on accelerators dense when the dense matrices
        take at most `dense_limit_bytes`, else sorted; sorted for several boards where
        the showdown kernel runs, `cfrjax.public.showdown_kernel.available`), `"sorted"`
        or `"dense"` (always builds the matrices). See `cfrjax.public.terminals`.
      dtype: float dtype of the float leaves (default: float64 under `jax_enable_x64`,
        else float32).
      reduction: `"auto"`, `"pull"` or `"scatter"` (as `CompiledGame.reduction`).
      dense_limit_bytes: see `terminals`.

    Raises:
      PokerSpecError: a hand list that misses a hand of positive weight, or ranges
        without a compatible pair of hands.
    """
    t_start = time.perf_counter()
    if not isinstance(config, PokerSubgameSpec):
        raise PokerSpecError(f"build_public expects a PokerSubgameSpec, got {type(config).__name__}")
    if terminals not in TERMINAL_MODES:
        raise ValueError(f"unknown terminals {terminals!r}; allowed: {', '.join(map(repr, TERMINAL_MODES))}")
    cfg = config
    if _per_player(cfg, hands):   # one list per player, from the ranges' union
        if terminals == "dense":
            raise ValueError("terminals='dense' is not built for hands='player' (sorted terminals only); "
                             "use terminals='auto' or 'sorted', or hands='range'")
        from cfrjax.public.two_lists import player_game
        return player_game(build_public(cfg, hands="range", terminals="sorted", dtype=dtype, reduction=reduction))
    fdt = jnp.dtype(default_float_dtype() if dtype is None else dtype)
    board = cfg.board_cards
    turn = board.size == 4

    # Hands and ranges.
    hand_list = cfg.hands if hands is None else hands if isinstance(hands, str) else "given"
    hands = public_hands(cfg, hands)
    H = hands.size
    w0, w1 = cfg.ranges()
    missing = np.flatnonzero(~np.isin(np.arange(NUM_COMBOS), hands) & ((w0 > 0) | (w1 > 0)))
    if missing.size:
        raise PokerSpecError(f"{cfg.name}: the hand list misses {missing.size} hand(s) of positive range weight "
                             f"(e.g. {combo_str(missing[0])}); pass hands='range' or hands='all'")
    weights = np.stack([w0[hands], w1[hands]])
    hand_cards = COMBOS[hands].astype(np.int32)
    if not pt.compatible_pairs(hand_cards, weights[0] > 0, weights[1] > 0):
        raise PokerSpecError(f"{cfg.name}: every pair of the two ranges shares a card; there is nothing to deal")

    # Trunk (the flop and turn streets) and forest (the river trees below one board).
    trunk, forest, root_chance, extra, groups, board_group, turn_cards, chance_reach = _trunk_forest(cfg)
    B = extra.shape[0]
    strength, live = _strengths(cfg, hands, extra)
    n1 = trunk.size
    t_dealt = trunk.dealt != NO_CARD          # [N1] trunk nodes below the flop's turn card
    edge_deal = t_dealt & ~t_dealt[trunk.parent] if n1 else t_dealt

    # Decision nodes and slots (module docstring of cfrjax.public.game).
    t_nodes = [_slots(trunk, p) for p in (0, 1)]
    f_nodes = [_slots(forest, p) for p in (0, 1)]
    t_sl = [int(t_nodes[p][1].sum()) for p in (0, 1)]
    f_sl = [int(f_nodes[p][1].sum()) for p in (0, 1)]
    split = t_sl[0] + B * f_sl[0]
    S = split + t_sl[1] + B * f_sl[1]
    nact = np.concatenate([np.concatenate([t_nodes[p][1], np.tile(f_nodes[p][1], B)]) for p in (0, 1)])
    I = nact.size
    infoset_slot_start = np.concatenate([[0], np.cumsum(nact)]).astype(np.int64)
    slot_infoset = np.repeat(np.arange(I), nact)
    slot_uniform = 1.0 / nact[slot_infoset]

    def local_slots(stage, nodes_of, sentinel, offsets):
        lane = np.full((stage.size, 2), sentinel, np.int64)
        snode, schild = [], []
        for p in (0, 1):
            nodes, counts = nodes_of[p]
            k = offsets[p]
            for n, a in zip(nodes, counts):
                kids = stage.child_start[n] + np.arange(a)
                lane[kids, p] = k + np.arange(a)
                snode += [n] * int(a)
                schild += kids.tolist()
                k += int(a)
        return lane, np.array(snode, np.int64), np.array(schild, np.int64)

    def stage_sets(nodes_of, offsets):
        """`(player, first slot, actions)` per decision node, as `local_slots` numbers them."""
        out = []
        for p in (0, 1):
            k = offsets[p]
            for a in nodes_of[p][1]:
                out.append((p, k, int(a)))
                k += int(a)
        return out

    f_lane, f_snode, f_schild = local_slots(forest, f_nodes, f_sl[0] + f_sl[1], (0, f_sl[0]))
    f_path = _own_paths(forest, f_lane, f_sl[0] + f_sl[1])
    t_lane, t_snode, t_schild = local_slots(trunk, t_nodes, S, (0, split))

    # Terminals.
    def term_arrays(stage, leaves_after):
        term = stage.kind == TERMINAL
        folds = np.flatnonzero(term & (stage.fold != 0))
        sds = np.flatnonzero(term & (stage.fold == 0))
        if np.any(stage.sd[sds] <= 0):
            raise PokerSpecError(f"{cfg.name}: a terminal is neither a fold nor a showdown")
        pos = np.full(stage.size, folds.size + sds.size + leaves_after.size, np.int64)
        pos[folds] = np.arange(folds.size)
        pos[sds] = folds.size + np.arange(sds.size)
        pos[leaves_after] = folds.size + sds.size + np.arange(leaves_after.size)
        return folds, sds, pos

    f_folds, f_sds, f_pos = term_arrays(forest, np.zeros(0, np.int64))
    t_folds, t_sds, t_pos = term_arrays(trunk, np.asarray(root_chance).ravel() if n1 else np.zeros(0, np.int64))
    if t_sds.size:
        raise AssertionError("a showdown on the turn street")

    card_hands = pt.card_table(hand_cards)
    weights, norm = public_passes.range_weights(hand_cards, card_hands, *weights.astype(fdt), xp=np)
    tables = pt.showdown_tables(strength, hand_cards, card_hands)
    dense = None
    # Several boards (a turn's river cards) on an NVIDIA GPU: every board's showdowns run as
    # one launch of the sorted showdown kernel, faster than the matrices and without their
    # memory.
    if _builds_dense(terminals, B, H, dense_limit_bytes):
        dense = pt.dense_tables(strength, hand_cards, live)

    index_arrays = dict(
        trunk_parent=trunk.parent, trunk_child_start=trunk.child_start, trunk_owner=trunk.kind,
        trunk_lane_slot=t_lane, trunk_term_pos=t_pos, trunk_fold_node=t_folds,
        trunk_slot_node=t_snode, trunk_slot_child=t_schild, root_chance=np.asarray(root_chance),
        forest_parent=forest.parent, forest_child_start=forest.child_start, forest_owner=forest.kind,
        forest_lane_slot=f_lane, forest_term_pos=f_pos, forest_slot_node=f_snode, forest_slot_child=f_schild,
        forest_path=f_path, forest_root_of=forest.root,
        forest_fold_node=f_folds, forest_showdown_node=f_sds, hand_cards=hand_cards, card_hands=card_hands,
        slot_infoset=slot_infoset, infoset_slot_start=infoset_slot_start, **tables)
    if groups:
        index_arrays.update(trunk_dealt=trunk.dealt, board_group=board_group)
    float_arrays = dict(
        trunk_fold_payoff=trunk.fold[t_folds] * np.where(t_dealt[t_folds], 1.0 / FLOP_TURN_CARDS, 1.0),
        forest_fold_payoff=forest.fold[f_folds] * chance_reach, forest_showdown_stake=forest.sd[f_sds] * chance_reach,
        board_live=live.astype(np.float64), slot_uniform=slot_uniform)
    if cfg.raked:
        float_arrays.update(trunk_fold_values=_raked_folds(cfg, trunk.fold[t_folds])
                            * np.where(t_dealt[t_folds], 1.0 / FLOP_TURN_CARDS, 1.0)[:, None],
                            forest_fold_values=_raked_folds(cfg, forest.fold[f_folds]) * chance_reach,
                            forest_showdown_rake=cfg.rake(2 * forest.sd[f_sds]) * chance_reach)

    # Labels: decision nodes in slot order.
    codes, players, names, dealt, committed = [], [], [], [], []
    for p in (0, 1):
        for n in t_nodes[p][0]:
            codes.append(trunk.codes[n])
            players.append(p)
            names.append(trunk.labels[n])
            dealt.append((int(trunk.dealt[n]),) if t_dealt[n] else ())
            committed.append(trunk.tot[n])
        for b in range(B):
            above = root_chance[board_group[b]] if groups else root_chance
            for n in f_nodes[p][0]:
                if n1:
                    codes.append(f"{trunk.codes[above[forest.root[n]]]}/{CARD_NAMES[extra[b, -1]]}/{forest.codes[n]}")
                else:
                    codes.append(forest.codes[n])
                dealt.append(tuple(int(c) for c in extra[b]))
                players.append(p)
                names.append(forest.labels[n])
                committed.append(forest.tot[n])
    digest = fingerprint({**index_arrays, **float_arrays, "hands": hands, "strength": strength,
                          "levels": np.array(trunk.levels + (-1,) + forest.levels)})
    meta = {
        "street": cfg.street, "board": cfg.board, "pot": cfg.pot, "stack": cfg.stack, "behind": cfg.effective_stack,
        **cfg.betting_meta(), "random_hands": cfg.random_hands, "seed": cfg.seed,
        "form": "public", "hands": int(H), "hand_list": hand_list, "boards": int(B),
        "public_nodes": int(n1 + B * forest.size),
        "decision_nodes": int(I), "terminals": terminals,
        "support": [int(np.count_nonzero(weights[0] > 0)), int(np.count_nonzero(weights[1] > 0))],
    }
    if cfg.raked:   # JSON-able: no cap is null
        meta["rake"] = {"rate": cfg.rake_rate, "cap": cfg.rake_cap if np.isfinite(cfg.rake_cap) else None}
    meta["board_cards"] = [int(c) for c in board]
    if turn:   # what a depth-limited solve (cfrjax.public.depth) hands its leaf function
        meta["leaf_cards"] = [int(c) for c in extra[:, 0]]
        meta["leaf_committed"] = [float(trunk.tot[c][0]) for c in root_chance]
    elif groups:   # the same below the turn card: the flop street's ends in trunk order
        meta["leaf_cards"] = [int(c) for c in turn_cards]
        meta["leaf_committed"] = [float(trunk.tot[c][0]) for c in np.flatnonzero((trunk.kind == CHANCE) & ~t_dealt)]
    if cfg.source:
        meta.update(dict(cfg.source))
    labels = PublicLabels(
        name=cfg.name, fingerprint=digest, source={"poker": meta, "key_fields": list(KEY_FIELDS)},
        payoff_offset=0.0, node_codes=tuple(codes), node_player=tuple(players), action_names=tuple(names),
        node_dealt=tuple(dealt), node_slot_start=infoset_slot_start.copy(), hands=hands.copy(),
        hand_names=tuple(combo_str(h) for h in hands), hand_cards=hand_cards.copy(),
        node_committed=np.array(committed, np.float64).reshape(-1, 2))

    leaves = {k: device_array(v, jnp.int32) for k, v in index_arrays.items()}
    leaves.update({k: device_array(v, fdt) for k, v in float_arrays.items()})
    leaves["card_matrix"] = device_array(pt.card_matrix(hand_cards, card_hands.shape[0], xp=np))
    if dense is not None:
        leaves["dense_showdown"] = device_array(dense[0])
        leaves["dense_compat"] = device_array(dense[1])
    game = PublicGame(
        **leaves, weights=device_array(weights, fdt), norm=device_array(norm, fdt),
        num_nodes=int(n1 + B * forest.size), num_slots=int(S), num_infosets=int(I), num_hands=int(H),
        num_boards=int(B), trunk_levels=trunk.levels if n1 else (), trunk_fanout=trunk.fanout if n1 else (),
        trunk_level_terms=trunk.terms if n1 else (),
        forest_levels=forest.levels, forest_fanout=forest.fanout, forest_level_terms=forest.terms,
        trunk_slots=tuple(t_sl), forest_slots=tuple(f_sl), slot_split=int(split), dealt=bool(n1),
        board_groups=int(groups),
        trunk_level_dealt=tuple(bool(edge_deal[lo:hi].any()) for lo, hi in zip(trunk.levels[:-1], trunk.levels[1:]))
        if groups else (),
        max_actions=int(nact.max()), slot_runs=slot_runs(infoset_slot_start),
        forest_plan=None if (groups or B > 1 and not n1) else spot_kernel.plan(
            forest.parent, forest.kind, f_lane, f_folds, f_sds, np.arange(f_sl[0] + f_sl[1]), f_snode, f_schild,
            stage_sets(f_nodes, (0, f_sl[0])), f_sl[0], f_sl[0] + f_sl[1]),
        trunk_plan=None if (groups or not n1) else spot_kernel.plan(
            trunk.parent, trunk.kind, t_lane, t_folds, (), np.concatenate([np.arange(t_sl[0]), split + np.arange(t_sl[1])]),
            t_snode, t_schild, stage_sets(t_nodes, (0, split)), split, S, chance=root_chance),
        reduction=reduction, terminals=terminals,
        labels=labels)
    meta["build_s"] = round(time.perf_counter() - t_start, 3)
    return game


# ----------------------------------------------------------------------------------------
# Sizes and memory before building.


def public_shapes(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None,
                  dense_limit_bytes: int = DENSE_LIMIT_BYTES) -> PublicGame:
    """The `PublicGame` that `build_public(config, ...)` would build, with
    `jax.ShapeDtypeStruct` leaves of the same shapes and dtypes and the same sizes
    (`sizes()`) and level layout, from the betting trees alone: nothing per board (hand
    strengths, showdown tables, labels) is built, so it takes well under a second for any
    spot. `cfrjax.memory.memory_plan` of it is the built game's plan (tested equal), which
    is how `check_public_fits` refuses a spot too large for the machine before building it.
    It is not a game to solve (no values, no labels)."""
    if not isinstance(config, PokerSubgameSpec):
        raise PokerSpecError(f"public_shapes expects a PokerSubgameSpec, got {type(config).__name__}")
    if terminals not in TERMINAL_MODES:
        raise ValueError(f"unknown terminals {terminals!r}; allowed: {', '.join(map(repr, TERMINAL_MODES))}")
    fdt = jnp.dtype(jax.dtypes.canonicalize_dtype(default_float_dtype() if dtype is None else dtype))
    i32 = jnp.dtype(jnp.int32)
    hand_ids = public_hands(config, hands)
    H = int(hand_ids.size)
    M = max(1, int(np.bincount(COMBOS[hand_ids].ravel(), minlength=NUM_CARDS).max()))   # `card_table`'s width
    trunk, forest, root_chance, extra, groups, _, _, _ = _trunk_forest(config)
    B, n1, n2 = int(extra.shape[0]), trunk.size, forest.size
    t_sl = [int(_slots(trunk, p)[1].sum()) for p in (0, 1)]
    f_sl = [int(_slots(forest, p)[1].sum()) for p in (0, 1)]
    nact = np.concatenate([np.concatenate([_slots(trunk, p)[1], np.tile(_slots(forest, p)[1], B)]) for p in (0, 1)])
    S, I = int(nact.sum()), int(nact.size)
    # W: the most own decisions of one player on a path from a forest root (`_own_paths`).
    own = np.zeros((n2, 2), np.int64)
    for n in range(n2):
        p = forest.parent[n]
        if p != n:
            own[n] = own[p] + (forest.kind[p] == np.arange(2))
    W = int(own.max(initial=0))

    def terms(stage):
        term = stage.kind == TERMINAL
        return int(np.count_nonzero(term & (stage.fold != 0))), int(np.count_nonzero(term & (stage.fold == 0)))

    tF, _ = terms(trunk)
    fF, K = terms(forest)
    ints = dict(
        trunk_parent=(n1,), trunk_child_start=(trunk.child_start.size,), trunk_owner=(n1,), trunk_lane_slot=(n1, 2),
        trunk_term_pos=(n1,), trunk_fold_node=(tF,), trunk_slot_node=(sum(t_sl),), trunk_slot_child=(sum(t_sl),),
        root_chance=np.shape(root_chance), forest_parent=(n2,), forest_child_start=(n2 + 1,), forest_owner=(n2,),
        forest_lane_slot=(n2, 2), forest_term_pos=(n2,), forest_slot_node=(sum(f_sl),),
        forest_slot_child=(sum(f_sl),), forest_path=(n2, 2, W), forest_root_of=(n2,), forest_fold_node=(fF,),
        forest_showdown_node=(K,), hand_cards=(H, 2), card_hands=(NUM_CARDS, M), slot_infoset=(S,),
        infoset_slot_start=(I + 1,), sd_sorted=(B, H), sd_card_sorted=(B, NUM_CARDS, M), sd_index=(B, H, 6))
    if groups:
        ints.update(trunk_dealt=(n1,), board_group=(B,))
    floats = dict(trunk_fold_payoff=(tF,), forest_fold_payoff=(fF,), forest_showdown_stake=(K,), board_live=(B, H),
                  slot_uniform=(S,), weights=(2, H), norm=())
    if config.raked:
        floats.update(trunk_fold_values=(tF, 2), forest_fold_values=(fF, 2), forest_showdown_rake=(K,))
    leaves = {k: jax.ShapeDtypeStruct(tuple(v), i32) for k, v in ints.items()}
    leaves.update({k: jax.ShapeDtypeStruct(tuple(v), fdt) for k, v in floats.items()})
    dense_dt = jnp.dtype(pt.DENSE_DTYPE)
    leaves["card_matrix"] = jax.ShapeDtypeStruct((-(-53 // pt.MATMUL_ROWS) * pt.MATMUL_ROWS, H), dense_dt)
    if _builds_dense(terminals, B, H, dense_limit_bytes):
        leaves["dense_showdown"] = jax.ShapeDtypeStruct((B, H, H), dense_dt)
        leaves["dense_compat"] = jax.ShapeDtypeStruct((H, H), dense_dt)
    lists = ()
    if _per_player(config, hands):
        from cfrjax.public.two_lists import player_shapes
        leaves, lists = player_shapes(leaves, np.stack(config.ranges())[:, hand_ids], COMBOS[hand_ids])
        H = leaves["weights"].shape[1]
    return PublicGame(
        **leaves, num_nodes=n1 + B * n2, num_slots=S, num_infosets=I, num_hands=H, num_boards=B, player_lists=lists,
        trunk_levels=trunk.levels if n1 else (), trunk_fanout=trunk.fanout if n1 else (),
        trunk_level_terms=trunk.terms if n1 else (), forest_levels=forest.levels, forest_fanout=forest.fanout,
        forest_level_terms=forest.terms, trunk_slots=tuple(t_sl), forest_slots=tuple(f_sl),
        slot_split=t_sl[0] + B * f_sl[0], dealt=bool(n1), board_groups=int(groups),
        max_actions=int(nact.max(initial=0)), terminals="sorted" if lists else terminals)


def public_plan(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None, order: str | None = None,
                batch: int = 1):
    """`cfrjax.memory.memory_plan` of the spot `build_public(config, hands=hands,
    terminals=terminals, dtype=dtype)` would build, before building it (`public_shapes`),
    for a solve in `order` (default the solver's default) of `batch` subgames."""
    from cfrjax.memory import memory_plan

    return memory_plan(public_shapes(config, hands=hands, terminals=terminals, dtype=dtype), dtype=dtype, order=order,
                       batch=batch)


def check_public_fits(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None,
                      order: str | None = None, device=None, budget_bytes: int | None = None) -> dict:
    """Refuse a spot whose solve cannot fit, before building it (`cfrjax.load_game` calls it).

    The plan is `public_plan` (the rows `cfrjax.memory.guard` checks after the build),
    checked by `cfrjax.memory.check_fits` against `device`'s free memory (default the
    first device: device memory on a GPU, the host's available memory on a CPU) or
    `budget_bytes`. On an accelerator the same plan is also checked against the host's
    available memory, where the game is built: building takes less than the plan (the
    game's leaves and their temporaries; a tiny flop with every live combo: 1.3 GB resident
    for a 3.3 GB plan), the solver state and scratch (`[S, H]`, `[N, H]` arrays) being the
    bulk of it. The default order (alternating) needs the least scratch, so only a spot
    that fits under no order is refused here; the solve's own check (`guard`, with its
    order and dtype) still runs before it starts.

    Returns: `check_fits`'s dict (`need`, `free`, `plan`, ...).

    Raises:
      MemoryPlanError: the message names the spot's sizes, the plan's total and the free
        memory, and what to change; `err.plan` is the `MemoryPlan`.
    """
    from cfrjax.memory import check_fits

    plan = public_plan(config, hands=hands, terminals=terminals, dtype=dtype, order=order)
    sz = plan.sizes
    what = (f"{config.name!r} (a {config.street} spot: {sz['nodes']:,} public nodes over {sz['boards']:,} board(s), "
            f"{sz['slots']:,} slots x {sz['hands']:,} hands), refused before building it,")
    narrow = "narrower ranges, " if (config.hands if hands is None else hands) != "all" else \
        "hands = \"range\" (vectors over the ranges' hands instead of every live combo), "
    remedy = (f"use {narrow}fewer bet and raise sizes (or fewer raises), a later street (a turn or river spot), or a "
              "machine with more memory (cfrjax.games.poker.public_tree.public_plan(config) prints the plan)")
    device = jax.devices()[0] if device is None and budget_bytes is None else device
    out = check_fits(plan, device, budget_bytes=budget_bytes, what=what, remedy=remedy)
    if budget_bytes is None and device.platform != "cpu":
        try:
            host = jax.devices("cpu")[0]
        except RuntimeError:   # JAX_PLATFORMS without the CPU: the host is not checked
            return out
        check_fits(plan, host, what=what + " built on the host", remedy=remedy)
    return out
