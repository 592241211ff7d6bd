"""One CFR iteration as a pure function: `step(game, state) -> state`, for every form.

Simultaneous order (paper, Algorithm 1): regret matching on all slots, the form's passes
(`regret_pass`, `cfrjax.forms`: for the tabular form one forward reach pass for both
lanes, one backward value pass, instantaneous regrets flat over all decision edges), then
the rule's regret update and the average update.

Alternating order: the same body once per player, restricted to that player's slots
(contiguous halves, carried as separate arrays: `split_slots`), player 1's half seeing
player 0's new regrets.

The average is a running weighted mean: for the schedule `S_t = a_t S_{t-1} + b_t y_t` of
`cfrjax.rules` with `W_t = a_t W_{t-1} + b_t`, we keep `M_t = S_t / W_t`, which obeys
`M_t = M_{t-1} + (b_t / W_t)(y_t - M_{t-1})` whatever the decay `a_t`; here
`y_t = pi_i(I) sigma_t(I, a)`. It equals the unnormalized sum divided by `W_t`, so the
normalized average policy is the same, but each increment stays of the order of the
values themselves: in float32 linear averaging keeps absorbing new iterations long
after an unnormalized sum (which grows like t^2) would stall (paper, Proposition 4).

In float32 the mean itself is compensated (`compensated_mean_update`, the low-order part
in `SolverState.avg_comp`): near convergence an increment `(b_t / W_t)(y_t - M_{t-1})`
falls below half a float32 spacing of `M` and is rounded away, iteration after
iteration. With quadratic weights (`b_t / W_t ~ 3 / t`) that bias decided Kuhn PCFR+
alternating: 6.6e-7 after 1,000 float32 iterations against 2.4e-8 in float64;
compensated, 2.5e-8 (bench/precision.py). The low-order part is stored in bfloat16
(`cfrjax.state.compensation_dtype`), which carries the mean 8 bits past float32 at half
the bytes; the update itself runs in float32. A float64 solve updates `avg` alone, as
before (bit for bit).

A form may run a (half-)update in kernels of its own (`fused_half`, `cfrjax.forms`: the
public form's river spots on an NVIDIA GPU, `cfrjax.public.spot_kernel`); the same
update, the rule's hooks applied there to the same quantities.

Rule hooks (`cfrjax.rules`): `discount` on the cumulative regret before the passes (with
the previous iteration count), `update_discount` on the updating player's regret after
its strategy is matched (postflop-solver's DCFR; the identity otherwise), `strategy_regret` (what regret matching sees: the regret,
or regret plus prediction for the predictive rules), `after_update` once the
instantaneous regret is added, and `average_step` for the average (of `y_t = sigma_t` itself for the rules of
`rules.UNWEIGHTED_AVERAGE`). Predictive rules keep
this iteration's instantaneous regret as the next prediction (`SolverState.prediction`;
under alternating order per player's half). Under alternating order PDCFR+'s player 1
half sees player 0's regrets with the discount of iteration t already applied (as OpenSpiel
and the reference, which discount at the end of each half): player 0's actual next
strategy.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from cfrjax import passes, rules
from cfrjax.forms import form_of
from cfrjax.plan import plan_of
from cfrjax.rules import mean_coefficient
from cfrjax.state import SolverState
from cfrjax.storage import decode, encode_avg, encode_regret


def running_mean_update(mean, y, b_t, w_t):
    """`M_t = M_{t-1} + (b_t / W_t)(y_t - M_{t-1})`; keeps `M` when `W_t = 0` (no weight yet)."""
    return mean + mean_coefficient(b_t, w_t) * (y - mean)


def compensated_mean_update(mean, comp, y, b_t, w_t):
    """`running_mean_update` of the mean `mean + comp` kept as two floats (float32 solves).

    `comp` carries what rounding `mean` dropped, so the update is applied to about twice
    the working precision; `mean` stays the mean rounded to the working float (what the
    average policy reads). The increment `comp + (b_t / W_t)(y - mean - comp)` is added to
    `mean` by Knuth's TwoSum, which returns the rounded sum and its exact rounding error
    (additions only, so no fused multiply-add can alter it). Elementwise.

    Args:
      mean, comp, y: `[S, ...]` high and low parts of `M_{t-1}`, and `y_t`.
      b_t, w_t: `[]` (or broadcastable) weight of `y_t` and total weight `W_t`.

    Returns:
      `(mean', comp')`, each `[S, ...]`: `M_t = mean' + comp'`.
    """
    coef = mean_coefficient(b_t, w_t)
    inc = comp + coef * ((y - mean) - comp)
    total = mean + inc
    back = total - mean
    err = (mean - (total - back)) + (inc - back)
    return total, err


def _plain_mean_update(mean, comp, y, b_t, w_t):
    """`running_mean_update` in `compensated_mean_update`'s signature (the compensation kept)."""
    return running_mean_update(mean, y, b_t, w_t), comp


