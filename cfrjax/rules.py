"""Update rules as small hooks on the one shared iteration (paper, section 3, appendix H step 9).

A rule decides only how the two accumulators evolve; the tree passes are shared:
  * `after_update` — the "after" hook on the cumulative regret once the iteration's
    instantaneous regret is added (CFR keeps it; CFR+ clamps it at zero).
  * `average_step` — the averaging schedule: the weight `b_t` of iteration `t`'s
    reach-weighted strategy and the decay `a_t` of what came before.

The strategy average is kept as a running weighted mean rather than an unnormalized sum
(see `cfrjax.iteration`), so only the ratio `b_t / W_t` enters the state.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

RULES = ("cfr", "cfr+")
ORDERS = ("simultaneous", "alternating")
AVERAGING = ("uniform", "linear")
DTYPES = ("float32", "float64")


def _check(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(map(repr, allowed))}")


@dataclasses.dataclass(frozen=True)
class Config:
    """How the solver iterates: static, hashable, validated at construction.

    Attributes:
      rule: `"cfr"` (regret matching) or `"cfr+"` (regret matching+, Tammelin 2014).
      order: `"simultaneous"` (both players from one profile) or `"alternating"` (player
        0's half-update, then player 1's, which sees player 0's new strategy).
      averaging: `"uniform"` (`w_t = 1`) or `"linear"` (`w_t = t`, from the first
        iteration, as in the paper and OpenSpiel's `CFRPlusSolver`).
      dtype: `"float32"` or `"float64"` (the latter needs `jax_enable_x64`).
    """

    rule: str = "cfr+"
    order: str = "simultaneous"
    averaging: str = "linear"
    dtype: str = "float32"

    def __post_init__(self):
        _check("rule", self.rule, RULES)
        _check("order", self.order, ORDERS)
        _check("averaging", self.averaging, AVERAGING)
        _check("dtype", self.dtype, DTYPES)


def after_update(config: Config, regret):
    """The after-hook, on the cumulative regret once this iteration's regret is added:
    CFR keeps it, CFR+ clamps it at zero."""
    if config.rule == "cfr+":
        return jnp.maximum(regret, 0.0)
    return regret


def average_step(config: Config, t):
    """Averaging schedule at iteration `t` (1-based): `(a_t, b_t)` with `S_t = a_t S_{t-1} + b_t y_t`."""
    one = jnp.ones_like(t)
    if config.averaging == "uniform":
        return one, one
    return one, t
