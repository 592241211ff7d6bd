"""XLA compiler options of cfrjax's compiled programs (`jax.jit(..., compiler_options=...)`).

`XLA_OPTIONS` goes to every jit of a whole solve or evaluation (`cfrjax.solve`,
`solve_batch`, `solve_sharded`, `evaluate`, the kernel count of `cfrjax.profile`) through
`jit`, where that jit is the outermost: JAX takes compiler options only there, so inside
a program of your own (`jax.jit(lambda g, s: cfrjax.solve(g, s, 100))`, or
`jax.jit(cfrjax.step)`) XLA's defaults apply unless you pass
`compiler_options=cfrjax.xla_options.XLA_OPTIONS` to your jit, or set the same options
for the process (`XLA_FLAGS=--xla_cpu_experimental_ynn_fusion_type=`).

* `xla_cpu_experimental_ynn_fusion_type = ""`: no YNNPACK fusions on CPU. jaxlib 0.10.2
  hands small reductions to YNNPACK (`__ynn_fusion`); in the public form's terminals
  (sums over a card's hands, the six gathered showdown terms, `[H, Q]` with `Q` a few
  terminals) each such call cost far more than XLA's own loop fusion: the full-range
  river iteration ran about twice as fast without them. The option is a
  CPU debug option: other backends ignore it, and results are unchanged (the same
  arithmetic, fused by XLA instead).
* `xla_gpu_enable_while_loop_double_buffering = True`: XLA:GPU unrolls the iteration loop
  by two and double-buffers its carried state, so a carried array is no longer copied
  into place at the end of every iteration (the `lax.scan` body of a batch ended in two
  state-sized copies). Other backends ignore it; the iterations are the same operations.

Lowered with one source location per operation (`FULL_TRACEBACKS = False`): JAX's
default (`jax_include_full_tracebacks_in_locations`) attaches each operation's whole
Python call stack to the HLO, and XLA:GPU turns those stacks into a profiler annotation
of every kernel whenever it builds an executable, compiled or read back: most of the
time of reading a kept executable back (`cfrjax.programs`). The
location kept is the innermost frame outside JAX, a line of cfrjax; the code is the
same, so are the results.

A function may set options of its own over these (`jit(f, options=...)`): the
target-driven solve's chunks (`cfrjax.driver._chunk`) turn the double buffering off.

A game may add options of its own (`compiler_options(config)`, a method returning a tuple
of `(name, value)` pairs, e.g. `PublicGame.compiler_options`), read from the first
argument of the call and told the second's solver configuration (`SolverState.config`;
`None` where the call has none): each distinct set compiles its own executable.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools

import jax

from cfrjax import programs

__all__ = ["XLA_OPTIONS", "FULL_TRACEBACKS", "jit", "compile_concurrently"]

#: Compiler options of cfrjax's jitted solves and evaluations (see the module docstring).
XLA_OPTIONS = {"xla_cpu_experimental_ynn_fusion_type": "", "xla_gpu_enable_while_loop_double_buffering": True}
#: Whether programs are lowered with each operation's whole call stack (see the module docstring).
FULL_TRACEBACKS = False

try:
    from jax._src.config import include_full_tracebacks_in_locations as _full_tracebacks
except ImportError:   # another JAX: its default locations
    _full_tracebacks = None


def _locations():
    """The context cfrjax's outermost jits trace and lower in (`FULL_TRACEBACKS`)."""
    if _full_tracebacks is None:
        return contextlib.nullcontext()
    return _full_tracebacks(FULL_TRACEBACKS)


try:
    from jax._src.core import trace_state_clean as _trace_state_clean
except ImportError:   # another JAX: only tracer arguments tell
    _trace_state_clean = None


def _inside_trace(args, kwargs) -> bool:
    """Whether a trace is running (a jit, `vmap` or `grad` of the caller's): JAX's trace
    state where this JAX exposes it, else whether an argument is a tracer. The arguments
    alone miss a jit of a function closing over a concrete game and state
    (`jax.jit(lambda: cfrjax.solve(game, state, 10))`), where the nested optioned jit was
    refused."""
    if _trace_state_clean is None:
        return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves((args, kwargs)))
    return not _trace_state_clean()


def _game_options(args) -> tuple:
    """The call's game options: `args[0].compiler_options(config)` with the solver
    configuration of `args[1]` (`None` without one); `()` for a first argument without
    the method."""
    method = getattr(args[0], "compiler_options", None) if args else None
    if method is None:
        return ()
    return tuple(method(getattr(args[1], "config", None) if len(args) > 1 else None))


