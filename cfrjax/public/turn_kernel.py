"""A turn spot's (half-)iteration as Pallas kernels around its terminal sums (NVIDIA GPUs).

As on the river (`cfrjax.public.spot_kernel`), only the terminals cross hands: a hand's
strategy, reach, values and updates read that hand's column of every slot array. A turn
spot has a trunk (the turn's betting, global slots) above `B` boards, each the same
forest of river trees (local slots; board `b`'s are rows `t0 + b s0 + l` of player 0's,
`split + t1 + b s1 + l - s0` of player 1's), which XLA ran as about 45 kernels an
iteration, most of them passes over the slot arrays. Here a (half-)iteration is, per
updating lane (each kernel a program per block of hands, and per board where it says so):

1. `operand` (per board): the opponent's regret matching and reach down the trunk and the
   board's forest (hands holding the river card dead), written at the board's folds and
   showdowns (`[B, F2 L, H]`, `[B, K L, H]`) and, board 0's programs, at the trunk's folds;
2. the terminal sums: the showdowns by `cfrjax.public.showdown_kernel` (every board in
   one launch), the folds' compatible reach by `terminals.compat_sums_dot`;
3. `forest` (per board): the lane's strategy and reach, the board's terminal values,
   backward values, regrets and average of its forest slots, and its forest roots' values;
4. `trunk`: the roots' values summed over the boards into the trunk's chance leaves, the
   trunk folds' values, the trunk's backward values, regrets and average.

Same arithmetic as the XLA passes (`cfrjax.public.passes`), equal to float32 rounding
(one step from the same state, compiled on an H200: regrets within 1.3e-8 of the XLA
passes' at a scale of 0.02). Used (`applies`), once switched on (`ENABLED`), for a turn
spot (not a flop, not raked, sorted terminals with the showdown kernel), float32, on an
NVIDIA GPU (or Pallas's interpreter, `INTERPRET`), for `spot_kernel.RULES`, locked
strategies or not, no batch axes.

**Off by default** (`ENABLED = False`): the full-range turn, H200, through
`cfrjax.solve`, off/on in one process (`bench/ab_switch.py`,
`bench/results/turn_kernel_switch_h200.jsonl`): CFR+ simultaneous 0.280 -> 0.180 ms/iter
(kernels per iteration 42 -> 20), DCFR alternating 0.330 -> 0.210 (45 -> 31), but Triton
compiles the unrolled 75-node forests slowly: 2.6 -> 8.6 s and 2.9 -> 7.3 s to compile.
A solve to 0.3% of the pot is about 80 iterations, so a first solve is slower from the
call (compile) and only long or repeated solves of one tree (the compiled program kept,
`cfrjax.programs`) gain. Switch it on for those: `cfrjax.public.turn_kernel.ENABLED =
True` before the first solve. Pallas's interpreter runs one step of it in minutes on a
CPU, so its test runs compiled, on a GPU only (`tests/test_spot_kernel.py`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from cfrjax import rules
from cfrjax.pallas_gpu import nvidia_gpu
from cfrjax.public import showdown_kernel, spot_kernel
from cfrjax.public.spot_kernel import _lock_rows, _matched, _own_slots, _reach, _row

#: Use the kernels on NVIDIA GPUs (module docstring: off by default).
ENABLED = False
#: Run the kernels in Pallas's interpreter (tests on CPU); on a GPU they compile (Triton).
INTERPRET = False
#: Hands per program and warps per program.
BLOCK, WARPS = 64, 2


def suits(game, config) -> bool:
    """Whether `game` and the solve's `config` are of the kind these kernels run."""
    if getattr(game, "trunk_plan", None) is None or game.forest_plan is None or not ENABLED or config is None:
        return False
    if config.rule not in spot_kernel.RULES or config.dtype != "float32" or game.raked or game.board_groups:
        return False
    if game.weights.ndim != 2 or game.dense_showdown is not None or game.terminals == "dense":
        return False
    return bool(game.forest_plan.folds) and bool(game.forest_plan.showdowns) and showdown_kernel.ENABLED


def applies(game, config, locked, leaf, regret) -> bool:
    """`suits`, no leaf function state, `[S, H]` slot arrays, on an NVIDIA GPU (or `INTERPRET`)."""
    first = regret[0] if isinstance(regret, tuple) else regret
    if not suits(game, config) or leaf is not None or first.ndim != 2 or (locked is not None and locked.ndim != 2):
        return False
    return INTERPRET or nvidia_gpu()


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


def _forest_strategy(game, slots: _Slots, player: int, b, cols, mask, lock_ref):
    """`player`'s strategy on board `b`'s forest, `{local slot: row}`, and its regret rows."""
    fp = game.forest_plan
    mine = _own_slots(fp, player)
    regret = {s: slots.load(_forest_row(game, player, s, b), player, cols, mask) for s in mine}
    lock = None
    if lock_ref is not None:
        lock = {s: _row(lock_ref, cols, mask, _forest_row(game, player, s, b)) for s in mine}
    return _matched(fp, regret, player, lock), regret


