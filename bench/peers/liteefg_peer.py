"""LiteEFG 1.0.0 as a benchmark peer, loading our exported files (never imported by the library).

Semantics, read from LiteEFG 1.0.0's sources:
  * `LiteEFG/baselines/CFR.py` `graph.update_graph`: `env.update(self.strategy)` (both
    players at once: simultaneous), regret matching; its `__main__` evaluates
    "avg-iterate" (uniform averaging).
  * `LiteEFG/baselines/CFRplus.py` and `PCFR.py` (PCFR+): `env.update(..., upd_player=1)`
    then `upd_player=2` (alternating), RM+ (`maximum(regret, 0)`), evaluated with
    "linear-avg-iterate".
  * `LiteEFG/baselines/DCFR.py`: alpha=1.5, beta=0, gamma=2 discounting inside the graph;
    it keeps its own average (`avg_strategy`: the sequence-form strategies discounted by
    (t/(t+1))^gamma each iteration, i.e. weights ~ t^gamma), which
    `current_strategy("average-iterate")` returns; its own `__main__` evaluates that node
    as "last-iterate" (the node is already the average). `current_strategy()` with no
    argument is the *current* iterate. Update order alternating (`update_graph` updates
    players 1 then 2).
  * Averages (`LiteEFG/src/Environment/SequenceForm.cpp`
    `HistoryVersionStrategy::UpdateStrategy`): running means of the *sequence-form*
    strategy passed to `env.update_strategy`, called once per iteration *after* both
    half-updates, so iteration t contributes the post-update strategy x_{t+1} with
    weight t ("linear-avg-iterate") or 1 ("avg-iterate"); the initial uniform strategy
    never enters. OpenSpiel's CFR+ instead averages each player's pre-update x_t.
  * Precision: `Vector` of `double` (`LiteEFG/src/Data/Vector.h`); single C++ thread by default.
  * Exploitability: `Environment::Exploitability` returns per-player best-response gains;
    their sum is NashConv.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import LiteEFG as leg

PRESETS = {
    "cfr": dict(module="CFR", avg="avg-iterate", rule="cfr", order="simultaneous", averaging="uniform"),
    "cfr+": dict(module="CFRplus", avg="linear-avg-iterate", rule="cfr+", order="alternating", averaging="linear"),
    "pcfr+": dict(module="PCFR", avg="linear-avg-iterate", rule="pcfr+", order="alternating", averaging="linear"),
    "dcfr": dict(module="DCFR", avg="last-iterate", selector="average-iterate", rule="dcfr(1.5,0,2)",
                 order="alternating", averaging="gamma=2 (its in-graph average)"),
}


def strategy_node(graph, rule):
    """The graph node holding the strategy the preset evaluates (DCFR: its own average)."""
    sel = PRESETS[rule].get("selector")
    return graph.current_strategy(sel) if sel else graph.current_strategy()


def _graph(rule):
    import importlib, contextlib, io
    mod = importlib.import_module(f"LiteEFG.baselines.{PRESETS[rule]['module']}")
    with contextlib.redirect_stdout(io.StringIO()):
        return mod.graph()


def policy_in_slots(env, strategy_node, avg_type, spec) -> np.ndarray:
    """LiteEFG's strategy per information set, in the `GameSpec`'s infoset/action order `[S_spec]`.

    Our exports name sets `pl<k>_<i>__<key>`, so the name maps back to the spec's set;
    LiteEFG's action order is each member's child order, i.e. the spec's action order.
    """
    from urllib.parse import unquote
    index = {k: i for i, k in enumerate(spec.infoset_keys)}
    rows = [None] * spec.num_infosets
    for player in (1, 2):
        for name, probs in env.get_strategy(player, strategy_node, avg_type):
            rows[index[unquote(name.partition("__")[2])]] = np.asarray(probs, np.float64)
    return rows


def _evaluate(env, graph, rule, spec, rec) -> dict:
    """Exploitability, value and the average policy's rows (`_rows`) of the graph's strategy, into `rec`."""
    avg = PRESETS[rule]["avg"]
    node = strategy_node(graph, rule)
    rec["nash_conv"] = float(sum(env.exploitability(node, avg)))
    rec["exploitability"] = rec["nash_conv"] / 2
    rec["value"] = float(env.utility(node, avg)[0]) + float(spec.payoff_offset)
    rec["_rows"] = policy_in_slots(env, node, avg, spec)
    return rec


def _setup(path, rule):
    env = leg.FileEnv(str(path), traverse_type="Enumerate")
    graph = _graph(rule)
    env.set_graph(graph)
    return env, graph


def setup(path, rule, threads=1):
    """(env, graph) of a LiteEFG file with the rule's baseline graph, on `threads` native threads."""
    leg.set_threads(threads)
    return _setup(path, rule)


