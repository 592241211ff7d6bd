"""The plan: every implementation choice of a solve in one frozen, hashable value.

cfrjax computes the same iteration several ways: the XLA passes, native C++ code on the
CPU (`cfrjax.public.native`), a CUDA showdown and Pallas kernels on NVIDIA GPUs. Which of
them runs is decided once, by `resolve_plan`, from the game's form, the platform, the
environment (`CFRJAX_NATIVE`, `CFRJAX_CUDA`: the only place cfrjax reads them) and what
builds here; never by timing. The result is a `Plan`, kept on the game as a static field
(`game.plan`, set by `use`), so jit's cache and `cfrjax.programs`' keys follow it: two
plans compile two programs, and going back to the first compiles nothing. Every dispatch
site reads `plan_of(game)`; what a kernel can run (rules, dtypes, sizes) stays the kernel's
own check (`cfrjax.kernels`), the plan only says which implementations may run.

A kernel whose library does not build is left out of the plan with the reason in
`Plan.fallbacks`, said once as a `KernelFallback` warning.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import warnings

__all__ = ["MERGED", "PALLAS", "PRESETS", "TWO_LISTS", "KernelFallback", "Plan", "plan_of", "resolve_plan", "use"]

#: The Pallas kernels, by name: regret matching (`cfrjax.matching_kernel`), the public
#: form's folds, showdowns, river-spot and turn-spot half-updates (`cfrjax.public.
#: fold_kernel`, `showdown_kernel`, `spot_kernel`, `turn_kernel`).
PALLAS = ("matching", "fold", "showdown", "spot", "turn")
#: Named plans `resolve_plan` makes: `auto` (what runs fastest here, by the measured
#: choices kept as the defaults below) and `xla` (the XLA passes alone: no native code, no
#: CUDA, no Pallas, no fused half-updates).
PRESETS = ("auto", "xla")


class KernelFallback(RuntimeWarning):
    """A kernel's library did not build or load; its XLA form runs instead."""


def _names(field: str, value) -> tuple:
    if isinstance(value, str) or not all(v in PALLAS for v in value):
        raise ValueError(f"bad Plan.{field} {value!r}; allowed: a tuple of kernel names from {', '.join(PALLAS)}")
    return tuple(k for k in PALLAS if k in value)


def _positive_int(field: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"bad Plan.{field} {value!r}; allowed: an integer >= 0")