def _forest_roots(game, trunk_reach, live):
    """The forest roots' reach: the trunk's at each chance leaf, dead hands zero."""
    return [trunk_reach[n] * live for n in game.trunk_plan.chance]


def _operand_kernel(*refs, game, lane: int, li: int, L: int, nr: int, locked: bool):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    it = iter(refs)
    slots = _Slots([next(it) for _ in range(nr)], (0, game.slot_split)[:nr])
    w_ref, live_ref = next(it), next(it)
    lock_ref = next(it) if locked else None
    if li:   # the first lane's outputs, written in place (`input_output_aliases`)
        next(it), next(it), next(it)
    fold_ref, sd_ref, tfold_ref = next(it), next(it), next(it)
    fp, tp = game.forest_plan, game.trunk_plan
    b = pl.program_id(1)
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < game.num_hands
    q = 1 - lane
    _, treach = _trunk_reach(game, slots, q, cols, mask, w_ref, lock_ref)
    live = _row(live_ref, cols, mask, b)
    sigma, _ = _forest_strategy(game, slots, q, b, cols, mask, lock_ref)
    roots = _forest_roots(game, treach, live)
    reach = [None] * len(fp.parent)
    for r, n in enumerate(fp.roots):
        reach[n] = roots[r]
    for n, parent in enumerate(fp.parent):
        if parent >= 0:
            s = fp.lane_slot[n][q]
            reach[n] = reach[parent] * sigma[s] if s >= 0 else reach[parent]
    bb = jnp.zeros(cols.shape, jnp.int32) + b
    for ref, nodes in ((fold_ref, fp.folds), (sd_ref, fp.showdowns)):
        for t, node in enumerate(nodes):
            plt.store(ref.at[bb, jnp.full(cols.shape, t * L + li, jnp.int32), cols], reach[node], mask=mask)
    for t, node in enumerate(tp.folds):
        plt.store(tfold_ref.at[jnp.full(cols.shape, t * L + li, jnp.int32), cols], treach[node], mask=mask & (b == 0))


def _update_rows(slots_in, avg, comp, out, rows, sigma, reach, vals, node_of, child_of, player, cols, mask,
                 regret_in, clamp, own_reach, average, b_t, w_t):
    """The regret and average updates of `rows` (`{slot: global row}`), all computed
    before any store."""
    new = {}
    for s, g in rows.items():
        r = regret_in[s] + (vals[child_of[s]] - vals[node_of[s]])
        y = reach[node_of[s]] * sigma[s] if own_reach else sigma[s]
        mean, low = average(avg.load(g, player, cols, mask), comp.load(g, player, cols, mask), y, b_t, w_t)
        new[s] = (jnp.maximum(r, 0.0) if clamp else r, mean, low)
    for s, (r, mean, low) in new.items():
        g = rows[s]
        for arr, v in zip(out, (r, mean, low)):
            arr.store(g, player, cols, mask, v)


def _backward(plan, term: dict, sigma: dict, lane: int, shape):
    """`[n]` value rows: `term` at terminals, else the children's values weighted by the
    lane's own strategy at its decisions."""
    vals = [None] * len(plan.parent)
    kids = plan.children
    for n in range(len(plan.parent) - 1, -1, -1):
        if n in term:
            vals[n] = term[n]
            continue
        total = None
        for c in kids[n]:
            s = plan.lane_slot[c][lane]
            x = vals[c] * sigma[s] if s >= 0 else vals[c]
            total = x if total is None else total + x
        vals[n] = total if total is not None else jnp.zeros(shape, jnp.float32)
    return vals


def _forest_kernel(*refs, game, lane: int, li: int, L: int, nr: int, no: int, outs: tuple, locked: bool,
                   clamp: bool, own_reach: bool, average):
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
    fp = game.forest_plan
    b = pl.program_id(1)
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < game.num_hands
    bb = jnp.zeros(cols.shape, jnp.int32) + b
    _, treach = _trunk_reach(game, regret, lane, cols, mask, w_ref, lock_ref)
    live = _row(live_ref, cols, mask, b)
    sigma, r_in = _forest_strategy(game, regret, lane, b, cols, mask, lock_ref)
    load = lambda ref, row: plt.load(ref.at[bb, jnp.full(cols.shape, row, jnp.int32), cols], mask=mask, other=0.0)   # noqa: E731,E501
    c_rows = [load(c_ref, t * L + li) for t in range(len(fp.folds))]
    d_rows = [load(d_ref, t * L + li) for t in range(len(fp.showdowns))]
    b_t, w_t, inv_z = scal_ref[0], scal_ref[1], scal_ref[2]
    sign = 1.0 if lane == 0 else -1.0
    roots = _forest_roots(game, treach, live)
    reach = [None] * len(fp.parent)
    for r, n in enumerate(fp.roots):
        reach[n] = roots[r]
    for n, parent in enumerate(fp.parent):
        if parent >= 0:
            s = fp.lane_slot[n][lane]
            reach[n] = reach[parent] * sigma[s] if s >= 0 else reach[parent]
    term = {}
    for t, node in enumerate(fp.folds):
        term[node] = c_rows[t] * (fold_ref[t] * sign) * inv_z * live
    for t, node in enumerate(fp.showdowns):
        term[node] = d_rows[t] * sd_ref[t] * inv_z * live
    vals = _backward(fp, term, sigma, lane, cols.shape)
    rows = {s: _forest_row(game, lane, s, b) for s in _own_slots(fp, lane)}
    _update_rows(regret, avg, comp, out, rows, sigma, reach, vals, fp.node_of, fp.child_of, lane, cols, mask, r_in,
                 clamp, own_reach, average, b_t, w_t)
    for r, n in enumerate(fp.roots):
        plt.store(roots_ref.at[bb, jnp.full(cols.shape, r * L + li, jnp.int32), cols], vals[n], mask=mask)


