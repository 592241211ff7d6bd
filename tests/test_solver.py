"""Solver mechanics: jit = no jit, scan = steps (bitwise on CPU), vmap = loop, float32 defaults,
the averaging horizon, evaluation traces, and the paper's float32 convergence anchors."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import background
import cfrjax
from cfrjax.iteration import running_mean_update
from selection import cases

# Every rule x order (with the rule's default averaging), and the foundation rules with
# uniform averaging too.
COMBOS = ([(rule, "linear", order) for rule in cfrjax.rules.RULES for order in cfrjax.rules.ORDERS]
          + [(rule, "uniform", order) for rule in ("cfr", "cfr+") for order in cfrjax.rules.ORDERS])


@pytest.fixture(scope="module")
def kuhn():
    return cfrjax.load_game("kuhn_poker")


# Default suite: the rule families with a discount or a prediction, both orders (uniform
# averaging's scan and vmap run in test_parity's OpenSpiel CFRSolver cases).
FAST_COMBOS = [("cfr+", "linear", "alternating"), ("dcfr", "linear", "simultaneous"),
               ("pdcfr+", "linear", "alternating")]


@pytest.mark.parametrize("rule,averaging,order", cases(COMBOS, FAST_COMBOS, unpack=True))
def test_jit_scan_vmap_equivalence(kuhn, rule, averaging, order):
    state = cfrjax.init(kuhn, rule=rule, order=order, averaging=averaging)
    jitted = jax.jit(cfrjax.step)
    stepped = state
    trajectory = [state]  # the jitted iterates
    for _ in range(5):
        stepped = jitted(kuhn, stepped)
        trajectory.append(stepped)
    eager = state  # op by op (slow to dispatch): two iterations, the second from non-zero regrets
    for _ in range(2):
        eager = cfrjax.step(kuhn, eager)
    chex.assert_trees_all_close(eager, trajectory[2], atol=1e-15, rtol=0)
    scanned = cfrjax.solve(kuhn, state, 5)
    chex.assert_trees_all_equal(scanned, stepped)  # bitwise on CPU

    # vmap over a batch of states equals a loop over them (states after 0, 1 and 3 of the
    # jitted steps: no further executable to compile).
    batch = [trajectory[k] for k in (0, 1, 3)]
    stacked = jax.tree.map(lambda *x: jnp.asarray(np.stack([np.asarray(a) for a in x])), *batch)
    out = jax.vmap(cfrjax.step, in_axes=(None, 0))(kuhn, stacked)
    for i, k in enumerate((0, 1, 3)):
        chex.assert_trees_all_close(jax.tree.map(lambda x: x[i], out), trajectory[k + 1], atol=1e-15, rtol=0)


@pytest.mark.fixed_order
def test_scan_equals_steps_on_leduc_float32():
    game = cfrjax.load_game("leduc_poker")
    state = cfrjax.init(game, rule="cfr+", order="alternating", dtype="float32")
    jitted = jax.jit(cfrjax.step)
    stepped = state
    for _ in range(20):
        stepped = jitted(game, stepped)
    chex.assert_trees_all_equal(cfrjax.solve(game, state, 20), stepped)


def test_unrolled_scan_equals_plain_and_only_small_solves_off_cpu_unroll(kuhn, monkeypatch):
    """`run_steps` unrolls a small solve's scan off the CPU (`driver.scan_unroll`): the
    unrolled scan gives the plain one's state bit for bit (forced here on the CPU), and
    only small solves traced for an accelerator unroll."""
    from cfrjax import driver
    state = cfrjax.init(kuhn, rule="pcfr+", order="alternating")
    monkeypatch.setattr(driver, "scan_unroll", lambda s: driver.SMALL_SOLVE_UNROLL)
    unrolled = jax.jit(lambda g, s: driver.run_steps(g, s, 23))(kuhn, state)   # traced under the patch
    monkeypatch.undo()
    chex.assert_trees_all_equal(unrolled, jax.jit(lambda g, s: driver.run_steps(g, s, 23))(kuhn, state))
    big = dataclasses.replace(state, regret=jnp.zeros((driver.SMALL_SOLVE_ENTRIES + 1,)))
    assert driver.scan_unroll(state) == 1                                   # the CPU
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert driver.scan_unroll(state) == driver.SMALL_SOLVE_UNROLL and driver.scan_unroll(big) == 1


def test_step_does_not_retrace(kuhn):
    traces = []

    @jax.jit
    def counted(game, state):
        traces.append(1)
        return cfrjax.step(game, state)

    state = cfrjax.init(kuhn)
    for _ in range(4):
        state = counted(kuhn, state)
    assert len(traces) == 1


def test_eval_trace(kuhn):
    state = cfrjax.init(kuhn, order="alternating")
    final, trace = cfrjax.solve_with_trace(kuhn, state, 250, eval_every=100)
    np.testing.assert_array_equal(np.asarray(trace.iteration), [100, 200, 250])
    plain = cfrjax.solve(kuhn, state, 250)
    chex.assert_trees_all_equal(final, plain)
    direct = cfrjax.exploitability(kuhn, cfrjax.average_policy(kuhn, plain))
    assert float(trace.exploitability[-1]) == pytest.approx(float(direct), rel=1e-12)
    assert np.all(np.diff(np.asarray(trace.exploitability)) < 0)


@pytest.mark.fixed_order
@pytest.mark.parametrize("name,expected", [("kuhn_poker", 2.83e-3), ("leduc_poker", 6.65e-3)])
def test_paper_simultaneous_cfr_plus_float32(name, expected):
    """tab:convergence, simultaneous CFR+ (float32, 1,000 iterations), to 3 significant figures."""
    game = cfrjax.load_game(name)
    state = cfrjax.solve(game, cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear",
                                           dtype="float32"), 1000)
    eps = float(cfrjax.exploitability(game, cfrjax.average_policy(game, state)))
    assert float(f"{eps:.3g}") == expected


def test_linear_average_does_not_stall_in_float32():
    """Proposition 4: an unnormalized float32 sum of t * y_t stops absorbing small late terms.

    Two actions: for t <= 1e5 both are played with reach-weighted mass 1, afterwards only
    action 0 with mass 1e-4 (its information set is rarely reached). The exact linear
    average gives action 0 a share just above 1/2; the naive float32 sum stalls at 1/2
    exactly, the running mean keeps absorbing.
    """
    T, switch = 10**6, 10**5
    t = np.arange(1, T + 1, dtype=np.float64)
    y = np.stack([np.where(t <= switch, 1.0, 1e-4), np.where(t <= switch, 1.0, 0.0)], axis=1)
    exact = (t[:, None] * y).sum(0)
    exact_share = exact[0] / exact.sum()

    def run(update):
        def body(carry, inp):
            ti, yi = inp
            return update(carry, ti, yi), None
        carry, _ = jax.lax.scan(body, init, (jnp.asarray(t, jnp.float32), jnp.asarray(y, jnp.float32)))
        return carry

    init = (jnp.zeros(2, jnp.float32), jnp.zeros((), jnp.float32))
    naive = run(lambda c, ti, yi: (c[0] + ti * yi, c[1]))[0]
    mean = run(lambda c, ti, yi: (running_mean_update(c[0], yi, ti, c[1] + ti), c[1] + ti))[0]
    naive_share = float(naive[0] / naive.sum())
    ours_share = float(mean[0] / mean.sum())
    late = exact_share - 0.5  # what the iterations after the switch contribute
    assert abs(naive_share - 0.5) < 1e-7 and late > 2e-3  # the naive sum stalled: the failure mode is real
    assert abs(ours_share - exact_share) < 0.02 * late  # the running mean absorbed (>98% of) it


_FLOAT32_DEFAULT = textwrap.dedent("""
    import cfrjax
    g = cfrjax.load_game("kuhn_poker")
    s = cfrjax.solve(g, cfrjax.init(g), 10)
    assert s.regret.dtype.name == "float32" and s.config.dtype == "float32", s.regret.dtype
    try:
        cfrjax.init(g, dtype="float64")
    except ValueError as e:
        assert "jax_enable_x64" in str(e)
    else:
        raise SystemExit("float64 without x64 was accepted")
    print("ok")
