"""Aggregated reports: one betting tree solved on many flops, its strategy read across them.

A tree is a spot file (`cfrjax.games.poker.toml`) whose `board` is left out or replaced:
`run_report(tree, flops, out)` solves it on each flop of `flops` (`cfrjax.games.poker.
flops.flop_set`: `"all"`, `"stratified"` or a list) to a target in % of the pot, and
writes per flop, atomically, `out/flops/<flop>.json` (the record below) and
`out/flops/<flop>.npz` (the root's hand-by-hand report, `cfrjax.public.report.
NodeReport`). A flop whose record exists is never solved again, so a killed run resumes
where it stopped; independent workers (`worker`, `num_workers`: flop `i` of the set
belongs to worker `i % num_workers`) share one folder. `collect(out)` then writes
`report.csv` (one row per flop, readable with pandas), `summary.json` (means weighted by
the flops' class weights, overall and by texture) and, with matplotlib, `bet_frequency.png`
and `ev.png` (heat maps: highest card x suits) and `textures.png` (the bet frequency by
each texture).

Each record: the flop (its class representative, `flop_str`), its class weight and
textures (`flop_textures`), the iterations run, the exploitability reached (chips and %
of the pot) and whether the target was reached, the seconds spent, each player's EV and
equity at the root (`NodeReport.summary`: postflop-solver's conventions), and at the root
(out of position to act) and after a check (in position to act) the action frequencies
over the acting player's range, overall and by hand class.

Hand classes (`hand_classes`), a small classifier of a hand on the flop:
* `made`: the hand with the flop ranks above the flop alone (a pair using a hole card or
  better: on `KdKc4h`, `A5` is not made, `55` is);
* `draw`: not made, with a flush draw (four cards of a suit, one of them a hole card) or
  a straight draw with at least two completing ranks (open-ended or double gutshot);
* `air`: the rest.
Flops are solved one after another (flops with the same suit pattern and padded hand
counts share compiled executables through `pad_hands`), or with `ReportOptions.batch`
up to that many flops of one shape at once (`stack_games`: one batch under `jax.vmap`).
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from cfrjax.atomic import atomic_write
from cfrjax.games.poker.cards import COMBOS, parse_combo
from cfrjax.games.poker.evaluator import PAIR, TRIPS, HIGH_CARD, hand_category, rank5
from cfrjax.games.poker.flops import flop_set, flop_str, flop_textures
from cfrjax.games.poker.pot import parse_target
from cfrjax.rules import ORDERS, RULES

__all__ = ["HAND_CLASSES", "ReportOptions", "collect", "flop_records", "hand_classes", "run_report", "stack_games",
           "worker_flops"]

#: The textures a report groups flops by (`flop_textures`).
_TEXTURES = ("high", "suits", "pairing", "straight")
#: The hand classes of `hand_classes`, in report order.
HAND_CLASSES = ("made", "draw", "air")


@dataclasses.dataclass(frozen=True)
class ReportOptions:
    """How each flop is solved (frozen, validated).

    Attributes:
      target: stop at the first evaluation at or below it: `"x%"` of the pot, or chips
        (`cfrjax.games.poker.pot.parse_target`).
      max_iterations: the iteration cap per flop (> 0).
      rule, order: the CFR rule and order (`cfrjax.Config`).
      dtype: the solve's float type.
      batch: the most flops of one shape solved together, as one batch (`1`: one at a
        time, the fast kernels of `cfrjax.plan`; more: a batch through
        `cfrjax.solve_batch`, XLA passes under `vmap`, each flop stopping at its own
        target), fewer where the memory plan says they do not fit.
    """

    target: str = "0.5%"
    max_iterations: int = 1000
    rule: str = "dcfr"
    order: str = "alternating"
    dtype: str = "float32"
    batch: int = 1

    def __post_init__(self):
        parse_target(str(self.target))
        if not isinstance(self.max_iterations, int) or isinstance(self.max_iterations, bool) or \
                self.max_iterations < 1:
            raise ValueError(f"bad max_iterations {self.max_iterations!r}; allowed: a positive integer")
        if self.rule not in RULES:
            raise ValueError(f"bad rule {self.rule!r}; allowed: {', '.join(RULES)}")
        if self.order not in ORDERS:
            raise ValueError(f"bad order {self.order!r}; allowed: {', '.join(ORDERS)}")
        if not isinstance(self.batch, int) or isinstance(self.batch, bool) or self.batch < 1:
            raise ValueError(f"bad batch {self.batch!r}; allowed: a positive integer (flops solved together)")
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"bad dtype {self.dtype!r}; allowed: float32, float64")


def _straight_bits(mask: np.ndarray) -> np.ndarray:
    """`[...]` 13-bit rank masks -> whether they hold five consecutive ranks (ace low too)."""
    wide = (mask << 1) | ((mask >> 12) & 1)            # bit 0: the ace as a one
    windows = [0b11111 << lo for lo in range(10)]
    return np.any([(wide & w) == w for w in windows], axis=0)


def hand_classes(board, hand_cards) -> np.ndarray:
    """`[H]` index into `HAND_CLASSES` of each hand `hand_cards [H, 2]` on a flop `board [3]`
    (module docstring)."""
    board = np.asarray(board, np.int64)
    hands = np.asarray(hand_cards, np.int64)
    cards = np.concatenate([np.broadcast_to(board, (len(hands), 3)), hands], axis=1)      # [H, 5]
    ranks = board // 4
    board_cat = TRIPS if len(set(ranks.tolist())) == 1 else PAIR if len(set(ranks.tolist())) == 2 else HIGH_CARD
    made = hand_category(rank5(cards)) > board_cat
    suits = cards % 4
    counts = np.stack([(suits == s).sum(axis=1) for s in range(4)], axis=1)               # [H, 4]
    hole_suited = np.stack([(hands % 4 == s).any(axis=1) for s in range(4)], axis=1)
    flush_draw = ((counts == 4) & hole_suited).any(axis=1)
    mask = np.bitwise_or.reduce(1 << (cards // 4), axis=1)
    outs = sum(((mask >> r) & 1 == 0) & _straight_bits(mask | (1 << r)) for r in range(13))
    draw = ~made & (flush_draw | (outs >= 2))
    return np.where(made, 0, np.where(draw, 1, 2))


def _node(game, policy, code: str, board) -> dict | None:
    from cfrjax.public.report import node_report

    if code not in game.labels.node_codes:               # no such node in this tree (e.g. no check)
        return None
    r = node_report(game, policy, code)
    p = r.player
    cls = hand_classes(board, COMBOS[[parse_combo(h) for h in r.hands]])
    combos = r.combos[p]
    by_class = {}
    for c, name in enumerate(HAND_CLASSES):
        w = np.where(cls == c, combos, 0.0)
        total = float(w.sum())
        by_class[name] = {"combos": total,
                          "frequencies": [float(np.sum(w * np.nan_to_num(r.strategy[:, a])) / total) if total > 0
                                          else None for a in range(len(r.actions))]}
    return {"report": r, "player": p, "actions": list(r.actions),
            "frequencies": r.summary(p)["frequencies"], "by_class": by_class}


def _build(tree: str, flop):
    import cfrjax
    from cfrjax.games.poker.toml import load_poker_config

    config = load_poker_config(tree, board=flop_str(flop), pad_hands=True)
    return config, cfrjax.load_game(config)


def _shape(game) -> tuple:
    """Games of one shape (equal static fields and leaf shapes) stack into one batch."""
    leaves, treedef = jax.tree.flatten(game)
    return treedef, tuple((tuple(x.shape), str(x.dtype)) for x in leaves)


#: The leaves of a public game that differ between flops of one shape: the showdown and
#: hand tables, the turn cards, the ranges.
_PER_FLOP = ("sd_sorted", "sd_card_sorted", "sd_index", "hand_cards", "card_hands", "card_matrix", "board_live",
             "trunk_dealt", "weights", "norm")


def stack_games(games: list):
    """A batch of public flop games of one shape (`_shape`): `(batched game, fields)`, the
    leaves that differ between flops (`_PER_FLOP`; `fields`, their names) stacked on a
    leading axis, the others shared.

    The batch runs the solver under `jax.vmap` (batch first), not `cfrjax.solve_batch`:
    its batch-last passes share the hand tables between subgames."""
    g0 = games[0]
    if any(_shape(g) != _shape(g0) for g in games[1:]):
        raise ValueError("stack_games takes games of one shape (static fields and leaf shapes equal)")
    names = [f.name for f in dataclasses.fields(g0) if not f.metadata.get("static") and getattr(g0, f.name) is not None]
    differ = [k for k in names if any(not np.array_equal(np.asarray(getattr(g, k)), np.asarray(getattr(g0, k)))
                                      for g in games[1:])]
    if set(differ) - set(_PER_FLOP):
        raise ValueError(f"games differ in {sorted(set(differ) - set(_PER_FLOP))}, which a batch of flops does not "
                         "carry per subgame")
    batched = dataclasses.replace(g0, **{k: jnp.stack([getattr(g, k) for g in games]) for k in differ})
    return batched, tuple(differ)


def _axes(games, fields: tuple):
    """`jax.vmap` axes of a batch of `stack_games`: `fields` mapped, the rest shared."""
    names = [f.name for f in dataclasses.fields(games) if not f.metadata.get("static")]
    return dataclasses.replace(games, **{k: (0 if k in fields else None) for k in names})


@functools.partial(jax.jit, static_argnames=("fields", "iterations"))
def _batch_solve(games, states, fields: tuple, iterations: int):
    import cfrjax

    return jax.vmap(lambda g, s: cfrjax.solve(g, s, iterations), (_axes(games, fields), 0))(games, states)


@functools.partial(jax.jit, static_argnames=("fields",))
def _batch_evaluate(games, states, fields: tuple):
    import cfrjax

    return jax.vmap(lambda g, s: cfrjax.evaluate(g, s)[0], (_axes(games, fields), 0))(games, states)


def _solve_one(game, target: float, options: ReportOptions):
    """`(state, exploitability, iterations)` of one flop solved to `target`."""
    import cfrjax

    state = cfrjax.init(game, rule=options.rule, order=options.order, dtype=options.dtype)
    state, trace = cfrjax.solve_with_trace(game, state, target_exploitability=target,
                                           max_iterations=options.max_iterations, donate=True)
    return state, float(trace.exploitability[-1]), int(trace.iteration[-1])


def _solve_batch(games: list, target: float, options: ReportOptions) -> list:
    """`[(state, exploitability, iterations)]` of flops of one shape solved as one batch,
    each stopping at its own target (`cfrjax.driver.target_reached`) on the schedule of a
    single solve (`target_evaluations`), its state kept from then on."""
    from cfrjax.batch import init_batch, keep_stopped
    from cfrjax.driver import target_evaluations, target_reached

    stacked, fields = stack_games(games)
    B = len(games)
    states = init_batch(games[0], B, rule=options.rule, order=options.order, dtype=options.dtype)
    stopped, expl, at, done = np.zeros(B, bool), np.full(B, np.inf), np.zeros(B, np.int64), 0
    for point in target_evaluations(options.max_iterations):
        new = _batch_solve(stacked, states, fields, iterations=point - done)
        states, done = keep_stopped(jnp.asarray(stopped), states, new), point
        e = np.asarray(_batch_evaluate(stacked, states, fields), np.float64)
        expl = np.where(stopped, expl, e)
        at = np.where(stopped, at, done)
        stopped |= target_reached(e, target)
        if stopped.all():
            break
    return [(jax.tree.map(lambda x, i=i: x[i], states), float(expl[i]), int(at[i])) for i in range(B)]


def _record(config, game, flop, weight: int, solved, options: ReportOptions, seconds: float) -> tuple[dict, object]:
    """A flop's record and root report from its solve (module docstring)."""
    import cfrjax
    from cfrjax.games.poker.pot import target_chips

    state, expl, iterations = solved
    policy = cfrjax.average_policy(game, state)
    root, after_check = _node(game, policy, "", flop), _node(game, policy, "k", flop)
    pot = float(config.pot)
    summary = [root["report"].summary(q) for q in (0, 1)]
    tex = {k: v[0].item() for k, v in flop_textures([flop]).items()}
    record = {"flop": flop_str(flop), "weight": int(weight), **tex, "iterations": iterations,
              "exploitability": expl, "exploitability_pct_pot": 100 * expl / pot,
              "target_reached": bool(expl <= target_chips(options.target, game)), "seconds": round(seconds, 3),
              "ev": [s["ev"] for s in summary], "equity": [s["equity"] for s in summary],
              "root": {k: root[k] for k in ("player", "actions", "frequencies", "by_class")},
              "after_check": None if after_check is None else
              {k: after_check[k] for k in ("player", "actions", "frequencies", "by_class")},
              "rule": options.rule, "order": options.order, "dtype": options.dtype, "target": options.target}
    return record, root["report"]


