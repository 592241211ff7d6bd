"""The command line: JSON record, errors as one line with a non-zero exit code.

The command-line processes run in the background from the start of the session
(`tests/background.py`)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import background
from cfrjax.compile_cache import enable_compile_cache


def _run(*args):
    return subprocess.run([sys.executable, "-m", "cfrjax", *args], capture_output=True, text=True, timeout=300)


_CACHE = tempfile.mkdtemp(prefix="cfrjax-cli-cache-")

BACKGROUND = {
    "solve_json": lambda: _run("solve", "kuhn_poker", "--iterations", "200", "--order", "alternating",
                               "--eval-every", "50", "--json", "--compile-cache", os.path.join(_CACHE, "xla")),
    "unknown_game": lambda: _run("solve", "no_such_game"),
}


@pytest.mark.background("solve_json")
def test_solve_json():
    out = background.result(__name__, "solve_json")
    assert out.returncode == 0, out.stderr
    record = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("game", "rule", "order", "averaging", "dtype", "iterations", "exploitability", "value", "nodes",
                "infosets", "slots", "depth", "device", "compile_s", "solve_s", "ms_per_iter", "peak_device_bytes"):
        assert key in record
    assert record["peak_device_bytes"] is None if record["backend"] == "cpu" else record["peak_device_bytes"] > 0
    assert record["iterations"] == 200 and record["nodes"] == 58 and record["infosets"] == 12
    assert record["plan"]["name"] == "auto" and record["plan"]["platform"] == record["backend"]   # the plan that ran
    # The command lets XLA's GPU memory pool grow unless the user set the variable.
    assert record["preallocate"] == os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    assert 0 < record["exploitability"] < 1e-2
    # --compile-cache: the solve's programs were kept there for the next run (`cfrjax.programs`).
    kept = [name for _, _, files in os.walk(os.path.join(_CACHE, "xla", "programs")) for name in files]
    shutil.rmtree(_CACHE, ignore_errors=True)
    assert len([name for name in kept if name.endswith(".bin")]) >= 2, kept   # the solve chunks, the evaluation


def test_compile_cache_off_and_bad_folder(tmp_path):
    assert enable_compile_cache("off") is None and enable_compile_cache("OFF") is None
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(OSError, match="cannot be created.*CFRJAX_COMPILE_CACHE"):
        enable_compile_cache(blocker / "xla")


@pytest.mark.background("unknown_game")
def test_unknown_game_is_one_line_error():
    out = background.result(__name__, "unknown_game")
    assert out.returncode != 0
    lines = [l for l in out.stderr.splitlines() if l.startswith("cfrjax: error")]
    assert len(lines) == 1 and "no_such_game" in lines[0]
    assert "Traceback" not in out.stderr
