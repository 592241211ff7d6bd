"""OpenSpiel's CFR solvers as a benchmark peer (never imported by the library).

Semantics, read from OpenSpiel 2.0.2's sources:
  * Python `open_spiel/python/algorithms/cfr.py`: `CFRSolver.__init__` passes
    `regret_matching_plus=False, alternating_updates=True, linear_averaging=False`;
    `CFRPlusSolver.__init__` passes `regret_matching_plus=True, alternating_updates=True,
    linear_averaging=True`. NumPy float64 throughout, pure-Python tree walk.
  * C++ `open_spiel/algorithms/cfr.h`: `CFRSolver` -> `CFRSolverBase(game,
    /*alternating_updates=*/true, /*linear_averaging=*/false, /*regret_matching_plus=*/false)`,
    `CFRPlusSolver` -> `(true, true, true)`; `CFRInfoStateValues` stores
    `std::vector<double>` regrets and policies. Exposed as `pyspiel.CFRSolver`/`CFRPlusSolver`.
  * Exact evaluation: `pyspiel.nash_conv` (C++ best response on the full tree, sum of
    both players' gains) and `pyspiel.expected_returns` (C++ full-tree expectation).
"""

from __future__ import annotations

import time

import numpy as np
import pyspiel

SEMANTICS = {
    ("cpp", "cfr"): dict(rule="cfr", order="alternating", averaging="uniform", precision="float64",
                         execution="C++ (pyspiel.CFRSolver), 1 thread"),
    ("cpp", "cfr+"): dict(rule="cfr+", order="alternating", averaging="linear", precision="float64",
                          execution="C++ (pyspiel.CFRPlusSolver), 1 thread"),
    ("python", "cfr"): dict(rule="cfr", order="alternating", averaging="uniform", precision="float64",
                            execution="Python (open_spiel.python.algorithms.cfr.CFRSolver)"),
    ("python", "cfr+"): dict(rule="cfr+", order="alternating", averaging="linear", precision="float64",
                             execution="Python (open_spiel.python.algorithms.cfr.CFRPlusSolver)"),
}


def make_solver(game, impl: str, rule: str):
    if impl == "cpp":
        return {"cfr": pyspiel.CFRSolver, "cfr+": pyspiel.CFRPlusSolver}[rule](game)
    from open_spiel.python.algorithms import cfr
    return {"cfr": cfr.CFRSolver, "cfr+": cfr.CFRPlusSolver}[rule](game)


def evaluate(game, policy) -> tuple[float, float]:
    """(player 0's value, NashConv) of an OpenSpiel policy, exactly, in C++ where possible."""
    if not isinstance(policy, pyspiel.Policy):
        from open_spiel.python import policy as os_policy
        policy = os_policy.python_policy_to_pyspiel_policy(policy)
    nc = float(pyspiel.nash_conv(game, policy, True))
    v = float(pyspiel.expected_returns(game.new_initial_state(), policy, -1, True)[0])
    return v, nc


def run(game_name: str, rule: str = "cfr+", impl: str = "cpp", iterations: int = 100, evaluate_result: bool = True) -> dict:
    """Run `iterations` iterations; return the record (semantics, timing, value, NashConv)."""
    game = pyspiel.load_game(game_name)
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    t0 = time.perf_counter()
    solver = make_solver(game, impl, rule)
    setup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    solve_s = time.perf_counter() - t0
    rec = dict(backend=f"openspiel-{impl}", game=game_name, iterations=iterations, setup_s=setup_s,
               solve_s=solve_s, ms_per_iter=1e3 * solve_s / iterations, **SEMANTICS[(impl, rule)])
    if evaluate_result:
        rec["value"], rec["nash_conv"] = evaluate(game, solver.average_policy())
        rec["exploitability"] = rec["nash_conv"] / 2
    rec["_policy"] = solver.average_policy()
    return rec
