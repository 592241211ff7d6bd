"""The public form's range weights `[2, H, *batch]` and their deal normaliser `Z`.

With the tabular deal distribution `w0 w1 / Z`, a tabular regret of (player p, hand h,
node) equals the public regret times `w_p[h]`, and a tabular average omits the weight the
public `y` carries.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.public import terminals, two_lists
from cfrjax.public.game import PublicGame

__all__ = ["range_weights", "set_ranges"]


def set_ranges(game: PublicGame, w0, w1) -> PublicGame:
    """`game` with new range weights `[H, *batch]` and their normaliser (jittable).

    `Z = sum_h w0[h] sum_{h'} compat(h, h') w1[h']`; no shape or static field changes, so
    a jitted solve does not retrace. A range pair without a compatible deal gives `Z = 0`
    (infinite values). With one hand list per player `w_p` runs over player p's list,
    padded to `H` (weight given to the padding is dropped). A suit-merged game
    (`PublicGame.iso_perm`) takes concrete weights only, invariant under its symmetries
    (checked here on the host: `ValueError` otherwise).
    """
    if game.iso_perm is not None:
        _check_symmetric(game, w0, w1)
    dt = game.weights.dtype
    w0, w1 = jnp.asarray(w0, dt), jnp.asarray(w1, dt)
    if w0.shape[:1] != (game.num_hands,) or w1.shape[:1] != (game.num_hands,):
        raise ValueError(f"ranges have shapes {w0.shape} and {w1.shape}, expected [{game.num_hands}, *batch] "
                         f"(one weight per hand of the game's hand list)")
    if game.player_lists:   # one hand list per player (`PublicGame.player_lists`): the padding holds no weight
        own = [jnp.arange(game.num_hands) < h for h in game.player_lists]
        w0, w1 = (jnp.where(m.reshape(m.shape + (1,) * (w.ndim - 1)), w, 0.0) for m, w in zip(own, (w0, w1)))
        weights, norm = two_lists.range_weights(game, w0, w1, jnp)
    else:
        weights, norm = range_weights(game.hand_cards, game.card_hands, w0, w1)
    return dataclasses.replace(game, weights=weights, norm=norm)


def _check_symmetric(game: PublicGame, w0, w1) -> None:
    """Refuse (one line) ranges a suit-merged game cannot hold: traced ones (not checkable),
    or weights `[H, *batch]` that differ on two hands one of its symmetries maps onto each
    other (`iso_perm`'s rows but the last, each a permutation of the hand list)."""
    if any(isinstance(x, jax.core.Tracer) for x in (w0, w1, game.iso_perm)):
        raise ValueError(f"{game.name}: a suit-merged game (isomorphism = true) takes concrete ranges, checked for "
                         "symmetry on the host, not traced ones; build it with isomorphism = false for a batch of "
                         "ranges")
    perms = np.asarray(game.iso_perm)[:-1]
    for p, w in enumerate((w0, w1)):
        w = np.asarray(w)
        if not all(np.array_equal(w[perm], w) for perm in perms):
            raise ValueError(f"{game.name}: range{p} gives suit-isomorphic hands different weights, which this "
                             "suit-merged game cannot hold; build it with isomorphism = false (spec key, "
                             "load_game(..., isomorphism=False), --isomorphism off) to set them")


def range_weights(hand_cards, card_hands, w0, w1, xp=jnp):
    """`(weights [2, H, *batch], norm [*batch])` of `set_ranges`: the two ranges stacked and
    `Z`. `xp=numpy`: on the host, in the ranges' NumPy dtype (the builder, where a jitted
    normaliser would be a program to compile for every new game shape, on a cold start's
    path)."""
    weights = xp.stack(xp.broadcast_arrays(w0, w1))
    compat = terminals.compat_sums(weights[1], hand_cards, card_hands, xp)
    return weights, xp.sum(weights[0] * compat, axis=0)
