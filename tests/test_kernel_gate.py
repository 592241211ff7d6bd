"""Load-immune performance gate: XLA kernels per CFR+ iteration grow at most linearly in depth.

`cfrjax.profile.kernels_per_iteration` counts the kernels one compiled simultaneous CFR+
iteration launches (top-level fusions, scatters, copies, concatenations of the optimized
HLO entry computation). Unlike wall-clock time it does not depend on machine load, so it
can be asserted in a test. Both lowerings of the passes (`cfrjax.passes`) are gated, each
compiled by XLA:CPU (CI has no GPU): the scatter lowering that `reduction="auto"` picks on
CPU, and the pull lowering that it picks on GPU.

Bound: kernels <= A + B * D, D = `game.depth` (number of depth blocks).

**Pull** (the GPU's iteration): A = 10, B = 2.
* B = 2 per level: the level's backward pull (gather of the children's weighted values,
  the unrolled in-order sum and the template add: one fusion) and, where XLA:CPU does not
  fold it into the gather, the level's padded child-index computation. The forward pass
  is level-independent (one gather-and-multiply over `path_slot`).
* A = 10, the constant part: regret matching (per-set pull, divide/select with the
  sentinel concatenation: ~3), the forward path products (1-2), the regret pull with the
  CFR+ clamp (1-2), the average update (1), the iteration/weight scalars (2-3), the
  concatenation closing the backward pass (1).
On the GPU XLA fuses further: kernels launched per iteration in a profile (H200, jax
0.11.2, bench/results/kernel_profile.jsonl) Kuhn 5 (D = 5), Leduc 9 (D = 11), HUNL turn
12 (D = 8), Liar's Dice 1x6 23 (D = 15).

**Scatter** (the CPU's iteration): A = 21, B = 5. Per level one forward gather-multiply
fusion and four backward kernels (the level's segment ids, the template slice, the
child weight-multiply and the sorted segment sum); constant: regret matching (~6), the
regret scatter (3), the CFR+ clamp, the average update, scalars and concatenations; +3
since the float32 average is a compensated running mean (`avg`, `avg_comp`: XLA:CPU emits
the two TwoSum outputs as separate fusions; the pull counts did not change).

Counts measured when the bounds were set (CFR+, simultaneous, float32, jax 0.10.2; scatter
counts before the compensated average, which added 2-3 to each):

    game                 D   pull  A+2D slack | scatter  18+5D slack
    Kuhn                 5    15    20    5   |    37      43     6
    Dark Hex 2x2         7    17    24    7   |    52      53     1
    Goofspiel-4          6    17    22    5   |    47      48     1
    Leduc               11    24    32    8   |    73      73     0
    Liar's Dice 1x4     11    28    32    4   |    73      73     0

A regression of one extra kernel per level adds D kernels, more than the slack of some
game in each lowering, so the gate fails; `test_bound_is_tight` keeps it that way if a
bound is edited. The state is donated (as inside `solve`'s scan), so leaves passing
through unchanged (prediction, node locks) cost no copy.
"""

import dataclasses

import jax
import jax.numpy as jnp
import pytest

import cfrjax
from cfrjax import profile
from cfrjax.profile import kernels_per_iteration
from codegen import xla_default_codegen
from selection import cases, selected

BOUNDS = {"pull": (10, 2), "scatter": (21, 5)}

GAMES = {
    "kuhn": "kuhn_poker",
    "dark_hex_2x2": "dark_hex(num_rows=2,num_cols=2)",
    "goofspiel4": "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,points_order=descending))",
    "leduc": "leduc_poker",
    "liars_dice_1x4": "liars_dice(numdice=1,dice_sides=4)",
}

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="the bound is set for XLA:CPU")


def _float32(game):
    # The test process runs with jax_enable_x64 (conftest); the gate measures float32.
    return jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, game)


@pytest.fixture(scope="module")
def counts(request):
    out = {}
    chosen = {name for name, _ in selected(request, "test_kernels_per_iteration_bounded", "name", "reduction")}
    with pytest.MonkeyPatch.context() as mp:   # count what XLA emits for users, not the suite's codegen
        mp.setattr(profile, "XLA_OPTIONS", {**profile.XLA_OPTIONS, **xla_default_codegen()})
        for name, src in GAMES.items():
            if name not in chosen:
                continue
            game = _float32(cfrjax.load_game(src))
            state = cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear", dtype="float32")
            for reduction in BOUNDS:
                g = dataclasses.replace(game, reduction=reduction)
                out[reduction, name] = (game.depth, kernels_per_iteration(g, state))
    return out


@pytest.mark.parametrize("reduction", list(BOUNDS))
@pytest.mark.parametrize("name", cases(list(GAMES), ["kuhn", "leduc", "dark_hex_2x2"]))
def test_kernels_per_iteration_bounded(counts, name, reduction):
    a, b = BOUNDS[reduction]
    depth, kernels = counts[reduction, name]
    assert kernels <= a + b * depth, (
        f"{name} ({reduction}): {kernels} kernels per CFR+ iteration > {a} + {b} * {depth} = {a + b * depth}; "
        "the compiled iteration grew (see this module's docstring for the per-level budget)")


@pytest.mark.parametrize("reduction", list(BOUNDS))
def test_bound_is_tight(counts, reduction):
    """One extra kernel per level (D more per iteration) must break the bound on some game."""
    a, b = BOUNDS[reduction]
    mine = {name: v for (r, name), v in counts.items() if r == reduction}
    assert any(k + d > a + b * d for d, k in mine.values()), mine
