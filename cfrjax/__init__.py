"""cfrjax: CFR for two-player zero-sum games, compiled to static arrays and run in JAX.

A game is compiled once into a *form* (`cfrjax.forms`): the tabular form (any game,
`CompiledGame`) or, for poker subgames, the public-tree form (`PublicGame`, vectors over
hands). Everything below works on either. `cfrjax.poker` holds what writing a poker spot
in Python needs (`PokerSubgameSpec`, `parse_range`, bet-size strings, cards).

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
    from cfrjax import policy
    from cfrjax import profile
    from cfrjax import shard
    from cfrjax.games import poker
    from cfrjax.batch import batch_axes, evaluate_batch, solve_batch
    from cfrjax.best_response import (best_response_value, best_response_values, exploitability,
        expected_value, expected_values)
    from cfrjax.certificate import CertificateError, value_certificate
    from cfrjax.checkpoint import CheckpointError, checkpoint_info, load_checkpoint, save_checkpoint
    from cfrjax.compile import compile_game
    from cfrjax.compile_cache import enable_compile_cache
    from cfrjax.driver import Chunk, SolveChunks, Trace, evaluate, evaluate_values, solve, solve_chunks
    from cfrjax.forms import form_name, form_of
    from cfrjax.game import CompiledGame, GameLabels, save_game
    from cfrjax.iteration import step
    from cfrjax.load import load_game
    from cfrjax.locking import lock, unlock
    from cfrjax.multihost import solve_batch_to_dir
    from cfrjax.policy import average_policy, current_policy, uniform_policy
    from cfrjax.public.depth import (LeafFunction, completed_policy, exact_leaf, exact_leaf_policy,
        showdown_leaf)
    from cfrjax.public.game import PublicGame
    from cfrjax.public.report import NodeReport, load_report, node_report
    from cfrjax.retarget import reset, set_payoffs, set_root_chance
    from cfrjax.plan import Plan, resolve_plan
    from cfrjax.plan import use as use_plan
    from cfrjax.rules import Config
    from cfrjax.shard import solve_sharded
    from cfrjax.spec import GameSpec, SpecError
    from cfrjax.state import SolverState, init
    from cfrjax.strategy import load_policy, save_policy, strategy_table
    from cfrjax.warm import warm_start
    from cfrjax.games.efg_file import read_efg, write_efg
    from cfrjax.games.openspiel import from_openspiel_policy, spec_from_openspiel, to_openspiel_policy
    from cfrjax.games.poker.config import PokerSubgameSpec
    from cfrjax.games.poker.deals import root_ranges, set_root_ranges
    from cfrjax.games.poker.ranges import parse_range
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


def __getattr__(name: str):
    """A public name, imported from its module on first use (then kept here), or any
    submodule (`cfrjax.forms`) by its name."""
    if name not in _API:
        if name.startswith("__") or importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    module, attribute = _API[name]
    parent = importlib.import_module(module)
    value = None if parent is sys.modules[__name__] else parent.__dict__.get(attribute)
    if value is None:   # a submodule (`from cfrjax import batch`, `from cfrjax.games import poker`)
        value = importlib.import_module(f"{module}.{attribute}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
