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
  both ranges, so it adds nothing to any sum over opponent hands. With `pad_hands` the
  list (and `card_hands`' width) is padded to its size class (`hand_class`,
  `_pad_hands`) so that spots of one shape class share their compiled programs
  (`docs/design/shapes.md`).
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
import functools
import time

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.deck import NO_CARD, NUM_CARDS
from cfrjax.game import Chunked, chunked, default_float_dtype, fingerprint
from cfrjax.host import default_platform
from cfrjax.games.poker.cards import (
    CARD_NAMES, COMBOS, NUM_COMBOS, PokerSpecError, combo_str, combos_blocked_by, parse_combo)
from cfrjax.games.poker.config import HAND_LISTS, PokerSubgameSpec
from cfrjax.games.poker.evaluator import board_values
from cfrjax.games.poker.subgame import KEY_FIELDS, RIVER_CARDS, _street_tree, _Tree
from cfrjax.host import aligned_empty, device_array
from cfrjax.passes import slot_runs
from cfrjax.public import passes as public_passes
from cfrjax.public import showdown_kernel, spot_kernel, terminals as pt
from cfrjax.public.game import TERMINAL_MODES, Deferred, PublicGame, PublicLabels
from cfrjax.spec import CHANCE, TERMINAL

__all__ = ["DENSE_LIMIT_BYTES", "build_public", "check_public_fits", "hand_class", "public_hands", "public_plan",
           "public_shapes"]

#: Under `terminals="auto"` the dense matrices are built (for accelerators) only below this size.
DENSE_LIMIT_BYTES = 2 * 2 ** 30
#: Live turn cards below a flop for any deal of two hands: 52 - 3 board - 4 hole cards.
FLOP_TURN_CARDS = 45
#: Index leaves that differ between spots of one shape class (left out of `PublicLabels.cache_key`).
_PER_SPOT = ("hand_cards", "card_hands", "sd_sorted", "sd_card_sorted", "sd_index", "trunk_dealt")

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


