"""The public form's per-iteration buffers, for the memory plan (`cfrjax.memory`)."""

from __future__ import annotations

from cfrjax.kernels import KERNELS
from cfrjax.plan import plan_of
from cfrjax.public import terminals
from cfrjax.public.game import PublicGame

__all__ = ["LOOP_SLOT_ARRAYS", "scratch_elements"]


def scratch_elements(game: PublicGame, order: str, *, config=None, platform: str | None = None,
                     donate: bool = False) -> dict:
    """Per-subgame elements of an iteration's main buffers (memory plan rows).

    On an accelerator (`platform` not `"cpu"`, or not given) every board's forest is in
    flight at once, or one group of the plan's `boards_at_once` boards
    (`cfrjax.public.forest.map_boards`); on the CPU (`platform="cpu"` with the solve's
    rules `config`) the boards loop inside the native update or the passes, so XLA holds
    slot-sized `[S, H]` arrays only (`_cpu_elements`). `donate`: the solve takes the state
    over."""
    if platform == "cpu" and config is not None:
        return _cpu_elements(game, config, donate)
    S, H = game.num_slots, game.num_hands
    B = _boards_held(game)
    n1 = int(game.trunk_parent.shape[0])
    n2 = int(game.forest_parent.shape[0])
    f2, k = int(game.forest_fold_node.shape[0]), int(game.forest_showdown_node.shape[0])
    C, M = game.card_hands.shape[-2:]
    lanes = 2 if order == "simultaneous" else 1
    rows = {"strategy + sentinel": (S + 1) * H, "information-set totals": S * H,
            "reach and strategy factors": 4 * (n1 + B * n2) * H,
            "values": lanes * (n1 + B * n2) * H, "child contributions": lanes * (n1 + B * n2) * H,
            "terminal reach and values": 2 * lanes * B * (f2 + k) * H,
            "regret terms": S * H, "average term": S * H}
    if not terminals.dense_used(game, cpu=False):
        rows["showdown prefix sums"] = lanes * B * k * ((H + 1) + C * (M + 1) + 8 * H)
    if game.raked:
        rows["raked showdown reach sums"] = lanes * B * k * (C + 3 * H)
    if B < game.num_boards:
        rows["board loop slot temporaries"] = LOOP_SLOT_ARRAYS * S * H
    return rows


#: Slot-sized `[S, H]` arrays XLA holds beside the rows above when the boards run a group
#: at a time (the loop's board-major outputs joined with the trunk's rows): calibrated on
#: XLA:CPU's buffer assignment of the accelerator lowering, one iteration (no unrolled
#: scan; `tests/test_board_groups.py`, within 20% of it); an H200's is measured by
#: `bench/memory_spots.py`.
LOOP_SLOT_ARRAYS = 1


def _boards_held(game: PublicGame) -> int:
    """Boards whose forests an accelerator's pass holds at once: the plan's
    `boards_at_once` where it groups them (`0 < k < B`), else every board."""
    k, B = plan_of(game).boards_at_once, game.num_boards
    return k if 0 < k < B else B


def _cpu_elements(game: PublicGame, config, donate: bool) -> dict:
    """`scratch_elements` on CPU: what XLA allocates there are slot-sized `[S, H]` arrays
    (the accelerators' rows hold every board's forest at once).

    Calibrated on XLA:CPU's buffer assignment (`compiled_memory`) of river and turn spots
    (`tests/test_memory.py`: within 20% of it): where the native (half-)update runs
    (`cfrjax.kernels`' `native_half`, every rule without prediction) XLA holds two more
    slot arrays (the update's outputs beside a donated state, or the players' halves
    under alternating order) and nothing under simultaneous order without donation;
    otherwise (a predictive rule) the strategy with its sentinel row, the instantaneous
    regret terms and the average term, and under alternating order the regret plus
    prediction and the two halves joined at the end, under simultaneous order on several
    boards the regret plus prediction and the boards' regret terms."""
    S, H = game.num_slots, game.num_hands
    plan = plan_of(game)
    if plan.native and plan.native_half and KERNELS["native_half"].supports(config):
        n = 2 if config.order == "alternating" or donate else 0
        return {"native update outputs": n * S * H} if n else {}
    rows = {"strategy + sentinel": (S + 1) * H, "regret terms": S * H, "average term": S * H}
    if config.order == "alternating":
        rows.update({"regret + prediction": S * H, "halves joined (alternating)": 2 * S * H})
    elif game.num_boards > 1:
        rows.update({"regret + prediction": S * H, "board regret terms": S * H})
    return rows
