"""`load_game`: one entry point from any game source to a compiled game, in either form.

This is the front door above the game sources (it may import them; the solver core may
not, see `tests/test_import_graph.py`).
"""

from __future__ import annotations

import dataclasses
import os

from cfrjax.compile import compile_game
from cfrjax.game import CompiledGame, read_game_file
from cfrjax.games.poker.config import PokerSubgameSpec
from cfrjax.games.poker.public_tree import build_public, check_public_fits
from cfrjax.games.poker.subgame import build_spec, check_tabular_fits
from cfrjax.games.poker.toml import load_poker_config
from cfrjax.public.game import PublicGame
from cfrjax.spec import GameSpec, SpecError
from cfrjax.specs import shipped_specs, spec_path

__all__ = ["FORMS", "load_game", "shipped_specs", "spec_path"]

#: The compiled forms `load_game` can produce.
FORMS = ("tabular", "public")


def _check_form(form, allowed, what):
    if form is not None and form not in FORMS:
        raise ValueError(f"unknown form {form!r}; allowed: {', '.join(map(repr, FORMS))}")
    if form is not None and form not in allowed:
        raise SpecError(f"{what} can be compiled only in the {' or '.join(map(repr, allowed))} form, "
                        f"not {form!r} (the public form is for poker subgame specs)")


def _poker(cfg: PokerSubgameSpec, form, chance, check_memory=True, budget_bytes=None):
    _check_form(form, FORMS, "a poker subgame")
    if form == "tabular":
        if check_memory:
            check_tabular_fits(cfg, budget_bytes=budget_bytes)
        return compile_game(build_spec(cfg), chance)
    if check_memory:
        check_public_fits(cfg, budget_bytes=budget_bytes)
    from cfrjax.memory import group_boards

    return group_boards(build_public(cfg), budget_bytes=budget_bytes)   # off the CPU: boards a group at a time


def _check_hands(hands, what: str, name: str = "hands") -> None:
    """Refuse (one line) a `hands` (or `isomorphism`) choice for `what`, a source that is
    not a poker subgame spec (a poker spec validates it: `PokerSubgameSpec.hands`)."""
    if hands is not None:
        chooses = "a poker spot's hand list" if name == "hands" else "a poker spot's suit isomorphism"
        raise SpecError(f"{name}={hands!r} chooses {chooses}; {what} is not a poker subgame spec "
                        "(a .toml spot, a shipped spec name or a PokerSubgameSpec)")


def _check_name(source: str) -> None:
    """Refuse, in one line, a source that is not a file and not an OpenSpiel game name,
    before OpenSpiel sees it (it would print its list of every game to stderr)."""
    if os.path.isdir(source):
        raise IsADirectoryError(f"{source} is a directory, not a game (a .toml spec, a .npz saved game or an "
                                "OpenSpiel game name)")
    if source.endswith((".toml", ".npz")) or os.sep in source:
        raise FileNotFoundError(f"no such file: {source}")
    from cfrjax.games.openspiel import _pyspiel

    if source.split("(")[0].strip() not in _pyspiel().registered_names():
        raise SpecError(f"unknown game {source!r}: not a file and not an OpenSpiel game "
                         "(`cfrjax games` lists some; any OpenSpiel game string works)")


