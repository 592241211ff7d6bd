"""Deals of a poker subgame and its ranges: which (hand0, hand1) pairs the root deals, with
what probability, and `set_root_ranges`, which re-targets a compiled subgame (either form)
to new ranges without recompiling.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.game import CompiledGame
from cfrjax.games.poker.cards import NUM_COMBOS, PokerSpecError, combo_str, combos_blocked_by, combos_conflict
from cfrjax.games.poker.config import PokerSubgameSpec
from cfrjax.public.terminals import compatible_pairs
from cfrjax.retarget import set_root_chance


def deals_from_support(support0, support1) -> tuple[np.ndarray, np.ndarray]:
    """Non-conflicting pairs of two hand lists, ordered by (hand0, hand1): `(hand0 [D], hand1 [D])`."""
    h0 = np.unique(np.asarray(support0, np.int64))
    h1 = np.unique(np.asarray(support1, np.int64))
    i, j = np.nonzero(~combos_conflict(h0[:, None], h1[None, :]))
    return h0[i], h1[j]


def deal_probabilities(w0, w1, hand0, hand1) -> np.ndarray:
    """`w0[hand0] * w1[hand1]`, normalized to sum to 1 (NumPy, float64)."""
    w0 = np.asarray(w0, np.float64)
    w1 = np.asarray(w1, np.float64)
    p = w0[hand0] * w1[hand1]
    total = p.sum()
    if total == 0:
        raise PokerSpecError("no deal has positive weight: every weighted hand of range0 shares a card with every "
                             "weighted hand of range1")
    if not total > 0 or not math.isfinite(total):
        raise PokerSpecError(f"the deal weights sum to {total}")
    return p / total


def root_deals(game) -> tuple[np.ndarray, np.ndarray]:
    """`(hand0 [D], hand1 [D])` combo indices of the root chance node's children, in
    child order, for a `GameSpec` or `CompiledGame` built by `build_spec`."""
    source = game.source if hasattr(game, "source") else (game.labels.source if game.labels is not None else {})
    meta = (source or {}).get("poker")
    if meta is None or "range_support" not in meta:
        raise PokerSpecError(f"{getattr(game, 'name', 'game')}: not a poker subgame built by "
                             "cfrjax.games.poker.build_spec (no recorded range support)")
    h0, h1 = deals_from_support(*meta["range_support"])
    if h0.size != meta["deals"]:
        raise PokerSpecError(f"recorded range support gives {h0.size} deals, the game has {meta['deals']}")
    return h0, h1


def subgame_deals(cfg: PokerSubgameSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chance root's deals: `(hand0 [D], hand1 [D], prob [D])`, combo indices.

    Pairs of combos with positive weight that share no card, ordered by (hand0,
    hand1); `prob` is proportional to `w0[hand0] * w1[hand1]` and sums to 1.
    """
    w0, w1 = cfg.ranges()
    h0 = np.flatnonzero(w0 > 0)
    h1 = np.flatnonzero(w1 > 0)
    ok = ~combos_conflict(h0[:, None], h1[None, :])
    i, j = np.nonzero(ok)
    if i.size == 0:
        raise PokerSpecError(f"{cfg.name}: every pair of the two ranges shares a card; there is nothing to deal")
    a, b = h0[i], h1[j]
    try:
        return a, b, deal_probabilities(w0, w1, a, b)
    except PokerSpecError as e:
        raise PokerSpecError(f"{cfg.name}: {e}") from None


def _checked_weights(range0, range1) -> tuple[np.ndarray, np.ndarray]:
    w0, w1 = np.asarray(range0, np.float64), np.asarray(range1, np.float64)
    for p, w in enumerate((w0, w1)):
        if w.shape != (NUM_COMBOS,):
            raise ValueError(f"range{p} has shape {w.shape}, expected [{NUM_COMBOS}]")
        if np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError(f"range{p} has negative or non-finite weights")
    return w0, w1


