"""`load_game`: one entry point from any game source to a `CompiledGame`."""

from __future__ import annotations

import os

from cfrjax.compile import compile_game
from cfrjax.game import CompiledGame, read_game_file
from cfrjax.spec import GameSpec


def load_game(game, *, chance: str = "folded", **kwargs) -> CompiledGame:
    """Compile (or read) a game.

    Args:
      game: a path to a file written by `cfrjax.save_game` (`.npz`), a path to a poker
        subgame spec (`.toml`), a `GameSpec`, an OpenSpiel game string such as
        `"leduc_poker"` or `"goofspiel(num_cards=4,imp_info=True)"`, a `pyspiel.Game`,
        or an already compiled game (returned as is).
      chance: `"folded"` or `"explicit"`, see `cfrjax.compile_game` (ignored for saved
        files, which keep the mode they were compiled with).
      **kwargs: passed to the source (e.g. `max_nodes` for OpenSpiel).

    Raises:
      SpecError: the game is not a finite two-player zero-sum perfect-recall game.
    """
    if isinstance(game, CompiledGame):
        return game
    if isinstance(game, GameSpec):
        return compile_game(game, chance)
    if isinstance(game, (str, os.PathLike)) and os.path.isfile(game):
        path = os.fspath(game)
        if path.endswith(".toml"):
            from cfrjax.games.poker import load_poker_toml
            return compile_game(load_poker_toml(path, **kwargs), chance)
        return read_game_file(path)
    from cfrjax.games.openspiel import spec_from_openspiel
    return compile_game(spec_from_openspiel(game, **kwargs), chance)
