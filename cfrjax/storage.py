"""16-bit storage of the solver state (`rules.Config.precision = "int16"`): regrets as
int16 and the average as uint16, each with one float32 scale per decision node (per
subgame in a batch), postflop-solver's scheme (`encode_signed_slice` /
`encode_unsigned_slice` in its `utility.rs`; design: docs/design/density.md).

A node's block (its slots, every hand) is stored as `q = round(x * 32767 / scale)`
(regrets; the average `floor(x * 65535 / scale + 0.49999997)`, non-negative) with
`scale = max |x|` over the block, and read back as `x = q * scale / 32767` (`/ 65535`).
The iteration decodes the state to float32 once per iteration, updates it as a float32
solve would (the plain running mean: 16 bits hold less than a compensation recovers) and
re-encodes it with the new maxima (`cfrjax.iteration.split_step`); the normalised
average policy divides the node's scale out. Round-to-nearest for both: no stochastic
rounding (the average's increment `(b_t / W_t)(y_t - M)` stays above a uint16 quantum of
its node's range for the iterations measured, `bench/results/precision16.jsonl`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from cfrjax.rules import PRECISIONS

__all__ = ["PRECISIONS", "STORED_DTYPES", "decode", "decoded", "encode_avg", "encode_regret", "num_nodes"]

_SIGNED, _UNSIGNED = 32767.0, 65535.0
#: The stored dtype of each 16-bit slot array.
STORED_DTYPES = {"regret": "int16", "avg": "uint16"}


def num_nodes(game) -> int:
    """Decision nodes (information sets of the tabular form; public nodes of the public
    form): the length of a scale's first axis."""
    return int(game.infoset_slot_start.shape[-1]) - 1


def _scale(game, a):
    """`[nodes, *batch]`: max `a` over each node's slots and hands (`a` non-negative)."""
    hands = tuple(range(1, len(game.slot_shape)))
    rows = jnp.max(a, axis=hands) if hands else a                          # [S, *batch]
    return jax.ops.segment_max(rows, game.slot_infoset, num_segments=num_nodes(game), indices_are_sorted=True)


def _per_slot(game, scale):
    """A node's scale at each of its slots, `[S, 1 (hands)..., *batch]`."""
    s = scale[game.slot_infoset]
    return jnp.expand_dims(s, tuple(range(1, len(game.slot_shape)))) if len(game.slot_shape) > 1 else s


def encode_regret(game, x):
    """`(q int16, scale float32 [nodes, *batch])` of the float32 regrets `x` (slot array)."""
    scale = _scale(game, jnp.abs(x))
    s = _per_slot(game, scale)
    q = jnp.round(jnp.where(s > 0, x * (_SIGNED / jnp.where(s > 0, s, 1.0)), 0.0))
    return q.astype(jnp.int16), scale.astype(jnp.float32)


def encode_avg(game, x):
    """`(q uint16, scale float32 [nodes, *batch])` of the non-negative float32 average `x`."""
    x = jnp.maximum(x, 0.0)
    scale = _scale(game, x)
    s = _per_slot(game, scale)
    q = jnp.floor(jnp.where(s > 0, x * (_UNSIGNED / jnp.where(s > 0, s, 1.0)), 0.0) + 0.49999997)
    return q.astype(jnp.uint16), scale.astype(jnp.float32)


def decode(game, q, scale, dtype=jnp.float32):
    """The float slot array of the stored `q` (int16 regrets or uint16 average) and its
    node scales."""
    full = _SIGNED if q.dtype == jnp.int16 else _UNSIGNED
    return q.astype(dtype) * (_per_slot(game, scale).astype(dtype) / full)


def decoded(game, state):
    """`state` with float32 regrets and average (its scales dropped, no compensation)
    where it is stored in 16 bits; `state` itself otherwise. What the policies and the
    evaluation read."""
    if state.config.precision != "int16":
        return state
    return dataclasses.replace(state, regret=decode(game, state.regret, state.regret_scale),
                               avg=decode(game, state.avg, state.avg_scale), regret_scale=None, avg_scale=None,
                               config=dataclasses.replace(state.config, precision="float32"))
