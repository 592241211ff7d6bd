"""`cfrjax.public.spot_kernel`: a one-board dense spot's (half-)iteration as two Pallas
kernels around its matmul. Run in Pallas's interpreter on CPU (compiled on an NVIDIA GPU),
against the XLA passes of the same solve."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from selection import cases

import cfrjax
from cfrjax.games.poker.public_tree import build_public
from cfrjax.public import spot_kernel
from test_public_form import hunl_river

GPU = jax.default_backend() == "gpu"


@pytest.fixture(scope="module")
def river():
    """The shipped river spot with one bet size (9 nodes, 8 slots, 1,081 hands), dense
    terminals, with ranges of its own for each player (not the same weight on every
    hand)."""
    g = build_public(dataclasses.replace(hunl_river(), bet_fractions=(1.0,)), hands="all", terminals="dense")
    rng = np.random.default_rng(3)
    w = rng.uniform(0.2, 1.0, (2, g.num_hands)) * (rng.uniform(size=(2, g.num_hands)) < 0.8)
    return cfrjax.public.set_ranges(g, *w)


def kernels_plan(name: str, on: bool) -> cfrjax.Plan:
    """The auto plan with Pallas kernel `name` on (compiled on an NVIDIA GPU, else in
    Pallas's interpreter) or off; off, the XLA passes' generic updates also on a CPU (not
    the CPU's fused updates, which the kernels replace where they run)."""
    auto = cfrjax.plan.resolve_plan()
    if on:
        return dataclasses.replace(auto, interpret=() if GPU else (name,))
    return dataclasses.replace(auto, pallas=tuple(k for k in auto.pallas if k != name), native_half=False,
                               cpu_spot_half=False)


def _solve(game, state, n, enabled: bool):
    """`n` iterations under the plan with the spot kernels on or off."""
    def run(g, s):
        return jax.lax.fori_loop(0, n, lambda i, s: cfrjax.step(g, s), s)
    game = cfrjax.plan.use(game, kernels_plan("spot", enabled))
    return jax.jit(run)(game, state), str(jax.make_jaxpr(run)(game, state))


# The locked DCFR alternating case by default; CFR+ simultaneous unlocked slow (in Pallas's
# interpreter on a CPU each case takes about 10 s; tests/test_kernels.py runs the kernels
# against the XLA passes too).
@pytest.mark.parametrize("rule,order,locked", cases([("cfr+", "simultaneous", False), ("dcfr", "alternating", True)],
                                                    [("dcfr", "alternating", True)], unpack=True))
def test_kernels_equal_the_xla_passes(river, rule, order, locked, monkeypatch):
    """Regrets, average and its compensation after 6 iterations: the kernels' equal the
    XLA passes' to float32 rounding (summation order, division): a clamped rule under
    simultaneous order, a discounted one under alternating order with a locked set
    (`cfrjax.lock`: its locked strategy in both kernels, so its average is that
    strategy); the rules' hooks are the XLA passes' own (`rules.after_update`,
    `rules.discount`). The kernels' solve traces the two kernels, the XLA one none."""
    state = cfrjax.init(river, rule=rule, order=order, dtype="float32")
    assert spot_kernel.suits(river, state.config)
    if locked:
        key = next(k for k, _, h in river.labels.infoset_keys() if k.startswith("P1|") and h > 3)
        sl, _ = river.infoset_index(key)
        fixed = [0.25] + [0.75 / (sl.stop - sl.start - 1)] * (sl.stop - sl.start - 1)
        state = cfrjax.lock(river, state, {key: fixed})
    xla, xla_jaxpr = _solve(river, state, 6, enabled=False)
    got, jaxpr = _solve(river, state, 6, enabled=True)
    assert "cfrjax_spot_update" in jaxpr and "cfrjax_spot_operand" in jaxpr
    assert "cfrjax_spot" not in xla_jaxpr
    assert int(got.iteration) == 6 and float(got.avg_weight) == float(xla.avg_weight)
    for f in ("regret", "avg"):
        a, b = np.asarray(getattr(got, f), np.float64), np.asarray(getattr(xla, f), np.float64)
        assert np.abs(b).max() > 0
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-6 * np.abs(b).max(), err_msg=f)
    comp = np.abs(np.asarray(got.avg_comp, np.float64) - np.asarray(xla.avg_comp, np.float64))
    assert comp.max() <= 1e-6    # a few units of float32 rounding of the average
    if locked:
        policy = np.asarray(cfrjax.average_policy(river, got))
        _, h = river.infoset_index(key)
        np.testing.assert_allclose(policy[sl, h], fixed, rtol=1e-6)


def test_kernels_per_half_iteration(river, monkeypatch):
    """Load-immune gate: a (half-)iteration traces the operand kernel, one matmul and the
    update kernel, nothing else of the passes (H200, full-range river, CFR+: 5.8 -> 4.8
    kernels and 17.1 -> 9.8 us a simultaneous iteration, `ab_spot_kernel_h200.jsonl`)."""
    river = cfrjax.plan.use(river, kernels_plan("spot", True))
    for order, halves in (("simultaneous", 1), ("alternating", 2)):
        state = cfrjax.init(river, rule="cfr+", order=order, dtype="float32")
        text = str(jax.make_jaxpr(cfrjax.step)(river, state))
        assert text.count("name=cfrjax_spot_operand") == halves, order
        assert text.count("name=cfrjax_spot_update") == halves, order
        assert text.count("dot_general") == halves, order


def test_other_solves_keep_the_xla_passes(river, monkeypatch):
    """The kernels run only what they implement: not for predictive rules, float64,
    sorted terminals, a raked spot, several subgames' ranges (a batch), a leaf function's
    state, or a large tree under simultaneous order; nor on a CPU outside the tests."""
    river = cfrjax.plan.use(river, kernels_plan("spot", True))
    cfg = lambda **kw: cfrjax.init(river, **{"rule": "dcfr", "dtype": "float32", **kw}).config   # noqa: E731
    assert spot_kernel.suits(river, cfg())
    assert not spot_kernel.suits(river, cfg(rule="pcfr+"))
    assert not spot_kernel.suits(river, cfg(rule="dcfr-postflop"))
    assert not spot_kernel.suits(dataclasses.replace(river, terminals="sorted"), cfg())
    assert not spot_kernel.suits(build_public(hunl_river(), terminals="sorted"), cfg())   # no dense matrices
    assert not spot_kernel.suits(build_public(dataclasses.replace(hunl_river(), rake_rate=0.05, rake_cap=3.0),
                                              terminals="dense"), cfg())
    batch = dataclasses.replace(river, weights=jnp.stack([river.weights] * 2, -1), norm=jnp.stack([river.norm] * 2))
    assert not spot_kernel.suits(batch, cfg())
    big = dataclasses.replace(river, forest_plan=dataclasses.replace(
        river.forest_plan, parent=river.forest_plan.parent + (0,) * river.plan.spot_simultaneous_nodes))
    assert spot_kernel.suits(big, cfg(order="alternating")) and not spot_kernel.suits(big, cfg(order="simultaneous"))
    state = cfrjax.init(river, rule="dcfr", dtype="float32")
    assert spot_kernel.applies(river, state.config, None, None, state.regret, river.plan)
    assert not spot_kernel.applies(river, state.config, None, {"leaf": 0}, state.regret, river.plan)
    s64 = cfrjax.init(river, rule="dcfr", dtype="float64")      # (the suite runs with x64 enabled)
    assert "cfrjax_spot" not in str(jax.make_jaxpr(cfrjax.step)(river, s64))
    if not GPU:   # the auto plan of a CPU
        assert "cfrjax_spot" not in str(jax.make_jaxpr(cfrjax.step)(cfrjax.plan.use(river), state))


def test_plan_is_the_forest_arrays(river):
    """`PublicGame.forest_plan` mirrors the forest's index arrays (a river spot: no trunk
    plan)."""
    p = river.forest_plan
    parent = np.asarray(river.forest_parent)
    assert p.parent[0] == -1 and p.parent[1:] == tuple(parent[1:].tolist())
    assert p.slot_node == tuple(np.asarray(river.forest_slot_node).tolist())
    assert p.slot_child == tuple(np.asarray(river.forest_slot_child).tolist())
    assert p.folds == tuple(np.asarray(river.forest_fold_node).tolist())
    assert p.showdowns == tuple(np.asarray(river.forest_showdown_node).tolist())
    assert [c for _, _, c in p.sets] == np.diff(np.asarray(river.infoset_slot_start)).tolist()
    assert p.split == river.slot_split and hash(p) == hash(dataclasses.replace(p))
    assert river.trunk_plan is None and p.roots == (0,)


def test_turn_plans_and_template(monkeypatch):
    """A turn spot's trunk plan (global slots, its chance leaves above the forest roots)
    mirrors the trunk's arrays; its forest's river trees are one template looped at fixed
    strides (`turn_kernel.template`), a forest of differing trees has none and keeps the
    XLA passes; the kernels run only what they implement."""
    from cfrjax.public import turn_kernel
    from test_public_form import small_turn
    g = build_public(small_turn())
    tp, fp = g.trunk_plan, g.forest_plan
    t0, t1 = g.trunk_slots
    assert tp.slot_ids == tuple(range(t0)) + tuple(range(g.slot_split, g.slot_split + t1))
    assert tp.slot_node == tuple(np.asarray(g.trunk_slot_node).tolist())
    assert tp.chance == tuple(np.asarray(g.root_chance).tolist()) and len(fp.roots) == g.num_roots
    assert fp.slot_ids == tuple(range(sum(g.forest_slots))) and fp.split == g.forest_slots[0]
    tpl = turn_kernel.template(fp)
    assert tpl.R == g.num_roots and len(tpl.parent) * tpl.R == len(fp.parent)
    assert len(tpl.slots) * tpl.R == sum(g.forest_slots)
    root_of = list(range(len(fp.parent)))
    for n, par in enumerate(fp.parent):
        root_of[n] = n if par < 0 else root_of[par]
    members = [[n for n in range(len(fp.parent)) if root_of[n] == rt] for rt in fp.roots]
    for player, base, stride, node, child in tpl.slots:   # tree r's slot: the template's, moved by the stride
        for r in range(tpl.R):
            slot = base + r * stride
            assert (fp.node_of[slot], fp.child_of[slot]) == (members[r][node], members[r][child])
            assert fp.owner[fp.node_of[slot]] == player
    kinds = [t for t in tpl.term if t is not None]
    assert sum(1 for t in kinds if t[0] == spot_kernel.FOLD) * tpl.R == len(fp.folds)
    assert sorted(t[1] + r * t[2] for t in kinds if t[0] == spot_kernel.SHOWDOWN for r in range(tpl.R)) \
        == list(range(len(fp.showdowns)))
    odd = dataclasses.replace(fp, owner=fp.owner[:-1] + (1 - fp.owner[-1] if fp.owner[-1] < 2 else 0,))
    assert turn_kernel.template(odd) is None
    cfg = cfrjax.init(g, rule="dcfr", dtype="float32").config
    assert turn_kernel.suits(g, cfg) and not spot_kernel.suits(g, cfg)
    assert not turn_kernel.suits(dataclasses.replace(g, forest_plan=odd), cfg)
    assert not turn_kernel.suits(g, cfrjax.init(g, rule="pcfr+", dtype="float32").config)
    assert not turn_kernel.suits(build_public(dataclasses.replace(small_turn(), rake_rate=0.05, rake_cap=3.0)), cfg)
    regret = jnp.zeros(g.slot_shape, jnp.float32)
    assert turn_kernel.applies(g, cfg, None, None, regret, cfrjax.Plan(interpret=("turn",)))
    assert not turn_kernel.applies(g, cfg, None, None, regret, cfrjax.Plan())       # not in the plan


@pytest.mark.skipif(not GPU, reason="compiled on an NVIDIA GPU only: in Pallas's interpreter on a CPU one step of "
                                    "the turn takes 25 s (17 s of it compiling), too long for the suite")
@pytest.mark.parametrize("rule,order", [("cfr+", "simultaneous"), ("dcfr", "alternating")])
def test_turn_kernels_equal_the_xla_passes(rule, order, monkeypatch):
    """`cfrjax.public.turn_kernel`, compiled: one iteration from the same mid-solve state
    equals the XLA passes' to float32 rounding (trajectories part at the exact ties of the
    first iterations, so one step is compared), on the full-range turn."""
    from cfrjax.games.poker import load_poker_config
    from cfrjax.public import turn_kernel
    g = build_public(load_poker_config(cfrjax.load.spec_path("hunl_turn_full")))
    state = cfrjax.solve(g, cfrjax.init(g, rule=rule, order=order, dtype="float32"), 5)
    xla = jax.jit(cfrjax.step)(cfrjax.plan.use(g, kernels_plan("turn", False)), state)
    g = cfrjax.plan.use(g, kernels_plan("turn", True))
    assert "cfrjax_turn_forest" in str(jax.make_jaxpr(cfrjax.step)(g, state))
    got = jax.jit(cfrjax.step)(g, state)
    for f in ("regret", "avg"):
        a, b = np.asarray(getattr(got, f), np.float64), np.asarray(getattr(xla, f), np.float64)
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6 * np.abs(b).max(), err_msg=f)
