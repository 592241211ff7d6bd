"""Compiled forms: the one seam between the generic solver and a game's own passes.

A game can be compiled into more than one *form*. Today there are two:

* **tabular** (`cfrjax.game.CompiledGame`, passes in `cfrjax.tabular`): one node per
  history, slot vectors `[S]` (the paper's construction, any game);
* **public** (`cfrjax.public.PublicGame`, passes in `cfrjax.public.passes`): one node per
  public history of a poker subgame, slot arrays `[S, H]` over hands.

Everything else — rules, `init`, `step`, policies, `solve`, `solve_batch`,
`solve_sharded`, checkpoints, locking, exploitability — is written once, over this
interface. A game class declares (as attributes):

  `slot_shape`: `(S,)` or `(S, H)`, the shape of regrets, averages and policies;
  `RETARGETABLE`: the float leaves that may differ between games sharing one tree (batched
    by `solve_batch`, split by `solve_sharded`, replaced by re-targeting, digested by
    checkpoints); the other leaves are the shared tree;
  the slot layout of `cfrjax.passes.regret_matching`: `slot_infoset`,
    `infoset_slot_start`, `slot_uniform`, `num_slots`, `num_infosets`, `slot_split`,
    `max_actions`, `reduction`;
  `labels` (with a `fingerprint`), `name`, `sizes()`, and `infoset_index(key)` (where an
    information set's entries sit in a slot array);
  optionally `raked` (static, default false; `raked(game)`): the game is not zero-sum
    (a raked poker spot, public form only), so player 1's value is not minus player 0's
    and exploitability subtracts the profile's values (`cfrjax.best_response`).

and its form module provides the passes:

  `regret_pass(game, sigma_ext, regret, player) -> (regret + r, y)`: the cumulative regret
    of `player`'s slots (`cfrjax.passes.slot_range`) plus this iteration's instantaneous regret `r`, and
    `y`, the player's own reach at each slot times the slot's strategy (what the average
    accumulates); `sigma_ext` is the current strategy `[S + 1, ...]` with the sentinel row;
    the public form also takes `leaf=(state, coef)` for a depth-limited game with a stateful
    leaf function and returns its new state third (`cfrjax.public.leaves.leaf_values`);
  `best_response_values(game, policy) -> [2]`, `expected_value(game, policy) -> []`
    (player 0's), `expected_values(game, policy) -> [2]` (both players'); optionally
    `evaluation(game, policy) -> (best_response_values, expected_values)` from one sweep
    (`cfrjax.best_response.exploitability_and_value` uses it where given);
  `strategy_rows(game, policy)`: the rows of `cfrjax.strategy.strategy_table`;
  `infosets(game)`: `(key, player, action names, index)` per information set, `index`
    selecting its entries in slot arrays (policy files, locking by key);
  `scratch_elements(game, order, *, config, platform, donate) -> dict`: per-iteration
    buffers for the memory plan (on `platform`, for the rules `config`, the state donated or not);
  optionally `fused_half(game, config, regret, avg, comp, player, b_t, w_new, average,
    locked, locked_policy, leaf, t=t, raw=raw) -> (regret, avg, avg_comp) | None`: a (half-)update in
    the form's own kernels where it has them (the public form's one-board and turn spots
    on an NVIDIA GPU, `cfrjax.public.spot_kernel` and `turn_kernel`; a river or turn
    spot's update as native code on CPU, `cfrjax.public.native_calls.half`), `None` to run
    `regret_pass` and the generic updates (`cfrjax.iteration`). `average` is
    `cfrjax.iteration._average_update`'s: compensated in float32, plain in float64.

Dispatch is on the game's type (`form_of`); a form is registered once, here. The two
lists above are typed as `Game` (the game class) and `Passes` (its form module), two
`typing.Protocol`s every form satisfies (`tests/test_forms.py` runs both through them).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Protocol, runtime_checkable

from cfrjax import tabular
from cfrjax.game import CompiledGame
from cfrjax.public import passes as public_passes
from cfrjax.public.game import PublicGame

__all__ = ["FORMS", "Game", "Passes", "form_name", "form_of", "raked"]


@runtime_checkable
class Game(Protocol):
    """What a compiled game of any form declares (module docstring). Slot arrays are
    `slot_shape`: `[S]` (tabular) or `[S, H]` (public), a batch adding axes."""

    RETARGETABLE: dict
    slot_infoset: Any
    infoset_slot_start: Any
    slot_uniform: Any
    num_slots: int
    num_infosets: int
    slot_split: int
    max_actions: int
    reduction: str
    labels: Any
    plan: Any

    @property
    def slot_shape(self) -> tuple: ...

    @property
    def name(self) -> str: ...

    def sizes(self) -> dict: ...

    def infoset_index(self, key): ...


@runtime_checkable
class Passes(Protocol):
    """What a form's module provides (module docstring; `fused_half` and `evaluation` are
    optional and not part of it). Modules satisfy it with plain functions."""

    def regret_pass(self, game, sigma_ext, regret, player): ...

    def best_response_values(self, game, policy): ...

    def expected_value(self, game, policy): ...

    def expected_values(self, game, policy): ...

    def strategy_rows(self, game, policy) -> list: ...

    def infosets(self, game): ...

    def scratch_elements(self, game, order: str, *, config=None, platform: str | None = None,
                         donate: bool = False) -> dict: ...

#: Game type -> (form name, module of its passes).
FORMS: dict[type, tuple[str, ModuleType]] = {
    CompiledGame: ("tabular", tabular),
    PublicGame: ("public", public_passes),
}


def _entry(game):
    try:
        return FORMS[type(game)]
    except KeyError:
        known = ", ".join(t.__name__ for t in FORMS)
        raise TypeError(f"{type(game).__name__} is not a compiled game (expected one of: {known}); "
                        "build one with cfrjax.load_game") from None


def form_of(game) -> ModuleType:
    """The module implementing `game`'s passes (see the module docstring)."""
    return _entry(game)[1]


def raked(game) -> bool:
    """Whether `game` is raked, i.e. not zero-sum (static: a Python bool, also under `jit`)."""
    return bool(getattr(game, "raked", False))


def form_name(game) -> str:
    """`"tabular"` or `"public"`."""
    return _entry(game)[0]

