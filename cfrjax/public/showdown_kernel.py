"""The per-subgame sorted showdown as one Pallas kernel (NVIDIA GPUs): batches of river spots.

`cfrjax.public.terminals._showdown_batch_first` in XLA runs the showdown of `nb` subgames,
each on its own board, as row gathers, a windowed prefix sum fused into the assembly of
one `[nb, R, Q]` table, and a gather-sum of six rows per hand: the gathered rows and the
table each pass through memory twice, and the prefix sum's windows re-read its inputs.
Here one program per subgame does it all (`_kernel`): it gathers its reach rows in
strength order and prefix-sums them, then each card's hands likewise, writes its table,
and after a barrier sums each hand's six table rows, while the table is still in the
L2 cache. Same formula and table layout as the XLA form (the module docstring of
`cfrjax.public.terminals`); sums in another order (equal to rounding: tested in
Pallas's interpreter on CPU and compiled on an H200, on padded card lists, and against
the XLA form on real river tables on the H200). H200, DCFR
alternating, 8,192 river spots: 7.96 -> 7.49 ms/iter (`bench/results/
ab_showdown_kernel_h200.jsonl`), 7.29 with the block sizes below.

Layouts (batch-first, one subgame per leading index): reach `x [nb, H, Q]`; tables
`sorted [nb, H]`, `cards [nb, C, M]` (padding `H`), `index [nb, H, 6]`; the table in
two parts, `g [nb, H + 1, Q]` (the first `H + 1` rows) and `c [nb, C (M + 1), Q]` (the
rest). Blocks are padded to powers of two (`Qp` columns, masked).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

#: Use the kernel on NVIDIA GPUs (set False to run the XLA form there, e.g. on a jaxlib
#: without Pallas's Triton lowering).
ENABLED = True
#: Run the kernel in Pallas's interpreter (tests on CPU); on a GPU it compiles (Triton).
INTERPRET = False
#: Warps per program (one subgame), cards per step of its card loop, hands per step of
#: its gather-sum. H200, DCFR alternating, 8,192 river spots (`bench/results/
#: showdown_kernel_h200.jsonl`): (4, 8, 512) 7.29 ms/iter; (8, 8, 512) 7.32, (4, 8, 256)
#: 7.31, (4, 4, 256) 7.69, (2, 8, 512) 9.14, (8, 8, 1024) 8.47, (8, 16, 512) 8.48. Table
#: rows of `Q` numbers: padded to 8 (sector-aligned), (8, 8, 512) took 7.49.
WARPS, CARD_BLOCK, PICK_BLOCK = 4, 8, 512


def used(x) -> bool:
    """Whether the batch-first showdown of float32 reach `x` runs as this kernel: on an
    NVIDIA GPU while `ENABLED` (or interpreted, `INTERPRET`); other dtypes (the float64
    evaluation) and backends run the XLA form."""
    if x.dtype != jnp.float32 or not ENABLED:
        return False
    if INTERPRET:
        return True
    try:   # Triton: NVIDIA GPUs
        return jax.default_backend() == "gpu" and jax.devices()[0].device_kind.startswith("NVIDIA")
    except RuntimeError:
        return False


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def _grid2(rows, cols):
    """Broadcast `rows [*n]` and `cols [k]` to `[*n, k]` index arrays."""
    shape = rows.shape + cols.shape
    return jnp.broadcast_to(rows[..., None], shape), jnp.broadcast_to(cols, shape)


def _kernel(x_ref, sorted_ref, cards_ref, index_ref, g_ref, c_ref, out_ref, *, H, Q, C, M):
    """Program `b`: subgame `b`'s whole showdown. Its table is written (`g_ref`, `c_ref`)
    and read back by the same program after a barrier, so it stays in the L2 cache
    instead of making a round trip through memory between kernels."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    b = pl.program_id(0)
    Hp, Mp, Qp = _pow2(H), _pow2(M), _pow2(Q)
    q = jnp.arange(Qp)
    qm = q < Q
    # G = P - P[H] / 2.
    h = jnp.arange(Hp)
    hm = h < H
    idx = plt.load(sorted_ref.at[jnp.full((Hp,), b), h], mask=hm, other=0)
    r, c = _grid2(idx, q)
    bb = jnp.full((Hp, Qp), b)
    rows = plt.load(x_ref.at[bb, r, c], mask=hm[:, None] & qm[None, :], other=0.0)
    total = jnp.sum(rows, axis=0)
    r, c = _grid2(h, q)
    plt.store(g_ref.at[bb, r, c], jnp.cumsum(rows, axis=0) - rows - 0.5 * total[None, :],
              mask=hm[:, None] & qm[None, :])
    plt.store(g_ref.at[jnp.full((Qp,), b), jnp.full((Qp,), H), q], 0.5 * total, mask=qm)
    # -D_k = P_k[M] / 2 - P_k, CARD_BLOCK cards at a time.
    m = jnp.arange(Mp)
    kk = jnp.arange(CARD_BLOCK)
    bc = jnp.full((CARD_BLOCK, Mp), b)
    bc3 = jnp.full((CARD_BLOCK, Mp, Qp), b)

    def cards(j, carry):
        k = j * CARD_BLOCK + kk                                               # [KC]
        km = (k < C)[:, None] & (m < M)[None, :]                              # [KC, Mp]
        cidx = plt.load(cards_ref.at[(bc,) + _grid2(k, m)], mask=km, other=H)
        live = km & (cidx < H)
        r, c = _grid2(jnp.where(live, cidx, 0), q)
        rows = plt.load(x_ref.at[bc3, r, c], mask=live[:, :, None] & qm[None, None, :], other=0.0)
        total = jnp.sum(rows, axis=1)                                         # [KC, Qp]
        neg_d = 0.5 * total[:, None, :] - (jnp.cumsum(rows, axis=1) - rows)
        r, c = _grid2(k[:, None] * (M + 1) + m[None, :], q)
        plt.store(c_ref.at[bc3, r, c], neg_d, mask=km[:, :, None] & qm[None, None, :])
        r, c = _grid2(k * (M + 1) + M, q)
        plt.store(c_ref.at[jnp.full((CARD_BLOCK, Qp), b), r, c], -0.5 * total, mask=(k < C)[:, None] & qm[None, :])
        return carry

    jax.lax.fori_loop(0, pl.cdiv(C, CARD_BLOCK), cards, 0)
    if not INTERPRET:
        plt.debug_barrier()   # the table's rows, written by every thread, read by any
    # Six table rows per hand, PICK_BLOCK hands at a time.
    hb = jnp.arange(PICK_BLOCK)
    bp = jnp.full((PICK_BLOCK, Qp), b)

    def pick(j, carry):
        h = j * PICK_BLOCK + hb
        hm = h < H
        mask = hm[:, None] & qm[None, :]
        acc = jnp.zeros((PICK_BLOCK, Qp), jnp.float32)
        for k in range(6):
            row = plt.load(index_ref.at[jnp.full((PICK_BLOCK,), b), h, jnp.full((PICK_BLOCK,), k)], mask=hm, other=0)
            ref, row = (g_ref, row) if k < 2 else (c_ref, row - (H + 1))
            r, c = _grid2(row, q)
            acc = acc + plt.load(ref.at[bp, r, c], mask=mask, other=0.0)
        r, c = _grid2(h, q)
        plt.store(out_ref.at[bp, r, c], acc, mask=hm[:, None] & qm[None, :])
        return carry

    jax.lax.fori_loop(0, pl.cdiv(H, PICK_BLOCK), pick, 0)


def showdown(x, sorted_t, cards_t, index_t):
    """`Wk - St` of `nb` subgames: `x [nb, H, Q]` float32 -> `[nb, H, Q]` (module docstring
    for the tables)."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    nb, H, Q = x.shape
    C, M = cards_t.shape[1:]
    Qp = _pow2(Q)
    shapes = ((nb, H + 1, Q), (nb, C * (M + 1), Q), (nb, H, Q))
    return pl.pallas_call(
        functools.partial(_kernel, H=H, Q=Q, C=C, M=M),
        out_shape=tuple(jax.ShapeDtypeStruct(sh, x.dtype) for sh in shapes), grid=(nb,), interpret=INTERPRET,
        compiler_params=plt.CompilerParams(num_warps=WARPS), name="cfrjax_showdown")(x, sorted_t, cards_t, index_t)[2]
