"""Shipped game specs (package data): poker subgame `.toml` files, found by name with
`cfrjax.load_game("hunl_river")` / `cfrjax solve hunl_river` and listed by `cfrjax games`
(`shipped_specs`). In a source checkout `games/` links to these files. Importing this
module imports neither JAX nor a game builder (`cfrjax games` lists them at once)."""

import os

__all__ = ["shipped_specs", "spec_path"]

_SPEC_DIRS = (os.path.dirname(os.path.abspath(__file__)),
              os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "games"))


def shipped_specs() -> dict:
    """Name -> path of every spec file shipped with cfrjax (`cfrjax/specs/` in an installed
    package, `games/` in a source checkout): `.toml` poker subgame specs."""
    out = {}
    for d in _SPEC_DIRS:
        if os.path.isdir(d):
            for f in sorted(os.listdir(d)):
                if f.endswith(".toml") and f != "suite.toml":
                    out.setdefault(f[:-len(".toml")], os.path.join(d, f))
    return out


def spec_path(name: str) -> str | None:
    """The path of the shipped spec called `name` (e.g. `"hunl_river"`), or `None`."""
    return shipped_specs().get(name)
