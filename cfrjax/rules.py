"""Update rules as small hooks on the one shared iteration (paper, section 3, appendix H step 9).

A rule decides only how the accumulators evolve; the tree passes are shared. With
`t` the 1-based index of the iteration being run (so `t - 1` completed iterations):

  * `discount` -- the "discount" hook on the cumulative regret *before* the passes, with
    the previous iteration count `t - 1` (identity for CFR, CFR+, PCFR+).
  * `strategy_regret` -- what regret matching is applied to: the (discounted) cumulative
    regret, or, for the predictive rules, the regret plus the prediction `m_t = r_{t-1}`
    (the last instantaneous regret, kept in `SolverState.prediction`).
  * `after_update` -- the "after" hook on the cumulative regret once the iteration's
    instantaneous regret is added (CFR, LCFR, DCFR keep it; CFR+, PCFR+, PDCFR+ clamp it
    at zero).
  * `average_step` -- the averaging schedule: the weight `b_t` of iteration `t`'s
    reach-weighted strategy and the decay `a_t` of what came before.

The strategy average is kept as a running weighted mean rather than an unnormalized sum
(see `cfrjax.iteration`), so only the ratio `b_t / W_t` enters the state and the decay
`a_t` matters only through `W_t = a_t W_{t-1} + b_t`.

Rules (`r_t`: instantaneous regret of iteration t, `R_t`: cumulative regret stored after
it, `[x]^+ = max(x, 0)`, `RM`: regret matching, `d_x(n) = n^x / (n^x + 1)`):

  * `cfr`: `sigma_t = RM(R_{t-1})`, `R_t = R_{t-1} + r_t`; averaging uniform or linear.
  * `cfr+` (Tammelin 2014): as `cfr` with `R_t = [R_{t-1} + r_t]^+`.
  * `lcfr` (linear CFR, Brown & Sandholm 2019): `R_t = R_{t-1} (t-1)/t + r_t`, i.e. the
    regrets are weighted by `t`; average weights `t` (`a_t = (t-1)/t, b_t = 1`, the same
    running mean as `a_t = 1, b_t = t`). It is DCFR(1, 1, 1).
  * `dcfr` (discounted CFR, Brown & Sandholm 2019, parameters alpha, beta, gamma,
    defaults 1.5, 0, 2): before iteration t the positive entries of `R_{t-1}` are
    multiplied by `d_alpha(t-1)` and the others by `d_beta(t-1)`; then
    `R_t = R_{t-1}' + r_t`, `sigma_t = RM(R_{t-1}')`. The average is discounted by
    `a_t = ((t-1)/t)^gamma` with `b_t = 1`, which makes iteration k's weight in the
    average proportional to `k^gamma`.
    Convention vs OpenSpiel's `discounted_cfr.py`: OpenSpiel discounts at the *end* of
    iteration t with `d(t)` (positive test `R >= 0`), we at the start of iteration t + 1
    with the same `d(t)`. The strategies played, the averages and hence every policy
    are identical; the stored `SolverState.regret` after iteration t is OpenSpiel's
    divided by the pending discount. (Under alternating updates OpenSpiel's player 1
    half sees player 0's regrets already discounted by `d_alpha(t)`; regret matching is
    invariant to scaling the positive part, so it plays the same strategy.) OpenSpiel
    weights the average by `t^gamma`, the same normalized average as ours.
  * `pcfr+` (predictive CFR+, Farina, Kroer & Sandholm 2021): `R_t = [R_{t-1} + r_t]^+`
    as CFR+, strategy `sigma_t = RM([R_{t-1}]^+ + m_t)` with the prediction
    `m_t = r_{t-1}` (`m_1 = 0`); averaging uniform or linear.
  * `pdcfr+` (predictive discounted CFR+, Xu, Li, Li, Fu, Fu & Huang, IJCAI 2024,
    "Minimizing Weighted Counterfactual Regret with Optimistic Online Mirror Descent",
    eqs. for PDCFR+; parameters alpha, gamma, defaults 2.3, 5):
        R_t         = [ R_{t-1} d_alpha(t-1) + r_t ]^+
        sigma_{t+1} = RM([ R_t d_alpha(t) + r_t ]^+)        (prediction m_{t+1} = r_t)
        avg weights : a_t = ((t-1)/t)^gamma, b_t = 1
    i.e. the discount hook multiplies the (non-negative) regret by `d_alpha(t-1)` before
    the passes and the strategy is matched against the discounted regret plus the
    prediction.
  * `dcfr-postflop` (postflop-solver's DCFR, b-inary, `src/solver.rs`, `DiscountParams`
    and `solve_recursive`; parameters alpha, beta, gamma, defaults 1.5, 0, 3). With
    `s = t - 1` its 0-based iteration index and `p(s)` the largest power of 4 `<= s`
    (`p(0) = 0`):
        sigma_t = RM(R_{t-1})                                (no discount before matching)
        R_t     = R_{t-1} * (d_alpha(max(s - 1, 0)) where R_{t-1} > 0, else d_beta(s - 1)) + r_t
        S_t     = S_{t-1} * ((s - p(s)) / (s - p(s) + 1))^gamma + sigma_t
    with `d_x(0) = 0^x / (0^x + 1)` (0 for `x > 0`: at `t = 2` the positive regrets of
    iteration 1 are dropped; 1/2 for `x = 0`, 1 for `x < 0`). The average restarts at
    `s = 1, 4, 16, 64, ...` (the weight of `S_{t-1}` is 0 there) and within a window
    weights iteration `s` by `(s - p + 1)^gamma`. The discount is applied to the
    updating player's regrets after its strategy is matched (`update_discount`), which
    differs from discounting first only where `d_alpha = 0` (`t = 2`). The average is of
    the strategies themselves, not reach-weighted (`y_t = sigma_t`, as postflop-solver's
    cumulative strategy); each is still a valid average policy per information set.
    Postflop-solver has only the alternating order (player 0 first); the simultaneous
    order applies the same hooks to both players at once.
"""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp

