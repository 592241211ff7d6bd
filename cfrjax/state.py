"""SolverState: the numbers that change between iterations, and `init`.

The configuration (rule, order, averaging, dtype) is static metadata of the pytree, so
`jax.jit(cfrjax.step)` retraces only when it changes and `vmap` over a batch of states
(leading axis on every leaf) works.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax import xla_options
from cfrjax.host import default_platform, device_array
from cfrjax.rules import DEFAULT_ORDER, DEFAULT_RULE, Config, capabilities
from cfrjax.storage import STORED_DTYPES, num_nodes


@dataclasses.dataclass(frozen=True)
class SolverState:
    """Solver state.

    Slot arrays have the game's `slot_shape`: `[S]` in the tabular form, `[S, H]` in the
    public form (per hand); a batch adds a leading axis.

    Attributes:
      regret: `[S]` cumulative regrets.
      avg: `[S]` running weighted mean of the reach-weighted strategies
        `pi_i(I) sigma_t(I, a)`; normalized per information set it is the average policy.
      avg_comp: `[S]` the low-order part of that mean in a float32 solve (compensated
        summation, `cfrjax.iteration.compensated_mean_update`: the mean is `avg + avg_comp`
        to 8 or more bits than float32 holds, and `avg` is it rounded to float32), stored in
        bfloat16 on an accelerator (half the bytes of a float32 buffer) and in float32 on
        CPU (`compensation_dtype`); zeros in a float64 solve, which updates `avg` alone;
        `None` under 16-bit storage.
      avg_weight: `[]` total averaging weight `W_t` so far.
      iteration: `[]` int32, completed iterations.
      prediction: `[S]` prediction buffer of the predictive rules (`pcfr+`, `pdcfr+`,
        `cfrjax.rules.Capabilities.predictive`): the last iteration's instantaneous regret;
        `None` for every other rule (no slot-sized array the rule never reads).
      locked: `[S]` bool, slots of information sets whose strategy is fixed (node
        locking, see `cfrjax.lock`), or `None` (the default): nothing locked.
      locked_policy: `[S]` the fixed strategy at locked slots (ignored elsewhere), or
        `None` with `locked`. A state whose mask locks nothing (after `cfrjax.unlock`)
        solves as one with `None`: `cfrjax.solve` / `solve_batch` drop idle locks
        (`cfrjax.locking.drop_idle_locks`: regret matching skips them), and the returned
        state has them back.
      leaf: the state of a depth-limited game's stateful leaf function (a pytree its
        `LeafFunction.init` made and its `update` carries across iterations, e.g. the
        `exact` leaf's warm-started leaf solves and their reach-weighted average:
        `cfrjax.public.depth`); `None` for every other game. Not in `ARRAY_FIELDS`
        (checkpoints refuse a state that has one).
      regret_scale, avg_scale: `[nodes]` float32 scale of each decision node's regrets and
        average under 16-bit storage (`config.precision == "int16"`: `regret` int16,
        `avg` uint16, `cfrjax.storage`); `None` otherwise.
      config: `Config` (static).
    """

    regret: Any
    avg: Any
    avg_comp: Any
    avg_weight: Any
    iteration: Any
    prediction: Any
    locked: Any
    locked_policy: Any
    leaf: Any = None
    regret_scale: Any = None
    avg_scale: Any = None
    config: Config = dataclasses.field(metadata=dict(static=True), default=Config())


#: The array fields of `SolverState` (its pytree leaves but `leaf`): the one list that
#: checkpoints and shard files read and write (those of `OPTIONAL_FIELDS` where not `None`).
ARRAY_FIELDS = tuple(f.name for f in dataclasses.fields(SolverState) if not f.metadata.get("static")
                     and f.name != "leaf")

#: The array fields a state holds only where its rule, its locks or its storage need them
#: (`None` otherwise): the predictive rules' prediction, the node locks, the float32
#: average's compensation and the 16-bit storage's scales.
OPTIONAL_FIELDS = ("prediction", "locked", "locked_policy", "avg_comp", "regret_scale", "avg_scale")

jax.tree_util.register_dataclass(SolverState, data_fields=list(ARRAY_FIELDS) + ["leaf"], meta_fields=["config"])


def resolve_dtype(dtype) -> str:
    """The dtype name to solve in: the default float (float64 under x64) when `None`."""
    if dtype is None:
        return "float64" if jax.config.jax_enable_x64 else "float32"
    name = jnp.dtype(dtype).name
    if name == "float64" and not jax.config.jax_enable_x64:
        raise ValueError("dtype 'float64' needs 64-bit JAX: call jax.config.update('jax_enable_x64', True) "
                         "at program start (cfrjax never flips this global switch for you)")
    return name


def compensation_dtype(dtype: str, platform: str | None = None):
    """The dtype of `SolverState.avg_comp` in a solve of `dtype` on `platform` (default:
    `cfrjax.host.default_platform()`): for float32, bfloat16 on an accelerator and float32 on CPU.

    The compensation is below half a float32 spacing of the mean, so its own leading 8
    bits carry the mean 8 bits past float32, and more add nothing measurable. On a GPU
    bytes are what it costs: every half-iteration reads and writes the updating player's
    compensation. A CPU without bfloat16 arithmetic converts it in software, which costs
    more than the bytes save. (Measured: `bench/README.md`, "History from the code".)
    Float64 (and any other dtype) keeps its own: zeros, never updated."""
    if jnp.dtype(dtype) != jnp.float32:
        return jnp.dtype(dtype)
    return jnp.dtype(jnp.float32 if (platform or default_platform()) == "cpu" else jnp.bfloat16)


@functools.partial(xla_options.jit, static_argnums=(0, 1, 2, 3))
def _zeros_program(shape: tuple, dtype, comp_dtype, floats: int):
    """`_zeros` in one compiled program (each `jnp.zeros` run eagerly compiles a program of
    its own, per shape and dtype). Through `cfrjax.xla_options.jit`, so with the
    compilation cache on a new process reads it back kept (`cfrjax.programs`) instead of
    tracing and lowering it again."""
    return (tuple(jnp.zeros(shape, dtype) for _ in range(floats)), jnp.zeros(shape, comp_dtype),
            jnp.zeros((), dtype), jnp.zeros((), jnp.int32))


#: Slot-array entries up to which a fresh state's zeros are made on the host and copied to
#: the device (`_zeros`) rather than by a compiled program: the copy takes milliseconds
#: where compiling the program in a new process takes far longer (cold, on the path from
#: the build to a solved spot).
HOST_ZEROS_ENTRIES = 2 ** 23


def _zeros(shape: tuple, dtype, comp_dtype, floats: int):
    """A fresh state's arrays: `floats` distinct zero arrays `[*shape]` of `dtype` (distinct
    buffers, so that a solve may take the state's buffers over, `cfrjax.solve(...,
    donate=True)`), zeros `[*shape]` of `comp_dtype`, and the scalars `0` of `dtype` and
    int32; copied from the host up to `HOST_ZEROS_ENTRIES`, larger ones (a batch's) made on
    the device by `_zeros_program`."""
    if math.prod(shape) > HOST_ZEROS_ENTRIES:
        return _zeros_program(shape, dtype, comp_dtype, floats)
    return (tuple(device_array(np.zeros(shape, dtype)) for _ in range(floats)),
            *(device_array(np.zeros(sh, dt)) for sh, dt in ((shape, comp_dtype), ((), dtype), ((), jnp.int32))))


def init(game, rule: str = DEFAULT_RULE, order: str = DEFAULT_ORDER,
         averaging: str = "linear", dtype=None, *, alpha: float | None = None, beta: float | None = None,
         gamma: float | None = None, precision: str = "float32") -> SolverState:
    """A fresh solver state: zero regrets, empty average, iteration 0, nothing locked; a
    prediction buffer only for a predictive rule.

    Args:
      game: the compiled game, in any form (state arrays take its `slot_shape`: `[S]`
        tabular, `[S, H]` public).
      rule: one of `cfrjax.rules.RULES`: `"cfr"`, `"cfr+"`, `"lcfr"`, `"dcfr"`, `"pcfr+"`,
        `"pdcfr+"`, `"dcfr-postflop"` (exact updates in `cfrjax.rules`).
      order: `"simultaneous"` or `"alternating"`.
      averaging: `"uniform"` or `"linear"`.
      dtype: `"float32"`, `"float64"` or `None` (JAX's default float; float32 under
        `precision="int16"`).
      alpha, beta, gamma: discount parameters of `"dcfr"` / `"pdcfr+"` / `"dcfr-postflop"` (`None`: the
        rule's defaults; see `cfrjax.rules.Config`).
      precision: `"float32"` (the default) or `"int16"`: the regrets and average stored in
        16 bits with a scale per decision node (`cfrjax.storage`).

    Raises:
      ValueError: an unknown rule, order, averaging, dtype or precision, or a bad parameter.
    """
    dtype = "float32" if dtype is None and precision == "int16" else resolve_dtype(dtype)
    return init_config(game, Config(rule=rule, order=order, averaging=averaging, dtype=dtype,
                                    precision=precision, alpha=alpha, beta=beta, gamma=gamma))


def init_config(game, config: Config) -> SolverState:
    """`init` of a `Config` already made (e.g. a warm start's, `cfrjax.warm`): the arrays
    `config`'s rule needs (`cfrjax.rules.capabilities`), zeros."""
    dt = jnp.dtype(config.dtype)
    predictive = capabilities(config).predictive
    leaf_init = getattr(game, "leaf_init", None)   # a depth-limited game's stateful leaf function
    if config.precision == "int16":
        return _init16(game, config, predictive, leaf_init)
    floats, comp, weight, iteration = _zeros(tuple(game.slot_shape), dt, compensation_dtype(config.dtype),
                                             3 if predictive else 2)
    return SolverState(regret=floats[0], avg=floats[1], avg_comp=comp, avg_weight=weight,
                       iteration=iteration, prediction=floats[2] if predictive else None, locked=None,
                       locked_policy=None, leaf=None if leaf_init is None else leaf_init(game.leaf_data, dt),
                       config=config)


def _init16(game, config: Config, predictive: bool, leaf_init) -> SolverState:
    """`init_config` under 16-bit storage (`cfrjax.storage`): int16 regrets, uint16
    average, a float32 scale per decision node, a float32 prediction for a predictive
    rule; nothing else made (no float32 slot array on the device, even for a moment)."""
    if leaf_init is not None:
        raise ValueError("precision 'int16' is not available for a depth-limited game (its leaf state is float32); "
                         "use precision 'float32'")
    shape = tuple(game.slot_shape)
    scales = np.zeros((num_nodes(game),), np.float32)
    return SolverState(regret=device_array(np.zeros(shape, STORED_DTYPES["regret"])),
                       avg=device_array(np.zeros(shape, STORED_DTYPES["avg"])), avg_comp=None,
                       avg_weight=device_array(np.zeros((), np.float32)),
                       iteration=device_array(np.zeros((), np.int32)),
                       prediction=device_array(np.zeros(shape, np.float32)) if predictive else None, locked=None,
                       locked_policy=None, regret_scale=device_array(scales), avg_scale=device_array(scales.copy()),
                       config=config)
