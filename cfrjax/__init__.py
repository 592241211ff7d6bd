"""cfrjax: CFR for two-player zero-sum games, compiled to static arrays and run in JAX.

A game is compiled once into a *form* (`cfrjax.forms`): the tabular form (any game,
`cfrjax.game.CompiledGame`) or, for poker subgames, the public-tree form
(`cfrjax.public.PublicGame`, vectors over hands). Everything below works on either.

The public API (`__all__`, under 40 names) is what a researcher or a poker player needs
first, in the order they meet it:

* a game: `load_game` (spec files, shipped spots, OpenSpiel, a `GameSpec`, saved games),
  `save_game`, `GameSpec` and its `SpecError`;
* a solve: `Config`, `Plan` (the implementation choices), `init`, `SolverState`, `step`,
  `solve` (a state in, a state out), `solve_with_trace` (the same with evaluations: a
  `(state, trace)` pair, the curve a `Trace`), `solve_chunks` (chunked, checkpointed, resumable), `warm_start`;
* a policy and its quality: `average_policy`, `current_policy`, `evaluate`,
  `exploitability`, `expected_value`, `best_response_values`, `save_policy`, `load_policy`;
* changing a compiled game or a run: `set_payoffs`, `set_root_chance`, `lock`, `unlock`,
  `save_checkpoint`, `load_checkpoint`, `CheckpointError`;
* batches: `solve_batch`, `evaluate_batch`, `batch_axes`, `solve_sharded`;
* poker: `depth_limited`, and the submodules that group the rest, each importable by
  itself: `poker` (spots in Python: `PokerSubgameSpec`, `parse_range`, bet sizes, cards,
  `set_root_ranges`), `batch`, `memory` (the memory plan and its guard), `datagen`
  (training data) and `multihost`.

Everything else is reachable from the module that defines it, by its full name (as optax
and mctx keep their helpers in submodules): `cfrjax.checkpoint.checkpoint_info`,
`cfrjax.driver.evaluate_values`, `cfrjax.compile.compile_game` (`load_game` takes a
`GameSpec` too), `cfrjax.forms.form_name`, `cfrjax.plan.resolve_plan`, `cfrjax.plan.use`,
`cfrjax.public.report.node_report`, `cfrjax.public.depth.exact_leaf`, `cfrjax.retarget.reset`,
`cfrjax.games.openspiel.spec_from_openspiel`, ... Any submodule is an attribute
(`cfrjax.forms`), imported on first use.

Each public name is imported from the module that defines it on first use (PEP 562
`__getattr__`), not by `import cfrjax`: importing JAX and the solver takes about a second,
which a command that needs neither (`cfrjax games`) does not pay.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pathlib
import sys
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: The public API: these imports are what static tools (type checkers, the API reference)
#: read; at run time `_API` is made from them and `__getattr__` imports each name on first use.
if TYPE_CHECKING:
    from cfrjax import batch
    from cfrjax import datagen
    from cfrjax import memory
    from cfrjax import multihost
    from cfrjax.games import poker
    from cfrjax.batch import batch_axes, evaluate_batch, solve_batch
    from cfrjax.best_response import best_response_values, exploitability, expected_value
    from cfrjax.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
    from cfrjax.driver import Trace, evaluate, solve, solve_chunks, solve_with_trace
    from cfrjax.game import save_game
    from cfrjax.iteration import step
    from cfrjax.load import load_game
    from cfrjax.locking import lock, unlock
    from cfrjax.policy import average_policy, current_policy
    from cfrjax.retarget import set_payoffs, set_root_chance
    from cfrjax.plan import Plan
    from cfrjax.rules import Config
    from cfrjax.shard import solve_sharded
    from cfrjax.spec import GameSpec, SpecError
    from cfrjax.state import SolverState, init
    from cfrjax.strategy import load_policy, save_policy
    from cfrjax.warm import warm_start
    from cfrjax.games.poker.depth import depth_limited


def _api_from_imports() -> dict:
    """Public name -> `(module, attribute)`, from the `if TYPE_CHECKING:` imports above
    (this file's source, parsed: one list of the API, read by tools and at run time)."""
    tree = ast.parse(pathlib.Path(__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", None) ==
                 "TYPE_CHECKING")
    return {alias.asname or alias.name: (node.module, alias.name) for node in block.body for alias in node.names}


_API = _api_from_imports()

__all__ = sorted(_API)


def _submodule(package: str, name: str):
    """The submodule `package.name`, imported on first use: the PEP 562 `__getattr__` of
    `cfrjax`, `cfrjax.games` and `cfrjax.public`, so that a full name such as
    `cfrjax.public.report.node_report` works after `import cfrjax`; else
    `AttributeError`, as for any missing attribute."""
    if name.startswith("__") or importlib.util.find_spec(f"{package}.{name}") is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return importlib.import_module(f"{package}.{name}")


def __getattr__(name: str):
    """A public name, imported from its module on first use (then kept here), or any
    submodule (`cfrjax.forms`) by its name."""
    if name not in _API:
        return _submodule(__name__, name)
    module, attribute = _API[name]
    parent = importlib.import_module(module)
    value = None if parent is sys.modules[__name__] else parent.__dict__.get(attribute)
    if value is None:   # a submodule (`from cfrjax import batch`, `from cfrjax.games import poker`)
        value = importlib.import_module(f"{module}.{attribute}")
    globals()[name] = value
    return value


def __dir__():
    """The public names (what tab completion offers): not this file's imports (`ast`,
    `sys`) nor submodules already imported (still attributes, by their names)."""
    return sorted({name for name in globals() if name.startswith("__")} | set(__all__))