RULES = ("cfr", "cfr+", "lcfr", "dcfr", "pcfr+", "pdcfr+", "dcfr-postflop")
#: The default rule and order (`Config`, `cfrjax.init`, the command line): of the arms
#: measured by `bench/defaults.py` (cfr+, dcfr, pcfr+ linear and quadratic, each
#: simultaneous and alternating), DCFR alternating reaches a given exploitability soonest,
#: in iterations and in time, on most suite games (tabular form) and on both river spots
#: (public form); the table is in the README ("Defaults"). The paper's benchmark setting
#: is `rule="cfr+", order="simultaneous"`.
DEFAULT_RULE = "dcfr"
DEFAULT_ORDER = "alternating"
ORDERS = ("simultaneous", "alternating")
AVERAGING = ("uniform", "linear", "quadratic")
DTYPES = ("float32", "float64")
#: Storage precisions of the state (`Config.precision`, `cfrjax.storage`).
PRECISIONS = ("float32", "int16")

# Rules whose strategy is matched against regret + prediction (need the prediction buffer).
PREDICTIVE = ("pcfr+", "pdcfr+")
# Rules that clamp the cumulative regret at zero after each update.
CLAMPED = ("cfr+", "pcfr+", "pdcfr+")
# Default discount parameters per rule; rules absent here take none.
PARAM_DEFAULTS = {
    "lcfr": dict(alpha=1.0, beta=1.0, gamma=1.0),
    "dcfr": dict(alpha=1.5, beta=0.0, gamma=2.0),
    "pdcfr+": dict(alpha=2.3, beta=None, gamma=5.0),
    "dcfr-postflop": dict(alpha=1.5, beta=0.0, gamma=3.0),
}
# Rules whose averaging schedule is fixed by the rule (gamma), not by `averaging`.
OWN_AVERAGING = ("lcfr", "dcfr", "pdcfr+", "dcfr-postflop")
# Rules that discount the updating player's regrets after matching (`update_discount`)
# rather than all regrets before it (`discount`).
DISCOUNT_AT_UPDATE = ("dcfr-postflop",)
# Rules whose average is of the strategies themselves, not reach-weighted.
UNWEIGHTED_AVERAGE = ("dcfr-postflop",)


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What a rule needs of an implementation of the iteration, by property instead of by
    name (`capabilities`; a kernel declares the ones it implements, `cfrjax.kernels`).

    Attributes:
      predictive: matched against regret plus a prediction (the prediction buffer).
      clamped: the cumulative regret clamped at zero after each update.
      discount_at_update: the updating player's regrets discounted after matching
        (`update_discount`), not all regrets before it.
      unweighted_average: the average of the strategies themselves, not reach-weighted.
    """

    predictive: bool = False
    clamped: bool = False
    discount_at_update: bool = False
    unweighted_average: bool = False


def capabilities(config: "Config") -> Capabilities:
    """The `Capabilities` `config`'s rule needs."""
    r = config.rule
    return Capabilities(predictive=r in PREDICTIVE, clamped=r in CLAMPED, discount_at_update=r in DISCOUNT_AT_UPDATE,
                        unweighted_average=r in UNWEIGHTED_AVERAGE)


