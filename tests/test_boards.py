"""Boards as data (`cfrjax.games.poker.boards`): a batch of river spots on different boards.

Checked: each board's hand list and strengths against the evaluator called hand by hand
(boards where the board plays, so that most hands tie, among random ones); the
vectorised showdown tables against the per-board loop they replaced and against each
board's own build; and a batch solve over different boards against one solve per board,
built afresh on its own board (float64): values and best responses under one random
profile, entry by entry, and regrets and averages after a few iterations.
"""

import dataclasses
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import cfrjax
from cfrjax.batch import batch_axes, batched_fields_of, init_batch, solve_batch
from cfrjax.games.poker import PokerSubgameSpec, boards as pb
from cfrjax.games.poker.cards import COMBOS, board_str, combos_blocked_by, parse_board
from cfrjax.games.poker.evaluator import evaluate
from cfrjax.games.poker.public_tree import build_public
from cfrjax.policy import normalize
from cfrjax.public import passes as pp
from cfrjax.public import terminals as pt

jax.config.update("jax_enable_x64", True)

#: Boards where the board plays for most hands (ties): a royal flush, quads (the kicker decides), broadway.
TIE_BOARDS = ("As Ks Qs Js Ts", "9c 9d 9h 9s 2c", "Ah Kd Qc Js Th")


def _boards(n, seed):
    rng = np.random.default_rng(seed)
    rand = np.sort(np.argsort(rng.random((n, 52)), axis=1)[:, :5], axis=1)
    return np.concatenate([np.stack([np.sort(parse_board(b)) for b in TIE_BOARDS]), rand])


def test_hands_and_strengths_are_the_evaluators():
    boards = _boards(5, 0)
    hands = pb.river_hands(boards)
    strength = pb.river_strengths(boards)
    for b, board in enumerate(boards):
        live = np.flatnonzero(~combos_blocked_by(board))
        assert np.array_equal(hands[b], live)
        want = np.array([evaluate(np.concatenate([board, COMBOS[h]])) for h in live])   # one hand at a time
        assert np.array_equal(strength[b], want), b
    # The board plays: every hand ties on the royal flush; on the quads only the kicker counts.
    assert np.unique(strength[0]).size == 1 and np.unique(strength[1]).size == 12


def _showdown_tables_loop(strength, hand_cards, card_hands):
    """The per-board loop `showdown_tables` was (reference)."""
    s = np.asarray(strength, np.int64)
    B, H = s.shape
    hc = np.asarray(hand_cards, np.int64)
    C, M = card_hands.shape
    order = np.argsort(s, axis=1, kind="stable")
    ss = np.take_along_axis(s, order, 1)
    big = int(s.max(initial=0)) + 1
    spad = np.concatenate([s, np.full((B, 1), big, np.int64)], axis=1)
    card_sorted = np.empty((B, C, M), np.int32)
    index = np.empty((B, H, 6), np.int64)
    for b in range(B):
        lt = np.searchsorted(ss[b], s[b], "left")
        le = np.searchsorted(ss[b], s[b], "right")
        sx = spad[b][card_hands]
        idx = np.argsort(sx, axis=1, kind="stable")
        card_sorted[b] = np.take_along_axis(card_hands, idx, 1)
        own = np.take_along_axis(sx, idx, 1)[hc]
        mine = s[b][:, None, None]
        lt_k, le_k = (own < mine).sum(-1), (own <= mine).sum(-1)
        base = H + 1 + hc * (M + 1)
        index[b] = np.stack([lt, le, base[:, 0] + lt_k[:, 0], base[:, 0] + le_k[:, 0],
                             base[:, 1] + lt_k[:, 1], base[:, 1] + le_k[:, 1]], axis=1)
    return {"sd_sorted": order.astype(np.int32), "sd_card_sorted": card_sorted, "sd_index": index.astype(np.int32)}


