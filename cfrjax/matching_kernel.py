"""Regret matching as one Pallas kernel (NVIDIA GPUs): each set's slots read once, written once.

`cfrjax.passes.regret_matching` over static runs in XLA writes each set's total out in
one kernel and reads the regrets again beside it in another, which writes the strategy:
twice what its bytes need. Here a program loads the slots of one information set for a block
of columns (`[A, BLOCK]`, `A` the widest set), discounts and clips them, sums them, and
writes the strategy: one read and one write of every slot.

The cumulative regret is read as stored, undiscounted: the rule's per-sign discount
(`factors`: `r * where(r > 0, pos, neg)`, `cfrjax.rules.discount`) is applied inside the
kernel, so the discounted regrets are never written out for it. Equal to the XLA form
to rounding (Triton's division); tested in Pallas's interpreter on CPU and compiled on
an H200.

Layout: regrets and strategy `[S, N]` (`N` = hands times batch, batch-last); `first`,
`count` `[I]` each set's first slot and action count; factors `[F]`, column `c` uses
entry `c % F`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from cfrjax.pallas_gpu import nvidia_gpu, pow2

#: Columns per program and warps per program.
BLOCK, WARPS = 1024, 4
#: Sets at most this wide run as the kernel; wider ones stay in XLA.
MAX_ACTIONS = 8
#: The plan's threshold (`Plan.matching_min_columns`): fewer columns stay in XLA, where
#: the pass fuses with its neighbours (measured: `bench/README.md`, "History from the code").


def used(x, widest: int, plan) -> bool:
    """Whether regret matching of float32 regrets `x [S, ...]` with sets of at most
    `widest` actions runs as this kernel under `plan` (`cfrjax.plan.Plan`): on an NVIDIA
    GPU where the plan has it, from `plan.matching_min_columns` columns (or interpreted,
    at any size)."""
    interpret = "matching" in plan.interpret
    if x.dtype != jnp.float32 or widest > MAX_ACTIONS or x.size == 0 or not plan.pallas_on("matching", True):
        return False
    if x.size // x.shape[0] < plan.matching_min_columns and not interpret:
        return False
    return interpret or nvidia_gpu()


def _kernel(x_ref, y_ref, first_ref, count_ref, pos_ref, neg_ref, uni_ref, out_ref, *, N, F, A, split):
    """Program `(i, j)`: set `i`, columns `[j BLOCK, (j + 1) BLOCK)`; slots below `split`
    are rows of `x`, the others rows of `y` (from `split`)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    i, j = pl.program_id(0), pl.program_id(1)
    first, count = first_ref[i], count_ref[i]
    k = jnp.arange(A)[:, None]
    col = j * BLOCK + jnp.arange(BLOCK)
    inside = col < N
    live = (k < count) & inside[None, :]
    rows = jnp.broadcast_to(first + k, (A, BLOCK))
    cols = jnp.broadcast_to(col[None, :], (A, BLOCK))
    lower = first < split
    r = plt.load(x_ref.at[jnp.where(lower, rows, 0), cols], mask=live & lower, other=0.0)
    r = r + plt.load(y_ref.at[jnp.where(lower, 0, rows - split), cols], mask=live & ~lower, other=0.0)
    pos = plt.load(pos_ref.at[col % F], mask=inside, other=1.0)[None, :]
    neg = plt.load(neg_ref.at[col % F], mask=inside, other=1.0)[None, :]
    p = jnp.maximum(r * jnp.where(r > 0, pos, neg), 0.0)
    total = jnp.sum(p, axis=0)[None, :]
    uniform = uni_ref[first]
    plt.store(out_ref.at[rows, cols], jnp.where(total > 0, p / jnp.where(total > 0, total, 1.0), uniform), mask=live)


def regret_matching(x, first, count, uniform, widest: int, factors=None, interpret: bool = False):
    """Regret matching of `x [S, *rest]` (float32) by sets of consecutive slots (a set's
    slots all in one part of `x`).

    Args:
      x: cumulative regrets, undiscounted; or a pair of arrays, its rows in two parts
        (alternating order's players' halves, `cfrjax.iteration.split_slots`), read
        where they are instead of concatenated first.
      first, count: `[I]` int32, each set's first slot (into `x`) and size.
      uniform: `[S]` the uniform strategy `1 / |A|` of each slot's set.
      widest: static, the widest set (`<= MAX_ACTIONS`).
      factors: `None` or `(pos, neg)`, each `[*batch]` (the trailing axes of `x`) or a
        scalar: the discount `x * where(x > 0, pos, neg)` applied first.
      interpret: run in Pallas's interpreter (any platform) instead of compiled (Triton).

    Returns:
      `[S, *rest]` the strategy.
    """
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    parts = tuple(x) if isinstance(x, (tuple, list)) else (x,)
    split = parts[0].shape[0]
    flat = [p.reshape(p.shape[0], -1) for p in parts]
    flat = (flat + flat)[:2]
    S = sum(p.shape[0] for p in parts)
    N = flat[0].shape[1]
    shape = (S,) + parts[0].shape[1:]
    x = parts[0]
    if factors is None:
        pos = neg = jnp.ones((1,), x.dtype)
    else:
        pos, neg = (jnp.asarray(f, x.dtype).reshape(-1) for f in factors)
        pos, neg = jnp.broadcast_arrays(pos, neg)
    F = pos.shape[0]
    if N % F:
        raise ValueError(f"discount factors of {F} entries do not tile {N} columns")
    A = pow2(widest)
    out = pl.pallas_call(
        functools.partial(_kernel, N=N, F=F, A=A, split=split if len(parts) > 1 else S),
        out_shape=jax.ShapeDtypeStruct((S, N), x.dtype), grid=(first.shape[0], pl.cdiv(N, BLOCK)),
        interpret=interpret, compiler_params=plt.CompilerParams(num_warps=WARPS), name="cfrjax_regret_matching")(
            *flat, first.astype(jnp.int32), count.astype(jnp.int32), pos, neg, uniform.astype(x.dtype))
    return out.reshape(shape)
