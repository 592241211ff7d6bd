"""JAX's persistent compilation cache, switched on for cfrjax's programs.

A solve compiles one XLA executable per (game shape, configuration, iteration count); on a
CPU that takes seconds (about 2 s for a Leduc solve, 3-11 s for a full-range poker spot),
often longer than the solve. JAX can keep compiled executables on disk and read them back
in the next process (`jax_compilation_cache_dir`), but by default only programs that took
at least one second to compile are kept, and nothing is kept unless a folder is set. The
command line calls `enable_compile_cache()` before compiling anything, so a second
`cfrjax solve` of the same spot and options reads its executables back; Python users call
it themselves (once, before the first compile).

Where: the `path` argument, else `$CFRJAX_COMPILE_CACHE`, else a folder JAX was already
given (`JAX_COMPILATION_CACHE_DIR` or `jax.config`), else `$XDG_CACHE_HOME/cfrjax/xla`
(`~/.cache/cfrjax/xla`). `"off"` (argument or variable) leaves JAX's setting alone. Every
program is kept (`jax_persistent_cache_min_compile_time_secs = 0`) unless that threshold
was set through its environment variable. A cached executable is the same program, so
results are bit for bit those of a fresh compile. cfrjax's own solves and evaluations
are kept whole beside it (`cfrjax.programs`): a new process does not trace or lower them.
"""

from __future__ import annotations

import contextlib
import os

import jax

from cfrjax import programs

__all__ = ["ENV", "OFF", "cache_home", "compile_count", "default_dir", "enable_compile_cache"]

#: Environment variable naming the cache folder (or `off`).
ENV = "CFRJAX_COMPILE_CACHE"
#: The value that disables it.
OFF = "off"


def cache_home() -> str:
    """cfrjax's folder of the user's cache: `$XDG_CACHE_HOME/cfrjax`, or `~/.cache/cfrjax`
    (compiled programs here, native kernels in `cfrjax.public.native`)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cfrjax")


def default_dir() -> str:
    """`$XDG_CACHE_HOME/cfrjax/xla`, or `~/.cache/cfrjax/xla`."""
    return os.path.join(cache_home(), "xla")


def enable_compile_cache(path: str | os.PathLike | None = None, keep_programs: bool = True) -> str | None:
    """Turn on JAX's persistent compilation cache (module docstring); returns its folder,
    or `None` when switched off. Call it before the first compile of the process.

    With `keep_programs` (the default) cfrjax's solves and evaluations are also kept whole
    in the folder's `programs/` (`cfrjax.programs`), so a later process runs them without
    tracing or lowering them again.

    Raises:
      OSError: the folder cannot be created (the message names it).
    """
    choice = os.fspath(path) if path is not None else os.environ.get(ENV) or None
    if choice is not None and choice.strip().lower() == OFF:
        return None
    folder = choice or jax.config.jax_compilation_cache_dir or default_dir()
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise OSError(f"compilation cache folder {folder!r} cannot be created ({e.strerror}); set "
                      f"{ENV} to another folder or to '{OFF}'") from None
    jax.config.update("jax_compilation_cache_dir", folder)
    programs.enable(folder if keep_programs else None)
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    return folder


#: JAX's monitoring events: one per XLA compile request (a persistent-cache hit included),
#: and one per hit of its persistent cache.
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_HIT_EVENT = "/jax/compilation_cache/cache_hits"


class CompileCount:
    """What `compile_count` saw: `compiles` (XLA compiles run, persistent-cache hits not
    counted) and `cache_hits` (executables read from JAX's persistent cache). A program
    read back whole from `cfrjax.programs` is neither."""

    def __init__(self):
        self.requests = self.cache_hits = 0

    @property
    def compiles(self) -> int:
        return self.requests - self.cache_hits

    def cache(self, folder: str | None) -> str:
        """`"hit"` (nothing compiled: every executable came from a cache), `"miss"` (at
        least one compiled, with a cache: `folder`, or JAX's own where it served a hit) or
        `"off"` (compiled, no cache)."""
        if self.compiles == 0:
            return "hit"
        return "miss" if folder is not None or self.cache_hits else OFF


@contextlib.contextmanager
def compile_count():
    """A `CompileCount` of the XLA compiles inside the `with` block (any thread), from
    JAX's monitoring events."""
    count = CompileCount()

    def on_duration(event, duration, **kwargs):
        if event == _COMPILE_EVENT:
            count.requests += 1

    def on_event(event, **kwargs):
        if event == _HIT_EVENT:
            count.cache_hits += 1

    jax.monitoring.register_event_duration_secs_listener(on_duration)
    jax.monitoring.register_event_listener(on_event)
    try:
        yield count
    finally:
        jax.monitoring.unregister_event_duration_listener(on_duration)
        jax.monitoring.unregister_event_listener(on_event)
