"""Shipped game specs (package data): poker subgame `.toml` files, found by name with
`cfrjax.load_game("hunl_river")` / `cfrjax solve hunl_river` and listed by `cfrjax games`
(`cfrjax.load.shipped_specs`). In a source checkout `games/` links to these files."""
