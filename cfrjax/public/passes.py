"""The public form's passes (`cfrjax.public.game.PublicGame`): counterfactual values over hands.

Per player p every quantity is a vector over the hand list: reach and values are
`[n, 2, H, *batch]` (node, player lane, hand, trailing batch axes).

* **Forward**: the root reach of player p is its range `w_p`;
  `reach[c, p] = reach[parent(c), p] * sigma_ext[lane_slot[c, p]]` (the trunk level by
  level; the forest as one product along each node's own-decision path), and below the
  card of board `b` times `board_live[b]` (hands holding the card are dead there; on a
  flop also below its turn card in the trunk, `trunk_dealt`). Chance probabilities are
  not in the reach.
* **Terminals** (`cfrjax.public.terminals`): from the opponent's reach at every terminal
  with card removal, times the stake (chance folded in: 1/44 per river card, 1/45 per
  flop's turn card, as the tabular form's `pi_c u`), the player's sign, the own hand's live mask and
  `1 / Z`: counterfactual values (the opponent's range weight and chance included, the
  own weight not), equal to the tabular form's divided by `w_p[h]`. A raked game
  (`PublicGame.raked`, static) is not zero-sum: each player's fold payoff is its own
  (`*_fold_values [F, 2]`, the winner's less the rake) and a showdown's value is
  `(sd - r/2)(Wk - St) - (r/2) C` (`_showdown_values`); an unraked game runs the
  zero-sum code, unchanged.
* **Backward** (`backward`): per level, `v(n) = term(n) + sum_c w(c) v(c)` over the
  children, `w(c)` = the player's own strategy at its decisions, 1 at the opponent's and
  at chance nodes; a static Python loop over levels, each one gather-multiply and a
  segment sum (`cfrjax.passes.segment_total`, pulled or scattered as `game.reduction`
  says).
* **Regrets**: `r[slot, h] = v(child) - v(node)` for the acting player; `y` = own
  reach (range weight included) at the slot's node times the slot's strategy.
* **Best response**: the same backward pass with the max over actions at the player's
  own decision nodes, per hand; `BR_p = sum_h w_p[h] v_p(root, h)`.
* **Node values** (`node_values`, for reports, not the iteration): the same forward and
  backward passes, both lanes, keeping the reach and values of every node.

The trunk runs first (forward), then every board's forest (`_board`: forward, terminals,
backward, its slots' regrets), then the trunk backward from the boards' summed root
values (on a flop summed per turn card: board `b` hangs below the trunk leaves
`root_chance[board_group[b]]`). On CPU the boards run one at a time in a loop (each board's arrays, about 1 MB on
a full-range turn, stay in cache, where all 48 at once would stream through memory),
elsewhere all at once (`vmap`). One choice per pass (`_on_platform`) picks the lowering: on CPU scattered
sums, the loop, prefix scans and sorted terminals; elsewhere pulled sums, `vmap`,
`cumsum` and dense terminals where built (`PublicGame.terminals`, `.reduction` override).
On CPU, where the native library builds (`cfrjax.public.native`), a regret pass's boards
run as one native call (`_native_boards`), and a river or turn spot's whole (half-)update
as another (`_native_half`, through the form's `fused_half`); the XLA form stays for
the rest (evaluation, reports, raked games, batch axes; the predictive rules' and the
flop's updates around the native boards) and where no compiler is.

With the tabular deal distribution `w0 w1 / Z`, a tabular regret of (player p, hand h,
node) equals the public regret times `w_p[h]`, and a tabular average omits the weight the
public `y` carries.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import passes, rules
from cfrjax.kernels import KERNELS
from cfrjax.passes import lift
from cfrjax.plan import plan_of
from cfrjax.public import native, spot_kernel, terminals, turn_kernel
from cfrjax.public.game import PublicGame

__all__ = ["backward", "best_response_values", "evaluation", "expected_value", "expected_values", "forward", "hand_values",
           "infosets", "leaf_values", "node_values", "range_weights", "regret_pass", "scratch_elements", "set_ranges",
           "strategy_rows"]


def _lanes(player) -> tuple:
    if player is None:
        return (0, 1)
    if player not in (0, 1):
        raise ValueError(f"player must be 0, 1 or None, got {player!r}")
    return (player,)


def _lead(x, k: int):
    """`x [*batch]` with `k` leading unit axes (a per-game scalar against `[.., *batch]`)."""
    return jnp.reshape(x, (1,) * k + jnp.shape(x))


def _opponent(x, lanes, axis: int):
    """The opponents' lanes of `lanes` along `axis` (both: reversed)."""
    if len(lanes) == 2:
        return jnp.flip(x, axis)
    q = 1 - lanes[0]
    return jax.lax.slice_in_dim(x, q, q + 1, axis=axis)


class _Tree:
    """The trunk's or one board's forest arrays (breadth-first levels)."""

    def __init__(self, game: PublicGame, stage: str):
        get = lambda name: getattr(game, f"{stage}_{name}")   # noqa: E731
        self.parent, self.child_start, self.owner = get("parent"), get("child_start"), get("owner")
        self.lane_slot, self.term_pos = get("lane_slot"), get("term_pos")
        self.levels, self.fanout, self.terms = get("levels"), get("fanout"), get("level_terms")
        self.path = getattr(game, f"{stage}_path", None)
        self.root_of = getattr(game, f"{stage}_root_of", None)
        self.dealt = getattr(game, f"{stage}_dealt", None)
        self.level_dealt = getattr(game, f"{stage}_level_dealt", ())
        self.hand_cards = game.hand_cards


def _alive(hand_cards, cards, nd: int, dtype):
    """`[n, 1, H, 1...]` (`nd` dimensions): 1 where a hand holds none of `cards [n]` (52:
    no card)."""
    c = cards[:, None]
    live = (hand_cards[None, :, 0] != c) & (hand_cards[None, :, 1] != c)
    return lift(live.astype(dtype)[:, None], nd)


