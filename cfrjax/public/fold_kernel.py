"""Fold terminals' compatible reach as one Pallas kernel (NVIDIA GPUs): batches of spots, batch-last.

At a fold the value of hand `h` is the opponent's compatible reach `C(h) = T - S[c1] -
S[c2] + r[h]` (`cfrjax.public.terminals`, module docstring) times the stake. In XLA the
batch-last reach `[F, L, H, N]` (`N` subgames) goes hand-major through a transpose, a
per-card gather-sum, a second gather of the card sums per hand, and the scaling after
it: several times what their bytes need.

Here a program takes one fold row (a fold node and lane) for a block of `BLOCK`
subgames, batch-last as stored (each hand's `BLOCK` numbers contiguous), and walks the
hands as the upper triangle of a card-by-card table (`pairs [C, C]`: the hand holding
cards `a < b`, or `H`): step `a` loads the hands `(a, b)`, `b > a`, as a `[C, BLOCK]`
tile aligned by `b`, so adding the tiles gives every card's sums over its hands as the
higher card, and each tile's total is card `a`'s as the lower card. With all card sums
`S` in registers (`T` is half their total: each hand holds two cards) a second walk
writes `(T - S[a] - S[b] + r[h]) * row[f, l] * col[n]`: the stake and sign, and the
subgame's `1 / Z`. Two reads of the reach, one write of the values; no transposes, no
card-list gathers, no scratch. Equal to the XLA form to rounding (other summation
order); tested in Pallas's interpreter on CPU and compiled on an H200.

With few subgames the kernel has too few programs and the XLA form stays
(`Plan.fold_min_subgames`). Measurements and the forms not kept: `bench/README.md`,
"Measurements behind the public form's choices".

Layouts: reach and values `[R H, N]` (row `r H + h`, `R` fold rows), `pairs [C, C]`
int32, `row [R]`, `col [N]`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from cfrjax.pallas_gpu import nvidia_gpu, pow2

#: Subgames (columns) per program and warps per program (the fastest measured).
BLOCK, WARPS = 32, 4
#: The plan's threshold (`Plan.fold_min_subgames`, 4,096): fewer subgames stay in XLA
#: (where a small solve's fold fuses with its neighbours, and the kernel has too few
#: programs); the kernel also needs the subgames to be a multiple of `BLOCK`.


def used(x, plan) -> bool:
    """Whether the fold values of float32 reach `x [F, L, H, *batch]` run as this kernel
    under `plan` (`cfrjax.plan.Plan`): on an NVIDIA GPU where the plan has it, with
    `prod(batch)` a multiple of `BLOCK` and at least `plan.fold_min_subgames` (any
    multiple, interpreted)."""
    interpret = "fold" in plan.interpret
    if x.dtype != jnp.float32 or not plan.pallas_on("fold", True) or x.ndim < 4 or x.shape[0] == 0:
        return False
    n = x.size // (x.shape[0] * x.shape[1] * x.shape[2])
    if n % BLOCK or (n < plan.fold_min_subgames and not interpret):
        return False
    return interpret or nvidia_gpu()


def pair_table(hand_cards, num_cards: int):
    """`[C, C]` int32: `pairs[a, b]` the hand holding cards `a < b` (`hand_cards [H, 2]`),
    `H` where no hand does (and on and below the diagonal)."""
    hc = jnp.sort(jnp.asarray(hand_cards, jnp.int32), axis=1)
    H = hc.shape[0]
    return jnp.full((num_cards, num_cards), H, jnp.int32).at[hc[:, 0], hc[:, 1]].set(jnp.arange(H, dtype=jnp.int32))


def _kernel(x_ref, pairs_ref, row_ref, col_ref, out_ref, *, H, C, R):
    """Program `(r, j)`: fold row `r`, subgames `[j BLOCK, (j + 1) BLOCK)`."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    r, j = pl.program_id(0), pl.program_id(1)
    Cp = pow2(C)
    b = jnp.arange(Cp)
    col = j * BLOCK + jnp.arange(BLOCK)
    shape = (Cp, BLOCK)
    cols = jnp.broadcast_to(col[None, :], shape)
    below = jnp.broadcast_to(b[:, None], shape)

    def tile(a):
        """The hands `(a, b)` of every `b`: their rows of `x` (masked where none) and mask."""
        idx = plt.load(pairs_ref.at[jnp.full((Cp,), a), jnp.where(b < C, b, 0)], mask=b < C, other=H)
        live = jnp.broadcast_to((idx < H)[:, None], shape)
        rows = jnp.broadcast_to((r * H + jnp.where(idx < H, idx, 0))[:, None], shape)
        return rows, live, plt.load(x_ref.at[rows, cols], mask=live, other=0.0)

    def sums(a, carry):
        high, low = carry
        _, _, v = tile(a)
        return high + v, jnp.where(below == a, low + jnp.sum(v, axis=0)[None, :], low)

    zero = jnp.zeros(shape, jnp.float32)
    high, low = jax.lax.fori_loop(0, C, sums, (zero, zero))
    card = high + low                                                          # S [Cp, BLOCK]
    total = 0.5 * jnp.sum(card, axis=0)[None, :]
    scale = (row_ref[r] * plt.load(col_ref.at[col]))[None, :]

    def values(a, carry):
        rows, live, v = tile(a)
        first = jnp.sum(jnp.where(below == a, card, 0.0), axis=0)[None, :]     # S[a]
        # Masked entries point past the values (not at row 0, which another program
        # writes: Pallas's interpreter stores masked entries back).
        at = jnp.where(live, rows, R * H)
        plt.store(out_ref.at[at, cols], (((total - first) - card) + v) * scale, mask=live)
        return carry

    jax.lax.fori_loop(0, C, values, 0)


def fold_values(x, pairs, row, col, interpret: bool = False):
    """`C(h) * row * col` of fold reach `x [F, L, H, *batch]` (float32, `used`).

    Args:
      x: the opponent's reach at `F` fold nodes, `L` lanes, batch-last.
      pairs: `[C, C]` the hand of each pair of cards (`pair_table`).
      row: `[F, L]` per fold row (stake and sign); col: `[*batch]` or a scalar, per
        subgame (`1 / Z`).

    Returns:
      `[F, L, H, *batch]`.
    """
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    F, L, H = x.shape[:3]
    R = F * L
    N = x.size // (R * H)
    C = pairs.shape[0]
    dt = x.dtype
    row = jnp.broadcast_to(jnp.asarray(row, dt), (F, L)).reshape(R)
    col = jnp.broadcast_to(jnp.asarray(col, dt), x.shape[3:]).reshape(N)
    shape = x.shape
    out = pl.pallas_call(
        functools.partial(_kernel, H=H, C=C, R=R), out_shape=jax.ShapeDtypeStruct((R * H, N), dt),
        grid=(R, N // BLOCK), interpret=interpret, compiler_params=plt.CompilerParams(num_warps=WARPS),
        name="cfrjax_fold_values")(x.reshape(R * H, N), pairs, row, col)
    return out.reshape(shape)
