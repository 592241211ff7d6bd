"""One tree's passes of the public form: reach forward, values backward, over hands.

A tree is the trunk or one board's forest (`Tree`: its breadth-first level arrays). Reach
and values are `[n, L, H, *batch]` (node, player lane, hand, trailing batch axes).

* **Forward** (`forward`): the root reach of player p is its range `w_p`; `reach[c, p] =
  reach[parent(c), p] * sigma_ext[lane_slot[c, p]]` (the trunk level by level; the
  forest as one product along each node's own-decision path), and below a dealt card
  times the hand's live mask (`alive`). Chance probabilities are not in the reach.
* **Backward** (`backward`): per level, `v(n) = term(n) + sum_c w(c) v(c)` over the
  children, `w(c)` = the player's own strategy at its decisions, 1 at the opponent's and
  at chance nodes (a static Python loop over levels, each one gather-multiply and a
  segment sum, `cfrjax.passes.segment_total`); with the max over the player's own actions
  for best responses. An evaluation needs only the roots' values: `root_values` runs
  the same levels as one `lax.scan` (a program that does not grow with the tree's depth).

`on_platform` makes the pass's one platform choice (CPU or not), from which the tree sums'
form (`pulled_sums`), the map over boards, prefix sums and the terminal form follow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import passes
from cfrjax.passes import lift
from cfrjax.public.game import PublicGame

__all__ = ["Tree", "alive", "backward", "forward", "lanes_of", "lead", "members_sum", "on_platform", "opponent",
           "pulled_sums"]


def lanes_of(player) -> tuple:
    if player is None:
        return (0, 1)
    if player not in (0, 1):
        raise ValueError(f"player must be 0, 1 or None, got {player!r}")
    return (player,)


def lead(x, k: int):
    """`x [*batch]` with `k` leading unit axes (a per-game scalar against `[.., *batch]`)."""
    return jnp.reshape(x, (1,) * k + jnp.shape(x))


def opponent(x, lanes, axis: int):
    """The opponents' lanes of `lanes` along `axis` (both: reversed)."""
    if len(lanes) == 2:
        return jnp.flip(x, axis)
    q = 1 - lanes[0]
    return jax.lax.slice_in_dim(x, q, q + 1, axis=axis)


class Tree:
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
        self.members = getattr(game, f"{stage}_members", None)   # a suit-merged flop's turn cards
        self.iso_perm = game.iso_perm


def members_sum(iso_perm, members, v):
    """Values of suit-merged subtrees summed over their classes' members
    (`cfrjax.games.poker.isomorphism`): `v [m, L, H, *batch]` the representatives' values,
    `members [m, W]` each one's members as rows of `iso_perm [K + 1, H]` (row `K`: `H`
    everywhere, no member), whose row `k` gathers the value vector of member `g_k(rep)`
    from the representative's; returns `[m, L, H, *batch]` the sums over members."""
    H = v.shape[2]
    vp = jnp.concatenate([v, jnp.zeros(v.shape[:2] + (1,) + v.shape[3:], v.dtype)], axis=2)
    idx_shape = (v.shape[0], 1, H) + (1,) * (v.ndim - 3)
    out = None
    for k in range(members.shape[1]):
        part = jnp.take_along_axis(vp, iso_perm[members[:, k]].reshape(idx_shape), axis=2)
        out = part if out is None else out + part
    return out


def alive(hand_cards, cards, nd: int, dtype, lanes=(0, 1)):
    """`[n, 1, H, 1...]` (`nd` dimensions): 1 where a hand holds none of `cards [n]` (52:
    no card). With one hand list per player (`hand_cards [2, H, 2]`,
    `PublicGame.player_lists`) `[n, L, H, 1...]`, per lane of `lanes`."""
    if hand_cards.ndim == 3:
        c = cards[:, None, None]
        hc = hand_cards[lanes[0]:lanes[-1] + 1]
        live = (hc[None, :, :, 0] != c) & (hc[None, :, :, 1] != c)
        return lift(live.astype(dtype), nd)
    c = cards[:, None]
    live = (hand_cards[None, :, 0] != c) & (hand_cards[None, :, 1] != c)
    return lift(live.astype(dtype)[:, None], nd)


