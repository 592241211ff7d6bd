"""Game sources: `efg_file` (Gambit `.efg` files), `openspiel` (the OpenSpiel bridge),
`poker` (native HUNL subgames, also `cfrjax.poker`). Each is imported on first use."""

from cfrjax import _submodule


def __getattr__(name: str):
    """A submodule (`cfrjax.games.openspiel`), imported on first use."""
    return _submodule(__name__, name)
