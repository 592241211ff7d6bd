"""PublicGame: the public-tree ("range-vector") compiled form of a poker subgame.

One node per public history (betting sequence and dealt river card), every per-player
quantity a vector over the `H` hands of one shared hand list: slot arrays are `[S, H]`,
reach and values `[n, 2, H]`. The tabular information set `P1|AhKh|k.b10` is the entry
(decision node `k.b10`, hand `AhKh`) of player 1, so the two forms map entry by entry
(`PublicLabels.infoset_index`).

Layout (built by `cfrjax.games.poker.public_tree.build_public`): two stages.

* The **trunk**: the betting before the last card (a turn spot's turn street; a flop
  spot's flop street and, below each of its ends, one turn street per turn card; empty on
  a river spot), `N1` nodes breadth-first (level `d` = `trunk_levels[d]:trunk_levels[d+1]`,
  children grouped by parent in parent order). Its leaves are folds and the `R` chance
  nodes that deal the river card (on a flop `R` per turn card, `G R` in all); below a
  flop's turn card hands holding it are dead (`trunk_dealt`) and chance (1/45 per card)
  is folded into the stakes.
* The **forest**: below each board (`B` = 48 river cards on a turn, the 49 x 48 (turn,
  river) pairs of a flop, the one board of a river spot) the same `R` trees (one per trunk chance node; the whole river tree on a
  river spot), `n2` nodes per board, breadth-first with the `R` roots as level 0. Every
  per-board array (strength order, live hands, strategies, regrets) is sliced by board,
  and the passes map one function over the boards (`lax.map` on CPU, one board at a
  time so that its arrays stay in cache; `vmap` elsewhere). Below card `c`
  hands holding `c` are dead (`board_live[b]` is 0 for them); chance (1/44 per card)
  is folded into the forest's stakes (the tabular form's `pi_c u`).

Decision nodes are the generic solver's information sets (`num_infosets` = I), player 0's
first: its trunk nodes, then its forest nodes board by board; then player 1's the same
way. Slots (decision node, action) follow, so player p's slots are `[trunk | B x forest]`:
player 0's forest slots of board `b` are `t0 + b s0 + [0, s0)`, player 1's
`slot_split + t1 + b s1 + [0, s1)` (`trunk_slots = (t0, t1)`, `forest_slots = (s0, s1)`).
Slot `S` is the sentinel (strategy 1).

A `PublicGame` is a pytree: arrays are leaves, sizes and level boundaries static
metadata, as `cfrjax.game.CompiledGame`. The range weights and the normaliser are the
re-targetable leaves (`RETARGETABLE`; `cfrjax.public.passes.set_ranges`).
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any, Callable

import jax
import numpy as np

from cfrjax.public import spot_kernel
from cfrjax.public.terminals import dense_paired, dense_used

#: How terminal values are computed (`cfrjax.public.terminals`).
TERMINAL_MODES = ("auto", "sorted", "dense")
#: How the passes sum over the tree (as `CompiledGame.reduction`).
REDUCTIONS = ("auto", "pull", "scatter")


class Deferred:
    """Label fields computed on first read: `make()` returns them as a dict (name ->
    value), called once, for all the fields given this object (a builder's per-node
    strings and tuples, which a solve never reads)."""

    def __init__(self, make: Callable[[], dict]):
        self._make, self._values, self._lock = make, None, threading.Lock()

    def value(self, name: str):
        with self._lock:
            if self._values is None:
                self._values, self._make = self._make(), None
        return self._values[name]


class _DeferredField:
    """A dataclass field that may be given a `Deferred`: read, it is the computed value
    (stored on first read)."""

    def __init__(self, default=dataclasses.MISSING):
        self.default = default

    def __set_name__(self, owner, name):
        self.name, self.slot = name, "_deferred_" + name

    def __get__(self, obj, owner=None):
        if obj is None:   # the class attribute is the dataclass default
            if self.default is dataclasses.MISSING:
                raise AttributeError(self.name)
            return self.default
        v = obj.__dict__[self.slot]
        if isinstance(v, Deferred):
            v = v.value(self.name)
            obj.__dict__[self.slot] = v
        return v

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value


@dataclasses.dataclass(frozen=True, eq=False)
class PublicLabels:
    """Names behind the public tree, kept out of the hot path.

    Compared and hashed by `cache_key` where set, else by `fingerprint`: they are jit's
    cache key of a game's static metadata, so re-targeted games (and, with a `cache_key`,
    every spot of one shape class) share their executables. Nothing traced reads the
    per-spot names, hands or board; a jitted function that returns a game would hand
    back the labels of the first game of its class, so such functions return arrays.

    Attributes:
      name: the game's name.
      fingerprint: hex digest of the tree, the hand list and the board data (not of the
        ranges): what a checkpoint or policy file is checked against, distinct per spot.
      source: provenance, JSON-able, e.g. `{"poker": {..., "form": "public"}}`.
      payoff_offset: added to player 0's value when reporting it (0 for poker).
      node_codes: `[I]` public sequence code of each decision node (`"k.b10"`,
        `"k.b10.c/Qh/k"`).
      node_player: `[I]` owner (0 or 1) of each decision node.
      action_names: `[I]` tuples of action labels.
      node_dealt: `[I]` tuples of the card ids dealt publicly above each decision node
        (the river card below a turn), hands holding one are dead there.
      node_slot_start: `[I + 1]` slot boundaries of the decision nodes (NumPy).
      hands: `[H]` combo indices of the hand list (NumPy).
      hand_names: `[H]` names of the hands ("AsKs").
      hand_cards: `[H, 2]` card ids of the hands (NumPy).
      node_committed: `[I, 2]` chips each player has put in during the subgame at each
        decision node (beyond the `pot / 2` counted as already in; NumPy float64), or
        `None` where unknown; `cfrjax.public.report` adds it to the values it reports.
      cache_key: for a spot built with `pad_hands`, hex digest of what a compiled program
        may depend on (the tree's index arrays, the padded hand count and table width),
        the same for every spot of one shape class (`build_public`,
        `docs/design/shapes.md`); else `""` (compared by `fingerprint`, per spot). Under a
        `cache_key` a jitted function that returns a game hands back the labels of the
        first spot of its class (jit caches its output's structure): the library's jitted
        functions return arrays, never games.
      player_hands: a game with one hand list per player (`PublicGame.player_lists`):
        `(hands_0 [H_0], hands_1 [H_1])` combo indices (NumPy, ascending), each player's
        hands at the columns `0..H_p - 1` of its slot, reach and value vectors (the
        columns up to `H = max(H_0, H_1)` are padding). `hands`, `hand_names` and
        `hand_cards` then hold the union of the two lists. `None`: one list for both.
      merge: a suit-merged game's card classes (`cfrjax.games.poker.isomorphism.Merge`;
        `None`: unmerged): the node codes name representative cards only; keys of the
        other members resolve to them with the hand's suits permuted (`infoset_index`).
        The core reads it through its methods (`representative`, `node_members`,
        `check_lock`), never importing the poker package.

    `hands`, `hand_names` and `hand_cards` list the real hands only: a spot built with
    `pad_hands` has `PublicGame.num_hands` columns, its padding hands last (indices
    `len(hands)..`), which no label, table or export names.

    The per-node fields (`node_codes`, `node_player`, `action_names`, `node_dealt`,
    `node_slot_start`, `node_committed`) may be given as one `Deferred`: a flop's hundreds
    of thousands of strings are then made on first read, not when the game is built.
    """

    name: str
    fingerprint: str
    source: dict
    payoff_offset: float
    node_codes: tuple = _DeferredField()
    node_player: tuple = _DeferredField()
    action_names: tuple = _DeferredField()
    node_dealt: tuple = _DeferredField()
    node_slot_start: np.ndarray = _DeferredField()
    hands: np.ndarray = _DeferredField()
    hand_names: tuple = _DeferredField()
    hand_cards: np.ndarray = _DeferredField()
    node_committed: np.ndarray | None = _DeferredField(None)
    cache_key: str = ""
    player_hands: tuple | None = None
    merge: Any = None

    @property
    def compare_key(self) -> str:
        """What the labels compare and hash by (`cache_key`, else `fingerprint`)."""
        return self.cache_key or self.fingerprint

    def __getstate__(self):   # pickled with every field computed (a `Deferred` holds a closure)
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __setstate__(self, state):
        for k, v in state.items():
            object.__setattr__(self, k, v)

    def __eq__(self, other):
        return isinstance(other, PublicLabels) and other.compare_key == self.compare_key

    def __hash__(self):
        return hash(self.compare_key)

    @functools.cached_property
    def _code_index(self) -> dict:
        return {code: i for i, code in enumerate(self.node_codes)}

    @functools.cached_property
    def _player_lists(self) -> tuple:
        """Per player `(names, cards [H_p, 2])` of its hand list (both the shared list's
        where there is one)."""
        if self.player_hands is None:
            return ((self.hand_names, np.asarray(self.hand_cards)),) * 2
        at = {int(h): i for i, h in enumerate(np.asarray(self.hands))}
        rows = [[at[int(h)] for h in hs] for hs in self.player_hands]
        return tuple((tuple(self.hand_names[i] for i in r), np.asarray(self.hand_cards)[r]) for r in rows)

    def hand_names_of(self, player: int) -> tuple:
        """`[H_p]` names of `player`'s hands (the shared list where there is one)."""
        return self._player_lists[player][0]

    @functools.cached_property
    def _hand_index(self) -> tuple:
        return tuple({name: h for h, name in enumerate(self.hand_names_of(p))} for p in (0, 1))

    def node_slots(self, node: int) -> slice:
        """The `slice` of decision node `node`'s slots."""
        return slice(int(self.node_slot_start[node]), int(self.node_slot_start[node + 1]))

    def is_live(self, node: int, hand: int) -> bool:
        """Whether `hand` (of the node's player's list) can hold at decision node `node`
        (shares no dealt card)."""
        return bool(self.live_hands(node)[hand])

    def live_hands(self, node: int) -> np.ndarray:
        """`[H_p]` bool (`p` the node's player; `[H]` with one list): the hands that can
        hold at decision node `node`."""
        cards = self._player_lists[int(self.node_player[node])][1]
        dealt = self.node_dealt[node]
        if not dealt:
            return np.ones(len(cards), bool)
        return ~np.isin(cards, dealt).any(axis=1)

    def decision_nodes(self):
        """Yield `(code, player, slots, action_names)` per decision node, in slot order."""
        for i, code in enumerate(self.node_codes):
            yield code, int(self.node_player[i]), self.node_slots(i), self.action_names[i]

    def infoset_key(self, node: int, hand: int) -> str:
        """`"P{player}|{hand}|{code}"`, the tabular information-set key of (node, hand)."""
        p = int(self.node_player[node])
        return f"P{p}|{self.hand_names_of(p)[hand]}|{self.node_codes[node]}"

    def infoset_keys(self):
        """Yield `(key, slots, hand_index)` for every live (decision node, hand), node by node."""
        for i, code in enumerate(self.node_codes):
            sl = self.node_slots(i)
            p = int(self.node_player[i])
            names = self.hand_names_of(p)
            for h in np.flatnonzero(self.live_hands(i)).tolist():
                yield f"P{p}|{names[h]}|{code}", sl, h

    def representative(self, hand: str, code: str) -> tuple:
        """`(hand, code)` below the representative cards of a suit-merged game (`merge`,
        `Merge.representative`) where `code` deals a member card; as given otherwise."""
        return (hand, code) if self.merge is None else self.merge.representative(hand, code)

    def infoset_index(self, key: str) -> tuple[slice, int]:
        """`(slots, hand_index)` of the information set `key` (`"P1|AhKh|k.b10"`; the hand's
        two cards in either order).

        Raises:
          KeyError: no such decision node or hand, the wrong player, or a hand that holds
            a card dealt above the node (it cannot be there).
        """
        parts = str(key).split("|", 2)
        if len(parts) != 3 or parts[0] not in ("P0", "P1"):
            raise KeyError(f"{self.name}: no information set {key!r} (expected 'P{{player}}|{{hand}}|{{code}}')")
        if self.merge is not None:   # a member card's node: its representative's, the hand's suits permuted
            parts = list(parts)
            parts[1], parts[2] = self.representative(parts[1], parts[2])
        node = self._code_index.get(parts[2])
        index = self._hand_index[int(parts[0][1])]
        hand = index.get(parts[1])
        if hand is None:   # the hand's two cards the other way round (`cfrjax.game.hand_swapped`)
            hand = index.get(parts[1][2:] + parts[1][:2])
        if node is None or hand is None or f"P{int(self.node_player[node])}" != parts[0] \
                or not self.is_live(node, hand):
            raise KeyError(f"{self.name}: no information set {key!r}")
        return self.node_slots(node), hand


def _static(default):
    return dataclasses.field(metadata=dict(static=True), default=default)


@dataclasses.dataclass(frozen=True)
class PublicGame:
    """The public-tree compiled form (see the module docstring).

    Leaves (int32 unless noted; `N1` trunk nodes, `n2` forest nodes per board, `R` forest
    roots, `B` boards, `S` slots, `I` decision nodes, `H` hands, `C` = 52 cards, `M` the
    most hands holding one card):
      trunk_parent, trunk_child_start, trunk_owner: `[N1]`, `[N1 + 1]`, `[N1]` (owner 0 /
        1 decision, 2 chance, 3 terminal); trunk_lane_slot: `[N1, 2]` global slot
        multiplying player p's reach on the edge into each node (sentinel `S` unless p
        owns the parent); trunk_term_pos: `[N1]` row of the trunk's terminal values
        (folds `0..F1-1`, chance leaves `F1..F1+R-1`, else `F1 + R`: zero).
      trunk_fold_node: `[F1]`; trunk_fold_payoff: `[F1]` float, player 0's payoff.
      trunk_slot_node, trunk_slot_child: `[t0 + t1]` trunk node of each trunk slot's
        decision node and of its action's child (player 0's slots first).
      root_chance: `[R]` trunk chance node above each forest root (unused on a river);
        on a flop spot `[G, R]`, per turn card `g` (the boards of group `g` hang there).
      forest_parent, forest_child_start, forest_owner, forest_term_pos: as the trunk's,
        per board (local node ids; term rows: folds `0..F2-1`, showdowns `F2..F2+K-1`);
        forest_lane_slot: `[n2, 2]` local slots (player 0's `0..s0-1`, player 1's
        `s0..s0+s1-1`, sentinel `s0 + s1`); forest_slot_node, forest_slot_child: `[s0 + s1]`;
        forest_path: `[n2, 2, W]` each player's own local slots root -> node
        (sentinel-padded); forest_root_of: `[n2]` the root (0..R-1) above each node.
      forest_fold_node: `[F2]`; forest_fold_payoff: `[F2]` float, player 0's payoff times
        the chance reach (1/44 below a turn spot's river card);
        forest_showdown_node: `[K]`; forest_showdown_stake: `[K]` float, chips moving from
        the weaker hand to the stronger, times the chance reach.
      board_live: `[B, H]` float, 1 where a hand is live on a board.
      hand_cards: `[H, 2]` card ids; card_hands: `[C, M]` hands holding each card (padded
        with `H`).
      sd_sorted: `[B, H]` hands by ascending strength; sd_card_sorted: `[B, C, M]` each
        card's hands by ascending strength; sd_index: `[B, H, 6]` prefix positions
        (`cfrjax.public.terminals.showdown_tables`).
      dense_showdown: `[B, H, H]` float `compat * sign(s_h - s_h')`, dense_compat: `[H, H]`
        float (`None` unless built).
      card_matrix: `[R, H]` bfloat16, `cfrjax.public.terminals.card_matrix(hand_cards,
        C)` (the folds' matmul off the CPU; `None`: built where used).
      leaf_data: a depth-limited game's leaf inputs (`cfrjax.public.depth`), else `None`.
      trunk_dealt: `[N1]` the turn card dealt above each trunk node of a flop spot (52:
        none; hands holding it are dead there); board_group: `[B]` the turn card (group
        `g`) of each board of a flop spot. Both `None` on turn and river spots.
      trunk_fold_values, forest_fold_values: `[F1, 2]`, `[F2, 2]` float, each player's
        payoff at each fold of a raked game (the winner's reduced by the rake; the
        forest's times the chance reach); forest_showdown_rake: `[K]` float, the rake of
        each showdown times the chance reach. All three `None` in an unraked game (the
        zero-sum payoffs above then say everything), so an unraked game's pytree and
        programs are those of a game built before rake existed (`raked`).
      slot_infoset: `[S]` decision node of each slot (sorted); infoset_slot_start:
        `[I + 1]`; slot_uniform: `[S]` float `1 / |A|`.
      weights: `[2, H]` float, the players' range weights (re-targetable).
      same_hand: `None`, or with one hand list per player (`player_lists`) `[2, H]`: each
        hand of player p's list at its position in the opponent's list (`H`: none).
      norm: `[]` float, `Z = sum_{h, h'} compat(h, h') w0[h] w1[h']` (re-targetable).
      iso_perm, board_members, trunk_members: a suit-merged game
        (`cfrjax.games.poker.isomorphism`; `None` elsewhere): its boards (and a flop's
        turn cards) are class representatives. `iso_perm [K + 1, H]`: per symmetry `g_k`
        the position of `g_k^-1(h)` for each hand `h` (row `K`: `H`, no member);
        `board_members [B, W]`: each board's members (rows of `iso_perm`, padded with `K`)
        below its turn card (a flop) or the turn (a turn spot); `trunk_members [N1, W]` (a
        flop): a turn card's members at the trunk nodes just below it (`[0, K, ...]`
        elsewhere). A chance node sums each representative's values gathered by its
        members' rows (`tree_passes.members_sum`); reach passes down unchanged.

    Static metadata:
      num_nodes (`N1 + B n2`), num_slots, num_infosets, num_hands, num_boards: sizes.
      trunk_levels, forest_levels: level offsets; trunk_fanout, forest_fanout: the most
        children of a node per level; trunk_level_terms, forest_level_terms: whether a
        level holds terminals (or chance leaves).
      trunk_slots: `(t0, t1)`; forest_slots: `(s0, s1)`; slot_split: player 0 owns
        slots `[0, slot_split)` (`t0 + B s0`).
      dealt: whether the forest lies below a dealt card (turn and flop spots).
      board_groups: `G`, the turn cards of a flop spot (boards are `(turn, river)` pairs,
        turn-major, `B / G` per group); 0 elsewhere.
      leaf_fn: a depth-limited game's leaf function (`cfrjax.public.depth.LeafFunction.fn`):
        its forest is `R` single leaves per board whose values the function gives; `None`
        for a whole game.
      leaf_init, leaf_update: a stateful leaf function's `LeafFunction.init` / `.update`
        (the solve carries its state in `SolverState.leaf`); `None` for a stateless one.
      trunk_level_dealt: per trunk level, whether a node on it lies just below a dealt turn
        card (its reach is masked there); `()` except on flop spots.
      max_actions: the most actions of a decision node.
      slot_runs: the decision nodes as runs of equal action counts (`cfrjax.passes.slot_runs`),
        so regret matching slices its slots statically; `()`: gathered by `slot_infoset`.
      forest_plan, trunk_plan: a river or turn spot's forest (one board's, local slots) and
        a turn spot's trunk (global slots) as static tuples (`cfrjax.public.spot_kernel.Plan`),
        which its kernels unroll (`spot_kernel`, `turn_kernel`); `None` elsewhere (a flop, a
        river spot's trunk, a depth-limited game).
      reduction: `"auto"`, `"pull"` or `"scatter"` (as `CompiledGame.reduction`).
      terminals: `"auto"` (dense where built and not on CPU, else sorted), `"sorted"` or
        `"dense"`.
      labels: `PublicLabels`.
      player_lists: `()` (one hand list for both players), or `(H_0, H_1)`: one hand list
        per player (`cfrjax.public.two_lists.player_game`, `hands="player"`), player p's
        `H_p` hands at the columns `0..H_p - 1` of its
        slot rows and of lane p of reach and values, `H = max(H_0, H_1)` columns (the
        rest zero weight, dead). The hand leaves are then per player or per lane:
        `hand_cards [2, H, 2]`, `card_hands [2, C, M]` (each player's own), `board_live
        [B, 2, H]`, and lane p's showdown tables hold the opponent q's sorted lists with
        p's index into them: `sd_sorted [B, 2, H]`, `sd_card_sorted [B, 2, C, M]`,
        `sd_index [B, 2, H, 6]` (`two_lists.cross_tables`); no dense matrices, no card
        matrix; only the XLA passes run (`cfrjax.plan.resolve_plan`).
    """

    trunk_parent: Any
    trunk_child_start: Any
    trunk_owner: Any
    trunk_lane_slot: Any
    trunk_term_pos: Any
    trunk_fold_node: Any
    trunk_fold_payoff: Any
    trunk_slot_node: Any
    trunk_slot_child: Any
    root_chance: Any
    forest_parent: Any
    forest_child_start: Any
    forest_owner: Any
    forest_lane_slot: Any
    forest_term_pos: Any
    forest_slot_node: Any
    forest_slot_child: Any
    forest_path: Any
    forest_root_of: Any
    forest_fold_node: Any
    forest_fold_payoff: Any
    forest_showdown_node: Any
    forest_showdown_stake: Any
    board_live: Any
    hand_cards: Any
    card_hands: Any
    sd_sorted: Any
    sd_card_sorted: Any
    sd_index: Any
    slot_infoset: Any
    infoset_slot_start: Any
    slot_uniform: Any
    weights: Any
    norm: Any
    dense_showdown: Any = None
    dense_compat: Any = None
    card_matrix: Any = None
    trunk_dealt: Any = None
    board_group: Any = None
    trunk_fold_values: Any = None
    forest_fold_values: Any = None
    forest_showdown_rake: Any = None
    leaf_data: Any = None
    same_hand: Any = None
    iso_perm: Any = None
    board_members: Any = None
    trunk_members: Any = None
    num_nodes: int = _static(0)
    num_slots: int = _static(0)
    num_infosets: int = _static(0)
    num_hands: int = _static(0)
    num_boards: int = _static(1)
    trunk_levels: tuple = _static(())
    trunk_fanout: tuple = _static(())
    trunk_level_terms: tuple = _static(())
    forest_levels: tuple = _static(())
    forest_fanout: tuple = _static(())
    forest_level_terms: tuple = _static(())
    trunk_slots: tuple = _static((0, 0))
    forest_slots: tuple = _static((0, 0))
    slot_split: int = _static(0)
    dealt: bool = _static(False)
    board_groups: int = _static(0)
    leaf_fn: Any = _static(None)
    leaf_init: Any = _static(None)
    leaf_update: Any = _static(None)
    trunk_level_dealt: tuple = _static(())
    max_actions: int = _static(0)
    slot_runs: tuple = _static(())
    forest_plan: Any = _static(None)
    trunk_plan: Any = _static(None)
    reduction: str = _static("auto")
    terminals: str = _static("auto")
    labels: PublicLabels | None = _static(None)
    player_lists: tuple = _static(())
    #: The implementation plan (`cfrjax.plan.Plan`; `None`: the auto plan, `plan_of`).
    plan: Any = _static(None)

    #: Re-targetable float leaves (`cfrjax.forms`): name -> dimensions of one game's leaf.
    RETARGETABLE = {"weights": 2, "norm": 0}
    _BOARD_TABLES = {"sd_sorted": 2, "sd_card_sorted": 3, "sd_index": 3}

    @property
    def BOARD_TABLES(self) -> dict:   # noqa: N802 (the constant's name, kept)
        """Index leaves a batch of river spots may also carry per subgame (one board each:
        `cfrjax.games.poker.boards.set_boards`): name -> dimensions of one game's leaf;
        none where each player has its own hand list (`player_lists`: boards as data take
        one list, and its per-lane tables have a dimension more)."""
        return {} if self.player_lists else self._BOARD_TABLES

    def __post_init__(self):
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"unknown reduction {self.reduction!r}; allowed: {', '.join(map(repr, REDUCTIONS))}")
        if self.terminals not in TERMINAL_MODES:
            raise ValueError(f"unknown terminals {self.terminals!r}; allowed: {', '.join(map(repr, TERMINAL_MODES))}")
        rake = (self.trunk_fold_values, self.forest_fold_values, self.forest_showdown_rake)
        if any(x is None for x in rake) and not all(x is None for x in rake):
            raise ValueError("trunk_fold_values, forest_fold_values and forest_showdown_rake are given together "
                             "(a raked game) or not at all")

    @property
    def raked(self) -> bool:
        """Whether the game is raked (not zero-sum): each player's terminal values then
        come from `*_fold_values` and `forest_showdown_rake`. Static: it follows from the
        pytree's structure (those leaves are `None` in an unraked game)."""
        return self.forest_showdown_rake is not None

    @property
    def slot_shape(self) -> tuple:
        """Shape of slot arrays (regrets, averages, policies): `(S, H)`."""
        return (self.num_slots, self.num_hands)

    @property
    def num_roots(self) -> int:
        """Forest roots per board (R)."""
        return self.forest_levels[1] if len(self.forest_levels) > 1 else 0

    @property
    def depth(self) -> int:
        """Levels with children, trunk and forest together."""
        return max(0, len(self.trunk_levels) - 1) + len(self.forest_levels) - 2

    @property
    def depth_limited(self) -> bool:
        """Whether the game is cut below its trunk (leaf values from `leaf_fn`); its
        exploitability is then local, with respect to the leaf function."""
        return self.leaf_fn is not None

    @property
    def num_terminals(self) -> int:
        """Terminal public nodes: trunk folds plus every board's folds and showdowns."""
        f2 = int(self.forest_fold_node.shape[0]) + int(self.forest_showdown_node.shape[0])
        return int(self.trunk_fold_node.shape[0]) + self.num_boards * f2

    @property
    def name(self) -> str:
        return self.labels.name if self.labels is not None else "public_game"

    def compiler_options(self, config=None) -> tuple:
        """`(name, value)` pairs this game's solves and evaluations add to
        `cfrjax.xla_options.XLA_OPTIONS` (`config`: the solve's `SolverConfig`, or `None`):
        XLA:GPU's Triton GEMM fusions off, except for dense terminal matrices used off the
        CPU (`dense_used`) as two separate products or in an alternating-order solve.

        * A spot without dense matrices multiplies only by small card matrices, where
          cuBLAS is faster and XLA autotunes no Triton configurations.
        * A one-board dense spot multiplies its folds and showdowns as one batched matmul
          (`dense_paired`): cuBLAS runs it faster under simultaneous order and slower
          under alternating order, so Triton stays there and where the order is not
          known.
        * A spot the kernels of `cfrjax.public.spot_kernel` run multiplies by cuBLAS in
          either order (XLA's Triton product adds a split-K reduction kernel).
        * The two separate dense products keep Triton (faster with it).

        The measurements: `bench/README.md`, "Measurements behind the public form's
        choices"."""
        off = (("xla_gpu_enable_triton_gemm", False),)
        if not dense_used(self, cpu=False) or spot_kernel.suits(self, config):
            return off
        simultaneous = config is not None and getattr(config, "order", None) == "simultaneous"
        return off if dense_paired(self, cpu=False) and simultaneous else ()

    def infoset_index(self, key: str) -> tuple[slice, int]:
        """`(slots, hand_index)`: where information set `key` sits in `[S, H]` arrays
        (`PublicLabels.infoset_index`); `KeyError` if unknown."""
        return self.labels.infoset_index(key)

    def decision_nodes(self):
        """Yield `(code, player, slots, action_names)` per decision node, in slot order."""
        return self.labels.decision_nodes()

    def sizes(self) -> dict:
        """Sizes as a plain dict: nodes, infosets (decision nodes), slots, hands, boards,
        terminals, depth."""
        return dict(nodes=self.num_nodes, infosets=self.num_infosets, slots=self.num_slots, hands=self.num_hands,
                    boards=self.num_boards, terminals=self.num_terminals, depth=self.depth,
                    trunk_nodes=int(self.trunk_parent.shape[0]), forest_nodes=int(self.forest_parent.shape[0]))


jax.tree_util.register_dataclass(
    PublicGame,
    data_fields=[f.name for f in dataclasses.fields(PublicGame) if not f.metadata.get("static")],
    meta_fields=[f.name for f in dataclasses.fields(PublicGame) if f.metadata.get("static")],
)
