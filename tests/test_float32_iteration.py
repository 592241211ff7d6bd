"""Float32 iterations as accurate as float64 where precision, not the trajectory, decides.

The float32 running mean of the average strategy is compensated (`SolverState.avg_comp`,
`cfrjax.iteration.compensated_mean_update`): without it, Kuhn PCFR+ alternating with
quadratic averaging reached 6.56e-7 after 1,000 float32 iterations against 2.37e-8 in
float64, every increment below half a float32 spacing of the mean being rounded away.

Kuhn PCFR+ *simultaneous* is not asserted here: its trajectory is chaotic (float64 runs
from regrets perturbed by 1e-7 after 10 iterations end anywhere in 3.5e-5 .. 4.6e-4, the
float32 run at 2.75e-4), so no float32 iteration reproduces float64's 3.58e-5
(bench/precision.py, bench/results/precision_t9.jsonl).
"""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import background
from cfrjax.iteration import compensated_mean_update, running_mean_update

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Kuhn PCFR+ alternating, quadratic averaging, 1,000 float64 iterations: exploitability
#: (float64, CPU; tests/test_bitwise_fixture.py keeps float64 solves bit for bit).
KUHN_PCFR_ALTERNATING_FLOAT64 = 2.3746944910474355e-08


def _kuhn_float32():
    """Kuhn PCFR+ alternating quadratic, 1,000 float32 iterations, in a process without x64."""
    code = textwrap.dedent("""
        import json, jax, cfrjax
        assert not jax.config.jax_enable_x64
        g = cfrjax.load_game("kuhn_poker")
        s = cfrjax.init(g, rule="pcfr+", order="alternating", averaging="quadratic", dtype="float32")
        s = cfrjax.solve(g, s, 1000)
        print(json.dumps(dict(e=float(cfrjax.evaluate(g, s)[0]), dtype=str(s.avg.dtype), comp=str(s.avg_comp.dtype))))
    """)
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)


BACKGROUND = {"kuhn_float32": _kuhn_float32}


@pytest.mark.background("kuhn_float32")
def test_kuhn_pcfr_alternating_float32_as_accurate_as_float64():
    proc = background.result(__name__, "kuhn_float32")
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["dtype"] == "float32" and r["comp"] == "float32"    # on CPU the compensation is float32 (bfloat16 on a GPU)
    assert r["e"] <= 1.3 * KUHN_PCFR_ALTERNATING_FLOAT64, r  # 2.49e-8; 6.56e-7 before the compensation


@jax.jit
def _means(y):
    """Quadratic-weight running means of `y` `[T, S]` (float32): float64 reference, plain and
    compensated float32, the latter with its low part kept in float32 and in bfloat16 (as
    `SolverState.avg_comp`); the weights `b_t / W_t` in float32 for all."""
    def body(carry, yt):
        ref, plain, hi, lo, hi16, lo16, w, t = carry
        t = t + 1
        b = t * t
        w = w + b
        m16, l16 = compensated_mean_update(hi16, lo16.astype(jnp.float32), yt, b, w)
        return (running_mean_update(ref, yt.astype(jnp.float64), b.astype(jnp.float64), w.astype(jnp.float64)),
                running_mean_update(plain, yt, b, w), *compensated_mean_update(hi, lo, yt, b, w),
                m16, l16.astype(jnp.bfloat16), w, t), None

    z32 = jnp.zeros(y.shape[1:], jnp.float32)
    init = (z32.astype(jnp.float64), z32, z32, z32, z32, z32.astype(jnp.bfloat16), jnp.float32(0), jnp.float32(0))
    (ref, plain, hi, lo, hi16, lo16, _, _), _ = jax.lax.scan(body, init, y)
    return ref, plain, hi, lo, hi16, lo16


def test_compensated_mean_keeps_the_increments_float32_rounds_away():
    t = np.arange(1, 2001, dtype=np.float64)[:, None]
    # near-converged strategies drifting slowly (1e-5 over the run), as late in a solve: each
    # increment (b_t / W_t)(y_t - M) ~ 4e-9 is below half a float32 spacing of M (~1.5e-8)
    y = np.array([0.3, 0.7, 1 / 3, 0.9]) + 1e-5 * t / 2000 + 1e-6 * np.sin(t * np.array([0.7, 1.3, 2.1, 0.2]))
    ref, plain, hi, lo, hi16, lo16 = (np.asarray(a, np.float64) for a in _means(jnp.asarray(y, jnp.float32)))
    ulp = np.spacing(np.float32(ref)).astype(np.float64)
    assert np.all(np.abs(hi - ref) <= ulp)                      # `avg`: the mean rounded to float32
    assert np.all(np.abs(hi + lo - ref) <= 1e-3 * ulp)          # `avg + avg_comp`: far below float32's spacing
    # bfloat16's 8 bits of the low part: `avg` still the mean rounded, `avg + avg_comp` within 1/64 spacing
    assert np.all(np.abs(hi16 - ref) <= ulp) and np.all(np.abs(hi16 + lo16 - ref) <= ulp / 64)
    assert np.min(np.abs(plain - ref) / ulp) > 50               # the plain float32 mean stalls (115-215 spacings)