class _Jit:
    """`jax.jit(fun, **kwargs)` compiled with `XLA_OPTIONS` when called outside any trace,
    plain inside one (JAX refuses compiler options on a nested jit). `lower` lowers the
    optioned one."""

    def __init__(self, fun, options=None, **kwargs):
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._options = dict(options or {})
        self._kwargs = kwargs
        self._optioned_by = {}
        self._plain = jax.jit(fun, **kwargs)
        names = kwargs.get("static_argnames", ())
        names = (names,) if isinstance(names, str) else tuple(names)
        params = programs.parameters(fun)
        nums = kwargs.get("static_argnums", ())
        nums = (nums,) if isinstance(nums, int) else tuple(nums)
        self._static = frozenset(names) | {params[i] for i in nums}

    def _optioned(self, args):
        """The jit compiling with `XLA_OPTIONS`, the function's own `options` and the first
        argument's `compiler_options` (later ones win)."""
        extra = _game_options(args)
        if extra not in self._optioned_by:
            self._optioned_by[extra] = jax.jit(self._fun, compiler_options={**XLA_OPTIONS, **self._options, **dict(extra)},
                                               **self._kwargs)
        return self._optioned_by[extra]

    def __call__(self, *args, **kwargs):
        if _inside_trace(args, kwargs):
            return self._plain(*args, **kwargs)
        with _locations():
            if programs.folder() is not None:   # kept between processes (`cfrjax.programs`)
                return programs.call(self._optioned(args), self._fun, self._static, args, kwargs)
            return self._optioned(args)(*args, **kwargs)

    def lower(self, *args, **kwargs):
        with _locations():
            return self._optioned(args).lower(*args, **kwargs)

    def compile(self, *args) -> None:
        """Compile the call ahead of time: kept (or read back) where the store is on
        (`cfrjax.programs`), and the call then runs it; else compiled once more (jit does
        not reuse an ahead-of-time compile; JAX's persistent cache, where on, then serves
        the call's compile)."""
        self.prepare(*args)()

    def prepare(self, *args):
        """`get`: the call `self(*args)` (positional arguments, statics included) lowered
        now, or its executable found kept (`cfrjax.programs.prepare`); `get()`, which any
        thread may call, compiles it and returns a function of the same arguments running
        the executable (`compile_concurrently`)."""
        jitted = self._optioned(args)
        static = programs.static_positions(self._fun, self._static, len(args))
        dynamic = tuple(i for i in range(len(args)) if i not in static)
        with _locations():
            if programs.folder() is not None:
                get, _ = programs.prepare(jitted, self._fun, self._static, args, {})
                if get is not None:
                    return lambda: _runner(get(), dynamic)
            lowered = jitted.lower(*args)
        return lambda: _runner(lowered.compile(), dynamic)


def _runner(compiled, positions: tuple):
    """A function of a call's positional arguments running `compiled` on the dynamic ones."""
    return lambda *args: compiled(*(args[i] for i in positions))


def compile_concurrently(calls, on_lowered=None) -> list:
    """Runners of `calls`, `[(jit, args)]` or `[(jit, args, context)]` with each `jit` one
    of this module's, `args` its positional arguments (statics included) and `context` a
    function returning the context it is lowered in (e.g. `lambda: jax.enable_x64(True)`,
    where the call will run under it: kept programs are keyed by it): each call is
    lowered on this thread in turn and compiled on a thread of its own as soon as it is
    lowered, so XLA compiles one program (outside Python's lock) while Python lowers the
    next, and the compiles run side by side. Each runner takes its call's arguments and
    runs the compiled executable (kept programs, `cfrjax.programs`, are read back instead
    of compiled). `on_lowered()`, if given, is called once every call is lowered (before
    waiting for the compiles: the command line's trace and compile seconds).

    Target-driven solves (`cfrjax.solve_with_trace`, `cfrjax.solve_chunks`) compile their
    evaluation and their chunk of iterations so."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(calls))) as pool:
        futures = []
        for fn, args, *context in calls:
            with context[0]() if context else contextlib.nullcontext():
                futures.append(pool.submit(fn.prepare(*args)))
        if on_lowered is not None:
            on_lowered()
        return [f.result() for f in futures]


def jit(fun=None, *, options: dict | None = None, **kwargs):
    """`jax.jit` with `XLA_OPTIONS` where it is the outermost jit (`_Jit`); use as
    `jit(f, static_argnames=...)` or `@functools.partial(jit, static_argnames=...)`.
    `options`: compiler options of this function's program over `XLA_OPTIONS`."""
    if fun is None:
        return functools.partial(jit, options=options, **kwargs)
    return _Jit(fun, options=options, **kwargs)
