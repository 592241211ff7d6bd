"""A turn spot's (half-)iteration as Pallas kernels around its terminal sums (NVIDIA GPUs).

As on the river (`cfrjax.public.spot_kernel`), only the terminals cross hands: a hand's
strategy, reach, values and updates read that hand's column of every slot array. A turn
spot has a trunk (the turn's betting, global slots) above `B` boards, each the same
forest of river trees (local slots; board `b`'s are rows `t0 + b s0 + l` of player 0's,
`split + t1 + b s1 + l - s0` of player 1's), which XLA ran as about 45 kernels an
iteration, most of them passes over the slot arrays. Here a (half-)iteration is, per
updating lane (each kernel a program per block of hands, and per board and river tree
where it says so):

1. `operand` (per board and tree): the opponent's regret matching and reach down the
   trunk and the tree (hands holding the river card dead), written at the tree's folds
   (as the card matmul's bfloat16 parts, every board's folds and then the trunk's, by
   board 0's tree 0's programs, in one `[3, B F2 L + F1 L, H]` buffer) and showdowns
   (`[B, K L, H]`);
2. the terminal sums: the showdowns by `cfrjax.public.showdown_kernel` (every board in
   one launch; its XLA form where it is off), the folds' compatible reach by
   `terminals.compat_sums_dot` (one matmul for the trunk's and every board's folds);
3. `forest` (per board and tree): the lane's strategy and reach, the tree's terminal
   values, backward values, regrets and average of its slots, and its root's value;
4. `trunk`: the roots' values (summed over the boards by XLA in between) at the trunk's
   chance leaves, the trunk folds' values, the trunk's backward values, regrets and
   average.

The forest's river trees (one per trunk line reaching the river) are isomorphic, their
slots and terminals interleaved level by level at fixed strides (`template`): the kernels
run one tree's code, on a grid axis over the trees, rather than unroll the forest
(unrolled, Triton compiled the full-range turn's forest about three times slower than
XLA's passes). A program per tree, and the boards' sum out of the trunk kernel (whose
programs summed the boards in a loop), are faster too. A forest whose trees differ (the turn with raises, where some lines reach
the river all in) runs the XLA passes.

Same arithmetic as the XLA passes (`cfrjax.public.passes`), equal to float32 rounding
(one step from the same state, compiled on an H200: regrets within 1.3e-8 of the XLA
passes' at a scale of 0.02). Used (`applies`) for a turn spot (not a flop, not raked,
sorted terminals, isomorphic river trees), float32, on an
NVIDIA GPU where the plan has `turn` (`cfrjax.plan`; or Pallas's interpreter), for the rules `cfrjax.kernels.KERNELS["turn"]` supports, locked
strategies or not, no batch axes.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp

from cfrjax import rules
from cfrjax.kernels import KERNELS
from cfrjax.pallas_gpu import nvidia_gpu
from cfrjax.public import showdown_kernel, spot_kernel
from cfrjax.public.spot_kernel import (FOLD, SHOWDOWN, _backward, _forward, _lock_rows, _match, _matched,
                                       _own_slots, _parts, _reach, _row)

#: Hands per program and warps per program.
BLOCK, WARPS = 64, 2


def suits(game, config) -> bool:
    """Whether `game` and the solve's `config` are of the kind these kernels run."""
    if getattr(game, "trunk_plan", None) is None or game.forest_plan is None or config is None:
        return False
    if not KERNELS["turn"].supports(config) or game.raked or game.board_groups:
        return False
    if game.weights.ndim != 2 or game.dense_showdown is not None or game.terminals == "dense":
        return False
    if not game.forest_plan.folds or not game.forest_plan.showdowns:
        return False
    return template(game.forest_plan) is not None


def applies(game, config, locked, leaf, regret, plan) -> bool:
    """`suits`, no leaf function state, `[S, H]` slot arrays, on an NVIDIA GPU where `plan`
    (`cfrjax.plan.Plan`) has `turn` (or interpreted)."""
    first = regret[0] if isinstance(regret, tuple) else regret
    if not suits(game, config) or leaf is not None or first.ndim != 2 or (locked is not None and locked.ndim != 2):
        return False
    return plan.pallas_on("turn", nvidia_gpu())


