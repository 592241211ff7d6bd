"""Every kernel of cfrjax, as a registered implementation of one named operation.

The XLA passes (`cfrjax.passes`, `cfrjax.public.passes`, `cfrjax.public.terminals`) are
the reference implementation of each operation; a kernel replaces one operation where it
applies. Each entry of `KERNELS` declares what it implements (the operation, the forms,
the dtypes, the devices it compiles for, whether Pallas's interpreter runs it on any
device, and for a half-update the rule capabilities of `cfrjax.rules.Capabilities` it
implements), which `cfrjax.plan.Plan` fields switch it on, and the function it runs as
(`entry`). What else a call needs (sizes, layouts, tables) stays the kernel's own check
at its dispatch site. `tests/test_kernels.py` runs every entry that can run on the CPU
against the XLA passes on each form it claims.
"""

from __future__ import annotations

import dataclasses

from cfrjax.rules import Capabilities, capabilities

__all__ = ["KERNELS", "OPERATIONS", "Kernel", "by_operation"]

#: The operations kernels implement: regret matching of the slot arrays, the showdown
#: terminals' values, the fold terminals' values, the boards' forests of a regret pass,
#: and a whole (half-)update of a player's slots (matching, passes, rule hooks, average).
OPERATIONS = ("regret_matching", "showdown", "fold", "forest", "half_update")
#: How a kernel is written.
IMPLEMENTATIONS = ("pallas", "native", "cuda", "xla")
#: The rule capabilities of the half-updates without prediction or postflop-solver's DCFR
#: (`cfr`, `cfr+`, `lcfr`, `dcfr`: a plain regret update and the reach-weighted average).
_PLAIN = Capabilities(clamped=True)
#: Any rule: what every rule needs (an operation that no rule changes).
_ANY = Capabilities(predictive=True, clamped=True, discount_at_update=True, unweighted_average=True)
#: The storages a half-update kernel runs: float32 slot arrays (it reads and writes the
#: state as stored, and the compensation); 16-bit states update in XLA (`cfrjax.storage`).
_STORED = ("float32",)


@dataclasses.dataclass(frozen=True)
class Kernel:
    """One registered implementation of an operation.

    Attributes:
      name: unique, e.g. `"native_half"`.
      operation: one of `OPERATIONS`.
      implementation: one of `IMPLEMENTATIONS`.
      entry: `"module:function"` the dispatch calls.
      switches: the `Plan` fields that turn it on (`"pallas:NAME"`: NAME in `Plan.pallas`).
      forms: the compiled forms it runs (`"tabular"`, `"public"`).
      dtypes: the float dtypes it runs.
      precisions: the state storages it runs (`rules.Config.precision`): a half-update
        reads and writes the stored slot arrays (float32 only); the other operations see
        them decoded (`cfrjax.storage`).
      devices: the platforms it compiles for (`"cpu"`, `"gpu"`: an NVIDIA GPU).
      interpretable: Pallas's interpreter runs it on any platform (`Plan.interpret`).
      rules: the rule capabilities it implements (`supports`).
    """

    name: str
    operation: str
    implementation: str
    entry: str
    switches: tuple
    forms: tuple = ("public",)
    dtypes: tuple = ("float32",)
    precisions: tuple = ("float32", "int16")
    devices: tuple = ("cpu",)
    interpretable: bool = False
    rules: Capabilities = _ANY

    def __post_init__(self):
        if self.operation not in OPERATIONS:
            raise ValueError(f"unknown operation {self.operation!r}; allowed: {', '.join(OPERATIONS)}")
        if self.implementation not in IMPLEMENTATIONS:
            raise ValueError(f"unknown implementation {self.implementation!r}; allowed: {', '.join(IMPLEMENTATIONS)}")

    def supports(self, config) -> bool:
        """Whether it runs solves of `config` (`cfrjax.rules.Config`): its dtype and
        precision, and every capability the rule needs (`rules.capabilities`) implemented
        here."""
        need = capabilities(config)
        return config.dtype in self.dtypes and config.precision in self.precisions and all(
            getattr(self.rules, f.name) or not getattr(need, f.name) for f in dataclasses.fields(Capabilities))

    def enabled(self, plan, interpret: bool = False):
        """`plan` with this kernel switched on (`interpret`: a Pallas kernel in Pallas's
        interpreter, on any platform)."""
        fields = {}
        for s in self.switches:
            if s.startswith("pallas:"):
                name = s.split(":", 1)[1]
                key = "interpret" if interpret else "pallas"
                fields[key] = tuple(getattr(plan, key)) + (name,)
            else:
                fields[s] = True
        return dataclasses.replace(plan, **fields)


KERNELS = {k.name: k for k in (
    Kernel("matching", "regret_matching", "pallas", "cfrjax.matching_kernel:regret_matching", ("pallas:matching",),
           devices=("gpu",), interpretable=True),
    Kernel("native_showdown", "showdown", "native", "cfrjax.public.native:showdown", ("native",),
           dtypes=("float32", "float64")),
    Kernel("pallas_showdown", "showdown", "pallas", "cfrjax.public.showdown_kernel:showdown", ("pallas:showdown",),
           devices=("gpu",), interpretable=True),
    Kernel("cuda_showdown", "showdown", "cuda", "cfrjax.public.cuda_showdown:showdown",
           ("pallas:showdown", "cuda_showdown"), devices=("gpu",)),
    Kernel("fold", "fold", "pallas", "cfrjax.public.fold_kernel:fold_values", ("pallas:fold",), devices=("gpu",),
           interpretable=True),
    Kernel("native_forest", "forest", "native", "cfrjax.public.native:forest", ("native", "native_forest"),
           dtypes=("float32", "float64")),
    Kernel("native_half", "half_update", "native", "cfrjax.public.native:half", ("native", "native_half"),
           dtypes=("float32", "float64"), precisions=_STORED,
           rules=Capabilities(clamped=True, discount_at_update=True, unweighted_average=True)),
    Kernel("spot_half", "half_update", "xla", "cfrjax.public.cpu_spot:half", ("cpu_spot_half",),
           dtypes=("float32", "float64"), precisions=_STORED, rules=_PLAIN),
    Kernel("spot", "half_update", "pallas", "cfrjax.public.spot_kernel:half", ("pallas:spot",), devices=("gpu",),
           interpretable=True, precisions=_STORED, rules=_PLAIN),
    Kernel("turn", "half_update", "pallas", "cfrjax.public.turn_kernel:half", ("pallas:turn",), devices=("gpu",),
           interpretable=True, precisions=_STORED, rules=_PLAIN),
)}


def by_operation(operation: str) -> tuple:
    """The registered kernels of `operation`."""
    if operation not in OPERATIONS:
        raise ValueError(f"unknown operation {operation!r}; allowed: {', '.join(OPERATIONS)}")
    return tuple(k for k in KERNELS.values() if k.operation == operation)
