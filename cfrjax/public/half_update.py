"""The public form's `fused_half`: which of its own (half-)update kernels runs, if any.

On CPU the native update (`cfrjax.public.native_calls.half`), else the one-board XLA
piece (`cfrjax.public.cpu_spot`); on an NVIDIA GPU the Pallas spot or turn kernel
(`cfrjax.public.spot_kernel`, `turn_kernel`); `None` where none applies (the generic
updates of `cfrjax.iteration` run).
"""

from __future__ import annotations

from cfrjax.plan import plan_of
from cfrjax.public import cpu_spot, native_calls, spot_kernel, tree_passes, turn_kernel
from cfrjax.public.game import PublicGame

__all__ = ["fused_half"]


def fused_half(game: PublicGame, config, regret, avg, comp, player, b_t, w_new, average, locked=None,
               locked_policy=None, leaf=None, t=None, raw=None):
    """One (half-)update of `player`'s slots as the form's own kernels on an NVIDIA GPU
    (`cfrjax.public.spot_kernel`: a one-board dense spot; `turn_kernel`: a turn spot,
    where the game's plan has them), or on CPU in one piece (`native_calls.half`, a river or
    turn spot, where the plan has native code; else `cpu_spot.half`, a one-board spot):
    `(regret, avg, avg_comp)` new, each whole or `player`'s half as given; `None` where
    they do not apply (the caller runs `regret_pass` and the generic updates,
    `cfrjax.iteration`). A plan that interprets the spot or turn kernels runs them on CPU
    too (the tests)."""
    plan = plan_of(game)
    if tree_passes.on_platform(lambda cpu: cpu and not ({"spot", "turn"} & set(plan.interpret))):
        if t is not None and native_calls.half_applies(game, config, regret, comp, locked, leaf):
            return native_calls.half(game, config, regret, avg, comp, player, b_t, w_new, t, raw, locked, locked_policy)
        if cpu_spot.applies(game, config, regret, locked, leaf):
            return cpu_spot.half(game, config, regret, avg, comp, player, b_t, w_new, average)
        return None
    for kernels in (spot_kernel, turn_kernel):
        if kernels.applies(game, config, locked, leaf, regret, plan):
            return kernels.half(game, config, regret, avg, comp, player, b_t, w_new, average, locked, locked_policy,
                                plan=plan)
    return None