def _average_update(cfg):
    """`_average`'s update as a form's `fused_half` applies it: `(mean, comp, y, b_t, w_t)
    -> (mean, comp)`, compensated in float32, the plain running mean otherwise."""
    return compensated_mean_update if cfg.dtype == "float32" and cfg.precision == "float32" else _plain_mean_update


def _average(cfg, avg, comp, y, b_t, w_new):
    """The average update of one (half-)iteration: `(avg, avg_comp)` new (compensated in
    float32 only, the compensation kept in its own dtype, `state.compensation_dtype`;
    float64 keeps the plain update, so its results are unchanged)."""
    mean, low = _average_update(cfg)(avg, comp.astype(avg.dtype), y, b_t, w_new)
    return mean, low.astype(comp.dtype)


#: The state's slot arrays; under alternating order the iteration holds each as the pair
#: of its players' halves (`split_slots`).
SLOT_FIELDS = ("regret", "avg", "avg_comp", "prediction")


def split_slots(game, state: SolverState) -> SolverState:
    """Under alternating order, `state` with each slot array (`SLOT_FIELDS`) as the pair
    `(player 0's slots, player 1's slots)`; as it is under simultaneous order.

    Each half-iteration then writes its own player's half only: whole arrays would be
    rebuilt by a concatenation of the new half and the old one twice per iteration (a
    full-size copy of the regrets, the average and its compensation per half).
    `run_steps` splits once around its scan, `step` around one iteration.
    """
    if state.config.order != "alternating" or state.config.precision == "int16":   # (16 bits: `split_step`)
        return state
    k = game.slot_split
    return dataclasses.replace(state, **{f: (getattr(state, f)[:k], getattr(state, f)[k:]) for f in SLOT_FIELDS
                                         if getattr(state, f) is not None})


def join_slots(state: SolverState) -> SolverState:
    """The inverse of `split_slots`."""
    if not isinstance(state.regret, tuple):
        return state
    return dataclasses.replace(state, **{f: jnp.concatenate(getattr(state, f)) for f in SLOT_FIELDS
                                         if getattr(state, f) is not None})


