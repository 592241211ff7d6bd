"""16-bit storage of the state (`precision="int16"`, `cfrjax.storage`): solves, stays
within a stated bound of float32, checkpoints its integers and scales, is planned at 2
bytes an entry, and a bad precision is one clear error."""

import numpy as np
import pytest

import cfrjax
from cfrjax import memory
from cfrjax.checkpoint import load_checkpoint, save_checkpoint
from cfrjax.games.poker import PokerSubgameSpec

SPOT = PokerSubgameSpec(board="Ks Js Th 7d 2c", pot=20, stack=110,
                        range0={"AsQs": 1.0, "9h9d": 0.5, "AhAd": 0.7, "QhJh": 1.0},
                        range1={"KhKd": 1.0, "8c8d": 0.3, "Qh9c": 0.9, "6h6d": 0.6}, bet_fractions=(0.5, 1.0),
                        raise_fractions=(1.0,), raise_cap=1)
T = 100


@pytest.fixture(scope="module")
def game():
    return cfrjax.load_game(SPOT, hands="range")


def test_int16_within_bound_of_float32(game):
    """DCFR, T = 100 iterations. Bound: each iteration re-encodes a node's regrets to the
    nearest of 65,535 levels over [-m, m] (m its largest |regret|, at most T times the
    payoff range D = pot + 2 stacks = 240 chips), an error of at most m / 65,534 per entry
    and iteration; regret matching with regrets off by e has its average regret off by at
    most e per iteration (Zinkevich et al.'s bound is additive in it), so each player's
    exploitability moves by at most T D / 65,534, both players' by twice that (0.73 chips);
    the average's own rounding (1 / 65,535 of a node's largest entry) adds less. The uniform
    policy's exploitability is far above it, so a broken encoding fails."""
    bound = 2 * T * (SPOT.pot + 2 * SPOT.stack) / 65534
    e32 = cfrjax.evaluate(game, cfrjax.solve(game, cfrjax.init(game, rule="dcfr"), T))[0]
    s16 = cfrjax.solve(game, cfrjax.init(game, rule="dcfr", precision="int16"), T)
    assert s16.regret.dtype == np.int16 and s16.avg.dtype == np.uint16 and s16.avg_comp is None
    assert s16.regret_scale.shape == (game.infoset_slot_start.shape[0] - 1,)
    e16 = cfrjax.evaluate(game, s16)[0]
    assert abs(e16 - e32) <= bound, (e16, e32, bound)
    assert cfrjax.evaluate(game, cfrjax.init(game, rule="dcfr", precision="int16"))[0] > 10 * bound


def test_int16_checkpoint_round_trip(game, tmp_path):
    """A checkpoint stores the integers and the node scales; resuming continues the solve
    bit for bit."""
    s = cfrjax.solve(game, cfrjax.init(game, rule="dcfr", order="simultaneous", precision="int16"), 3)
    path = str(tmp_path / "c.npz")
    save_checkpoint(path, game, s)
    back = load_checkpoint(path, game)
    assert back.config == s.config and back.avg_comp is None
    for f in ("regret", "avg", "regret_scale", "avg_scale"):
        a, b = np.asarray(getattr(s, f)), np.asarray(getattr(back, f))
        assert a.dtype == b.dtype and np.array_equal(a, b), f
    one, two = cfrjax.solve(game, s, 2), cfrjax.solve(game, back, 2)
    assert np.array_equal(np.asarray(one.regret), np.asarray(two.regret))
    p = np.asarray(cfrjax.average_policy(game, back))
    assert p.dtype == np.float32 and np.all(p >= 0)


def test_half_update_kernels_decline_int16():
    """The fused half-updates read and write the stored slot arrays: float32 only (the
    dispatch runs XLA's update for a 16-bit state); the other kernels see them decoded."""
    from cfrjax.kernels import KERNELS
    cfg = cfrjax.rules.Config(rule="dcfr", precision="int16")
    for name, k in KERNELS.items():
        assert k.supports(cfg) == (k.operation != "half_update"), name
        assert k.supports(cfrjax.rules.Config(rule="cfr+")) or k.operation != "half_update", name


def test_bad_precision_is_one_line():
    with pytest.raises(ValueError, match=r"unknown precision 'int8'; allowed: 'float32', 'int16'"):
        cfrjax.rules.Config(precision="int8")
    with pytest.raises(ValueError, match=r"precision 'int16' stores a float32 solve; dtype must be 'float32'"):
        cfrjax.rules.Config(precision="int16", dtype="float64")


def test_plan_counts_two_bytes(game):
    S = int(np.prod(game.slot_shape))
    s16 = cfrjax.init(game, rule="dcfr", precision="int16")
    rows = {b.name: b for b in memory.memory_plan(game, s16, donate=True).buffers}
    assert rows["state.regret [in/out]"].bytes == 2 * S and rows["state.regret [in/out]"].dtype == "int16"
    assert rows["state.avg [in/out]"].bytes == 2 * S and "state.avg_comp [in/out]" not in rows
    f32 = {b.name: b for b in memory.memory_plan(game, cfrjax.init(game, rule="dcfr", dtype="float32"),
                                                   donate=True).buffers}
    assert f32["state.regret [in/out]"].bytes == 4 * S
    assert memory.memory_plan(game, rule="dcfr", dtype="float32", precision="int16", donate=True).total_bytes == \
        memory.memory_plan(game, s16, donate=True).total_bytes


def test_cli_precision_int16(capsys):
    """`cfrjax solve --precision int16` (here a tabular game: one scale per information
    set) solves and says so in its record."""
    import json
    from cfrjax import cli
    pytest.importorskip("pyspiel", reason="loads Kuhn poker from OpenSpiel")
    assert cli.main(["solve", "kuhn_poker", "--iterations", "300", "--precision", "int16", "--json"]) == 0
    record = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert record["precision"] == "int16" and record["dtype"] == "float32"
    # a loose bound: float32 reaches 7e-4 here, the uniform policy is at about 0.46 (a broken encoding)
    assert record["exploitability"] < 0.01