def forward(tree: _Tree, sigma_ext, root, nd: int):
    """Own reach `[n, 2, H, *batch]` of both players at the tree's nodes: `reach[c, p] =
    reach[parent(c), p] * sigma_ext[lane_slot[c, p]]`, the roots' (level 0) given by `root`.

    The forest multiplies each node's own-decision path (`path`, root first), one fused
    kernel; the trunk goes level by level (a fused chain of levels would recompute the
    levels above every node)."""
    if tree.path is not None:
        out = root[tree.root_of]
        for k in range(tree.path.shape[-1]):
            out = out * lift(sigma_ext[tree.path[..., k]], nd)
        return out
    ls = tree.levels
    reach = [root]
    for d in range(1, len(ls) - 1):
        lo, hi = ls[d], ls[d + 1]
        r = reach[-1][tree.parent[lo:hi] - ls[d - 1]] * lift(sigma_ext[tree.lane_slot[lo:hi]], nd)
        if tree.level_dealt and tree.level_dealt[d]:    # just below a flop's turn card
            r = r * _alive(tree.hand_cards, tree.dealt[lo:hi], nd, r.dtype)
        reach.append(r)
    return jnp.concatenate(reach)


def backward(tree: _Tree, sigma_ext, tv, lanes: tuple, pull: bool, mode: str = "ev"):
    """Values `[n, L, H, *batch]` of `lanes`' players, deepest level first:
    `v(n) = tv[term_pos[n]] + sum_c w(c) v(c)` with `w` the player's own strategy at its
    decisions and 1 elsewhere (chance is in the terminal values). `mode`: `"ev"` (that),
    `"br"` (both lanes: each player takes the max over its own actions instead), or
    `"br_ev"` (`tv` of four lanes, `L = 4`: lanes 0-1 `"br"`, lanes 2-3 `"ev"`, every
    level's sums one sum over the four; what `evaluation` needs, at the size of one pass).
    Other modes of `_sweep` (`"regret"`, `"nodes"`) are `"ev"` here."""
    ls = tree.levels
    last = len(ls) - 2
    nd = tv.ndim
    br = mode in ("br", "br_ev")
    player = jnp.arange(2, dtype=tree.owner.dtype)
    vals = [tv[tree.term_pos[ls[last]:ls[last + 1]]]]
    for d in range(last - 1, -1, -1):
        lo, hi, chi = ls[d], ls[d + 1], ls[d + 2]
        start = tree.child_start[lo:hi + 1] - hi
        seg = tree.parent[hi:chi] - lo
        child = vals[-1]
        if br:     # [m, 2, 1...]: the child's parent is the lane player's decision
            own = lift(tree.owner[tree.parent[hi:chi]][:, None] == player[None, :], nd)
        if mode == "br":      # the other player's children add up (weight 1), the own ones are maxed
            total = passes.segment_total(jnp.where(own, 0.0, child), start, tree.fanout[d], seg, pull=pull)
        else:
            w = lift(sigma_ext[tree.lane_slot[hi:chi, lanes[0]:lanes[-1] + 1]], nd)
            if mode == "br_ev":
                w = jnp.concatenate([jnp.broadcast_to(jnp.where(own, 0.0, 1.0).astype(w.dtype), w.shape), w], axis=1)
            total = passes.segment_total(w * child, start, tree.fanout[d], seg, pull=pull)
        if br:
            best = jax.ops.segment_max(jnp.where(own, child[:, :2], -jnp.inf), seg, num_segments=hi - lo,
                                       indices_are_sorted=True)
            mine = lift(tree.owner[lo:hi][:, None] == player[None, :], nd)
            total = (jnp.concatenate([jnp.where(mine, best, total[:, :2]), total[:, 2:]], axis=1)
                     if mode == "br_ev" else jnp.where(mine, best, total))
        if tree.terms[d]:
            total = total + tv[tree.term_pos[lo:hi]]
        vals.append(total)
    return jnp.concatenate(vals[::-1])


def _fold_values(game, reach, nodes, payoff, lanes, inv_z, cpu: bool, values=None, compat=None):
    """Fold terminals' values `[F, L, H, *batch]` of `lanes`' players: player 0's `payoff
    [F]` with the sign of each lane, or in a raked game each player's own `values [F, 2]`.
    `compat`: the compatible opponent reach already summed (`terminals.dense_pair`)."""
    nd = reach.ndim
    # (The sign constant is made first, as before rake existed: the unraked program stays the same, bit for bit.)
    sign = None if values is not None else jnp.asarray(np.array([1.0, -1.0])[list(lanes)], reach.dtype)
    row = (values.astype(reach.dtype)[:, lanes[0]:lanes[-1] + 1] if values is not None
           else payoff.astype(reach.dtype)[:, None] * sign[None, :])                 # [F, L]: stake and sign
    if compat is not None:
        return compat * lift(row, nd) * inv_z
    return terminals.fold_values(game, _opponent(reach[nodes], lanes, 1), lift(row, nd), inv_z, cpu)


def _showdown_values(game, board: dict, reach, lanes, inv_z, cpu: bool, diff=None):
    """One board's showdown values `[K, L, H, *batch]` of `lanes`' players.

    Unraked: `stake * (Wk - St)`. Raked (rake `r` per showdown, paid by the winner, half
    each at a tie): with the opponent's compatible reach `W` weaker, `L` stronger, `T`
    tied and `C = W + L + T`, the value `(sd - r) W - sd L - (r / 2) T` is
    `(sd - r / 2)(W - L) - (r / 2) C`: one more compatible-reach sum (as at folds).
    `diff`: `Wk - St` already summed (`terminals.dense_pair`, unraked)."""
    nd = reach.ndim
    dt = reach.dtype
    opp = _opponent(reach[game.forest_showdown_node], lanes, 1)
    if diff is None:
        diff = terminals.showdown_diff(game, board, opp, cpu)
    stake = game.forest_showdown_stake.astype(dt)
    if not game.raked:
        return diff * lift(stake[:, None], nd) * inv_z
    half = 0.5 * game.forest_showdown_rake.astype(dt)
    total = terminals.fold_compat(game, opp, cpu)
    return (diff * lift((stake - half)[:, None], nd) - total * lift(half[:, None], nd)) * inv_z


