"""Kept programs: cfrjax's compiled solves and evaluations kept on disk, read back by the
next process without tracing, lowering or compiling.

JAX's persistent compilation cache (`cfrjax.compile_cache`) skips only the compile: a new
process still traces the solve and lowers it to HLO to find the cache entry, which for a
large spot takes far longer than the solve itself.
`enable_compile_cache()` therefore also turns on this store: every outermost jit of
`cfrjax.xla_options.jit` (`solve`, `solve_batch`, `evaluate`, ...) keeps its executable
(`jax.experimental.serialize_executable`, with the program's constants) in
`<cache folder>/programs/`, under a key computed without tracing, and a later call with
the same key runs the kept executable.

The key is what decides the program (what jit's own cache keys on, made stable across
processes):

* the function (module, name, line and code) and its static arguments;
* the dynamic arguments' tree structure with every node's static metadata (sizes,
  configs, the game's implementation plan (`cfrjax.plan.Plan`), encoded field by field;
  labels by their `fingerprint`, as they compare) and each leaf's shape, dtype and weak
  type;
* the jax and jaxlib versions, the device kind and platform version, `XLA_FLAGS`, the
  configuration jit traces under (x64, the default device, matmul precision);
* a digest of cfrjax's source files (module constants such as block sizes are source;
  every choice of implementation is the plan's, in the game's static metadata).

Not kept (they run through jit as before): functions with a closure; static metadata that
is not plain data (a depth-limited game's leaf function); arguments not all on the
default device (another device, a sharding over several); programs whose output holds
labels (a game: its labels would come from the kept output tree); a run of several
processes (`jax.distributed`: a program without arguments, such as a state's zeros, would
be read back onto another process's device). Results are bit for
bit those of the jit (the same executable). A kept file that cannot be read is ignored
and rewritten. A kept program is always compiled afresh (`_compile_fresh`).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import inspect
import io
import os
import pickle
import tempfile

import jax
import numpy as np

__all__ = ["enable", "folder", "Unkept", "key"]

_FOLDER: str | None = None
#: Executables read or compiled in this process, by key.
_LOADED: dict = {}
#: Keys of executables read from the store whose first run is not yet checked, by id.
_UNCHECKED: dict = {}
#: Keys by the tuple they digest (a repeated call skips the `repr` and the hash).
_DIGESTS: dict = {}
#: `_tree` of a tree structure, by the structure (jit's own equality of structures: a
#: chunked solve's every call finds its key without walking the game's metadata again).
_TREES: dict = {}


class Unkept(Exception):
    """A call whose program is not kept (the reason is the message)."""


def enable(path: str | os.PathLike | None) -> None:
    """Keep programs in `path` (created when first written); `None` switches the store off."""
    global _FOLDER
    path = None if path is None else os.fspath(path)
    if path != _FOLDER:
        _LOADED.clear()
    _FOLDER = path


def folder() -> str | None:
    """The store's folder, or `None` when off."""
    return _FOLDER


