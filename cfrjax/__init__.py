"""cfrjax: tabular CFR for two-player zero-sum games, compiled to static arrays and run in JAX."""

from cfrjax.best_response import best_response_value, best_response_values, exploitability, expected_value
from cfrjax.compile import compile_game
from cfrjax.game import CompiledGame, GameLabels, save_game
from cfrjax.iteration import step
from cfrjax.load import load_game
from cfrjax import policy
from cfrjax.policy import average_policy, current_policy, uniform_policy
from cfrjax.rules import Config
from cfrjax.solve import Trace, solve
from cfrjax.spec import GameSpec, SpecError
from cfrjax.state import SolverState, init
from cfrjax.games.openspiel import from_openspiel_policy, spec_from_openspiel, to_openspiel_policy

__version__ = "0.1.0"
