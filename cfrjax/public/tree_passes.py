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
  for best responses.

`on_platform` makes the pass's one platform choice (CPU or not), from which the tree sums'
form (`pulled_sums`), the map over boards, prefix sums and the terminal form follow.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

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


def backward(tree: Tree, sigma_ext, tv, lanes: tuple, pull: bool, mode: str = "ev"):
    """Values `[n, L, H, *batch]` of `lanes`' players, deepest level first:
    `v(n) = tv[term_pos[n]] + sum_c w(c) v(c)` with `w` the player's own strategy at its
    decisions and 1 elsewhere (chance is in the terminal values). `mode`: `"ev"` (that),
    `"br"` (both lanes: each player takes the max over its own actions instead), or
    `"br_ev"` (`tv` of four lanes, `L = 4`: lanes 0-1 `"br"`, lanes 2-3 `"ev"`, every
    level's sums one sum over the four; what `evaluation` needs, at the size of one pass).
    Other modes of `cfrjax.public.sweep.sweep` (`"regret"`, `"nodes"`) are `"ev"` here."""
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
        if tree.members is not None and tree.level_dealt and tree.level_dealt[d + 1]:   # merged turn cards
            child = members_sum(tree.iso_perm, tree.members[hi:chi], child)
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


def pulled_sums(game: PublicGame, cpu: bool) -> bool:
    """Whether tree sums gather-and-add (`CompiledGame.reduction`; "auto": not on CPU)."""
    return game.reduction == "pull" or (game.reduction == "auto" and not cpu)


def on_platform(run):
    """`run(cpu)` for the platform traced for (`cfrjax.passes.traced_for_cpu`): one choice
    for the whole pass (tree sums, the map over boards, prefix sums and the terminal form
    follow from it)."""
    return run(passes.traced_for_cpu())