@dataclasses.dataclass(frozen=True)
class Plan:
    """Which implementation each operation of a solve runs (static, hashable, validated).

    Attributes:
      name: how it was made: `"auto"`, `"xla"` (`PRESETS`) or `"custom"`.
      platform: the platform it was resolved for (`"cpu"`, `"gpu"`, ...).
      native: the native C++ library (public form, CPU): its showdown.
      native_forest: the boards' forests of a CPU regret pass as native code (with `native`).
      native_half: a river or turn spot's whole (half-)update as native code (with `native`).
      cpu_spot_half: a one-board spot's (half-)update on CPU as one XLA piece
        (`cfrjax.public.cpu_spot.half`) instead of the generic updates.
      cuda_showdown: float32 showdowns on an NVIDIA GPU as the CUDA kernel (else Pallas's).
      pallas: the Pallas kernels (`PALLAS`) that run on an NVIDIA GPU.
      interpret: Pallas kernels run by Pallas's interpreter on any platform (tests on CPU);
        on CPU their presence also turns off the CPU fused half-updates.
      dense_pair: a dense one-board spot's folds and showdowns as one matmul.
      matching_min_columns: columns (hands times batch) from which the matching kernel runs
        on a GPU (`cfrjax.matching_kernel`; any size when interpreted).
      fold_min_subgames: subgames from which the fold kernel runs on a GPU.
      spot_simultaneous_nodes: forest nodes up to which the spot kernel runs a
        simultaneous-order spot.
      wide_columns: columns per slot from which an iteration keeps player 1's strategy
        rows and matches stored regrets (`cfrjax.iteration`).
      batch_first_min_subgames: subgames (one board each) from which the sorted showdown
        runs batch-first off the CPU (`cfrjax.public.terminals`).
      boards_at_once: boards whose forests an accelerator's pass (regret, best response,
        values) holds at once (`cfrjax.public.forest.map_boards`: `lax.map` over groups of
        this many, each group `vmap`ped); 0: every board at once. The same values (to
        rounding: XLA fuses the group's loop differently); the forests' reach and value
        buffers shrink to the group's. `cfrjax.memory.group_boards` picks it from the
        memory plan and the device's free memory; the CPU loops the boards one at a time
        whatever it says.
      fallbacks: `((component, reason), ...)` of what could not run here.
    """

    name: str = "custom"
    platform: str = "cpu"
    native: bool = False
    native_forest: bool = True
    native_half: bool = True
    cpu_spot_half: bool = True
    cuda_showdown: bool = False
    pallas: tuple = ()
    interpret: tuple = ()
    dense_pair: bool = True
    matching_min_columns: int = 1 << 22
    fold_min_subgames: int = 4096
    spot_simultaneous_nodes: int = 32
    wide_columns: int = 1 << 18
    batch_first_min_subgames: int = 1
    boards_at_once: int = 0
    fallbacks: tuple = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not isinstance(self.platform, str):
            raise ValueError(f"bad Plan name {self.name!r} or platform {self.platform!r}; allowed: strings")
        for f in ("native", "native_forest", "native_half", "cpu_spot_half", "cuda_showdown", "dense_pair"):
            if not isinstance(getattr(self, f), bool):
                raise ValueError(f"bad Plan.{f} {getattr(self, f)!r}; allowed: True or False")
        object.__setattr__(self, "pallas", _names("pallas", self.pallas))
        object.__setattr__(self, "interpret", _names("interpret", self.interpret))
        for f in ("matching_min_columns", "fold_min_subgames", "spot_simultaneous_nodes", "wide_columns",
                  "batch_first_min_subgames", "boards_at_once"):
            _positive_int(f, getattr(self, f))
        object.__setattr__(self, "fallbacks", tuple((str(a), str(b)) for a, b in self.fallbacks))

    def pallas_on(self, kernel: str, gpu: bool) -> bool:
        """Whether Pallas kernel `kernel` may run: interpreted, or on an NVIDIA GPU (`gpu`)."""
        return kernel in self.interpret or (gpu and kernel in self.pallas)

    def describe(self) -> dict:
        """The plan as plain JSON data (the CLI's records, `--verbose`)."""
        out = dataclasses.asdict(self)
        out["pallas"], out["interpret"] = list(self.pallas), list(self.interpret)
        out["fallbacks"] = [list(x) for x in self.fallbacks]
        return out

    def summary(self) -> str:
        """One line: the plan's name, platform and the implementations it runs."""
        parts = [f"{self.name} on {self.platform}"]
        if self.native:
            parts.append("native" + "".join(f" +{k}" for k in ("forest", "half") if getattr(self, f"native_{k}")))
        if self.cuda_showdown:
            parts.append("cuda showdown")
        if self.pallas:
            parts.append("pallas " + ",".join(self.pallas))
        if self.interpret:
            parts.append("interpreted " + ",".join(self.interpret))
        if not (self.native or self.cuda_showdown or self.pallas or self.interpret):
            parts.append("xla")
        parts += [f"fallback {what}: {why}" for what, why in self.fallbacks]
        return "; ".join(parts)


def _switched_on(variable: str) -> bool:
    """An environment switch: on unless `variable` is 0, false, off or no."""
    return os.environ.get(variable, "1").strip().lower() not in ("0", "false", "off", "no")


_WARNED: set = set()


def _fallback(what: str, why: str) -> tuple:
    """`(what, why)`, warned once per process."""
    if (what, why) not in _WARNED:
        _WARNED.add((what, why))
        warnings.warn(f"cfrjax: {what} is not available ({why}); its XLA form runs instead", KernelFallback,
                      stacklevel=3)
    return (what, why)


def _public(game) -> bool:
    """Whether `game` (`None`: any) may run the public form's implementations: its slot
    arrays are `[S, H]` (`cfrjax.forms`)."""
    return game is None or len(getattr(game, "slot_shape", ())) == 2


#: Why a game with one hand list per player (`PublicGame.player_lists`, `hands="player"`)
#: runs the XLA passes alone: the kernels take one hand list.
TWO_LISTS = ("native, cuda_showdown, pallas fold/showdown/spot/turn",
             "one hand list per player (hands='player'): these kernels take one list for both players")


#: Why a suit-merged game (`PublicGame.iso_perm`, `isomorphism = true`) runs the XLA
#: passes alone: the kernels sum every board's chance node without the members' gathers.
MERGED = ("native, cuda_showdown, pallas fold/showdown/spot/turn",
          "suit-merged cards (isomorphism = true): these kernels do not sum a class's members at its chance node")


def _two_lists(game) -> bool:
    """Whether `game` has one hand list per player (`PublicGame.player_lists`)."""
    return bool(getattr(game, "player_lists", ()))


def _merged(game) -> bool:
    """Whether `game` solves suit-isomorphic cards once (`PublicGame.iso_perm`)."""
    return getattr(game, "iso_perm", None) is not None


def _xla_reason(game):
    """The `fallbacks` entry of a game only the XLA passes run (`TWO_LISTS`, `MERGED`), or `None`."""
    return TWO_LISTS if _two_lists(game) else MERGED if _merged(game) else None