class _Slots:
    """Rows of a slot array given whole (`firsts (0,)`), as the players' halves (`(0,
    split)`) or as one player's half (`(0,)` or `(split,)`): global slot `g` of player `p`
    (`g` static or traced)."""

    def __init__(self, refs, firsts):
        self.refs, self.firsts = refs, firsts

    def at(self, g, p):
        k = p if len(self.refs) == 2 else 0
        return self.refs[k], g - self.firsts[k]

    def load(self, g, p, cols, mask):
        from jax.experimental.pallas import triton as plt
        ref, r = self.at(g, p)
        row = jnp.zeros(cols.shape, jnp.int32) + r
        return plt.load(ref.at[row, cols], mask=mask, other=0.0).astype(jnp.float32)

    def store(self, g, p, cols, mask, value):
        from jax.experimental.pallas import triton as plt
        ref, r = self.at(g, p)
        row = jnp.zeros(cols.shape, jnp.int32) + r
        plt.store(ref.at[row, cols], value.astype(ref.dtype), mask=mask)


def _forest_row(game, p: int, local: int, b):
    """Global slot of forest slot `local` (player `p`'s) on board `b`."""
    (t0, t1), (s0, s1) = game.trunk_slots, game.forest_slots
    if p == 0:
        return t0 + b * s0 + local
    return game.slot_split + t1 + b * s1 + (local - s0)


def _trunk_reach(game, slots: _Slots, player: int, cols, mask, w_ref, lock_ref):
    """`player`'s trunk strategy `{slot: row}` and reach at every trunk node."""
    tp = game.trunk_plan
    mine = _own_slots(tp, player)
    sigma = _matched(tp, {s: slots.load(s, player, cols, mask) for s in mine}, player,
                     _lock_rows(lock_ref, mine, cols, mask))
    return sigma, _reach(tp, sigma, player, _row(w_ref, cols, mask, player))


def _board_fold_rows(game, L: int) -> int:
    """Rows of a board's folds in the folds' buffer (`half`): board `b`'s fold row `r` is
    row `b F2 L + r`, the trunk's fold `t` of lane `li` row `B F2 L + t L + li`."""
    return len(game.forest_plan.folds) * L


