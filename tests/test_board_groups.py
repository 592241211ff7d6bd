"""Boards a group at a time on an accelerator (`Plan.boards_at_once`,
`cfrjax.public.forest.map_boards`): the same solve and evaluation as every board at once,
a memory plan that counts one group's forests, and the group size `cfrjax.memory.
group_boards` picks from a memory budget."""

import dataclasses

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import memory
from cfrjax.driver import lower_solve
from cfrjax.games.poker import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public
from cfrjax.plan import use

#: A turn: 48 river cards below a small trunk; 5 boards a group leaves a remainder of 3.
SPOT = PokerSubgameSpec(board="Ks Js Th 7d", pot=20, stack=110, random_hands=60, seed=3, bet_fractions=(1.0,),
                        raise_cap=0)
GROUP = 5


@pytest.fixture
def as_gpu(monkeypatch):
    """The passes traced for an accelerator (JAX's default backend faked as a GPU: boards
    `vmap`ped or grouped, pulled sums), run on the CPU; the game built there."""
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not cfrjax.passes.traced_for_cpu()
    return use(build_public(SPOT, hands="range"), "xla", platform="gpu")


def _grouped(game, k):
    return dataclasses.replace(game, plan=dataclasses.replace(game.plan, boards_at_once=k))


def test_grouped_boards_equal_all_at_once(as_gpu):
    """A float64 solve and its evaluation with the boards 5 at a time equal every board at
    once to 1e-12 relative. (Not bit for bit: XLA:CPU contracts a multiply and an add into
    one fused multiply-add where both land in one loop, and the group's loop body is fused
    differently from the whole vmap; with FMA off, `--xla_cpu_max_isa=SSE4_2`, the
    forests' rows are bitwise equal.)"""
    whole = as_gpu
    assert whole.plan.boards_at_once == 0 and whole.num_boards % GROUP
    grouped = _grouped(whole, GROUP)
    kw = dict(rule="dcfr", order="simultaneous", dtype="float64")
    a = cfrjax.solve(whole, cfrjax.init(whole, **kw), 3)
    b = cfrjax.solve(grouped, cfrjax.init(grouped, **kw), 3)
    for f in ("regret", "avg"):
        np.testing.assert_allclose(np.asarray(getattr(b, f)), np.asarray(getattr(a, f)), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cfrjax.evaluate(grouped, b), cfrjax.evaluate(whole, a), rtol=1e-12, atol=1e-12)


def test_plan_counts_one_group(as_gpu):
    """The accelerator's memory plan counts one group's forests (5 of 48 boards), and is
    within 20% of XLA's buffer assignment of the grouped solve, float32 and 16-bit
    storage (XLA:CPU compiling the accelerator lowering; one iteration: a small solve's scan is unrolled off the CPU,
    `cfrjax.driver.scan_unroll`, which the plan does not count)."""
    grouped = _grouped(as_gpu, GROUP)
    state = cfrjax.init(grouped, rule="dcfr", order="simultaneous", dtype="float32")
    whole = {b.name: b.elements for b in memory.memory_plan(as_gpu, state, donate=True, platform="gpu").buffers}
    plan = memory.memory_plan(grouped, state, donate=True, platform="gpu")
    rows = {b.name: b.elements for b in plan.buffers}
    n1, n2, H = as_gpu.trunk_parent.shape[0], as_gpu.forest_parent.shape[0], as_gpu.num_hands
    assert rows["reach and strategy factors"] == 4 * (n1 + GROUP * n2) * H
    assert whole["reach and strategy factors"] == 4 * (n1 + as_gpu.num_boards * n2) * H
    assert "board loop slot temporaries" in rows and "board loop slot temporaries" not in whole
    if jax.devices()[0].platform != "cpu":
        pytest.skip("the plan's accelerator rows are calibrated on XLA:CPU's buffer assignment (on an H200 the "
                    "grouped turn's temporaries are 36.5 MB against 6.1 MB planned: docs/design/density.md)")
    xla = memory.executable_memory(lower_solve(grouped, state, 1, donate=True).compile())
    assert 0.8 <= plan.total_bytes / xla["total_bytes"] <= 1.2, (plan.total_bytes, xla)
    # 16-bit storage (`cfrjax.storage`): the same, its state at 2 bytes an entry
    s16 = cfrjax.init(grouped, rule="dcfr", order="simultaneous", precision="int16")
    p16 = memory.memory_plan(grouped, s16, donate=True, platform="gpu")
    x16 = memory.executable_memory(lower_solve(grouped, s16, 1, donate=True).compile())
    assert 0.8 <= p16.total_bytes / x16["total_bytes"] <= 1.2, (p16.total_bytes, x16)
    assert x16["total_bytes"] < xla["total_bytes"] and p16.total_bytes < plan.total_bytes


