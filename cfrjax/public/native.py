"""The public form's CPU iteration as native code (XLA FFI custom calls).

XLA:CPU runs the public form as a few hundred small kernels per board and the updates
as whole-array passes over memory. Three native calls replace them on CPU:

* `showdown`: a board's sorted showdowns (`cfrjax.public.terminals`), the tables and
  formula of the XLA form as two loops over rows of `Q` contiguous numbers
  (`native_showdown.cc`); a batch with a board per subgame is one call too
  (`terminals._showdown_native_per_subgame`).
* `forest`: every board's forest of a regret pass (`cfrjax.public.forest.board`), the boards split over
  the process's threads (`native_forest.cc`).
* `half`: a river or turn spot's whole (half-)update (`cfrjax.public.native_calls.half`): regret
  matching, the trunk's and every board's passes, the regret and average updates, each
  board's rows read and written once while in the cache.

One more call runs at build time, through ctypes rather than XLA: `showdown_tables`, the
sorted-showdown tables of a spot's boards (`native_tables.cc`, equal to the NumPy form of
`cfrjax.public.terminals.showdown_tables`), used by the builder where the library is
already built.

Built on first use (`cfrjax.public.ffi_library`): the C++ source shipped with the package
is compiled with the system's C++ compiler (`$CXX`, else `c++` / `g++`) against the XLA
FFI headers of the installed jaxlib (`jax.ffi.include_dir()`), into
`$XDG_CACHE_HOME/cfrjax/native/<key>/` (`~/.cache/cfrjax/native`; the key hashes the
source, the jaxlib version, the flags and the CPU: it is built for this CPU's instruction
set), a few seconds once per machine. Without a compiler, or where the build
fails, `available()` is false (the reason in `why_unavailable()`) and the XLA form runs:
the two agree to rounding (tested). `CFRJAX_NATIVE=0` switches it off.

A library already built is registered with XLA when this module is imported, so that an
executable read back from a compilation cache (`cfrjax.compile_cache`, `cfrjax.programs`)
finds its custom call without tracing anything.
"""

from __future__ import annotations

import os
import platform
import shutil

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.public.ffi_library import FfiLibrary

