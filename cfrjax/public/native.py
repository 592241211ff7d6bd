"""The public form's sorted showdown on the CPU as native code (an XLA FFI custom call).

XLA:CPU runs the sorted showdown (`cfrjax.public.terminals`) as row gathers, parallel
prefix scans and materialising scatters: a few dozen kernels over memory per call, more
than half of a full-range river iteration and a third of a turn's on one core. The same
tables and formula as two plain loops over rows of `Q` contiguous numbers
(`native_showdown.cc`), the table staying in the cache, is one call; a batch with a board
per subgame is one call too (`terminals._showdown_native_per_subgame`).

Built on first use: the C++ source shipped with the package is compiled with the system's
C++ compiler (`$CXX`, else `c++` / `g++`) against the XLA FFI headers of the installed
jaxlib (`jax.ffi.include_dir()`), into `$XDG_CACHE_HOME/cfrjax/native/<key>/`
(`~/.cache/cfrjax/native`, `cfrjax.compile_cache.cache_home`; the key hashes the source, the jaxlib version, the flags and
the machine), a few seconds once per machine. Without a compiler, or where the build
fails, `available()` is false (the reason in `why_unavailable()`) and the showdown runs in
XLA as before: the two agree to rounding (tested). `CFRJAX_NATIVE=0` switches it off.

A library already built is registered with XLA when this module is imported, so that an
executable read back from a compilation cache (`cfrjax.compile_cache`, `cfrjax.programs`)
finds its custom call without tracing anything.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile

import jax
import jax.numpy as jnp

from cfrjax.compile_cache import cache_home

__all__ = ["ENABLED", "available", "showdown", "why_unavailable"]

#: Use the native showdown on CPU where it builds (the tests switch it off to compare).
ENABLED = os.environ.get("CFRJAX_NATIVE", "1").strip().lower() not in ("0", "false", "off", "no")

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native_showdown.cc")
_TARGETS = {"float32": "CfrjaxShowdownF32", "float64": "CfrjaxShowdownF64"}
_FLAGS = ("-O3", "-std=c++17", "-shared", "-fPIC")
_state: dict = {}


def _library_path() -> str:
    """Where this source, jaxlib and machine's library lives (`<cache_home()>/native/<key>/`)."""
    import jaxlib
    with open(_SOURCE, "rb") as f:
        src = f.read()
    key = hashlib.sha256(b"\0".join([src, jaxlib.__version__.encode(), " ".join(_FLAGS).encode(),
                                     platform.machine().encode(), platform.system().encode()])).hexdigest()[:16]
    return os.path.join(cache_home(), "native", key, "libcfrjax_native.so")


def _compiler() -> str | None:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return name
    return None


def _build(path: str) -> None:
    """Compile the source into `path` (written to a temporary name, then renamed: processes
    building side by side each end with a whole library)."""
    cxx = _compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler found (set CXX, or install g++)")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=os.path.dirname(path))
    os.close(fd)
    try:
        cmd = [cxx, *_FLAGS, "-I", jax.ffi.include_dir(), _SOURCE, "-o", tmp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _register(path: str) -> None:
    lib = ctypes.cdll.LoadLibrary(path)
    for target in _TARGETS.values():
        jax.ffi.register_ffi_target(target, jax.ffi.pycapsule(getattr(lib, target)), platform="cpu")
    _state["lib"] = lib


def _load(build: bool) -> bool:
    """Register the library, building it first when `build` and it is missing; remember
    a failure (its reason) so the build is tried once per process."""
    if "lib" in _state:
        return True
    if "error" in _state:
        return False
    try:
        path = _library_path()
        if not os.path.exists(path):
            if not build:
                return False
            _build(path)
        _register(path)
        return True
    except Exception as e:   # noqa: BLE001 (any failure leaves the XLA form in place, with its reason)
        _state["error"] = f"{type(e).__name__}: {e}"
        return False


def available() -> bool:
    """Whether the native showdown runs (`ENABLED`, and the library builds and loads)."""
    return ENABLED and _load(build=True)


def why_unavailable() -> str | None:
    """Why `available()` is false (`None` when it is true)."""
    if not ENABLED:
        return "switched off (cfrjax.public.native.ENABLED, CFRJAX_NATIVE=0)"
    return None if available() else _state.get("error")


def showdown(x, sorted_t, cards_t, index_t):
    """`Wk - St` of one board's showdowns (`cfrjax.public.terminals`, module docstring):
    hand-major reach `x [H, Q]` (float32 or float64) and the board's tables `sd_sorted
    [H]`, `sd_card_sorted [C, M]`, `sd_index [H, 6]` -> `[H, Q]`; or several boards, every
    operand with the same leading axes in front (each table's of the reach's size or 1,
    broadcast). Under `vmap` every operand gains the mapped axes in front that way.

    The tables are read as `showdown_tables` builds them (every index in range); they are
    not checked in the call (checking them cost 0.016 ms of a 0.13 ms river iteration)."""
    if not available():
        raise RuntimeError(f"the native showdown is not available: {why_unavailable()}")
    target = _TARGETS.get(jnp.dtype(x.dtype).name)
    if target is None:
        raise TypeError(f"native showdown: reach dtype must be float32 or float64, got {x.dtype}")
    call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")
    i32 = lambda a: jnp.asarray(a, jnp.int32)   # noqa: E731
    return call(x, i32(sorted_t), i32(cards_t), i32(index_t))


if ENABLED:
    _load(build=False)
