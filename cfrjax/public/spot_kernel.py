"""A one-board dense spot's (half-)iteration as two Pallas kernels around its one matmul (NVIDIA GPUs).

A full-range river spot on a GPU is launches, not bytes: its slot arrays are `[S, H]`
with `S` about 14 and `H` 1,081, and XLA ran each (half-)iteration as five to eight
kernels (regret matching, the forward pass and the matmul operand's layout and pad, the
matmul, the backward pass reading the matmul's split partial sums, the regret and
average updates), each a few microseconds. Everything but the terminals' matmul is
per hand: a hand's strategy, reach, values and updates read only that hand's column of
every slot array. So a (half-)iteration here is

1. `operand`: per block of hands, the opponents' regret matching and forward reach down
   to the terminals, written straight into the matmul's operand, hands last:
   `x [2, 3 W, H]` bfloat16 (stack 0 the folds, 1 the showdowns; row `t L + l` the
   reach of lane `l`'s opponent at terminal `t`, as the three bfloat16 parts of
   `cfrjax.public.terminals.bfloat16_parts` in row blocks `0, W, 2 W`);
2. the matmul `tv[k, q, g] = sum_h x[k, q, h] M_k[g, h]` (`M_0` the compat matrix, `M_1`
   the board's showdown matrix), exact bfloat16 products accumulated in float32, as
   `cfrjax.public.terminals.dense_pair`;
3. `update`: per block of hands, the updating players' regret matching, own reach,
   terminal values (the parts summed, times the stake, sign and `1 / Z`), backward
   values, regrets and the average, written once.

The tree is static (`Plan`, built with the game: `PublicGame.forest_plan`), so each
kernel is straight-line code over `[BLOCK]` rows of hands. The values are the XLA
passes' (`cfrjax.public.passes`) to float32 rounding: other summation orders in the
matmul and at nodes, Triton's division in regret matching.

Used (`applies`) for a one-board spot without a trunk (a river spot; no batch axes),
dense and unraked, float32, on an NVIDIA GPU where the plan has `spot` (`cfrjax.plan`; or
Pallas's interpreter, the plan's `interpret`, in the tests), for the rules whose hooks are elementwise around a plain regret update
(the capabilities `cfrjax.kernels.KERNELS["spot"]` declares), locked strategies or not (`cfrjax.locking`), with no leaf function; everything
else runs the XLA passes.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import rules
from cfrjax.kernels import KERNELS
from cfrjax.pallas_gpu import nvidia_gpu
from cfrjax.plan import plan_of

#: Hands per program and warps per program.
BLOCK, WARPS = 64, 2
#: The matmul operand's rows per stack and its hands are padded to a multiple of this
#: (zeros), so XLA neither pads the operand nor slices the product for the matmul (each a
#: kernel of its own per (half-)iteration).
ROWS = 16
#: Under simultaneous order both lanes' code is in each kernel (a program per lane), which
#: Triton compiles slowly for a large tree (Libratus endgame 4, 57 nodes: several times
#: XLA's compile). Larger trees run the XLA passes under simultaneous order (alternating
#: order's kernels hold one lane): `Plan.spot_simultaneous_nodes` (32).

FOLD, SHOWDOWN = 0, 1


@dataclasses.dataclass(frozen=True)
class Plan:
    """A tree's structure as static tuples (hashable): what the kernels unroll. A river
    spot's forest, or a turn spot's trunk or (any board's) forest
    (`cfrjax.public.turn_kernel`).

    Attributes:
      parent: `[n]` parent of each node (-1 at a root); nodes in breadth-first order.
      owner: `[n]` 0 / 1 decision, 2 chance, 3 terminal.
      lane_slot: `[n]` `(slot of lane 0, slot of lane 1)` on the edge into each node, -1
        unless that lane's player acts at the parent.
      folds, showdowns: `[F]`, `[K]` terminal nodes.
      slot_ids: `[S]` the slots (a forest's local ones `0..S-1`; a trunk's global ones).
      slot_node, slot_child: `[S]` node and child of each slot of `slot_ids`.
      sets: `[I]` `(player, first slot, actions)` per decision node, in slot order.
      split: player 0's slots are those below `split`.
      chance: a trunk's chance leaves (the nodes above each forest root), else `()`.
    """

    parent: tuple
    owner: tuple
    lane_slot: tuple
    folds: tuple
    showdowns: tuple
    slot_ids: tuple
    slot_node: tuple
    slot_child: tuple
    sets: tuple
    split: int
    chance: tuple = ()

    def edges(self, lane: int) -> tuple:
        """`[n]` the lane's slot on the edge into each node, or `None`."""
        return tuple(s[lane] if s[lane] >= 0 else None for s in self.lane_slot)

    @property
    def node_of(self) -> dict:
        return dict(zip(self.slot_ids, self.slot_node))

    @property
    def child_of(self) -> dict:
        return dict(zip(self.slot_ids, self.slot_child))

    @property
    def roots(self) -> tuple:
        return tuple(n for n, p in enumerate(self.parent) if p < 0)

    def width(self, lanes: int) -> int:
        """Rows of one part of one stack of the matmul operand: the wider of folds and
        showdowns times the lanes."""
        return max(len(self.folds), len(self.showdowns)) * lanes


def plan(parent, owner, lane_slot, fold_node, showdown_node, slot_ids, slot_node, slot_child, sets, split: int,
         sentinel: int, chance=()) -> Plan:
    """A `Plan` from a stage's build-time index arrays (NumPy; lane slots `sentinel`
    where none; a root is its own parent there)."""
    lane = np.asarray(lane_slot)
    lane = np.where(lane >= sentinel, -1, lane)
    as_tuple = lambda a: tuple(int(v) for v in np.asarray(a))   # noqa: E731
    parent = np.asarray(parent)
    parent = np.where(parent == np.arange(len(parent)), -1, parent)
    return Plan(parent=as_tuple(parent), owner=as_tuple(owner), lane_slot=tuple(tuple(int(v) for v in r) for r in lane),
                folds=as_tuple(fold_node), showdowns=as_tuple(showdown_node), slot_ids=as_tuple(slot_ids),
                slot_node=as_tuple(slot_node), slot_child=as_tuple(slot_child),
                sets=tuple((int(a), int(b), int(c)) for a, b, c in sets), split=int(split), chance=as_tuple(chance))


def suits(game, config) -> bool:
    """Whether `game` and the solve's `config` are of the kind the kernels run (module
    docstring), whatever the platform, the plan and the state: also what
    `PublicGame.compiler_options` asks."""
    p = getattr(game, "forest_plan", None)
    if p is None or getattr(game, "trunk_plan", None) is not None or config is None or not KERNELS["spot"].supports(config):
        return False
    if game.raked or game.num_boards != 1 or game.dense_showdown is None or game.terminals == "sorted":
        return False
    if game.weights.ndim != 2 or not p.folds or not p.showdowns:
        return False
    return config.order != "simultaneous" or len(p.parent) <= plan_of(game).spot_simultaneous_nodes


def applies(game, config, locked, leaf, regret, plan) -> bool:
    """Whether this (half-)update runs as the kernels under `plan` (`cfrjax.plan.Plan`):
    `suits`, no leaf function state, `[S, H]` slot arrays (and locks, if any), on an NVIDIA
    GPU where the plan has `spot` (or interpreted)."""
    first = regret[0] if isinstance(regret, tuple) else regret
    if not suits(game, config) or leaf is not None or first.ndim != 2 or (locked is not None and locked.ndim != 2):
        return False
    return plan.pallas_on("spot", nvidia_gpu())


class _Rows:
    """Global slot `s` -> a `[BLOCK]` row of the parts of a slot array (whole, or the two
    players' halves)."""

    def __init__(self, refs, firsts):
        self.refs, self.firsts = refs, firsts

    def _at(self, s):
        for ref, first in zip(self.refs[::-1], self.firsts[::-1]):
            if s >= first:
                return ref, s - first
        raise IndexError(s)

    def load(self, s, cols, mask):
        from jax.experimental.pallas import triton as plt
        ref, r = self._at(s)
        return plt.load(ref.at[jnp.full(cols.shape, r, jnp.int32), cols], mask=mask, other=0.0).astype(jnp.float32)

    def store(self, s, cols, mask, value):
        from jax.experimental.pallas import triton as plt
        ref, r = self._at(s)
        plt.store(ref.at[jnp.full(cols.shape, r, jnp.int32), cols], value.astype(ref.dtype), mask=mask)


def _own_slots(p: Plan, player: int) -> list:
    return [s for owner, first, count in p.sets if owner == player for s in range(first, first + count)]


def _match(sets, regret: dict, lock=None) -> dict:
    """Regret matching of `[BLOCK]` rows: `sets` `[(first slot, actions)]`, `regret`
    `{slot: row}` -> `{slot: strategy row}`: positive regrets normalised per set, uniform
    where none; where `lock` (`{slot: row}`, `_lock_rows`) is not negative, its value (a
    locked strategy)."""
    sigma = {}
    for first, count in sets:
        pos = [jnp.maximum(regret[first + a], 0.0) for a in range(count)]
        total = pos[0]
        for x in pos[1:]:
            total = total + x
        some = total > 0
        safe = jnp.where(some, total, 1.0)
        for a in range(count):
            sigma[first + a] = jnp.where(some, pos[a] / safe, 1.0 / count)
    if lock is not None:
        sigma = {k: jnp.where(lock[k] >= 0, lock[k], v) for k, v in sigma.items()}
    return sigma


def _matched(p: Plan, regret: dict, player: int, lock=None) -> dict:
    """`_match` of `player`'s decision nodes in `p`."""
    return _match([(first, count) for owner, first, count in p.sets if owner == player], regret, lock)


def _lock_rows(lock_ref, slots, cols, mask):
    """`{slot: [BLOCK]}` of the locked strategy (`-1` where a slot is not locked), or
    `None` without locks."""
    return None if lock_ref is None else {s: _row(lock_ref, cols, mask, s) for s in slots}


def _forward(parent, edges, sigma: dict, root) -> list:
    """`[n]` reach rows: `root` at the root, else the parent's times the strategy on the
    edge (`edges[n]`, a slot of `sigma`, or `None`: 1)."""
    reach = [None] * len(parent)
    for n, par in enumerate(parent):
        if par < 0:
            reach[n] = root
        else:
            reach[n] = reach[par] * sigma[edges[n]] if edges[n] is not None else reach[par]
    return reach


def _backward(parent, edges, term: dict, sigma: dict, shape) -> list:
    """`[n]` value rows, deepest first: `term[n]` at terminals, else the children's values
    weighted by the strategy on their edges (1 where `edges[c]` is `None`)."""
    kids = [[] for _ in parent]
    for n, par in enumerate(parent):
        if par >= 0:
            kids[par].append(n)
    vals = [None] * len(parent)
    for n in range(len(parent) - 1, -1, -1):
        if n in term:
            vals[n] = term[n]
            continue
        total = None
        for c in kids[n]:
            x = vals[c] * sigma[edges[c]] if edges[c] is not None else vals[c]
            total = x if total is None else total + x
        vals[n] = total if total is not None else jnp.zeros(shape, jnp.float32)
    return vals


def _reach(p: Plan, sigma: dict, player: int, root) -> list:
    """`[n]` rows: `player`'s own reach at every node of `p` (`root` at its root)."""
    return _forward(p.parent, p.edges(player), sigma, root)


def _lanes(lanes: tuple, body):
    """`body(li, lane)` for the lane of this program (grid axis 1)."""
    from jax.experimental import pallas as pl
    if len(lanes) == 1:
        body(0, lanes[0])
        return
    for li, lane in enumerate(lanes):
        pl.when(pl.program_id(1) == li)(functools.partial(body, li, lane))


def _row(ref, cols, mask, *index):
    """`ref[*index, cols]` as a `[BLOCK]` float32 row (0 past the hands)."""
    from jax.experimental.pallas import triton as plt
    at = tuple(jnp.full(cols.shape, i, jnp.int32) for i in index)
    return plt.load(ref.at[at + (cols,)], mask=mask, other=0.0).astype(jnp.float32)


def _parts(v):
    """`(hi, mid, lo)` bfloat16 with `hi + mid + lo == v` exactly for a float32 row `v`, in a
    kernel (`cfrjax.public.terminals.bfloat16_parts` in XLA)."""
    hi = v.astype(jnp.bfloat16)
    rest = v - hi.astype(jnp.float32)
    mid = rest.astype(jnp.bfloat16)
    return hi, mid, (rest - mid.astype(jnp.float32)).astype(jnp.bfloat16)


def _operand_kernel(*refs, p: Plan, lanes: tuple, firsts: tuple, H: int, Hp: int, rows: int):
    """Columns `[H, Hp)` (the matmul's alignment padding) are written as zeros: their
    range weight is read as 0, so their reach is."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt
    nr = len(firsts)
    regret = _Rows(refs[:nr], firsts)
    w_ref, x_ref = refs[nr], refs[-1]
    lock_ref = refs[nr + 1] if len(refs) == nr + 3 else None
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < H
    padded = cols < Hp
    L = len(lanes)
    W = p.width(L)

    def body(li, lane):
        q = 1 - lane
        slots = _own_slots(p, q)
        mine = {s: regret.load(s, cols, mask) for s in slots}
        lock = _lock_rows(lock_ref, slots, cols, mask)
        reach = _reach(p, _matched(p, mine, q, lock), q, _row(w_ref, cols, mask, q))
        for stack, nodes in ((FOLD, p.folds), (SHOWDOWN, p.showdowns)):
            for t, node in enumerate(nodes):
                for k, part in enumerate(_parts(reach[node])):
                    at = (jnp.full(cols.shape, stack, jnp.int32), jnp.full(cols.shape, t * L + li + k * W, jnp.int32))
                    plt.store(x_ref.at[at + (cols,)], part, mask=padded)
    _lanes(lanes, body)
    # The rows no terminal fills (one stack's padding to the other's width and to
    # `rows`): zeros, written by the first lane's programs.
    zero = jnp.zeros(cols.shape, jnp.bfloat16)
    first = pl.program_id(1) == 0 if L > 1 else True
    for stack, nodes in ((FOLD, p.folds), (SHOWDOWN, p.showdowns)):
        used = {t * L + li + k * W for t in range(len(nodes)) for li in range(L) for k in range(3)}
        for r in range(rows):
            if r not in used:
                at = (jnp.full(cols.shape, stack, jnp.int32), jnp.full(cols.shape, r, jnp.int32))
                plt.store(x_ref.at[at + (cols,)], zero, mask=padded & first)


def _update_kernel(*refs, p: Plan, lanes: tuple, firsts: tuple, outs: tuple, H: int, clamp: bool,
                   own_reach: bool, average, locked: bool):
    """All loads first, then the arithmetic, then the stores: a store may alias any input
    as far as the compiler knows, so a load after it waits for it."""
    from jax.experimental import pallas as pl
    nr, no = len(firsts), len(outs)
    it = iter(refs)
    take = lambda k: [next(it) for _ in range(k)]   # noqa: E731
    regret, avg, comp = (_Rows(take(nr), firsts) for _ in range(3))
    tv_ref, w_ref, fold_ref, sd_ref, scal_ref = take(5)
    lock_ref = next(it) if locked else None
    new_regret, new_avg, new_comp = (_Rows(take(no), outs) for _ in range(3))
    cols = pl.program_id(0) * BLOCK + jnp.arange(BLOCK)
    mask = cols < H
    L = len(lanes)
    W = p.width(L)

    def body(li, lane):
        slots = _own_slots(p, lane)
        r_in = {s: regret.load(s, cols, mask) for s in slots}
        a_in = {s: avg.load(s, cols, mask) for s in slots}
        c_in = {s: comp.load(s, cols, mask) for s in slots}
        parts = {(stack, t): [_row(tv_ref, cols, mask, stack, t * L + li + k * W) for k in range(3)]
                 for stack, nodes in ((FOLD, p.folds), (SHOWDOWN, p.showdowns)) for t in range(len(nodes))}
        root = _row(w_ref, cols, mask, lane)
        b_t, w_t, inv_z = scal_ref[0], scal_ref[1], scal_ref[2]
        fold = [fold_ref[f] for f in range(len(p.folds))]
        stake = [sd_ref[k] for k in range(len(p.showdowns))]

        lock = _lock_rows(lock_ref, slots, cols, mask)
        sigma = _matched(p, r_in, lane, lock)
        reach = _reach(p, sigma, lane, root)
        sign = 1.0 if lane == 0 else -1.0
        term = {}
        for (stack, t), (a, b, c) in parts.items():
            x = (a + b) + c
            if stack == FOLD:
                term[p.folds[t]] = x * (fold[t] * sign) * inv_z
            else:
                term[p.showdowns[t]] = x * stake[t] * inv_z
        vals = _backward(p.parent, p.edges(lane), term, sigma, cols.shape)
        out = {}
        node_of, child_of = p.node_of, p.child_of
        for s in slots:
            r = r_in[s] + (vals[child_of[s]] - vals[node_of[s]])
            y = reach[node_of[s]] * sigma[s] if own_reach else sigma[s]
            out[s] = (jnp.maximum(r, 0.0) if clamp else r,) + tuple(average(a_in[s], c_in[s], y, b_t, w_t))
        for s, (r, mean, low) in out.items():
            new_regret.store(s, cols, mask, r)
            new_avg.store(s, cols, mask, mean)
            new_comp.store(s, cols, mask, low)
    _lanes(lanes, body)


def half(game, config, regret, avg, comp, player, b_t, w_new, average, locked=None, locked_policy=None, plan=None):
    """One (half-)update of `player`'s slots (None: both, simultaneous order) as the
    kernels: `(regret, avg, avg_comp)` new, each whole or `player`'s half as given.

    Args:
      game: a one-board dense `PublicGame` with a `forest_plan` (`applies`).
      config: the solve's `SolverConfig` (`KERNELS["spot"].supports` it).
      regret: `[S, H]`, or the players' halves (`cfrjax.iteration.split_slots`): the
        cumulative regrets after this iteration's discount (`rules.discount`).
      avg, comp: the average and its compensation, as `regret` (player's half or whole).
      player: 0, 1 or None.
      b_t, w_new: this iteration's averaging weight and total weight (scalars).
      average: `(mean, comp, y, b_t, w_t) -> (mean, comp)`, elementwise
        (`cfrjax.iteration.compensated_mean_update`).
      locked, locked_policy: `[S, H]` the state's locks (`cfrjax.locking`), or `None`:
        the strategy at a locked slot is the locked one, in both kernels.
      plan: the `cfrjax.plan.Plan` it runs under (`interpret`: in Pallas's interpreter).
    """
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    p = game.forest_plan
    interpret = "spot" in (plan or plan_of(game)).interpret
    H = game.num_hands
    lanes = (0, 1) if player is None else (player,)
    parts = tuple(regret) if isinstance(regret, tuple) else (regret,)
    firsts = (0, p.split) if len(parts) == 2 else (0,)
    W = p.width(len(lanes))
    rows = -(-3 * W // ROWS) * ROWS
    Hp = -(-H // ROWS) * ROWS
    params = plt.CompilerParams(num_warps=WARPS)
    lock = () if locked is None else (jnp.where(locked, locked_policy, -1.0).astype(jnp.float32),)
    x = pl.pallas_call(
        functools.partial(_operand_kernel, p=p, lanes=lanes, firsts=firsts, H=H, Hp=Hp, rows=rows),
        out_shape=jax.ShapeDtypeStruct((2, rows, Hp), jnp.bfloat16), grid=(pl.cdiv(Hp, BLOCK), len(lanes)),
        interpret=interpret, compiler_params=params, name="cfrjax_spot_operand")(*parts, game.weights, *lock)
    m = jnp.stack([game.dense_compat, game.dense_showdown[0]]).astype(jnp.bfloat16)
    m = jnp.pad(m, ((0, 0), (0, Hp - H), (0, Hp - H)))                                 # loop-invariant
    tv = jnp.einsum("kqh,kgh->kqg", x, m, preferred_element_type=jnp.float32)          # [2, rows, Hp]
    grid = (pl.cdiv(H, BLOCK), len(lanes))
    dt = jnp.float32
    scal = jnp.stack([jnp.asarray(b_t, dt), jnp.asarray(w_new, dt), 1.0 / game.norm.astype(dt)])
    if player is None:
        own = (regret, avg, comp)
        outs = (0,)
    else:
        own = (regret[player], avg[player], comp[player])
        outs = (0 if player == 0 else p.split,)
    shapes = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in own)
    whole = lambda a: tuple(a) if isinstance(a, tuple) else (a,)   # noqa: E731
    out = pl.pallas_call(
        functools.partial(_update_kernel, p=p, lanes=lanes, firsts=firsts, outs=outs, H=H,
                          clamp=config.rule in rules.CLAMPED, own_reach=config.rule not in rules.UNWEIGHTED_AVERAGE,
                          average=average, locked=bool(lock)),
        out_shape=shapes, grid=grid, interpret=interpret, compiler_params=params, name="cfrjax_spot_update")(
            *parts, *whole(avg), *whole(comp), tv, game.weights, game.forest_fold_payoff.astype(dt),
            game.forest_showdown_stake.astype(dt), scal, *lock)
    return tuple(out)