""")

# The subprocess runs in the background from the start of the session (tests/background.py).
BACKGROUND = {"float32_default": lambda: subprocess.run([sys.executable, "-c", _FLOAT32_DEFAULT], capture_output=True,
                                                        text=True, timeout=300)}


@pytest.mark.background("float32_default")
def test_float32_default_without_x64():
    """Without jax_enable_x64 the solver runs in float32 and refuses float64 with a clear message."""
    out = background.result(__name__, "float32_default")
    assert out.returncode == 0 and "ok" in out.stdout, out.stderr


@pytest.mark.parametrize("kwargs,bad", [(dict(rule="cfr++"), "cfr++"), (dict(order="sequential"), "sequential"),
                                        (dict(averaging="cubic"), "cubic"), (dict(dtype="int8"), "int8")])
def test_config_rejects_bad_values(kuhn, kwargs, bad):
    with pytest.raises((ValueError, TypeError), match=bad):
        cfrjax.init(kuhn, **kwargs)


def test_save_load_round_trip(tmp_path, kuhn):
    path = tmp_path / "kuhn.npz"
    cfrjax.save_game(kuhn, path)
    loaded = cfrjax.load_game(str(path))
    chex.assert_trees_all_equal(loaded, kuhn)
    assert loaded.labels.infoset_keys == kuhn.labels.infoset_keys
    s1 = cfrjax.solve(kuhn, cfrjax.init(kuhn), 7)
    s2 = cfrjax.solve(loaded, cfrjax.init(loaded), 7)
    chex.assert_trees_all_equal(s1, s2)


def test_xla_options_apply_where_outermost(kuhn):
    """`cfrjax.xla_options.jit`: the solve compiles with `XLA_OPTIONS` (no YNNPACK fusion
    on CPU) when called directly, and plain (JAX refuses nested compiler options) inside
    a jit of one's own, also one closing over a concrete game and state, with the same results (on CPU bit for bit; a GPU's double-buffered
    loop may fuse, hence round, differently)."""
    from cfrjax import driver, xla_options
    state = cfrjax.init(kuhn)
    direct = cfrjax.solve(kuhn, state, 20)
    nested = jax.jit(lambda g, s: cfrjax.solve(g, s, 20))(kuhn, state)
    closed = jax.jit(lambda: cfrjax.solve(kuhn, state, 20))()   # game and state closed over, concrete
    for other in (nested, closed):
        if jax.default_backend() == "cpu":
            chex.assert_trees_all_equal(direct, other)
        else:
            chex.assert_trees_all_close(direct, other, rtol=1e-6, atol=1e-9)
    if jax.default_backend() == "cpu":
        from cfrjax.games.poker import PokerSubgameSpec
        from cfrjax.games.poker.public_tree import build_public
        game = build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", pot=20, stack=100, range0="AA,KK,QQ",
                                             range1="JJ,TT,AK", bet_fractions=(1.0,)))  # terminal sums: YNN
        s = cfrjax.init(game)
        assert "__ynn_fusion" not in driver._solve.lower(game, s, 2, None).compile().as_text()
        assert xla_options.XLA_OPTIONS["xla_cpu_experimental_ynn_fusion_type"] == ""


def _small_river(terminals: str = "auto"):
    """A small river spot in the public form (no OpenSpiel: these tests run on a GPU too)."""
    from cfrjax.games.poker import PokerSubgameSpec
    from cfrjax.games.poker.public_tree import build_public
    return build_public(PokerSubgameSpec(board="Ks Js Th 7d 2c", pot=20, stack=100, range0="AA,KK", range1="JJ,AK",
                                         bet_fractions=(1.0,)), terminals=terminals)


def test_a_game_adds_its_compiler_options():
    """`PublicGame.compiler_options(config)` reach the compile of its solve
    (`xla_options.jit`, told the state's configuration): Triton GEMM fusions off for
    sorted terminals, for the paired dense product (`terminals.dense_paired`) under
    simultaneous order, and for a spot `cfrjax.public.spot_kernel` runs (DCFR, the
    default rule, in either order); XLA's choice for the paired product under
    alternating order otherwise (PCFR+ here) or an unknown one; sorted and dense compile
    their own executables, with equal results."""
    from cfrjax import driver
    games = {t: _small_river(t) for t in ("sorted", "dense")}
    off = (("xla_gpu_enable_triton_gemm", False),)
    want = {("sorted", "simultaneous", "dcfr"): False, ("sorted", "alternating", "dcfr"): False,
            ("dense", "simultaneous", "pcfr+"): False, ("dense", "alternating", "pcfr+"): "default",
            ("dense", "alternating", "dcfr"): False}
    for (t, order, rule), triton in want.items():
        state = cfrjax.init(games[t], order=order, rule=rule, dtype="float32")
        assert games[t].compiler_options(state.config) == (() if triton == "default" else off), (t, order, rule)
        kvs = dict(driver._solve.lower(games[t], state, 2, None)._lowering._compiler_options_kvs)
        assert kvs.get("xla_gpu_enable_triton_gemm", "default") == triton, (t, order, rule)
        assert kvs["xla_gpu_enable_while_loop_double_buffering"] is True
    assert games["dense"].compiler_options() == () and games["sorted"].compiler_options() == off
    out = {t: cfrjax.solve(g, cfrjax.init(g), 5) for t, g in games.items()}
    chex.assert_trees_all_close(out["sorted"].avg, out["dense"].avg, rtol=1e-6, atol=1e-9)


def test_solves_are_lowered_with_one_location_per_operation():
    """`xla_options.FULL_TRACEBACKS = False`: a solve's HLO carries each operation's
    innermost frame, not its whole call stack (XLA:GPU formats those stacks for every
    kernel when it builds or reads back an executable). The same function lowered by a
    plain jit under JAX's default carries the stacks, down to this test's frame. (The same
    code either way: `test_bitwise_fixture` holds the solves to bits recorded before.)"""
    from cfrjax import driver, xla_options
    game = _small_river()
    state = cfrjax.init(game, rule="dcfr", order="alternating")
    assert xla_options.FULL_TRACEBACKS is False

    def solve(game, state, iterations, eval_every):   # a new function: nothing of it cached
        return driver._solve._fun(game, state, iterations, eval_every)

    plain = jax.jit(solve, static_argnames=("iterations", "eval_every")).lower(game, state, 4, None)
    ours = driver._solve.lower(game, state, 4, None)
    here = os.path.basename(__file__)   # a caller's frame: in a whole call stack, not in the innermost frame
    assert here not in ours.as_text(debug_info=True)
    assert here in plain.as_text(debug_info=True)


def test_the_target_driven_solve_compiles_without_double_buffering():
    """A function's own options (`xla_options.jit(f, options=...)`) reach its compile over
    `XLA_OPTIONS`: the target-driven solve's chunks turn XLA:GPU's while-loop double
    buffering off, the fixed solve keeps it."""
    from cfrjax import driver
    game = _small_river()
    state = cfrjax.init(game, rule="dcfr", order="alternating")
    with jax.enable_x64(True):
        target = driver._chunk.lower(game, state, 2)
    fixed = driver._solve.lower(game, state, 4, None)
    kvs = [dict(low._lowering._compiler_options_kvs) for low in (target, fixed)]
    assert kvs[0]["xla_gpu_enable_while_loop_double_buffering"] is False
    assert kvs[1]["xla_gpu_enable_while_loop_double_buffering"] is True
    assert kvs[0]["xla_cpu_experimental_ynn_fusion_type"] == kvs[1]["xla_cpu_experimental_ynn_fusion_type"] == ""


def test_donated_solve_is_the_same_solve(kuhn, rule="pcfr+", order="alternating"):
    """`donate=True` (fixed, target-driven and chunked solves) gives the same states bit for
    bit, and takes over the state's slot arrays only (deleted on CPU, which honours
    donation; the prediction and the players' halves of alternating order included); the
    scalars stay readable. A state whose slot arrays share one buffer
    (here regret and avg) is copied first, not refused."""
    fields = ("regret", "avg", "avg_comp") + (("prediction",) if rule == "pcfr+" else ())

    def same(a, b):
        assert all(np.asarray(getattr(a, f)).tobytes() == np.asarray(getattr(b, f)).tobytes() for f in fields)

    def fresh():
        return cfrjax.init(kuhn, rule=rule, order=order, dtype="float32")
    kept, given = fresh(), fresh()
    a, b = cfrjax.solve(kuhn, kept, 7), cfrjax.solve(kuhn, given, 7, donate=True)
    same(a, b)
    assert given.regret.is_deleted() and not kept.regret.is_deleted() and int(given.iteration) == 0
    shared = fresh()
    shared = dataclasses.replace(shared, avg=shared.regret)
    same(cfrjax.solve(kuhn, shared, 7, donate=True), a)
    run = cfrjax.solve_chunks(kuhn, fresh(), 14, eval_every=7, donate=True, check_memory=False)
    assert [chunk.iteration for chunk in run] == [7, 14]
    same(run.state, cfrjax.solve(kuhn, a, 7))
    (e, _), (f, _) = (cfrjax.solve_with_trace(kuhn, s, target_exploitability=0.0, max_iterations=10, donate=k)
                      for s, k in ((a, False), (b, True)))
    same(e, f)