def _plain(x):
    """`x` as nested tuples of plain values (its stable identity), or `Unkept`."""
    if x is None or isinstance(x, (bool, int, float, str, bytes)):
        return (type(x).__name__, x)
    if isinstance(x, enum.Enum):
        return ("enum", type(x).__module__, type(x).__qualname__, x.name)
    if isinstance(x, (np.integer, np.floating, np.bool_)):
        return ("np", str(x.dtype), x.item())
    if isinstance(x, np.dtype):
        return ("dtype", str(x))
    if isinstance(x, (tuple, list)):
        return (type(x).__name__,) + tuple(_plain(v) for v in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((_plain(k), _plain(v)) for k, v in sorted(x.items(), key=lambda kv: repr(kv[0])))
    if isinstance(getattr(x, "fingerprint", None), str):   # labels: compared by their digest, as jit does
        return ("fp", type(x).__module__, type(x).__qualname__, getattr(x, "compare_key", x.fingerprint))
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (("dc", type(x).__module__, type(x).__qualname__)
                + tuple((f.name, _plain(getattr(x, f.name))) for f in dataclasses.fields(x)))
    raise Unkept(f"static metadata of type {type(x).__qualname__} is not plain data")


def _labelled(x) -> bool:
    """Whether `x` (static metadata) holds labels (an object with a `fingerprint`)."""
    if isinstance(getattr(x, "fingerprint", None), str):
        return True
    if isinstance(x, (tuple, list)):
        return any(_labelled(v) for v in x)
    if isinstance(x, dict):
        return any(_labelled(v) for v in x.values())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return any(_labelled(getattr(x, f.name)) for f in dataclasses.fields(x))
    return False


def _carries_labels(treedef) -> bool:
    """Whether an output tree holds labels: such a program is not kept. Labels compare by
    fingerprint, which leaves out a game's name and its ranges' source, so a kept output
    tree could hand back another game's labels."""
    node = treedef.node_data()
    return (node is not None and _labelled(node[1])) or any(_carries_labels(c) for c in treedef.children())


@functools.cache
def parameters(fun) -> tuple:
    """The names of `fun`'s parameters, in order (looked up once per function)."""
    return tuple(inspect.signature(fun).parameters)


@functools.cache
def _code(code) -> tuple:
    """A code object's identity, stable across processes (nested functions' code included;
    their `repr` holds an address)."""
    consts = tuple(_code(c) if hasattr(c, "co_code") else repr(c) for c in code.co_consts)
    return (code.co_name, code.co_firstlineno, code.co_code, consts, code.co_names)


def _tree_of(treedef) -> tuple:
    """`_tree(treedef)`, kept by structure (`_TREES`; computed each time for metadata that
    does not hash)."""
    try:
        found = _TREES.get(treedef)
    except TypeError:
        return _tree(treedef)
    if found is None:
        if len(_TREES) >= 256:
            _TREES.clear()
        found = _TREES[treedef] = _tree(treedef)
    return found


def _tree(treedef) -> tuple:
    """A tree structure with its nodes' static metadata, as plain values."""
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        return ("*",)
    node = treedef.node_data()
    if node is None:
        return ("*",)
    kind, aux = node
    return (f"{kind.__module__}.{kind.__qualname__}", _plain(aux)) + tuple(_tree(c) for c in treedef.children())


@functools.cache
def _source_digest() -> str:
    """A digest of cfrjax's own source files (the package folder's `.py` files)."""
    root = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(base, name)
                h.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


@functools.cache
def _multi_process() -> bool:
    """Whether this is one of several processes (`jax.distributed`; fixed once the backend
    is up, so looked up once)."""
    return jax.process_count() > 1


@functools.cache
def _platform() -> tuple:
    device = jax.devices()[0]
    import jaxlib
    return (jax.__version__, jaxlib.__version__, device.platform, device.device_kind, device.client.platform_version)


def _environment() -> tuple:
    default = jax.config.jax_default_device
    return _platform() + (os.environ.get("XLA_FLAGS", ""), bool(jax.config.jax_enable_x64),
                          str(jax.config.jax_default_matmul_precision),
                          default if default is None or isinstance(default, str) else str(default))


def _on_default_device(leaf) -> bool:
    if isinstance(leaf, (np.ndarray, np.generic, bool, int, float, complex)):
        return True
    if not isinstance(leaf, jax.Array):
        return False
    devices = leaf.sharding.device_set
    return len(devices) == 1 and next(iter(devices)) == jax.devices()[0]


def key(fun, statics: dict, dynamic) -> str:
    """The store's key of `fun` called with static arguments `statics` (by name) and the
    dynamic arguments `dynamic` (a pytree); raises `Unkept` where the call is not kept."""
    if _multi_process():   # `jax.devices()[0]` may be another process's device
        raise Unkept("a multi-process run")
    leaves, treedef = jax.tree.flatten(dynamic)
    if not all(_on_default_device(x) for x in leaves):
        raise Unkept("an argument is not on the default device")
    avals = tuple((tuple(np.shape(x)), str(x.dtype) if hasattr(x, "dtype") else type(x).__name__,
                   bool(getattr(getattr(x, "aval", None), "weak_type", not hasattr(x, "dtype")))) for x in leaves)
    code = getattr(fun, "__code__", None)
    if code is None or getattr(fun, "__closure__", None):
        raise Unkept("only plain module-level functions are kept (no closure)")
    ident = (fun.__module__, fun.__qualname__, code.co_firstlineno, _code(code), _plain(statics), _tree_of(treedef), avals, _environment(),
             _source_digest())
    digest = _DIGESTS.get(ident)
    if digest is None:
        if len(_DIGESTS) >= 1024:
            _DIGESTS.clear()
        digest = _DIGESTS[ident] = hashlib.sha256(repr(ident).encode()).hexdigest()
    return digest


def _path(k: str) -> str:
    return os.path.join(_FOLDER, "programs", k[:2], k + ".bin")


def _serialize(compiled) -> bytes:
    """`compiled` as bytes: `jax.experimental.serialize_executable`'s executable pickle, and
    beside it the program's constants (jax >= 0.11 passes closed-over arrays as constant
    arguments, which that module does not keep), the trees and `no_kwargs`."""
    from jax.experimental import serialize_executable as se
    unloaded = getattr(compiled._executable, "_unloaded_executable", None)
    if unloaded is None or (getattr(unloaded, "mut", None) and unloaded.mut.in_mut):
        raise Unkept("the executable cannot be serialized")
    args_info_flat, in_tree = jax.tree.flatten(compiled.args_info)
    with io.BytesIO() as f:
        se._JaxPjrtPickler(f).dump((unloaded, args_info_flat, compiled._no_kwargs))
        blob = f.getvalue()
    consts = [np.asarray(c) for c in compiled._params.const_args]
    return pickle.dumps((blob, in_tree, compiled.out_tree, consts))


def _deserialize(data: bytes):
    """The `jax.stages.Compiled` of `_serialize`'s bytes, loaded on the default device."""
    from jax.experimental import serialize_executable as se
    blob, in_tree, out_tree, consts = pickle.loads(data)
    device = jax.devices()[0]
    unloaded, args_info_flat, no_kwargs = se._JaxPjrtUnpickler(io.BytesIO(blob), device.client).load()
    return jax.stages.Compiled(unloaded.load(), [jax.device_put(c, device) for c in consts],
                               in_tree.unflatten(args_info_flat), out_tree, no_kwargs=no_kwargs)


def _read(k: str):
    try:
        with open(_path(k), "rb") as f:
            return _deserialize(f.read())
    except Exception:   # missing, truncated, or from another jaxlib: compile again
        return None


def _write(k: str, compiled) -> None:
    try:
        data = _serialize(compiled)
        path = _path(k)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)   # atomic: a reader sees a whole file or none
    except Exception:   # not serializable here, or the folder not writable: not kept
        pass