def _board(game: PublicGame, xs, root, sigma_ext, lanes, mode: str, cpu: bool):
    """One board's forest: values at its roots (chance included), and for `mode ==
    "regret"` the new regrets and average terms of its slots, per lane; for `mode ==
    "nodes"` the reach and values of all its nodes (`node_values`)."""
    if "root" in xs:    # a flop's board: the roots below its turn card
        root = xs["root"]
    nd = root.ndim
    dt = root.dtype
    tree = _Tree(game, "forest")
    s0, s1 = game.forest_slots
    if game.dealt:
        live = lift(xs["live"].astype(dt)[None, None], nd)                  # [1, 1, H]
        root = root * live
    ones = jnp.ones((1,) + xs["sig0"].shape[1:], sigma_ext.dtype)
    sig = jnp.concatenate([xs["sig0"], xs["sig1"], ones])                   # [s0 + s1 + 1, H, *b]
    reach = forward(tree, sig, root, nd)
    inv_z = _lead(1.0 / game.norm.astype(dt), 3)
    sums = None
    if terminals.dense_paired(game, cpu):
        sums = terminals.dense_pair(game.dense_compat, xs["dense_showdown"],
                                    _opponent(reach[game.forest_fold_node], lanes, 1),
                                    _opponent(reach[game.forest_showdown_node], lanes, 1))
    tvf = _fold_values(game, reach, game.forest_fold_node, game.forest_fold_payoff, lanes, inv_z, cpu,
                       game.forest_fold_values, None if sums is None else sums[0])
    tvs = _showdown_values(game, xs, reach, lanes, inv_z, cpu, None if sums is None else sums[1])
    tv = jnp.concatenate([tvf, tvs])
    if game.dealt:
        tv = tv * live
    tv = jnp.concatenate([tv, jnp.zeros((1,) + tv.shape[1:], dt)])
    if mode == "br_ev":
        tv = jnp.concatenate([tv, tv], axis=1)
    vals = backward(tree, sig, tv, lanes, _pull(game, cpu), mode)
    out = {"root": vals[:game.num_roots]}
    if mode == "nodes":
        out["reach"], out["values"] = reach, vals
    if mode == "regret":
        for i, p in enumerate(lanes):
            lo, hi = (0, s0) if p == 0 else (s0, s0 + s1)
            node, child = game.forest_slot_node[lo:hi], game.forest_slot_child[lo:hi]
            out[f"regret{p}"] = xs[f"regret{p}"] + (vals[child, i] - vals[node, i])
            out[f"y{p}"] = reach[node, p] * lift(sig[lo:hi], nd - 1)
    return out


_TABLES = ("sd_sorted", "sd_card_sorted", "sd_index")


def _pull(game: PublicGame, cpu: bool) -> bool:
    """Whether tree sums gather-and-add (`CompiledGame.reduction`; "auto": not on CPU)."""
    return game.reduction == "pull" or (game.reduction == "auto" and not cpu)


def _on_platform(run):
    """`run(cpu)` for the platform traced for (`cfrjax.passes.traced_for_cpu`): one choice
    for the whole pass (tree sums, the map over boards, prefix sums and the terminal form
    follow from it)."""
    return run(passes.traced_for_cpu())


def board_tables(game: PublicGame, cpu: bool) -> dict:
    """Every board's terminal tables and live hands, board-major (`_board`'s table inputs;
    `dense_showdown` where the dense form is used)."""
    names = _TABLES + (("dense_showdown",) if terminals.dense_used(game, cpu) else ())
    xs = {k: getattr(game, k) for k in names}
    xs["live"] = game.board_live
    return xs


def _board_inputs(game: PublicGame, sigma_ext, lanes, regret, base, cpu: bool, b=None, roots=None) -> dict:
    """The inputs to `_board`: tables, live hands, strategy and regret rows, and on a flop
    the forest roots' reach (`roots [G, R, 2, H, *batch]` picked by the board's turn
    card); of board `b` (dynamic slices), or of every board, board-major (static slices
    and reshapes; only the roots gathered) when `b` is `None`."""
    B = game.num_boards
    (t0, t1), (s0, s1), split = game.trunk_slots, game.forest_slots, game.slot_split
    names = _TABLES + (("dense_showdown",) if terminals.dense_used(game, cpu) else ())
    if b is None:
        xs = board_tables(game, cpu)

        def rows(a, start, size):
            return a[start:start + B * size].reshape((B, size) + a.shape[1:])
    else:
        xs = {k: jax.lax.dynamic_index_in_dim(getattr(game, k), b, 0, keepdims=False) for k in names}
        xs["live"] = jax.lax.dynamic_index_in_dim(game.board_live, b, 0, keepdims=False)

        def rows(a, start, size):
            return jax.lax.dynamic_slice_in_dim(a, start + b * size, size, 0)
    if game.board_groups:
        if b is None:
            xs["root"] = roots[game.board_group]
        else:
            xs["root"] = jax.lax.dynamic_index_in_dim(roots, game.board_group[b], 0, keepdims=False)
    xs["sig0"] = rows(sigma_ext, t0, s0)
    xs["sig1"] = rows(sigma_ext, split + t1, s1)
    if regret is not None:
        for p in lanes:
            t, s = (t0, s0) if p == 0 else (t1, s1)
            xs[f"regret{p}"] = rows(regret, base[p] + t, s)
    return xs


def _map_boards(game: PublicGame, f, sigma_ext, lanes, regret, base, cpu: bool, roots=None) -> dict:
    """`f` (`_board`) of every board, its outputs stacked board-major (`[B, ...]`): on
    CPU a loop over the boards (each board's arrays stay in cache), elsewhere all at once
    (`vmap`). `roots`: a flop's forest-root reach per turn card (`_board_inputs`)."""
    B = game.num_boards
    if B == 1:
        xs = _board_inputs(game, sigma_ext, lanes, regret, base, cpu)
        return jax.tree.map(lambda a: a[None], f(jax.tree.map(lambda a: a[0], xs)))
    if cpu:   # slices taken inside the loop: no copies of the [S, H] inputs
        return jax.lax.map(lambda b: f(_board_inputs(game, sigma_ext, lanes, regret, base, cpu, b, roots)),
                           jnp.arange(B))
    return jax.vmap(f)(_board_inputs(game, sigma_ext, lanes, regret, base, cpu, roots=roots))


