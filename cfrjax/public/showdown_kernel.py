"""The per-subgame sorted showdown as one kernel (NVIDIA GPUs): batches of river spots, a turn's or flop's boards.

`showdown` runs the CUDA kernel of `cfrjax.public.cuda_showdown` where it builds (the
toolkit's `nvcc` found) and the sizes fit it: its table lives in shared memory (about
twice as fast). Elsewhere it runs the Pallas
(Triton) kernel below, which needs nothing but jaxlib.

`cfrjax.public.terminals._showdown_batch_first` in XLA runs the showdown of `nb` subgames,
each on its own board, as row gathers, a windowed prefix sum fused into the assembly of
one `[nb, R, Q]` table, and a gather-sum of six rows per hand: the gathered rows and the
table each pass through memory twice, and the prefix sum's windows re-read its inputs.
Here one program per showdown node of a subgame does it all (`_kernel`): it gathers its
reach row in strength order and prefix-sums it, then each card's hands likewise, writes
its table row, and after a barrier sums each hand's six table entries, while the row is
still in the cache. Same formula and table as the XLA form (the module docstring of
`cfrjax.public.terminals`); sums in another order (equal to rounding: tested in Pallas's
interpreter on CPU and compiled on an H200, on padded card lists).

Node-major (`[nb, Q, H]`, `terminals._showdown_kernel`): a program per (subgame, node)
row, so no block is padded across nodes, and the transposes from batch-last and back are
2-D, which XLA tiles (faster than the earlier program per subgame on `[nb, H, Q]`, whose
input was written batch-first by a loop reading the batch-last reach strided).

Layouts (batch-first): reach and output `[nb Q, H]` (row `b Q + q`); tables `sorted [nb,
H]`, `cards [nb, C, M]` (padding `H`), `index [nb, H, 6]`; the table in two parts per row,
`g [nb Q, H + 1]` (its first `H + 1` entries) and `c [nb Q, C (M + 1)]` (the rest).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from cfrjax.pallas_gpu import nvidia_gpu, pow2
from cfrjax.public import cuda_showdown

#: Warps per program (one node row), cards per step of its card loop, hands per step of
#: its gather-sum (the fastest measured on many river spots).
WARPS, CARD_BLOCK, PICK_BLOCK = 1, 8, 256
#: Below this many rows (subgames times nodes) the kernel runs `FEW_PROGRAMS_BLOCKS`
#: (warps, card block, pick block, rows per program) instead: a turn's 48 river boards
#: are 1,200 to 2,400 rows, too few to hide one warp's memory latency (the fastest
#: measured on the full-range turn).
FEW_PROGRAMS, FEW_PROGRAMS_BLOCKS = 4096, (16, 16, 1024, 1)
#: The blocks of `FEW_PROGRAMS_BLOCKS`' case where rows taken `ROW_BLOCKS[3]` at a time
#: still make `ROW_BLOCK_PROGRAMS` programs or more (a turn's boards, not a batch of a
#: few hundred river spots with five showdowns each, which ran slower with several rows
#: per program).
ROW_BLOCKS, ROW_BLOCK_PROGRAMS = (8, 8, 512, 5), 240


def used(x, plan) -> bool:
    """Whether the batch-first showdown of float32 reach `x` runs as this kernel under
    `plan` (`cfrjax.plan.Plan`): on an NVIDIA GPU where the plan has it (or interpreted);
    other dtypes (the float64 evaluation) and backends run the XLA form."""
    return x.dtype == jnp.float32 and available(plan)


def available(plan=None) -> bool:
    """Whether float32 showdowns run as this kernel under `plan` (default: the auto plan,
    which has it on every NVIDIA GPU) on the default backend (`used`); the poker builder
    leaves out the dense matrices of a game with several boards where it is."""
    gpu = nvidia_gpu()
    return gpu if plan is None else plan.pallas_on("showdown", gpu)


def _grid2(rows, cols):
    """Broadcast `rows [*n]` and `cols [k]` to `[*n, k]` index arrays."""
    shape = rows.shape + cols.shape
    return jnp.broadcast_to(rows[..., None], shape), jnp.broadcast_to(cols, shape)


def _kernel(x_ref, sorted_ref, cards_ref, index_ref, g_ref, c_ref, out_ref, *, H, Q, C, M, rows, card_block,
            pick_block, interpret):
    """Program `p`: `rows` rows of `x [nb Q, H]` from row `b Q + q0` on, showdown nodes
    `q0 .. q0 + rows - 1` of subgame `b` (`p = b ceil(Q / rows) + q0 / rows`; rows past
    `Q` masked), which share the subgame's tables: each index block is loaded once for
    all of them. Each row's table (`g_ref`, `c_ref`) is written and read back by the same
    program after a barrier, so it stays in the cache instead of making a round trip
    through memory between kernels. Each block is one power of two longer than its row
    (`H + 1`, `M + 1` entries): the prefix sum's last entry, over the masked zeros, is the
    row's total. `card_block` cards per step of the card loop, `pick_block` hands per step
    of the gather-sum."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import triton as plt

    p = pl.program_id(0)
    blocks = -(-Q // rows)
    b = p // blocks
    q0 = (p % blocks) * rows
    mine = [(b * Q + q0 + j, q0 + j < Q) for j in range(rows)]     # (row of x, whether it is one)
    # G = P - P[H] / 2, its entry H = P[H] / 2.
    Hp = pow2(H + 1)
    h = jnp.arange(Hp)
    idx = plt.load(sorted_ref.at[jnp.full((Hp,), b), h], mask=h < H, other=0)
    for row, real in mine:
        ph = jnp.full((Hp,), row)
        vals = plt.load(x_ref.at[ph, idx], mask=(h < H) & real, other=0.0)
        total = jnp.sum(vals)
        plt.store(g_ref.at[ph, h], jnp.cumsum(vals) - vals - 0.5 * total, mask=(h <= H) & real)
    # -D_k = P_k[M] / 2 - P_k (entry M: -P_k[M] / 2), card_block cards at a time.
    Mp = pow2(M + 1)
    m = jnp.arange(Mp)
    kk = jnp.arange(card_block)
    bc = jnp.full((card_block, Mp), b)

    def cards(j, carry):
        k, mm = _grid2(j * card_block + kk, m)                                 # [KC, Mp]
        held = (k < C) & (mm < M)
        cidx = plt.load(cards_ref.at[bc, k, mm], mask=held, other=H)
        live = held & (cidx < H)
        for row, real in mine:
            pc = jnp.full((card_block, Mp), row)
            vals = plt.load(x_ref.at[pc, jnp.where(live, cidx, 0)], mask=live & real, other=0.0)
            total = jnp.sum(vals, axis=1)                                     # [KC]
            neg_d = 0.5 * total[:, None] - (jnp.cumsum(vals, axis=1) - vals)
            plt.store(c_ref.at[pc, k * (M + 1) + mm], neg_d, mask=(k < C) & (mm <= M) & real)
        return carry

    jax.lax.fori_loop(0, pl.cdiv(C, card_block), cards, 0)
    if not interpret:
        plt.debug_barrier()   # the table's entries, written by every thread, read by any
    # Six table entries per hand, pick_block hands at a time.
    hb = jnp.arange(pick_block)
    bb = jnp.full((pick_block,), b)

    def pick(j, carry):
        h = j * pick_block + hb
        hm = h < H
        es = [plt.load(index_ref.at[bb, h, jnp.full((pick_block,), k)], mask=hm, other=0) for k in range(6)]
        for row, real in mine:
            pb = jnp.full((pick_block,), row)
            acc = jnp.zeros((pick_block,), jnp.float32)
            for k, e in enumerate(es):
                ref, e = (g_ref, e) if k < 2 else (c_ref, e - (H + 1))
                acc = acc + plt.load(ref.at[pb, e], mask=hm & real, other=0.0)
            plt.store(out_ref.at[pb, h], acc, mask=hm & real)
        return carry

    jax.lax.fori_loop(0, pl.cdiv(H, pick_block), pick, 0)


def showdown(x, sorted_t, cards_t, index_t, *, cuda: bool = False, interpret: bool = False):
    """`Wk - St` of `nb` subgames with `Q` showdown nodes each: `x [nb, Q, H]` float32 ->
    `[nb, Q, H]` (module docstring for the tables). `cuda`: run the CUDA kernel
    (`cfrjax.public.cuda_showdown`, the plan's `cuda_showdown`) where it fits; `interpret`:
    the Pallas kernel in Pallas's interpreter.

    Under `vmap` (`_showdown_fn`'s rule) the mapped axis joins the subgames (or, where the
    tables are not mapped, the nodes), so one kernel runs for all of them: a turn's river
    boards, mapped over by `cfrjax.public.passes`, are subgames of one launch."""
    return _showdown_fn(bool(cuda), bool(interpret))(x, sorted_t, cards_t, index_t)


@functools.cache
def _showdown_fn(cuda: bool, interpret: bool):
    """`showdown` of one implementation choice, with its batching rule."""

    @jax.custom_batching.custom_vmap
    def run(x, sorted_t, cards_t, index_t):
        if cuda and cuda_showdown.fits(x.shape[2], *cards_t.shape[1:]):
            return cuda_showdown.showdown(x, sorted_t, cards_t, index_t)
        from jax.experimental import pallas as pl
        from jax.experimental.pallas import triton as plt

        nb, Q, H = x.shape
        C, M = cards_t.shape[1:]
        shapes = ((nb * Q, H + 1), (nb * Q, C * (M + 1)), (nb * Q, H))
        warps, card_block, pick_block, rows = (WARPS, CARD_BLOCK, PICK_BLOCK, 1) if nb * Q >= FEW_PROGRAMS \
            else ROW_BLOCKS if nb * -(-Q // ROW_BLOCKS[3]) >= ROW_BLOCK_PROGRAMS else FEW_PROGRAMS_BLOCKS
        rows = min(rows, Q)
        out = pl.pallas_call(
            functools.partial(_kernel, H=H, Q=Q, C=C, M=M, rows=rows, card_block=card_block, pick_block=pick_block,
                              interpret=interpret),
            out_shape=tuple(jax.ShapeDtypeStruct(sh, x.dtype) for sh in shapes), grid=(nb * -(-Q // rows),),
            interpret=interpret,
            compiler_params=plt.CompilerParams(num_warps=warps), name="cfrjax_showdown")(
                x.reshape(nb * Q, H), sorted_t, cards_t, index_t)[2]
        return out.reshape(nb, Q, H)

    @run.def_vmap
    def _vmap(n, in_batched, x, sorted_t, cards_t, index_t):
        """`run` of `n` mapped calls as one call: with the tables mapped, the map's entries
        are more subgames (`[n nb, Q, H]`, unmapped operands broadcast); with one set of
        tables for all, they are more nodes of each subgame (`[nb, n Q, H]`)."""
        if not any(in_batched[1:]):
            nb, Q, H = x.shape[1:]
            out = run(jnp.moveaxis(x, 0, 1).reshape(nb, n * Q, H), sorted_t, cards_t, index_t)
            return jnp.moveaxis(out.reshape(nb, n, Q, H), 1, 0), True
        args = [a if mapped else jnp.broadcast_to(a, (n,) + a.shape)
                for a, mapped in zip((x, sorted_t, cards_t, index_t), in_batched)]
        nb = args[0].shape[1]
        out = run(*(a.reshape((n * nb,) + a.shape[2:]) for a in args))
        return out.reshape((n, nb) + out.shape[1:]), True

    return run