def _cache_switch():
    """JAX's switch of its persistent compilation cache (`_compile_fresh`)."""
    from jax._src import config as jax_config
    switch = getattr(jax_config, "enable_compilation_cache", None)
    if switch is None:   # another JAX: no way to compile past its cache, so nothing is kept
        raise Unkept("this JAX has no switch for its compilation cache")
    return switch


def _compile_fresh(lowered):
    """`lowered` compiled afresh, past JAX's caches: an executable read from its persistent
    cache serializes without its code on XLA:CPU (jaxlib 0.10.2: running the kept copy
    failed with `Function ... not found`), so a kept program is always compiled. JAX
    decides once per process whether its cache is used (`compilation_cache.is_cache_used`):
    its switch alone does not keep a later compile away from it, so the decision is reset
    around the compile. (An executable that shares code with one the persistent cache
    loaded earlier in the process can still serialize without it: `call` checks a read-back
    executable's first run.)"""
    from jax._src import compilation_cache

    with _cache_switch()(False):
        compilation_cache.reset_cache()
        try:
            return lowered.compile()
        finally:
            compilation_cache.reset_cache()


def static_positions(fun, static_names: frozenset, n: int) -> frozenset:
    """Positions among `n` positional arguments of `fun` that are static (`static_names`)."""
    params = parameters(fun)
    return frozenset(i for i, name in enumerate(params[:n]) if name in static_names)


def prepare(jitted, fun, static_names: frozenset, args: tuple, kwargs: dict):
    """`(get, dyn)`: `get()` returns the executable of `jitted(*args, **kwargs)` (kept,
    read back, or compiled and kept), `dyn` the call's dynamic arguments `(args, kwargs)`;
    `get` is `None` for a call that is not kept. What needs Python's lock (the key, a
    read, the lowering) runs here; `get` compiles and writes, and any thread may call it
    (`cfrjax.xla_options.compile_concurrently`). `fun` is the jitted Python function,
    `static_names` its static parameters' names."""
    params = parameters(fun)
    static_pos = static_positions(fun, static_names, len(args))
    dyn = (tuple(a for i, a in enumerate(args) if i not in static_pos),
           {n: v for n, v in kwargs.items() if n not in static_names})
    statics = {params[i]: args[i] for i in sorted(static_pos)}
    statics.update({n: v for n, v in kwargs.items() if n in static_names})
    try:
        k = key(fun, statics, dyn)
        _cache_switch()
    except Unkept:
        return None, dyn
    compiled = _LOADED.get(k)
    if compiled is None:
        compiled = _read(k)
        if compiled is not None:
            _UNCHECKED[id(compiled)] = k
    if compiled is not None:
        _LOADED[k] = compiled
        return (lambda: compiled), dyn
    lowered = jitted.lower(*args, **kwargs)

    def get():
        fresh = _compile_fresh(lowered)
        if not _carries_labels(fresh.out_tree):
            _write(k, fresh)
        _LOADED[k] = fresh
        return fresh

    return get, dyn


def executable(jitted, fun, static_names: frozenset, args: tuple, kwargs: dict):
    """`(the executable of jitted(*args, **kwargs), its dynamic arguments (args, kwargs))`:
    kept, read back, or compiled (and kept); `None` for a call that is not kept
    (`prepare`)."""
    get, dyn = prepare(jitted, fun, static_names, args, kwargs)
    return (None if get is None else get()), dyn


def call(jitted, fun, static_names: frozenset, args: tuple, kwargs: dict):
    """`jitted(*args, **kwargs)` through the store (`executable`); through `jitted` for a
    call that is not kept."""
    compiled, dyn = executable(jitted, fun, static_names, args, kwargs)
    if compiled is None:
        return jitted(*args, **kwargs)
    out = compiled(*dyn[0], **dyn[1])
    k = _UNCHECKED.pop(id(compiled), None)
    if k is not None:   # read from the store, first run: it must find its code
        try:
            jax.block_until_ready(out)
        except jax.errors.JaxRuntimeError as e:
            # XLA:CPU can serialize an executable without code it shares with one that JAX's
            # persistent cache loaded earlier in the writing process ("Function ... not
            # found" when run): that file is dropped, and the program runs through jit
            if "not found" not in str(e).lower():
                raise
            _LOADED.pop(k, None)
            try:
                os.remove(_path(k))
            except OSError:
                pass
            return jitted(*args, **kwargs)
    return out