def load_game(game, *, form: str | None = None, chance: str = "folded", check_memory: bool = True,
              budget_bytes: int | None = None, hands: str | None = None, isomorphism: bool | None = None,
              **kwargs):
    """Compile (or read) a game.

    Args:
      game: a path to a file written by `cfrjax.save_game` (`.npz`), a poker subgame spec
        (a `.toml` path, the name of a shipped spec such as `"hunl_river"`, or a
        `PokerSubgameSpec`), a `GameSpec`, an OpenSpiel game string such as
        `"leduc_poker"` or `"goofspiel(num_cards=4,imp_info=True)"`, a `pyspiel.Game`, or
        an already compiled game (returned as is).
      form: `"public"` or `"tabular"` (`None`: the source's default). Poker subgame specs
        compile to the public-tree form by default (vectors over hands; equal to the
        tabular form entry by entry, tested) and to the tabular form on request (one tree
        copy per deal, the paper's construction); every other source has only the tabular
        form.
      chance: `"folded"` or `"explicit"`, see `cfrjax.compile.compile_game` (tabular form only;
        ignored for saved files, which keep the mode they were compiled with).
      check_memory: a poker spec is first sized from its betting tree
        (`cfrjax.games.poker.public_tree.check_public_fits`, or for the tabular form
        `cfrjax.games.poker.subgame.check_tabular_fits`; within a second or two): a spot
        whose solve cannot fit the first device's free memory (`budget_bytes` if given)
        raises `MemoryPlanError` before anything is built.
      hands: a poker spec's hand list in the public form (`PokerSubgameSpec.hands`):
        `"range"` (vectors over the ranges' hands: the memory plan and every array
        scale with them), `"all"` (every combo the board does not block: any ranges can
        be set later with `set_root_ranges` without rebuilding), or `None` (the spec's
        own `hands` key, by default `"range"`). Other sources refuse it.
      isomorphism: a poker spec's suit isomorphism in the public form
        (`PokerSubgameSpec.isomorphism`): `True` solves one representative per class of
        suit-isomorphic turn and river cards, `False` every card, `None` the spec's own
        key (off by default). Other sources refuse it.
      **kwargs: passed to the source (e.g. `max_nodes` for OpenSpiel, `random_hands=10`
        to override a poker spec's keys).

    Raises:
      FileNotFoundError: `game` names a `.toml` / `.npz` file or a path that does not exist.
      ValueError: `game` is a string that is neither a file, a shipped spec nor an
        OpenSpiel game name.
      SpecError: the game is not a finite two-player zero-sum perfect-recall game, or the
        source has no such form.
      MemoryPlanError: a poker spot too large to solve here (`check_memory`).
    """
    if isomorphism is not None and not isinstance(isomorphism, bool):
        raise ValueError(f"isomorphism {isomorphism!r} must be True, False or None (the spec's own key)")
    if isinstance(game, (CompiledGame, PublicGame)):
        _check_hands(hands, "an already compiled game (its hand list is built in)")
        _check_hands(isomorphism, "an already compiled game (its cards are built in)", "isomorphism")
        return game
    if isinstance(game, PokerSubgameSpec):
        cfg = game if hands is None else dataclasses.replace(game, hands=hands)
        cfg = cfg if isomorphism is None else dataclasses.replace(cfg, isomorphism=isomorphism)
        return _poker(cfg, form, chance, check_memory, budget_bytes)
    if isinstance(game, GameSpec):
        _check_hands(hands, f"game {game.name!r}")
        _check_hands(isomorphism, f"game {game.name!r}", "isomorphism")
        _check_form(form, ("tabular",), f"game {game.name!r}")
        return compile_game(game, chance)
    if isinstance(game, (str, os.PathLike)) and not os.path.isfile(game) and spec_path(os.fspath(game)):
        game = spec_path(os.fspath(game))
    if isinstance(game, (str, os.PathLike)) and os.path.isfile(game):
        path = os.fspath(game)
        if path.endswith(".toml"):
            overrides = dict(kwargs, **({} if hands is None else {"hands": hands}),
                             **({} if isomorphism is None else {"isomorphism": isomorphism}))
            return _poker(load_poker_config(path, **overrides), form, chance, check_memory, budget_bytes)
        _check_hands(hands, f"the saved game {path}")
        _check_hands(isomorphism, f"the saved game {path}", "isomorphism")
        _check_form(form, ("tabular",), f"the saved game {path}")
        return read_game_file(path)
    if isinstance(game, (str, os.PathLike)):
        _check_name(os.fspath(game))
    _check_hands(hands, f"OpenSpiel game {game!r}")
    _check_hands(isomorphism, f"OpenSpiel game {game!r}", "isomorphism")
    from cfrjax.games.openspiel import spec_from_openspiel  # OpenSpiel is imported only when used
    _check_form(form, ("tabular",), f"OpenSpiel game {game!r}")
    return compile_game(spec_from_openspiel(game, **kwargs), chance)