def _root_sum(game: PublicGame, r):
    """The boards' forest-root values `r [B, R, ...]` summed into the trunk's chance
    leaves: `[R, ...]`, on a flop per turn card, `[G R, ...]`."""
    G, B = game.board_groups, game.num_boards
    if G:
        return jnp.sum(r.reshape((G, B // G) + r.shape[1:]), axis=1).reshape((G * r.shape[1],) + r.shape[2:])
    return jnp.sum(r, axis=0)


def _native_applies(game: PublicGame, cpu: bool, batch: tuple) -> bool:
    """Whether the native code can run this game's passes: on CPU where the game's plan has
    it (`Plan.native`: the library builds), an unraked game with sorted terminals, no batch
    axes (under `vmap` the call loops). Each native path has its own field besides
    (`Plan.native_forest`, `Plan.native_half`)."""
    return (cpu and not batch and not game.raked and not terminals.dense_used(game, cpu)
            and plan_of(game).native)


def _native_ints(game: PublicGame) -> dict:
    """The int32 operands both native calls read (`native.forest`, `native.half`): the
    showdown and card tables and the forest's tree."""
    return dict(sorted=game.sd_sorted, cards=game.sd_card_sorted, index=game.sd_index, hand_cards=game.hand_cards,
                card_hands=game.card_hands, parent=game.forest_parent, lane_slot=game.forest_lane_slot,
                fold_node=game.forest_fold_node, showdown_node=game.forest_showdown_node,
                slot_node=game.forest_slot_node, slot_child=game.forest_slot_child)


def _native_boards(game: PublicGame, sig, regret, roffs: dict, root, lanes, trunk=(0, 0)):
    """Every board's forest by `native.forest`: `(root values [B, R, L, H], regret, y)`, the
    lanes' rows as `_boards` returns them. `sig`: `((array, first row), ...)` of player 0's
    and 1's forest strategy rows; `roffs[p]`: the first forest row of lane p in `regret`;
    `root`: the forest roots' reach, `[R, 2, H]` or per turn card `[G, R, 2, H]`."""
    B = game.num_boards
    R = game.num_roots
    ints = dict(_native_ints(game), root_group=game.board_group if game.board_groups else np.zeros(B, np.int32))
    (s0a, o0), (s1a, o1) = sig
    return native.forest(s0a, s1a, regret, root.reshape((-1,) + root.shape[-2:]), game.board_live,
                         game.forest_fold_payoff, game.forest_showdown_stake, game.norm, ints, lanes=lanes,
                         offsets={"sig0": o0, "sig1": o1, **roffs}, slots=game.forest_slots, trunk=trunk,
                         boards=B, roots=R, dealt=game.dealt)


def _boards(game: PublicGame, f, sigma_ext, lanes, regret, base, cpu: bool, roots=None):
    """Run `f` (`_board`) on every board (`_map_boards`): `(sum of root values (`_root_sum`),
    regret, y)` with the forests' rows of `regret` / `y` (`[hi - lo, H, *batch]`, `None`
    unless regrets are wanted) filled in (the trunk's rows: `regret` as given, `y` zero)."""
    B = game.num_boards
    (t0, t1), (s0, s1) = game.trunk_slots, game.forest_slots
    rows = lambda p: (t0, s0) if p == 0 else (t1, s1)   # noqa: E731
    want = regret is not None
    out = _map_boards(game, f, sigma_ext, lanes, regret, base, cpu, roots)
    root_sum = _root_sum(game, out["root"])
    if not want:
        return root_sum, None, None
    regs, ys = [], []
    for p in lanes:
        t, s = rows(p)
        if t:
            regs.append(regret[base[p]:base[p] + t])
            ys.append(jnp.zeros((t,) + regret.shape[1:], sigma_ext.dtype))
        regs.append(out[f"regret{p}"].reshape((B * s,) + regret.shape[1:]))
        ys.append(out[f"y{p}"].reshape((B * s,) + regret.shape[1:]))
    return root_sum, jnp.concatenate(regs), jnp.concatenate(ys)


def leaf_values(game: PublicGame, roots, lanes, leaf=None):
    """A depth-limited game's leaf values `[R, L, H, *batch]` of `lanes`' players, summed
    over the boards: the leaf function (`cfrjax.public.depth`) called once on every leaf
    `l = b R + k` (board `b`, root `k`) with both players' normalised ranges there, its
    pot-relative counterfactual values turned into the passes' units: times chance, `1/Z`,
    the opponent's reach mass at the leaf and the leaf's pot, own dead hands 0.

    Args:
      roots: `[R, 2, H, *batch]` both players' reach (range weight included) at the
        trunk's chance leaves (the nodes that deal the next card).
      leaf: `None` (the stateless `leaf_fn`), or `(state, coef)` in a solve with a
        stateful leaf function: its state (`SolverState.leaf`) and this (half-)iteration's
        averaging coefficient `b_t / W_t` (`[*batch]`); `game.leaf_update` is called
        instead, told each player's reach mass at every leaf and `coef` for `lanes`' players
        (0 for the others), and the values come back with its new state.
    """
    B, R, H = game.num_boards, roots.shape[0], game.num_hands
    batch = roots.shape[3:]
    nd = 4 + len(batch)
    dt = roots.dtype
    data = game.leaf_data
    live = game.board_live.astype(dt)                                          # [B, H]
    reach = roots[None] * lift(live[:, None, None], nd)                        # [B, R, 2, H, *b]
    reach = reach.reshape((B * R, 2, H) + batch)
    mass = jnp.sum(reach, axis=2)                                              # [L, 2, *b]
    rho = reach / jnp.where(mass > 0, mass, 1.0)[:, :, None]

    def call(r0, r1, *carry):
        if not carry:
            v0, v1 = game.leaf_fn(data, r0, r1)
            new = None
        else:
            state, m, w = carry
            v0, v1, new = game.leaf_update(data, r0, r1, state, {"mass": m, "weight": w})
        return jnp.stack([jnp.asarray(v0, dt), jnp.asarray(v1, dt)], axis=1), new   # [L, 2, H]
    args = (rho[:, 0], rho[:, 1])
    if leaf is not None:
        state, coef = leaf
        on = jnp.asarray([p in lanes for p in (0, 1)], dt)
        args += (state, mass, lift(on, 1 + len(batch)) * jnp.broadcast_to(jnp.asarray(coef, dt), batch)[None])
    for _ in batch:
        call = jax.vmap(call, in_axes=-1, out_axes=-1)
    vals, new = call(*args)                                                   # [L, 2, H, *b]
    vals = jax.lax.slice_in_dim(vals, lanes[0], lanes[-1] + 1, axis=1)
    opp = _opponent(mass, lanes, 1)                                            # [L, lanes, *b]
    scale = opp * lift(data["chance"].astype(dt) * data["pot"].astype(dt), nd - 2) / _lead(game.norm.astype(dt), 2)
    vals = vals * scale[:, :, None] * lift(jnp.repeat(live, R, axis=0)[:, None], nd - 1)
    vals = jnp.sum(vals.reshape((B, R) + vals.shape[1:]), axis=0)
    return vals if leaf is None else (vals, new)


def _sweep(game: PublicGame, sigma_ext, lanes: tuple, mode: str, cpu: bool, regret=None, leaf=None):
    """Trunk forward, every board's forest, trunk backward.

    Returns `(root values [L, H, *batch], new regret, y)` (the last two for `mode ==
    "regret"`, for `lanes`' slots in slot order), and the new leaf state when `leaf` (a
    stateful leaf function's `(state, coef)`, `leaf_values`) is given; for `mode ==
    "nodes"` the dict of `node_values`."""
    dt = sigma_ext.dtype
    weights = game.weights.astype(dt)
    batch = jnp.broadcast_shapes(sigma_ext.shape[2:], weights.shape[2:], jnp.shape(game.norm))
    nd = 3 + len(batch)
    H = game.num_hands
    (t0, t1), split = game.trunk_slots, game.slot_split
    root = jnp.broadcast_to(lift(weights, nd - 1)[None], (1, 2, H) + batch)
    trunk = _Tree(game, "trunk")
    has_trunk = len(trunk.levels) > 0
    if has_trunk:
        reach1 = forward(trunk, sigma_ext, root, nd)
        forest_root = reach1[game.root_chance]
    else:
        forest_root = root
    offsets = {0: 0, 1: split}
    base = {p: offsets[p] - offsets[lanes[0]] for p in lanes}
    want = mode == "regret"
    if want:
        regret = jnp.broadcast_to(regret, regret.shape[:2] + batch) if regret.ndim - 2 < len(batch) else regret
    board = lambda x: _board(game, x, forest_root, sigma_ext, lanes, mode, cpu)   # noqa: E731
    roots = forest_root if game.board_groups else None
    if game.leaf_fn is not None:   # depth-limited: the leaves' values come from the leaf function
        if mode == "nodes":
            raise ValueError(f"{game.name}: node values of a depth-limited game are not available (its forest "
                             f"is the leaf function)")
        chance = leaf_values(game, forest_root, lanes, leaf)
        if leaf is not None:
            chance, leaf = chance
        if mode == "br_ev":
            chance = jnp.concatenate([chance, chance], axis=1)
        new = y = None
        if want:
            t_of = {0: t0, 1: t1}
            new = jnp.concatenate([regret[base[p]:base[p] + t_of[p]] for p in lanes])
            y = jnp.zeros(new.shape, sigma_ext.dtype)
    elif mode == "nodes":
        forest = _map_boards(game, board, sigma_ext, lanes, None, base, cpu, roots)
        chance, new, y = _root_sum(game, forest["root"]), None, None
        nodes = dict(forest_reach=forest["reach"], forest_values=forest["values"],
                     trunk_reach=jnp.zeros((0, 2, H) + batch, dt), trunk_values=jnp.zeros((0, 2, H) + batch, dt))
    elif want and plan_of(game).native_forest and _native_applies(game, cpu, batch):
        (t0, t1) = game.trunk_slots
        roffs = {p: base[p] + (t0 if p == 0 else t1) for p in lanes}
        r, new, y = _native_boards(game, ((sigma_ext, t0), (sigma_ext, split + t1)), regret, roffs, forest_root,
                                   lanes, trunk=(t0, t1))
        chance = _root_sum(game, r)
    else:
        chance, new, y = _boards(game, board, sigma_ext, lanes, regret if want else None, base, cpu, roots)
    if not has_trunk:
        return nodes if mode == "nodes" else (chance[0], new, y)   # (a depth-limited game has a trunk)
    inv_z = _lead(1.0 / game.norm.astype(dt), 3)
    tvf = _fold_values(game, reach1, game.trunk_fold_node, game.trunk_fold_payoff, lanes, inv_z, cpu,
                       game.trunk_fold_values)
    if game.trunk_dealt is not None:    # a flop's turn-street folds: the own hand's card removal
        tvf = tvf * _alive(game.hand_cards, game.trunk_dealt[game.trunk_fold_node], nd, dt)
    if mode == "br_ev":
        tvf = jnp.concatenate([tvf, tvf], axis=1)
    tv = jnp.concatenate([tvf, chance, jnp.zeros((1,) + chance.shape[1:], dt)])
    vals1 = backward(trunk, sigma_ext, tv, lanes, _pull(game, cpu), mode)
    if mode == "nodes":
        return dict(nodes, trunk_reach=reach1, trunk_values=vals1)
    if not want:
        return vals1[0], None, None
    for i, p in enumerate(lanes):
        t = t0 if p == 0 else t1
        if not t:
            continue
        lo = 0 if p == 0 else t0
        node, child = game.trunk_slot_node[lo:lo + t], game.trunk_slot_child[lo:lo + t]
        b0 = base[p]
        new = new.at[b0:b0 + t].add(vals1[child, i] - vals1[node, i])
        y = y.at[b0:b0 + t].set(reach1[node, p] * lift(sigma_ext[offsets[p]:offsets[p] + t], nd - 1))
    return (vals1[0], new, y) + (() if leaf is None else (leaf,))


def regret_pass(game: PublicGame, sigma_ext, regret, player, leaf=None):
    """One forward and one backward pass under `sigma_ext` `[S + 1, H, *batch]`.

    Args:
      game: the public game.
      sigma_ext: current strategy of all slots, sentinel row `S` all ones.
      regret: `[hi - lo, H, *batch]` cumulative regret of `player`'s slots
        (`cfrjax.passes.slot_range`).
      player: 0, 1, or `None` (both, from the same profile).
      leaf: a stateful leaf function's `(state, coef)` (`leaf_values`), or `None`.

    Returns:
      `(regret + r, y)`: `r[slot, h]` = counterfactual value of the slot's child minus
      its node's, for hand `h` of the acting player (opponent reach with its range
      weight, times chance, over `Z`; the own range weight not included); `y [hi - lo,
      H, *batch]` = own reach (range weight included) at the slot's node times
      `sigma_ext[slot]`; and the leaf function's new state when `leaf` is given.
    """
    lanes = _lanes(player)
    return _on_platform(lambda cpu: _sweep(game, sigma_ext, lanes, "regret", cpu, regret, leaf)[1:])




def _spot_half_applies(game: PublicGame, config, regret, locked, leaf) -> bool:
    first = regret[0] if isinstance(regret, tuple) else regret
    return (plan_of(game).cpu_spot_half and config is not None and KERNELS["spot_half"].supports(config) and locked is None
            and leaf is None and game.leaf_fn is None and game.num_boards == 1 and not len(game.trunk_levels)
            and bool(game.slot_runs) and first.ndim == 2 and game.weights.ndim == 2)


def _spot_half(game: PublicGame, config, regret, avg, comp, player, b_t, w_new, average):
    """One (half-)update of `player`'s slots (None: both) of a one-board spot (a river
    spot: one forest, no trunk) on CPU: `(regret, avg, avg_comp)` new, each whole or
    `player`'s half as given (`cfrjax.iteration._half`'s arrays: `regret` after this
    iteration's discount).

    The arithmetic of regret matching, `regret_pass` and the generic updates, bit for bit
    (the tests compare them), without their whole-array steps: each player's strategy is
    matched from its own rows (under alternating order the generic form joins the
    players' halves to match them, then adds the sentinel row, two copies of the slot
    arrays), and the forest (`_board`) reads it directly. Full-range river, one core,
    `bench/ab_switch.py` (`bench/results/cpu_spot_half.jsonl`): DCFR alternating 0.115 ->
    0.104 ms/iter, CFR+ simultaneous 0.099 -> 0.094 (`dcfr-postflop`, generic both ways,
    0.113 and 0.112). A turn spot's 48 boards looped
    this way (each board matching and updating its own rows in the loop) ran slower than
    the generic form, 49.7 -> 56.4 ms/iter: per board, the matching's small slices cost
    more in dispatch than the whole-array passes they replace. `average`: `(mean, comp,
    y, b_t, w_t) -> (mean, comp)` (`cfrjax.iteration._average_update`: compensated in
    float32, the plain running mean in float64). Where the native library builds,
    `_native_half` runs instead (it covers these spots and more); this is the form
    without it."""
    lanes = _lanes(player)
    split = game.slot_split
    halves = isinstance(regret, tuple)
    dt = (regret[0] if halves else regret).dtype
    rows = regret if halves else (regret[:split], regret[split:])
    xs = {k: v[0] for k, v in board_tables(game, True).items()}
    for q, (lo, hi) in enumerate(((0, split), (split, game.num_slots))):
        runs = passes._runs_within(game.slot_runs, lo, hi)
        xs[f"sig{q}"] = passes._matched_runs(runs, jnp.maximum(rows[q], 0.0), game.slot_uniform[lo:hi].astype(dt))
    root = game.weights.astype(dt)[None]
    if plan_of(game).native_forest and _native_applies(game, True, ()):
        whole = regret[player] if halves else regret
        _, new, y = _native_boards(game, ((xs["sig0"], 0), (xs["sig1"], 0)), whole,
                                   {p: 0 if halves else (0, split)[p] for p in lanes}, root, lanes)
    else:
        for p in lanes:
            xs[f"regret{p}"] = rows[p]
        out = _board(game, xs, root, xs["sig0"], lanes, "regret", True)
        new, y = (jnp.concatenate([out[f"{k}{p}"] for p in lanes]) for k in ("regret", "y"))
    new = rules.after_update(config, new)
    if halves:
        mean, low = average(avg[player], comp[player].astype(dt), y, b_t, w_new)
        return new, mean, low.astype(comp[player].dtype)
    mean, low = average(avg, comp.astype(dt), y, b_t, w_new)
    return new, mean, low.astype(comp.dtype)




def _native_half_applies(game: PublicGame, config, regret, comp, locked, leaf) -> bool:
    first = regret[0] if isinstance(regret, tuple) else regret
    return (plan_of(game).native_half and config is not None and KERNELS["native_half"].supports(config)
            and (locked is None or jnp.ndim(locked) == 2) and leaf is None and game.leaf_fn is None
            and not game.board_groups and game.trunk_dealt is None and first.ndim == 2 and game.weights.ndim == 2
            and jnp.ndim(game.norm) == 0
            and (config.dtype != "float32" or (comp[0] if isinstance(comp, tuple) else comp).dtype == first.dtype)
            and _native_applies(game, True, ()))


def _native_half(game: PublicGame, config, regret, avg, comp, player, b_t, w_new, t, raw=None, locked=None,
                 locked_policy=None):
    """One (half-)update of `player`'s slots (None: both) of a river or turn spot on CPU in
    one native call (`native.half`): `(regret, avg, avg_comp)` new, each whole or
    `player`'s half as given (`cfrjax.iteration._half`'s arrays: `regret` after this
    iteration's discount). The arithmetic of regret matching, `regret_pass`, the rule's
    update hooks and the average update (`cfrjax.iteration._average_update`), per board
    in the cache instead of in whole-array passes; equal to them to rounding
    (`tests/test_native_half.py`). Full-range spots, DCFR alternating, side by side with
    postflop-solver (`bench/cpu_speed.py`, `bench/results/cpu_speed.jsonl`, note
    "session 26 final"): on one core river 0.108 -> 0.053 ms/iter, turn 58 -> 17.4
    (postflop-solver 0.089 and 27.5).

    `raw`: `((own rows, other rows) before this iteration's discount, its factors)`
    (`cfrjax.iteration._half`): with factors (LCFR, DCFR) the call matches undiscounted
    regrets (the same strategy: one positive factor on every positive regret) and
    discounts the updating rows itself, so XLA never writes the discounted arrays (a pass
    over every regret per iteration, on XLA's threads beside the call's). `locked`,
    `locked_policy`: `[S, H]` node locking (`None`: nothing locked): locked slots play
    the policy, as `cfrjax.iteration` overrides the matched strategy."""
    lanes = _lanes(player)
    split = game.slot_split
    halves = isinstance(regret, tuple)
    dt = (regret[0] if halves else regret).dtype
    own_rows = regret[player] if halves else regret
    other_rows = regret[1 - player] if halves else None
    factors = rules.update_discount_factors(config, t)
    if raw is not None and raw[1] is not None:     # the discount is the call's
        (own_rows, other), factors = raw
        other_rows = other if halves else None
    one = jnp.ones((), dt)
    pos, neg = (one, one) if factors is None else factors
    scalars = jnp.stack([jnp.asarray(x, dt) for x in (rules.mean_coefficient(b_t, w_new), pos, neg)])
    # A river has no trunk (its trunk arrays are empty) and one forest root.
    trunk = len(game.trunk_levels) > 0
    ints = dict(_native_ints(game), trunk_parent=game.trunk_parent, trunk_lane_slot=game.trunk_lane_slot,
                trunk_fold_node=game.trunk_fold_node, trunk_slot_node=game.trunk_slot_node,
                trunk_slot_child=game.trunk_slot_child,
                root_chance=game.root_chance if trunk else np.zeros((0,), np.int32))
    return native.half(
        own_rows, other_rows, game.weights, game.board_live, game.forest_fold_payoff, game.forest_showdown_stake,
        game.trunk_fold_payoff, game.norm, avg[player] if halves else avg,
        comp[player] if halves else comp, scalars, ints, locked=locked, policy=locked_policy, lanes=lanes, split=split,
        slots=game.forest_slots, trunk=game.trunk_slots, dealt=game.dealt, clamp=config.rule in rules.CLAMPED,
        compensated=config.dtype == "float32", unweighted=config.rule in rules.UNWEIGHTED_AVERAGE)


def fused_half(game: PublicGame, config, regret, avg, comp, player, b_t, w_new, average, locked=None,
               locked_policy=None, leaf=None, t=None, raw=None):
    """One (half-)update of `player`'s slots as the form's own kernels on an NVIDIA GPU
    (`cfrjax.public.spot_kernel`: a one-board dense spot; `turn_kernel`: a turn spot,
    where the game's plan has them), or on CPU in one piece (`_native_half`, a river or
    turn spot, where the plan has native code; else `_spot_half`, a one-board spot):
    `(regret, avg, avg_comp)` new, each whole or `player`'s half as given; `None` where
    they do not apply (the caller runs `regret_pass` and the generic updates,
    `cfrjax.iteration`). A plan that interprets the spot or turn kernels runs them on CPU
    too (the tests)."""
    plan = plan_of(game)
    if _on_platform(lambda cpu: cpu and not ({"spot", "turn"} & set(plan.interpret))):
        if t is not None and _native_half_applies(game, config, regret, comp, locked, leaf):
            return _native_half(game, config, regret, avg, comp, player, b_t, w_new, t, raw, locked, locked_policy)
        if _spot_half_applies(game, config, regret, locked, leaf):
            return _spot_half(game, config, regret, avg, comp, player, b_t, w_new, average)
        return None
    for kernels in (spot_kernel, turn_kernel):
        if kernels.applies(game, config, locked, leaf, regret, plan):
            return kernels.half(game, config, regret, avg, comp, player, b_t, w_new, average, locked, locked_policy,
                                plan=plan)
    return None


def hand_values(game: PublicGame, policy):
    """`[2, H, *batch]`: both players' counterfactual values per hand at the root when
    both play `policy` `[S, H, *batch]`: `v_p[h] = sum_h' compat(h, h') w_q[h'] u_p(h, h')
    / Z` (q the opponent; `u_p` player p's expected payoff of the deal under `policy`,
    chance included), the own range weight not included, so `sum_h w_p[h] v_p[h]` is
    player p's expected value (`expected_value` for p = 0). A hand the opponent's range
    cannot meet has value 0."""
    return _on_platform(lambda cpu: _sweep(game, passes.extend(policy), (0, 1), "ev", cpu)[0])


def _weighted(game: PublicGame, root, lanes):
    w = game.weights.astype(root.dtype)[lanes[0]:lanes[-1] + 1]
    return jnp.sum(lift(w, root.ndim) * root, axis=1)


def best_response_values(game: PublicGame, policy):
    """`[2, *batch]`: `BR_p = sum_h w_p[h] v_p^BR(root, h)`, the value of player p's best
    response to the opponent's part of `policy` `[S, H, *batch]` (exact, one pass; in a
    raked game each player's own raked payoffs)."""
    def run(cpu):
        return _weighted(game, _sweep(game, passes.extend(policy), (0, 1), "br", cpu)[0], (0, 1))
    return _on_platform(run)


def evaluation(game: PublicGame, policy):
    """`(best_response_values, expected_values)` of `policy` `[S, H, *batch]`, each `[2,
    *batch]` and each as its own function gives it, from one sweep: the forward pass and
    the terminal values are the same for both, only the backward passes differ. Every
    evaluation of a solve computes this (`cfrjax.best_response.exploitability_and_value`):
    one forward pass and one set of terminals instead of two, a smaller program to
    compile on a cold solve's path."""
    def run(cpu):
        root = _sweep(game, passes.extend(policy), (0, 1), "br_ev", cpu)[0]
        return _weighted(game, root[:2], (0, 1)), _weighted(game, root[2:], (0, 1))
    br, ev = _on_platform(run)
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    v0 = ev[0] + offset
    return br, ev.at[0].set(v0) if game.raked else jnp.stack([v0, -v0])


def expected_value(game: PublicGame, policy):
    """Player 0's expected payoff `[*batch]` when both play `policy` `[S, H, *batch]`."""
    def run(cpu):
        return _weighted(game, _sweep(game, passes.extend(policy), (0,), "ev", cpu)[0], (0,))[0]
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return _on_platform(run) + offset


def expected_values(game: PublicGame, policy):
    """`[2, *batch]`: each player's expected payoff when both play `policy` `[S, H, *batch]`.

    Unraked: `[v, -v]` from one lane (`expected_value`); raked (not zero-sum: the rake
    leaves the table, `-(v0 + v1)` is the expected rake): both lanes of one pass."""
    if not game.raked:
        v = expected_value(game, policy)
        return jnp.stack([v, -v])

    def run(cpu):
        return _weighted(game, _sweep(game, passes.extend(policy), (0, 1), "ev", cpu)[0], (0, 1))
    offset = game.labels.payoff_offset if game.labels is not None else 0.0
    return _on_platform(run).at[0].add(offset)
def node_values(game: PublicGame, policy) -> dict:
    """Both players' reach and counterfactual values at every public node when both play
    `policy` `[S, H, *batch]` (one pass; for reports, `cfrjax.public.report`, not the
    iteration).

    Returns a dict of arrays (`N1` trunk nodes, `B` boards of `n2` forest nodes, node
    order as `PublicGame`'s stages; lane `p` is player p):
      trunk_reach, trunk_values: `[N1, 2, H, *batch]` (`[0, 2, H, *batch]` on a river).
      forest_reach, forest_values: `[B, n2, 2, H, *batch]`.
    `reach[n, p, h]`: player p's own reach of node n with hand h, range weight included
    (0 for a hand holding a card dealt above n). `values[n, p, h]`: player p's
    counterfactual value of n with hand h, as the passes compute it (module docstring:
    the opponent's reach, chance (1/44 below a turn spot's river card) and `1 / Z`
    included, the own reach not); on a trunk node, the sum over the boards below. Memory:
    `2 (N1 + B n2) 2 H` numbers (the full-range turn with one raise: about 150 MB each
    in float64).
    """
    return _on_platform(lambda cpu: _sweep(game, passes.extend(policy), (0, 1), "nodes", cpu))


def set_ranges(game: PublicGame, w0, w1) -> PublicGame:
    """`game` with new range weights `[H, *batch]` and their normaliser (jittable).

    `Z = sum_h w0[h] sum_{h'} compat(h, h') w1[h']`; no shape or static field changes, so
    a jitted solve does not retrace. A range pair without a compatible deal gives `Z = 0`
    (infinite values).
    """
    dt = game.weights.dtype
    w0, w1 = jnp.asarray(w0, dt), jnp.asarray(w1, dt)
    if w0.shape[:1] != (game.num_hands,) or w1.shape[:1] != (game.num_hands,):
        raise ValueError(f"ranges have shapes {w0.shape} and {w1.shape}, expected [{game.num_hands}, *batch] "
                         f"(one weight per hand of the game's hand list)")
    weights, norm = range_weights(game.hand_cards, game.card_hands, w0, w1)
    return dataclasses.replace(game, weights=weights, norm=norm)


def range_weights(hand_cards, card_hands, w0, w1, xp=jnp):
    """`(weights [2, H, *batch], norm [*batch])` of `set_ranges`: the two ranges stacked and
    `Z`. `xp=numpy`: on the host, in the ranges' NumPy dtype (the builder, where a jitted
    normaliser was a program to compile for every new game shape: 0.5 s of a full-range
    turn's cold start on an H200)."""
    weights = xp.stack(xp.broadcast_arrays(w0, w1))
    compat = terminals.compat_sums(weights[1], hand_cards, card_hands, xp)
    return weights, xp.sum(weights[0] * compat, axis=0)


def scratch_elements(game: PublicGame, order: str) -> dict:
    """Per-subgame elements of an iteration's main buffers (memory plan rows), with every
    board's forest in flight at once (as on accelerators; the CPU loop holds one board)."""
    S, H, B = game.num_slots, game.num_hands, game.num_boards
    n1 = int(game.trunk_parent.shape[0])
    n2 = int(game.forest_parent.shape[0])
    f2, k = int(game.forest_fold_node.shape[0]), int(game.forest_showdown_node.shape[0])
    C, M = game.card_hands.shape
    lanes = 2 if order == "simultaneous" else 1
    rows = {"strategy + sentinel": (S + 1) * H, "information-set totals": S * H,
            "reach and strategy factors": 4 * (n1 + B * n2) * H,
            "values": lanes * (n1 + B * n2) * H, "child contributions": lanes * (n1 + B * n2) * H,
            "terminal reach and values": 2 * lanes * B * (f2 + k) * H,
            "regret terms": S * H, "average term": S * H}
    if not terminals.dense_used(game, cpu=False):
        rows["showdown prefix sums"] = lanes * B * k * ((H + 1) + C * (M + 1) + 8 * H)
    if game.raked:
        rows["raked showdown reach sums"] = lanes * B * k * (C + 3 * H)
    return rows


def infosets(game: PublicGame):
    """Yield `(key, player, action names, (slots, hand))` per live (decision node, hand),
    node by node, hand by hand; `policy[(slots, hand)]` are the set's probabilities."""
    labels = game.labels
    for i, (code, player, sl, names) in enumerate(labels.decision_nodes()):
        prefix = f"P{player}|"
        for h in np.flatnonzero(labels.live_hands(i)).tolist():
            yield f"{prefix}{labels.hand_names[h]}|{code}", player, names, (sl, h)


def strategy_rows(game: PublicGame, policy, min_probability: float = 0.0) -> list[dict]:
    """Rows `{"infoset", "player", "action", "probability", "hand", "history"}`, one per
    live (decision node, hand, action), node by node, hand by hand."""
    p = np.asarray(jax.device_get(policy), np.float64)
    labels = game.labels
    rows = []
    for i, (code, player, sl, names) in enumerate(labels.decision_nodes()):
        for h in np.flatnonzero(labels.live_hands(i)).tolist():
            hand = labels.hand_names[h]
            key = f"P{player}|{hand}|{code}"
            for a, name in enumerate(names):
                prob = float(p[sl.start + a, h])
                if prob >= min_probability:
                    rows.append({"infoset": key, "player": player, "action": str(name), "probability": prob,
                                 "hand": hand, "history": code})
    return rows