def test_vectorised_tables_equal_the_loop_and_each_boards_build():
    # A turn's boards (dead hands at -1, rows of different lengths) and river boards with ties.
    g = build_public(PokerSubgameSpec(board="Ks Js Th 7d", pot=10, stack=55, bet_fractions=(1.0,), raise_cap=0,
                                      range0="AA,KK,QQ,AK,T9s,76s", range1="any"), hands="range", terminals="sorted")
    rng = np.random.default_rng(1)
    strength = np.where(rng.random((6, g.num_hands)) < 0.1, -1, rng.integers(0, 30, (6, g.num_hands)))
    hc, ch = np.asarray(g.hand_cards), np.asarray(g.card_hands)
    for s in (strength, strength[:1], np.zeros((3, g.num_hands), np.int64)):
        want, got = _showdown_tables_loop(s, hc, ch), pt.showdown_tables(s, hc, ch)
        for k in want:
            assert got[k].dtype == np.int32 and np.array_equal(got[k], want[k]), k
    boards = _boards(2, 2)
    tables = pb.board_tables(boards, workers=2)
    assert np.array_equal(tables["hands"], pb.river_hands(boards))
    M = pb.CARD_HANDS.shape[1]
    for b, board in enumerate(boards):
        own = build_public(PokerSubgameSpec(board=board_str(board), pot=10, stack=55, bet_fractions=(1.0,),
                                            raise_cap=0), terminals="sorted")
        off = np.setdiff1d(np.arange(52), board)                     # position i -> card id
        assert np.array_equal(own.labels.hands, tables["hands"][b])
        assert np.array_equal(np.asarray(own.hand_cards), off[pb.HAND_CARDS])
        assert np.array_equal(np.asarray(own.sd_sorted)[0], tables["sd_sorted"][b, 0])
        assert np.array_equal(np.asarray(own.sd_card_sorted)[0][off], tables["sd_card_sorted"][b, 0])
        ix, mine = np.asarray(own.sd_index)[0], tables["sd_index"][b, 0]
        H = pb.RIVER_HANDS
        assert np.array_equal(ix[:, :2], mine[:, :2])
        assert np.array_equal((ix[:, 2:] - H - 1) % (M + 1), (mine[:, 2:] - H - 1) % (M + 1))


SPEC = PokerSubgameSpec(board="Ks Js Th 7d 2c", pot=10, stack=55, bet_fractions=(1.0,), raise_cap=0,
                        name="boards_test")


def _per_board(board, w):
    """The spot built on its own board, without labels (one executable for every board)."""
    g = build_public(dataclasses.replace(SPEC, board=board_str(board)), terminals="sorted", dtype="float64")
    return dataclasses.replace(pp.set_ranges(g, w[0], w[1]), labels=None)


@jax.jit
def _one(g, policy):
    """Values, best responses and 6 iterations of CFR+ of one board's game."""
    solved = cfrjax.solve(g, cfrjax.init(g, rule="cfr+", dtype="float64"), 6)
    return pp.hand_values(g, policy), pp.best_response_values(g, policy), solved.regret, solved.avg