def hand_class(n: int) -> int:
    """The padded size class of a count `n >= 1` (`PokerSubgameSpec.pad_hands`): `n` itself
    up to 8, above it `n` rounded up to a multiple of a quarter of the largest power of
    two below `n`: 1..8, 10, 12, 14, 16, 20, 24, 28, 32, 40, ..., 64, 80, 96, 112, 128,
    160, ...: four classes per power of two, each at most 1.25 times any count in it
    (`n <= class <= n - 1 + (n - 1) / 4` above 8)."""
    if isinstance(n, (bool, np.bool_)) or int(n) != n or n < 1:
        raise ValueError(f"hand_class takes a count >= 1, got {n!r}")
    n = int(n)
    if n <= 8:
        return n
    step = 1 << ((n - 1).bit_length() - 3)
    return -(-n // step) * step


def _padded_sizes(cfg: PokerSubgameSpec, hands, H: int, M: int) -> tuple:
    """`(H_p, M_p)`: the hand count and table width (`card_table`'s `M`, the most hands
    holding one card) a spot with `H` hands and width `M` is built with: their classes
    (`hand_class`; `M_p` at most the cards off the board but one, every hand a card can
    be in) under `cfg.pad_hands` except for the `"all"` hand list (`hands`, as
    `public_hands` takes it), else `(H, M)`."""
    listed = cfg.hands if hands is None else hands
    if not cfg.pad_hands or (isinstance(listed, str) and listed == "all"):
        return H, M
    return hand_class(H), min(hand_class(M), NUM_CARDS - cfg.board_cards.size - 1)


def _pad_hands(cfg: PokerSubgameSpec, hands, hand_cards, card_hands, weights, strength, live) -> tuple:
    """The hand arrays padded to the spot's class (`_padded_sizes`): `(hand_cards [H_p, 2],
    card_hands [C, M_p], weights [2, H_p], strength [B, H_p], live [B, H_p])`, the
    padding hands `H..H_p-1` last, every real hand's entries as they were.

    Why this is exact: every real hand's terms are the unpadded ones, the padding adds
    exact zeros (below). Results are bit for bit the unpadded ones where the sums over the
    hands run in hand order (the CPU's native update, `cfrjax.public.native`); where XLA
    vectorises a sum over the hands (its own form, dense matrices) the unpadded list's
    remainder is added in another order: equal to rounding (`docs/design/shapes.md`).

    * A padding hand has weight 0 and is dead on every board (`live` False, so
      `board_live` 0): its reach is 0 everywhere, so it adds exact zeros to every sum
      over opponent hands, and its own values are masked.
    * Its cards are two cards of the board (`hand_cards`), which no real hand holds, and
      it is listed in no card's row of `card_hands` (the real hands' table, widened with
      the padding index `H_p`, which the terminal passes read as a zero row): the
      per-card sums of the real cards, and so every real hand's card-removal terms, are
      the unpadded ones term by term. The board cards' rows hold the padding index only
      (sum 0), so a padding hand's own compatible sum is the total: finite, as every
      index it gathers stays in its table (native and CUDA kernels read these tables
      unchecked).
    * Its strength is above every real hand's on every board, so the showdown sort puts
      the padding hands last: each real hand's counts of weaker and not stronger hands
      (`sd_index`), and the prefix sums below them, are the unpadded ones.
    * The normaliser is the caller's, computed before padding (`range_weights` of the
      real hands).
    """
    H, M = hand_cards.shape[0], card_hands.shape[1]
    Hp, Mp = _padded_sizes(cfg, hands, H, M)
    if (Hp, Mp) == (H, M):
        return hand_cards, card_hands, weights, strength, live
    pad = Hp - H
    board = cfg.board_cards
    hand_cards = np.concatenate([hand_cards, np.broadcast_to(board[:2].astype(hand_cards.dtype), (pad, 2))])
    card_hands = np.pad(np.where(card_hands == H, Hp, card_hands), ((0, 0), (0, Mp - M)),
                        constant_values=Hp).astype(card_hands.dtype)
    weights = np.pad(weights, ((0, 0), (0, pad)))
    top = strength.max(initial=0) + 1
    strength = np.concatenate([strength, np.full((strength.shape[0], pad), top, strength.dtype)], axis=1)
    live = np.pad(live, ((0, 0), (0, pad)))
    return hand_cards, card_hands, weights, strength, live


def _pad_tables(tables: dict, Hp: int, Mp: int) -> dict:
    """The sorted-showdown tables of the real hands (`terminals.showdown_tables`: `H`
    hands) as those of the padded list (`_pad_hands`: `Hp` hands, card tables `Mp` wide):
    `terminals.widen_tables` (the padding hands are the strongest and tie with each other,
    so they sort last and every real hand's positions stay), and `sd_index` rows for the
    padding hands: `lt = H`, `le = Hp`, card columns at card 0's first entry (in range;
    their values are masked, they are dead on every board)."""
    B, H = tables["sd_sorted"].shape
    out = pt.widen_tables(tables, Hp, Mp)
    if Hp == H:
        return out
    index = aligned_empty((B, Hp, 6), np.int32)
    index[:, :H] = out["sd_index"]
    index[:, H:, 0], index[:, H:, 1], index[:, H:, 2:] = H, Hp, Hp + 1
    return {**out, "sd_index": index}


def _per_player(config: PokerSubgameSpec, hands) -> bool:
    """Whether `hands` (`None`: the spec's) asks for one list per player (`"player"`)."""
    hands = config.hands if hands is None else hands
    return isinstance(hands, str) and hands == "player"


# ----------------------------------------------------------------------------------------
# The two stages: breadth-first arrays of a forest of street trees.


@dataclasses.dataclass
class _Stage:
    """Street trees laid out together breadth-first (roots first, in order). Each node's
    code and action names are read off its source tree (`trees[src_tree]`, node
    `src_node`, code prefixed by `prefixes[src_prefix]`) when first asked for."""

    parent: np.ndarray      # [n] local parent (roots: themselves)
    child_start: np.ndarray  # [n + 1]
    kind: np.ndarray        # [n] 0 / 1 decision, 2 chance, 3 terminal
    fold: np.ndarray        # [n] player 0's fold payoff (0 elsewhere)
    sd: np.ndarray          # [n] showdown stake (0 elsewhere)
    root: np.ndarray        # [n] which root's tree holds the node
    tot: np.ndarray         # [n, 2] street totals (t0, t1), float64
    allin: np.ndarray       # [n] bool, a chance node after an all-in was called
    oop_call: np.ndarray    # [n] bool, a chance node after player 0 called (donk sizes next)
    levels: tuple           # level offsets
    fanout: tuple           # the most children per level
    terms: tuple            # a level holds terminals or chance nodes (leaves of the stage)
    new: np.ndarray         # [n] breadth-first position of each node in the trees' own order
    dealt: np.ndarray       # [n] card dealt above the node inside the stage (52: none)
    src_tree: np.ndarray    # [n] source tree of each node
    src_node: np.ndarray    # [n] its node there
    src_prefix: np.ndarray  # [n] its code's prefix
    trees: list             # the source trees (`subgame._Tree`)
    prefixes: list          # code prefixes (e.g. a flop line and a turn card: "k.k/7h/")

    @property
    def size(self) -> int:
        return self.parent.size

    @functools.cached_property
    def codes(self) -> list:
        """`[n]` the public sequence code of each node (`"k.b10"`, `"k.k/7h/b4"`)."""
        return [self.prefixes[p] + self.trees[t].code[i]
                for t, i, p in zip(self.src_tree.tolist(), self.src_node.tolist(), self.src_prefix.tolist())]

    @functools.cached_property
    def labels(self) -> list:
        """`[n]` tuples of action names (decision nodes; `()` elsewhere)."""
        return [self.trees[t].labels[i] for t, i in zip(self.src_tree.tolist(), self.src_node.tolist())]


def _columns(tree: _Tree, tree_id: int = 0) -> dict:
    """One street tree's nodes as the column arrays `_stage` lays out (parents local, -1 at
    the root)."""
    n = len(tree)
    return dict(parent=np.array(tree.parent, np.int64).reshape(n), action=np.array(tree.action, np.int64).reshape(n),
                kind=np.array(tree.kind, np.int64).reshape(n), fold=np.array(tree.fold, np.float64).reshape(n),
                sd=np.array(tree.sd, np.float64).reshape(n), tot=np.array(tree.tot, np.float64).reshape(n, 2),
                allin=np.array(tree.allin, bool).reshape(n), oop_call=np.array(tree.oop_call, bool).reshape(n),
                dealt=np.full(n, NO_CARD, np.int64), src_tree=np.full(n, tree_id, np.int64),
                src_node=np.arange(n, dtype=np.int64), src_prefix=np.zeros(n, np.int64))


def _stage_of(trees: list) -> _Stage:
    """`trees` (`subgame._Tree`s, equal ones may repeat) laid out breadth-first, one root each."""
    cols, off, made = [], 0, {}
    for t in trees:
        if id(t) not in made:
            made[id(t)] = (len(made), t)
        c = dict(_columns(t, made[id(t)][0]))
        c["parent"] = np.where(c["parent"] < 0, -1, c["parent"] + off)
        cols.append(c)
        off += len(t)
    joined = {k: np.concatenate([c[k] for c in cols]) for k in cols[0]} if cols else _columns(_Tree())
    return _stage(joined, [t for _, t in sorted(made.values(), key=lambda x: x[0])], [""])


def _stage(cols: dict, trees: list, prefixes: list) -> _Stage:
    """Lay out the nodes of `cols` (`_columns`' arrays, parents before children, -1 at the
    roots, siblings in action order) breadth-first: level by level, each level's nodes by
    their parent's position, then in their own order."""
    parent = cols["parent"]
    n = parent.size
    depth = np.zeros(n, np.int64)
    up = parent.copy()
    while n and (up >= 0).any():   # walk every node up one ancestor per round
        has = up >= 0
        depth += has
        up = np.where(has, parent[np.maximum(up, 0)], -1)
    D = int(depth.max(initial=0))
    new = np.empty(n, np.int64)
    parts = [np.flatnonzero(parent < 0)]
    new[parts[0]] = np.arange(parts[0].size)
    k = parts[0].size
    for d in range(1, D + 1):
        nodes = np.flatnonzero(depth == d)
        nodes = nodes[np.argsort(new[parent[nodes]], kind="stable")]
        new[nodes] = k + np.arange(nodes.size)
        k += nodes.size
        parts.append(nodes)
    order = np.concatenate(parts)
    old_parent = parent[order]
    is_root = old_parent < 0
    par = np.where(is_root, np.arange(n), new[np.maximum(old_parent, 0)])
    nroots = int(np.count_nonzero(is_root))
    nchild = np.bincount(par[~is_root], minlength=n).astype(np.int64)
    child_start = np.concatenate([[nroots], nroots + np.cumsum(nchild)]).astype(np.int64)
    if (cols["action"][order] != np.arange(n) - child_start[par])[~is_root].any():
        raise AssertionError("betting tree children out of action order")
    levels = tuple(int(x) for x in np.searchsorted(depth[order], np.arange(D + 2)))
    root = np.arange(n, dtype=np.int64)
    for lo, hi in zip(levels[1:-1], levels[2:]):
        root[lo:hi] = root[par[lo:hi]]
    k = cols["kind"][order]
    spans = [(levels[d], levels[d + 1]) for d in range(D + 1)]
    return _Stage(
        parent=par, child_start=child_start, kind=k, fold=cols["fold"][order], sd=cols["sd"][order], root=root,
        tot=cols["tot"][order], allin=cols["allin"][order], oop_call=cols["oop_call"][order], levels=levels,
        fanout=tuple(int(nchild[lo:hi].max(initial=0)) for lo, hi in spans),
        terms=tuple(bool((k[lo:hi] >= CHANCE).any()) for lo, hi in spans), new=new, dealt=cols["dealt"][order],
        src_tree=cols["src_tree"][order], src_node=cols["src_node"][order], src_prefix=cols["src_prefix"][order],
        trees=trees, prefixes=prefixes)


def _strengths(cfg: PokerSubgameSpec, hands: np.ndarray, extra: np.ndarray):
    """`(strength [B, H] int32, live [B, H] bool)` on the boards `cfg.board + extra[b]`
    (`extra [B, 0]`: the river board itself; `[B, 1]`: a turn's river cards; `[B, 2]`: a
    flop's turn and river cards; `evaluator.board_values`). Dead hands hold an extra
    card: strength -1."""
    board = cfg.board_cards
    hc = COMBOS[hands]
    B = extra.shape[0]
    on = np.zeros((B, NUM_CARDS), bool)
    on[np.arange(B)[:, None], extra] = True
    live = ~(on[:, hc[:, 0]] | on[:, hc[:, 1]])                                          # [B, H]
    boards = np.concatenate([np.broadcast_to(board, (B, board.size)), extra], axis=1)
    strength = board_values(boards, hc, out=np.empty((B, hc.shape[0]), np.int32))
    np.putmask(strength, ~live, -1)
    return strength, live


def _river_tree(cfg: PokerSubgameSpec, tot: tuple, allin: bool, oop_called: bool) -> _Tree:
    """The river below a street end with street totals `tot` (`oop_called`: the street
    ended with player 0 calling, for donk sizes): its betting tree, or a lone showdown
    after a called all-in."""
    if not allin:
        return _street_tree(cfg, tot[0], last=True, street="river", oop_called=bool(oop_called))
    sub = _Tree()
    sub.add(-1, -1, TERMINAL, "", tot, sd=cfg.pot / 2 + tot[0])
    return sub


def _river_trees(cfg: PokerSubgameSpec, ends: list) -> list:
    """`_river_tree` of each `(tot, allin, oop_called)` in `ends`, equal ends sharing one tree."""
    made = {}
    out = []
    for tot, allin, oop in ends:
        key = (tuple(float(x) for x in tot), bool(allin), bool(oop))
        if key not in made:
            made[key] = _river_tree(cfg, *key)
        out.append(made[key])
    return out


def _flop_trunk(cfg: PokerSubgameSpec, rest: np.ndarray):
    """A flop spot's trunk: the flop street, and below each of its street ends (chance
    nodes) one child per turn card (49) holding that card's turn street (or, after a called
    all-in, a river-dealing leaf). Returns `(trunk stage, root_chance [G, R], the R river
    trees, turn cards [G])`: `root_chance[g, k]` is the trunk leaf that deals the river
    after turn card `g` on the `k`-th line, in the same order for every card.

    Node order before the layout: the flop's nodes, then per turn card one block (the
    same for every card) of the turn streets below the flop's ends in order."""
    flop = _street_tree(cfg, 0.0, last=False, street="flop")
    nf = len(flop)
    trees = [flop]
    ends = [c for c in range(nf) if flop.kind[c] == CHANCE]
    block, river_ends, leaf_pos, off = [], [], [], 0
    for j, c in enumerate(ends):
        if flop.allin[c]:
            t = _Tree()
            t.add(-1, -1, CHANCE, "", flop.tot[c], allin=True)
            river_ends.append((flop.tot[c], True, False))
            leaf_pos.append(off)
        else:
            t = _street_tree(cfg, flop.tot[c][0], last=False, street="turn", oop_called=bool(flop.oop_call[c]))
            for i in range(len(t)):
                if t.kind[i] == CHANCE:
                    river_ends.append((t.tot[i], t.allin[i], t.oop_call[i]))
                    leaf_pos.append(off + i)
        trees.append(t)
        col = _columns(t, len(trees) - 1)
        col["parent"] = np.where(col["parent"] < 0, -1, col["parent"] + off)   # local to the block
        col["end"] = np.full(len(t), c, np.int64)
        col["end_index"] = np.full(len(t), j, np.int64)
        block.append(col)
        off += len(t)
    G, P = rest.size, off
    blk = {k: np.concatenate([b[k] for b in block]) for k in block[0]}
    g = np.repeat(np.arange(G), P)
    local = np.tile(blk["parent"], G)
    turn = {k: np.tile(blk[k], G) if blk[k].ndim == 1 else np.tile(blk[k], (G, 1)) for k in blk}
    turn["parent"] = np.where(local < 0, turn["end"], nf + g * P + local)
    turn["action"] = np.where(local < 0, g, turn["action"])
    turn["dealt"] = rest[g].astype(np.int64)
    turn["src_prefix"] = 1 + g * len(ends) + turn["end_index"]
    first = _columns(flop, 0)
    cols = {k: np.concatenate([first[k], turn[k]]) for k in first}
    prefixes = [""] + [f"{flop.code[c]}/{CARD_NAMES[card]}/" for card in rest for c in ends]
    stage = _stage(cols, trees, prefixes)
    leaves = nf + np.arange(G)[:, None] * P + np.array(leaf_pos, np.int64)[None, :]
    return stage, stage.new[leaves], _river_trees(cfg, river_ends), rest


def _trunk_forest(cfg: PokerSubgameSpec, merge=None):
    """The two stages of a spot and its boards: `(trunk, forest, root_chance, extra [B, k],
    groups G, board_group [B] or None, turn_cards [G] or None, chance_reach)` (the
    module docstring's layout; `extra` holds each board's cards beyond `cfg.board`).
    Betting trees only: fast (a flop with three sizes per street: well under a second),
    so `public_shapes` sizes a spot from it before anything per board is built. `merge`
    (`isomorphism.Merge`): only the representative turn and river cards are dealt."""
    board = cfg.board_cards
    rest = np.setdiff1d(np.arange(NUM_CARDS), board)
    groups, board_group, turn_cards = 0, None, None
    if cfg.street == "flop":
        trunk, root_chance, subs, turn_cards = _flop_trunk(cfg, rest if merge is None else merge.turn_cards())
        forest = _stage_of(subs)
        groups = turn_cards.size
        rivers = ([np.setdiff1d(rest, [t]) for t in turn_cards] if merge is None else merge.river_cards())
        extra = np.array([(t, r) for t, rs in zip(turn_cards, rivers) for r in rs], np.int64)   # [B, 2]
        board_group = np.repeat(np.arange(groups), [r.size for r in rivers])
        chance_reach = 1.0 / (FLOP_TURN_CARDS * RIVER_CARDS)
    elif board.size == 4:
        first = _street_tree(cfg, 0.0, last=False, street="turn")
        trunk = _stage_of([first])
        chance = np.flatnonzero(trunk.kind == CHANCE)
        forest = _stage_of(_river_trees(cfg, [(trunk.tot[c], trunk.allin[c], trunk.oop_call[c]) for c in chance]))
        extra = rest[:, None]
        chance_reach = 1.0 / RIVER_CARDS
        root_chance = chance
        if merge is not None:
            extra = merge.river_cards()[0][:, None]
    else:   # no trunk: the forest is the river tree, fed by the ranges
        trunk = _stage_of([])
        forest = _stage_of([_street_tree(cfg, 0.0, last=True, street="river")])
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


#: Board rows times hands per chunk of `showdown_tables` in `build_public` (its temporaries
#: stay a few MB whatever the spot).
_TABLE_CHUNK = 1 << 15
#: Slots per slice of the slot arrays' passes in `build_public`.
_SLOT_CHUNK = 1 << 16


def _action_counts(t_nodes, f_nodes, boards: int) -> np.ndarray:
    """`[I]` actions of each decision node in slot order: player 0's trunk nodes, its
    forest nodes board by board, then player 1's the same way."""
    return np.concatenate([np.concatenate([t_nodes[p][1], np.tile(f_nodes[p][1], boards)]) for p in (0, 1)])


def _local_slots(stage: _Stage, nodes_of, sentinel: int, offsets):
    """`(lane [n, 2], slot_node, slot_child)` of a stage: player p's slots numbered from
    `offsets[p]` over its decision nodes in node order; `lane[child, p]` the slot on the
    edge into `child` (`sentinel` where p does not own its parent)."""
    lane = np.full((stage.size, 2), sentinel, np.int64)
    snode, schild = [], []
    for p in (0, 1):
        nodes, counts = nodes_of[p]
        total = int(counts.sum())
        node = np.repeat(nodes, counts)
        kids = stage.child_start[node] + np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
        lane[kids, p] = offsets[p] + np.arange(total)
        snode.append(node)
        schild.append(kids)
    return lane, np.concatenate(snode).astype(np.int64), np.concatenate(schild).astype(np.int64)


def _node_labels(trunk: _Stage, forest: _Stage, t_nodes, f_nodes, root_chance, board_group, extra) -> dict:
    """`PublicLabels`' per-decision-node fields, in slot order (player 0's trunk nodes,
    its forest nodes board by board, then player 1's): made on first read (`Deferred`)."""
    B, n1 = extra.shape[0], trunk.size
    t_dealt = trunk.dealt != NO_CARD
    codes, players, names, dealt, committed = [], [], [], [], []
    for p in (0, 1):
        tn, fn = t_nodes[p][0], f_nodes[p][0]
        codes += [trunk.codes[n] for n in tn]
        names += [trunk.labels[n] for n in tn]
        dealt += [(int(trunk.dealt[n]),) if t_dealt[n] else () for n in tn]
        players += [p] * (tn.size + B * fn.size)
        committed += [trunk.tot[tn], np.tile(forest.tot[fn], (B, 1))]
        fcodes = [forest.codes[n] for n in fn]
        fnames = [forest.labels[n] for n in fn]
        froots = forest.root[fn].tolist()
        for b in range(B):
            if n1:
                above = root_chance[board_group[b]] if board_group is not None else root_chance
                card = CARD_NAMES[extra[b, -1]]
                pre = {r: f"{trunk.codes[above[r]]}/{card}/" for r in set(froots)}
                codes += [pre[r] + c for r, c in zip(froots, fcodes)]
            else:
                codes += fcodes
            names += fnames
            dealt += [tuple(int(c) for c in extra[b])] * fn.size
    nact = _action_counts([_slots(trunk, p) for p in (0, 1)], [_slots(forest, p) for p in (0, 1)], B)
    return dict(node_codes=tuple(codes), node_player=tuple(players), action_names=tuple(names),
                node_dealt=tuple(dealt), node_slot_start=np.concatenate([[0], np.cumsum(nact)]).astype(np.int64),
                node_committed=np.concatenate(committed).reshape(-1, 2).astype(np.float64))


def build_public(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None,
                 reduction: str = "auto", dense_limit_bytes: int = DENSE_LIMIT_BYTES,
                 isomorphism: bool | None = None) -> PublicGame:
    """Build the public-tree form of a flop, turn or river subgame.

    Args:
      config: the subgame (`PokerSubgameSpec`, e.g. from `load_poker_config` or
        `load_libratus_endgame`).
      hands: the hand list (`public_hands`): `None` (the spec's `config.hands`, by
        default `"range"`), `"range"` (the ranges' hands), `"all"` (every combo not
        blocked by the board), `"player"` (one list per player, its own range's hands:
        `cfrjax.public.two_lists.player_game`; sorted terminals, the XLA passes), or an
        iterable of combos (names or ids) covering the ranges' hands. `config.pad_hands`
        pads a list to its class (`_pad_hands`): then `num_hands` is the padded count, the
        labels list the real hands.
      terminals: `"auto"` (sorted on CPU; on accelerators dense when the dense matrices
        take at most `dense_limit_bytes`, else sorted; sorted for several boards where
        the showdown kernel runs, `cfrjax.public.showdown_kernel.available`), `"sorted"`
        or `"dense"` (always builds the matrices). See `cfrjax.public.terminals`.
      dtype: float dtype of the float leaves (default: float64 under `jax_enable_x64`,
        else float32).
      reduction: `"auto"`, `"pull"` or `"scatter"` (as `CompiledGame.reduction`).
      dense_limit_bytes: see `terminals`.
      isomorphism: merge the turn and river cards that a suit permutation of the board
        and both ranges maps onto each other (`cfrjax.games.poker.isomorphism`, one
        representative per class solved, the chance nodes summing its members): `None`
        (the spec's `config.isomorphism`, off by default), `True` or `False`. Ranges
        whose weights differ by suit (or a river spot) build the game unmerged.

    The build is vectorised over boards and hands (`evaluator.board_values`, the showdown
    tables a chunk of boards at a time: `terminals.showdown_tables`, native where built);
    the large leaves are made in place in their final dtype (on a CPU the game holds them
    without a copy), so resident memory stays near the game's own; the per-node label
    strings (`PublicLabels.node_codes`, ...) are made on first read.

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
    iso = _isomorphism(cfg, hands, isomorphism)
    if _per_player(cfg, hands):   # one list per player, from the ranges' union
        if cfg.pad_hands:
            raise PokerSpecError("pad_hands pads one hand list for both players; hands='player' pads each "
                                 "player's list to the longer one already: drop one of the two")
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

    # Suit isomorphism: the classes of turn and river cards (None: unmerged).
    merge = _merge(cfg, hands) if iso else None

    # Trunk (the flop and turn streets) and forest (the river trees below one board).
    trunk, forest, root_chance, extra, groups, board_group, turn_cards, chance_reach = _trunk_forest(cfg, merge)
    B = extra.shape[0]
    strength, live = _strengths(cfg, hands, extra)
    n1 = trunk.size
    t_dealt = trunk.dealt != NO_CARD          # [N1] trunk nodes below the flop's turn card
    edge_deal = t_dealt & ~t_dealt[trunk.parent] if n1 else t_dealt
    # The large arrays are made in their leaf dtype at an aligned address (`aligned_empty`:
    # placed on a CPU without a copy); the digest reads them as the builder always
    # hashed them (int64 slots, float64 values: `chunked`), so it is unchanged.
    fleaf = jnp.dtype(jax.dtypes.canonicalize_dtype(fdt))

    # Decision nodes and slots (module docstring of cfrjax.public.game).
    t_nodes = [_slots(trunk, p) for p in (0, 1)]
    f_nodes = [_slots(forest, p) for p in (0, 1)]
    t_sl = [int(t_nodes[p][1].sum()) for p in (0, 1)]
    f_sl = [int(f_nodes[p][1].sum()) for p in (0, 1)]
    split = t_sl[0] + B * f_sl[0]
    S = split + t_sl[1] + B * f_sl[1]
    nact = _action_counts(t_nodes, f_nodes, B)
    I = nact.size
    max_actions = int(nact.max())
    infoset_slot_start = aligned_empty((I + 1,), np.int32)
    infoset_slot_start[0] = 0
    np.cumsum(nact, out=infoset_slot_start[1:])
    slot_actions = np.repeat(nact.astype(np.uint8 if max_actions < 256 else np.int64), nact)   # [S] of each slot's set
    del nact
    runs = slot_runs(infoset_slot_start)
    slot_infoset = aligned_empty((S,), np.int32)   # each set's index over its slots, in place:
    slot_infoset[...] = 0                           # 1 at every set's first slot but set 0's, summed
    slot_infoset[infoset_slot_start[1:-1]] = 1
    np.cumsum(slot_infoset, out=slot_infoset)

    inverse = 1.0 / np.maximum(np.arange(max_actions + 1), 1)

    def uniform64():   # `1 / actions` of each slot's set in float64, a slice of slots at a time
        for lo in range(0, S, _SLOT_CHUNK):
            yield inverse[slot_actions[lo:lo + _SLOT_CHUNK]]

    slot_uniform = aligned_empty((S,), fleaf)
    for lo, u in zip(range(0, S, _SLOT_CHUNK), uniform64()):
        slot_uniform[lo:lo + _SLOT_CHUNK] = u

    def stage_sets(nodes_of, offsets):
        """`(player, first slot, actions)` per decision node, as `_local_slots` numbers them."""
        out = []
        for p in (0, 1):
            k = offsets[p]
            for a in nodes_of[p][1]:
                out.append((p, k, int(a)))
                k += int(a)
        return out

    f_lane, f_snode, f_schild = _local_slots(forest, f_nodes, f_sl[0] + f_sl[1], (0, f_sl[0]))
    f_path = _own_paths(forest, f_lane, f_sl[0] + f_sl[1])
    t_lane, t_snode, t_schild = _local_slots(trunk, t_nodes, S, (0, split))

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
    # The showdown tables of the real hands, a chunk of boards at a time into the final
    # arrays; padded after (`_pad_tables`) where the spot pads its hands.
    C, Mc = card_hands.shape
    tables = {"sd_sorted": aligned_empty((B, H), np.int32), "sd_card_sorted": aligned_empty((B, C, Mc), np.int32),
              "sd_index": aligned_empty((B, H, 6), np.int32)}
    step = max(1, _TABLE_CHUNK // H)
    for lo in range(0, B, step):
        pt.showdown_tables(strength[lo:lo + step], hand_cards, card_hands,
                           out={k: v[lo:lo + step] for k, v in tables.items()})
    real_cards = hand_cards
    hand_cards, card_hands, weights, strength, live = _pad_hands(cfg, hand_list, hand_cards, card_hands, weights,
                                                                 strength, live)
    Hp = hand_cards.shape[0]
    tables = _pad_tables(tables, Hp, card_hands.shape[1])
    board_live = aligned_empty((B, Hp), fleaf)
    board_live[...] = live
    dense = None
    # Several boards (a turn's river cards) on an NVIDIA GPU: every board's showdowns run as
    # one launch of the sorted showdown kernel, faster than the matrices and without their
    # memory.
    if _builds_dense(terminals, B, Hp, dense_limit_bytes):
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
    if merge is not None:
        index_arrays.update(_merge_arrays(merge, hands, trunk, edge_deal))
    float_arrays = dict(
        trunk_fold_payoff=trunk.fold[t_folds] * np.where(t_dealt[t_folds], 1.0 / FLOP_TURN_CARDS, 1.0),
        forest_fold_payoff=forest.fold[f_folds] * chance_reach, forest_showdown_stake=forest.sd[f_sds] * chance_reach)
    if cfg.raked:
        float_arrays.update(trunk_fold_values=_raked_folds(cfg, trunk.fold[t_folds])
                            * np.where(t_dealt[t_folds], 1.0 / FLOP_TURN_CARDS, 1.0)[:, None],
                            forest_fold_values=_raked_folds(cfg, forest.fold[f_folds]) * chance_reach,
                            forest_showdown_rake=cfg.rake(2 * forest.sd[f_sds]) * chance_reach)

    digest = fingerprint({
        **index_arrays, "slot_infoset": chunked(slot_infoset, np.int64),
        "infoset_slot_start": chunked(infoset_slot_start, np.int64), **float_arrays,
        "board_live": chunked(live, np.float64), "slot_uniform": Chunked(np.float64, (S,), uniform64),
        "hands": hands, "strength": chunked(strength, np.int64),
        "levels": np.array(trunk.levels + (-1,) + forest.levels)})
    # With `pad_hands`, the jit cache key of the labels: the tree's index arrays without the
    # per-spot ones (hands, cards, showdown order, a flop's turn cards), with the padded sizes.
    # Without it the labels compare by `digest`, per spot (`PublicLabels.cache_key`).
    cache_key = "" if not cfg.pad_hands else fingerprint({
        **{k: v for k, v in index_arrays.items() if k not in _PER_SPOT},
        "sizes": np.array([Hp, card_hands.shape[1], B, cfg.raked], np.int64),
        "levels": np.array(trunk.levels + (-1,) + forest.levels)})
    float_arrays.update(board_live=board_live, slot_uniform=slot_uniform)
    del strength, live
    meta = {
        "street": cfg.street, "board": cfg.board, "pot": cfg.pot, "stack": cfg.stack, "behind": cfg.effective_stack,
        **cfg.betting_meta(), "random_hands": cfg.random_hands, "seed": cfg.seed,
        "form": "public", "hands": int(H), "hand_list": hand_list, "boards": int(B),
        "public_nodes": int(n1 + B * forest.size),
        "decision_nodes": int(I), "terminals": terminals,
        "support": [int(np.count_nonzero(weights[0] > 0)), int(np.count_nonzero(weights[1] > 0))],
    }
    if cfg.pad_hands:
        meta["padded_hands"] = int(Hp)
    if merge is not None:
        meta["isomorphism"] = {"suit_perms": [list(p) for p in merge.perms], "boards": int(B),
                               "turn_classes": len(merge.turns)}
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
    per_node = Deferred(functools.partial(_node_labels, trunk, forest, t_nodes, f_nodes, root_chance, board_group,
                                          extra))
    labels = PublicLabels(
        name=cfg.name, fingerprint=digest, source={"poker": meta, "key_fields": list(KEY_FIELDS)},
        payoff_offset=0.0, node_codes=per_node, node_player=per_node, action_names=per_node,
        node_dealt=per_node, node_slot_start=per_node, hands=hands.copy(),
        hand_names=tuple(combo_str(h) for h in hands), hand_cards=real_cards.copy(), node_committed=per_node,
        cache_key=cache_key, merge=merge)

    leaves = {k: device_array(v, jnp.int32) for k, v in index_arrays.items()}
    leaves.update({k: device_array(v, fdt) for k, v in float_arrays.items()})
    leaves["card_matrix"] = device_array(pt.card_matrix(hand_cards, card_hands.shape[0], xp=np))
    if dense is not None:
        leaves["dense_showdown"] = device_array(dense[0])
        leaves["dense_compat"] = device_array(dense[1])
    game = PublicGame(
        **leaves, weights=device_array(weights, fdt), norm=device_array(norm, fdt),
        num_nodes=int(n1 + B * forest.size), num_slots=int(S), num_infosets=int(I), num_hands=int(Hp),
        num_boards=int(B), trunk_levels=trunk.levels if n1 else (), trunk_fanout=trunk.fanout if n1 else (),
        trunk_level_terms=trunk.terms if n1 else (),
        forest_levels=forest.levels, forest_fanout=forest.fanout, forest_level_terms=forest.terms,
        trunk_slots=tuple(t_sl), forest_slots=tuple(f_sl), slot_split=int(split), dealt=bool(n1),
        board_groups=int(groups),
        trunk_level_dealt=tuple(bool(edge_deal[lo:hi].any()) for lo, hi in zip(trunk.levels[:-1], trunk.levels[1:]))
        if groups else (),
        max_actions=max_actions, slot_runs=runs,
        forest_plan=None if (groups or B > 1 and not n1 or merge is not None) else spot_kernel.plan(
            forest.parent, forest.kind, f_lane, f_folds, f_sds, np.arange(f_sl[0] + f_sl[1]), f_snode, f_schild,
            stage_sets(f_nodes, (0, f_sl[0])), f_sl[0], f_sl[0] + f_sl[1]),
        trunk_plan=None if (groups or not n1 or merge is not None) else spot_kernel.plan(
            trunk.parent, trunk.kind, t_lane, t_folds, (), np.concatenate([np.arange(t_sl[0]), split + np.arange(t_sl[1])]),
            t_snode, t_schild, stage_sets(t_nodes, (0, split)), split, S, chance=root_chance),
        reduction=reduction, terminals=terminals,
        labels=labels)
    meta["build_s"] = round(time.perf_counter() - t_start, 3)
    return game


def _isomorphism(cfg: PokerSubgameSpec, hands, isomorphism) -> bool:
    """Whether the build is asked to merge suit-isomorphic cards (`build_public`'s
    `isomorphism`, else the spec's); refused in one line with a hand list it does not
    take."""
    iso = cfg.isomorphism if isomorphism is None else isomorphism
    if not isinstance(iso, (bool, np.bool_)):
        raise PokerSpecError(f"isomorphism {iso!r} must be true or false")
    if iso and (_per_player(cfg, hands) or cfg.pad_hands):
        raise PokerSpecError("isomorphism = true merges cards over one hand list for both players, unpadded; "
                             "drop hands = 'player' / pad_hands, or set isomorphism = false")
    return bool(iso)


def _merge(cfg: PokerSubgameSpec, hands: np.ndarray):
    """The spot's card classes (`isomorphism.merge_of`) where the board and both ranges
    are symmetric and the hand list `hands` is closed under the symmetries; else `None`
    (built unmerged)."""
    from cfrjax.games.poker import isomorphism

    merge = isomorphism.merge_of(cfg.board_cards, np.stack(cfg.ranges()))
    if merge is None:
        return None
    try:
        isomorphism.hand_perms(merge.perms, hands)
    except ValueError:   # a given hand list that a symmetry does not keep
        return None
    return merge


def _merge_arrays(merge, hands: np.ndarray, trunk: _Stage, edge_deal: np.ndarray) -> dict:
    """The index leaves of a suit-merged game (`PublicGame.iso_perm`, `board_members`,
    `trunk_members`)."""
    from cfrjax.games.poker import isomorphism

    K, W, H = len(merge.perms), merge.width(), hands.size
    perm = np.concatenate([isomorphism.hand_perms(merge.perms, hands), np.full((1, H), H, np.int64)])
    out = dict(iso_perm=perm, board_members=np.concatenate([merge.members(cl, W) for cl in merge.rivers]))
    if merge.turns:
        rows = np.full((trunk.size, W), K, np.int64)
        rows[:, 0] = 0
        turn_rows = merge.members(merge.turns, W)
        at = {c: g for g, c in enumerate(merge.turn_cards().tolist())}
        below = np.flatnonzero(edge_deal)
        rows[below] = turn_rows[[at[int(c)] for c in trunk.dealt[below]]]
        out["trunk_members"] = rows
    return out


# ----------------------------------------------------------------------------------------
# Sizes and memory before building.


def public_shapes(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None,
                  dense_limit_bytes: int = DENSE_LIMIT_BYTES, isomorphism: bool | None = None) -> PublicGame:
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
    M = max(1, int(np.bincount(COMBOS[hand_ids].ravel(), minlength=NUM_CARDS).max()))   # `card_table`'s width
    H, M = _padded_sizes(config, hands, int(hand_ids.size), M)
    merge = _merge(config, hand_ids) if _isomorphism(config, hands, isomorphism) else None
    trunk, forest, root_chance, extra, groups, _, _, _ = _trunk_forest(config, merge)
    B, n1, n2 = int(extra.shape[0]), trunk.size, forest.size
    t_sl = [int(_slots(trunk, p)[1].sum()) for p in (0, 1)]
    f_sl = [int(_slots(forest, p)[1].sum()) for p in (0, 1)]
    nact = _action_counts([_slots(trunk, p) for p in (0, 1)], [_slots(forest, p) for p in (0, 1)], B)
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
    if merge is not None:
        W = merge.width()
        ints.update(iso_perm=(len(merge.perms) + 1, H), board_members=(B, W))
        if groups:
            ints.update(trunk_members=(n1, W))
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
                batch: int = 1, boards_at_once: int = 0):
    """`cfrjax.memory.memory_plan` of the spot `build_public(config, hands=hands,
    terminals=terminals, dtype=dtype)` would build, before building it (`public_shapes`),
    for a solve in `order` (default the solver's default) of `batch` subgames, its boards'
    forests `boards_at_once` at a time off the CPU (`cfrjax.plan.Plan.boards_at_once`; 0:
    all at once)."""
    from cfrjax.memory import memory_plan
    from cfrjax.plan import plan_of

    shapes = public_shapes(config, hands=hands, terminals=terminals, dtype=dtype)
    if boards_at_once:
        shapes = dataclasses.replace(shapes, plan=dataclasses.replace(plan_of(shapes), boards_at_once=boards_at_once))
    return memory_plan(shapes, dtype=dtype, order=order, batch=batch)


def check_public_fits(config: PokerSubgameSpec, *, hands=None, terminals: str = "auto", dtype=None,
                      order: str | None = None, device=None, budget_bytes: int | None = None) -> dict:
    """Refuse a spot whose solve cannot fit, before building it (`cfrjax.load_game` calls it).

    The plan is `public_plan` (the rows `cfrjax.memory.guard` checks after the build;
    off the CPU, where every board's forest at once does not fit, one board at a time:
    `load_game` groups the boards, `cfrjax.memory.group_boards`), checked by
    `cfrjax.memory.check_fits` against `device`'s free memory (default the
    first device: device memory on a GPU, the host's available memory on a CPU) or
    `budget_bytes`. On an accelerator the same plan is also checked against the host's
    available memory, where the game is built: building takes less than the plan (the
    game's leaves, made in place, and temporaries of a chunk of boards), the solver state
    and scratch (`[S, H]`, `[N, H]` arrays) being the bulk of it. The default order (alternating) needs the least scratch, so only a spot
    that fits under no order is refused here; the solve's own check (`guard`, with its
    order and dtype) still runs before it starts.

    Returns: `check_fits`'s dict (`need`, `free`, `plan`, ...).

    Raises:
      MemoryPlanError: the message names the spot's sizes, the plan's total and the free
        memory, and what to change; `err.plan` is the `MemoryPlan`.
    """
    from cfrjax.memory import MemoryPlanError, check_fits

    plan = public_plan(config, hands=hands, terminals=terminals, dtype=dtype, order=order)
    sz = plan.sizes
    what = (f"{config.name!r} (a {config.street} spot: {sz['nodes']:,} public nodes over {sz['boards']:,} board(s), "
            f"{sz['slots']:,} slots x {sz['hands']:,} hands), refused before building it,")
    narrow = "narrower ranges, " if (config.hands if hands is None else hands) != "all" else \
        "hands = \"range\" (vectors over the ranges' hands instead of every live combo), "
    remedy = (f"use {narrow}fewer bet and raise sizes (or fewer raises), a later street (a turn or river spot), or a "
              "machine with more memory (cfrjax.games.poker.public_tree.public_plan(config) prints the plan)")
    device = jax.devices()[0] if device is None and budget_bytes is None else device
    try:
        out = check_fits(plan, device, budget_bytes=budget_bytes, what=what, remedy=remedy)
    except MemoryPlanError:
        if (device is None or device.platform == "cpu") or sz["boards"] <= 1:
            raise
        # off the CPU the boards' forests can run a group at a time (`cfrjax.memory.group_boards`,
        # which load_game applies): refused only if one board at a time does not fit either
        plan = public_plan(config, hands=hands, terminals=terminals, dtype=dtype, order=order, boards_at_once=1)
        out = check_fits(plan, device, budget_bytes=budget_bytes, what=what, remedy=remedy)
    if budget_bytes is None and device.platform != "cpu":
        try:
            host = jax.devices("cpu")[0]
        except RuntimeError:   # JAX_PLATFORMS without the CPU: the host is not checked
            return out
        check_fits(plan, host, what=what + " built on the host", remedy=remedy)
    return out
