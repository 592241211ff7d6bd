"""The starting pot of a poker spot, and exploitability in % of it (poker's unit).

The solver reports exploitability in the game's payoff units (`cfrjax.evaluate`,
`cfrjax.Trace`: chips for a poker spot) and stops at a target in those units; the pot
and percentages of it are this layer's: `starting_pot(game)` reads a spot's pot,
`pct_of_pot` converts chips to % of it, and `target_chips` turns a target as a user
writes it (`cfrjax solve --target 0.5%`) into chips before the generic solver sees it.
"""

from __future__ import annotations

import math

__all__ = ["parse_target", "pct_of_pot", "starting_pot", "target_chips"]


def starting_pot(game) -> float | None:
    """The pot at the root of a poker subgame (chips), for any form (`GameSpec`, compiled
    tabular or public game): the `pot` its builder recorded in `source["poker"]`; `None`
    for a game that is not a poker subgame. Poker solvers report exploitability as a
    percentage of this pot."""
    source = game.source if hasattr(game, "source") else getattr(getattr(game, "labels", None), "source", None)
    pot = ((source or {}).get("poker") or {}).get("pot")
    return None if pot is None else float(pot)


def pct_of_pot(game, chips):
    """`chips` (a float or an array of any shape, e.g. a trace's `[K]` exploitability) in
    % of `game`'s starting pot: `100 * chips / pot`; `None` for a game without a pot."""
    pot = starting_pot(game)
    return None if pot is None else 100 * chips / pot


def parse_target(text: str) -> tuple[float, bool]:
    """A target as a user writes it (`cfrjax solve --target`): `(x, True)` for `"x%"` (a
    percentage of the starting pot), `(x, False)` for a plain number (an exploitability in
    the game's unit); x finite and > 0, else `ValueError` naming the text."""
    pct = text.strip().endswith("%")
    try:
        x = float(text.strip()[:-1] if pct else text)
    except ValueError:
        x = math.nan
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"target {text!r}: expected an exploitability > 0, a number in the game's unit (e.g. "
                         "0.001) or a percentage of a poker spot's starting pot (e.g. 0.5%)")
    return x, pct


def target_chips(text: str, game) -> float:
    """A target as a user writes it (`parse_target`) as an exploitability in `game`'s unit,
    what `cfrjax.solve(target_exploitability=...)` takes: x% of `starting_pot(game)`
    (`ValueError` for a game without one), or x."""
    x, pct = parse_target(text)
    if not pct:
        return x
    pot = starting_pot(game)
    if pot is None:
        raise ValueError(f"target {text}: {game.name} has no pot (not a poker spot), so a percentage of the pot has "
                         "no meaning; give an absolute exploitability, e.g. 0.001")
    return x / 100 * pot
