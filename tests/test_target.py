"""Solving to a target: `cfrjax solve GAME --target X|X%`, `solve_with_trace(target_exploitability=...)`,
`solve_chunks(target=...)` and `solve-batch --target` share one rule (stop at the first
evaluation at or below the target, `cfrjax.driver.target_reached`) and one evaluation
schedule (`target_evaluations`). The command runs in this process (`cli.main`)."""

import dataclasses
import json
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

import cfrjax
from cfrjax import cli, multihost, programs
from cfrjax.compile_cache import compile_count
from cfrjax.driver import TARGET_EVAL_EVERY, target_evaluations


def _cli(capsys, *args):
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _curve(game, last):
    """Exploitability at each evaluation of the command's default solve up to `last`
    iterations: the Python API's target mode with a target never met (no stop involved)."""
    _, trace = cfrjax.solve_with_trace(game, cfrjax.init(game, dtype="float32"), target_exploitability=0.0, max_iterations=last)
    return dict(zip(np.asarray(trace.iteration).tolist(), np.asarray(trace.exploitability).tolist()))


def test_schedule():
    assert target_evaluations(150) == [10, 20, 30, 40, 50, 70, 90, 120, 150]
    assert target_evaluations(95, 20) == [20, 40, 60, 80, 95]
    assert target_evaluations(5) == [5]
    many = target_evaluations(10_000)
    assert len(many) < 40 and all(b > a for a, b in zip(many, many[1:]))
    assert all(b <= 1.25 * a + TARGET_EVAL_EVERY for a, b in zip(many, many[1:]))   # overshoot bounded


def test_schedule_counts_from_the_starting_state():
    """A warm start's target solve evaluates 10, 20, ... iterations after its start, as
    `solve_with_trace(target_exploitability=...)` from that state does (nothing compiled here)."""
    game = cfrjax.load_game("kuhn_poker")
    state = cfrjax.init(game)
    warm = dataclasses.replace(state, iteration=np.asarray(5, state.iteration.dtype))
    run = cfrjax.solve_chunks(game, warm, 5 + 150, target=0.01, check_memory=False)
    assert run.evaluations == {5 + p for p in target_evaluations(150)}
    assert run.points == list(range(15, 156, 10))


def test_percent_of_the_pot_on_a_spot(capsys):
    code, out, err = _cli(capsys, "solve", "hunl_river", "--target", "0.5%")
    assert code == 0, err
    m = re.search(r"target 0\.1 \(0\.5% of the pot\): reached at iteration (\d+), ([\d.]+) s from the start", out)
    assert m, out
    n = int(m.group(1))
    assert float(m.group(2)) > 0 and re.search(r"build [\d.]+ s, trace [\d.]+ s, compile [\d.]+ s \(compilation "
                                                r"cache (hit|miss)\), solve [\d.]+ s .*evaluation [\d.]+ s", out), out
    points = target_evaluations(cli.TARGET_MAX_ITERATIONS)
    assert n in points and points.index(n) > 0
    game = cfrjax.load_game("hunl_river")
    pot = cfrjax.poker.starting_pot(game)
    curve = _curve(game, n)
    previous = points[points.index(n) - 1]
    assert 100 * curve[n] / pot <= 0.5 < 100 * curve[previous] / pot


def test_absolute_target_on_leduc_same_stop_as_the_python_api(capsys):
    code, out, err = _cli(capsys, "solve", "leduc_poker", "--target", "0.001", "--json")
    assert code == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    assert r["target"] == 0.001 and r["target_reached"] and r["target_pct_pot"] is None
    n = r["iterations"]
    for key in ("backend_s", "build_s", "trace_s", "compile_s", "solve_s", "eval_s"):
        assert r[key] >= 0, key
    assert r["compile_cache"] in ("hit", "miss")
    assert r["seconds_to_target"] >= r["solve_s"] + r["eval_s"]     # the runtime's start (backend_s) before the clock
    points = target_evaluations(r["max_iterations"])
    previous = points[points.index(n) - 1]
    curve = _curve(cfrjax.load_game("leduc_poker"), n)
    assert curve[n] <= 0.001 < curve[previous]
    assert r["exploitability"] == curve[n]


@pytest.mark.parametrize("args,needle", [
    (["leduc_poker", "--target", "0.5%"], "leduc_poker() has no pot"),
    (["leduc_poker", "--target", "0"], "target '0': expected an exploitability > 0"),
    (["leduc_poker", "--target=-1%"], "target '-1%': expected an exploitability > 0"),
    (["leduc_poker", "--target", "-1%"], "argument --target: expected one argument"),
    (["leduc_poker", "--target", "abc"], "target 'abc': expected an exploitability > 0"),
    (["leduc_poker", "--target", "nan"], "target 'nan'"),
    (["leduc_poker", "--target", "0.1", "--iterations", "10"], "--iterations with --target"),
    (["leduc_poker", "--max-iterations", "10"], "--max-iterations is the cap of a solve to a --target"),
    (["leduc_poker", "--target", "0.1", "--max-iterations", "0"], "--max-iterations must be positive, got 0"),
])
def test_bad_targets_are_one_line_errors(capsys, args, needle):
    try:
        code = cli.main(["solve", *args])
    except SystemExit as e:   # argparse's errors leave through exit(2)
        code = e.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("cfrjax: error:"), lines
    assert needle in lines[0], lines[0]


