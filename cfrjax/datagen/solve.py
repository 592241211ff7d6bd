"""Solving one shard's spots in one batch and reading off their labels.

The spots of a shard share a tree group (`cfrjax.datagen.sampling`), so they are one
batch of one game: the river game of the group's reference pot (every live hand,
`build_public`, on the template's board; `DatagenConfig.tree_groups`: every pot of the
group has this game divided by its pot), with one board per spot as data
(`cfrjax.games.poker.boards.set_boards`: hand `h` of spot `b` is combo
`spots.tables["hands"][b, h]`) and ranges set per spot (`cfrjax.public.passes.set_ranges`
under `vmap`, `cfrjax.batch_axes`), solved with `cfrjax.solve_batch`. The game is solved
*without its labels* (`labels=None`: static metadata the passes never read), so every
shard of one tree group reuses one executable whatever its boards.

Labels of each spot, evaluated in float64 from the float32 (or float64) average policy
(the project's rule: every reported number in float64), batch-last like the solve:
both best-response values (exploitability = their mean, NashConv / 2) and both
players' per-hand counterfactual values at the root (`cfrjax.public.passes.hand_values`),
with the normaliser `Z` recomputed in float64 from the stored ranges; divided by the
reference pot they are pot-relative, and times each spot's pot its chips.
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.batch import batched_fields_of, init_batch, solve_batch
from cfrjax.datagen.dataset import DatagenConfig, spot_spec
from cfrjax.datagen.sampling import ShardSpots
from cfrjax.driver import with_float_dtype
from cfrjax.games.poker.boards import set_boards
from cfrjax.games.poker.cards import NUM_COMBOS
from cfrjax.games.poker.public_tree import build_public
from cfrjax.policy import normalize
from cfrjax.public import passes as pp

__all__ = ["Pending", "solve_spots", "spot_game"]


def spot_game(config: DatagenConfig, group: int):
    """The game tree group `group` is solved as: its reference pot, the dataset's stack,
    every live hand, on the template's board (each spot's board replaces its showdown
    tables: `solve_spots`), the config's float dtype, labels kept (`solve_spots` drops
    them)."""
    return build_public(spot_spec(config.spec, config.spec.board, config.reference_pot(group), config.stack),
                        dtype=config.dtype)


@jax.jit
def _range_arrays(game, w0, w1):
    """`(weights [B, 2, H], norm [B])` of a leading batch of ranges `w0, w1 [B, H]`
    (`set_ranges` row by row). Arrays, not the game: a jitted function returning the game
    hands back the labels of the game it was first traced with."""
    dt = game.weights.dtype
    return jax.vmap(pp.range_weights, (None, None, 0, 0))(game.hand_cards, game.card_hands, w0.astype(dt),
                                                          w1.astype(dt))


def _with_ranges(game, w0, w1):
    """`game` with a leading batch of ranges `w0, w1 [B, H]` (`batch_axes`)."""
    weights, norm = _range_arrays(game, jnp.asarray(w0), jnp.asarray(w1))
    return dataclasses.replace(game, weights=weights, norm=norm)


@jax.jit
def _labels(games, states):
    """`(best-response values [2, B], per-hand values [2, H, B], Z [B])` of a batch's
    average policies, in float64 (trace under x64), batch-last as `solve_batch` runs (the
    passes take trailing batch axes)."""
    last = lambda x: jnp.moveaxis(x, 0, -1)   # noqa: E731
    g = with_float_dtype(games, jnp.float64)
    g = dataclasses.replace(g, **{f: last(getattr(g, f)) for f in batched_fields_of(g)})   # board tables too
    g = pp.set_ranges(g, g.weights[0], g.weights[1])                       # Z in float64
    policy = normalize(g, last(states.avg.astype(jnp.float64)))            # [S, H, B]
    return pp.best_response_values(g, policy), pp.hand_values(g, policy), g.norm


@dataclasses.dataclass
class Pending:
    """A shard dispatched to the device: `result()` waits for it and returns its arrays.

    Attributes:
      spots: the shard's sampled spots.
      stack: the dataset's stack (chips).
      hands: `[B, H]` each spot's hand list (combo indices of its board's live hands).
      ref_pot: the pot (chips) of the game solved (`DatagenConfig.reference_pot`).
      outputs: the device arrays of `_labels` (best responses `[2, B]`, per-hand values
        `[2, H, B]`, `Z [B]`), in chips of `ref_pot`.
      states: the solved `SolverState`s (leading batch axis `B`), e.g. for their average
        policies (the game of `ref_pot`: the same slots as each spot built at its pot and
        board, hand `h` of spot `b` being combo `hands[b, h]`).
      timings: host seconds so far (`build_s`, `dispatch_s`; `result()` adds `wait_s`).
    """

    spots: ShardSpots
    stack: float
    ref_pot: float
    hands: np.ndarray
    outputs: tuple
    states: object
    timings: dict

    def result(self) -> dict:
        """The shard's arrays (schema in the `cfrjax.datagen` docstring), NumPy."""
        t0 = time.perf_counter()
        br, v, norm = (np.asarray(x, np.float64) for x in self.outputs)
        self.timings["wait_s"] = time.perf_counter() - t0
        br, v = br.T / self.ref_pot, np.moveaxis(v, -1, 0) / self.ref_pot    # [B, 2], [B, 2, H], pot units
        s = self.spots
        B = s.pots.size
        cfv = np.zeros((B, 2, NUM_COMBOS), np.float64)
        idx = np.broadcast_to(self.hands[:, None, :], v.shape)
        np.put_along_axis(cfv, idx, v * norm[:, None, None], 2)
        w = np.take_along_axis(s.ranges, idx, 2).astype(np.float64)                  # [B, 2, H]
        expl = 0.5 * (br[:, 0] + br[:, 1])                                     # pot units
        return dict(
            board=s.boards.astype(np.int8),
            pot=s.pots.astype(np.float64), stack=np.full(B, self.stack), ranges=s.ranges,
            values=cfv.astype(np.float32), norm=norm,
            value=np.einsum("bph,bph->bp", w, v) * s.pots[:, None],
            exploitability=expl * s.pots, exploitability_pct_pot=100.0 * expl)


def solve_spots(config: DatagenConfig, spots: ShardSpots, game=None) -> Pending:
    """Dispatch the solve and the labels of a shard's spots (asynchronously: JAX returns
    before the device is done; `Pending.result()` waits). `game`: `spot_game` of the
    shard's group if already built (it is the same for every shard of the group)."""
    t0 = time.perf_counter()
    if game is None:
        game = spot_game(config, spots.group)
    t1 = time.perf_counter()
    hands = spots.tables["hands"]
    bare = dataclasses.replace(game, labels=None)
    w = jnp.asarray(np.take_along_axis(spots.ranges, np.broadcast_to(hands[:, None, :], (hands.shape[0], 2,
                                                                                          hands.shape[1])), 2),
                    game.weights.dtype)
    games = set_boards(_with_ranges(bare, w[:, 0], w[:, 1]), spots.tables)
    states = init_batch(bare, spots.pots.size, rule=config.rule, order=config.order, averaging=config.averaging,
                        dtype=config.dtype)
    states = solve_batch(games, states, config.iterations)
    with jax.enable_x64(True):
        outputs = _labels(games, states)
    return Pending(spots=spots, stack=config.stack, ref_pot=config.reference_pot(spots.group), hands=hands,
                   outputs=outputs, states=states,
                   timings=dict(build_s=t1 - t0, dispatch_s=time.perf_counter() - t1))