def _check(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {name} {value!r}; allowed: {', '.join(map(repr, allowed))}")


def _number(name, value, minimum=None):
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and minimum is not None:
        ok = value >= minimum
    if not ok:
        allowed = "a finite real number" + ("" if minimum is None else f" >= {minimum}")
        raise ValueError(f"bad {name} {value!r}; allowed: {allowed}")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Config:
    """How the solver iterates: static, hashable, validated at construction.

    Attributes:
      rule: one of `RULES` (see the module docstring for each rule's exact update).
      order: `"simultaneous"` (both players from one profile) or `"alternating"` (player
        0's half-update, then player 1's, which sees player 0's new strategy).
      averaging: `"uniform"` (`w_t = 1`), `"linear"` (`w_t = t`, from the first
        iteration, as in the paper and OpenSpiel's `CFRPlusSolver`) or `"quadratic"`
        (`w_t = t^2`, the weights Farina et al. 2021 recommend for PCFR+; the paper's
        PCFR+ cells of tab:convergence are reproduced with them). For `lcfr`, `dcfr`
        and `pdcfr+` the schedule is the rule's own (gamma) and only `"linear"` (the
        default) is accepted.
      dtype: `"float32"` or `"float64"` (the latter needs `jax_enable_x64`).
      precision: how the state's regrets and average are stored between iterations:
        `"float32"` (in `dtype`, the default) or `"int16"` (int16 regrets and uint16
        average with one float32 scale per decision node, `cfrjax.storage`; float32
        arithmetic, so `dtype` must be `"float32"`).
      alpha, beta, gamma: discount parameters of `dcfr` (defaults 1.5, 0, 2: alpha and
        gamma finite and >= 0, beta any finite real), `pdcfr+` (alpha, gamma; defaults
        2.3, 5) and `dcfr-postflop` (defaults 1.5, 0, 3); `lcfr` is fixed at (1, 1, 1). `None` means the rule's default; giving one
        to a rule that does not use it is an error.
    """

    rule: str = DEFAULT_RULE
    order: str = DEFAULT_ORDER
    averaging: str = "linear"
    dtype: str = "float32"
    precision: str = "float32"
    alpha: float | None = None
    beta: float | None = None
    gamma: float | None = None

    def __post_init__(self):
        _check("rule", self.rule, RULES)
        _check("order", self.order, ORDERS)
        _check("averaging", self.averaging, AVERAGING)
        _check("dtype", self.dtype, DTYPES)
        _check("precision", self.precision, PRECISIONS)
        if self.precision == "int16" and self.dtype != "float32":
            raise ValueError(f"precision 'int16' stores a float32 solve; dtype must be 'float32', got {self.dtype!r}")
        if self.rule in OWN_AVERAGING and self.averaging != "linear":
            raise ValueError(f"rule {self.rule!r} has its own averaging schedule; averaging must be "
                             f"'linear' (the default), got {self.averaging!r}")
        defaults = PARAM_DEFAULTS.get(self.rule, dict(alpha=None, beta=None, gamma=None))
        for name in ("alpha", "beta", "gamma"):
            value, default = getattr(self, name), defaults[name]
            if value is None:
                object.__setattr__(self, name, default)
                continue
            if default is None or self.rule == "lcfr":
                users = [r for r, d in PARAM_DEFAULTS.items() if d[name] is not None and r != "lcfr"]
                raise ValueError(f"rule {self.rule!r} takes no parameter {name} (got {value!r}); "
                                 f"{name} is valid only for rules: {', '.join(map(repr, users))}")
            object.__setattr__(self, name, _number(name, value, None if name == "beta" else 0.0))


def _d(n, x, at_zero=1.0):
    """`n^x / (n^x + 1)` for `n >= 0`, with `n = 0` mapped to `at_zero`: 1 by default
    (nothing to discount yet); postflop-solver's DCFR takes the limit from above instead
    (`_limit_at_zero`)."""
    safe = jnp.where(n > 0, n, 1.0)
    p = safe ** x
    return jnp.where(n > 0, p / (p + 1.0), at_zero)


def _limit_at_zero(x: float) -> float:
    """The limit of `n^x / (n^x + 1)` as `n -> 0+`: 0 for `x > 0`, 1/2 for `x = 0`, 1 for `x < 0`."""
    return 0.0 if x > 0 else (0.5 if x == 0 else 1.0)


def _lower_power_of_4(s):
    """The largest power of 4 `<= s` for int32 `s >= 1`, and 0 for `s = 0` (elementwise)."""
    s = jnp.asarray(s, jnp.int32)
    log2 = 31 - jax.lax.clz(jnp.maximum(s, 1))
    return jnp.where(s > 0, jnp.left_shift(jnp.int32(1), log2 & ~1), 0)


def discount_factors(config: Config, t_prev):
    """`(pos, neg)`: the per-sign factors of LCFR's and DCFR's `discount`, `regret *
    where(regret > 0, pos, neg)` (shaped as `t_prev`), or `None` for the other rules.
    Regret matching takes them to discount the stored regrets itself
    (`cfrjax.passes.regret_matching`)."""
    if config.rule in ("lcfr", "dcfr"):
        return _d(t_prev, config.alpha), _d(t_prev, config.beta)
    return None


def discount(config: Config, regret, t_prev):
    """The discount hook, before the passes of iteration `t_prev + 1` (`t_prev` float)."""
    factors = discount_factors(config, t_prev)
    if factors is not None:
        return regret * jnp.where(regret > 0, *factors)
    if config.rule == "pdcfr+":
        return regret * _d(t_prev, config.alpha)
    return regret


def update_discount_factors(config: Config, t):
    """`(pos, neg)`: the per-sign factors of `update_discount` at iteration `t`, or `None`
    for the rules without one."""
    if config.rule in DISCOUNT_AT_UPDATE:
        n = jnp.maximum(t - 2.0, 0.0)  # postflop-solver's 0-based iteration index s = t - 1, discounted by s - 1
        return _d(n, config.alpha, _limit_at_zero(config.alpha)), _d(n, config.beta, _limit_at_zero(config.beta))
    return None


def update_discount(config: Config, regret, t):
    """The discount of the rules in `DISCOUNT_AT_UPDATE`, on the updating player's
    cumulative regrets once its strategy of iteration `t` (1-based, float) is matched and
    before this iteration's regrets are added; the identity for every other rule."""
    factors = update_discount_factors(config, t)
    if factors is not None:
        return regret * jnp.where(regret > 0, *factors)
    return regret


def mean_coefficient(b_t, w_t):
    """`b_t / W_t`, the weight of `y_t` in the running mean; 0 when `W_t = 0` (no weight yet)."""
    return jnp.where(w_t > 0, b_t / jnp.where(w_t > 0, w_t, 1), 0.0)


def strategy_regret(config: Config, regret, prediction):
    """What regret matching is applied to (after `discount`): `R`, or `[R]^+ + m` for the
    predictive rules."""
    if config.rule in PREDICTIVE:
        return jnp.maximum(regret, 0.0) + prediction
    return regret


def after_update(config: Config, regret):
    """The after-hook, on the cumulative regret once this iteration's regret is added:
    CFR, LCFR and DCFR keep it, CFR+, PCFR+ and PDCFR+ clamp it at zero."""
    if config.rule in CLAMPED:
        return jnp.maximum(regret, 0.0)
    return regret


def average_step(config: Config, t):
    """Averaging schedule at iteration `t` (1-based): `(a_t, b_t)` with `S_t = a_t S_{t-1} + b_t y_t`."""
    one = jnp.ones_like(t)
    if config.rule == "dcfr-postflop":
        s = jnp.round(t - 1.0).astype(jnp.int32)
        k = (s - _lower_power_of_4(s)).astype(t.dtype)
        return (k / (k + 1.0)) ** config.gamma, one
    if config.rule in OWN_AVERAGING:
        return ((t - 1.0) / t) ** config.gamma, one
    if config.averaging == "uniform":
        return one, one
    if config.averaging == "quadratic":
        return one, t * t
    return one, t