def test_batch_over_boards_equals_one_solve_per_board():
    """Two boards, ranges and profiles in one batch (batch-last, the showdown tables
    gathered per subgame) against each board's own build; the tie boards are checked
    under a fixed profile only (with most hands tied, regrets sit at zero and the sign of
    a rounding error picks the next strategy, so two exact programs part ways)."""
    boards = _boards(1, 3)[[1, 3]]                 # the quads board (kickers tie) and a random board
    ties = 1                                          # the first `ties` are tie boards
    B = boards.shape[0]
    rng = np.random.default_rng(4)
    w = rng.random((B, 2, pb.RIVER_HANDS)) ** 4
    w /= w.sum(-1, keepdims=True)
    game = build_public(SPEC, terminals="sorted", dtype="float64")
    tables = pb.board_tables(boards)
    games = jax.vmap(pp.set_ranges, (None, 0, 0), batch_axes(game))(game, w[:, 0], w[:, 1])
    games = pb.set_boards(games, tables)
    assert batched_fields_of(games) == ("weights", "norm", "sd_sorted", "sd_card_sorted", "sd_index")
    for g in (game, games):   # the folds' card matrix follows the hand list it replaces
        assert np.array_equal(np.asarray(g.card_matrix), np.asarray(pt.card_matrix(g.hand_cards, g.card_hands.shape[0])))

    last = lambda x: jnp.moveaxis(x, 0, -1)   # noqa: E731
    batch_last = dataclasses.replace(games, **{f: last(getattr(games, f)) for f in batched_fields_of(games)})
    policy = jnp.stack([normalize(game, jnp.asarray(rng.random(game.slot_shape))) for _ in range(B)])
    values, br = jax.jit(lambda g, p: (pp.hand_values(g, p), pp.best_response_values(g, p)))(batch_last, last(policy))
    states = solve_batch(games, init_batch(game, B, rule="cfr+", dtype="float64"), 6)
    for b in range(B):
        v, r, regret, avg = _one(_per_board(boards[b], w[b]), policy[b])
        np.testing.assert_allclose(values[..., b], v, rtol=0, atol=1e-12)
        np.testing.assert_allclose(br[..., b], r, rtol=0, atol=1e-12)
        if b < ties:
            continue
        np.testing.assert_allclose(states.regret[b], regret, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(states.avg[b], avg, rtol=1e-9, atol=1e-9)


def test_set_boards_refuses_what_it_cannot_batch():
    with pytest.raises(ValueError, match="every live hand"):
        pb.set_boards(build_public(dataclasses.replace(SPEC, range0="AA", range1="KK"), hands="range"),
                      pb.board_tables(_boards(0, 0)))
    game = build_public(SPEC, terminals="sorted")
    t = pb.board_tables(_boards(1, 0))
    with pytest.raises(ValueError, match="sd_index"):
        pb.set_boards(game, dict(t, sd_index=t["sd_index"][:, :, :5]))
    with pytest.raises(ValueError, match="distinct"):
        pb.river_hands(np.array([[0, 0, 1, 2, 3]]))


def _padded_tables(nb: int, seed: int, combos: int = 300) -> dict:
    """Board-major sorted-showdown tables of `nb` random strength orders over a partial
    hand list (`combos` combos), whose card lists are padded (the river's full lists are not)."""
    rng = np.random.default_rng(seed)
    hand_cards = np.asarray(COMBOS)[np.sort(rng.choice(len(COMBOS), combos, replace=False))]
    card_hands = pt.card_table(hand_cards)
    assert (card_hands == len(hand_cards)).any()
    t = pt.showdown_tables(rng.integers(0, 40, (nb, len(hand_cards))), hand_cards, card_hands)
    return {k: v[:, None] for k, v in t.items()}


@pytest.mark.parametrize("lists", ["river", "padded"])
def test_batch_first_showdown_equals_batch_last(monkeypatch, lists):
    """The batch-first sorted showdown (accelerators) gives the batch-last form's numbers
    bit for bit on CPU, and each board's own one-board form's: on full river lists and on
    card lists with padding (its zero row). On a GPU, to 1e-12 of the sums' scale: there
    the test passed alone but failed bit for bit in a run of the whole file (session 27,
    `bench/results/gpu_test_run.txt`), separately compiled float64 programs not being
    bound to one rounding (as `tests/test_layout.py` found of scatter-adds)."""
    tables = pb.board_tables(_boards(2, 5)) if lists == "river" else _padded_tables(4, 5)
    nb, _, H = tables["sd_sorted"].shape
    board = {k: jnp.asarray(np.moveaxis(tables[k][:, 0], 0, -1)) for k in ("sd_sorted", "sd_card_sorted", "sd_index")}
    x = jnp.asarray(np.random.default_rng(3).random((H, 3, nb)))
    run = lambda n: jax.jit(lambda b, v: pt._showdown_sorted_hm(   # noqa: E731
        b, v, False, cfrjax.Plan(batch_first_min_subgames=n)))(board, x)
    first = np.asarray(run(0))
    last = np.asarray(run(nb + 1))
    one = np.stack([pt._showdown_sorted_hm({k: jnp.asarray(tables[k][i, 0]) for k in board}, x[..., i], False, None)
                    for i in range(nb)], -1)
    if jax.default_backend() == "cpu":
        assert np.array_equal(first, last) and np.array_equal(first, one)
    else:
        tol = 1e-12 * float(np.abs(np.asarray(x)).sum(axis=0).max())
        np.testing.assert_allclose(first, last, rtol=0, atol=tol)
        np.testing.assert_allclose(first, one, rtol=0, atol=tol)


def _showdown_kernel_form(cuda: bool, **fields):
    """A plan with the showdown kernel in one form: the CUDA kernel (`cfrjax.public.
    cuda_showdown`, an NVIDIA GPU with `nvcc` only: skipped elsewhere) or the Pallas one
    (compiled on an NVIDIA GPU, else in Pallas's interpreter); `fields`: more of the plan."""
    from cfrjax.public import cuda_showdown
    if cuda and not cuda_showdown.available():
        pytest.skip(f"the CUDA showdown kernel is not available: {cuda_showdown.why_unavailable()}")
    gpu = jax.default_backend() == "gpu"
    return cfrjax.Plan(pallas=("showdown",) if gpu else (), interpret=() if gpu else ("showdown",), cuda_showdown=cuda,
                       **fields)


def _runs_cuda(fn, *args) -> bool:
    """Whether `fn`'s lowering calls the CUDA showdown kernel."""
    return "CfrjaxShowdownCuda" in jax.jit(fn).lower(*args).as_text()


@pytest.mark.parametrize("cuda", [False, True], ids=["pallas", "cuda"])
def test_one_board_showdown_kernel_under_vmap_equals_the_xla_form(cuda, monkeypatch):
    """A turn's river boards, mapped over with `vmap` as `cfrjax.public.passes` maps them
    off the CPU, run their showdowns as the showdown kernel (`_showdown_kernel_form`),
    each board a subgame of one call: the one-board XLA form's
    values to float32 rounding, against float64, also under a second `vmap` over ranges
    (one set of tables: the ranges become more nodes) and over tables (more subgames),
    and on one board unmapped."""
    from cfrjax.public import showdown_kernel
    tables = _padded_tables(2, 7, combos=120)
    tb = {k: jnp.asarray(tables[k][:, 0]) for k in ("sd_sorted", "sd_card_sorted", "sd_index")}   # [B, ...]
    B, H = tb["sd_sorted"].shape
    game = types.SimpleNamespace(terminals="sorted", dense_showdown=None, plan=_showdown_kernel_form(cuda))
    r = jnp.asarray(np.random.default_rng(1).random((B, 2, 1, H, 3)), jnp.float32)     # per board [K, L, H, batch]
    f = lambda b, v: pt.showdown_diff(game, b, v, False)                               # noqa: E731

    def kernel_calls(fn, *args):
        """Shapes of the reach going into each showdown kernel call of `fn`'s trace."""
        jaxpr = jax.make_jaxpr(fn)(*args).jaxpr
        return [e.invars[0].aval.shape for e in jaxpr.eqns if e.primitive.name == "custom_vmap_call"]

    exact = np.stack([np.asarray(pt._rows(jnp.asarray(r[i], jnp.float64), lambda x: pt._showdown_sorted_hm(
        {k: tb[k][i] for k in tb}, x, False, None))) for i in range(B)]) if jax.config.jax_enable_x64 else None
    r_first = jnp.moveaxis(r, -1, 0)                                                  # [3, B, K, L, H]
    stacked = jax.tree.map(lambda t: jnp.stack([t] * 3), tb)
    by_ranges, by_tables = jax.vmap(jax.vmap(f), in_axes=(None, 0)), jax.vmap(jax.vmap(f))
    # One kernel call each, the mapped axes folded into its subgames or nodes.
    assert kernel_calls(jax.vmap(f), tb, r) == [(B, 6, H)]
    assert kernel_calls(by_ranges, tb, r_first) == [(B, 6, H)]
    assert kernel_calls(by_tables, stacked, r_first) == [(3 * B, 2, H)]
    assert _runs_cuda(jax.vmap(f), tb, r) == cuda
    runs = {"boards": jax.jit(jax.vmap(f))(tb, r),
            "ranges": jnp.moveaxis(jax.jit(by_ranges)(tb, r_first), 0, -1),
            "tables": jnp.moveaxis(jax.jit(by_tables)(stacked, r_first), 0, -1),
            "one": jax.jit(f)({k: tb[k][0] for k in tb}, r[0])[None]}
    scale = float(np.abs(np.asarray(r)).sum(axis=3).max())
    for name, got in runs.items():
        want = exact[:len(got)] if exact is not None else np.asarray(runs["boards"])[:len(got)]
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-6 * scale, err_msg=name)
    game.plan = cfrjax.Plan()                                                         # no kernel: the XLA form
    xla = np.asarray(jax.jit(jax.vmap(f))(tb, r))
    assert not np.array_equal(np.asarray(runs["boards"]), xla)                       # the kernel ran, not the XLA form