def flop_records(tree: str, flops, weights, options: ReportOptions, built=None) -> list:
    """Solve `tree` on `flops` (of one shape when `len(flops) > 1`: one batch) and return
    `[(record, root NodeReport)]` in their order (module docstring); `built`: their
    `(config, game)` pairs where already built."""
    from cfrjax.games.poker.pot import target_chips

    start = time.perf_counter()
    built = [_build(tree, f) for f in flops] if built is None else built
    games = [g for _, g in built]
    target = target_chips(options.target, games[0])
    solved = [_solve_one(games[0], target, options)] if len(games) == 1 else _solve_batch(games, target, options)
    seconds = (time.perf_counter() - start) / len(games)
    return [_record(c, g, f, w, s, options, seconds) for (c, g), f, w, s in zip(built, flops, weights, solved)]


def _batch_size(game, options: ReportOptions) -> int:
    """`options.batch`, or fewer: as many flops of `game`'s shape as the memory plan fits
    on the device (each flop planned as a spot of its own; no state is made for it)."""
    if options.batch == 1:
        return 1
    from cfrjax.memory import device_free_bytes, memory_plan

    free, _ = device_free_bytes()
    plan = memory_plan(game, dtype=options.dtype, order=options.order)
    fits = options.batch if free is None else int(free / 1.1 // max(plan.total_bytes, 1))
    return max(1, min(options.batch, fits))


def worker_flops(flops: np.ndarray, weights: np.ndarray, worker: int, num_workers: int):
    """The flops of `worker` (flop `i` belongs to worker `i % num_workers`, as
    `cfrjax.datagen.worker_shards` deals shards)."""
    from cfrjax.datagen.shards import worker_shards

    mine = np.asarray(worker_shards(len(flops), worker, num_workers), np.int64)
    return flops[mine], weights[mine]


def run_report(tree: str, flops="stratified", out: str = "report", *, options: ReportOptions = ReportOptions(),
               worker: int | None = None, num_workers: int | None = None, progress: bool = False,
               num_flops: int = 25) -> list[str]:
    """Solve `tree` on this worker's flops not yet in `out` (module docstring); returns the
    names of the flops solved by this call. `worker` / `num_workers` default to a SLURM
    job array's (`cfrjax.datagen.worker_from_env`), else 0 of 1."""
    from tqdm import tqdm

    from cfrjax.games.poker.toml import load_poker_config

    from cfrjax.datagen.shards import worker_from_env

    if worker is None or num_workers is None:
        env_worker, env_workers = worker_from_env()
        worker = env_worker if worker is None else worker
        num_workers = env_workers if num_workers is None else num_workers
    all_flops, all_weights = flop_set(flops, num_flops)
    mine, weights = worker_flops(all_flops, all_weights, worker, num_workers)
    load_poker_config(tree, board=flop_str(mine[0]) if len(mine) else "2s3h4d")    # a bad tree fails before solving
    folder = os.path.join(out, "flops")
    os.makedirs(folder, exist_ok=True)
    todo = [(f, w) for f, w in zip(mine, weights)
            if not os.path.exists(os.path.join(folder, flop_str(f) + ".json"))]
    solved = []
    batch = None                                     # sized from the first flop's game
    pending: dict = {}                               # shape -> [(flop, weight)] waiting for a batch

    def flush(group):
        for record, root in flop_records(tree, [f for f, _, _ in group], [w for _, w, _ in group], options,
                                         [b for _, _, b in group]):
            base = os.path.join(folder, record["flop"])
            root.save_npz(base + ".npz")                    # the report first: a record means both are there
            atomic_write(base + ".json", lambda f: f.write(json.dumps(record, indent=1)), text=True)
            solved.append(record["flop"])
            bar.update(1)

    with tqdm(total=len(todo), desc="flops", unit="flop", disable=not progress) as bar:
        for flop, weight in todo:
            built = _build(tree, flop)
            batch = _batch_size(built[1], options) if batch is None else batch
            if batch == 1:
                flush([(flop, weight, built)])
                continue
            key = _shape(built[1])
            pending.setdefault(key, []).append((flop, weight, built))
            if len(pending[key]) == batch:
                flush(pending.pop(key))
        for group in pending.values():
            flush(group)
    return solved


def _read_records(out: str) -> list[dict]:
    folder = os.path.join(out, "flops")
    if not os.path.isdir(folder):
        raise ValueError(f"{out!r} holds no report (no flops/ folder): run cfrjax report TREE --out {out} first")
    records = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".json") and not name.startswith("."):
            path = os.path.join(folder, name)
            try:
                with open(path) as f:
                    records.append(json.load(f))
            except (OSError, json.JSONDecodeError) as e:
                raise ValueError(f"{path}: not a flop record ({e}); delete it to solve the flop again") from None
    return records