def test_group_boards_picks_the_group_from_the_budget(as_gpu):
    """`memory.group_boards` off the CPU: every board at once where the plan fits the
    budget, else the most boards a group whose plan fits (its own plan with one more
    board does not), at least one, rounded down to a class; a CPU plan is left as it is."""
    game = as_gpu

    def total(k):
        return memory.memory_plan(_grouped(game, k), dtype="float64", order="simultaneous", donate=True,
                                  platform="gpu").total_bytes
    assert memory.group_boards(game, 2 * total(0)).plan.boards_at_once == 0
    budget = int(1.1 * (total(7) + total(8)) / 2)   # between the plans of 7 and 8 boards, margin included
    assert memory.group_boards(game, budget).plan.boards_at_once == 7
    assert memory.group_boards(game, 1).plan.boards_at_once == 1
    # above 8 boards the group rounds down to a class (8, 10, 12, 14, ...): budgets a little
    # apart give one group size, one program
    for k in (11, 12):
        budget = int(1.1 * (total(k) + total(k + 1)) / 2)
        assert memory.group_boards(game, budget).plan.boards_at_once == (10 if k == 11 else 12)
    cpu = use(game, "xla", platform="cpu")
    assert memory.group_boards(cpu, 1).plan.boards_at_once == 0
    with pytest.raises(ValueError, match="boards_at_once"):
        cfrjax.Plan(boards_at_once=-1)


@pytest.mark.slow   # another instance of test_plan_counts_one_group's claim: a flop, one list per player
def test_per_player_flop_plan_counts_one_group(as_gpu):
    """A flop with one hand list per player (`hands="player"`, 49 x 48 boards below the
    turn cards), a turn card's 48 river boards at a time (plus one: groups across turn
    cards): the plan within 20% of XLA's buffer assignment (XLA:CPU, accelerator lowering,
    one iteration, donated). (Every board at once, the plan was 1.4x XLA's alternating,
    2.5x simultaneous: conservative, docs/design/density.md.)"""
    spec = PokerSubgameSpec(board="Ks Js Th", pot=20, stack=110, bet_fractions=(1.0,), raise_cap=0,
                            range0={"AsQs": 1.0, "9h9d": 0.5, "AhAd": 0.7, "QhJh": 1, "Tc9c": 1},
                            range1={"KhKd": 1.0, "8c8d": 0.3, "Qh9c": 0.9, "6h6d": 0.6})
    game = _grouped(use(build_public(spec, hands="player"), "xla", platform="gpu"), 49)
    assert game.player_lists and game.num_boards == 49 * 48
    state = cfrjax.init(game, rule="dcfr", order="alternating", dtype="float32")
    plan = memory.memory_plan(game, state, donate=True, platform="gpu")
    xla = memory.executable_memory(lower_solve(game, state, 1, donate=True).compile())
    assert 0.8 <= plan.total_bytes / xla["total_bytes"] <= 1.2, (plan.total_bytes, xla)


def test_spot_that_fits_only_grouped_is_built(monkeypatch):
    """Before building (`check_public_fits`, which `load_game` calls): off the CPU a spot
    whose forests fit one board at a time but not all at once is not refused (the boards
    then run a group at a time, `memory.group_boards`); one that does not fit one board at
    a time is; on a CPU (no grouping) the whole plan decides."""
    import types

    from cfrjax.games.poker.public_tree import check_public_fits, public_plan

    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")     # the accelerator's plan rows
    whole = public_plan(SPOT, hands="range").total_bytes
    one = public_plan(SPOT, hands="range", boards_at_once=1).total_bytes
    assert one < whole
    between = int(1.1 * (one + whole) / 2)
    gpu, cpu = types.SimpleNamespace(platform="gpu"), types.SimpleNamespace(platform="cpu")
    assert check_public_fits(SPOT, hands="range", device=gpu, budget_bytes=between)["estimate"] == one
    with pytest.raises(memory.MemoryPlanError, match="refused before building"):
        check_public_fits(SPOT, hands="range", device=gpu, budget_bytes=one // 2)
    with pytest.raises(memory.MemoryPlanError, match="refused before building"):
        check_public_fits(SPOT, hands="range", device=cpu, budget_bytes=between)