def forward(tree: Tree, sigma_ext, root, nd: int):
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
            r = r * alive(tree.hand_cards, tree.dealt[lo:hi], nd, r.dtype)
        reach.append(r)
    return jnp.concatenate(reach)


#: The evaluation's modes of `cfrjax.public.sweep.sweep` (`cfrjax.public.values`): they
#: need the roots' values alone, computed by `root_values`.
EVALUATION_MODES = ("ev", "br", "br_ev")


def backward(tree: Tree, sigma_ext, tv, lanes: tuple, pull: bool, mode: str = "ev"):
    """Values `[n, L, H, *batch]` of `lanes`' players, deepest level first:
    `v(n) = tv[term_pos[n]] + sum_c w(c) v(c)` with `w` the player's own strategy at its
    decisions and 1 elsewhere (chance is in the terminal values). `mode`: `"ev"` (that),
    `"br"` (both lanes: each player takes the max over its own actions instead), or
    `"br_ev"` (`tv` of four lanes, `L = 4`: lanes 0-1 `"br"`, lanes 2-3 `"ev"`, every
    level's sums one sum over the four; what `evaluation` needs, at the size of one pass).
    Other modes of `cfrjax.public.sweep.sweep` (`"regret"`, `"nodes"`) are `"ev"` here.
    A Python loop over the levels (each its own kernels); `root_values` is the same
    sums as one loop, for the top level's values alone."""
    ls = tree.levels
    last = len(ls) - 2
    vals = [tv[tree.term_pos[ls[last]:ls[last + 1]]]]
    for d in range(last - 1, -1, -1):
        lo, hi, chi = ls[d], ls[d + 1], ls[d + 2]
        par = tree.parent[hi:chi]
        child = vals[-1]
        if tree.members is not None and tree.level_dealt and tree.level_dealt[d + 1]:   # merged turn cards
            child = members_sum(tree.iso_perm, tree.members[hi:chi], child)
        total = _level(sigma_ext, lanes, pull, mode, tv.ndim, child, tree.owner[par], tree.lane_slot[hi:chi],
                       par - lo, tree.child_start[lo:hi + 1] - hi, tree.fanout[d], tree.owner[lo:hi])
        if tree.terms[d]:
            total = total + tv[tree.term_pos[lo:hi]]
        vals.append(total)
    return jnp.concatenate(vals[::-1])