def test_a_resumed_run_keeps_its_target(capsys, tmp_path):
    ckpt = str(tmp_path / "run.ckpt")
    base = ["solve", "kuhn_poker", "--checkpoint", ckpt, "--json"]
    code, out, err = _cli(capsys, *base, "--target", "0.001", "--max-iterations", "20")
    r = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and not r["target_reached"] and r["iterations"] == 20 and r["exploitability"] > 0.001, err
    # the checkpoint holds a solve to a target: resuming needs one
    code, out, err = _cli(capsys, *base, "--iterations", "100")
    assert code == 2 and "give a target again" in err
    code, out, err = _cli(capsys, *base, "--target", "0.001", "--max-iterations", "2000")
    r = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and r["target_reached"] and r["resumed_from"] == 20 and r["exploitability"] <= 0.001, err
    # uninterrupted, in Python: the same stop, the same evaluations
    game = cfrjax.load_game("kuhn_poker")
    state, trace = cfrjax.solve_with_trace(game, cfrjax.init(game, dtype="float32"), target_exploitability=0.001,
                                max_iterations=2000)
    points = target_evaluations(2000)
    assert list(np.asarray(trace.iteration)) == points[:points.index(r["iterations"]) + 1]
    assert int(state.iteration) == r["iterations"] and float(trace.exploitability[-1]) == r["exploitability"]
    assert float(trace.exploitability[-2]) > 0.001
    # resumed at its target: nothing to run, said so
    code, out, err = _cli(capsys, *base, "--target", "0.001", "--max-iterations", "2000")
    again = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and "already meets the target" in err and again["iterations"] == r["iterations"]
    assert again["target_reached"] and again["exploitability"] == r["exploitability"]


@pytest.fixture
def no_kept_programs():
    """Programs compiled, not read back whole (`cfrjax.programs`), so compiles are seen."""
    saved = programs.folder()
    programs.enable(None)
    yield
    programs.enable(saved)


def test_compile_cache_miss_then_hit(tmp_path):
    """Two processes sharing a fresh cache folder: the first compiles, the second reads back."""
    args = [sys.executable, "-m", "cfrjax", "solve", "kuhn_poker", "--target", "0.01", "--json", "--compile-cache",
            str(tmp_path / "xla")]
    first, second = (json.loads(subprocess.run(args, capture_output=True, text=True, timeout=300, check=True)
                                .stdout.strip().splitlines()[-1]) for _ in range(2))
    assert first["compile_cache"] == "miss" and second["compile_cache"] == "hit"
    assert (second["iterations"], second["exploitability"]) == (first["iterations"], first["exploitability"])


def test_no_compile_per_evaluation(no_kept_programs):
    game = cfrjax.load_game("kuhn_poker")
    s0 = cfrjax.init(game, dtype="float64")
    with compile_count() as first:
        _, trace = cfrjax.solve_with_trace(game, s0, target_exploitability=1e-12, max_iterations=400)
    assert len(trace.iteration) == len(target_evaluations(400)) >= 10
    assert first.requests <= 3, first.requests        # the chunk, the evaluation (and at most one more)
    with compile_count() as again:                     # another target: nothing new
        cfrjax.solve_with_trace(game, s0, target_exploitability=1e-11, max_iterations=400)
    run = cfrjax.solve_chunks(game, s0, 400, target=1e-12)
    run.compile()
    with compile_count() as chunks:
        for _ in run:
            pass
    assert again.requests == 0 and chunks.requests == 0 and len(run.history) >= 10
    with compile_count() as control:                   # the counter sees a compile
        jax.jit(lambda x: x * 3 + 0.25)(np.float64(len(run.history)))
    assert control.requests == 1


def test_batch_subgames_stop_at_their_target_and_stay_frozen(capsys, tmp_path):
    game = cfrjax.load_game("hunl_river")
    code, out, err = _cli(capsys, "solve-batch", "hunl_river", "--batch", "8", "--out", str(tmp_path / "a"),
                          "--target", "0.2%", "--iterations", "200", "--json")
    assert code == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    target = 0.2 / 100 * cfrjax.poker.starting_pot(game)
    assert r["target"] == pytest.approx(target) and r["stopped"] == 8
    a = multihost.read_shards(str(tmp_path / "a"))
    stops = a["state"]["iteration"]
    first = int(stops.min())
    assert first < stops.max() <= 200   # rows stopped at different evaluations
    # The same batch without a target, to the first stop: the rows that stopped there equal it bit for bit.
    b = multihost.solve_shards(multihost.random_batch(game, 8, 0), first, str(tmp_path / "b"),
                               chunk=TARGET_EVAL_EVERY)
    b = multihost._read_npz(b["path"])[0]
    at_first = stops == first
    for leaf, x in a["state"].items():
        np.testing.assert_array_equal(x[at_first], b[f"state.{leaf}"][at_first], err_msg=leaf)
    assert not np.array_equal(a["state"]["regret"][~at_first], b["state.regret"][~at_first])
    # each row's recorded exploitability (at its stop) is at or below the target
    with np.load(multihost.shard_path(str(tmp_path / "a"), 0, 1)) as z:
        assert z["target.stopped"].all() and np.all(z["target.exploitability"] <= target)
    # the same command again resumes the finished run: nothing runs, nothing changes; another target is refused
    code, out, err = _cli(capsys, "solve-batch", "hunl_river", "--batch", "8", "--out", str(tmp_path / "a"),
                          "--target", "0.2%", "--iterations", "200", "--json")
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["resumed_from"] == int(stops.max()), err
    again = multihost.read_shards(str(tmp_path / "a"))
    for leaf, x in a["state"].items():
        np.testing.assert_array_equal(again["state"][leaf], x, err_msg=leaf)
    code, out, err = _cli(capsys, "solve-batch", "hunl_river", "--batch", "8", "--out", str(tmp_path / "a"),
                          "--target", "0.1%", "--iterations", "200")
    assert code == 2 and "differs in target" in err, err