def iterate(env, graph, iterations: int, rule: str = "cfr") -> None:
    """`iterations` LiteEFG iterations: the graph's update, then the environment's average of
    the preset's strategy node (as LiteEFG's own `baselines/utils.train` loop does)."""
    for _ in range(iterations):
        graph.update_graph(env)
        env.update_strategy(strategy_node(graph, rule))


def exploitability(env, graph, rule) -> float:
    """NashConv / 2 of the rule's average strategy (its preset's averaging)."""
    return float(sum(env.exploitability(strategy_node(graph, rule), PRESETS[rule]["avg"]))) / 2


def _record(spec, rule, iterations, **kw) -> dict:
    p = PRESETS[rule]
    return dict(backend="liteefg", game=spec.name, iterations=iterations, rule=p["rule"], order=p["order"],
                averaging=p["averaging"], precision="float64", execution="C++ FileEnv, 1 thread",
                average=p["avg"], **kw)


def run(path, spec, rule="cfr+", iterations=100, evaluate_result=True) -> dict:
    t0 = time.perf_counter()
    env, graph = _setup(path, rule)
    setup_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    iterate(env, graph, iterations, rule)
    solve_s = time.perf_counter() - t0
    rec = _record(spec, rule, iterations, setup_s=setup_s, solve_s=solve_s, ms_per_iter=1e3 * solve_s / iterations)
    return _evaluate(env, graph, rule, spec, rec) if evaluate_result else rec


def timed_run(path, spec, rule="cfr", iterations=100, repeats=5, threads=1) -> dict:
    """`bench/common.time_solve`'s protocol with `chain=True`, for LiteEFG.

    `leg.set_threads(threads)` (LiteEFG 1.0's native thread count; 1 is its default and the
    paper's arm), one warm-up chunk of `iterations` iterations, then `repeats` timed
    chunks, each continuing the same run: ms/iter is the median chunk over `iterations`,
    and the evaluation (exploitability, value, `_rows`) is of the average after
    `(repeats + 1) * iterations` iterations. `cpu_per_wall` is CPU time over wall time
    of the timed chunks (1.0 for one busy thread), `others_cpu_per_wall` the cores other
    processes used meanwhile (`bench/common.CpuMeter`).
    """
    try:
        from common import CpuMeter
    except ImportError:  # imported with only bench/peers on the path
        import os
        import sys
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        from common import CpuMeter
    leg.set_threads(threads)
    t0 = time.perf_counter()
    env, graph = _setup(path, rule)
    setup_s = time.perf_counter() - t0

    def chunk():
        iterate(env, graph, iterations, rule)

    t0 = time.perf_counter()
    chunk()
    first_s = time.perf_counter() - t0
    times, meter = [], CpuMeter()
    for _ in range(repeats):
        with meter:
            t0 = time.perf_counter()
            chunk()
            times.append(time.perf_counter() - t0)
    rec = _record(spec, rule, iterations, setup_s=setup_s, first_chunk_s=first_s,
                  ms_per_iter=1e3 * statistics.median(times) / iterations,
                  ms_per_iter_min=1e3 * min(times) / iterations, ms_per_iter_max=1e3 * max(times) / iterations,
                  repeats=repeats, total_iterations=(repeats + 1) * iterations, threads=leg.get_threads(),
                  **meter.fields())
    rec["execution"] = f"C++ FileEnv, {rec['threads']} thread" + ("s" if rec["threads"] != 1 else "")
    return _evaluate(env, graph, rule, spec, rec)