def _half(game, state: SolverState, regret, avg, comp, pred, leaf, b_t, w_new, player, t, kept=None, stored=None,
          raw=None):
    """One (half-)update for `player` (0, 1, or None for both): new (regret, avg, avg_comp,
    prediction, leaf, kept). The slot arrays are whole (`player` None) or pairs of halves
    (`split_slots`), of which `player`'s is replaced; `pred` is `None` for a rule that does
    not predict (`SolverState.prediction`). `leaf`: a stateful leaf function's
    state (`SolverState.leaf`), or `None`; the form's pass updates it with this
    (half-)iteration's averaging coefficient.

    `kept`: player 1's strategy rows from player 0's half of this iteration (neither its
    regrets nor its prediction changed since), or `None`; player 1's half then matches
    player 0's regrets alone (`passes.regret_matching` of one player's rows, bit for bit
    those of the whole). Player 0's half returns them as the new `kept`: a quarter of an
    alternating iteration's regret matching saved.

    `stored`: the first (half-)update's `(regrets as stored, discount factors)`
    (`rules.discount_factors`, LCFR and DCFR): regret matching discounts them itself
    (`passes.regret_matching`), so on a GPU the discounted regrets are not written out for
    it (the matching kernel reads the stored ones).

    `raw`: `(regrets before this iteration's discount, discount factors)` as `split_step`
    holds them (`rules.discount_factors`, `None` for rules without): a form's fused
    update may discount the updating player's regrets itself and match undiscounted ones
    (LCFR's and DCFR's matching is invariant to the discount), so the discounted arrays
    are not written out for it (`cfrjax.forms`: `fused_half`)."""
    cfg = state.config
    form = form_of(game)

    def put(a, new):
        return new if player is None else tuple(new if i == player else x for i, x in enumerate(a))
    fused = getattr(form, "fused_half", None)
    if fused and raw is not None:    # (own rows undiscounted; the other player's as its half will see them)
        undiscounted, factors = raw
        raw = ((undiscounted[player], undiscounted[1] if player == 0 else regret[0]) if player is not None
               else (undiscounted, None), factors)
    fused = fused and fused(game, cfg, regret, avg, comp, player, b_t, w_new, _average_update(cfg),
                            state.locked, state.locked_policy, leaf, t=t, raw=raw)
    if fused:   # the form's own kernels (`cfrjax.forms`: `fused_half`)
        new_regret, new_avg, new_comp = fused
        return put(regret, new_regret), put(avg, new_avg), put(comp, new_comp), pred, leaf, None
    whole = (lambda a: jnp.concatenate(a)) if player is not None else (lambda a: a)   # noqa: E731
    predictive = cfg.rule in rules.PREDICTIVE
    seen = regret
    if player == 1 and predictive:
        # Player 0 already finished iteration t: it plays with its pending discount (for
        # DCFR/LCFR regret matching is invariant to it, so the plain regrets are used).
        seen = (rules.discount(cfg, regret[0], t), regret[1])
    if kept is not None:
        m = None if pred is None else pred[0]
        sigma = jnp.concatenate([passes.regret_matching(game, rules.strategy_regret(cfg, seen[0], m), 0,
                                                        kernel=not predictive), kept])
    elif stored is not None and stored[1] is not None and not predictive:
        sigma = passes.regret_matching(game, stored[0], factors=stored[1])
    else:
        m = None if pred is None else whole(pred)
        sigma = passes.regret_matching(game, rules.strategy_regret(cfg, whole(seen), m))
    kept = sigma[game.slot_split:] if player == 0 else None
    if state.locked is not None:   # node locking (`None`: nothing locked, `cfrjax.locking.drop_idle_locks`)
        sigma = jnp.where(state.locked, state.locked_policy.astype(sigma.dtype), sigma)
    sigma_ext = passes.extend(sigma)
    own = (lambda a: a[player]) if player is not None else (lambda a: a)   # noqa: E731
    extra = {} if leaf is None else {"leaf": (leaf, mean_coefficient(b_t, w_new))}
    base = rules.update_discount(cfg, own(regret), t)
    if predictive:
        inst, y, *out = form.regret_pass(game, sigma_ext, jnp.zeros_like(base), player, **extra)
        new_regret = rules.after_update(cfg, base + inst)
        pred = put(pred, inst)
    else:  # the form adds this iteration's regrets into the cumulative ones (OpenSpiel's rounding)
        acc, y, *out = form.regret_pass(game, sigma_ext, base, player, **extra)
        new_regret = rules.after_update(cfg, acc)
    if cfg.rule in rules.UNWEIGHTED_AVERAGE:
        slo, shi = passes.slot_range(game, player)
        y = sigma[slo:shi]
    new_avg, new_comp = _average(cfg, own(avg), own(comp), y, b_t, w_new)
    return (put(regret, new_regret), put(avg, new_avg), put(comp, new_comp), pred, (out[0] if out else leaf),
            kept)


