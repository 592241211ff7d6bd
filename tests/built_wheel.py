"""The wheel of this checkout, built once per test session and shared by the tests that
install it (`test_wheel.py`: a fresh venv; `test_notebooks.py`: a notebook's install cell).

Built with `pip wheel --no-deps` from the source tree into a temporary folder (removed at
exit). Without build isolation when the installed setuptools can build wheels itself
(>= 70.1, or with the `wheel` package: the `test` extra asks for it), so nothing is
downloaded; otherwise pip's isolated build fetches the build backend. Called from the
background jobs (`tests/background.py`): it runs processes and returns what they
produced, asserting nothing.
"""

from __future__ import annotations

import atexit
import glob
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_lock = threading.Lock()
_built: dict | None = None


def _setuptools_builds_wheels() -> bool:
    if importlib.util.find_spec("wheel") is not None:
        return True
    try:
        major, minor = (int(x) for x in importlib.metadata.version("setuptools").split(".")[:2])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1)  # bdist_wheel moved into setuptools in 70.1


def temp_dir(prefix: str) -> str:
    """A new temporary folder (outside the source tree), removed when the session ends."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def build() -> dict:
    """`{"wheel": path or None, "returncode", "output", "seconds", "isolated"}` (built once
    per session: under pytest-xdist the first worker to ask builds it into the session's
    shared folder, `_shared`, and the other reads what it wrote)."""
    global _built
    with _lock:
        if _built is None:
            shared = _shared()
            if shared is None:
                _built = _build(temp_dir("cfrjax-wheel-"))
            else:
                import fcntl

                with open(os.path.join(shared, "lock"), "w") as lock:
                    fcntl.flock(lock, fcntl.LOCK_EX)   # released when closed
                    done = os.path.join(shared, "built.json")
                    if os.path.exists(done):
                        with open(done) as f:
                            _built = json.load(f)
                    else:
                        _built = _build(shared)
                        with open(done + ".tmp", "w") as f:
                            json.dump(_built, f)
                        os.replace(done + ".tmp", done)
        return _built


def _shared() -> str | None:
    """The session's wheel folder inside the folder `conftest.py` makes for the session and
    its xdist workers (its compilation cache, removed at the end), or None outside a
    suite run."""
    base = os.environ.get("CFRJAX_TESTS_XLA_CACHE")
    if not base or not os.path.isdir(base):
        return None
    path = os.path.join(base, "wheel")
    os.makedirs(path, exist_ok=True)
    return path


def _build(out: str) -> dict:
    """`pip wheel` of the checkout into `out`."""
    isolated = not _setuptools_builds_wheels()
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out]
    cmd += [] if isolated else ["--no-build-isolation"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd + [ROOT], capture_output=True, text=True, timeout=300, cwd=out,
                       env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    wheels = sorted(glob.glob(os.path.join(out, "cfrjax-*.whl")))
    return dict(wheel=wheels[0] if p.returncode == 0 and wheels else None, returncode=p.returncode,
                output=p.stdout + p.stderr, seconds=time.perf_counter() - t0, isolated=isolated)
