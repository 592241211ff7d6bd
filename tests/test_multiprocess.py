"""Two processes on localhost, each with 2 CPU devices, solving one batch of river
subgames through the multi-host entry point (`cfrjax solve-batch --coordinator ...
--num-processes 2 --process-id I`, i.e. `jax.distributed.initialize` and
`cfrjax.shard.solve_sharded(..., process_local=True)` in `cfrjax.multihost`).

* The joined shard files equal one process's `cfrjax.solve_batch` of the whole batch
  bit for bit (a third process computes it, without x64, as the workers run).
* One process is SIGKILLed mid-run (process 1; in a second run at the same time, process
  0, the coordinator, whose loss jaxlib answers by aborting the other): the other exits with code 1 and a one-line error
  naming the lost process, within 60 s, and its shard file keeps the iterations it
  finished (equal to the reference at that iteration).

Everything runs in other processes (bounded by timeouts, killed on failure) as one
background job (`tests/background.py`). The second run reuses the first run's compiled
executables through JAX's persistent cache, to keep the module's wall time down.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np
import pytest

import background
import codegen

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B, T, CHUNK, SEED = 8, 40, 5, 3
TIMEOUT_S = 90  # any one process
LOST_LIMIT_S = 60

SPEC = textwrap.dedent("""\
    game = "poker_subgame"
    name = "river_mp"
    board = "Ks Js Th 7d 2c"
    pot = 20
    stack = 100
    [betting]
    bet_fractions = [0.5, 1.0]
    raise_cap = 0
    [ranges]
    random_hands = 10
    seed = 0
