"""The public form's calls into the native library (`cfrjax.public.native`) on CPU.

`boards`: a regret pass's boards as one call (`native.forest`); `half`: a river or turn
spot's whole (half-)update as one call (`native.half`, reached through the form's
`fused_half`). `applies` and `half_applies` say where they run (the game's plan, no batch
axes, unraked, sorted terminals; the rule's capabilities for `half`); the XLA form runs
elsewhere. `operands` are the int32 tables both calls read.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from cfrjax import rules
from cfrjax.kernels import KERNELS
from cfrjax.plan import plan_of
from cfrjax.public import native, terminals, tree_passes
from cfrjax.public.game import PublicGame

__all__ = ["applies", "boards", "half", "half_applies", "operands"]


def applies(game: PublicGame, cpu: bool, batch: tuple) -> bool:
    """Whether the native code can run this game's passes: on CPU where the game's plan has
    it (`Plan.native`: the library builds), an unraked game with sorted terminals, no batch
    axes (under `vmap` the call loops). Each native path has its own field besides
    (`Plan.native_forest`, `Plan.native_half`)."""
    return (cpu and not batch and not game.raked and not terminals.dense_used(game, cpu)
            and plan_of(game).native)


def operands(game: PublicGame) -> dict:
    """The int32 operands both native calls read (`native.forest`, `native.half`): the
    showdown and card tables and the forest's tree."""
    return dict(sorted=game.sd_sorted, cards=game.sd_card_sorted, index=game.sd_index, hand_cards=game.hand_cards,
                card_hands=game.card_hands, parent=game.forest_parent, lane_slot=game.forest_lane_slot,
                fold_node=game.forest_fold_node, showdown_node=game.forest_showdown_node,
                slot_node=game.forest_slot_node, slot_child=game.forest_slot_child)


def boards(game: PublicGame, sig, regret, roffs: dict, root, lanes, trunk=(0, 0)):
    """Every board's forest by `native.forest`: `(root values [B, R, L, H], regret, y)`, the
    lanes' rows as `forest.boards` returns them. `sig`: `((array, first row), ...)` of player 0's
    and 1's forest strategy rows; `roffs[p]`: the first forest row of lane p in `regret`;
    `root`: the forest roots' reach, `[R, 2, H]` or per turn card `[G, R, 2, H]`."""
    B = game.num_boards
    R = game.num_roots
    ints = dict(operands(game), root_group=game.board_group if game.board_groups else np.zeros(B, np.int32))
    (s0a, o0), (s1a, o1) = sig
    return native.forest(s0a, s1a, regret, root.reshape((-1,) + root.shape[-2:]), game.board_live,
                         game.forest_fold_payoff, game.forest_showdown_stake, game.norm, ints, lanes=lanes,
                         offsets={"sig0": o0, "sig1": o1, **roffs}, slots=game.forest_slots, trunk=trunk,
                         boards=B, roots=R, dealt=game.dealt)


def half_applies(game: PublicGame, config, regret, comp, locked, leaf) -> bool:
    first = regret[0] if isinstance(regret, tuple) else regret
    return (plan_of(game).native_half and config is not None and KERNELS["native_half"].supports(config)
            and (locked is None or jnp.ndim(locked) == 2) and leaf is None and game.leaf_fn is None
            and not game.board_groups and game.trunk_dealt is None and first.ndim == 2 and game.weights.ndim == 2
            and jnp.ndim(game.norm) == 0
            and (config.dtype != "float32" or (comp[0] if isinstance(comp, tuple) else comp).dtype == first.dtype)
            and applies(game, True, ()))


def half(game: PublicGame, config, regret, avg, comp, player, b_t, w_new, t, raw=None, locked=None,
                 locked_policy=None):
    """One (half-)update of `player`'s slots (None: both) of a river or turn spot on CPU in
    one native call (`native.half`): `(regret, avg, avg_comp)` new, each whole or
    `player`'s half as given (`cfrjax.iteration._half`'s arrays: `regret` after this
    iteration's discount). The arithmetic of regret matching, `regret_pass`, the rule's
    update hooks and the average update (`cfrjax.iteration._average_update`), per board
    in the cache instead of in whole-array passes; equal to them to rounding
    (`tests/test_native_half.py`).

    `raw`: `((own rows, other rows) before this iteration's discount, its factors)`
    (`cfrjax.iteration._half`): with factors (LCFR, DCFR) the call matches undiscounted
    regrets (the same strategy: one positive factor on every positive regret) and
    discounts the updating rows itself, so XLA never writes the discounted arrays (a pass
    over every regret per iteration, on XLA's threads beside the call's). `locked`,
    `locked_policy`: `[S, H]` node locking (`None`: nothing locked): locked slots play
    the policy, as `cfrjax.iteration` overrides the matched strategy."""
    lanes = tree_passes.lanes_of(player)
    split = game.slot_split
    halves = isinstance(regret, tuple)
    dt = (regret[0] if halves else regret).dtype
    own_rows = regret[player] if halves else regret
    other_rows = regret[1 - player] if halves else None
    factors = rules.update_discount_factors(config, t)
    if raw is not None and raw[1] is not None:     # the discount is the call's
        (own_rows, other), factors = raw
        other_rows = other if halves else None
    one = jnp.ones((), dt)
    pos, neg = (one, one) if factors is None else factors
    scalars = jnp.stack([jnp.asarray(x, dt) for x in (rules.mean_coefficient(b_t, w_new), pos, neg)])
    # A river has no trunk (its trunk arrays are empty) and one forest root.
    trunk = len(game.trunk_levels) > 0
    ints = dict(operands(game), trunk_parent=game.trunk_parent, trunk_lane_slot=game.trunk_lane_slot,
                trunk_fold_node=game.trunk_fold_node, trunk_slot_node=game.trunk_slot_node,
                trunk_slot_child=game.trunk_slot_child,
                root_chance=game.root_chance if trunk else np.zeros((0,), np.int32))
    return native.half(
        own_rows, other_rows, game.weights, game.board_live, game.forest_fold_payoff, game.forest_showdown_stake,
        game.trunk_fold_payoff, game.norm, avg[player] if halves else avg,
        comp[player] if halves else comp, scalars, ints, locked=locked, policy=locked_policy, lanes=lanes, split=split,
        slots=game.forest_slots, trunk=game.trunk_slots, dealt=game.dealt, clamp=config.rule in rules.CLAMPED,
        compensated=config.dtype == "float32", unweighted=config.rule in rules.UNWEIGHTED_AVERAGE)
