"""The tree passes of one iteration, over a `CompiledGame` (paper, section 4.2 and 4b).

Each sum over a tree has two lowerings, picked per platform (`game.reduction`):

* **pull** (accelerators): every output gathers its contiguous segment of members
  (`cfrjax.layout`) along a short padded axis and adds them in member order: one fused,
  deterministic kernel. The forward pass multiplies along each node's own-decision path
  (`path_slot`), one kernel for all nodes.
* **scatter** (CPU): a sorted segment sum (scatter-add) per level, and the forward pass
  level by level. On a GPU a scatter-add needs zeroed memory (a second kernel) and
  atomics that serialize where many members share an output (poker's information sets
  have ~100 histories); on a CPU it is a sequential loop without padding, the cheaper form.

Both add the same numbers in the same order (members in segment order, path factors
root first); they agree to rounding (XLA may contract a product and the following add
into one fused multiply-add; tested on CPU to 1e-12). The pull uses no atomics, so it is
deterministic on GPU too. Where padding would cost more than `MAX_PAD` gathers per
member, the pull falls back to a segmented scan (`segmented_scan_totals`), also without
atomics.

The backward pass is a static Python loop over the D depth levels, so it traces to a
fixed sequence of kernels: XLA sees the whole schedule and nothing runs on the host per
iteration.

Strategy vectors passed in are *extended*: `[S + 1]`, with the sentinel entry (index S)
equal to one.

Batch-last: every per-node, per-edge or per-slot array may carry trailing batch axes
(`[S + 1, *batch]`, `[N, *batch]`; float leaves of the game likewise, or unbatched). The
gathers then fetch contiguous rows of `batch` numbers per index, which a GPU reads at
full width however large the batch, where `vmap`'s leading batch axis makes each index
a strided read and the working set of a big batch falls out of cache
(`cfrjax.batch.solve_batch` runs a batch this way). With no batch axes this is the
single-subgame iteration.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import matching_kernel
from cfrjax.game import CompiledGame
from cfrjax.host import default_platform
from cfrjax.plan import plan_of

#: Segments at most this wide are summed by an unrolled chain of adds, in member order
#: (as a sequential scatter-add adds); wider ones by a reduction.
UNROLL = 32
#: A pull pads every segment to the widest; beyond this factor of gathered padding per
#: member, a segmented scan is used (`segmented_scan_totals`).
MAX_PAD = 16.0


def extend(sigma):
    """`[S, *batch]` strategy -> `[S + 1, *batch]` with the sentinel slot pinned to one."""
    return jnp.concatenate([sigma, jnp.ones((1,) + sigma.shape[1:], sigma.dtype)])


def lift(a, ndim: int):
    """`a` (`[E]` or already `[E, *batch]`) with trailing unit axes up to `ndim` dimensions,
    so a per-entity game array broadcasts against batch-last values."""
    return a.reshape(a.shape + (1,) * (ndim - a.ndim))


def slot_range(game, player) -> tuple[int, int]:
    """`(lo, hi)`: the slots of `player` (0 or 1), or all slots for `None` (player 0's come first).
    Any compiled form (`cfrjax.forms`)."""
    if player is None:
        return 0, game.num_slots
    return (0, game.slot_split) if player == 0 else (game.slot_split, game.num_slots)


def edge_range(game: CompiledGame, player) -> tuple[int, int]:
    """`(lo, hi)`: the decision edges of `player` (0 or 1), or all for `None` (tabular form)."""
    if player is None:
        return 0, game.num_decision_edges
    return (0, game.dec_split) if player == 0 else (game.dec_split, game.num_decision_edges)


def traced_for_cpu() -> bool:
    """Whether the program being traced is for a CPU: the platform of JAX's default device
    (`jax.default_device(...)`, part of jit's cache key), else of the default backend
    (`cfrjax.host.default_platform`).

    The passes pick their lowering with it while tracing, so only that lowering is traced
    and lowered; `lax.platform_dependent` traces and lowers every branch. Both lowerings compute the same
    values (each is tested on CPU), so inputs committed to a device of another platform
    than the default run correctly, in the default's lowering; a Pallas kernel in it only
    lowers on an NVIDIA GPU (an error elsewhere, never another answer)."""
    return default_platform() == "cpu"


def by_platform(game: CompiledGame, pull, scatter):
    """`pull()` or `scatter()` as `game.reduction` says; `"auto"`: scatter on CPU, pull
    elsewhere (`traced_for_cpu`). Any compiled form (`cfrjax.forms`)."""
    if game.reduction == "pull":
        return pull()
    if game.reduction == "scatter":
        return scatter()
    return scatter() if traced_for_cpu() else pull()


def segment_total(x, start, width: int, segment_ids, init=None, pull: bool = True):
    """Sums of contiguous segments: `out[k] = init[k] + x[start[k]] + ... + x[start[k+1] - 1]`.

    Args:
      x: `[L, *batch]` members, ordered by segment.
      start: `[K + 1]` int32 segment boundaries into `x`.
      width: static, the longest segment.
      segment_ids: `[L]` sorted segment of each member (for the scatter fallback).
      init: optional `[K]` added first (the cumulative regret: members are added to it
        one by one, as OpenSpiel accumulates).
      pull: gather-and-add (else a sorted scatter-add).

    Returns:
      `[K, *batch]` sums.
    """
    num, length = start.shape[-1] - 1, x.shape[0]
    if length == 0 or width == 0:
        return jnp.zeros((num,) + x.shape[1:], x.dtype) if init is None else init
    if not pull:
        if init is None:
            return jax.ops.segment_sum(x, segment_ids, num_segments=num, indices_are_sorted=True)
        return init.at[segment_ids].add(x, indices_are_sorted=True)
    if num * width > MAX_PAD * length + 64:
        total = segmented_scan_totals(x, start, segment_ids)
        return total if init is None else init + total
    idx = start[:-1, None] + jnp.arange(width, dtype=start.dtype)
    valid = lift(idx < start[1:, None], x.ndim + 1)
    members = jnp.where(valid, x[jnp.minimum(idx, length - 1)], 0)  # [K, width, *batch]
    if width > UNROLL:
        total = jnp.sum(members, axis=1)
        return total if init is None else init + total
    acc = init
    for k in range(width):
        acc = members[:, k] if acc is None else acc + members[:, k]
    return acc


def segmented_scan_totals(x, start, segment_ids):
    """Sums of contiguous segments (`segment_total`'s arguments) by a segmented inclusive
    scan (`lax.associative_scan`, log-depth, `[L, *batch]` memory): the pull's fallback
    where padding every segment to the widest would cost too much (a flop's turn-card
    chance nodes beside two-action decisions on one trunk level). No atomics, so it is
    deterministic on a GPU where a scatter-add is not; sums in a tree order (equal to the
    sequential sum to rounding)."""
    length = x.shape[0]
    first = jnp.concatenate([jnp.ones((1,), bool), segment_ids[1:] != segment_ids[:-1]])

    def add(a, b):
        (av, af), (bv, bf) = a, b
        return jnp.where(lift(bf, bv.ndim), bv, av + bv), af | bf

    scanned, _ = jax.lax.associative_scan(add, (x, first))
    last = start[1:] - 1                                           # each segment's last member
    nonempty = lift(start[1:] > start[:-1], x.ndim)
    return jnp.where(nonempty, scanned[jnp.clip(last, 0, length - 1)], jnp.zeros((), x.dtype))


def segment_sum_slots(game: CompiledGame, x):
    """Per-information-set sums of a slot vector, broadcast back to the slots: `[S, *batch] -> [S, *batch]`."""
    def total(pull):
        return segment_total(x, game.infoset_slot_start, game.max_actions, game.slot_infoset, pull=pull)
    return by_platform(game, lambda: total(True), lambda: total(False))[game.slot_infoset]


#: At most this many runs of equal-sized information sets make a game's `slot_runs`.
MAX_RUNS = 64


def slot_runs(infoset_slot_start) -> tuple:
    """The information sets as runs of equal size, static: `((first slot, sets, actions),
    ...)` over consecutive sets, or `()` beyond `MAX_RUNS` runs. NumPy `[I + 1]` slot
    boundaries in; a form that knows its sets at build time keeps this as static metadata
    (`PublicGame.slot_runs`) so regret matching slices instead of gathering."""
    start = np.asarray(infoset_slot_start)
    size = np.diff(start)
    first = np.flatnonzero(np.concatenate([[True], size[1:] != size[:-1]])) if size.size else np.zeros(0, np.int64)
    if first.size > MAX_RUNS:
        return ()
    ends = np.append(first[1:], size.size)
    return tuple((int(start[i]), int(j - i), int(size[i])) for i, j in zip(first, ends))


def regret_matching(game: CompiledGame, regret, player=None, factors=None, kernel: bool = False):
    """Regret matching: positive regrets normalized per information set, uniform if none.
    `[S, *batch] -> [S, *batch]`, or of one player's slots (`player` 0 or 1, `slot_range`):
    `[hi - lo, *batch] -> [hi - lo, *batch]`, equal bit for bit to those rows of the whole.
    `factors`: `None`, or the rule's per-sign discount `(pos, neg)` (`[*batch]` or scalars,
    `cfrjax.rules.discount_factors`) applied first: `r * where(r > 0, pos, neg)`.
    `regret` may be the pair of the players' halves (`cfrjax.iteration.split_slots`), the
    rows of the whole.

    With static runs (`slot_runs`; the public form) the pulled lowering is one elementwise
    pass over static slices, each set's total added in member order from its slots (the
    pull's adds, bit for bit), where the gathered lowering writes the totals out and
    gathers them back per slot. Given `factors`, on an NVIDIA GPU in float32, that pass is one Pallas
    kernel (`cfrjax.matching_kernel`), which discounts the stored regrets itself (without
    factors XLA fuses the pass with its producer or consumer, which a kernel cannot). The gathered
    lowering of one player's rows matches the whole vector with the other player's rows
    zero (its sets are its own). `kernel`: run the kernel where it is used also without
    `factors`, for regrets already written out (alternating order's second half matching
    player 0's new regrets: XLA wrote the sets' totals in two more kernels and read the
    regrets again)."""
    parts = regret
    if isinstance(regret, tuple):   # the players' halves (`player` None): the kernel reads them in place
        regret = jnp.concatenate(regret)
    lo, hi = (0, regret.shape[0]) if player is None else slot_range(game, player)
    runs = _runs_within(getattr(game, "slot_runs", ()), lo, hi)
    plan = plan_of(game)
    if runs and (factors is not None or kernel) and matching_kernel.used(regret, max(a for _, _, a in runs), plan):
        first = np.concatenate([lo_ + a * np.arange(n) for lo_, n, a in runs]).astype(np.int32)
        count = np.concatenate([np.full(n, a) for _, n, a in runs]).astype(np.int32)
        run = lambda: matching_kernel.regret_matching(   # noqa: E731
            parts, jnp.asarray(first), jnp.asarray(count), game.slot_uniform[lo:hi], int(count.max()), factors,
            interpret="matching" in plan.interpret)
    else:
        run = None
    if factors is not None:
        regret = regret * jnp.where(regret > 0, *factors)
    pos = jnp.maximum(regret, 0.0)
    if player is None:
        whole = lambda: _matched(game, pos)   # noqa: E731
    else:
        pad = lambda n: jnp.zeros((n,) + pos.shape[1:], pos.dtype)   # noqa: E731
        whole = lambda: _matched(game, jnp.concatenate([pad(lo), pos, pad(game.num_slots - hi)]))[lo:hi]   # noqa: E731
    if not runs:
        return whole()
    uniform = game.slot_uniform[lo:hi].astype(pos.dtype)
    return by_platform(game, run or (lambda: _matched_runs(runs, pos, uniform)), whole)


def _runs_within(runs: tuple, lo: int, hi: int) -> tuple:
    """`slot_runs` of the slots `[lo, hi)` (a boundary between information sets), first
    slots counted from `lo`."""
    out = []
    for s, n, a in runs:
        first, last = max(s, lo), min(s + n * a, hi)
        if first < last:
            out.append((first - lo, (last - first) // a, a))
    return tuple(out)


def _matched(game, pos):
    total = segment_sum_slots(game, pos)
    safe = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, pos / safe, lift(game.slot_uniform.astype(pos.dtype), pos.ndim))


def _matched_runs(runs, pos, uniform):
    """`regret_matching` of positive regrets `pos [S, *batch]` over static `runs`."""
    out = []
    for lo, n, a in runs:
        hi = lo + n * a
        p = pos[lo:hi].reshape((n, a) + pos.shape[1:])
        if a > UNROLL:
            total = jnp.sum(p, axis=1)
        else:
            total = p[:, 0]
            for k in range(1, a):
                total = total + p[:, k]
        total = jnp.broadcast_to(total[:, None], p.shape).reshape(pos[lo:hi].shape)
        safe = jnp.where(total > 0, total, 1.0)
        out.append(jnp.where(total > 0, pos[lo:hi] / safe, lift(uniform[lo:hi], pos.ndim)))
    # Written out: left to XLA, its consumers (the passes' gathers by slot) recompute it.
    return jax.lax.optimization_barrier(jnp.concatenate(out) if len(out) > 1 else out[0])


def reach(game: CompiledGame, sigma_ext):
    """Forward pass: both players' own reach at every node, `[2, N, *batch]` (chance excluded).

    `reach[p, c] = reach[p, parent(c)] * sigma_ext[lane_slot[p, c]]`: pulled as the product
    of player p's decisions on the path to each node (`path_slot[p, :, c]`, root first,
    sentinel-padded) in one kernel, or level by level (one gather-multiply per level). Both
    multiply the same factors in the same order.
    """
    return by_platform(game, lambda: _reach_paths(game, sigma_ext), lambda: _reach_levels(game, sigma_ext))


def _reach_paths(game: CompiledGame, sigma_ext):
    path = game.path_slot
    if path.shape[-2] == 0:
        return jnp.ones((2, game.num_nodes) + sigma_ext.shape[1:], sigma_ext.dtype)
    factors = sigma_ext[path]  # [2, W, N, *batch]
    out = factors[:, 0]
    for k in range(1, path.shape[-2]):
        out = out * factors[:, k]
    return out


def _reach_levels(game: CompiledGame, sigma_ext):
    ls = game.level_start
    levels = [jnp.ones((2, 1) + sigma_ext.shape[1:], sigma_ext.dtype)]
    for d in range(1, len(ls) - 1):
        lo, hi = ls[d], ls[d + 1]
        par = game.parent[lo:hi] - ls[d - 1]
        levels.append(levels[-1][:, par] * sigma_ext[game.lane_slot[:, lo:hi]])
    return jnp.concatenate(levels, axis=1)


def values(game: CompiledGame, sigma_ext, template=None):
    """Backward pass: player-0 values at every node, `[N, *batch]`.

    `v(h) = template(h) + sum over children c of sigma_ext[val_slot[c]] * v(c)`, one pull
    per level (pulled or scattered, see the module docstring). With folded chance the values carry the chance reach `pi_c(h)`
    (paper, Proposition 1: chance enters only through the template); otherwise chance
    edges weight their child by `edge_prob` and values are expectations given `h`.
    """
    return by_platform(game, lambda: _values(game, sigma_ext, template, True),
                       lambda: _values(game, sigma_ext, template, False))


def _values(game: CompiledGame, sigma_ext, template, pull: bool):
    nd = sigma_ext.ndim
    template = game.template if template is None else template
    template = jnp.broadcast_to(lift(template.astype(sigma_ext.dtype), nd), template.shape[:1] + sigma_ext.shape[1:])
    edge_prob = lift(game.edge_prob.astype(sigma_ext.dtype), nd)
    ls = game.level_start
    last = len(ls) - 2
    vals = [template[ls[last]:ls[last + 1]]]
    for d in range(last - 1, -1, -1):
        lo, hi, chi = ls[d], ls[d + 1], ls[d + 2]
        weight = sigma_ext[game.val_slot[hi:chi]]
        if not game.chance_folded:
            weight = edge_prob[hi:chi] * weight
        contrib = weight * vals[-1]
        total = segment_total(contrib, game.child_start[lo:hi + 1] - hi, game.level_fanout[d],
                              game.parent[hi:chi] - lo, pull=pull)
        vals.append(template[lo:hi] + total)
    return jnp.concatenate(vals[::-1])


def _edge_values(game: CompiledGame, reach_flat, vals, lo: int, hi: int, parent_value: bool):
    """Per decision edge `[lo, hi)`: `s(e) * pi_opp(h) * (v(h') - v(h))` (or `v(h')` alone)."""
    child, par = game.dec_child[lo:hi], game.dec_parent[lo:hi]
    opp = reach_flat[game.dec_opp[lo:hi]]
    if not game.chance_folded:
        opp = opp * lift(game.dec_chance[lo:hi].astype(vals.dtype), vals.ndim)
    diff = vals[child] - vals[par] if parent_value else vals[child]
    return lift(game.dec_sign[lo:hi].astype(vals.dtype), vals.ndim) * (opp * diff)


def accumulate_regret(game: CompiledGame, regret, reach_flat, vals, lo: int, hi: int, slot_lo: int):
    """Add this iteration's regrets of decision edges `[lo, hi)` into `regret` (its slots
    start at `slot_lo`).

    Per edge `e = (h, a, h')`: `s(e) * reach_opp(h) * (v(h') - v(h))` (times `pi_c(h)` when
    chance is not folded), paper eq. (instregret). Since `v(h) = sum_a sigma(a) v(h.a)`, the
    sum over an information set's members is `cfv(I, a) - cfv(I)`. The edges are added one
    by one into the cumulative regret, in member order, as OpenSpiel does.
    """
    r = _edge_values(game, reach_flat, vals, lo, hi, parent_value=True)
    start = game.slot_edge_start[slot_lo:slot_lo + regret.shape[0] + 1] - lo

    def total(pull):
        return segment_total(r, start, game.max_slot_edges, game.dec_slot[lo:hi] - slot_lo, init=regret, pull=pull)
    return by_platform(game, lambda: total(True), lambda: total(False))


def counterfactual_action_values(game: CompiledGame, reach_flat, vals, player: int):
    """`cfv_i(I, a) = sum_{h in I} pi_{-i}(h) v_i(h.a)` for player `player`'s slots, in its units."""
    lo, hi = edge_range(game, player)
    slot_lo, slot_hi = slot_range(game, player)
    q = _edge_values(game, reach_flat, vals, lo, hi, parent_value=False)
    start = game.slot_edge_start[slot_lo:slot_hi + 1] - lo

    def total(pull):
        return segment_total(q, start, game.max_slot_edges, game.dec_slot[lo:hi] - slot_lo, pull=pull)
    return by_platform(game, lambda: total(True), lambda: total(False))