def _fold_buffer_rows(game, L: int) -> tuple:
    """`(rows written, rows)` of each part of the folds' buffer: the boards' and the
    trunk's (at least one row), then zero rows up to a multiple of `MATMUL_ROWS`, so the
    three parts are a matmul operand as XLA wants it (else it copies the buffer into a
    padded one every half-iteration)."""
    from cfrjax.public.terminals import MATMUL_ROWS
    used = game.num_boards * _board_fold_rows(game, L) + len(game.trunk_plan.folds) * L
    rows = max(used, L)
    return used, -(-rows // MATMUL_ROWS) * MATMUL_ROWS


def _forest_roots(game, trunk_reach, live):
    """The forest roots' reach: the trunk's at each chance leaf, dead hands zero."""
    return [trunk_reach[n] * live for n in game.trunk_plan.chance]


@dataclasses.dataclass
class _Template:
    """A forest of `R` isomorphic trees (one per root) in breadth-first order: tree 0's
    structure, and for every slot and terminal its index in tree `r` as `base + r stride`
    (levels interleave the trees, so each position has its own stride). The kernels run a
    program per tree instead of unrolling them: a fifth of the code for the full-range
    turn's five river trees, which is what Triton's compile time follows."""

    parent: list       # [n] position of the parent (-1 at the root)
    lane: list         # [n] per lane (base, stride) of the slot on the edge in, or None
    term: list         # [n] (FOLD or SHOWDOWN, base, stride), or None
    sets: list         # [(player, base, stride, actions)]
    slots: list        # [(player, base, stride, node position, child position)]
    R: int

    def edges(self, lane: int) -> list:
        """`[n]` the lane's tree-0 slot on the edge into each position, or `None`."""
        return [e[lane][0] if e[lane] is not None else None for e in self.lane]


@functools.lru_cache(maxsize=None)
def template(fp: spot_kernel.Plan):
    """The `_Template` of a forest plan, or `None` if its trees are not isomorphic with
    affine indices."""
    roots = fp.roots
    R = len(roots)
    tree = list(range(len(fp.parent)))
    for n, par in enumerate(fp.parent):
        tree[n] = n if par < 0 else tree[par]
    members = [[n for n in range(len(fp.parent)) if tree[n] == rt] for rt in roots]
    if len({len(m) for m in members}) != 1:
        return None
    pos = {n: i for m in members for i, n in enumerate(m)}
    fold_i = {n: i for i, n in enumerate(fp.folds)}
    sd_i = {n: i for i, n in enumerate(fp.showdowns)}

    def affine(values):
        if any(v is None for v in values):
            return None if all(v is None for v in values) else False
        stride = values[1] - values[0] if R > 1 else 0
        return (values[0], stride) if all(v == values[0] + r * stride for r, v in enumerate(values)) else False
    parent, lane, term = [], [], []
    for i in range(len(members[0])):
        nodes = [m[i] for m in members]
        pp = {(-1 if fp.parent[n] < 0 else pos[fp.parent[n]]) for n in nodes}
        if len(pp) != 1 or len({fp.owner[n] for n in nodes}) != 1:
            return None
        parent.append(pp.pop())
        row = []
        for ln in (0, 1):
            a = affine([fp.lane_slot[n][ln] if fp.lane_slot[n][ln] >= 0 else None for n in nodes])
            if a is False:
                return None
            row.append(a)
        lane.append(tuple(row))
        kinds = []
        for kind, index in ((FOLD, fold_i), (SHOWDOWN, sd_i)):
            a = affine([index.get(n) for n in nodes])
            if a is False:
                return None
            if a is not None:
                kinds.append((kind,) + a)
        if len(kinds) > 1:
            return None
        term.append(kinds[0] if kinds else None)
    node_of, child_of = fp.node_of, fp.child_of
    sets, slots = [], []
    for player, first, count in fp.sets:
        if tree[node_of[first]] != roots[0]:
            continue
        firsts = []
        for r in range(R):
            match = [(f, c) for pl, f, c in fp.sets if pl == player and tree[node_of[f]] == roots[r]
                     and pos[node_of[f]] == pos[node_of[first]]]
            if len(match) != 1 or match[0][1] != count:
                return None
            firsts.append(match[0][0])
        a = affine(firsts)
        if not a:
            return None
        sets.append((player, a[0], a[1], count))
        for k in range(count):
            slots.append((player, a[0] + k, a[1], pos[node_of[first + k]], pos[child_of[first + k]]))
    return _Template(parent=parent, lane=lane, term=term, sets=sets, slots=slots, R=R)


def _tree_strategy(game, tpl: _Template, slots: _Slots, player: int, b, r, cols, mask, lock_ref):
    """`player`'s strategy on tree `r` of board `b` (`{tree-0 slot: row}`) and its regret rows."""
    regret, lock = {}, ({} if lock_ref is not None else None)
    for pl_, base, stride, _, _ in tpl.slots:
        if pl_ != player:
            continue
        g = _forest_row(game, player, base + r * stride, b)
        regret[base] = slots.load(g, player, cols, mask)
        if lock is not None:
            lock[base] = _row(lock_ref, cols, mask, g)
    sigma = _match([(base, count) for pl_, base, _, count in tpl.sets if pl_ == player], regret, lock)
    return sigma, regret


def _pick(rows, r):
    """`rows[r]` for a traced `r` (a sum of selects: `rows` is a short list of registers)."""
    out = jnp.where(r == 0, rows[0], 0.0)
    for k in range(1, len(rows)):
        out = out + jnp.where(r == k, rows[k], 0.0)
    return out


def _operand_kernel(*refs, game, tpl: _Template, lane: int, li: int, L: int, nr: int, locked: bool):
    """Program `(hand block, board b, tree r)`: the opponent's reach down the trunk and
    board b's tree r, stored at its folds and showdowns; the programs of board 0's tree 0
    also store the trunk folds'."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    it = iter(refs)
    slots = _Slots([next(it) for _ in range(nr)], (0, game.slot_split)[:nr])
    w_ref, live_ref = next(it), next(it)
    lock_ref = next(it) if locked else None
    if li:
        next(it), next(it)
    fold_ref, sd_ref = next(it), next(it)
    tp = game.trunk_plan
    F2L = _board_fold_rows(game, L)
    b = pl.program_id(1)
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < game.num_hands
    q = 1 - lane
    _, treach = _trunk_reach(game, slots, q, cols, mask, w_ref, lock_ref)
    live = _row(live_ref, cols, mask, b)
    roots = _forest_roots(game, treach, live)
    bb = jnp.zeros(cols.shape, jnp.int32) + b
    r = pl.program_id(2)
    sigma, _ = _tree_strategy(game, tpl, slots, q, b, r, cols, mask, lock_ref)
    reach = _forward(tpl.parent, tpl.edges(q), sigma, _pick(roots, r))
    for i, t in enumerate(tpl.term):
        if t is None:
            continue
        row = jnp.zeros(cols.shape, jnp.int32) + ((t[1] + r * t[2]) * L + li)
        if t[0] == FOLD:   # the matmul's bfloat16 parts (`terminals.compat_sums_dot`), row b F2 L + row
            for k, part in enumerate(_parts(reach[i])):
                plt.store(fold_ref.at[jnp.full(cols.shape, k, jnp.int32), bb * F2L + row, cols], part, mask=mask)
        else:
            plt.store(sd_ref.at[bb, row, cols], reach[i], mask=mask)
    first = (b == 0) & (r == 0)
    for t, node in enumerate(tp.folds):   # the trunk's folds after every board's
        at = jnp.full(cols.shape, game.num_boards * F2L + t * L + li, jnp.int32)
        for k, part in enumerate(_parts(treach[node])):
            plt.store(fold_ref.at[jnp.full(cols.shape, k, jnp.int32), at, cols], part, mask=mask & first)
    used, rows = _fold_buffer_rows(game, L)
    if li == 0:   # the padding rows, zero (read by the matmul, its results unused)
        for pad in range(used, rows):
            for k in range(3):
                plt.store(fold_ref.at[jnp.full(cols.shape, k, jnp.int32), jnp.full(cols.shape, pad, jnp.int32), cols],
                          jnp.zeros(cols.shape, fold_ref.dtype), mask=mask & first)


def _forest_kernel(*refs, game, tpl: _Template, lane: int, li: int, L: int, nr: int, no: int, outs: tuple,
                   locked: bool, clamp: bool, own_reach: bool, average):
    """Program `(hand block, board b, tree r)`: on board b's tree r, the lane's strategy
    and reach, terminal values, backward values, regret and average updates (all loaded
    before any is stored), and the tree root's value."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    it = iter(refs)
    take = lambda k: [next(it) for _ in range(k)]   # noqa: E731
    regret, avg, comp = (_Slots(take(nr), (0, game.slot_split)[:nr]) for _ in range(3))
    w_ref, live_ref, c_ref, d_ref, fold_ref, sd_ref, scal_ref = take(7)
    lock_ref = next(it) if locked else None
    if li:
        take(no * 3 + 1)
    out = [_Slots(take(no), outs) for _ in range(3)]
    roots_ref = next(it)
    b = pl.program_id(1)
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < game.num_hands
    bb = jnp.zeros(cols.shape, jnp.int32) + b
    _, treach = _trunk_reach(game, regret, lane, cols, mask, w_ref, lock_ref)
    live = _row(live_ref, cols, mask, b)
    roots = _forest_roots(game, treach, live)
    b_t, w_t, inv_z = scal_ref[0], scal_ref[1], scal_ref[2]
    sign = 1.0 if lane == 0 else -1.0
    r = pl.program_id(2)
    sigma, r_in = _tree_strategy(game, tpl, regret, lane, b, r, cols, mask, lock_ref)
    mine = [s for s in tpl.slots if s[0] == lane]
    rows = {base: _forest_row(game, lane, base + r * stride, b) for _, base, stride, _, _ in mine}
    term = {}
    for i, t in enumerate(tpl.term):
        if t is None:
            continue
        k = t[1] + r * t[2]
        row = jnp.zeros(cols.shape, jnp.int32) + (k * L + li)
        if t[0] == FOLD:
            x = plt.load(c_ref.at[bb * _board_fold_rows(game, L) + row, cols], mask=mask, other=0.0)
            term[i] = x * (fold_ref[k] * sign) * inv_z * live
        else:
            x = plt.load(d_ref.at[bb, row, cols], mask=mask, other=0.0)
            term[i] = x * sd_ref[k] * inv_z * live
    reach = _forward(tpl.parent, tpl.edges(lane), sigma, _pick(roots, r))
    vals = _backward(tpl.parent, tpl.edges(lane), term, sigma, cols.shape)
    _update_rows(avg, comp, out, rows, sigma, reach, vals, {m[1]: m[3] for m in mine}, {m[1]: m[4] for m in mine},
                 lane, cols, mask, r_in, clamp, own_reach, average, b_t, w_t)
    plt.store(roots_ref.at[bb, jnp.zeros(cols.shape, jnp.int32) + (r * L + li), cols], vals[0], mask=mask)


def _update_rows(avg, comp, out, rows, sigma, reach, vals, node_of, child_of, player, cols, mask, regret_in, clamp,
                 own_reach, average, b_t, w_t):
    """The regret and average updates of `rows` (`{slot: global row}`; `node_of`,
    `child_of`, `sigma`, `reach`, `vals`, `regret_in` keyed as `rows`): every load before
    any store (a store may alias an input as far as the compiler knows)."""
    a_in = {s: avg.load(g, player, cols, mask) for s, g in rows.items()}
    c_in = {s: comp.load(g, player, cols, mask) for s, g in rows.items()}
    new = {}
    for s in rows:
        r = regret_in[s] + (vals[child_of[s]] - vals[node_of[s]])
        y = reach[node_of[s]] * sigma[s] if own_reach else sigma[s]
        mean, low = average(a_in[s], c_in[s], y, b_t, w_t)
        new[s] = (jnp.maximum(r, 0.0) if clamp else r, mean, low)
    for s, vs in new.items():
        for arr, v in zip(out, vs):
            arr.store(rows[s], player, cols, mask, v)


def _trunk_kernel(*refs, game, lane: int, li: int, L: int, nr: int, no: int, outs: tuple, locked: bool,
                  clamp: bool, own_reach: bool, average):
    from jax.experimental import pallas as pl
    it = iter(refs)
    take = lambda k: [next(it) for _ in range(k)]   # noqa: E731
    regret, avg, comp = (_Slots(take(nr), (0, game.slot_split)[:nr]) for _ in range(3))
    w_ref, roots_ref, c_ref, tfold_ref, scal_ref = take(5)
    lock_ref = next(it) if locked else None
    take(no * 3)                              # the forest kernel's outputs, written in place
    out = [_Slots(take(no), outs) for _ in range(3)]
    tp = game.trunk_plan
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < game.num_hands
    sigma, reach = _trunk_reach(game, regret, lane, cols, mask, w_ref, lock_ref)
    mine = _own_slots(tp, lane)
    r_in = {s: regret.load(s, lane, cols, mask) for s in mine}
    b_t, w_t, inv_z = scal_ref[0], scal_ref[1], scal_ref[2]
    sign = 1.0 if lane == 0 else -1.0
    term = {n: _row(roots_ref, cols, mask, r * L + li) for r, n in enumerate(tp.chance)}
    for t, node in enumerate(tp.folds):
        row = game.num_boards * _board_fold_rows(game, L) + t * L + li
        term[node] = _row(c_ref, cols, mask, row) * (tfold_ref[t] * sign) * inv_z
    vals = _backward(tp.parent, tp.edges(lane), term, sigma, cols.shape)
    _update_rows(avg, comp, out, {s: s for s in mine}, sigma, reach, vals, tp.node_of, tp.child_of, lane, cols, mask,
                 r_in, clamp, own_reach, average, b_t, w_t)


def half(game, config, regret, avg, comp, player, b_t, w_new, average, locked=None, locked_policy=None, plan=None):
    """One (half-)update of `player`'s slots (None: both) as the kernels:
    `(regret, avg, avg_comp)` new, each whole or `player`'s half as given (arguments as
    `cfrjax.public.spot_kernel.half`)."""
    from cfrjax.plan import plan_of
    plan = plan or plan_of(game)
    interpret = "turn" in plan.interpret
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    from cfrjax.public.terminals import _showdown_sorted_hm, compat_sums_dot

    fp, tp = game.forest_plan, game.trunk_plan
    H, B = game.num_hands, game.num_boards
    lanes = (0, 1) if player is None else (player,)
    L = len(lanes)
    parts = tuple(regret) if isinstance(regret, tuple) else (regret,)
    whole = lambda a: tuple(a) if isinstance(a, tuple) else (a,)   # noqa: E731
    nr = len(parts)
    dt = jnp.float32
    params = plt.CompilerParams(num_warps=WARPS)
    lock = () if locked is None else (jnp.where(locked, locked_policy, -1.0).astype(dt),)
    live = game.board_live.astype(dt)
    K, F1 = len(fp.showdowns), len(tp.folds)
    bf = jnp.bfloat16
    shapes = (jax.ShapeDtypeStruct((3, _fold_buffer_rows(game, L)[1], H), bf), jax.ShapeDtypeStruct((B, K * L, H), dt))
    tpl = template(fp)
    ops = None
    for li, lane in enumerate(lanes):
        ops = pl.pallas_call(
            functools.partial(_operand_kernel, game=game, tpl=tpl, lane=lane, li=li, L=L, nr=nr, locked=bool(lock)),
            out_shape=shapes, grid=(pl.cdiv(H, BLOCK), B, tpl.R), interpret=interpret, compiler_params=params,
            input_output_aliases={} if li == 0 else {nr + 2 + len(lock) + k: k for k in range(2)},
            name="cfrjax_turn_operand")(*parts, game.weights, live, *lock, *(ops if li else ()))
    r_fold, r_sd = ops
    if showdown_kernel.used(r_sd, plan):
        d = showdown_kernel.showdown(r_sd, game.sd_sorted, game.sd_card_sorted, game.sd_index,   # [B, K L, H]
                                     cuda=plan.cuda_showdown, interpret="showdown" in plan.interpret)
    else:   # the XLA form, per board (the tests in Pallas's interpreter, the showdown kernel switched off)
        tables = {k: getattr(game, k) for k in ("sd_sorted", "sd_card_sorted", "sd_index")}
        d = jax.vmap(lambda t, x: _showdown_sorted_hm(t, x.T, False, plan).T)(tables, r_sd)
    c = compat_sums_dot(None, game.hand_cards, game.card_hands.shape[0], axis=1, parts=r_fold,
                        matrix=game.card_matrix)                                # [rows, H]
    scal = jnp.stack([jnp.asarray(b_t, dt), jnp.asarray(w_new, dt), 1.0 / game.norm.astype(dt)])
    own = (whole(regret), whole(avg), whole(comp)) if player is None else \
        ((regret[player],), (avg[player],), (comp[player],))
    no = 1
    out_shapes = tuple(jax.ShapeDtypeStruct(a[0].shape, a[0].dtype) for a in own)
    roots_shape = jax.ShapeDtypeStruct((B, len(fp.roots) * L, H), dt)
    outs = (0,) if player != 1 else (game.slot_split,)
    kw = dict(game=game, L=L, nr=nr, no=no, outs=outs, locked=bool(lock), clamp=config.rule in rules.CLAMPED,
              own_reach=config.rule not in rules.UNWEIGHTED_AVERAGE, average=average)
    ins = (*parts, *whole(avg), *whole(comp))
    fold_pay = game.forest_fold_payoff.astype(dt)
    stake = game.forest_showdown_stake.astype(dt)
    new = None
    for li, lane in enumerate(lanes):
        base = ins + (game.weights, live, c, d, fold_pay, stake, scal) + lock
        new = pl.pallas_call(
            functools.partial(_forest_kernel, tpl=tpl, lane=lane, li=li, **kw),
            out_shape=out_shapes + (roots_shape,), grid=(pl.cdiv(H, BLOCK), B, tpl.R), interpret=interpret,
            compiler_params=params, name="cfrjax_turn_forest",
            input_output_aliases={} if li == 0 else {len(base) + k: k for k in range(4)})(
                *base, *(new if li else ()))
    roots = jnp.sum(new[3], axis=0)                                             # [R L, H], over the boards
    new = new[:3]
    tpay = game.trunk_fold_payoff.astype(dt) if F1 else jnp.zeros((1,), dt)
    for li, lane in enumerate(lanes):
        base = ins + (game.weights, roots, c, tpay, scal) + lock
        new = pl.pallas_call(
            functools.partial(_trunk_kernel, lane=lane, li=li, **kw),
            out_shape=out_shapes, grid=(pl.cdiv(H, BLOCK),), interpret=interpret, compiler_params=params,
            name="cfrjax_turn_trunk", input_output_aliases={len(base) + k: k for k in range(3)})(*base, *new)
    return tuple(new)
