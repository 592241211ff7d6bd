"""The PyTorch replica of the paper's Algorithm 1 (`bench/baselines/torch_graph.py`) computes
cfrjax's iterates: CFR+, simultaneous, linear averaging, float32, folded chance, 20
iterations on Kuhn and Leduc, regrets and average policies to 1e-5 (CPU, eager); in
float64 also on Goofspiel-4, whose exact-zero regret ties split float32 trajectories
that add in different orders, to 1e-10."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench"))
from baselines.torch_graph import TorchCFRPlus, check_against_cfrjax, count_aten_ops, from_spec  # noqa: E402

import cfrjax  # noqa: E402


GOOFSPIEL4 = "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))"


@pytest.fixture(scope="module")
def specs():
    return {name: cfrjax.games.openspiel.spec_from_openspiel(name) for name in ("kuhn_poker", "leduc_poker", GOOFSPIEL4)}


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
@pytest.mark.parametrize("averaging", ["mean", "sum64"])
def test_replica_matches_cfrjax(specs, name, averaging):
    diff = check_against_cfrjax(specs[name], iterations=20, averaging=averaging)
    assert diff["regret_scale"] > 0.1  # the check compares something non-trivial
    assert diff["regret_max_abs"] <= 1e-5 * max(1.0, diff["regret_scale"]), diff
    assert diff["policy_max_abs"] <= 1e-5, diff
    if averaging == "mean":
        assert diff["one_step_regret_max_abs"] <= 1e-5 * max(1.0, diff["regret_scale"]), diff
        assert diff["one_step_avg_max_abs"] <= 1e-5, diff


@pytest.mark.parametrize("name", ["leduc_poker", GOOFSPIEL4])
def test_replica_matches_cfrjax_float64(specs, name):
    diff = check_against_cfrjax(specs[name], iterations=20, dtype="float64")
    assert diff["dtype"] == "float64" and diff["regret_scale"] > 0.1
    assert diff["regret_max_abs"] <= 1e-10 * max(1.0, diff["regret_scale"]), diff
    assert diff["policy_max_abs"] <= 1e-10, diff
    assert diff["one_step_regret_max_abs"] <= 1e-10 * max(1.0, diff["regret_scale"]), diff


def test_replica_kuhn_converges(specs):
    """1,000 iterations reach the paper's float32 Kuhn exploitability (2.83e-3)."""
    import numpy as np
    solver = from_spec(specs["kuhn_poker"]).run_eager(1000)
    game = cfrjax.load_game(specs["kuhn_poker"])
    expl = float(cfrjax.exploitability(game, np.asarray(solver.average_policy(), np.float64)))
    assert expl == pytest.approx(2.83e-3, rel=5e-3)


def test_aten_op_count_is_linear_in_depth(specs):
    """Eight Aten operations per depth level (four forward, four backward) plus a constant."""
    counts = {}
    for name in ("kuhn_poker", "leduc_poker"):
        solver = from_spec(specs[name])
        counts[name] = (solver.depth, count_aten_ops(solver))
    (d0, n0), (d1, n1) = counts["kuhn_poker"], counts["leduc_poker"]
    assert (n1 - n0) == 8 * (d1 - d0), counts


def test_replica_rejects_explicit_chance(specs):
    from cfrjax.compile import compile_arrays
    arrays, static, _ = compile_arrays(specs["kuhn_poker"], "explicit")
    with pytest.raises(ValueError, match="folded"):
        TorchCFRPlus(arrays, static)