def _check_dealable(w0, w1, hands0, hands1, hand_cards=None):
    """Refuse (one line) ranges that deal nothing: a range with no weight on the game's
    hands (`hands0`, `hands1`: the combo ids each player may hold), or two ranges whose
    weighted hands all share a card (`hand_cards [H, 2]` of `hands0 == hands1`, public
    form; the tabular form's `deal_probabilities` checks its deals). Both would give
    `0 / 0` deal probabilities, and NaN values and exploitability."""
    for p, (w, h) in enumerate(((w0, hands0), (w1, hands1))):
        if not np.any(w[h] > 0):
            raise ValueError(f"range{p} has no weight on a hand the game deals (all zero, or only on hands "
                             f"blocked by the board or outside the ranges the game was built with)")
    if hand_cards is not None and not compatible_pairs(hand_cards, w0[hands0] > 0, w1[hands1] > 0):
        raise ValueError("range0 and range1 deal nothing: every weighted hand of one shares a card with every "
                         "weighted hand of the other")


def _check_in_hand_list(game, w0, w1) -> None:
    """Refuse (one line) ranges of a public game with positive weight on a combo that the
    board does not block but the game's hand list leaves out (a spot built with `hands =
    "range"`): the game cannot hold that weight, and dropping it would solve other ranges
    than those asked for. Weight on combos the board blocks is dropped as always."""
    lists = game.labels.player_hands   # one list per player (hands = "player"), or None: one for both
    board = game.labels.source.get("poker", {}).get("board_cards")
    live = ~combos_blocked_by(np.asarray(board, np.int64)) if board is not None else np.ones(NUM_COMBOS, bool)
    for p, w in enumerate((w0, w1)):
        listed = np.zeros(NUM_COMBOS, bool)
        listed[_hand_lists(game)[p]] = True
        out = np.flatnonzero((w > 0) & live & ~listed)
        if out.size:
            names = ", ".join(combo_str(h) for h in out[:6]) + (", ..." if out.size > 6 else "")
            which = "the game's hand list" if lists is None else f"player {p}'s hand list (hands = \"player\")"
            also = "" if lists is None else "hands = \"range\" (both ranges' hands) or "
            raise ValueError(f"range{p} gives weight to {out.size} hand(s) outside {which} of "
                             f"{listed.sum()} hands ({names}); build the spot with {also}hands = \"all\" (spec key, "
                             "load_game(..., hands=\"all\"), --hands all) to set any ranges on it")


