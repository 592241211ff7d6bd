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
    """`{"wheel": path or None, "returncode", "output", "seconds", "isolated"}` (built once)."""
    global _built
    with _lock:
        if _built is None:
            out = temp_dir("cfrjax-wheel-")
            isolated = not _setuptools_builds_wheels()
            cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out]
            cmd += [] if isolated else ["--no-build-isolation"]
            t0 = time.perf_counter()
            p = subprocess.run(cmd + [ROOT], capture_output=True, text=True, timeout=300, cwd=out,
                               env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
            wheels = sorted(glob.glob(os.path.join(out, "cfrjax-*.whl")))
            _built = dict(wheel=wheels[0] if p.returncode == 0 and wheels else None, returncode=p.returncode,
                          output=p.stdout + p.stderr, seconds=time.perf_counter() - t0, isolated=isolated)
        return _built
