"""The public form's passes (`cfrjax.public.game.PublicGame`): counterfactual values over hands.

The form module `cfrjax.forms` registers for `PublicGame`: the functions of the form
interface (`cfrjax.forms.Passes`) and the range helpers, each from the module that holds
it. Per player p every quantity is a vector over the hand list: reach and values are
`[n, 2, H, *batch]` (node, player lane, hand, trailing batch axes).

The modules, data flowing down the list (each imports only those above it):

* `tree_passes`: one tree's (trunk's or board's forest's) forward and backward passes,
  and the pass's one platform choice (`on_platform`).
* `terminal_values`: fold and showdown values from the opponent's reach (stake, sign,
  rake, `1 / Z`; the sums with card removal in `cfrjax.public.terminals`).
* `forest`: one board's forest (`board`), and every board's, mapped and summed.
* `native_calls`: the native library's calls on CPU (a pass's boards, a spot's update).
* `leaves`: a depth-limited game's leaf values from its leaf function.
* `sweep`: trunk forward, every board (or the leaves), trunk backward; `regret_pass`.
* `cpu_spot`: a one-board spot's (half-)update on CPU as one XLA piece.
* `half_update`: `fused_half`, which of the form's own update kernels runs, if any.
* `values`: a profile's values (per hand, best responses, expected values, every node).
* `weights`: range weights and the deal normaliser (`set_ranges`).
* `scratch`: per-iteration buffers for the memory plan; `tables`: information sets and
  strategy table rows.

On CPU the boards run one at a time in a loop, elsewhere all at once (`vmap`); on CPU
scattered sums, prefix scans and sorted terminals, elsewhere pulled sums, `cumsum` and
dense terminals where built (`PublicGame.terminals`, `.reduction` override). Where the
game's plan has the native library (`cfrjax.plan.Plan.native`), a regret pass's boards
run as one native call, and a river or turn spot's whole (half-)update as another
(through `fused_half`); the XLA form stays for the rest (evaluation, reports, raked
games, batch axes; the predictive rules' and the flop's updates around the native
boards).
"""

from __future__ import annotations

from cfrjax.public.half_update import fused_half
from cfrjax.public.scratch import scratch_elements
from cfrjax.public.sweep import regret_pass
from cfrjax.public.tables import infosets, strategy_rows
from cfrjax.public.values import (best_response_values, evaluation, expected_value, expected_values, hand_values,
                                  node_values, trunk_values)
from cfrjax.public.weights import range_weights, set_ranges

__all__ = ["best_response_values", "evaluation", "expected_value", "expected_values", "fused_half", "hand_values",
           "infosets", "node_values", "range_weights", "regret_pass", "scratch_elements", "set_ranges", "trunk_values",
           "strategy_rows"]