def _is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def set_root_ranges(game, range0, range1):
    """A copy of a compiled poker subgame (either form) with new ranges, same tree.

    Args:
      game: a tabular game from `build_spec` (its deals' hands are recorded in
        `game.labels.source["poker"]["range_support"]`) or a public game from
        `build_public` (its hand list is fixed by the board).
      range0, range1: `[1326]` weights per combo (combo index order), >= 0.

    Tabular: a deal's probability is `range0[hand0] * range1[hand1]` normalized over the
    game's deals (the non-conflicting pairs of the ranges it was built with). The tree is
    fixed: weight on a hand outside the built support is ignored (with a warning), and a
    hand given weight 0 keeps its deals with probability 0 (strategically the same as the
    smaller game). With concrete (non-traced) inputs the probabilities are computed in
    NumPy exactly as `build_spec` computes them, so the result equals the game built from
    scratch with these ranges (same support) bit for bit in float64; under `jit`/`vmap`
    they are computed with `jnp` (equal up to the rounding of the normalizing sum).

    Public: the range weights of the game's hands are replaced (hands blocked by the
    board have none) and the normaliser recomputed; no shape changes, so a jitted solve
    does not retrace. Weights must lie on the game's hand list: a spot built with the
    default `hands = "range"` holds its ranges' hands only (any ranges within them need no
    rebuild), one built with `hands = "all"` every combo the board does not block; one
    built with `hands = "player"` each player's own range's hands (player p's weights
    must lie on its own list).

    Returns:
      The re-targeted game (same form, same tree). Traceable: under `jax.vmap` over
      `[B, 1326]` ranges with `out_axes=cfrjax.batch_axes(game)` it gives a batch for
      `cfrjax.solve_batch`.

    Raises:
      ValueError: concrete ranges of the wrong shape, with negative or non-finite
        weights, with positive weight on a live combo outside a public game's hand list
        (checked on the host, before anything is traced; the one-line message names
        the combos and the remedy, `hands = "all"`), or that deal nothing (a range with
        no weight on the game's hands, e.g. all zero, or every pair of weighted hands
        sharing a card): such ranges would give NaN values. Traced ranges (under
        `jit` / `vmap`) are not checked: there a public game's weight outside its hand
        list is dropped, so check a batch's ranges with one concrete call per row, or
        build with `hands = "all"`.
    """
    concrete = _is_concrete(range0) and _is_concrete(range1)
    if concrete:
        w0, w1 = _checked_weights(range0, range1)
    if not isinstance(game, CompiledGame):
        from cfrjax.public.passes import set_ranges
        hands = np.asarray(game.labels.hands)
        merge = game.labels.merge
        if merge is not None and not concrete:
            raise ValueError(f"{game.name}: a suit-merged game (isomorphism = true) takes concrete ranges, checked "
                             "for symmetry on the host, not traced ones; build it with isomorphism = false for a batch "
                             "of ranges")
        if merge is not None:
            from cfrjax.games.poker.isomorphism import check_ranges
            check_ranges(merge, np.stack([w0, w1]), game.name)
        if concrete:
            _check_in_hand_list(game, w0, w1)
            _check_dealable(w0, w1, hands, hands, np.asarray(game.labels.hand_cards))
        xp = np if concrete else jnp
        w = (w0, w1) if concrete else (jnp.asarray(range0), jnp.asarray(range1))
        # Each player's weights over its list (the shared one, or its own with hands =
        # "player"), the columns past it (padding: `pad_hands`, or the shorter player list) 0.
        return set_ranges(game, *(xp.pad(w[p][h], [(0, game.num_hands - h.size)] + [(0, 0)] * (w[p].ndim - 1))
                                  for p, h in enumerate(_hand_lists(game))))
    h0, h1 = _cached_root_deals(game)
    if concrete:
        for p, w in enumerate((w0, w1)):
            outside = np.setdiff1d(np.flatnonzero(w > 0), h0 if p == 0 else h1)
            if outside.size:
                warnings.warn(f"range{p}: {outside.size} hand(s) with positive weight are not in the game's "
                              "deals (built with a smaller range); their weight is ignored", stacklevel=2)
        _check_dealable(w0, w1, h0, h1)
        probs = deal_probabilities(w0, w1, h0, h1)
    else:
        dt = game.template.dtype
        w0, w1 = jnp.asarray(range0, dt), jnp.asarray(range1, dt)
        p = w0[h0] * w1[h1]
        probs = p / jnp.sum(p)
    return set_root_chance(game, probs)


def root_ranges(game) -> tuple[np.ndarray, np.ndarray]:
    """The root ranges of a public-form poker game: `([1326], [1326])` float64 weights per
    combo (combo index order), zero for hands the game does not hold (blocked by the
    board). The inverse of `set_root_ranges`: edit them and set them back.

    Raises:
      ValueError: a tabular game (it holds deal probabilities, not the two ranges).
    """
    if isinstance(game, CompiledGame):
        raise ValueError("root_ranges reads a public-form game's range vectors; a tabular game holds the "
                         "probabilities of its deals, not the two ranges (load the spec with form='public')")
    out = np.zeros((2, NUM_COMBOS))
    weights = np.asarray(game.weights, np.float64)
    for p, h in enumerate(_hand_lists(game)):   # the columns past a list are padding
        out[p, h] = weights[p, :h.size]
    return out[0], out[1]


def _hand_lists(game) -> tuple:
    """`(hands_0, hands_1)`: the combo ids of each player's columns of a public-form game,
    the shared list twice, or with `hands = "player"` each player's own."""
    if game.labels.player_hands is not None:
        return tuple(np.asarray(h) for h in game.labels.player_hands)
    return (np.asarray(game.labels.hands),) * 2


_DEALS_CACHE: dict = {}


def _cached_root_deals(game):
    key = game.labels.fingerprint if game.labels is not None else None
    if key is not None and key in _DEALS_CACHE:
        return _DEALS_CACHE[key]
    out = root_deals(game)
    if key is not None:
        if len(_DEALS_CACHE) > 32:
            _DEALS_CACHE.clear()
        _DEALS_CACHE[key] = out
    return out