""")

# One process, one device, no x64: cfrjax.solve_batch of the whole batch, T iterations at
# once, and chunk by chunk (the states after every CHUNK iterations).
REFERENCE = textwrap.dedent(r"""
    import sys, numpy as np, jax, cfrjax
    from cfrjax import multihost
    spec, out, B, T, C, seed = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:7])
    g = cfrjax.load_game(spec, form="tabular")
    games = multihost.random_batch(g, B, seed)
    s0 = cfrjax.batch.init_batch(g, B, dtype="float32")  # the defaults, as the command line's
    names = ("regret", "avg", "avg_weight", "iteration")   # DCFR: no prediction
    arrays = {f"whole.{k}": np.asarray(getattr(cfrjax.solve_batch(games, s0, T), k)) for k in names}
    s = s0
    for it in range(C, T + 1, C):
        s = cfrjax.solve_batch(games, s, C)
        arrays.update({f"{it}.{k}": np.asarray(getattr(s, k)) for k in names})
    np.savez(out, **arrays)
    print("devices", jax.device_count(), "x64", jax.config.jax_enable_x64)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(work, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "XLA_", "CFRJAX_"))}
    env.update(JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count=2 {codegen.suite_flags()}",
               JAX_COMPILATION_CACHE_DIR=os.path.join(work, "jax-cache"),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0", PYTHONUNBUFFERED="1")
    env.update(extra)
    return env


def _start(args, env, log):
    f = open(log, "w")
    p = subprocess.Popen(args, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    p.log, p.logfile = log, f
    return p


def _worker(work, out, port, i, env):
    return _start([sys.executable, "-m", "cfrjax", "solve-batch", os.path.join(work, "river_mp.toml"),
                   "--form", "tabular", "--batch", str(B), "--iterations", str(T), "--chunk", str(CHUNK),
                   "--seed", str(SEED), "--out", out, "--coordinator", f"127.0.0.1:{port}",
                   "--num-processes", "2", "--process-id", str(i), "--heartbeat-timeout", "5",
                   "--init-timeout", "60", "--verbose"], env, os.path.join(work, f"{os.path.basename(out)}-{i}.log"))


def _wait(p, deadline):
    try:
        rc = p.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(p)
        rc = "timeout"
    p.logfile.close()
    with open(p.log) as f:
        return rc, f.read()


def _kill(p):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def _runs():
    """Both scenarios; returns exit codes, logs, timings and paths (asserts nothing)."""
    work = tempfile.mkdtemp(prefix="cfrjax-mp-")
    with open(os.path.join(work, "river_mp.toml"), "w") as f:
        f.write(SPEC)
    res = {"work": work}
    procs, ref = [], None
    try:
        # 1. the whole run, and the reference alongside it
        env = _env(work)
        port, out = _free_port(), os.path.join(work, "ok")
        t0 = time.monotonic()
        deadline = t0 + TIMEOUT_S
        procs = [_worker(work, out, port, i, env) for i in range(2)]
        ref = _start([sys.executable, "-c", REFERENCE, os.path.join(work, "river_mp.toml"),
                      os.path.join(work, "reference.npz"), str(B), str(T), str(CHUNK), str(SEED)],
                     {**{k: v for k, v in env.items() if k != "JAX_COMPILATION_CACHE_DIR"},
                      "XLA_FLAGS": codegen.suite_flags()},
                     os.path.join(work, "reference.log"))
        res["ok"] = [_wait(p, deadline) for p in procs[:2]]
        res["ok_wall_s"] = time.monotonic() - t0
        res["ok_out"] = out

        # 2. at once, in two runs: process 1 killed, and process 0 (the coordinator) killed,
        # each once the victim has saved its first chunk (so it is solving)
        env = _env(work, CFRJAX_TEST_CHUNK_DELAY_S="1")
        deadline = time.monotonic() + TIMEOUT_S
        runs = {}
        for victim in (1, 0):
            out = os.path.join(work, f"lost{victim}")
            port = _free_port()
            runs[victim] = (out, [_worker(work, out, port, i, env) for i in range(2)])
            procs += runs[victim][1]
        for victim, (out, pair) in runs.items():
            # both have saved a chunk: the victim is solving, the survivor has a shard to keep
            shards = [os.path.join(out, f"shard-{i:05d}-of-00002.npz") for i in range(2)]
            while (not all(map(os.path.exists, shards)) and all(p.poll() is None for p in pair)
                   and time.monotonic() < deadline):
                time.sleep(0.05)
            res[f"victim{victim}_started"] = all(map(os.path.exists, shards))
            # the whole process group: a process other than 0 is a supervisor and its child
            os.killpg(pair[victim].pid, signal.SIGKILL)
            res[f"t_kill{victim}"] = time.monotonic()
        for victim, (out, pair) in runs.items():
            survivor = pair[1 - victim]
            res[f"survivor{victim}"] = _wait(survivor, res[f"t_kill{victim}"] + LOST_LIMIT_S + 10)
            res[f"survivor{victim}_s"] = time.monotonic() - res[f"t_kill{victim}"]
            res[f"victim{victim}"] = _wait(pair[victim], deadline)
            res[f"lost{victim}_out"] = out
        res["reference"] = _wait(ref, time.monotonic() + TIMEOUT_S)
        return res
    finally:
        for p in procs + [ref]:
            if p is not None:
                _kill(p)


BACKGROUND = {"runs": _runs}
pytestmark = pytest.mark.background("runs")


@pytest.fixture(scope="module")
def runs():
    res = background.result(__name__, "runs")
    yield res
    shutil.rmtree(res["work"], ignore_errors=True)


def _reference(runs):
    rc, log = runs["reference"]
    assert rc == 0, log[-3000:]
    assert "devices 1 x64 False" in log
    with np.load(os.path.join(runs["work"], "reference.npz")) as z:
        return {k: z[k] for k in z.files}


def test_two_processes_equal_one_process_solve_batch_bitwise(runs):
    from cfrjax import multihost

    for rc, log in runs["ok"]:
        assert rc == 0, log[-3000:]
        assert "Traceback" not in log
    assert "cfrjax: plan auto on cpu" in runs["ok"][0][1]      # --verbose: the plan that ran
    shards = multihost.read_shards(runs["ok_out"])
    assert [(m["process_id"], m["rows_lo"], m["rows_hi"], m["devices"], m["mesh_devices"]) for m in shards["meta"]] \
        == [(0, 0, 4, 2, 4), (1, 4, 8, 2, 4)]
    assert shards["rows"].tolist() == list(range(B))
    assert shards["iterations"].tolist() == [T] * B
    ref = _reference(runs)
    for k in ("regret", "avg", "avg_weight", "iteration"):
        got, whole = shards["state"][k], ref[f"whole.{k}"]
        assert got.dtype == whole.dtype == (np.int32 if k == "iteration" else np.float32), k
        assert np.array_equal(got, whole), k  # bitwise: float32 and no NaN
        assert np.array_equal(got, ref[f"{T}.{k}"]), k
    assert shards["state"]["iteration"].tolist() == [T] * B
    assert not np.array_equal(shards["state"]["avg"][0], shards["state"]["avg"][4])  # different subgames


@pytest.mark.parametrize("victim", [1, 0])
def test_lost_peer_stops_the_other_with_one_line_error(runs, victim):
    """Process 1 lost: process 0 notices it (heartbeats) and stops with a `PeerLostError`.
    Process 0 lost: jaxlib aborts process 1's worker (SIGABRT), which its supervisor reports
    (`cfrjax.supervise`). Either way one line, exit code 1, the shard kept."""
    from cfrjax import multihost

    survivor = 1 - victim
    assert runs[f"victim{victim}_started"], runs[f"victim{victim}"][1][-3000:]
    assert runs[f"victim{victim}"][0] == -signal.SIGKILL
    rc, log = runs[f"survivor{victim}"]
    assert rc == 1, log[-3000:]
    assert runs[f"survivor{victim}_s"] < LOST_LIMIT_S
    assert "Traceback" not in log and "Check failure" not in log, log[-3000:]
    errors = [ln for ln in log.splitlines() if ln.startswith("cfrjax: error:")]
    assert len(errors) == 1 and log.rstrip().endswith(errors[0]), log[-3000:]
    assert f"shard-{survivor:05d}-of-00002.npz" in errors[0]
    # the survivor kept what it finished: its shard, equal to the reference at that iteration
    arrays, meta = multihost._read_npz(multihost.shard_path(runs[f"lost{victim}_out"], survivor, 2))
    done = meta["iterations_done"]
    assert CHUNK <= done < T and done % CHUNK == 0
    if victim == 1:
        assert errors[0].startswith("cfrjax: error: lost process 1 of 2"), errors[0]
        assert f"stopped at iteration {done} of {T}" in errors[0]
    else:
        assert errors[0].startswith("cfrjax: error: process 1 of 2 stopped: "), errors[0]
        assert "process 0 (the coordinator" in errors[0] and f"keeps iteration {done} of {T}" in errors[0]
    ref = _reference(runs)
    rows = slice(4 * survivor, 4 * survivor + 4)
    for k in ("regret", "avg", "iteration"):
        assert np.array_equal(arrays[f"state.{k}"], ref[f"{done}.{k}"][rows]), k
