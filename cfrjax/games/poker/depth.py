"""Depth-limited poker spots: a turn spot cut below its river card, a flop spot below its
turn card (`cfrjax.public.depth`).

`depth_limited(spot, leaf)` builds the whole spot's public form (or takes it) and cuts it
below the next card, handing the leaf function what the contract of `cfrjax.public.depth`
promises: per leaf `l = b R + k` (card `b`: a turn spot's 48 river cards, a flop spot's 49
turn cards; line `k` of the `R` that end the street), the board cards (5, or 4 below a
flop's turn card), the pot and the stack behind at the leaf, the live hands and each
hand's position in the leaf board's own hand list (1,081 or 1,128 combos).
"""

from __future__ import annotations

import os

import jax.numpy as jnp
import numpy as np

from cfrjax.games.poker.cards import PokerSpecError, combos_blocked_by
from cfrjax.games.poker.config import PokerSubgameSpec
from cfrjax.games.poker.public_tree import FLOP_TURN_CARDS, build_public
from cfrjax.games.poker.subgame import RIVER_CARDS
from cfrjax.games.poker.toml import load_poker_config
from cfrjax.public.depth import LeafFunction, cut
from cfrjax.public.game import PublicGame

__all__ = ["depth_limited", "leaf_inputs"]


def leaf_inputs(whole: PublicGame) -> dict:
    """The leaf function's inputs for the whole turn or flop spot `whole`
    (`cfrjax.public.depth`), without `data`: `board [L, n]` (n = 5 below a turn spot's
    river card, 4 below a flop spot's turn card), `pot [L]`, `stack [L]`, `live [L, H]`,
    `hands [H]`, `leaf_hand [L, H]` (position in the leaf board's own hand list: 1,081
    combos on a river board, 1,128 on a turn board; -1 if dead), `chance` (1/44 per river
    card, 1/45 per turn card)."""
    meta = (whole.labels.source or {}).get("poker") or {}
    if whole.player_lists:
        raise PokerSpecError(f"{whole.name}: a spot with one hand list per player (hands='player') cannot be cut "
                             "below the next card yet (the leaf function reads one list); build it with hands='range'")
    if whole.iso_perm is not None:
        raise PokerSpecError(f"{whole.name}: a suit-merged spot (isomorphism = true) cannot be cut below the next card "
                             "(its leaves are the representative cards only); build it with isomorphism = false")
    if "leaf_cards" not in meta:
        raise PokerSpecError(f"{whole.name}: only turn and flop spots can be cut below the next card (a river "
                             f"spot has nothing below)")
    cards = np.asarray(meta["leaf_cards"], np.int64)                          # [B]
    committed = np.asarray(meta["leaf_committed"], np.float64)                 # [R]
    board = np.asarray(meta["board_cards"], np.int64)
    B, R = cards.size, committed.size
    hands = np.asarray(whole.labels.hands, np.int64)
    if hands.size != whole.num_hands:
        raise PokerSpecError(f"{whole.name}: a depth-limited solve needs the spot built without padding hands "
                             f"(pad_hands = false), not {whole.num_hands} hands for {hands.size}")
    boards = np.concatenate([np.broadcast_to(board, (B, board.size)), cards[:, None]], axis=1)   # [B, n]
    position = np.empty((B, hands.size), np.int64)
    for b in range(B):
        open_ = ~combos_blocked_by(boards[b])
        position[b] = np.where(open_[hands], np.cumsum(open_)[hands] - 1, -1)
    fdt = whole.slot_uniform.dtype
    pot = float(meta["pot"]) + 2 * committed
    stack = float(meta["stack"]) - float(meta["pot"]) / 2 - committed
    rep = lambda x: np.repeat(x, R, axis=0)   # noqa: E731  (leaf l = b R + k)
    chance = 1.0 / (FLOP_TURN_CARDS if whole.board_groups else RIVER_CARDS)
    return {
        "board": jnp.asarray(rep(boards), jnp.int32), "pot": jnp.asarray(np.tile(pot, B), fdt),
        "stack": jnp.asarray(np.tile(stack, B), fdt), "live": jnp.asarray(rep(position >= 0)),
        "hands": jnp.asarray(hands, jnp.int32), "leaf_hand": jnp.asarray(rep(position), jnp.int32),
        "chance": jnp.asarray(chance, fdt)}


def depth_limited(spot, leaf, **build) -> PublicGame:
    """A turn spot cut below its river card, or a flop spot below its turn card, its leaves
    valued by `leaf`.

    Args:
      spot: the whole spot: a `PublicGame` of a turn or flop spot, a `PokerSubgameSpec`,
        or a `.toml` path.
      leaf: a `cfrjax.public.depth.LeafFunction`, or a callable taking the whole game and
        returning one (e.g. `cfrjax.public.depth.showdown_leaf`, `lambda g: cfrjax.public.depth.exact_leaf(g, 200)`).
      **build: passed to `build_public` when `spot` is not built yet (e.g.
        `hands="range"`).

    Returns:
      The depth-limited `PublicGame` (`game.depth_limited` is true; its exploitability is
      local, with respect to `leaf`).
    """
    if isinstance(spot, (str, os.PathLike)):
        spot = load_poker_config(spot)
    whole = build_public(spot, **build) if isinstance(spot, PokerSubgameSpec) else spot
    if not isinstance(whole, PublicGame):
        raise TypeError(f"spot must be a turn or flop spot's PublicGame, a PokerSubgameSpec or a .toml path, "
                        f"got {type(spot).__name__}")
    fn = leaf if isinstance(leaf, LeafFunction) else leaf(whole)
    return cut(whole, fn, leaf_inputs(whole))
