"""cfrjax: CFR for two-player zero-sum games, compiled to static arrays and run in JAX.

A game is compiled once into a *form* (`cfrjax.forms`): the tabular form (any game,
`CompiledGame`) or, for poker subgames, the public-tree form (`PublicGame`, vectors over
hands). Everything below works on either.
"""

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
from cfrjax.games.poker.deals import root_ranges, set_root_ranges
from cfrjax.games.poker.depth import depth_limited

__version__ = "0.1.0"

__all__ = [
    "CertificateError", "CheckpointError", "Chunk", "CompiledGame", "Config", "GameLabels", "GameSpec",
    "LeafFunction", "NodeReport", "Plan", "PublicGame", "SolveChunks", "SolverState", "SpecError", "Trace", "average_policy",
    "batch", "batch_axes", "best_response_value", "best_response_values", "checkpoint_info", "compile_game",
    "completed_policy", "current_policy", "datagen", "depth_limited", "enable_compile_cache", "evaluate",
    "evaluate_values", "exact_leaf", "exact_leaf_policy", "exploitability", "expected_value", "expected_values", "form_name", "form_of",
    "from_openspiel_policy", "init", "load_checkpoint", "load_game", "load_policy", "load_report", "lock", "memory",
    "multihost", "node_report", "policy", "profile",
    "read_efg", "reset", "resolve_plan", "save_checkpoint", "save_game", "save_policy", "set_payoffs", "set_root_chance",
    "root_ranges", "set_root_ranges", "shard", "showdown_leaf", "solve", "solve_batch", "solve_batch_to_dir", "solve_chunks", "solve_sharded",
    "spec_from_openspiel", "step", "strategy_table", "to_openspiel_policy", "uniform_policy", "unlock", "use_plan",
    "value_certificate", "warm_start", "write_efg",
]
