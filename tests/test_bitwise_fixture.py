"""Refactors change no bit: solver outputs equal those recorded at the pre-refactor commit.

`tests/fixtures/bitwise.npz` was written by `tests/fixtures/make_bitwise.py` at commit
440acb2 (before the two-forms refactor); this test recomputes every case with the same
script and compares exactly (`np.array_equal`, or the SHA-256 of the bytes for long
arrays). CPU only: the fixture holds the CPU's scatter-lowering rounding.
"""

import os

import numpy as np
import pytest

from fixtures import make_bitwise as mb
from selection import cases

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "bitwise.npz")

pytestmark = pytest.mark.fixed_order


@pytest.fixture(scope="module")
def recorded():
    with np.load(FIXTURE) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def games():
    return {}


# Default suite: one case each of Kuhn, Leduc, the river spec and the Libratus endgame,
# between them both orders, four rules and every hook (prediction, discounting, clamping);
# the other cases are slow.
FAST = [("kuhn", "cfr+", "simultaneous", "linear", 12), ("leduc", "pdcfr+", "alternating", "linear", 6),
        ("hunl_river", "dcfr", "alternating", "linear", 7), ("libratus4_top6", "pcfr+", "alternating", "linear", 6)]
assert set(FAST) <= set(mb.CASES)


@pytest.mark.parametrize("case", cases(mb.CASES, FAST), ids=mb.case_key)
def test_bitwise_equal_to_pre_refactor(case, recorded, games):
    name = case[0]
    if name not in games:
        source, kw = mb.SUITE[name]
        games[name] = mb.cfrjax.load_game(source, **kw)
    got = mb.run_case(games[name], *case[1:])
    for k, v in got.items():
        key = f"{mb.case_key(case)}/{k}"
        if key in recorded:
            want = recorded[key]
            assert v.dtype == want.dtype and np.array_equal(v, want), (key, np.max(np.abs(v - want)))
        else:
            assert np.array_equal(v[:64], recorded[key + "#head"]), key
            assert mb.digest(v) == bytes(recorded[key + "#sha256"]).decode(), key


# The suite's own code generation (tests/codegen.py) against XLA's default, on both forms:
# tabular Leduc in float64, the public river spot in float32 (its terminals' sorted sums
# and the compensated average are where an emitter's loop order would show).
CODEGEN_CASES = [("leduc", "pdcfr+", "alternating", "float64", 9), ("hunl_river_public", "dcfr", "alternating", "float32", 5)]


@pytest.mark.parametrize("case", CODEGEN_CASES, ids=lambda c: "-".join(map(str, c)))
def test_suite_code_generation_equals_xlas_default(case, games):
    """What the suite's XLA:CPU flags compile computes XLA's default code's bits."""
    import jax

    from cfrjax import driver, xla_options
    from cfrjax.locking import drop_idle_locks
    from codegen import xla_default_codegen

    if not xla_default_codegen():
        pytest.skip("the suite compiles with XLA's default code generation")
    name, rule, order, dtype, iterations = case
    if name not in games:
        source, kw = mb.SUITE.get(name) or (mb.SUITE["hunl_river"][0], {"form": "public"})
        games[name] = mb.cfrjax.load_game(source, **kw)
    game = games[name]
    state = drop_idle_locks(mb.cfrjax.init(game, rule=rule, order=order, dtype=dtype))[0]
    suite = mb.cfrjax.solve(game, state, iterations)
    default = jax.jit(driver._solve._fun, static_argnames=("iterations", "eval_every"),
                      compiler_options={**xla_options.XLA_OPTIONS, **xla_default_codegen()})(game, state, iterations,
                                                                                             None)[0]
    for a, b in zip(jax.tree.leaves(suite), jax.tree.leaves(default), strict=True):
        assert a.dtype == b.dtype and np.array_equal(np.asarray(a), np.asarray(b)), name