def root_values(tree: Tree, sigma_ext, tv, lanes: tuple, pull: bool, mode: str = "ev"):
    """`backward`'s values of the top level's nodes (the roots), `[R, L, H, *batch]`, its
    levels run as one `lax.scan`: what an evaluation needs (`cfrjax.public.values`).

    `backward`'s Python loop lowers each level's dozen kernels apart, so an evaluation's
    program grew with the tree's depth, and so did its compile (docs/design/compile.md).
    Here the loop carries one level's values, padded to the widest level (`W` rows:
    parents and children), and lowers one level's kernels once, for up to
    `W x levels / nodes` times the level work. A padding child joins no segment (its parent index
    is `W`: dropped by the scatters, past the last boundary of the gathered sums), so every
    segment sums the same members in the same order: on CPU bit for bit `backward`'s;
    off the CPU a gathered sum pads every segment to the widest fan-out of all levels,
    so its reduction may differ in the last bits. The per-level index tables are built
    here from the static level bounds."""
    ls = tree.levels
    last = len(ls) - 2
    if tree.members is not None:   # merged turn cards (a suit-merged flop's trunk): backward's own loop
        return backward(tree, sigma_ext, tv, lanes, pull, mode)[:ls[1]]
    deepest = tv[tree.term_pos[ls[last]:ls[last + 1]]]
    if last == 0:   # one level: the roots are terminals
        return deepest
    widths = [ls[d + 1] - ls[d] for d in range(last + 1)]
    W = max(widths)
    order = range(last - 1, -1, -1)
    def pad(rows, size, fill):
        return np.concatenate([rows, np.full(size - len(rows), fill)]).astype(np.int32)

    rows = np.stack([pad(np.arange(ls[d], ls[d + 1]), W, ls[d]) for d in order])          # [D, W] the level's nodes
    kids = np.stack([pad(np.arange(ls[d + 1], ls[d + 2]), W, ls[d + 1]) for d in order])  # [D, W] their children
    real = np.stack([np.arange(W) < widths[d + 1] for d in order])                        # [D, W]
    bounds = np.stack([pad(np.arange(ls[d], ls[d + 1] + 1), W + 1, ls[d + 1]) for d in order])  # [D, W + 1]
    lo = np.array([ls[d] for d in order], np.int32)
    hi = np.array([ls[d + 1] for d in order], np.int32)
    terms = np.array([bool(tree.terms[d]) for d in order])
    width = max(tree.fanout[:last])
    child = jnp.concatenate([deepest, jnp.zeros((W - widths[last],) + tv.shape[1:], tv.dtype)])

    def level(child, xs):
        row, kid, real_, bound, lo_, hi_, term = xs
        par = tree.parent[kid]
        total = _level(sigma_ext, lanes, pull, mode, tv.ndim, child, tree.owner[par], tree.lane_slot[kid],
                       jnp.where(real_, par - lo_, W), tree.child_start[bound] - hi_, width, tree.owner[row])
        return jnp.where(term, total + tv[tree.term_pos[row]], total), None

    top, _ = jax.lax.scan(level, child, (rows, kids, real, bounds, lo, hi, terms))
    return top[:widths[0]]


def _level(sigma_ext, lanes, pull, mode, nd, child, parent_owner, child_slot, seg, start, width, node_owner):
    """One level of `backward`: the values `[K, L, H, *batch]` of its `K` nodes (terminal
    values not added) from their children's `child [m, L, H, *batch]`; per child its
    parent's owner, its `lane_slot` rows `[m, 2]` and its parent's index in the level
    (`seg`, sorted; `K` or more: a padding row, in no segment), `start [K + 1]` the
    children's segments, `width` the widest, `node_owner [K]` the nodes' owners."""
    br = mode in ("br", "br_ev")
    num = node_owner.shape[0]
    player = jnp.arange(2, dtype=node_owner.dtype)
    if br:     # [m, 2, 1...]: the child's parent is the lane player's decision
        own = lift(parent_owner[:, None] == player[None, :], nd)
    if mode == "br":      # the other player's children add up (weight 1), the own ones are maxed
        total = passes.segment_total(jnp.where(own, 0.0, child), start, width, seg, pull=pull)
    else:
        w = lift(sigma_ext[child_slot[:, lanes[0]:lanes[-1] + 1]], nd)
        if mode == "br_ev":
            w = jnp.concatenate([jnp.broadcast_to(jnp.where(own, 0.0, 1.0).astype(w.dtype), w.shape), w], axis=1)
        total = passes.segment_total(w * child, start, width, seg, pull=pull)
    if br:
        best = jax.ops.segment_max(jnp.where(own, child[:, :2], -jnp.inf), seg, num_segments=num,
                                   indices_are_sorted=True)
        mine = lift(node_owner[:, None] == player[None, :], nd)
        total = (jnp.concatenate([jnp.where(mine, best, total[:, :2]), total[:, 2:]], axis=1)
                 if mode == "br_ev" else jnp.where(mine, best, total))
    return total


def pulled_sums(game: PublicGame, cpu: bool) -> bool:
    """Whether tree sums gather-and-add (`CompiledGame.reduction`; "auto": not on CPU)."""
    return game.reduction == "pull" or (game.reduction == "auto" and not cpu)


def on_platform(run):
    """`run(cpu)` for the platform traced for (`cfrjax.passes.traced_for_cpu`): one choice
    for the whole pass (tree sums, the map over boards, prefix sums and the terminal form
    follow from it)."""
    return run(passes.traced_for_cpu())