def test_compat_sums_as_a_matmul_equal_the_gathered_sums():
    """`compat_sums_dot` (off the CPU: the per-card sums and the total as one matmul of a
    0/1 card matrix), with the hands on the first axis or another, equals `compat_sums`
    and a float64 product with the compatibility matrix, on a hand list in no order with
    some pairs missing, in float32 (to rounding) and float64."""
    rng = np.random.default_rng(2)
    hand_cards = rng.permutation([(a, b) for a in range(9) for b in range(a + 1, 9)]).astype(np.int32)[:-4]
    hand_cards[::3] = hand_cards[::3, ::-1]
    H = len(hand_cards)
    x = rng.random((H, 3, 4))
    exact = np.einsum("hk,k...->h...", pt.compat_matrix(hand_cards).astype(np.float64), x)
    hc, ch = jnp.asarray(hand_cards), jnp.asarray(pt.card_table(hand_cards, 9))
    for dtype, tol in ((jnp.float32, 1e-6), (jnp.float64, 1e-13)):
        if dtype == jnp.float64 and not jax.config.jax_enable_x64:
            continue
        xd = jnp.asarray(x, dtype)
        dot = jax.jit(pt.compat_sums_dot, static_argnums=2)(xd, hc, 9)
        along = jax.jit(pt.compat_sums_dot, static_argnums=(2, 3))(jnp.moveaxis(xd, 0, 1), hc, 9, 1)   # hands on axis 1
        built = pt.card_matrix(hand_cards, 9, xp=np)                            # as a game holds it
        assert built.shape == (16, H) and np.array_equal(built, np.asarray(pt.card_matrix(hc, 9)))
        given = jax.jit(lambda v: pt.compat_sums_dot(v, hc, 9, matrix=jnp.asarray(built)))(xd)
        gathered = jax.jit(pt.compat_sums)(xd, hc, ch)
        assert dot.dtype == dtype
        for got in (dot, jnp.moveaxis(along, 1, 0), given, gathered):
            np.testing.assert_allclose(np.asarray(got), exact, rtol=0, atol=tol * np.abs(exact).max())