def _columns(records: list[dict]) -> list[str]:
    cols = ["flop", "weight", "high", "suits", "pairing", "straight", "iterations", "exploitability_pct_pot",
            "target_reached", "seconds", "ev0", "ev1", "equity0", "equity1"]
    for node in ("root", "after_check"):
        acts = next((r[node]["actions"] for r in records if r.get(node)), [])
        cols += [f"{node}:{a}" for a in acts]
        cols += [f"{node}:{c}:{a}" for c in HAND_CLASSES for a in acts]
    return cols


def _row(r: dict, cols: list[str]) -> dict:
    row = {k: r.get(k) for k in cols if ":" not in k}
    row.update(ev0=r["ev"][0], ev1=r["ev"][1], equity0=r["equity"][0], equity1=r["equity"][1])
    for node in ("root", "after_check"):
        n = r.get(node)
        if not n:
            continue
        for i, a in enumerate(n["actions"]):
            row[f"{node}:{a}"] = n["frequencies"][i]
            for c in HAND_CLASSES:
                row[f"{node}:{c}:{a}"] = n["by_class"][c]["frequencies"][i]
    return row


def _weighted(rows: list[dict], key: str) -> float | None:
    pairs = [(r["weight"], r[key]) for r in rows if r.get(key) is not None]
    total = sum(w for w, _ in pairs)
    return sum(w * x for w, x in pairs) / total if total else None


