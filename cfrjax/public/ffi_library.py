"""Native code built on first use and registered with XLA's FFI: one helper for the CPU
library (`cfrjax.public.native`, C++) and the GPU one (`cfrjax.public.cuda_showdown`, CUDA).

A library's sources ship with the package. The first process that needs it compiles them
with the machine's compiler into `$XDG_CACHE_HOME/cfrjax/native/<key>/` (`~/.cache/cfrjax`,
`cfrjax.compile_cache.cache_home`), where `key` hashes the sources, the jaxlib version and
whatever else the build depends on (flags, compiler version, CPU); later processes load it.
A build is written under a temporary name and renamed, under a lock file beside it:
processes starting side by side (a test suite's workers, a batch of jobs on one machine)
build it once, the others wait for it and load it. A failure (no compiler, a compile
error) is remembered with its reason; the plan (`cfrjax.plan.resolve_plan`) records it as
a fallback, says it once, and the XLA form runs instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import fcntl
import hashlib
import os
import subprocess
import tempfile
from typing import Callable

import jax

from cfrjax.compile_cache import cache_home


@contextlib.contextmanager
def _locked(path: str):
    """An exclusive lock on the file `path` (created with its folder) while the block runs."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@dataclasses.dataclass(eq=False)
class FfiLibrary:
    """One native library: `sources` compiled by `command(sources, output)` (a list of
    arguments; raises `RuntimeError` with the reason where it cannot build, e.g. no
    compiler) into a file `name`, whose `targets` (FFI handler symbols) are registered
    for `platform` ("cpu" or "CUDA"). `key()` returns what else the build depends on
    (bytes)."""

    name: str
    sources: tuple
    targets: tuple
    platform: str
    command: Callable[[tuple, str], list]
    key: Callable[[], bytes]
    _state: dict = dataclasses.field(default_factory=dict)

    def path(self) -> str:
        """Where the library for these sources, this jaxlib and `key()` lives."""
        import jaxlib
        parts = []
        for name in self.sources:
            with open(name, "rb") as f:
                parts.append(f.read())
        digest = hashlib.sha256(b"\0".join([*parts, jaxlib.__version__.encode(), self.key()])).hexdigest()[:16]
        return os.path.join(cache_home(), "native", digest, self.name)

    def _build(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
        os.close(fd)
        try:
            cmd = self.command(self.sources, tmp)
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode:
                raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def load(self, build: bool) -> bool:
        """Register the library, building it first when `build` and it is missing; a
        failure is remembered (`error()`), so the build is tried once per process."""
        if "lib" in self._state:
            return True
        if "error" in self._state:
            return False
        try:
            path = self.path()
            if not os.path.exists(path):
                if not build:
                    return False
                with _locked(path + ".lock"):
                    if not os.path.exists(path):  # another process may have built it while this one waited
                        self._build(path)
            lib = ctypes.cdll.LoadLibrary(path)
            for target in self.targets:
                jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(lib, target)), platform=self.platform)
            self._state["lib"] = lib
            return True
        except Exception as e:   # noqa: BLE001 (any failure leaves the XLA form in place, with its reason)
            self._state["error"] = f"{type(e).__name__}: {e}"
            return False

    def error(self) -> str | None:
        """Why the library did not load (`None` while it has not failed)."""
        return self._state.get("error")
