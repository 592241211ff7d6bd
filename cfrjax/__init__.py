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

import importlib
import importlib.util

__version__ = "0.1.0"

#: Public name -> where it is defined: "module:attribute", or "module" for a submodule.
_API = {
    "batch": "cfrjax.batch",
    "datagen": "cfrjax.datagen",
    "memory": "cfrjax.memory",
    "multihost": "cfrjax.multihost",
    "policy": "cfrjax.policy",
    "profile": "cfrjax.profile",
    "shard": "cfrjax.shard",
    "batch_axes": "cfrjax.batch:batch_axes",
    "evaluate_batch": "cfrjax.batch:evaluate_batch",
    "solve_batch": "cfrjax.batch:solve_batch",
    "best_response_value": "cfrjax.best_response:best_response_value",
    "best_response_values": "cfrjax.best_response:best_response_values",
    "exploitability": "cfrjax.best_response:exploitability",
    "expected_value": "cfrjax.best_response:expected_value",
    "expected_values": "cfrjax.best_response:expected_values",
    "CertificateError": "cfrjax.certificate:CertificateError",
    "value_certificate": "cfrjax.certificate:value_certificate",
    "CheckpointError": "cfrjax.checkpoint:CheckpointError",
    "checkpoint_info": "cfrjax.checkpoint:checkpoint_info",
    "load_checkpoint": "cfrjax.checkpoint:load_checkpoint",
    "save_checkpoint": "cfrjax.checkpoint:save_checkpoint",
    "compile_game": "cfrjax.compile:compile_game",
    "enable_compile_cache": "cfrjax.compile_cache:enable_compile_cache",
    "Chunk": "cfrjax.driver:Chunk",
    "SolveChunks": "cfrjax.driver:SolveChunks",
    "Trace": "cfrjax.driver:Trace",
    "evaluate": "cfrjax.driver:evaluate",
    "evaluate_values": "cfrjax.driver:evaluate_values",
    "solve": "cfrjax.driver:solve",
    "solve_chunks": "cfrjax.driver:solve_chunks",
    "form_name": "cfrjax.forms:form_name",
    "form_of": "cfrjax.forms:form_of",
    "CompiledGame": "cfrjax.game:CompiledGame",
    "GameLabels": "cfrjax.game:GameLabels",
    "save_game": "cfrjax.game:save_game",
    "step": "cfrjax.iteration:step",
    "load_game": "cfrjax.load:load_game",
    "lock": "cfrjax.locking:lock",
    "unlock": "cfrjax.locking:unlock",
    "solve_batch_to_dir": "cfrjax.multihost:solve_batch_to_dir",
    "average_policy": "cfrjax.policy:average_policy",
    "current_policy": "cfrjax.policy:current_policy",
    "uniform_policy": "cfrjax.policy:uniform_policy",
    "LeafFunction": "cfrjax.public.depth:LeafFunction",
    "completed_policy": "cfrjax.public.depth:completed_policy",
    "exact_leaf": "cfrjax.public.depth:exact_leaf",
    "exact_leaf_policy": "cfrjax.public.depth:exact_leaf_policy",
    "showdown_leaf": "cfrjax.public.depth:showdown_leaf",
    "PublicGame": "cfrjax.public.game:PublicGame",
    "NodeReport": "cfrjax.public.report:NodeReport",
    "load_report": "cfrjax.public.report:load_report",
    "node_report": "cfrjax.public.report:node_report",
    "reset": "cfrjax.retarget:reset",
    "set_payoffs": "cfrjax.retarget:set_payoffs",
    "set_root_chance": "cfrjax.retarget:set_root_chance",
    "Config": "cfrjax.rules:Config",
    "solve_sharded": "cfrjax.shard:solve_sharded",
    "GameSpec": "cfrjax.spec:GameSpec",
    "SpecError": "cfrjax.spec:SpecError",
    "SolverState": "cfrjax.state:SolverState",
    "init": "cfrjax.state:init",
    "load_policy": "cfrjax.strategy:load_policy",
    "save_policy": "cfrjax.strategy:save_policy",
    "strategy_table": "cfrjax.strategy:strategy_table",
    "warm_start": "cfrjax.warm:warm_start",
    "read_efg": "cfrjax.games.efg_file:read_efg",
    "write_efg": "cfrjax.games.efg_file:write_efg",
    "from_openspiel_policy": "cfrjax.games.openspiel:from_openspiel_policy",
    "spec_from_openspiel": "cfrjax.games.openspiel:spec_from_openspiel",
    "to_openspiel_policy": "cfrjax.games.openspiel:to_openspiel_policy",
    "poker": "cfrjax.games.poker",
    "PokerSubgameSpec": "cfrjax.games.poker.config:PokerSubgameSpec",
    "root_ranges": "cfrjax.games.poker.deals:root_ranges",
    "set_root_ranges": "cfrjax.games.poker.deals:set_root_ranges",
    "parse_range": "cfrjax.games.poker.ranges:parse_range",
    "depth_limited": "cfrjax.games.poker.depth:depth_limited",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    """A public name, imported from its module on first use (then kept here), or any
    submodule (`cfrjax.forms`) by its name."""
    target = _API.get(name)
    if target is None:
        if name.startswith("__") or importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return importlib.import_module(f"{__name__}.{name}")
    module, _, attribute = target.partition(":")
    value = importlib.import_module(module)
    if attribute:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
