"""Per-hand answers at one public decision node of a poker spot: ranges, strategy, EV, equity.

Poker users read a solution hand by hand: at a node such as `"k.b10"` (the river after
check, bet 10) or `"k.b10.c/Qh/k"` (a turn spot's river), what does each hand do, what is
it worth, and how often does it win at showdown? `node_report(game, policy, code)` answers
for every hand of the hand list (`[H]`, `PublicLabels.hand_names`), both players:

* **weight** `[2, H]`: player p's own reach of the node with hand h, its range weight
  included (the range "there"); 0 for a hand holding a card dealt above the node.
  postflop-solver's `weights(p)`, wasm-postflop's "Weight" column.
* **combos** `[2, H]`: weight times the opponent's compatible reach mass at the node,
  `m_p(h) = sum_{h'} compat(h, h') weight[1 - p, h']` (the opponent's hands sharing no
  card with h or the board): the mass of deals that reach the node with h under the
  profile. This is postflop-solver's `normalized_weights(p)` and wasm-postflop's
  "Combos" column exactly, a product of two weights and not a probability (full ranges
  of weight 1 at a river root: about 1,000 per hand); a dealt river card counts as a
  condition, not as a 1/44 chance. Summed over h it is the same for both players, the
  deal mass reaching the node (`Z` at the root); `combos / sum(combos)` is the share of
  the deals there that hold h.
* **strategy** `[H, A]`: the acting player's policy at the node (the average strategy of
  a solve); NaN rows for dead hands.
* **ev** `[2, H]`: postflop-solver's `expected_values(p)`: what player p holding h
  expects to take from the pot, less what p still puts in, given that the node is
  reached, under the profile; the player's share of the starting pot (`pot / 2`) and
  every chip p has put in so far count as the player's stake. In terms of cfrjax's
  zero-sum payoff (sunk cost: the net gain from the start of the subgame, as
  `cfrjax.expected_value`), `ev = net + pot / 2 + c_p(n)`, `c_p(n)` the chips p has put
  in during the subgame at the node (`PublicLabels.node_committed`); `net` is the
  counterfactual value of the passes (`node_values`) over the opponent's compatible
  mass, `v_p(n, h) Z / (c(n) m_p(h))` (`c(n)` the chance reach folded into the values:
  1/44 below a turn spot's river card, else 1), postflop-solver's normalisation. So a
  hand that folds at once is worth 0, one that wins the pot uncontested is worth the
  pot, and without rake the two players' combos-weighted EVs at a node add up to the
  pot there (starting pot plus both players' chips in). Where the player's own weight
  is 0 the value is counterfactual (what h would get if the player brought it here);
  NaN where the hand is dead or the opponent has no compatible hand there.
* **equity** `[2, H]`: the share of the pot h wins at showdown against the opponent's
  range at the node, ties counted half, `(Wk(h) + Ti(h) / 2) / m_p(h)` (opponent reach
  mass weaker / tied), averaged over the river cards still to come at a turn spot's turn
  node (each pair of hands sees 44 of them, equally likely), as postflop-solver's
  `equity`. Betting does not enter: it is the raw showdown equity. NaN as for `ev`.

Consistency (tested): `sum_h combos[p, h] ev[p, h] / Z - pot / 2` at the root is player
p's expected value (`cfrjax.expected_value`, negated for player 1), and an independent
brute-force evaluator gives the same per-hand EVs and equities.

Values come from one pass of `cfrjax.public.passes.node_values` (reach and counterfactual
values of every public node), equities from the showdown terminal code
(`cfrjax.public.terminals.showdown_diff`): both jitted, off the iteration's hot path.
`NodeReport.save_csv` / `save_npz` export it (`load_report` reads the `.npz` back).
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import functools
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import xla_options
from cfrjax.atomic import atomic_write
from cfrjax.columns import CSV_FIELDS
from cfrjax.deck import NO_CARD
from cfrjax.policy import average_policy
from cfrjax.public import passes as public_passes
from cfrjax.public import terminals, tree_passes
from cfrjax.public.game import PublicGame
from cfrjax.state import SolverState

__all__ = ["CSV_FIELDS", "NodeReport", "check_reportable", "decision_node", "load_report", "node_report"]

FORMAT = "cfrjax.node_report/1"
_ARRAYS = ("weight", "combos", "ev", "equity", "strategy")


@dataclasses.dataclass(frozen=True, eq=False)
class NodeReport:
    """Per-hand answers at one decision node (module docstring for each quantity).

    Attributes:
      game: the game's name.
      node: the node's code (`""` is the root).
      player: the player to act there (0 or 1).
      actions: `[A]` the acting player's action names.
      hands: `[H]` hand names of the hand list ("AsKs").
      weight, combos, ev, equity: `[2, H]` float64, per player and hand.
      strategy: `[H, A]` float64, the acting player's policy per hand.
      norm: `Z`, the deal mass of the spot (`sum combos[p]` at the root).
      meta: JSON-able provenance (fingerprint, pot, board, ...).
    """

    game: str
    node: str
    player: int
    actions: tuple
    hands: tuple
    weight: np.ndarray
    combos: np.ndarray
    ev: np.ndarray
    equity: np.ndarray
    strategy: np.ndarray
    norm: float
    meta: dict = dataclasses.field(default_factory=dict)

    def summary(self, player: int | None = None) -> dict:
        """Range-level numbers of `player` (default: the one to act), weighted by combos:
        `{"combos", "ev", "equity", "frequencies"}` (`frequencies` `[A]`, the acting
        player's action frequencies over its range; only for the acting player)."""
        p = self.player if player is None else player
        w = self.combos[p]
        total = float(w.sum())

        def mean(x):
            ok = w > 0
            return float(np.sum(w[ok] * x[ok]) / total) if total > 0 else float("nan")
        out = {"combos": total, "ev": mean(self.ev[p]), "equity": mean(self.equity[p])}
        if p == self.player:
            out["frequencies"] = [mean(self.strategy[:, a]) for a in range(len(self.actions))]
        return out

    def rows(self, player: int | None = None, *, all_hands: bool = False) -> np.ndarray:
        """Hand indices (hand-list order) of `player`'s range at the node (default: the one
        to act): the hands with weight > 0; with `all_hands` every live hand there (those
        the player does not bring here have a counterfactual EV)."""
        p = self.player if player is None else player
        keep = self.weight[p] > 0
        if all_hands:
            keep |= ~np.isnan(self.equity[p])
        return np.flatnonzero(keep)

    def save_csv(self, path: str | os.PathLike, rows=None) -> None:
        """One row per hand of `rows` (hand indices, default `self.rows()`: the acting
        player's range; `self.rows(all_hands=True)` for every live hand), in hand-list
        order: the columns `CSV_FIELDS` (`weight0` is player 0's weight, ...; the module
        docstring defines each), then one column per action named by the action (the
        acting player's probability). Floats in full precision (`repr`, so they read back
        exactly); `nan` where undefined."""
        rows = self.rows() if rows is None else np.sort(np.asarray(rows, np.int64))

        def write(f):
            w = csv.writer(f)
            w.writerow(list(CSV_FIELDS) + list(self.actions))
            for h in rows.tolist():
                name = self.hands[h]
                nums = [self.weight[0, h], self.weight[1, h], self.combos[0, h], self.combos[1, h], self.ev[0, h],
                        self.ev[1, h], self.equity[0, h], self.equity[1, h], *self.strategy[h]]
                w.writerow([name] + [repr(float(x)) for x in nums])
        atomic_write(path, write, text=True)

    def save_npz(self, path: str | os.PathLike) -> None:
        """Arrays `weight`, `combos`, `ev`, `equity` `[2, H]`, `strategy` `[H, A]`, `hands`
        `[H]` and `actions` `[A]` (strings), and `meta` (JSON: game, node, player, norm,
        meta); `load_report` reads it back."""
        head = dict(format=FORMAT, game=self.game, node=self.node, player=self.player, norm=self.norm,
                    meta=self.meta)
        arrays = {k: np.asarray(getattr(self, k), np.float64) for k in _ARRAYS}
        atomic_write(path, lambda f: np.savez_compressed(
            f, meta=np.frombuffer(json.dumps(head).encode(), np.uint8), hands=np.array(self.hands, dtype=str),
            actions=np.array(self.actions, dtype=str), **arrays))


def load_report(path: str | os.PathLike) -> NodeReport:
    """Read a `NodeReport.save_npz` file. Raises `ValueError` if it is not one."""
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            head = json.loads(z["meta"].tobytes().decode())
            if head.get("format") != FORMAT:
                raise ValueError(f"format {head.get('format')!r}")
            arrays = {k: z[k] for k in _ARRAYS}
            hands, actions = tuple(str(x) for x in z["hands"]), tuple(str(x) for x in z["actions"])
    except (OSError, ValueError, KeyError, EOFError) as e:
        raise ValueError(f"{path}: not a node report written by NodeReport.save_npz ({e})") from None
    return NodeReport(game=head["game"], node=head["node"], player=int(head["player"]), actions=actions, hands=hands,
                      norm=float(head["norm"]), meta=head.get("meta", {}), **arrays)


# ----------------------------------------------------------------------------------------


def decision_node(game: PublicGame, code: str) -> int:
    """The index (in `PublicLabels` order) of the decision node with code `code` (on a
    suit-merged game, a member card's node: its representative's); `ValueError` naming a
    few valid codes (the closest first) otherwise."""
    codes = game.labels.node_codes
    if game.labels.merge is not None:   # a member card's node: its representative's
        code = game.labels.merge.node_of(str(code))[0]
    try:
        return codes.index(str(code))
    except ValueError:
        pass
    close = difflib.get_close_matches(str(code), [c for c in codes if c], n=3, cutoff=0.5)
    sample = list(dict.fromkeys(close + [c for c in codes if "/" not in c][:4] + list(codes[:2])))[:5]
    shown = ", ".join("'' (the root)" if not c else repr(c) for c in sample)
    raise ValueError(f"{game.name}: no decision node {code!r}; e.g. {shown} ({len(codes)} decision nodes; codes "
                     "as in information-set keys P<player>|<hand>|<code>: k check, c call, b<x> bet or raise to "
                     "x, /<card>/ the river card)")


def _public_node(game: PublicGame, node: int) -> tuple:
    """`(board, index)` of decision node `node` in `node_values`' arrays: `(None, trunk
    node)` on the trunk, `(b, forest node)` in board b's forest."""
    start = int(np.asarray(game.infoset_slot_start)[node])
    (t0, t1), (s0, s1) = game.trunk_slots, game.forest_slots
    player = 0 if start < game.slot_split else 1
    off = start if player == 0 else start - game.slot_split
    t, s = (t0, s0) if player == 0 else (t1, s1)
    if off < t:
        return None, int(np.asarray(game.trunk_slot_node)[(0 if player == 0 else t0) + off])
    b, k = divmod(off - t, s)
    return b, int(np.asarray(game.forest_slot_node)[(0 if player == 0 else s0) + k])


def _chance_count(game: PublicGame) -> int:
    """Boards live for any given pair of hands: on a turn spot the river cards but the 4
    the two hands hold (44 of 48); on a flop the turn cards but 4 times the river cards
    but 4 (45 x 44 of 49 x 48); 1 on a river spot. The forest's values carry 1 / this
    (`cfrjax.games.poker.public_tree`: the chance reach folded into the stakes)."""
    if game.iso_perm is not None:   # a suit-merged turn spot: its boards' members
        return int(np.sum(np.asarray(game.board_members) < game.iso_perm.shape[0] - 1)) - 4
    if game.board_groups:          # a flop: boards grouped by turn card
        return (game.board_groups - 4) * (game.num_boards // game.board_groups - 4)
    return game.num_boards - 4 if game.dealt else 1


#: Compiler options of the report's program: XLA's CPU backend without its expensive
#: optimisations. The program runs once per report, and compiling it was most of a `cfrjax
#: show` (a third less cold); the numbers agree to the last bit or two of float64.
_REPORT_OPTIONS = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


@functools.partial(xla_options.jit, options=_REPORT_OPTIONS, static_argnames=("trunk",))
def _node_arrays(game, policy, board, node, trunk: bool):
    """`(reach, values, mass, diff)`, each `[2, H]`, at one public node (trunk node `node`
    where `trunk`, else forest node `node` of board `board`; `board` and `node` traced, so
    one executable serves every trunk node, one every forest node, of a game): the reach
    and counterfactual values of `node_values` (a trunk node: `trunk_values`, the forests'
    nodes not kept), the opponent's compatible reach mass `m_p(h)`, and the showdown wins
    minus losses `Wk - St` against the opponent's reach, on the node's board, or summed
    over every board below a trunk node. Compiled once per game shape (seconds on a CPU:
    the whole tree's passes) and kept with the solver's programs where the compilation
    cache is on (`cfrjax.compile_cache`: `cfrjax show` turns it on), so a later report of
    the same spot, at any node, reads it back."""
    if trunk:
        out = public_passes.trunk_values(game, policy)
        reach, values = out["trunk_reach"][node], out["trunk_values"][node]
    else:
        out = public_passes.node_values(game, policy)
        reach, values = out["forest_reach"][board, node], out["forest_values"][board, node]
    opp = jnp.flip(reach, 0)                                                          # lane p: p's opponent
    mass = terminals.compat_sums(opp.T, game.hand_cards, game.card_hands).T
    live = game.board_live.astype(reach.dtype)                                        # [B, H]
    # The accelerators' showdown form (cumulative sums, dense where built) on every platform:
    # one showdown per board runs in no time, and it compiles faster than the CPU's scans.
    names = ("sd_sorted", "sd_card_sorted", "sd_index") + (("dense_showdown",) if terminals.dense_used(game, False)
                                                          else ())

    def one(b):   # board b's showdown terms, its dead hands (either side) masked; 0 off the node's board
        tables = {k: getattr(game, k)[b] for k in names}
        on = jnp.ones((), reach.dtype) if trunk else (b == board).astype(reach.dtype)
        return terminals.showdown_diff(game, tables, (opp * live[b] * on)[None], False)[0] * live[b]
    per = jax.lax.map(one, jnp.arange(game.num_boards))                              # [B, 2, H]
    if trunk and game.iso_perm is not None:   # below a trunk node every member of a representative board counts
        per = tree_passes.members_sum(game.iso_perm, game.board_members, per)
    diff = jnp.sum(per, axis=0)
    return reach, values, mass, diff


def check_reportable(game: PublicGame) -> None:
    """Refuse (one line) a public game whose node reports are not available yet: one hand
    list per player (`hands='player'`), or a suit-merged flop (`isomorphism = true`; a
    merged turn spot reports any node, a member card's as its representative's with the
    hands' suits permuted).
    `cfrjax show` asks before solving."""
    if game.player_lists:
        raise ValueError(f"{game.name}: node reports of a game with one hand list per player (hands='player') are not "
                         "available yet; build it with hands='range' for a report")
    if game.iso_perm is not None and game.board_groups:
        raise ValueError(f"{game.name}: node reports of a suit-merged flop (isomorphism = true) are not available yet; "
                         "build it with isomorphism = false for a report")


def node_report(game: PublicGame, policy, node: str) -> NodeReport:
    """Per-hand ranges, strategy, EV and equity at decision node `node` (module docstring).

    Args:
      game: a poker spot in the public form (`cfrjax.load_game(spec)`).
      policy: both players' policy `[S, H]` (e.g. `cfrjax.average_policy(game, state)`),
        or a `SolverState` (its average policy is used).
      node: the node's public code, e.g. `"k.b10"` or `"k.b10.c/Qh/k"`; `""` is the root
        (`PublicLabels.node_codes` lists them).

    Returns:
      A `NodeReport` in float64 (computed in the game's float dtype).

    Raises:
      ValueError: a game that is not in the public form, a policy of another shape, or an
        unknown node (the message names a few valid codes).
    """
    if not isinstance(game, PublicGame) or game.labels is None:
        raise ValueError(f"node reports need a poker spot in the public form (cfrjax.load_game(spec)), not "
                         f"{type(game).__name__} {getattr(game, 'name', '')!r}".rstrip())
    check_reportable(game)
    if isinstance(policy, SolverState):
        policy = average_policy(game, policy)
    dt = game.weights.dtype
    policy = jnp.asarray(policy, dt)
    if policy.shape != tuple(game.slot_shape):
        raise ValueError(f"policy has shape {list(policy.shape)}, expected {list(game.slot_shape)} (one row per slot "
                         f"of {game.name!r}, one column per hand)")
    labels = game.labels
    i = decision_node(game, node)
    board, n = _public_node(game, i)
    if board is None and game.board_groups and int(np.asarray(game.trunk_dealt)[n]) != NO_CARD:
        raise ValueError(f"{game.name}: node reports at a flop's turn-street nodes ({node!r}, below its turn card) "
                         "are not available yet (the flop's own nodes and its river nodes are); solve the turn "
                         "spot of that turn card for its report")
    chance = 1.0 if board is None else 1.0 / _chance_count(game)
    real = len(labels.hand_names)   # the hands the labels list (padding hands, `pad_hands`, last: left out)
    reach, values, mass, diff = (np.asarray(x, np.float64)[:, :real] for x in _node_arrays(
        game, policy, np.int32(0 if board is None else board), np.int32(n), trunk=board is None))
    if board is None and game.dealt:   # the mean over the 44 river cards live for each pair of hands
        diff = diff / _chance_count(game)
    norm = float(game.norm)
    alive = labels.live_hands(i)[None] & (mass > 0)
    safe = np.where(alive, mass, 1.0)
    pot = float(labels.source["poker"]["pot"])
    stake = pot / 2 + np.asarray(labels.node_committed[i], np.float64)[:, None]        # [2, 1]
    ev = np.where(alive, values * norm / (chance * safe) + stake, np.nan)
    equity = np.where(alive, 0.5 + 0.5 * diff / safe, np.nan)
    sl = labels.node_slots(i)
    strategy = np.asarray(policy[sl], np.float64).T[:real].copy()                        # [H, A]
    strategy[~labels.live_hands(i)] = np.nan
    k = labels.merge.node_of(str(node))[1] if labels.merge is not None else 0
    if k:   # a member card's node: the representative's rows, each hand's suits permuted
        perm = np.asarray(game.iso_perm)[k]
        reach, mass, ev, equity, strategy = reach[:, perm], mass[:, perm], ev[:, perm], equity[:, perm], strategy[perm]
    poker = dict(labels.source.get("poker", {}))
    meta = {"fingerprint": labels.fingerprint, **{k: poker[k] for k in ("board", "pot", "behind", "stack", "street")
                                                    if k in poker}}
    return NodeReport(game=game.name, node=str(node), player=int(labels.node_player[i]),
                      actions=tuple(str(a) for a in labels.action_names[i]), hands=tuple(labels.hand_names),
                      weight=reach, combos=reach * mass, ev=ev, equity=equity, strategy=strategy, norm=norm,
                      meta=meta)