__all__ = ["available", "forest", "half", "showdown", "showdown_tables", "why_unavailable"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = tuple(os.path.join(_HERE, f) for f in ("native_showdown.cc", "native_forest.cc", "native_tables.cc"))
_TARGETS = {"float32": "CfrjaxShowdownF32", "float64": "CfrjaxShowdownF64"}
_FOREST_TARGETS = {"float32": "CfrjaxForestF32", "float64": "CfrjaxForestF64"}
_HALF_TARGETS = {"float32": "CfrjaxHalfF32", "float64": "CfrjaxHalfF64"}
# Built for this CPU (its vector width: the terminals' and regret matching's loops are 2-7x
# faster with AVX-512 than with the baseline SSE2 on this project's EPYC); no fused
# multiply-adds: the compensated average's TwoSum needs its roundings as written.
_FLAGS = ("-O3", "-march=native", "-std=c++17", "-shared", "-fPIC", "-pthread", "-ffp-contract=off")


def _cpu_id() -> bytes:
    """The CPU's model and instruction-set flags (the library is built for this CPU,
    `-march=native`: a cache shared with another kind of machine must not load it)."""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            lines = [ln for ln in f.read().splitlines() if ln.startswith((b"model name", b"flags"))]
        return b"\n".join(sorted(set(lines)))
    except OSError:
        return platform.processor().encode()


def _compiler() -> str | None:
    for name in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if name and shutil.which(name):
            return name
    return None


def _command(sources: tuple, output: str) -> list:
    cxx = _compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler found (set CXX, or install g++)")
    return [cxx, *_FLAGS, "-I", jax.ffi.include_dir(), *sources, "-o", output]


_LIBRARY = FfiLibrary(
    name="libcfrjax_native.so", sources=_SOURCES,
    targets=(*_TARGETS.values(), *_FOREST_TARGETS.values(), *_HALF_TARGETS.values()), platform="cpu",
    command=_command,
    key=lambda: b"\0".join([" ".join(_FLAGS).encode(), platform.machine().encode(), platform.system().encode(),
                            _cpu_id()]))


def available() -> bool:
    """Whether the library builds and loads here (whether it runs is the plan's choice,
    `cfrjax.plan.Plan.native`, where `CFRJAX_NATIVE=0` switches it off)."""
    return _LIBRARY.load(build=True)


def why_unavailable() -> str | None:
    """Why `available()` is false (`None` when it is true)."""
    return None if available() else _LIBRARY.error()


def _target(targets: dict, dtype, what: str) -> str:
    """The FFI target of `what` for `dtype` (float32 or float64); raises where the library
    is not available or the dtype has none."""
    if not available():
        raise RuntimeError(f"the native {what} is not available: {why_unavailable()}")
    target = targets.get(jnp.dtype(dtype).name)
    if target is None:
        raise TypeError(f"native {what}: dtype must be float32 or float64, got {jnp.dtype(dtype)}")
    return target


def showdown(x, sorted_t, cards_t, index_t):
    """`Wk - St` of one board's showdowns (`cfrjax.public.terminals`, module docstring):
    hand-major reach `x [H, Q]` (float32 or float64) and the board's tables `sd_sorted
    [H]`, `sd_card_sorted [C, M]`, `sd_index [H, 6]` -> `[H, Q]`; or several boards, every
    operand with the same leading axes in front (each table's of the reach's size or 1,
    broadcast). Under `vmap` every operand gains the mapped axes in front that way.

    The tables are read as `showdown_tables` builds them (every index in range); they are
    not checked in the call (checking them cost a tenth of a river iteration)."""
    target = _target(_TARGETS, x.dtype, "showdown")
    call = jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")
    i32 = lambda a: jnp.asarray(a, jnp.int32)   # noqa: E731
    return call(x, i32(sorted_t), i32(cards_t), i32(index_t))


def forest(sig0, sig1, regret, root, live, fold_payoff, showdown_stake, norm, ints: dict, *, lanes: tuple,
           offsets: dict, slots: tuple, trunk: tuple = (0, 0), boards: int, roots: int, dealt: bool):
    """Every board's forest of the public form's regret pass (`cfrjax.public.forest.board`
    with `mode="regret"`, unraked, sorted terminals) in one call, the boards split over
    the threads the process may run on (`native_forest.cc`).

    Args:
      sig0, sig1: `[*, H]` arrays holding the strategy rows of player 0's / 1's forest
        slots, board `b`'s from `offsets["sig0"] + b s0` / `offsets["sig1"] + b s1`.
      regret: `[*, H]` the lanes' cumulative regrets, lane p's board `b` from
        `offsets[p] + b s_p`.
      root: `[G R, 2, H]` both players' reach at the forest roots (board `b`: group
        `ints["root_group"][b]`); live: `[B, H]`; fold_payoff `[F]` (player 0's),
        showdown_stake `[K]`, norm `[]` (`Z`), all of the reach's dtype.
      ints: int32 arrays: the showdown tables `sorted [B, H]`, `cards [B, 52, M]`, `index
        [B, H, 6]` (`terminals.showdown_tables`), `hand_cards [H, 2]`, `card_hands [52, Mc]`, and the
        forest's `parent [n]`, `lane_slot [n, 2]`, `fold_node [F]`, `showdown_node [K]`,
        `slot_node`, `slot_child [s0 + s1]`, `root_group [B]`.
      lanes: `(0,)`, `(1,)` or `(0, 1)`; slots: `(s0, s1)`; boards, roots: `B`, `R`.
      trunk: `(t0, t1)` trunk rows of each lane in the results, ahead of its boards' rows:
        the regrets passed through from the `t_p` rows of `regret` before `offsets[p]`,
        `y` zero (the trunk's own pass fills them in).

    Returns:
      `(root values [B, R, L, H], regret, y [sum_p (t_p + B s_p), H])`: per lane in lane
      order its trunk rows, then its boards' rows board-major (`regret_pass`'s layout).
    """
    dt = jnp.dtype(root.dtype)
    target = _target(_FOREST_TARGETS, dt, "forest")
    H = root.shape[-1]
    s0, s1 = slots
    rows = sum(trunk[p] + boards * slots[p] for p in lanes)
    out = (jax.ShapeDtypeStruct((boards, roots, len(lanes), H), dt), jax.ShapeDtypeStruct((rows, H), dt),
           jax.ShapeDtypeStruct((rows, H), dt))
    call = jax.ffi.ffi_call(target, out, vmap_method="sequential")
    i32 = lambda a: jnp.asarray(a, jnp.int32)   # noqa: E731
    names = ("sorted", "cards", "index", "hand_cards", "card_hands", "parent", "lane_slot", "fold_node", "showdown_node", "slot_node",
             "slot_child", "root_group")
    floats = [jnp.asarray(a, dt) for a in (sig0, sig1, regret, root, live, fold_payoff, showdown_stake, norm)]
    return call(*floats, *(i32(ints[k]) for k in names),
                lanes=np.int64(sum(1 << p for p in lanes)), off0=np.int64(offsets["sig0"]),
                off1=np.int64(offsets["sig1"]), roff0=np.int64(offsets.get(0, 0)), roff1=np.int64(offsets.get(1, 0)),
                s0=np.int64(s0), s1=np.int64(s1), t0=np.int64(trunk[0]), t1=np.int64(trunk[1]), dealt=np.int64(bool(dealt)))


def half(own, other, weights, live, fold_payoff, showdown_stake, trunk_fold_payoff, norm, avg, comp, scalars,
         ints: dict, *, locked=None, policy=None, lanes: tuple, split: int, slots: tuple, trunk: tuple, dealt: bool, clamp: bool,
         compensated: bool, unweighted: bool):
    """One (half-)update of `lanes`' slots of a river or turn spot in one call
    (`native_forest.cc`, `CfrjaxHalf`): regret matching, the trunk's and every board's
    passes (the boards split over the process's threads), the regret and average updates.

    Args:
      own: `[rows, H]` the lanes' regrets (after this iteration's discount): the whole
        array, or one player's half (player 0's slots `[0, split)`, player 1's from
        `split`); other: the other player's half when one lane updates (the strategy is
        matched from both), ignored (may be `None`) otherwise.
      weights: `[2, H]`; live: `[B, H]`; fold_payoff `[F]`, showdown_stake `[K]`,
        trunk_fold_payoff `[F1]`, norm `[]` (`Z`).
      avg, comp: `[rows, H]` the lanes' rows of the average and its compensation (`comp`
        is read only when `compensated`; pass any array of the dtype otherwise).
      scalars: `[3]` the average's coefficient `b_t / W_t` and the update discount of
        positive and negative regrets (1, 1 where the rule has none).
      locked, policy: `[S, H]` node locking (`cfrjax.locking`): where `locked`, a slot
        plays `policy` instead of its matched strategy; `None`: nothing locked.
      ints: int32 arrays as `forest`'s (but `root_group`), and the trunk's `trunk_parent`,
        `trunk_lane_slot` (global slots), `trunk_fold_node`, `trunk_slot_node`,
        `trunk_slot_child`, `root_chance`.
      slots: `(s0, s1)` per board; trunk: `(t0, t1)`.

    Returns:
      `(regret, avg, comp)` new, shaped as `own` and `avg` (`comp` as given where not
      compensated). The call updates its operands' buffers in place (each result aliases
      its operand): inside a solve's loop XLA then keeps one buffer of each.
    """
    dt = jnp.dtype(avg.dtype)
    target = _target(_HALF_TARGETS, dt, "half-update")
    comp_in = comp if compensated else jnp.zeros((1, 1), dt)
    other = other if len(lanes) == 1 and other is not None else jnp.zeros((1, 1), dt)
    out = (jax.ShapeDtypeStruct(own.shape, dt), jax.ShapeDtypeStruct(avg.shape, dt),
           jax.ShapeDtypeStruct(comp_in.shape, dt))
    call = jax.ffi.ffi_call(target, out, vmap_method="sequential", input_output_aliases={0: 0, 8: 1, 9: 2})
    names = ("sorted", "cards", "index", "hand_cards", "card_hands", "parent", "lane_slot", "fold_node",
             "showdown_node", "slot_node", "slot_child", "trunk_parent", "trunk_lane_slot", "trunk_fold_node",
             "trunk_slot_node", "trunk_slot_child", "root_chance")
    if locked is None:
        locked, policy = jnp.zeros((1, 1), bool), jnp.zeros((1, 1), dt)
    floats = [jnp.asarray(a, dt) for a in (own, other, weights, live, fold_payoff, showdown_stake, trunk_fold_payoff,
                                            norm, avg, comp_in, scalars, policy)]
    i64 = np.int64
    regret, mean, low = call(*floats, jnp.asarray(locked, bool), *(jnp.asarray(ints[k], jnp.int32) for k in names),
                             lanes=i64(sum(1 << p for p in lanes)), split=i64(split), s0=i64(slots[0]),
                             s1=i64(slots[1]), t0=i64(trunk[0]), t1=i64(trunk[1]), dealt=i64(bool(dealt)),
                             clamp=i64(bool(clamp)), compensated=i64(bool(compensated)),
                             unweighted=i64(bool(unweighted)))
    return regret, mean, (low if compensated else comp)


_LIBRARY.load(build=False)   # registered where already built: a kept executable finds its calls


def showdown_tables(strength, hand_cards, card_hands, out: dict, build: bool = True) -> bool:
    """Fill `out` (`sd_sorted [B, H]`, `sd_card_sorted [B, C, M]`, `sd_index [B, H, 6]`,
    C-contiguous int32) with the sorted-showdown tables of `strength [B, H]` (int32) on the
    host (`native_tables.cc`: a ctypes call, no XLA), equal to
    `cfrjax.public.terminals.showdown_tables`' NumPy form. Returns False where the library
    is not available (nothing written: the caller runs the NumPy form); `build=False`: nor
    where it is not built yet (a game builder does not wait for a compile).

    Raises:
      ValueError: `hand_cards` and `card_hands` disagree (a card listing other hands)."""
    if not _LIBRARY.load(build=build):
        return False
    import ctypes

    fn = _LIBRARY._state["lib"].cfrjax_showdown_tables
    ptr = ctypes.POINTER(ctypes.c_int32)
    fn.restype = ctypes.c_int
    fn.argtypes = [ptr, ctypes.c_int64, ctypes.c_int64, ptr, ptr, ctypes.c_int64, ctypes.c_int64, ptr, ptr, ptr]
    s = np.ascontiguousarray(strength, np.int32)
    hc = np.ascontiguousarray(hand_cards, np.int32)
    ch = np.ascontiguousarray(card_hands, np.int32)
    (B, H), (C, M) = s.shape, ch.shape
    arg = lambda a: a.ctypes.data_as(ptr)   # noqa: E731
    if fn(arg(s), B, H, arg(hc), arg(ch), C, M, arg(out["sd_sorted"]), arg(out["sd_card_sorted"]),
          arg(out["sd_index"])):
        raise ValueError("showdown_tables: card_hands does not list each hand under its two cards of hand_cards "
                         "(build it with cfrjax.public.terminals.card_table)")
    return True
