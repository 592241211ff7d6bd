"""Memory plan: how many bytes a solve needs per device, before running out of memory.

The paper's plan (appendix, table "Memory plan of the compiled solver") lists every
buffer of the compiled solver with its size. Here the same rows are computed for a
`CompiledGame` (`memory_plan`, from its actual leaves) or from sizes alone before the
game is built (`plan_from_sizes`), for a batch of subgames per device (`batch`, as
`cfrjax.shard.solve_sharded` places `B / n` subgames on each of `n` devices):

  shared (once per device):    index arrays (int32), unbatched float leaves, and off the
                               CPU XLA's working copies of the per-level index slices
                               (estimate: as large as the index arrays themselves; XLA:CPU
                               reads them in place)
  per subgame (x batch):       batched float leaves (template, payoff, ...), the solver
                               state (regret, average and its compensation, and the
                               prediction of a predictive rule only: input and output
                               copies, one copy where the solve takes the state over,
                               `donate=True`), and the per-iteration scratch: strategy
                               with sentinel S + 1, set totals I, dual-lane reach 2N,
                               values N, child contributions N, edge regret terms M,
                               average term S (+ N under alternating order); a public
                               form on CPU: XLA's slot-sized buffers around the native
                               update or passes (the form's `scratch_elements` on CPU)

The plan is an estimate of what XLA allocates, checked against XLA's own buffer
assignment (`compiled_memory`) in the tests (the plan is conservative, within a small
factor). `check_fits(plan, device)` compares it with the device's free memory
(`device.memory_stats()`; host memory for CPU devices) and raises `MemoryPlanError`,
which states both numbers and the largest batch that fits, instead of an out-of-memory
error halfway through compilation or the run.

    plan = cfrjax.memory.memory_plan(game, batch=64)
    print(plan)                                   # the table
    cfrjax.memory.check_fits(plan, jax.devices()[0])

A poker spot's plan before it is built: `cfrjax.games.poker.public_tree.public_plan(config)`,
`memory_plan` of a game of the same shapes sized from the betting tree alone (equal to the
built game's, tested); `cfrjax.load_game` checks it first (`check_public_fits`).
"""

from __future__ import annotations

import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.forms import form_of
from cfrjax.host import default_platform
from cfrjax.plan import plan_of
from cfrjax.rules import DEFAULT_ORDER, DEFAULT_RULE, Config, capabilities
from cfrjax.state import compensation_dtype
from cfrjax.storage import num_nodes
from cfrjax.tabular import scratch_from_sizes

__all__ = ["Buffer", "MemoryPlan", "MemoryPlanError", "boards_for_budget", "check_fits", "compiled_memory",
           "device_free_bytes", "device_peak_bytes", "executable_memory", "format_bytes", "group_boards", "guard",
           "memory_plan", "plan_from_sizes"]


class MemoryPlanError(MemoryError):
    """The planned solve does not fit the device's free memory."""


@dataclasses.dataclass(frozen=True)
class Buffer:
    """One row of the plan: `elements` of `dtype`, `per_subgame` (times the batch) or shared."""

    name: str
    group: str
    elements: int
    dtype: str
    per_subgame: bool
    note: str = ""

    @property
    def itemsize(self) -> int:
        return jnp.dtype(self.dtype).itemsize

    @property
    def bytes(self) -> int:
        """Bytes of one copy (one subgame for per-subgame buffers)."""
        return int(self.elements) * self.itemsize