def _trunk_kernel(*refs, game, lane: int, li: int, L: int, nr: int, no: int, outs: tuple, locked: bool,
                  clamp: bool, own_reach: bool, average):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    it = iter(refs)
    take = lambda k: [next(it) for _ in range(k)]   # noqa: E731
    regret, avg, comp = (_Slots(take(nr), (0, game.slot_split)[:nr]) for _ in range(3))
    w_ref, roots_ref, ct_ref, tfold_ref, scal_ref = take(5)
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
    R = len(tp.chance)

    def add_board(b, acc):
        bb = jnp.zeros(cols.shape, jnp.int32) + b
        return tuple(a + plt.load(roots_ref.at[bb, jnp.full(cols.shape, r * L + li, jnp.int32), cols], mask=mask,
                                  other=0.0) for r, a in enumerate(acc))
    chance = jax.lax.fori_loop(0, game.num_boards, add_board, tuple(jnp.zeros(cols.shape, jnp.float32)
                                                                    for _ in range(R)))
    term = {n: chance[r] for r, n in enumerate(tp.chance)}
    for t, node in enumerate(tp.folds):
        term[node] = _row(ct_ref, cols, mask, t * L + li) * (tfold_ref[t] * sign) * inv_z
    vals = _backward(tp, term, sigma, lane, cols.shape)
    _update_rows(regret, avg, comp, out, {s: s for s in mine}, sigma, reach, vals, tp.node_of, tp.child_of, lane,
                 cols, mask, r_in, clamp, own_reach, average, b_t, w_t)


def half(game, config, regret, avg, comp, player, b_t, w_new, average, locked=None, locked_policy=None):
    """One (half-)update of `player`'s slots (None: both) as the kernels:
    `(regret, avg, avg_comp)` new, each whole or `player`'s half as given (arguments as
    `cfrjax.public.spot_kernel.half`)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    from cfrjax.public.terminals import compat_sums_dot

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
    F2, K, F1 = len(fp.folds), len(fp.showdowns), len(tp.folds)
    shapes = (jax.ShapeDtypeStruct((B, F2 * L, H), dt), jax.ShapeDtypeStruct((B, K * L, H), dt),
              jax.ShapeDtypeStruct((max(F1, 1) * L, H), dt))
    ops = None
    for li, lane in enumerate(lanes):
        ops = pl.pallas_call(
            functools.partial(_operand_kernel, game=game, lane=lane, li=li, L=L, nr=nr, locked=bool(lock)),
            out_shape=shapes, grid=(pl.cdiv(H, BLOCK), B), interpret=INTERPRET, compiler_params=params,
            input_output_aliases={} if li == 0 else {nr + 2 + len(lock) + k: k for k in range(3)},
            name="cfrjax_turn_operand")(*parts, game.weights, live, *lock, *(ops if li else ()))
    r_fold, r_sd, r_tfold = ops
    d = showdown_kernel.showdown(r_sd, game.sd_sorted, game.sd_card_sorted, game.sd_index)     # [B, K L, H]
    c = compat_sums_dot(r_fold, game.hand_cards, game.card_hands.shape[0], axis=2)             # [B, F2 L, H]
    ct = compat_sums_dot(r_tfold, game.hand_cards, game.card_hands.shape[0], axis=1)           # [F1 L, H]
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
            functools.partial(_forest_kernel, lane=lane, li=li, **kw),
            out_shape=out_shapes + (roots_shape,), grid=(pl.cdiv(H, BLOCK), B), interpret=INTERPRET,
            compiler_params=params, name="cfrjax_turn_forest",
            input_output_aliases={} if li == 0 else {len(base) + k: k for k in range(4)})(
                *base, *(new if li else ()))
    roots = new[3]
    new = new[:3]
    tpay = game.trunk_fold_payoff.astype(dt) if F1 else jnp.zeros((1,), dt)
    for li, lane in enumerate(lanes):
        base = ins + (game.weights, roots, ct, tpay, scal) + lock
        new = pl.pallas_call(
            functools.partial(_trunk_kernel, lane=lane, li=li, **kw),
            out_shape=out_shapes, grid=(pl.cdiv(H, BLOCK),), interpret=INTERPRET, compiler_params=params,
            name="cfrjax_turn_trunk", input_output_aliases={len(base) + k: k for k in range(3)})(*base, *new)
    return tuple(new)
