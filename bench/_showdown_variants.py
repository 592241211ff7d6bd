"""Variants of the batch-first per-spot showdown (`cfrjax.public.terminals._showdown_batch_first`)
for `bench/per_spot_layout.py --variants`: the library's optimisation barriers removed, more
barriers inside the one-board form, the six rows gathered apart. Each gives the library's
numbers (the split gathers to rounding); records in `bench/results/per_spot_layout_h200.jsonl`
(H200, 4,096 river spots: none was faster than the library's form)."""
import jax, jax.numpy as jnp
from cfrjax.public import terminals as T

def _first_tables(board, H, C, M, nb):
    first = lambda t, lead: jnp.moveaxis(t.reshape(lead + (nb,)), -1, 0)
    return {"sd_sorted": first(board["sd_sorted"], (H,)), "sd_card_sorted": first(board["sd_card_sorted"], (C, M)),
            "sd_index": first(board["sd_index"], (H, 6))}

def one_board_split(board, x, cpu):
    """One board, no concatenated table: the two G rows and four card rows gathered apart."""
    H = x.shape[0]
    C, M = board["sd_card_sorted"].shape
    xz = T._pad_zero(x)
    gathered = xz[jnp.concatenate([board["sd_sorted"], board["sd_card_sorted"].reshape(-1)])]
    prefix = T.exclusive_prefix(gathered[:H], cpu)
    cprefix = T.exclusive_prefix(jnp.swapaxes(gathered[H:].reshape((C, M) + x.shape[1:]), 0, 1), cpu)
    g = prefix - 0.5 * prefix[-1:]
    neg_d = jnp.swapaxes(0.5 * cprefix[-1:] - cprefix, 0, 1).reshape((C * (M + 1),) + x.shape[1:])
    ix = board["sd_index"]
    out = g[ix[:, 0]] + g[ix[:, 1]]
    for k in range(2, 6):
        out = out + neg_d[ix[:, k] - (H + 1)]
    return out

def make(inner, barrier_in=True, barrier_out=True):
    def batch_first(board, x, cpu):
        H, _, nb = x.shape
        C, M = board["sd_card_sorted"].shape[:2]
        tables = _first_tables(board, H, C, M, nb)
        xb = jnp.moveaxis(x, -1, 0)
        if barrier_in:
            xb = jax.lax.optimization_barrier(xb)
        out = jax.vmap(lambda t, v: inner(t, v, cpu))(tables, xb)
        if barrier_out:
            out = jax.lax.optimization_barrier(out)
        return jnp.moveaxis(out, 0, -1)
    return batch_first

VARIANTS = {
    "library": None,
    "no_out_barrier": make(T._showdown_sorted_hm, True, False),
    "no_barriers": make(T._showdown_sorted_hm, False, False),
    "split_gathers": make(one_board_split, True, True),
}


def one_board_barriers(gathered_barrier, table_barrier):
    """The library's one-board form with optimisation barriers on the gathered rows and/or
    the six-row table (what `_materialise` does on CPU)."""
    def inner(board, x, cpu):
        H = x.shape[0]
        C, M = board["sd_card_sorted"].shape
        xz = T._pad_zero(x)
        gathered = xz[jnp.concatenate([board["sd_sorted"], board["sd_card_sorted"].reshape(-1)])]
        if gathered_barrier:
            gathered = jax.lax.optimization_barrier(gathered)
        prefix = T.exclusive_prefix(gathered[:H], cpu)
        cprefix = T.exclusive_prefix(jnp.swapaxes(gathered[H:].reshape((C, M) + x.shape[1:]), 0, 1), cpu)
        g = prefix - 0.5 * prefix[-1:]
        neg_d = jnp.swapaxes(0.5 * cprefix[-1:] - cprefix, 0, 1).reshape((C * (M + 1),) + x.shape[1:])
        table = jnp.concatenate([g, neg_d])
        if table_barrier:
            table = jax.lax.optimization_barrier(table)
        return jnp.sum(table[board["sd_index"]], axis=1)
    return inner


VARIANTS.update({
    "gathered_barrier": make(one_board_barriers(True, False)),
    "table_barrier": make(one_board_barriers(False, True)),
    "both_inner_barriers": make(one_board_barriers(True, True)),
})