def format_bytes(n: float) -> str:
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{int(n)} B"


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """Buffers of a solve on one device for `batch` subgames of one tree.

    Attributes:
      buffers: the rows (`Buffer`).
      batch: subgames per device.
      sizes: the counts the plan was computed from (nodes, decision_edges, slots, ...).
    """

    buffers: tuple
    batch: int = 1
    sizes: dict = dataclasses.field(default_factory=dict)

    @property
    def shared_bytes(self) -> int:
        return sum(b.bytes for b in self.buffers if not b.per_subgame)

    @property
    def per_subgame_bytes(self) -> int:
        return sum(b.bytes for b in self.buffers if b.per_subgame)

    @property
    def total_bytes(self) -> int:
        """Estimated bytes on one device: shared + batch * per subgame."""
        return self.shared_bytes + self.batch * self.per_subgame_bytes

    def group_bytes(self) -> dict:
        """Total bytes per group (index, game floats, state, scratch, xla)."""
        out: dict = {}
        for b in self.buffers:
            out[b.group] = out.get(b.group, 0) + b.bytes * (self.batch if b.per_subgame else 1)
        return out

    def max_batch(self, free_bytes: float, margin: float = 0.10) -> int:
        """The largest batch per device whose plan (times `1 + margin`) fits `free_bytes`."""
        room = free_bytes / (1.0 + margin) - self.shared_bytes
        return max(0, int(room // self.per_subgame_bytes)) if self.per_subgame_bytes else 0

    def with_batch(self, batch: int) -> "MemoryPlan":
        return dataclasses.replace(self, batch=int(batch))

    def to_dict(self) -> dict:
        return dict(batch=self.batch, sizes=dict(self.sizes), total_bytes=self.total_bytes,
                    shared_bytes=self.shared_bytes, per_subgame_bytes=self.per_subgame_bytes,
                    groups=self.group_bytes(),
                    buffers=[dict(dataclasses.asdict(b), bytes=b.bytes) for b in self.buffers])

    def table(self) -> str:
        """The plan as a text table (one row per buffer, totals at the end)."""
        head = f"{'buffer':<34}{'group':<12}{'elements':>12}  {'dtype':<8}{'copies':>8}{'bytes':>14}"
        lines = [head, "-" * len(head)]
        for b in self.buffers:
            copies = self.batch if b.per_subgame else 1
            name = b.name + (f" ({b.note})" if b.note else "")
            lines.append(f"{name[:33]:<34}{b.group:<12}{b.elements:>12,}  {b.dtype:<8}{copies:>8,}"
                         f"{b.bytes * copies:>14,}")
        lines.append("-" * len(head))
        for g, n in self.group_bytes().items():
            lines.append(f"{'  ' + g:<74}{n:>14,}")
        lines.append(f"{'shared':<34}{'':<12}{'':>12}  {'':<8}{1:>8}{self.shared_bytes:>14,}")
        lines.append(f"{'per subgame':<34}{'':<12}{'':>12}  {'':<8}{self.batch:>8,}"
                     f"{self.batch * self.per_subgame_bytes:>14,}")
        lines.append(f"{'total (one device)':<74}{self.total_bytes:>14,}  = {format_bytes(self.total_bytes)}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


_XLA_NOTE = "est."


def _scratch_rows(elements: dict, fdt) -> list:
    notes = {"second half overlap": "alternating"}
    return [Buffer(name, "scratch", int(n), fdt, True, notes.get(name, "")) for name, n in elements.items()]


def _state_rows(S, sdt, *, predictive: bool, donate: bool, locks: bool = False, platform: str | None = None,
                nodes: int | None = None) -> list:
    """The solver state's rows (`cfrjax.state.SolverState`): regret, average and its
    compensation (`compensation_dtype` on `platform`), the prediction of a predictive rule
    (`predictive`), the scalars; an input and an output copy, one copy (`in/out`) where
    the solve takes the state over (`donate`: `cfrjax.solve(..., donate=True)`); the
    node locks (`locks`), read only. `nodes`: under 16-bit storage (`cfrjax.storage`) the
    decision nodes: int16 regrets, uint16 average, a float32 scale per node each, no
    compensation."""
    rows = []
    for copy in (("in/out",) if donate else ("in", "out")):
        if nodes is not None:
            rows += [Buffer(f"state.regret [{copy}]", "state", S, "int16", True),
                     Buffer(f"state.avg [{copy}]", "state", S, "uint16", True),
                     Buffer(f"state.regret_scale [{copy}]", "state", nodes, "float32", True),
                     Buffer(f"state.avg_scale [{copy}]", "state", nodes, "float32", True)]
        else:
            rows += [Buffer(f"state.regret [{copy}]", "state", S, sdt, True),
                     Buffer(f"state.avg [{copy}]", "state", S, sdt, True),
                     Buffer(f"state.avg_comp [{copy}]", "state", S, compensation_dtype(sdt, platform).name, True)]
        if predictive:
            rows.append(Buffer(f"state.prediction [{copy}]", "state", S, sdt, True))
        rows += [Buffer(f"state.avg_weight [{copy}]", "state", 1, sdt, True),
                 Buffer(f"state.iteration [{copy}]", "state", 1, "int32", True)]
    if locks:
        rows += [Buffer("state.locked", "state", S, "bool", True), Buffer("state.locked_policy", "state", S, sdt, True)]
    return rows


def plan_from_sizes(nodes: int, decision_edges: int, slots: int, infosets: int, *, path_width: int = 8,
                    batch: int = 1, dtype="float32", game_dtype=None, order: str = DEFAULT_ORDER,
                    rule: str = DEFAULT_RULE, donate: bool = False, platform: str | None = None,
                    batched_fields=("template", "payoff", "chance_reach", "edge_prob", "dec_sign", "dec_chance",
                                    "slot_uniform")) -> MemoryPlan:
    """A plan from the game's counts alone (before building it).

    Args:
      nodes, decision_edges, slots, infosets: N, M, S, I (e.g. from
        `cfrjax.games.poker.sizes.game_sizes` or the paper's counts; `M ~ N` in trees).
      path_width: W, the most own decisions of one player on a root-to-node path (the
        width of `path_slot`, `[2, W, N]`; default 8, e.g. a river with four bets each).
      batch: subgames per device.
      dtype: the solver state's float dtype; `game_dtype` that of the game's float
        leaves (default: the same).
      order: `"simultaneous"` or `"alternating"` (a little more scratch).
      rule: the rule (a predictive one's state holds a prediction buffer).
      donate: the solve takes the state over (`cfrjax.solve(..., donate=True)`): one
        copy of it, not an input and an output.
      platform: where it runs (default: JAX's default backend).
      batched_fields: float leaves that differ per subgame (default: all, as
        `cfrjax.batch_axes` maps them); the others are shared.
    """
    N, M, S, I = int(nodes), int(decision_edges), int(slots), int(infosets)
    fdt = np.dtype(dtype).name
    gdt = np.dtype(game_dtype or dtype).name
    index = {"parent": N, "lane_slot": 2 * N, "val_slot": N, "dec_child": M,
             "dec_parent": M, "dec_slot": M, "dec_opp": M, "slot_infoset": S, "slot_own_reach": S,
             "child_start": N + 1, "slot_edge_start": S + 1, "infoset_slot_start": I + 1,
             "path_slot": 2 * int(path_width) * N}
    floats = {"template": N, "payoff": N, "chance_reach": N, "edge_prob": N, "dec_sign": M, "dec_chance": M,
              "slot_uniform": S}
    rows = [Buffer(k, "index", n, "int32", False) for k, n in index.items() if n]
    rows += [Buffer(k, "game", n, gdt, k in batched_fields) for k, n in floats.items()]
    rows += _state_rows(S, fdt, predictive=capabilities(Config(rule=rule)).predictive, donate=donate)
    rows += _scratch_rows(scratch_from_sizes(N, M, S, I, order), fdt)
    if (platform or default_platform()) != "cpu":
        rows.append(Buffer("index slices", "xla", sum(index.values()), "int32", False, _XLA_NOTE))
    return MemoryPlan(tuple(rows), batch=int(batch),
                      sizes=dict(nodes=N, decision_edges=M, slots=S, infosets=I, order=order, dtype=fdt))


def memory_plan(game, state=None, *, batch: int | None = None, devices: int = 1, dtype=None,
                order: str | None = None, rule: str | None = None, donate: bool = False,
                platform: str | None = None, precision: str = "float32") -> MemoryPlan:
    """The plan of solving `game` (from its actual leaves) on one device.

    Args:
      game: a compiled game of any form, or a batched one (re-targetable leaves with a
        leading batch axis, see `cfrjax.batch`): its batched leaves count per subgame, the
        rest once.
      state: optional `SolverState` (or batch of them): its dtype, order, rule and locks
        are used.
      batch: subgames in all; default: the game's batch size (1 if not batched).
      devices: the batch is split over this many devices (`ceil(batch / devices)` per
        device).
      dtype, order, rule: the solver's float dtype, order and rule when no `state` is
        given (default: the game's float dtype, the default order and rule).
      donate: the solve takes the state over (`cfrjax.solve(..., donate=True)`, the
        command line's): one copy of the state, not an input and an output.
      platform: where it runs (default: JAX's default backend): the form's
        `scratch_elements` on it (a public-form game's differ on CPU).
      precision: the state's storage when no `state` is given (`cfrjax.rules.Config`:
        `"int16"` counts 2 bytes per regret and average entry and the node scales).
    """
    leaves = {}
    for f in dataclasses.fields(game):
        if f.metadata.get("static"):
            continue
        value = getattr(game, f.name)
        if value is None or hasattr(value, "dtype"):
            leaves[f.name] = value
        else:   # a pytree of arrays (a depth-limited game's leaf data): one row per array
            for path, x in jax.tree_util.tree_flatten_with_path(value)[0]:
                leaves[f.name + jax.tree_util.keystr(path)] = x
    dims = type(game).RETARGETABLE
    batched = {k for k, nd in dims.items() if leaves.get(k) is not None and np.ndim(leaves[k]) == nd + 1}
    game_batch = int(np.shape(leaves[next(iter(batched))])[0]) if batched else 1
    locks = False
    if state is not None:
        cfg = state.config
        dtype, order, rule = cfg.dtype, cfg.order, cfg.rule
        locks = state.locked is not None
        if np.ndim(state.iteration) == 1 and batch is None:
            batch = int(np.shape(state.iteration)[0])
    gdt = next(np.dtype(x.dtype).name for x in leaves.values()
               if x is not None and np.issubdtype(np.dtype(x.dtype), np.floating))
    fdt = np.dtype(dtype or gdt).name
    order = order or DEFAULT_ORDER
    config = state.config if state is not None else Config(rule=rule or DEFAULT_RULE, order=order, dtype=fdt,
                                                           precision=precision)
    platform = platform or default_platform()
    batch = game_batch if batch is None else int(batch)
    per_device = -(-batch // int(devices))
    rows = []
    index_elems = 0
    for k, x in leaves.items():
        if x is None:
            continue
        n = int(np.prod(np.shape(x)[1:] if k in batched else np.shape(x)))
        dt = np.dtype(x.dtype).name
        if not np.issubdtype(np.dtype(x.dtype), np.floating):
            index_elems += n
            rows.append(Buffer(k, "index", n, dt, False))
        else:
            rows.append(Buffer(k, "game", n, dt, k in batched or not batched))
    rows += _state_rows(int(np.prod(game.slot_shape)), fdt, predictive=capabilities(config).predictive, donate=donate,
                        locks=locks, platform=platform,
                        nodes=num_nodes(game) if config.precision == "int16" else None)
    rows += _scratch_rows(form_of(game).scratch_elements(game, order, config=config, platform=platform,
                                                         donate=donate), fdt)
    if config.precision == "int16":   # (`cfrjax.storage`) the decode fuses into its readers; the new average is
        # materialised before its encode (its node maxima): one float32 array, XLA:CPU's assignment of the
        # accelerator lowering within 5% (bench: density.md)
        rows.append(Buffer("average before its encode", "scratch", int(np.prod(game.slot_shape)), "float32", True,
                           "int16"))
    if platform != "cpu":   # on CPU native code and XLA read the index arrays in place
        rows.append(Buffer("index slices", "xla", index_elems, "int32", False, _XLA_NOTE))
    order_of = {"index": 0, "game": 1, "state": 2, "scratch": 3, "xla": 4}
    rows.sort(key=lambda b: order_of[b.group])
    return MemoryPlan(tuple(rows), batch=per_device,
                      sizes=dict(game.sizes(), order=order, dtype=fdt, batch=batch, devices=int(devices)))


def boards_for_budget(game, plan, budget_bytes: float, margin: float = 0.10) -> int:
    """The `boards_at_once` of `plan` (a `cfrjax.plan.Plan` off the CPU) for a public
    `game` within `budget_bytes`: 0 (every board's forest at once) where that plan fits,
    else the most boards per group whose plan fits, at least 1, rounded down to its class
    (`_group_class`). Planned for the larger of
    a solve and its evaluation: float64 (the evaluation widens to it), simultaneous
    order, the state donated (`cfrjax.solve(..., donate=True)`, the command line's)."""
    B = game.num_boards

    def total(k):
        g = dataclasses.replace(game, plan=dataclasses.replace(plan, boards_at_once=k))
        return memory_plan(g, dtype="float64", order="simultaneous", donate=True, platform=plan.platform).total_bytes
    room = float(budget_bytes) / (1.0 + margin)
    if B <= 1 or total(0) <= room:
        return 0
    one, two = total(1), total(2)
    per_board = two - one
    k = max(1, min(1 + int((room - one) // per_board) if per_board > 0 else 1, B - 1))
    return _group_class(k)


def _group_class(k: int) -> int:
    """`k` rounded down to a group-size class: itself up to 8, above it a multiple of a
    quarter of its largest power of two (8, 10, 12, 14, 16, 20, 24, ...), so budgets a
    little apart (the free memory of two processes, or of one process over a report's
    flops) give one group size, one plan and one compiled program."""
    if k <= 8:
        return k
    step = 1 << (k.bit_length() - 3)
    return k // step * step


def group_boards(game, budget_bytes: int | None = None, device=None):
    """`game` with its plan's `boards_at_once` (`cfrjax.plan.Plan`) fitted to the memory:
    off the CPU, for a public game of several boards, `boards_for_budget` against
    `budget_bytes` (default: the free memory of `device`, default the first device of the
    plan's platform, where it reports one); `game` as it is otherwise. The game's plan is
    its own (`cfrjax.plan.use`) or the default one. No timing: the memory plan alone.

        game = cfrjax.memory.group_boards(cfrjax.plan.use(game, "auto"))"""
    plan = plan_of(game)
    if plan.platform == "cpu" or len(getattr(game, "slot_shape", ())) != 2 or game.num_boards <= 1:
        return game
    if budget_bytes is None:
        if device is None:
            try:
                device = jax.devices(plan.platform)[0]
            except RuntimeError:   # no device of the plan's platform here
                return game
        budget_bytes = device_free_bytes(device)[0]
        if budget_bytes is None:
            return game
    k = boards_for_budget(game, plan, budget_bytes)
    return dataclasses.replace(game, plan=dataclasses.replace(plan, boards_at_once=k))


def device_peak_bytes(device=None) -> int | None:
    """The most bytes `device` (default `jax.devices()[0]`) has held at once in this process
    (`memory_stats()["peak_bytes_in_use"]`: what a record of a solve compares with a
    planned or a peer's memory), or `None` where the platform keeps no such statistic (a
    CPU)."""
    device = jax.devices()[0] if device is None else device
    try:
        stats = device.memory_stats() or {}
    except Exception:  # some backends do not implement it
        stats = {}
    peak = stats.get("peak_bytes_in_use")
    return None if peak is None else int(peak)


def device_free_bytes(device=None) -> tuple[int | None, dict]:
    """`(free, info)`: free bytes on `device` (default `jax.devices()[0]`) from
    `device.memory_stats()` (`bytes_limit - bytes_in_use`), or for a CPU device without
    statistics the host's available memory (`MemAvailable`); `None` if unknown."""
    device = jax.devices()[0] if device is None else device
    try:
        stats = device.memory_stats() or {}
    except Exception:  # some backends do not implement it
        stats = {}
    limit = stats.get("bytes_limit") or stats.get("bytes_reservable_limit")
    if limit:
        used = int(stats.get("bytes_in_use", 0))
        return int(limit) - used, dict(source="memory_stats", limit=int(limit), in_use=used)
    if device.platform == "cpu":
        avail = _host_available()
        if avail is not None:
            return avail, dict(source="host MemAvailable", limit=None, in_use=None)
    return None, dict(source="unknown", limit=None, in_use=None)


def _host_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_fits(plan: MemoryPlan, device=None, *, budget_bytes: int | None = None, margin: float = 0.10,
               resident_bytes: int = 0, what: str | None = None, remedy: str | None = None) -> dict:
    """Check that `plan` (times `1 + margin`) fits the free memory of `device`.

    Args:
      plan: a `MemoryPlan` (per device).
      device: a `jax.Device` (default `jax.devices()[0]`).
      budget_bytes: use this as the free memory instead of asking the device (e.g. a
        share of it, or for tests).
      margin: headroom on top of the estimate (XLA's allocator, fragmentation).
      resident_bytes: bytes of the plan already allocated on the device (inputs placed
        there before the check, counted in its used memory): not needed again.
      what: the message's subject (default "the solve"); remedy: what to change (default:
        a smaller batch per device, or a smaller game).

    Returns:
      `dict(need=..., free=..., fits=True, max_batch=..., source=...)`; `free` is `None`
      (and nothing is checked) when the device reports no memory statistics.

    Raises:
      MemoryPlanError: the estimate exceeds the free memory; the message gives both, the
        largest batch per device that fits, and what to change; `err.plan` is `plan`.
    """
    device = jax.devices()[0] if device is None and budget_bytes is None else device
    if budget_bytes is not None:
        free, info = int(budget_bytes), dict(source="budget_bytes", limit=int(budget_bytes), in_use=0)
    else:
        free, info = device_free_bytes(device)
    need = max(0, int(plan.total_bytes * (1.0 + margin)) - int(resident_bytes))
    out = dict(plan=plan, need=need, resident=int(resident_bytes), estimate=plan.total_bytes, free=free, fits=True, source=info["source"],
               max_batch=None if free is None else plan.max_batch(free, margin))
    if free is None or need <= free:
        return out
    where = "the budget" if device is None else f"device {device}"
    detail = ""
    if info.get("limit") is not None and info["source"] == "memory_stats":
        detail = f" (limit {format_bytes(info['limit'])}, in use {format_bytes(info['in_use'])})"
    fit = out["max_batch"]
    hint = remedy or (f"at most {fit} subgame(s) per device fit: use a smaller batch per device or more devices "
                      "(cfrjax.shard.solve_sharded)" if fit else
                      "not even one subgame fits: use a smaller game, float32, or a device with more memory")
    err = MemoryPlanError(
        f"cfrjax memory plan: {what or 'the solve'} needs about {format_bytes(need)} more ({format_bytes(plan.total_bytes)} estimated "
        f"+ {margin:.0%} margin: {format_bytes(plan.shared_bytes)} shared + {plan.batch} x "
        f"{format_bytes(plan.per_subgame_bytes)} per subgame"
        f"{f', less {format_bytes(resident_bytes)} of inputs already there' if resident_bytes else ''}) but "
        f"{where} has {format_bytes(free)} free"
        f"{detail} [{info['source']}]; {hint}")
    err.plan = plan
    raise err


def guard(game, state, *, devices: int = 1, device=None, donate: bool = False) -> dict:
    """`check_fits` of `memory_plan(game, state, devices=devices, donate=donate)` on
    `device` (default the first device), not counting inputs already resident there. `cfrjax.solve`,
    `cfrjax.solve_batch` and `cfrjax.solve_sharded` call it before running (their
    `check_memory=True`), so a tree or batch that cannot fit raises `MemoryPlanError`
    (estimate and free memory) instead of an allocator error mid-run. The plan is
    conservative: XLA's own buffer assignment is well below it."""
    device = jax.devices()[0] if device is None else device
    resident = 0
    for x in jax.tree.leaves((game, state)):
        try:
            shards = x.addressable_shards
        except Exception:  # tracers, NumPy arrays: nothing resident yet
            continue
        resident += sum(sh.data.nbytes for sh in shards if sh.device == device)
    return check_fits(memory_plan(game, state, devices=devices, donate=donate, platform=device.platform), device,
                      resident_bytes=resident)


def compiled_memory(fn, *args, **kwargs) -> dict:
    """XLA's buffer assignment for `fn(*args, **kwargs)` (jitted if it is not already), in
    bytes (`Compiled.memory_analysis()`), without running it; `{}` where unsupported.

    E.g. `compiled_memory(cfrjax.driver._solve, game, state, 100, None)` (module
    `cfrjax.solve`), or for the sharded solve
    `compiled_memory(cfrjax.shard._solve_sharded, games, states, 100, mesh, fields)`.
    """
    lower = fn.lower if hasattr(fn, "lower") else jax.jit(fn).lower
    try:
        compiled = lower(*args, **kwargs).compile()
    except Exception:  # backends without the analysis
        return {}
    return executable_memory(compiled)


def executable_memory(compiled) -> dict:
    """`compiled_memory` of an already compiled executable (`jax.jit(f).lower(...).compile()`):
    argument, output, alias, temp and generated-code bytes and `total_bytes`
    (argument + output + temp - alias); `{}` where unsupported."""
    try:
        m = compiled.memory_analysis()
    except Exception:  # backends without the analysis
        return {}
    if m is None:
        return {}
    keys = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
            "generated_code_size_in_bytes")
    out = {k.replace("_size_in_bytes", "_bytes"): int(getattr(m, k, 0) or 0) for k in keys}
    out["total_bytes"] = out["argument_bytes"] + out["output_bytes"] + out["temp_bytes"] - out["alias_bytes"]
    return out
