"""Training data for value networks: random river spots, solved in batches, in shards.

DeepStack- and ReBeL-style agents solve a subgame to a depth limit and ask a learned
function for the values at the cut; this package makes the data that function learns
from. It samples public belief states of the river (board, pot, both players' ranges:
`cfrjax.datagen.sampling`), solves them in batches that share one tree with
`cfrjax.solve_batch` (public form, `cfrjax.datagen.solve`), and writes each spot's
inputs and labels to sharded `.npz` files (`cfrjax.datagen.shards`), resumably, with
the same data for the same seed however the work is split.

    config = cfrjax.datagen.DatagenConfig("hunl_river_full", shards=100, spots=1024, iterations=1000)
    cfrjax.datagen.generate(config, "data/river")       # or: cfrjax datagen hunl_river_full --out data/river ...
    data = cfrjax.datagen.read_dataset("data/river")     # dict of arrays, spots concatenated

Shard schema (version `SCHEMA_VERSION` = 2, one board per spot; version 1 had one per shard; `N` spots per shard, combos in the 1,326
combo order of `cfrjax.games.poker.cards`):

| array | shape, dtype | what |
|---|---|---|
| `board` | `[N, 5]` int8 | each spot's river board, card ids ascending |
| `pot` | `[N]` float64 | the pot at the start of the river, chips |
| `stack` | `[N]` float64 | each player's stack at the start of the hand, chips (fixed per dataset) |
| `ranges` | `[N, 2, 1326]` float32 | player p's range: probabilities summing to 1; 0 on combos blocked by the board |
| `values` | `[N, 2, 1326]` float32 | player p's counterfactual value per hand, pot-relative (below); 0 on blocked combos |
| `norm` | `[N]` float64 | `sum_{h, h'} compat(h, h') r0[h] r1[h']`: the probability that two hands drawn from the ranges share no card |
| `value` | `[N, 2]` float64 | player p's expected value of the spot, chips (`value[:, 1] = -value[:, 0]` to rounding) |
| `exploitability` | `[N]` float64 | of the solution, chips: NashConv / 2 (the mean of the two best responses' gains) |
| `exploitability_pct_pot` | `[N]` float64 | the same in % of the pot |
| `meta` | uint8 (JSON) | schema, shard, shards, seed, spots, iterations, rule, order, averaging, dtype, stack, tree group and its pots, device |

Values are DeepStack's counterfactual values, in pot units:
`values[p, h] = (1 / pot) sum_{h'} compat(h, h') r_q[h'] u_p(h, h')`, with `q` the
opponent, `u_p(h, h')` player p's expected payoff in chips when both play the solution
and the hands are `h` and `h'`, zero-sum (`u_0 = -u_1`; the half-pot each player put in
before the river counts as its own: a checked-down pot won is `+pot / 2`, a fold loses
the folder's half-pot and its river bets, as in every cfrjax poker spot). So `values * pot` is in chips, and
`sum_h r_p[h] values[p, h] * pot / norm = value[p]` (the per-hand values weighted by the
range give the spot's value). A combo blocked by the board has range 0 and value 0; a
live hand with range weight 0 still has a value (that of the solution's strategy for it,
which is uniform where it was never reached). The solution is the average policy after
`iterations` iterations; every label is evaluated from it in float64.

One board per spot: a shard's batch carries its boards' showdown tables as data
(`cfrjax.games.poker.boards`), made on the host for all its boards at once while the
device solves the previous shard. Limits: pots from a finite grid (`DatagenConfig.pots`), grouped into tree groups
(`cfrjax.datagen.dataset`); river spots only.
"""

from cfrjax.datagen.dataset import SCHEMA_VERSION, DatagenConfig, default_pots, spot_spec
from cfrjax.datagen.sampling import ShardSpots, hand_strength, recursive_ranges, sample_shard, shard_rng
from cfrjax.datagen.shards import (
    ARRAYS, MANIFEST, ShardWritten, generate, generate_shards, load_shard, read_dataset, shard_path, worker_from_env,
    worker_shards)
from cfrjax.datagen.solve import Pending, solve_spots, spot_game

__all__ = [
    "ARRAYS", "MANIFEST", "SCHEMA_VERSION", "DatagenConfig", "Pending", "ShardSpots", "ShardWritten",
    "default_pots", "generate", "generate_shards", "hand_strength", "load_shard", "read_dataset",
    "recursive_ranges", "sample_shard", "shard_path", "shard_rng", "solve_spots", "spot_game", "spot_spec",
    "worker_from_env", "worker_shards",
]
