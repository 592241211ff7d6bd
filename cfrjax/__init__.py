"""cfrjax: tabular CFR for two-player zero-sum games, compiled to static arrays and run in JAX."""

from cfrjax import batch, memory, policy, profile, shard
from cfrjax.best_response import best_response_value, best_response_values, exploitability, expected_value
from cfrjax.certificate import CertificateError, value_certificate
from cfrjax.checkpoint import CheckpointError, checkpoint_info, load_checkpoint, save_checkpoint
from cfrjax.compile import compile_game
from cfrjax.game import CompiledGame, GameLabels, save_game
from cfrjax.iteration import step
from cfrjax.load import load_game
from cfrjax.locking import lock, unlock
from cfrjax.policy import average_policy, current_policy, uniform_policy
from cfrjax.retarget import batch_axes, reset, set_payoffs, set_root_chance, set_root_ranges
from cfrjax.rules import Config
from cfrjax.solve import Trace, solve
from cfrjax.spec import GameSpec, SpecError
from cfrjax.state import SolverState, init
from cfrjax.strategy import load_policy, save_policy, strategy_table
from cfrjax.batch import solve_batch
from cfrjax.shard import solve_sharded
from cfrjax.games.efg_file import read_efg, write_efg
from cfrjax.games.openspiel import from_openspiel_policy, spec_from_openspiel, to_openspiel_policy

__version__ = "0.1.0"
