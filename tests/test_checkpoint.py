"""Checkpoints (exact resume, clear errors), policy files, and the CLI around them:
SIGTERM + resume equals an uninterrupted run bit for bit, --plot, --save-policy, show."""

import atexit
import dataclasses
import functools
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import background
import cfrjax
from cfrjax import cli
from cfrjax.checkpoint import CheckpointError
from cfrjax.driver import stop_points
from cfrjax.state import compensation_dtype

LEAVES = tuple(f.name for f in dataclasses.fields(cfrjax.SolverState) if not f.metadata.get("static"))


def assert_bitwise_equal(a, b):
    assert a.config == b.config
    for k in LEAVES:
        x, y = np.asarray(getattr(a, k)), np.asarray(getattr(b, k))
        assert x.dtype == y.dtype and x.shape == y.shape, k
        assert x.tobytes() == y.tobytes(), f"{k} differs"


@pytest.fixture(scope="module")
def kuhn():
    return cfrjax.load_game("kuhn_poker")


@pytest.fixture(scope="module")
def leduc():
    return cfrjax.load_game("leduc_poker")


@functools.cache
def _cli_work():
    """`(directory, environment)` of the command-line runs: a temporary directory, and a
    persistent compilation cache there shared by this module's runs (they compile the same
    executables), float32 (no x64)."""
    work = tempfile.TemporaryDirectory(prefix="cfrjax-test-cli-")
    atexit.register(work.cleanup)
    env = dict(os.environ)
    env.update(JAX_COMPILATION_CACHE_DIR=os.path.join(work.name, "jax_cache"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES="0")
    env.pop("JAX_ENABLE_X64", None)
    return work.name, env


def _cli(env, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cfrjax", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


SIGTERM_ARGS = ("solve", "leduc_poker", "--iterations", "3000", "--checkpoint-every", "500", "--json", "--checkpoint")


def _sigterm_runs():
    """An uninterrupted run, then the same run stopped by SIGTERM after its first checkpoint
    and resumed (one after another: the second and third load the first's executables from
    the compilation cache). Returns what the tests check."""
    work, env = _cli_work()
    ckpt, ref_ckpt = os.path.join(work, "run.ckpt"), os.path.join(work, "ref.ckpt")
    ref = _cli(env, *SIGTERM_ARGS, ref_ckpt)
    args = [sys.executable, "-m", "cfrjax", *SIGTERM_ARGS, ckpt]
    delayed = dict(env, CFRJAX_TEST_CHUNK_DELAY_S="0.1")  # ~3 s of chunks: time to interrupt
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=delayed)
    deadline = time.time() + 240
    while not os.path.exists(ckpt) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    saved = os.path.exists(ckpt)
    if saved:
        proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    stopped = os.path.join(work, "stopped.ckpt")  # as the interrupted run left it
    if saved:
        shutil.copyfile(ckpt, stopped)
    resumed = _cli(env, *SIGTERM_ARGS, ckpt) if saved else None
    return dict(ref=ref, ref_ckpt=ref_ckpt, ckpt=ckpt, stopped=stopped, saved=saved, returncode=proc.returncode,
                stderr=err, resumed=resumed)


def _plot_run():
    """`--plot`, `--save-policy` and `--checkpoint` of a 2000-iteration run."""
    work, env = _cli_work()
    paths = {k: os.path.join(work, name) for k, name in
             (("png", "out.png"), ("policy", "policy.json"), ("ckpt", "plot.ckpt"))}
    # --eval-every 100: the chunk size of the 3000-iteration runs above (cached executables).
    out = _cli(env, "solve", "leduc_poker", "--iterations", "2000", "--plot", paths["png"], "--eval-every", "100",
               "--save-policy", paths["policy"], "--checkpoint", paths["ckpt"], "--json")
    return out, paths


# The command-line processes run in the background from the start of the session
# (tests/background.py); the tests check what they left.
BACKGROUND = {"sigterm": _sigterm_runs, "plot": _plot_run,
              "unknown_game": lambda: _cli(_cli_work()[1], "solve", "no_such_game")}


# ----------------------------------------------------------------------------------------
# Python API


@pytest.mark.parametrize("kwargs", [
    dict(rule="cfr+", order="alternating"),
    dict(rule="pdcfr+", order="alternating", alpha=2.0),
    dict(rule="dcfr", order="simultaneous", dtype="float32"),
])
def test_resume_from_halfway_is_bitwise_identical(kuhn, kwargs, tmp_path):
    state = cfrjax.init(kuhn, **kwargs)
    half = cfrjax.solve(kuhn, state, 40)
    full = cfrjax.solve(kuhn, half, 40)
    path = tmp_path / "run.ckpt"
    cfrjax.save_checkpoint(path, kuhn, half, extra={"note": "halfway"})
    assert os.listdir(tmp_path) == ["run.ckpt"]  # no temporary file left behind
    loaded = cfrjax.load_checkpoint(path, kuhn, config=state.config)
    assert_bitwise_equal(loaded, half)
    # a float32 solve's compensation (float32 on CPU, bfloat16 on a GPU) read back in this platform's dtype
    assert loaded.avg_comp.dtype == half.avg_comp.dtype == compensation_dtype(state.config.dtype)
    assert_bitwise_equal(cfrjax.solve(kuhn, loaded, 40), full)
    info = cfrjax.checkpoint.checkpoint_info(path)
    assert info["iteration"] == 40 and info["extra"] == {"note": "halfway"} and info["config"] == state.config


def test_batch_of_states_round_trips(kuhn, tmp_path):
    rng = np.random.default_rng(0)
    states = jax.vmap(lambda _: cfrjax.init(kuhn, "cfr"))(np.arange(3))
    states = dataclasses.replace(states, regret=rng.normal(size=states.regret.shape),
                                 iteration=np.array([1, 2, 3], np.int32))
    cfrjax.save_checkpoint(tmp_path / "b.ckpt", kuhn, states)
    assert_bitwise_equal(cfrjax.load_checkpoint(tmp_path / "b.ckpt", kuhn), states)
    assert cfrjax.checkpoint.checkpoint_info(tmp_path / "b.ckpt")["iteration"] == 3


def test_truncated_or_corrupt_checkpoint_is_a_clear_error(kuhn, tmp_path):
    state = cfrjax.solve(kuhn, cfrjax.init(kuhn), 10)
    good = tmp_path / "good.ckpt"
    cfrjax.save_checkpoint(good, kuhn, state)
    data = good.read_bytes()
    for name, content in [("truncated", data[:len(data) // 2]), ("empty", b""), ("garbage", b"not a checkpoint"),
                          ("tail_cut", data[:-10])]:
        bad = tmp_path / f"{name}.ckpt"
        bad.write_bytes(content)
        with pytest.raises(CheckpointError, match="truncated or corrupt"):
            cfrjax.load_checkpoint(bad, kuhn)
    # A flipped byte in the average's data: caught by the zip CRC or by the checksum.
    avg = np.asarray(state.avg).tobytes()
    i = data.index(avg)
    flipped = bytearray(data)
    flipped[i + len(avg) // 2] ^= 0xFF
    (tmp_path / "flipped.ckpt").write_bytes(bytes(flipped))
    with pytest.raises(CheckpointError, match="corrupt"):
        cfrjax.load_checkpoint(tmp_path / "flipped.ckpt", kuhn)
    with pytest.raises(FileNotFoundError):
        cfrjax.load_checkpoint(tmp_path / "missing.ckpt", kuhn)
    # A failed save leaves the previous checkpoint as it was.
    with pytest.raises(ValueError, match="JSON"):
        cfrjax.save_checkpoint(good, kuhn, state, extra={"x": object()})
    assert good.read_bytes() == data and sorted(os.listdir(tmp_path)).count("good.ckpt") == 1
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_checkpoint_of_another_game_or_config_is_refused(kuhn, leduc, tmp_path):
    state = cfrjax.solve(kuhn, cfrjax.init(kuhn, "cfr+", order="simultaneous"), 10)
    path = tmp_path / "k.ckpt"
    cfrjax.save_checkpoint(path, kuhn, state)
    with pytest.raises(CheckpointError, match="made for game 'kuhn_poker\\(\\)'.*not for 'leduc_poker\\(\\)'"):
        cfrjax.load_checkpoint(path, leduc)
    with pytest.raises(CheckpointError, match="different config: rule 'cfr\\+' \\(asked: 'cfr'\\)"):
        cfrjax.load_checkpoint(path, kuhn, config=cfrjax.Config(rule="cfr"))
    with pytest.raises(CheckpointError, match="different config: order"):
        cfrjax.load_checkpoint(path, kuhn, config=cfrjax.init(kuhn, "cfr+", order="alternating"))
    other = cfrjax.set_payoffs(kuhn, 2.0 * kuhn.payoff)  # same tree and fingerprint, other payoffs
    with pytest.raises(CheckpointError, match="other payoffs"):
        cfrjax.load_checkpoint(path, other)
    with pytest.raises(CheckpointError, match="made for game"):
        cfrjax.load_checkpoint(path, cfrjax.load_game("kuhn_poker", chance="explicit"))


# ----------------------------------------------------------------------------------------
# Policies


def test_policy_files_round_trip_exactly(kuhn, tmp_path):
    for dtype in ("float32", "float64"):
        state = cfrjax.solve(kuhn, cfrjax.init(kuhn, "cfr+", dtype=dtype), 50)
        policy = cfrjax.average_policy(kuhn, state)
        expl = float(cfrjax.exploitability(kuhn, policy))
        for ext in ("json", "npz"):
            path = tmp_path / f"p.{ext}"
            cfrjax.save_policy(path, kuhn, policy, meta={"iterations": 50})
            loaded = cfrjax.load_policy(path, kuhn)
            assert loaded.dtype == policy.dtype
            assert np.asarray(loaded).tobytes() == np.asarray(policy).tobytes()
            assert float(cfrjax.exploitability(kuhn, loaded)) == expl
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["infosets"]["0"] == {"player": 0, "actions": {"Pass": pytest.approx(float(policy[0])),
                                                             "Bet": pytest.approx(float(policy[1]))}}
    # Matched by names: loads into the other chance mode's compilation too.
    explicit = cfrjax.load_game("kuhn_poker", chance="explicit")
    assert np.array_equal(cfrjax.load_policy(tmp_path / "p.json", explicit), policy)
    with pytest.raises(ValueError, match="not in the policy file"):
        cfrjax.load_policy(tmp_path / "p.json", cfrjax.load_game("leduc_poker"))


def test_strategy_table(kuhn):
    policy = cfrjax.policy.uniform_policy(kuhn)
    rows = cfrjax.strategy.strategy_table(kuhn, policy)
    assert len(rows) == kuhn.num_slots
    assert rows[0] == {"infoset": "0", "player": 0, "action": "Pass", "probability": 0.5}
    assert {r["player"] for r in rows} == {0, 1}
    assert cfrjax.strategy.strategy_table(kuhn, policy, min_probability=0.6) == []


def test_strategy_table_poker_rows_have_hand_and_history():
    from cfrjax.games.poker import PokerSubgameSpec, build_spec
    game = cfrjax.load_game(build_spec(PokerSubgameSpec(board="Ks Js Th 7d 2c", pot=20, stack=100,
                                                        bet_fractions=(1.0,), range0="AA", range1="QQ")))
    rows = cfrjax.strategy.strategy_table(game, cfrjax.policy.uniform_policy(game))
    assert len(rows) == game.num_slots
    assert {"infoset", "player", "action", "probability", "hand", "history"} <= set(rows[0])
    assert rows[0]["history"] == "" and rows[0]["hand"] in rows[0]["infoset"]


def test_show_prints_action_probabilities(kuhn, tmp_path, capsys):
    policy = cfrjax.policy.uniform_policy(kuhn)
    path = tmp_path / "p.npz"
    cfrjax.save_policy(path, kuhn, policy)
    assert cli.main(["show", str(path), "1pb"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("1pb") and "player 0" in out[0]
    assert [l.split() for l in out[1:]] == [["Pass", "0.500000"], ["Bet", "0.500000"]]
    assert cli.main(["show", str(path), "zzz"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("cfrjax: error: no information set") and "zzz" in err[0]


def test_games_lists_sizes(capsys, tmp_path, monkeypatch):
    """`cfrjax games` lists the built-in games and the specs of a directory with their
    sizes (a poker spec in the public form: its public nodes and decision nodes x hands).
    The shipped specs are left out here (tests/test_formats.py checks theirs)."""
    shutil.copy(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "games", "hunl_river.toml"),
                tmp_path / "my_river.toml")
    monkeypatch.setattr(cfrjax.specs, "shipped_specs", lambda: {})
    assert cli.main(["games", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "leduc_poker" in out and "9,457" in out
    row = next(line.split() for line in out.splitlines() if line.startswith("my_river "))
    game = cfrjax.load_game(str(tmp_path / "my_river.toml"), form="public")
    assert row[2:] == ["public", f"{game.num_nodes:,}", f"{game.num_infosets * game.num_hands:,}"]


def test_known_sizes_are_right():
    from cfrjax.games.openspiel import spec_from_openspiel
    for src in ("kuhn_poker", "leduc_poker", "dark_hex(num_rows=2,num_cols=2)"):
        spec = spec_from_openspiel(src)
        assert cli.KNOWN_SIZES[src] == (spec.num_nodes, spec.num_infosets)


def test_stop_points_are_absolute():
    assert stop_points(0, 10, 3, None) == [3, 6, 9, 10]
    assert stop_points(0, 3000, 300, 500)[:4] == [100, 200, 300, 400]  # gcd: one chunk size
    assert stop_points(700, 1000, 300, 500) == [800, 900, 1000]
    assert stop_points(0, 10_000, 997, 1000)[:3] == [997, 1000, 1994]  # gcd 1: union instead


# ----------------------------------------------------------------------------------------
# The command line


@pytest.mark.fixed_order
@pytest.mark.background("sigterm")
def test_cli_sigterm_then_resume_equals_uninterrupted_run(leduc):
    run = background.result(__name__, "sigterm")
    assert run["saved"], run["stderr"]
    assert run["returncode"] == 128 + signal.SIGTERM, run["stderr"]
    assert "stopped by SIGTERM" in run["stderr"] and "Traceback" not in run["stderr"]
    stopped_at = cfrjax.checkpoint.checkpoint_info(run["stopped"])["iteration"]
    assert 500 <= stopped_at < 3000

    resumed = run["resumed"]
    assert resumed.returncode == 0, resumed.stderr
    record = json.loads(resumed.stdout.splitlines()[-1])
    assert record["resumed_from"] == stopped_at and record["iterations"] == 3000
    ref = run["ref"]
    assert ref.returncode == 0, ref.stderr
    assert_bitwise_equal(cfrjax.load_checkpoint(run["ckpt"], leduc), cfrjax.load_checkpoint(run["ref_ckpt"], leduc))
    assert record["exploitability"] == json.loads(ref.stdout.splitlines()[-1])["exploitability"]


def test_cli_refuses_mismatched_or_corrupt_checkpoint(kuhn, tmp_path, capsys):
    ckpt = tmp_path / "k.ckpt"
    cfrjax.save_checkpoint(ckpt, kuhn, cfrjax.init(kuhn, "cfr+", dtype="float32"))
    before = ckpt.read_bytes()
    assert cli.main(["solve", "kuhn_poker", "--checkpoint", str(ckpt), "--rule", "cfr"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("cfrjax: error: checkpoint") and "rule 'cfr+' (asked: 'cfr')" in err[-1]
    assert ckpt.read_bytes() == before
    ckpt.write_bytes(before[:100])
    assert cli.main(["solve", "kuhn_poker", "--checkpoint", str(ckpt)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "truncated or corrupt" in err[0]


@pytest.mark.background("plot")
def test_cli_plot_and_policy(leduc):
    out, paths = background.result(__name__, "plot")
    assert out.returncode == 0, out.stderr
    png, pol = pathlib.Path(paths["png"]), pathlib.Path(paths["policy"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    import matplotlib.image
    assert matplotlib.image.imread(png).shape[:2] == (400, 1000)
    record = json.loads(out.stdout.splitlines()[-1])
    doc = json.loads(pol.read_text())
    assert doc["meta"]["iterations"] == 2000 and len(doc["infosets"]) == 936
    assert doc["meta"]["exploitability"] == record["exploitability"]
    # The saved policy is the final state's average policy, bit for bit (so its
    # exploitability is the reported number: test_policy_files_round_trip_exactly).
    state = cfrjax.load_checkpoint(paths["ckpt"], leduc)
    policy = cfrjax.load_policy(pol, leduc)
    assert np.asarray(policy).tobytes() == np.asarray(cfrjax.average_policy(leduc, state)).tobytes()


@pytest.mark.background("unknown_game")
def test_cli_errors_are_one_line(tmp_path, capsys, monkeypatch):
    out = background.result(__name__, "unknown_game")  # a real process: OpenSpiel's own stderr counts too
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        "cfrjax: error: unknown game 'no_such_game': not a file and not an OpenSpiel game (`cfrjax games` "
        "lists some; any OpenSpiel game string works)"]
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    cases = [
        (["solve", "kuhn_poker", "--plot", str(tmp_path / "x.png")], "--plot needs matplotlib"),
        (["solve", "kuhn_poker", "--checkpoint-every", "5"], "needs --checkpoint"),
        (["solve", "kuhn_poker", "--save-policy", "p.csv"], ".json or .npz"),
        (["solve", "kuhn_poker(foo=1)"], "Unknown parameter 'foo'"),
        (["solve", "missing.toml"], "no such file"),
        (["show", str(tmp_path / "none.json"), "x"], "does not exist"),
    ]
    for args, needle in cases:
        assert cli.main(args) == 2, args
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("cfrjax: error:") and needle in lines[0], (args, lines)


def test_bfloat16_compensation_from_a_gpu_loads_widened_on_cpu(kuhn, tmp_path):
    state = cfrjax.solve(kuhn, cfrjax.init(kuhn, rule="cfr+", dtype="float32"), 30)
    gpu_like = dataclasses.replace(state, avg_comp=state.avg_comp.astype(compensation_dtype("float32", "gpu")))
    assert gpu_like.avg_comp.dtype == jnp.bfloat16 and np.any(np.asarray(gpu_like.avg_comp) != 0)
    path = tmp_path / "gpu.ckpt"
    cfrjax.save_checkpoint(path, kuhn, gpu_like)   # stored widened: npz has no bfloat16
    loaded = cfrjax.load_checkpoint(path, kuhn, config=state.config)
    assert loaded.avg_comp.dtype == compensation_dtype("float32") == jnp.float32
    assert np.array_equal(np.asarray(loaded.avg_comp), np.asarray(gpu_like.avg_comp, np.float32))


def test_checkpoint_with_every_leaf_loads_without_the_unused_ones(kuhn, tmp_path):
    """A checkpoint written when every state held a prediction (zeros for a rule that does
    not predict) and a lock mask (locking nothing) loads as the state of today's layout:
    both dropped, the rest bit for bit. A predictive rule's checkpoint without its
    prediction is refused with one line."""
    state = cfrjax.solve(kuhn, cfrjax.init(kuhn, rule="cfr+"), 10)
    old = dataclasses.replace(state, prediction=jnp.zeros_like(state.regret),
                              locked=jnp.zeros(state.regret.shape, bool), locked_policy=jnp.zeros_like(state.regret))
    path = tmp_path / "old.ckpt"
    cfrjax.save_checkpoint(path, kuhn, old)
    with np.load(path) as z:
        assert {"prediction", "locked", "locked_policy"} <= set(z.files)
    loaded = cfrjax.load_checkpoint(path, kuhn, config=state.config)
    assert loaded.prediction is None and loaded.locked is None and loaded.locked_policy is None
    assert_bitwise_equal(loaded, state)
    predictive = cfrjax.solve(kuhn, cfrjax.init(kuhn, rule="pcfr+"), 10)
    cfrjax.save_checkpoint(path, kuhn, dataclasses.replace(predictive, prediction=None))
    with pytest.raises(CheckpointError, match="rule 'pcfr\\+' predicts but the checkpoint holds no prediction"):
        cfrjax.load_checkpoint(path, kuhn)
