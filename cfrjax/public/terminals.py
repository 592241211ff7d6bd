"""Terminal values of the public form with card removal: per-card sums and sorted prefix sums, or dense.

Notation: `H` hands of one shared hand list, `r [H]` the opponent's reach at a terminal,
`compat(h, h') = 1` when the two hands share no card, `c1, c2` the cards of hand `h`.

* **Fold** (`fold_compat`): `C(h) = sum_{h'} compat(h, h') r[h'] = T - S[c1] - S[c2] + r[h]`
  with `T = sum r` and `S[c]` the reach of the hands holding card `c` (both players share
  one hand list, so the opponent's copy of `h` itself, counted in both `S` terms, is
  `r[h]`). O(H) per terminal: one gather of each card's hands (`card_hands`) on CPU;
  elsewhere `T` and the `S[c]` are one matmul of a 0/1 card matrix (`compat_sums_dot`).
  Batches of thousands of spots on an NVIDIA GPU run it batch-last as one Pallas kernel
  with the stake and `1 / Z` (`fold_values`, `cfrjax.public.fold_kernel`).
* **Showdown** (`showdown_diff`): `D(h) = Wk(h) - St(h)`, the compatible opponent reach
  with weaker minus with stronger hands (ties count zero). With `P` the exclusive prefix
  sums of `r` in ascending strength order on the terminal's board, and `P_c` those of
  the hands holding card `c` (each card's hands sorted by strength too):

      Wk(h) = P[lt] - P_c1[lt1] - P_c2[lt2]
      St(h) = (P[H] - P[le]) - (P_c1[end] - P_c1[le1]) - (P_c2[end] - P_c2[le2])

  where `lt` / `le` count the hands weaker than / not stronger than `h` (in all of the
  list, or in card `c`'s list). No own-hand correction is needed: `h` is neither weaker
  nor stronger than itself. O(H) per terminal after one sort per board (build time:
  `showdown_tables`): gathers, prefix sums, gathers, for all of a board's showdowns
  (and both players, and batch entries) at once. In float32 on an NVIDIA GPU one kernel
  does it (`cfrjax.public.showdown_kernel`: CUDA where `nvcc` builds it, else Pallas):
  for a batch of spots with a board each, and for a turn's or flop's river boards, all
  in one launch. On a CPU one board's
  showdowns run as native code where it builds (`cfrjax.public.native`, an XLA FFI
  custom call: the same table in two loops; a batch with a board per subgame in one
  call; the XLA form below otherwise).
* **Dense** alternative: `D = M_b r` with `M_b[h, h'] = compat * sign(s_h - s_h')` per
  board (one matmul for all of a board's showdowns; the boards `vmap`ped into one
  batched matmul on accelerators) and `C = compat r` (one matmul). O(H^2) per terminal
  but one large kernel: it wins where launches dominate (one spot on a GPU); the sorted
  form wins where memory traffic dominates (CPU, large batches, many boards). The
  matrices hold -1, 0 and 1 only, stored exactly in bfloat16 (`dense_apply`: in float32
  the reach is split into three bfloat16 parts that sum to it exactly, so the product is
  one bfloat16 matmul with float32 accumulation, every product exact: half the matrix
  bytes of float32, on tensor cores). A one-board spot's folds and showdowns share one
  batched matmul of the two matrices stacked (`dense_pair`).
  `PublicGame.terminals` picks (`"auto"`: sorted on CPU, dense elsewhere when the
  matrices were built: `build_public` builds them below a size limit and not for a CPU
  backend).

Both are exact and agree in float64 to rounding. Values here are raw (no stake, sign,
normaliser or live mask): `cfrjax.public.passes` applies those.

Layouts: the sorted variants work hand-major, `[H, Q]` (terminals and batch entries
flattened behind the hands): every gather moves contiguous rows of Q numbers, and the
prefix sums run down the rows (a parallel prefix scan on CPU, where XLA's cumulative sum
is a slow reduce-window; `jnp.cumsum` elsewhere). With `G = P - P[H] / 2` and
`D_c = P_c - P_c[M] / 2` a showdown value is six gathered terms:
`G[lt] + G[le] - D_c1[lt1] - D_c1[le1] - D_c2[lt2] - D_c2[le2]`.

On CPU the reach going into the gathers, the table they read and the sums they return
are each written to memory (`_materialise`): XLA:CPU would otherwise fuse the producers
into the gathers (recomputing the forward pass's products and the prefix sums' last
levels for every gathered row) and the transpose back to node-major into their loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.deck import NUM_CARDS
from cfrjax.host import aligned_empty
from cfrjax.plan import plan_of
from cfrjax.public import fold_kernel, native, showdown_kernel

# ----------------------------------------------------------------------------------------
# Build time (NumPy).


def compat_matrix(hand_cards: np.ndarray) -> np.ndarray:
    """`[H, H]` bool: the two hands share no card."""
    hc = np.asarray(hand_cards)
    return ~(hc[:, None, :, None] == hc[None, :, None, :]).any(axis=(2, 3))


def compatible_pairs(hand_cards: np.ndarray, in0: np.ndarray, in1: np.ndarray) -> int:
    """How many pairs (player 0's hand in `in0 [H]`, player 1's in `in1 [H]`, bool) share
    no card: all pairs, less those sharing a card by inclusion-exclusion over the cards
    (a pair of identical hands shares two). Exact integers in O(H), where the `[H, H]`
    `compat_matrix` is slow to build on a full range."""
    hc = np.asarray(hand_cards, np.int64)
    c0 = np.bincount(hc[in0].ravel(), minlength=NUM_CARDS).astype(np.int64)
    c1 = np.bincount(hc[in1].ravel(), minlength=NUM_CARDS).astype(np.int64)
    both = int(np.count_nonzero(np.asarray(in0) & np.asarray(in1)))
    return int(np.count_nonzero(in0)) * int(np.count_nonzero(in1)) - int(c0 @ c1) + both


def card_table(hand_cards: np.ndarray, num_cards: int = NUM_CARDS) -> np.ndarray:
    """`[C, M]` int32: the hands holding each card (ascending), padded with `H`."""
    hc = np.asarray(hand_cards, np.int64)
    H = hc.shape[0]
    lists = [np.flatnonzero((hc == c).any(1)) for c in range(num_cards)]
    M = max(1, max(len(x) for x in lists))
    out = np.full((num_cards, M), H, np.int32)
    for c, x in enumerate(lists):
        out[c, :len(x)] = x
    return out


def showdown_tables(strength: np.ndarray, hand_cards: np.ndarray, card_hands: np.ndarray, out: dict | None = None,
                    native: bool | None = None) -> dict:
    """Sorted-showdown tables of `B` boards (see the module docstring).

    Args:
      strength: `[B, H]` int hand strengths per board (higher wins; dead hands may hold
        any value, e.g. -1: their reach and values are masked elsewhere).
      hand_cards: `[H, 2]` card ids.
      card_hands: `[C, M]` from `card_table`.
      out: `None`, or the three arrays below (int32, leading `B`) to fill in place (a
        builder writing one chunk of boards at a time into its final arrays).
      native: compute them in native code (`cfrjax.public.native.showdown_tables`, the
        same tables, tested; several times faster; True builds the library if needed) or
        in NumPy (False); `None`: native where the library is already built and
        `CFRJAX_NATIVE` is not 0 (the strengths fitting int32), else NumPy.

    Returns:
      dict of int32 arrays: `sd_sorted [B, H]` (hands by ascending strength, ties by hand),
      `sd_card_sorted [B, C, M]` (each card's hands by ascending strength, ties by hand,
      padding last),
      `sd_index [B, H, 6]`: per hand, rows of the concatenation of `G = P - P[H] / 2`
      `[H + 1]` and `-D_c = P_c[M] / 2 - P_c` `[C, M + 1]` (flattened): `G[lt], G[le],
      -D_c1[lt1], -D_c1[le1], -D_c2[lt2], -D_c2[le2]`, whose sum is `Wk - St`
      (`= P[lt] + P[le] - P[H] - sum_k (P_ck[ltk] + P_ck[lek] - P_ck[M])`).
    """
    s = np.asarray(strength, np.int64)
    B, H = s.shape
    hc = np.asarray(hand_cards, np.int64)
    C, M = card_hands.shape
    if out is None:
        out = {"sd_sorted": np.empty((B, H), np.int32), "sd_card_sorted": np.empty((B, C, M), np.int32),
               "sd_index": np.empty((B, H, 6), np.int32)}
    want = {"sd_sorted": (B, H), "sd_card_sorted": (B, C, M), "sd_index": (B, H, 6)}
    for k, shape in want.items():
        a = out[k]
        if a.shape != shape or a.dtype != np.int32 or not a.flags.c_contiguous:
            raise ValueError(f"showdown_tables: out[{k!r}] must be a C-contiguous int32 array of shape {shape}, "
                             f"got {a.dtype} {a.shape}")
    if B == 0 or H == 0:
        return out
    fits = -2 ** 31 <= s.min() and s.max() < 2 ** 31
    if native and not fits:
        raise ValueError(f"showdown_tables: the native tables take int32 strengths, got {s.min()}..{s.max()}")
    if native is not False and fits:
        from cfrjax.plan import _switched_on
        from cfrjax.public import native as code
        if (native or _switched_on("CFRJAX_NATIVE")) and code.showdown_tables(s, hc, card_hands, out,
                                                                                build=bool(native)):
            return out
        if native:
            raise RuntimeError(f"the native showdown tables are not available: {code.why_unavailable()}")
    # One sort per board of keys (strength, hand) packed into unique integers: the stable
    # order by strength (ties by hand), without an argsort.
    hb = max(1, (H - 1).bit_length())
    lo = s.min()
    if int(s.max()) - int(lo) >= 2 ** (62 - hb):   # too wide to pack: dense ranks keep the order
        s, lo = np.unique(s, return_inverse=True)[1].reshape(B, H), 0
    key = ((s - lo) << hb) | np.arange(H)
    key.sort(axis=1)
    order = (key & ((1 << hb) - 1)).astype(np.int32)                         # [B, H] hands by strength
    out["sd_sorted"][...] = order
    sv = key >> hb
    del key
    new = np.ones((B, H), bool)
    new[:, 1:] = sv[:, 1:] != sv[:, :-1]                                     # a strength starts
    lt_s, le_s = _tie_bounds(new)                                            # in sorted position
    del sv
    index = out["sd_index"].reshape(B, H * 6)
    rows = np.arange(B, dtype=np.int64)[:, None]
    at = order + rows * H
    lt = np.empty((B, H), np.int32)
    lt.ravel()[at.ravel()] = lt_s.ravel()                                    # hands weaker, by hand
    out["sd_index"][..., 0] = lt
    index.ravel()[(at * 6 + 1).ravel()] = le_s.ravel()                       # not stronger
    # Each card's hands by strength: the 2 H entries (card, lt, hand, which card of the
    # hand) of a board packed into unique integers and sorted, in card segments of fixed
    # length (every board has the same hand list); ties by hand as in the full order.
    cnt = np.count_nonzero(card_hands < H, axis=1)                           # [C]
    cs = np.concatenate([[0], np.cumsum(cnt)])
    E = int(cs[-1])                                                          # 2 H
    ecard = np.repeat(np.arange(C), cnt)                                     # [E] card of each sorted entry
    hb1 = hb + 1
    wide = np.int32 if C << (2 * hb + 1) < 2 ** 31 else np.int64
    static = (hc << (hb + hb1)) | (np.arange(H)[:, None] << 1) | np.arange(2)   # [H, 2] card, hand, k
    ekey = (static.astype(wide) | (lt.astype(wide)[:, :, None] << hb1)).reshape(B, E)
    ekey.sort(axis=1)
    low = (ekey & ((1 << hb1) - 1)).astype(np.int64)                         # 2 hand + k
    lt_e = (ekey >> hb1) & ((1 << hb) - 1)
    del ekey
    cso = out["sd_card_sorted"].reshape(B, C * M)
    cso[...] = H
    cso[:, ecard * M + np.arange(E) - cs[ecard]] = low >> 1
    # Ties inside each card's segment: positions of the first and one past the last equal
    # entry, with the row offsets of `sd_index`'s card tables (`H + 1 + c (M + 1)`) added.
    new = np.ones((B, E), bool)
    new[:, 1:] = lt_e[:, 1:] != lt_e[:, :-1]
    new[:, cs[:-1][cnt > 0]] = True                                          # a card's segment starts
    first, end = _tie_bounds(new)
    shift = (H + 1 + ecard * (M + 1) - cs[ecard]).astype(np.int32)
    first += shift
    end += shift
    # Entry (card, hand h, k) goes to column 2 + 2 k (first) and 3 + 2 k (end) of h's row.
    at = rows * (H * 6) + 3 * low - (low & 1) + 2
    index.ravel()[at.ravel()] = first.ravel()
    index.ravel()[(at + 1).ravel()] = end.ravel()
    return out


def widen_tables(tables: dict, W: int, M: int) -> dict:
    """Sorted-showdown tables (`showdown_tables`, or `two_lists.cross_tables`) over `H`
    sorted hands with card tables `M0` wide, as the tables of a list padded to `W >= H`
    hands with card tables `M >= M0` wide, the padding hands (index `H..W-1`, zero reach)
    sorting after every real one: `sd_sorted [B, W]`, `sd_card_sorted [B, C, M]` (the
    padding index `W` after each card's hands) and `sd_index` with its card columns
    re-indexed, `H + 1 + c (M0 + 1) + pos` becoming `W + 1 + c (M + 1) + pos` (`pos <=
    M0`: the padding adds zeros to each prefix sum). `sd_index`'s rows stay as given (the
    caller pads them): its first two columns, positions in the full order, keep their
    values. Unchanged where nothing is padded."""
    B, H = tables["sd_sorted"].shape
    C, M0 = tables["sd_card_sorted"].shape[1:]
    if (W, M) == (H, M0):
        return tables
    index = tables["sd_index"]
    out = {"sd_sorted": aligned_empty((B, W), np.int32), "sd_card_sorted": aligned_empty((B, C, M), np.int32),
           "sd_index": aligned_empty(index.shape, np.int32)}
    out["sd_sorted"][:, :H] = tables["sd_sorted"]
    out["sd_sorted"][:, H:] = np.arange(H, W, dtype=np.int32)
    out["sd_card_sorted"][...] = W
    out["sd_card_sorted"][:, :, :M0] = np.where(tables["sd_card_sorted"] == H, W, tables["sd_card_sorted"])
    out["sd_index"][..., :2] = index[..., :2]
    card, pos = np.divmod(index[..., 2:].astype(np.int64) - (H + 1), M0 + 1)
    out["sd_index"][..., 2:] = W + 1 + card * (M + 1) + pos
    return out


def _tie_bounds(new: np.ndarray) -> tuple:
    """`(first, end)` int32 `[B, n]` from group-start flags `new [B, n]` (True at each
    row's first entry and wherever a run of equal entries, or a segment, starts): per
    entry the position in its row of its run's first entry and one past its last (in
    ascending values: the counts of entries below it and not above it). One pass over
    the flattened rows, faster than per-row passes."""
    B, n = new.shape
    flat = new.reshape(-1)
    pos = np.arange(B * n, dtype=np.int32 if B * n < 2 ** 31 - 1 else np.int64)
    first = np.maximum.accumulate(np.where(flat, pos, 0))
    ends = np.ones_like(flat)
    ends[:-1] = flat[1:]                                                     # a run ends at i
    end = np.minimum.accumulate(np.where(ends, pos + 1, B * n)[::-1])[::-1]
    row = np.arange(0, B * n, n, dtype=pos.dtype)[:, None]
    return (first.reshape(B, n) - row).astype(np.int32), (end.reshape(B, n) - row).astype(np.int32)


#: The dense matrices' storage dtype: their entries (-1, 0, 1) are exact in it.
DENSE_DTYPE = jnp.bfloat16


def dense_tables(strength: np.ndarray, hand_cards: np.ndarray, live: np.ndarray, dtype=DENSE_DTYPE) -> tuple:
    """`(dense_showdown [B, H, H], dense_compat [H, H])` in `dtype`:
    `compat * sign(s_h - s_h') * live_b[h] * live_b[h']` per board, and `compat`."""
    compat = compat_matrix(hand_cards)
    s = np.asarray(strength, np.int64)
    lv = np.asarray(live, bool)
    out = np.empty((s.shape[0],) + compat.shape, dtype)
    for b in range(s.shape[0]):
        out[b] = np.sign(s[b][:, None] - s[b][None, :]) * (compat & lv[b][:, None] & lv[b][None, :])
    return out, compat.astype(dtype)


def dense_bytes(num_boards: int, num_hands: int, itemsize: int) -> int:
    """Bytes of the dense matrices (`dense_tables`)."""
    return (num_boards + 1) * num_hands * num_hands * itemsize


# ----------------------------------------------------------------------------------------
# Device (jittable). The sorted variants work hand-major, `[H, Q]` (hands first, terminals
# and batch entries flattened behind): each gather moves contiguous rows of Q numbers and
# the prefix sums run down the rows.


def exclusive_prefix(x, cpu: bool, axis: int = 0):
    """`[n, ...] -> [n + 1, ...]`: `out[j] = x[0] + ... + x[j - 1]` along `axis` (the
    leading one by default; on CPU a parallel prefix scan, where XLA's cumulative sum is a
    slow reduce-window and a loop runs its body as separate kernels every step; `cumsum`
    elsewhere)."""
    inclusive = jax.lax.associative_scan(jnp.add, x, axis=axis) if cpu else jnp.cumsum(x, axis=axis)
    return jnp.concatenate([jnp.zeros_like(jax.lax.slice_in_dim(x, 0, 1, axis=axis)), inclusive], axis=axis)


def _pad_zero(x, xp=jnp):
    """`[H, ...] -> [H + 1, ...]`: a zero row, the target of padded indices."""
    return xp.concatenate([x, xp.zeros((1,) + x.shape[1:], x.dtype)])


def compat_sums(x, hand_cards, card_hands, xp=jnp, same=None):
    """`C[h] = sum_{h'} compat(h, h') x[h']` of a hand-major `x [H, ...]` (inclusion-exclusion);
    `xp=numpy` computes it on the host (the builder's range normaliser). Across two hand
    lists (`cfrjax.public.two_lists`): `x [H_q, ...]` over the opponent's list with its
    `card_hands`, `hand_cards [H_p, 2]` of the other list and `same [H_p]` each hand's
    position in `x`'s list (`H_q`, a zero row, where it has none) -> `[H_p, ...]`."""
    xz = _pad_zero(x, xp)
    per_card = xp.sum(xz[card_hands], axis=1)                                # [C, ...]
    s = per_card[hand_cards]                                                 # [H, 2, ...]
    return xp.sum(x, axis=0, keepdims=True) - s[:, 0] - s[:, 1] + (x if same is None else xz[same])


#: Rows of a bfloat16 matmul operand come in multiples of this: XLA:GPU pads each
#: operand to it (`compat_sums_dot`: a copy of the operand every time, unless it already is).
MATMUL_ROWS = 8


def card_matrix(hand_cards, num_cards: int = NUM_CARDS, xp=jnp):
    """`[R, H]` in `DENSE_DTYPE`: row `c < C` is 1 at the hands holding card `c`, row `C`
    all ones (the total), the rest zeros up to `R`, `C + 1` rounded up to `MATMUL_ROWS`
    (`compat_sums_dot`'s matrix as XLA would pad it). `PublicGame.card_matrix` holds it
    (`xp=numpy` at build time), so the iteration does not rebuild it: XLA does not hoist
    it out of a loop, an output larger than its input."""
    H = hand_cards.shape[0]
    held = (hand_cards[:, :, None] == xp.arange(num_cards, dtype=hand_cards.dtype)).any(axis=1)   # [H, C]
    pad = -(-(num_cards + 1) // MATMUL_ROWS) * MATMUL_ROWS - num_cards - 1
    return xp.concatenate([held.T, xp.ones((1, H), bool), xp.zeros((pad, H), bool)]).astype(DENSE_DTYPE)


def compat_sums_dot(x, hand_cards, num_cards: int = NUM_CARDS, axis: int = 0, parts=None, matrix=None):
    """`compat_sums` along `axis` (the hands' axis of `x`), with the per-card sums and the
    total as a matmul by `card_matrix` (in float32 of the three bfloat16 parts of
    `bfloat16_parts`: exact products, float32 accumulation; other dtypes at full
    precision): off the CPU, where the gathered reduction of `compat_sums` was fused into
    its consumer's loop and recomputed for every hand. The hands stay where they
    are in `x` (no transpose to hand-major). Equal to `compat_sums` to rounding.

    `parts`: float32 `x`'s three parts already made, `[3, *x.shape]` bfloat16 (`x` then
    `None`: their sum, exact), as a kernel writes them (`cfrjax.public.turn_kernel`): one
    matmul of their rows as they lie, where XLA otherwise splits `x` and concatenates the
    parts into its operand every iteration.

    `matrix`: `card_matrix(hand_cards, num_cards)` already built (`PublicGame.card_matrix`)."""
    m = (card_matrix(hand_cards, num_cards) if matrix is None else matrix).astype(DENSE_DTYPE)   # [R, H]
    if parts is not None:
        t = jnp.tensordot(parts, m, axes=([axis + 1], [1]), preferred_element_type=jnp.float32)
        sums = (t[0] + t[1]) + t[2]
        x = (parts[0].astype(jnp.float32) + parts[1].astype(jnp.float32)) + parts[2].astype(jnp.float32)
    elif x.dtype == jnp.float32:
        sums = sum(jnp.tensordot(p, m, axes=([axis], [1]), preferred_element_type=jnp.float32)
                   for p in bfloat16_parts(x))
    else:
        sums = jnp.tensordot(x, m.astype(x.dtype), axes=([axis], [1]), precision=jax.lax.Precision.HIGHEST)
    sums = jnp.moveaxis(sums, -1, axis)                                       # [..., R at axis, ...]
    # Card indices are in range, unsigned and clipped (XLA's own gather semantics): no
    # bounds mask or negative-index select, which XLA:GPU recomputed for each card column
    # every iteration (two kernels).
    per_card = lambda k: jnp.take(sums, hand_cards[:, k].astype(jnp.uint32), axis=axis, mode="clip")   # noqa: E731
    return jax.lax.slice_in_dim(sums, num_cards, num_cards + 1, axis=axis) - per_card(0) - per_card(1) + x


def _gather_rows(a, index):
    """`a[index]` along the leading axis: `index [n]` shared by every column of `a [R, ...]`,
    or per subgame `index [n, nb]` against `a [R, Q, nb]` (board tables batch-last, one
    column of indices per subgame) -> `[n, Q, nb]`."""
    if index.ndim == 1:
        return a[index]
    return jnp.take_along_axis(a, index[:, None, :], axis=0)


def _showdown_sorted_hm(board: dict, x, cpu: bool, plan):
    """One board: hand-major `x [H, Q]` -> `D [H, Q]` (module docstring).

    The tables are one board's (`sd_sorted [H]`, ...) or, batch-last, one board per
    subgame (`sd_sorted [H, *batch]`, `sd_card_sorted [C, M, *batch]`, `sd_index [H, 6,
    *batch]`: `cfrjax.games.poker.boards`), the batch axes being the trailing axes of `Q`.
    `plan`: the game's `cfrjax.plan.Plan` (from how many subgames the batch-first form runs;
    `None` for one board's tables, which never run batch-first)."""
    H = x.shape[0]
    C, M = board["sd_card_sorted"].shape[:2]
    nb = _subgames(board)
    shape = x.shape
    if _batch_first(board, cpu, plan):
        return _showdown_batch_first(board, x.reshape((H, -1, nb)), cpu).reshape(shape)
    if nb:
        x = x.reshape((H, -1, nb))
    flat = lambda t, n: t.reshape((n,) + ((nb,) if nb else ()))             # noqa: E731
    xz = _pad_zero(x)
    index = jnp.concatenate([flat(board["sd_sorted"], H), flat(board["sd_card_sorted"], C * M)])
    gathered = _gather_rows(xz, index)
    prefix = exclusive_prefix(gathered[:H], cpu)                              # [H + 1, Q]
    cprefix = exclusive_prefix(jnp.swapaxes(gathered[H:].reshape((C, M) + x.shape[1:]), 0, 1), cpu)   # [M + 1, C, Q]
    g = prefix - 0.5 * prefix[-1:]
    neg_d = jnp.swapaxes(0.5 * cprefix[-1:] - cprefix, 0, 1).reshape((C * (M + 1),) + x.shape[1:])
    table = jnp.concatenate([g, neg_d])
    if cpu:
        table = _materialise(table)
    # Six rows per hand, all added (the card terms are stored negated). A reduction, not
    # adds: XLA would fuse adds with the transpose that follows and gather single numbers.
    if not nb:
        out = jnp.sum(table[board["sd_index"]], axis=1)
        # On CPU the hand-major sums are written out before `_rows` moves the hands back:
        # fused with that transpose, the gather ran in node-major order, one number per
        # gathered row of Q (slower).
        return _materialise(out) if cpu else out
    rows = _gather_rows(table, flat(board["sd_index"], H * 6))
    return jnp.sum(rows.reshape((H, 6) + x.shape[1:]), axis=1).reshape(shape)


#: One board per subgame off the CPU, from `Plan.batch_first_min_subgames` subgames (1):
#: the sorted showdown runs batch-first (`_showdown_batch_first`): faster than batch-last
#: from one subgame on (measured on an H200; `bench/README.md`).


def _showdown_batch_first(board: dict, x, cpu: bool):
    """`x [H, Q, nb]` (one board per subgame, batch-last) -> `D [H, Q, nb]`, computed
    batch-first with flat row gathers.

    `x` is transposed to `[nb H, Q]` (each subgame's rows together) with one zero row
    after them all (the target of padded card-list entries), and every gather is a plain
    row gather from that flat array or from the flat `[nb R, Q]` table, its indices the
    subgame's table entries plus the subgame's row offset. Batch-last, neighbouring
    subgames gather from rows `nb * Q` numbers apart, which a GPU reads uncoalesced;
    gathered per subgame under `vmap` (the earlier form), XLA kept `x` in place (the
    transpose became a layout change, the gathers read it strided) and built `[nb, H, 6,
    2]` (subgame, row) index pairs every iteration. The barriers keep both
    transposes and the offset indices and gathered rows materialised (not fused into the
    gathers, or the gathers into the prefix sums, which recomputed them per window).
    The same additions in the same order as the batch-last form (bit for bit). On an
    NVIDIA GPU, float32 runs `_showdown_kernel` instead (`showdown_diff`)."""
    H, Q, nb = x.shape
    C, M = board["sd_card_sorted"].shape[:2]
    R = H + 1 + C * (M + 1)                                                  # table rows per subgame

    def rows_of(t, n, stride, padded=False):
        """Subgame-major `[nb, n]` flat row indices of table `t` (`[n, nb]` batch-last),
        `stride` rows per subgame; in a `padded` table (card lists) an entry `H` is the
        zero row `nb H`."""
        t = jnp.moveaxis(t.reshape(n, nb), -1, 0)
        rows = t + stride * jnp.arange(nb, dtype=t.dtype)[:, None]
        return jax.lax.optimization_barrier(jnp.where(t == H, nb * H, rows) if padded else rows)
    xt = jax.lax.optimization_barrier(jnp.moveaxis(x, -1, 0))                # [nb, H, Q]
    flat = jnp.concatenate([xt.reshape(nb * H, Q), jnp.zeros((1, Q), x.dtype)])
    gathered = jax.lax.optimization_barrier(flat[rows_of(board["sd_sorted"], H, H)])   # [nb, H, Q]
    cards = jax.lax.optimization_barrier(flat[rows_of(board["sd_card_sorted"], C * M, H, padded=True)])
    cards = cards.reshape(nb, C, M, Q)
    prefix = exclusive_prefix(gathered, cpu, axis=1)                         # [nb, H + 1, Q]
    cprefix = exclusive_prefix(cards, cpu, axis=2)                           # [nb, C, M + 1, Q]
    g = prefix - 0.5 * prefix[:, -1:]
    neg_d = (0.5 * cprefix[:, :, -1:] - cprefix).reshape(nb, C * (M + 1), Q)
    table = jnp.concatenate([g, neg_d], axis=1).reshape(nb * R, Q)
    picked = table[rows_of(board["sd_index"], H * 6, R)]                     # [nb, 6 H, Q]
    out = jax.lax.optimization_barrier(jnp.sum(picked.reshape(nb, H, 6, Q), axis=2))   # [nb, H, Q]
    # Transposed back through a flat copy: kept `[nb, H, Q]` in memory (a layout change),
    # the terminal values around it were transposed to match and read strided.
    return jax.lax.optimization_barrier(jnp.moveaxis(out, 0, -1).reshape(-1)).reshape(H, Q, nb)


def _subgames(board: dict) -> int:
    """How many subgames have their own board tables (`sd_sorted [H, *batch]`); 0 for one board."""
    tb = board["sd_sorted"].shape[1:]
    return int(np.prod(tb)) if tb else 0


def _batch_first(board: dict, cpu: bool, plan) -> bool:
    """Whether the sorted showdown runs batch-first: subgames with their own boards, off the
    CPU, at least `plan.batch_first_min_subgames` of them (then as `_showdown_kernel` where
    it is used, else `_showdown_batch_first`)."""
    nb = _subgames(board)
    return not cpu and nb > 0 and nb >= plan.batch_first_min_subgames


def _showdown_kernel(board: dict, r, plan):
    """`r [K, L, H, *batch]` (one board per subgame) -> `Wk - St`, same shape, by
    `cfrjax.public.showdown_kernel` (float32 on NVIDIA GPUs): the same table as
    `_showdown_batch_first`, equal to rounding.

    The kernel works node-major per subgame (`[nb, Q, H]`, a program per node row), so
    both transposes, from batch-last and back, are 2-D (`[Q H, nb]` <-> `[nb, Q H]`),
    which XLA tiles. The transposed input is pinned as a flat array: left to XLA, the
    layouts made the transpose a no-op and the reach's producer (the forward pass's path
    products) wrote it batch-first, a loop reading the batch-last reach strided. Pinned,
    the producer fuses into the tiled transpose; pinning its batch-last side too wrote the
    reach out first (slower)."""
    H, nb = r.shape[2], _subgames(board)
    Q = r.size // (H * nb)
    x = r.reshape(Q, H, nb)
    x = jax.lax.optimization_barrier(jnp.transpose(x, (2, 0, 1)).reshape(-1)).reshape(nb, Q, H)
    out = showdown_kernel.showdown(x, *_tables_first(board, H), **_kernel_options(plan))
    return jax.lax.optimization_barrier(jnp.transpose(out, (1, 2, 0)).reshape(-1)).reshape(r.shape)


def _showdown_kernel_one_board(board: dict, r, plan):
    """`r [K, L, H, *batch]` at the showdowns of one board (tables `sd_sorted [H]`, ...) ->
    `Wk - St`, same shape, by `cfrjax.public.showdown_kernel` as one subgame whose nodes
    are the `K L *batch` rows. Mapped over a turn's river boards (`cfrjax.public.passes`
    maps `vmap` over them off the CPU), the boards become the kernel's subgames: one
    launch for every board's showdowns."""
    H = r.shape[2]
    x = jnp.moveaxis(r, 2, -1)                                               # [K, L, *batch, H]
    out = showdown_kernel.showdown(x.reshape(1, -1, H), board["sd_sorted"][None],
                                   board["sd_card_sorted"][None], board["sd_index"][None], **_kernel_options(plan))
    return jnp.moveaxis(out.reshape(x.shape), -1, 2)


def _kernel_options(plan) -> dict:
    """`showdown_kernel.showdown`'s implementation arguments under `plan`."""
    return dict(cuda=plan.cuda_showdown, interpret="showdown" in plan.interpret)


def _tables_first(board: dict, H: int) -> tuple:
    """A board per subgame's tables (batch-last, `sd_sorted [H, *batch]`, ...) with the
    subgames in front: `(sorted [nb, H], cards [nb, C, M], index [nb, H, 6])`, as the
    showdown kernels take them (`_showdown_kernel`, `_showdown_native_per_subgame`)."""
    nb = _subgames(board)
    C, M = board["sd_card_sorted"].shape[:2]
    first = lambda t, *n: jnp.moveaxis(t.reshape(n + (nb,)), -1, 0)          # noqa: E731
    return first(board["sd_sorted"], H), first(board["sd_card_sorted"], C, M), first(board["sd_index"], H, 6)


def _showdown_native_per_subgame(board: dict, r):
    """`r [K, L, H, *batch]` with a board per subgame (tables batch-last, `sd_sorted [H,
    *batch]`, ...) -> `Wk - St`, same shape, by the native showdown
    (`cfrjax.public.native`): each subgame's rows hand-major and its tables in front
    (`[nb, H, K L]`, `[nb, H]`, ...), one call for all of them."""
    K, L, H = r.shape[:3]
    nb = _subgames(board)
    x = jnp.transpose(r.reshape(K, L, H, nb), (3, 2, 0, 1)).reshape(nb, H, K * L)
    out = native.showdown(x, *_tables_first(board, H))
    return jnp.transpose(out.reshape(nb, H, K, L), (2, 3, 1, 0)).reshape(r.shape)


def _materialise(x):
    """`x`, written to memory by a scatter of its rows: XLA:CPU fuses a gather's producers
    into the gather and recomputes them for every gathered element (here the prefix
    sums' last levels, pads and transposes, six times per hand), and fuses a transpose
    after it into the gather's loop; a scatter is fused neither into its consumer nor
    with its producer's consumers, so each side runs as a plain loop over memory (bit
    for bit the same values)."""
    rows = jnp.arange(x.shape[0])
    return jnp.zeros_like(x).at[rows].set(x, indices_are_sorted=True, unique_indices=True)


def _rows(r, fn):
    """Apply `fn` to `r [T, L, H, *batch]` hand-major (`[H, Q]`) and restore the shape."""
    x = jnp.moveaxis(r, 2, 0)                                                # [H, T, L, *batch]
    out = fn(x.reshape((x.shape[0], -1))).reshape(x.shape)
    return jnp.moveaxis(out, 0, 2)


def dense_used(game, cpu: bool) -> bool:
    """Whether the dense terminal form is used (`PublicGame.terminals`) on this platform."""
    if game.terminals == "dense" and game.dense_showdown is None:
        raise ValueError("terminals='dense' needs the dense matrices; build the game with terminals='dense'")
    if game.terminals == "sorted" or game.dense_showdown is None:
        return False
    return game.terminals == "dense" or not cpu


def dense_apply(m, x):
    """`m @ x` for a dense terminal matrix `m [H, H]` of -1, 0 and 1 in `DENSE_DTYPE`
    (`dense_tables`) and `x [H, Q]`, in `x`'s dtype (`compat_sums_dot` multiplies the
    same parts by its small card matrix along any axis).

    float32: `x = hi + mid + lo` exactly with three bfloat16 parts (each takes the next 8
    significant bits of what is left; float32 has 24), so `m @ x` is one bfloat16 matmul
    of `m` by `[hi, mid, lo]` (`[H, 3 Q]`) whose products are all exact, accumulated in
    float32, and the three column blocks summed: float32's accuracy (a different
    summation order) from half the matrix bytes, on tensor cores. Other dtypes (float64
    evaluation): `m` cast to `x`'s dtype (exact) and a full-precision matmul."""
    if x.dtype != jnp.float32:
        return jnp.matmul(m.astype(x.dtype), x, precision=jax.lax.Precision.HIGHEST)
    q = x.shape[-1]
    out = jnp.matmul(m.astype(jnp.bfloat16), jnp.concatenate(bfloat16_parts(x), axis=-1),
                     preferred_element_type=jnp.float32)
    return (out[..., :q] + out[..., q:2 * q]) + out[..., 2 * q:]




def dense_paired(game, cpu: bool) -> bool:
    """Whether a forest's folds and showdowns run as one matmul (`dense_pair`): the dense
    form on one board (several would broadcast the shared compat matrix per board), an
    unraked game (a raked showdown adds a compat product) with both kinds of terminal,
    where the game's plan has it (`Plan.dense_pair`)."""
    return (plan_of(game).dense_pair and game.num_boards == 1 and not game.raked and dense_used(game, cpu)
            and game.forest_fold_node.shape[0] > 0 and game.forest_showdown_node.shape[0] > 0)


def dense_pair(compat_m, showdown_m, r_fold, r_sd):
    """`(fold_compat, showdown_diff)` of the dense form in one batched matmul: the two
    matrices `[H, H]` stacked `[2, H, H]` (loop-invariant: XLA builds the stack once,
    outside the iteration loop) times the fold and showdown reach, hand-major and padded
    to one width. One spot's full-range river on a GPU runs two skinny matmuls and their
    operand pads per (half-)iteration otherwise, each a launch of a few microseconds
    where the iteration is launches.

    Args:
      compat_m, showdown_m: `dense_compat` and one board's `dense_showdown`, `[H, H]`.
      r_fold, r_sd: opponent reach `[F, L, H, *batch]` at the folds, `[K, L, H, *batch]`
        at the showdowns.

    Returns:
      `(C [F, L, H, *batch], D [K, L, H, *batch])`, each column as `dense_apply` gives it.
    """
    xf, xs = (jnp.moveaxis(r, 2, 0) for r in (r_fold, r_sd))                # [H, T, L, *batch]
    a, b = (x.reshape((x.shape[0], -1)) for x in (xf, xs))                   # [H, Qf], [H, Qs]
    width = max(a.shape[1], b.shape[1])
    x = jnp.stack([jnp.pad(y, ((0, 0), (0, width - y.shape[1]))) for y in (a, b)])   # [2, H, width]
    out = dense_apply(jnp.stack([compat_m, showdown_m]), x)                  # [2, H, width]
    return tuple(jnp.moveaxis(o[:, :y.shape[1]].reshape(z.shape), 0, 2) for o, y, z in zip(out, (a, b), (xf, xs)))


def bfloat16_parts(x):
    """`(hi, mid, lo)`, bfloat16, with `hi + mid + lo == x` exactly for float32 `x` (each
    part rounds what the previous ones left; a float32 difference of a number and its
    rounding is exact).

    The roundings are `reduce_precision` to bfloat16's bits, in float32, and only the
    exact results are converted: XLA:GPU, which may keep excess precision, folds a
    round trip `x.astype(bfloat16).astype(float32)` into `x` inside a jitted program,
    which made `rest` zero and the product bfloat16-accurate (relative error 1e-3 on an
    H200; the split is tested under `jit`)."""
    def rounded(v):
        return jax.lax.reduce_precision(v, exponent_bits=8, mantissa_bits=7)
    hi = rounded(x)
    rest = x - hi
    mid = rounded(rest)
    return hi.astype(jnp.bfloat16), mid.astype(jnp.bfloat16), (rest - mid).astype(jnp.bfloat16)


def fold_compat(game, r, cpu: bool):
    """`r [F, L, H, *batch]` opponent reach at fold terminals -> `C [F, L, H, *batch]`
    (the compatible reach; a raked game's showdowns use it too)."""
    if r.shape[0] == 0:
        return r
    if dense_used(game, cpu):
        return _rows(r, lambda x: dense_apply(game.dense_compat, x))
    if not cpu:
        return compat_sums_dot(r, game.hand_cards, game.card_hands.shape[0], axis=2, matrix=game.card_matrix)
    return _rows(r, lambda x: compat_sums(_materialise(x), game.hand_cards, game.card_hands))


def fold_values(game, r, row, inv_z, cpu: bool):
    """`fold_compat(game, r, cpu) * row * inv_z`: fold terminals' values from the opponent
    reach `r [F, L, H, *batch]`, `row [F, L, 1, ...]` (stake and sign per fold row) and
    `inv_z` (`[1, 1, 1, *batch]`, each subgame's `1 / Z`). Batches of spots (no dense
    matrices) on an NVIDIA GPU run `cfrjax.public.fold_kernel` (one pass, batch-last)."""
    plan = plan_of(game)
    if not cpu and not dense_used(game, cpu) and row.size == r.shape[0] * r.shape[1] and fold_kernel.used(r, plan):
        pairs = fold_kernel.pair_table(game.hand_cards, game.card_hands.shape[0])
        return fold_kernel.fold_values(r, pairs, row.reshape(row.shape[:2]), inv_z.reshape(inv_z.shape[3:]),
                                       interpret="fold" in plan.interpret)
    return fold_compat(game, r, cpu) * row * inv_z


def showdown_diff(game, board: dict, r, cpu: bool):
    """`r [K, L, H, *batch]` opponent reach at one board's showdowns -> `Wk - St`, same shape.

    `board`: that board's slices of the tables (`sd_sorted [H]`, `sd_card_sorted [C, M]`,
    `sd_index [H, 6]`, and `dense_showdown [H, H]` when used)."""
    if r.shape[0] == 0:
        return r
    if dense_used(game, cpu):
        return _rows(r, lambda x: dense_apply(board["dense_showdown"], x))
    plan = plan_of(game)
    if _batch_first(board, cpu, plan) and showdown_kernel.used(r, plan):
        return _showdown_kernel(board, r, plan)
    if not cpu and not _subgames(board) and showdown_kernel.used(r, plan):
        return _showdown_kernel_one_board(board, r, plan)
    if cpu and plan.native:
        if not _subgames(board):
            return _rows(r, lambda x: native.showdown(x, board["sd_sorted"], board["sd_card_sorted"], board["sd_index"]))
        return _showdown_native_per_subgame(board, r)
    # On CPU the reach is written out first: fused into the gathers below, it would be
    # recomputed (the forward pass's path products) for every gathered row.
    return _rows(r, lambda x: _showdown_sorted_hm(board, _materialise(x) if cpu else x, cpu, plan))