def test_fold_kernel_equals_the_xla_form(monkeypatch):
    """The Pallas fold kernel (compiled on an NVIDIA GPU, else in Pallas's interpreter)
    gives the compatible reach times stake and `1 / Z` of the XLA form to float32
    rounding, against a float64 matrix product, on a hand list in no order with some
    pairs of cards missing, and `fold_values` runs it exactly where it is used
    (batch-last subgames, a multiple of its block)."""
    from cfrjax.public import fold_kernel
    rng = np.random.default_rng(5)
    hand_cards = rng.permutation([(a, b) for a in range(9) for b in range(a + 1, 9)]).astype(np.int32)  # 36 hands
    hand_cards[::2] = hand_cards[::2, ::-1]                                     # in any order, cards either way
    hand_cards = hand_cards[:-3]                                                # and some pairs not hands
    H = len(hand_cards)
    gpu = jax.default_backend() == "gpu"
    off = cfrjax.Plan()
    on = cfrjax.Plan(pallas=("fold",) if gpu else (), interpret=() if gpu else ("fold",),
                     fold_min_subgames=0)     # compiled at this size too on a GPU
    game = types.SimpleNamespace(terminals="sorted", dense_showdown=None, hand_cards=jnp.asarray(hand_cards),
                                 card_hands=jnp.asarray(pt.card_table(hand_cards, 9)), card_matrix=None, plan=off)
    r = jnp.asarray(rng.random((3, 2, H, 2, 64)), jnp.float32)                # [F, L, H, *batch]
    row = jnp.asarray(rng.normal(size=(3, 2, 1, 1, 1)), jnp.float32)
    inv_z = jnp.asarray(rng.random((1, 1, 1, 2, 64)) + 0.5, jnp.float32)
    values = lambda v: np.asarray(jax.jit(lambda v: pt.fold_values(game, v, row, inv_z, False))(v))   # noqa: E731
    assert not fold_kernel.used(r, off)
    xla = values(r)
    game.plan = on
    assert fold_kernel.used(r, on) and not fold_kernel.used(r[..., :40], on)
    assert not fold_kernel.used(r.astype(jnp.bfloat16), on)
    kernel = values(r)
    direct = np.asarray(jax.jit(fold_kernel.fold_values, static_argnames="interpret")(
        r, fold_kernel.pair_table(hand_cards[:, ::-1], 9), row[:, :, 0, 0, 0], inv_z[0, 0, 0], interpret=not gpu))
    compat = pt.compat_matrix(hand_cards).astype(np.float64)
    exact = np.einsum("hk,flk...->flh...", compat, np.asarray(r, np.float64)) * np.asarray(row) * np.asarray(inv_z)
    scale = float(np.abs(exact).max())
    np.testing.assert_allclose(kernel, exact, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(xla, exact, rtol=0, atol=1e-6 * scale)
    assert np.array_equal(kernel, direct) and not np.array_equal(kernel, xla)


@pytest.mark.parametrize("cuda, rows", [(False, 1), (False, 2), (True, 1), (True, 2), (True, 4)],
                         ids=["pallas-1", "pallas-2", "cuda-1", "cuda-2", "cuda-4"])
def test_showdown_kernels_equal_the_xla_form(cuda, rows, monkeypatch):
    """The showdown kernel (`_showdown_kernel_form`) gives the XLA batch-first form's
    values to float32 rounding, on padded card lists, and `showdown_diff` runs it exactly
    where it is used; with several of a subgame's rows per program (Pallas) or block
    (CUDA) too, five rows a subgame: a last block of one."""
    from cfrjax.public import cuda_showdown, showdown_kernel
    monkeypatch.setattr(showdown_kernel, "FEW_PROGRAMS_BLOCKS", showdown_kernel.FEW_PROGRAMS_BLOCKS[:3] + (rows,))
    monkeypatch.setattr(cuda_showdown, "ROWS", rows)
    tables = _padded_tables(2, 7, combos=150)
    nb, _, H = tables["sd_sorted"].shape
    board = {k: jnp.asarray(np.moveaxis(tables[k][:, 0], 0, -1)) for k in ("sd_sorted", "sd_card_sorted", "sd_index")}
    r = jnp.asarray(np.random.default_rng(4).random((5, 1, H, nb)), jnp.float32)     # [K, L, H, nb]
    off = cfrjax.Plan(batch_first_min_subgames=0)
    game = types.SimpleNamespace(terminals="sorted", dense_showdown=None, plan=off)
    diff = lambda b, v: jax.jit(lambda b, v: pt.showdown_diff(game, b, v, False))(b, v)   # noqa: E731 (traced per call)
    assert not showdown_kernel.used(r, off)
    xla = np.asarray(diff(board, r))
    on = game.plan = _showdown_kernel_form(cuda, batch_first_min_subgames=0)
    assert showdown_kernel.used(r, on)
    assert not showdown_kernel.used(r.astype(jnp.float64) if jax.config.jax_enable_x64 else 0 * r.astype(jnp.bfloat16), on)
    kernel = np.asarray(diff(board, r))
    assert _runs_cuda(lambda b, v: pt.showdown_diff(game, b, v, False), board, r) == cuda
    direct = np.asarray(jax.jit(lambda b, v: pt._showdown_kernel(b, v, on))(board, r))
    exact = np.stack([pt._rows(jnp.asarray(r[..., i], jnp.float64), lambda x: pt._showdown_sorted_hm(
        {k: jnp.asarray(tables[k][i, 0]) for k in board}, x, False, None)) for i in range(nb)], -1) \
        if jax.config.jax_enable_x64 else xla
    scale = float(np.abs(np.asarray(r)).sum(axis=2).max())
    np.testing.assert_allclose(kernel, exact, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(kernel, xla, rtol=0, atol=1e-6 * scale)
    assert np.array_equal(kernel, direct) and not np.array_equal(kernel, xla)
    assert not np.array_equal(kernel, np.zeros_like(kernel))