def collect(out: str, *, write: bool = True) -> dict:
    """The summary of `out`'s flop records (means weighted by class weight: overall, and by
    highest card, suits, pairing, straight possible); with `write`, also `report.csv`, `summary.json` and the
    plots (`summary["plots"]`: the files written)."""
    records = _read_records(out)
    if not records:
        raise ValueError(f"{out!r} holds no solved flop yet")
    cols = _columns(records)
    rows = [_row(r, cols) for r in records]

    def write_csv(f):
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    numeric = [c for c in cols if c not in ("flop", "high", "suits", "pairing", "straight", "target_reached")]
    summary = {"flops": len(rows), "weight": sum(r["weight"] for r in rows),
               "all": {c: _weighted(rows, c) for c in numeric if c != "weight"}, "by": {}}
    for texture in _TEXTURES:
        groups = sorted({r[texture] for r in rows})
        summary["by"][texture] = {g: {c: _weighted([r for r in rows if r[texture] == g], c)
                                      for c in numeric if c != "weight"} for g in groups}
    if write:
        atomic_write(os.path.join(out, "report.csv"), write_csv, text=True)
        atomic_write(os.path.join(out, "summary.json"), lambda f: f.write(json.dumps(summary, indent=1)), text=True)
        summary["plots"] = _plots(rows, out)
    return summary