#: From `Plan.wide_columns` columns per slot (hands times batch) an iteration keeps player
#: 1's strategy rows for its second half and matches the stored regrets (`_half`'s `kept`,
#: `stored`); smaller solves are kernel launches, not bytes, and keep the plain form
#: (measured: `bench/README.md`, "History from the code").


def _columns(regret) -> int:
    """Columns per slot of the regrets (whole or split: `split_slots`)."""
    first = regret[0] if isinstance(regret, tuple) else regret
    return first.size // max(first.shape[0], 1)


def split_step(game, state: SolverState) -> SolverState:
    """`step` on a state whose slot arrays are split (`split_slots`); returns it split.
    The body of `cfrjax.driver.run_steps`' scan. Under 16-bit storage (`cfrjax.storage`)
    the regrets and average are decoded to float32 for the iteration (split into the
    players' halves here under alternating order), updated with the plain running mean,
    and re-encoded with their new node scales."""
    if state.config.precision == "int16":
        return _step16(game, state)
    return _float_step(game, state)


def _float_step(game, state: SolverState) -> SolverState:
    """`split_step`'s iteration on float slot arrays (under 16-bit storage its decoded
    ones, the config's precision choosing the plain mean update and XLA's half-updates)."""
    cfg = state.config
    dt = jnp.dtype(cfg.dtype)
    t_int = state.iteration + 1
    t = t_int.astype(dt)
    a_t, b_t = rules.average_step(cfg, t)
    w_new = a_t * state.avg_weight + b_t
    t_prev = state.iteration.astype(dt)
    regret = jax.tree.map(lambda r: rules.discount(cfg, r, t_prev), state.regret)
    wide = _columns(state.regret) >= plan_of(game).wide_columns
    raw = (state.regret, rules.discount_factors(cfg, t_prev))
    stored = raw if wide else None
    avg, comp, pred, leaf = state.avg, state.avg_comp, state.prediction, state.leaf
    players = (None,) if cfg.order == "simultaneous" else (0, 1)
    kept = None
    for p in players:
        regret, avg, comp, pred, leaf, kept = _half(game, state, regret, avg, comp, pred, leaf, b_t, w_new, p, t,
                                                    kept, stored, raw)
        stored = None
        kept = kept if wide else None
    return dataclasses.replace(state, regret=regret, avg=avg, avg_comp=comp, avg_weight=w_new, iteration=t_int,
                               prediction=pred, leaf=leaf)


def _step16(game, state: SolverState) -> SolverState:
    """`split_step` of a 16-bit state (whole slot arrays): decode, a float32 iteration
    without compensation, encode."""
    f32 = dataclasses.replace(state, regret=decode(game, state.regret, state.regret_scale),
                              avg=decode(game, state.avg, state.avg_scale), regret_scale=None, avg_scale=None,
                              config=dataclasses.replace(state.config, precision="float32"))
    zero = jnp.zeros((), jnp.float32)   # the compensation the plain mean update keeps as it is
    f32 = dataclasses.replace(split_slots(game, dataclasses.replace(f32, avg_comp=None)), config=state.config,
                              avg_comp=(zero, zero) if state.config.order == "alternating" else zero)
    new = join_slots(dataclasses.replace(_float_step(game, f32), avg_comp=None))
    regret, regret_scale = encode_regret(game, new.regret)
    avg, avg_scale = encode_avg(game, new.avg)
    return dataclasses.replace(new, regret=regret, avg=avg, avg_comp=None, regret_scale=regret_scale,
                               avg_scale=avg_scale)


def step(game, state: SolverState) -> SolverState:
    """One iteration of the configured rule and order. Pure; jit- and vmap-friendly.

    Args:
      game: the compiled game, in any form (`cfrjax.forms`; leaves: index arrays; static:
        sizes).
      state: the solver state; its `config` (static) selects rule, order and averaging.

    Returns:
      The state after iteration `state.iteration + 1`.
    """
    return join_slots(split_step(game, split_slots(game, state)))
