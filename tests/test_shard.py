"""Sharded batch solving (cfrjax.shard) on 4 fake CPU devices, in a subprocess.

XLA fixes the number of CPU devices at process start, so the checks run in a fresh
interpreter with `jax_num_cpu_devices = 4`; the subprocess prints one JSON line. It runs
in the background from the start of the session (`tests/background.py`).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import background

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = textwrap.dedent(r'''
    import dataclasses, json
    import jax
    jax.config.update("jax_num_cpu_devices", 4)
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np
    import cfrjax
    from cfrjax import batch, shard

    out = {"devices": jax.device_count()}
    g0 = cfrjax.load_game("kuhn_poker")
    B, T = 8, 12
    rng = np.random.default_rng(0)
    lo, hi = g0.level_start[1], g0.level_start[2]
    probs = rng.dirichlet(np.ones(hi - lo), size=B)
    scale = rng.uniform(0.5, 2.0, size=(B, 1))

    def batched(g):
        games = jax.vmap(cfrjax.set_root_chance, (None, 0), cfrjax.batch_axes(g))(g, probs)
        return dataclasses.replace(games, payoff=games.payoff * scale, template=games.template * scale)

    def equal(a, b):
        return all(bool(np.array_equal(np.asarray(x), np.asarray(y))) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))

    def close(a, b):
        return max(float(np.max(np.abs(np.asarray(x, float) - np.asarray(y, float)))) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))

    def unsharded(games, states, width):
        # cfrjax.solve_batch on one device, `width` subgames per call
        parts = []
        for i in range(0, B, width):
            gi = dataclasses.replace(games, **{k: getattr(games, k)[i:i + width] for k in batch.batched_fields_of(games)})
            parts.append(cfrjax.solve_batch(gi, jax.tree.map(lambda x: x[i:i + width], states), T))
        return jax.tree.map(lambda *xs: jnp.concatenate(xs), *parts)

    # each subgame's arithmetic does not depend on the batch width
    for label, g in (("default", g0),):
        games = batched(g)
        for order in ("simultaneous", "alternating"):
            states = batch.init_batch(g, B, rule="cfr+", order=order)
            res = shard.solve_sharded(games, states, T)
            key = f"{label}.{order}"
            out[key + ".full"] = equal(res, unsharded(games, states, B))
            out[key + ".per_device"] = equal(res, unsharded(games, states, B // 4))
            out[key + ".maxdiff"] = close(res, unsharded(games, states, B))
            out[key + ".devices"] = sorted({len(x.sharding.device_set) for x in jax.tree.leaves(res)})
            out[key + ".spec"] = sorted({tuple(x.sharding.spec) for x in jax.tree.leaves(res)})
            # continue from the sharded output (stays on the mesh, no re-placement); T more
            # iterations: the executable above again (compiling dominates on a CPU)
            res2 = shard.solve_sharded(games, res, T)
            out[key + ".iteration"] = np.asarray(res2.iteration).tolist()

    # no collectives in the compiled program (the one just run: the last order's; its
    # executable read back from the session's compilation cache); index arrays replicated
    mesh = shard.batch_mesh()
    games, states = shard.place(batched(g0), batch.init_batch(g0, B, rule="cfr+", order="alternating"), mesh)
    hlo = shard._solve_sharded.lower(games, states, T, mesh, batch.batched_fields_of(games)).compile().as_text()
    out["collectives"] = [c for c in ("all-reduce", "all-gather", "all-to-all", "collective-permute", "reduce-scatter")
                          if c in hlo]
    out["index_replicated"] = games.parent.sharding.is_fully_replicated and len(games.parent.sharding.device_set) == 4
    out["template_spec"] = tuple(games.template.sharding.spec)

    # payoff-only batch: other float leaves stay shared
    pg = dataclasses.replace(g0, payoff=jnp.stack([g0.payoff * s for s in scale[:, 0]]),
                             template=jnp.stack([g0.template * s for s in scale[:, 0]]))
    out["inferred"] = list(batch.batched_fields_of(pg))
    r = shard.solve_sharded(pg, batch.init_batch(g0, B), 5)
    out["payoff_only_ok"] = bool(np.all(np.isfinite(np.asarray(r.avg))))

    errs = {}
    for name, call in {
        "not_multiple": lambda: shard.solve_sharded(
            dataclasses.replace(games, **{k: getattr(games, k)[:6] for k in batch.batched_fields_of(games)}),
            batch.init_batch(g0, 6), 2),
        "mismatch": lambda: shard.solve_sharded(games, batch.init_batch(g0, 4), 2),
        "bad_field": lambda: shard.solve_sharded(games, states, 2, batched_fields=("parent",)),
        "unbatched": lambda: shard.solve_sharded(g0, batch.init_batch(g0, 4), 2),
    }.items():
        try:
            call()
            errs[name] = None
        except ValueError as e:
            errs[name] = str(e)
    out["errors"] = errs
    print("RESULT " + json.dumps(out))
''')


def _run_script():
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-c", _SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


# The subprocess runs in the background from the start of the session (tests/background.py).
BACKGROUND = {"script": _run_script}
pytestmark = pytest.mark.background("script")


@pytest.fixture(scope="module")
def result():
    proc = background.result(__name__, "script")
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_four_devices(result):
    assert result["devices"] == 4


@pytest.mark.parametrize("order", ["simultaneous", "alternating"])
def test_sharded_equals_unsharded_vmap_bitwise(result, order):
    # equal to one jax.vmap over the whole batch on one device, and at the per-device width
    assert result[f"default.{order}.full"]
    assert result[f"default.{order}.per_device"]
    assert result[f"default.{order}.maxdiff"] == 0.0


@pytest.mark.parametrize("label", ["default"])
def test_output_sharded_over_four_devices(result, label):
    for order in ("simultaneous", "alternating"):
        assert result[f"{label}.{order}.devices"] == [4]
        assert result[f"{label}.{order}.spec"] == [["batch"]]
        assert result[f"{label}.{order}.iteration"] == [24] * 8


def test_no_cross_device_traffic(result):
    assert result["collectives"] == []
    assert result["index_replicated"]
    assert result["template_spec"] == ["batch"]


def test_payoff_only_batch(result):
    assert result["inferred"] == ["template", "payoff"]
    assert result["payoff_only_ok"]


def test_errors(result):
    e = result["errors"]
    assert "not a multiple of the mesh's 4 devices" in e["not_multiple"]
    assert "inconsistent batch axis" in e["mismatch"]
    assert "not float leaves" in e["bad_field"]
    assert "no batched float leaf" in e["unbatched"]
