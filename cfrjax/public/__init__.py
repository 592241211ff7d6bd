"""The public-tree ("range-vector") compiled form of a poker subgame.

`PublicGame` (`cfrjax.public.game`) holds one node per public history with every
per-player quantity a vector over hands; `cfrjax.public.passes` implements the form's
passes (regrets, best response, expected values, `set_ranges`; raked spots too:
`PublicGame.raked`); `cfrjax.public.terminals` the terminal values with card removal;
`cfrjax.public.report` the per-hand answers at a node (range, strategy, EV, equity:
`cfrjax show`); `cfrjax.public.depth` depth-limited games. Build one with
`cfrjax.games.poker.public_tree.build_public(config)`.
"""

from cfrjax import _submodule
from cfrjax.public.game import PublicGame, PublicLabels
from cfrjax.public.passes import best_response_values, expected_value, expected_values, regret_pass, set_ranges

__all__ = ["PublicGame", "PublicLabels", "best_response_values", "expected_value", "expected_values", "regret_pass",
           "set_ranges"]


def __getattr__(name: str):
    """A submodule (`cfrjax.public.report`, `cfrjax.public.depth`), imported on first use."""
    return _submodule(__name__, name)
