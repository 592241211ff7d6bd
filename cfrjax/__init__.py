"""cfrjax: CFR for two-player zero-sum games, compiled to static arrays and run in JAX.

A game is compiled once into a *form* (`cfrjax.forms`): the tabular form (any game,
`CompiledGame`) or, for poker subgames, the public-tree form (`PublicGame`, vectors over
hands). Everything below works on either.

The names below are imported on first use (`__getattr__`), not by `import cfrjax`:
importing JAX and the solver takes about a second, which a command that needs neither
(`cfrjax games`) does not pay. The first attribute read imports them all.
"""

# Imported together on the first attribute read (`__getattr__`): `import cfrjax` alone
# does not import JAX.
_API = """
from cfrjax import batch, datagen, memory, multihost, policy, profile, shard
from cfrjax.batch import batch_axes, solve_batch
from cfrjax.best_response import (
    best_response_value, best_response_values, exploitability, expected_value, expected_values)
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
from cfrjax.public.depth import LeafFunction, completed_policy, exact_leaf, exact_leaf_policy, showdown_leaf
from cfrjax.public.game import PublicGame
from cfrjax.public.report import NodeReport, load_report, node_report
from cfrjax.retarget import reset, set_payoffs, set_root_chance
from cfrjax.rules import Config
from cfrjax.shard import solve_sharded
from cfrjax.spec import GameSpec, SpecError
from cfrjax.state import SolverState, init
from cfrjax.strategy import load_policy, save_policy, strategy_table
from cfrjax.warm import warm_start
from cfrjax.games.efg_file import read_efg, write_efg
from cfrjax.games.openspiel import from_openspiel_policy, spec_from_openspiel, to_openspiel_policy
from cfrjax.games.poker.deals import root_ranges, set_root_ranges
from cfrjax.games.poker.depth import depth_limited
"""

__version__ = "0.1.0"

__all__ = [
    "CertificateError", "CheckpointError", "Chunk", "CompiledGame", "Config", "GameLabels", "GameSpec",
    "LeafFunction", "NodeReport", "PublicGame", "SolveChunks", "SolverState", "SpecError", "Trace", "average_policy",
    "batch", "batch_axes", "best_response_value", "best_response_values", "checkpoint_info", "compile_game",
    "completed_policy", "current_policy", "datagen", "depth_limited", "enable_compile_cache", "evaluate",
    "evaluate_values", "exact_leaf", "exact_leaf_policy", "exploitability", "expected_value", "expected_values", "form_name", "form_of",
    "from_openspiel_policy", "init", "load_checkpoint", "load_game", "load_policy", "load_report", "lock", "memory",
    "multihost", "node_report", "policy", "profile",
    "read_efg", "reset", "save_checkpoint", "save_game", "save_policy", "set_payoffs", "set_root_chance",
    "root_ranges", "set_root_ranges", "shard", "showdown_leaf", "solve", "solve_batch", "solve_batch_to_dir", "solve_chunks", "solve_sharded",
    "spec_from_openspiel", "step", "strategy_table", "to_openspiel_policy", "uniform_policy", "unlock",
    "value_certificate", "warm_start", "write_efg",
]





_imported = False


def _importing() -> bool:
    """Whether a cfrjax module's code is running its import now (its `from cfrjax import
    submodule` must get the submodule alone: the API would import that module again)."""
    import sys

    return any(getattr(getattr(m, "__spec__", None), "_initializing", False)
               for n, m in list(sys.modules.items()) if n.startswith("cfrjax."))


def __getattr__(name: str):
    """The first read of a name not yet here imports the API (`_API`) whole, as `import
    cfrjax` used to (outside the import of a cfrjax module); then the name, or the
    submodule of that name."""
    global _imported
    import builtins   # `compile` here is the submodule cfrjax.compile once imported
    import importlib
    import importlib.util

    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if not _imported and not _importing():
        _imported = True   # a module of the API reading `cfrjax.X` while it loads finds it missing, as before
        try:
            builtins.exec(builtins.compile(_API, __file__, "exec"), globals())
        except BaseException:
            _imported = False
            raise
    if name in globals():
        return globals()[name]
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