def _plots(rows: list[dict], out: str) -> list[str]:
    """Heat maps (highest card x suits) of the root bet frequency and player 0's EV."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from cfrjax.games.poker.cards import RANKS

    check = next((k for k in rows[0] if k.startswith("root:") and k.count(":") == 1 and "check" in k.lower()), None)
    highs = [h for h in RANKS[::-1] if any(r["high"] == h for r in rows)]
    suits = [s for s in ("rainbow", "two-tone", "monotone") if any(r["suits"] == s for r in rows)]
    written = []
    for name, value, label in (("bet_frequency", (lambda r: None if check is None else 1 - r[check]),
                                "root bet frequency (player 0)"),
                               ("ev", (lambda r: r["ev0"]), "player 0 EV at the root (chips)")):
        grid = np.full((len(highs), len(suits)), np.nan)
        for i, h in enumerate(highs):
            for j, s in enumerate(suits):
                cell = [r for r in rows if r["high"] == h and r["suits"] == s and value(r) is not None]
                if cell:
                    grid[i, j] = sum(r["weight"] * value(r) for r in cell) / sum(r["weight"] for r in cell)
        fig, ax = plt.subplots(figsize=(4 + len(suits), 1 + 0.4 * len(highs)))
        im = ax.imshow(grid, aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(suits)), suits)
        ax.set_yticks(range(len(highs)), highs)
        ax.set_ylabel("highest card")
        ax.set_title(label + ", weighted by flop frequency", fontsize=9)
        fig.colorbar(im, ax=ax)
        path = os.path.join(out, name + ".png")
        atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100, bbox_inches="tight"))
        plt.close(fig)
        written.append(path)
    if check is not None:                       # bet frequency by each texture, one panel each
        fig, axes = plt.subplots(1, len(_TEXTURES), figsize=(3.2 * len(_TEXTURES), 2.6), sharey=True)
        for ax, texture in zip(axes, _TEXTURES):
            groups = sorted({r[texture] for r in rows}, key=lambda g: RANKS.index(g) if texture == "high" else str(g))
            means = [sum(r["weight"] * (1 - r[check]) for r in rows if r[texture] == g) /
                     sum(r["weight"] for r in rows if r[texture] == g) for g in groups]
            ax.bar([str(g) for g in groups], means)
            ax.set_title(texture, fontsize=9)
            ax.tick_params(labelsize=7)
        axes[0].set_ylabel("root bet frequency")
        path = os.path.join(out, "textures.png")
        atomic_write(path, lambda f: fig.savefig(f, format="png", dpi=100, bbox_inches="tight"))
        plt.close(fig)
        written.append(path)
    return written
