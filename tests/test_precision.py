"""Reported numbers are float64-accurate whatever the iteration dtype.

A float32 solve (a separate process without `jax_enable_x64`, as a user runs it) reports
exploitability and value through `cfrjax.evaluate`, `solve_with_trace(..., eval_every=...)` traces
and the target-exploitability stop; each must equal a float64 evaluation of the same
average policy on a game built in float64 (this process) to 1e-7 relative or 1e-9 of the
pot, whichever is larger.
"""

import atexit
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import background
import cfrjax
from selection import cases

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIVER = os.path.join(ROOT, "games", "hunl_river.toml")
# (name, source, load kwargs, pot or None (then 1: chips of the game's own scale), iterations,
#  whether the float32 game stores its data exactly: the tabular poker subgame stores deal
#  probabilities w0 w1 / Z rounded to float32, off by up to 3e-7 relative, which no
#  evaluation can undo; its numbers are checked against the same data widened)
CASES = [
    ("leduc", "leduc_poker", {}, None, 60, True),
    ("liars_dice", "liars_dice", {}, None, 4, True),
    ("river_tabular", RIVER, {"form": "tabular", "random_hands": 30}, 20.0, 40, False),
    ("river_public", RIVER, {"form": "public"}, 20.0, 40, True),
]


def _float32_runs(names):
    """Run the `CASES` named in float32 in a fresh process; `(its results, the directory of its arrays)`."""
    work = tempfile.TemporaryDirectory(prefix="cfrjax-test-f32-")
    atexit.register(work.cleanup)
    out = pathlib.Path(work.name)
    code = textwrap.dedent(f"""
        import json, sys, numpy as np, jax
        assert not jax.config.jax_enable_x64
        import cfrjax
        cases = json.loads(sys.argv[1])
        res = {{}}
        for name, source, kw, pot, iters, exact in cases:
            g = cfrjax.load_game(source, **kw)
            s0 = cfrjax.init(g, rule="cfr+", order="simultaneous", dtype="float32")
            s, tr = cfrjax.solve_with_trace(g, s0, iters, eval_every=iters // 2)
            e, v = cfrjax.evaluate(g, s)
            st, tt = cfrjax.solve_with_trace(g, s0, eval_every=iters // 2, target_exploitability=1e-12, max_iterations=iters)
            np.save(f"{out}/{{name}}.npy", np.asarray(s.avg))
            cfrjax.save_game(g, f"{out}/{{name}}.game.npz") if hasattr(g, "num_decision_edges") else None
            res[name] = dict(e=float(e), v=float(v), trace_e=float(tr.exploitability[-1]),
                             trace_v=float(tr.value[-1]), target_e=float(tt.exploitability[-1]),
                             dtypes=[str(tr.exploitability.dtype), str(s.avg.dtype)], precision=tr.precision,
                             bitwise=bool(np.array_equal(np.asarray(s.avg), np.asarray(st.avg))))
        print(json.dumps(res))
    """)
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    proc = subprocess.run([sys.executable, "-c", code, json.dumps([c for c in CASES if c[0] in names])],
                          capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)
    return proc, out


# The float32 runs, in the background from the start of the session (tests/background.py):
# the default suite's cases (Leduc and the public river spot) in one process, each slow
# case (Liar's Dice, the tabular river) in its own.
FAST = ("leduc", "river_public")


def _job(name):
    return "float32_fast" if name in FAST else f"float32_{name}"


BACKGROUND = {_job(c[0]): functools.partial(_float32_runs, FAST if c[0] in FAST else (c[0],)) for c in CASES}


def _float32_result(name):
    proc, out = background.result(__name__, _job(name))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), out


@pytest.mark.parametrize("case", cases(CASES, FAST, key=lambda c: c[0],
                                       marks=lambda c: [pytest.mark.background(_job(c[0]))]),
                         ids=[c[0] for c in CASES])
def test_float32_solve_reports_float64_numbers(case):
    name, source, kw, pot, _, exact = case
    res, out = _float32_result(name)
    r = res[name]
    assert r["dtypes"] == ["float64", "float32"] and r["precision"] == "float64"
    assert r["bitwise"]                      # the x64-traced evaluation leaves the iteration untouched
    # float64 leaves (this process has x64): built from the source, or the float32 game's data widened
    game = cfrjax.load_game(source, **kw) if exact else cfrjax.load_game(str(out / f"{name}.game.npz"))
    avg = jnp.asarray(np.load(out / f"{name}.npy").astype(np.float64))
    policy = cfrjax.policy.normalize(game, avg)
    e64, v64 = float(cfrjax.exploitability(game, policy)), float(cfrjax.expected_value(game, policy))
    scale = (pot or 1.0) if exact else 0.0  # same data: 1e-7 relative alone
    for got, want in ((r["e"], e64), (r["trace_e"], e64), (r["target_e"], e64), (r["v"], v64), (r["trace_v"], v64)):
        assert abs(got - want) <= max(1e-7 * abs(want), 1e-9 * scale), (name, got, want)


def test_evaluate_matches_exploitability_in_float64():
    game = cfrjax.load_game("kuhn_poker")
    s = cfrjax.solve(game, cfrjax.init(game, dtype="float64"), 30)
    e, v = cfrjax.evaluate(game, s)
    assert e.dtype == np.float64
    assert e == float(cfrjax.exploitability(game, cfrjax.average_policy(game, s)))
    assert v == float(cfrjax.expected_value(game, cfrjax.average_policy(game, s)))