def _xla_only(plan: Plan, game) -> Plan:
    """`plan` checked for a game with one hand list per player or suit-merged cards: only
    the XLA passes (and regret matching's kernel, which reads slot arrays alone) may run;
    a plan asking for more is refused in one line."""
    asks = [f for f in ("native", "cuda_showdown") if getattr(plan, f)]
    asks += [f"pallas {k}" for k in set(plan.pallas) | set(plan.interpret) if k != "matching"]
    if asks:
        what = ("a game with one hand list per player (hands='player')" if _two_lists(game)
                else "a suit-merged game (isomorphism = true)")
        raise ValueError(f"plan {plan.name!r} runs {', '.join(sorted(asks))}; {what} runs the XLA passes only "
                         "(plan 'xla' or 'auto')")
    return plan


def resolve_plan(game=None, platform: str | None = None, choice="auto") -> Plan:
    """The plan of `game` (`None`: any form) on `platform` (default: the platform traced
    for, `cfrjax.host.default_platform`).

    `choice`: `"auto"` (native code on a CPU where it builds and `CFRJAX_NATIVE` is not 0;
    on an NVIDIA GPU the Pallas kernels, and the CUDA showdown where it builds and
    `CFRJAX_CUDA` is not 0), `"xla"` (the XLA passes alone), or a `Plan` (returned as is).
    No timing: the thresholds are the measured defaults of `Plan`'s fields. Building a
    library (the first time on this machine) happens here, not while tracing. Every board
    at once (`boards_at_once` 0): `cfrjax.memory.group_boards` sets the group from the
    memory plan and the device's free memory."""
    if isinstance(choice, Plan):
        return _xla_only(choice, game) if _xla_reason(game) else choice
    if choice not in PRESETS:
        raise ValueError(f"unknown plan {choice!r}; allowed: {', '.join(map(repr, PRESETS))} or a cfrjax.Plan")
    from cfrjax.host import default_platform
    return _resolve(game, platform or default_platform(), choice)


def _resolve(game, platform: str, choice: str) -> Plan:
    """`resolve_plan`'s preset `choice` on `platform`, every board at once."""
    if choice == "xla":
        return Plan(name="xla", platform=platform, native_forest=False, native_half=False, cpu_spot_half=False)
    if _xla_reason(game):   # the XLA passes, visibly (`fallbacks`); regret matching's kernel on a GPU
        from cfrjax.pallas_gpu import nvidia_gpu
        return Plan(name="auto", platform=platform, native_forest=False, native_half=False, cpu_spot_half=False,
                    pallas=("matching",) if platform == "gpu" and nvidia_gpu() else (), fallbacks=(_xla_reason(game),))
    public = _public(game)
    fallbacks = []
    native_on = cuda_on = False
    if platform == "cpu" and public and _switched_on("CFRJAX_NATIVE"):
        from cfrjax.public import native
        native_on = native.available()
        if not native_on:
            fallbacks.append(_fallback("native", native.why_unavailable()))
    from cfrjax.pallas_gpu import nvidia_gpu
    gpu = platform == "gpu" and nvidia_gpu()
    if gpu and public and _switched_on("CFRJAX_CUDA"):
        from cfrjax.public import cuda_showdown
        cuda_on = cuda_showdown.available()
        if not cuda_on:
            fallbacks.append(_fallback("cuda_showdown", cuda_showdown.why_unavailable()))
    return Plan(name="auto", platform=platform, native=native_on, cuda_showdown=cuda_on,
                pallas=PALLAS if gpu else (), fallbacks=tuple(fallbacks))


@functools.cache
def _default(public: bool, platform: str) -> Plan:
    return resolve_plan(None if public else _TABULAR, platform)


class _Tabular:
    """Stands for a tabular game in `_default`."""
    slot_shape = (0,)


_TABULAR = _Tabular()


def plan_of(game) -> Plan:
    """`game.plan`, or for a game without one the `auto` plan of its form on the platform
    traced for (resolved once per process)."""
    plan = getattr(game, "plan", None)
    if plan is not None:
        return plan
    from cfrjax.host import default_platform
    if _xla_reason(game):
        return _default_xla_only(_xla_reason(game), default_platform())
    return _default(_public(game), default_platform())


@functools.cache
def _default_xla_only(reason: tuple, platform: str) -> Plan:
    return resolve_plan(_TWO_LISTS if reason == TWO_LISTS else _MERGED, platform)


class _TwoLists:
    """Stands for a public game with one hand list per player in `_default_xla_only`."""
    slot_shape = (0, 0)
    player_lists = (1, 1)


class _Merged:
    """Stands for a suit-merged public game in `_default_xla_only`."""
    slot_shape = (0, 0)
    iso_perm = ()


_TWO_LISTS = _TwoLists()
_MERGED = _Merged()


def use(game, plan="auto", platform: str | None = None):
    """`game` with its plan (`resolve_plan(game, platform, plan)`) as the static field
    `game.plan`: a solve of it compiles for that plan. Cheap (no array is copied)."""
    return dataclasses.replace(game, plan=resolve_plan(game, platform, plan))
