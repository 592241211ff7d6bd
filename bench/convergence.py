"""The paper's update-rule study (tab:convergence): exploitability after 1,000 iterations
for cfr / cfr+ / dcfr / pcfr+ under both orders, float32 on the CPU.

Conventions: CFR and CFR+ use linear averaging (w_t = t; the paper's vanilla arm "retains
linear averaging", and it reproduces the paper's Kuhn CFR cells to 3 significant figures,
where uniform averaging does not); PCFR+ uses quadratic averaging (w_t = t^2: with linear
weights no PCFR+ cell matched, with t^2 the simultaneous cells of Liar's Dice 1x4, 1x5,
1x6, 2x3 and both Goofspiel-5 cells match to 0.3%); DCFR uses its defaults (1.5, 0, 2).

Every cell is also run in float64 and in float32 with explicit chance (the same algorithm
with another summation order). Where the paper's value is near or between those runs, the
cell is rounding-sensitive: 1,000 iterations of these dynamics amplify last-bit
differences (the paper itself reports run-to-run spreads of up to 65% on the GPU), and our
summation order differs from the paper's PyTorch `index_add` order, so such a cell cannot
be expected to agree to 5%. Writes bench/results/convergence.jsonl (one record per cell) and
bench/results/convergence.md (measured, paper, relative difference).

Usage: python bench/convergence.py [game-key ...]   (default: all keys in GAMES)
Results merge into bench/results/convergence.jsonl by game, so games can be run one per
process (`for g in ...; do python bench/convergence.py "$g"; done`).
"""

from __future__ import annotations

import json
import os
import sys
import time

import jax

jax.config.update("jax_platforms", "cpu")
jax.config.update("jax_enable_x64", True)  # for the float64 sensitivity runs; cells run in float32

import cfrjax  # noqa: E402

ITERATIONS = 1000
RULES = ("cfr", "cfr+", "dcfr", "pcfr+")
AVERAGING = {"pcfr+": "quadratic"}
ORDERS = ("alternating", "simultaneous")
GAMES = {
    "Kuhn": "kuhn_poker",
    "Leduc": "leduc_poker",
    "Liar's Dice 1x4": "liars_dice(numdice=1,dice_sides=4)",
    "Liar's Dice 1x5": "liars_dice(numdice=1,dice_sides=5)",
    "Liar's Dice 1x6": "liars_dice(numdice=1,dice_sides=6)",
    "Liar's Dice 2x3": "liars_dice(numdice=2,dice_sides=3)",
    "Goofspiel-5": "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))",
    "Dark Hex 2x2": "dark_hex(num_rows=2,num_cols=2)",
    "HUNL river": "games/hunl_river.toml",
    # The smallest OpenSpiel Battleship with the paper's 209,941 States (games/suite.toml).
    "Battleship": "battleship(board_width=2,board_height=2,ship_sizes=[1],ship_values=[1],num_shots=4)",
    "HUNL turn": "games/hunl_turn.toml",
    "Goofspiel-6": "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=6,points_order=descending))",
}
# tab:convergence: (alternating cfr, cfr+, dcfr, pcfr+, simultaneous cfr, cfr+, dcfr, pcfr+).
PAPER = {
    "Kuhn": (6.18e-4, 8.73e-5, 1.99e-4, 2.20e-8, 1.32e-2, 2.83e-3, 5.05e-3, 4.56e-5),
    "Liar's Dice 1x4": (1.17e-4, 4.52e-5, 3.43e-5, 1.46e-6, 1.86e-2, 2.48e-3, 2.54e-3, 1.79e-5),
    "Leduc": (1.04e-1, 2.73e-4, 1.57e-4, 7.13e-4, 1.46e-1, 6.65e-3, 8.59e-3, 1.46e-3),
    "Goofspiel-5": (1.44e-2, 3.86e-4, 2.73e-4, 6.21e-5, 9.55e-2, 5.41e-3, 7.58e-3, 1.16e-3),
    "Liar's Dice 1x5": (5.57e-3, 4.60e-5, 1.73e-5, 8.27e-5, 3.42e-2, 2.68e-3, 2.79e-3, 3.02e-4),
    "Liar's Dice 1x6": (3.37e-3, 1.27e-4, 5.94e-5, 3.95e-4, 3.54e-2, 3.40e-3, 3.58e-3, 9.09e-4),
    "Liar's Dice 2x3": (2.20e-3, 3.54e-5, 1.93e-5, 1.16e-5, 4.95e-2, 4.05e-3, 5.01e-3, 4.57e-4),
    "Dark Hex 2x2": (1.28e-6, 1.28e-6, 4.47e-9, 4.47e-9, 1.26e-6, 1.26e-6, 1.62e-9, 1.62e-9),
    "HUNL river": (5.35e-3, 5.84e-4, 8.54e-5, 5.51e-4, 9.45e-2, 5.47e-3, 4.24e-3, 9.11e-4),
    "Battleship": (4.03e-3, 8.25e-4, 8.18e-4, 2.19e-7, 6.66e-2, 8.34e-3, 9.13e-3, 1.73e-3),
    "HUNL turn": (5.25e-2, 9.33e-4, 2.70e-4, 9.94e-4, 2.09e-1, 1.62e-2, 1.76e-2, 1.52e-3),
    "Goofspiel-6": (2.05e-2, 4.62e-4, 4.37e-4, 3.66e-4, 1.43e-1, 1.43e-2, 1.54e-2, 2.12e-3),
}
OUT = os.path.join(os.path.dirname(__file__), "results")


NOTES = [
    "Leduc, alternating CFR+: our float64 run with explicit chance gives 2.5715e-4, exactly OpenSpiel's own "
    "CFRPlusSolver value (its iterates match ours to 1e-15, tests/test_parity.py); the paper's 2.73e-4 differs "
    "from OpenSpiel's by 6% as well, so the difference is on the paper's side (its alternating CFR+ convention "
    "is not documented further).",
    "HUNL river: a different game instance. The paper's K = 100 random hands came from its own generator "
    "(9,161 deals); ours (NumPy, seed 0) give 9,181 deals, so every cell is a different game.",
    "HUNL turn: our reconstruction from the paper's description has the paper's exact sizes (131 deals, "
    "433,610 States, 83,040 Infosets) and matches its alternating CFR+ and PCFR+ cells to 2%, but not the "
    "simultaneous cells; a detail of the paper's tree (bet sizing or all-in handling after a turn bet) or "
    "payoffs may differ.",
    "Dark Hex 2x2: DCFR and PCFR+ reach exploitability 0 in float32 here, 4.5e-9 / 1.6e-9 in the paper: both "
    "are float32 noise around the exact equilibrium.",
    "Battleship, simultaneous PCFR+: ours (quadratic averaging) reaches 2.4e-6, the paper 1.7e-3; its other "
    "Battleship cells match to 0.1%, so the paper's PCFR+ arm must differ from ours in some detail that the "
    "other games do not expose. Not resolved.",
]


def paper_value(game: str, rule: str, order: str):
    row = PAPER.get(game)
    return None if row is None else row[ORDERS.index(order) * 4 + RULES.index(rule)]


def run(keys):
    os.makedirs(OUT, exist_ok=True)
    records = []
    for key in keys:
        t0 = time.perf_counter()
        form = {"form": "tabular"} if GAMES[key].endswith(".toml") else {}  # the paper's form
        game = cfrjax.load_game(GAMES[key], **form)
        explicit = cfrjax.load_game(GAMES[key], chance="explicit", **form)
        for order in ORDERS:
            for rule in RULES:
                averaging = AVERAGING.get(rule, "linear")
                eps = {}
                for variant, g, dtype in (("float32", game, "float32"), ("float64", game, "float64"),
                                          ("explicit_float32", explicit, "float32")):
                    state = cfrjax.init(g, rule=rule, order=order, averaging=averaging, dtype=dtype)
                    state = cfrjax.solve(g, state, ITERATIONS)
                    eps[variant] = float(cfrjax.exploitability(g, cfrjax.average_policy(g, state)))
                paper = paper_value(key, rule, order)
                rec = dict(game=key, openspiel=GAMES[key], rule=rule, order=order, averaging=averaging,
                           iterations=ITERATIONS, dtype="float32", backend=jax.default_backend(),
                           exploitability=eps["float32"], exploitability_float64=eps["float64"],
                           exploitability_explicit_float32=eps["explicit_float32"],
                           paper=paper,
                           rel_diff=None if paper is None else (eps["float32"] - paper) / paper)
                records.append(rec)
                print(json.dumps(rec), flush=True)
        print(f"# {key}: {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        jax.clear_caches()  # free the executables: XLA:CPU runs out of code memory after ~100 of them
    return records


def merge(records):
    """Records of earlier runs for games not run now, then these (so games can be run separately)."""
    path = os.path.join(OUT, "convergence.jsonl")
    run_now = {r["game"] for r in records}
    old = []
    if os.path.exists(path):
        with open(path) as f:
            old = [json.loads(line) for line in f if line.strip()]
    merged = [r for r in old if r["game"] not in run_now and "exploitability_explicit_float32" in r] + records
    order = list(GAMES)
    return sorted(merged, key=lambda r: order.index(r["game"]) if r["game"] in order else len(order))


def write(records):
    records = merge(records)
    with open(os.path.join(OUT, "convergence.jsonl"), "w") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    lines = ["# Update-rule study (tab:convergence reproduction)", "",
             f"Exploitability after {ITERATIONS} iterations, float32, CPU (CFR, CFR+: linear averaging; "
             "PCFR+: quadratic; DCFR: alpha=1.5, beta=0, gamma=2). Each cell: measured / paper (relative "
             "difference). `*`: within 5% of the paper. `~`: rounding-sensitive: our own runs of the same "
             "cell with other rounding (float64, and float32 with explicit chance, whose summation order "
             "differs) already differ from each other by more than 5%, so agreement to 5% with another "
             "implementation's rounding cannot be expected (bench/convergence.py). Bold: the tightest rule of "
             "the row; the last column says whether it is the paper's bold rule. Cells with neither mark are "
             "explained in the notes below the table.", "",
             "| Game | Order | CFR | CFR+ | DCFR | PCFR+ | best rule = paper's |", "|---|---|---|---|---|---|---|"]
    by = {(r["game"], r["order"], r["rule"]): r for r in records}
    for game in dict.fromkeys(r["game"] for r in records):
        for order in ORDERS:
            row = [by[game, order, rule] for rule in RULES]
            best = min(range(len(RULES)), key=lambda i: row[i]["exploitability"])
            cells = []
            for i, r in enumerate(row):
                cell = f"{r['exploitability']:.3g}"
                if r["paper"] is not None:
                    runs = [r["exploitability"], r["exploitability_float64"], r["exploitability_explicit_float32"]]
                    sensitive = max(runs) > 1.05 * min(runs) if min(runs) > 0 else max(runs) > 0
                    tag = "*" if abs(r["rel_diff"]) <= 0.05 else ("~" if sensitive else "")
                    cell += f" / {r['paper']:.3g} ({100 * r['rel_diff']:+.1f}%){tag}"
                cells.append(f"**{cell}**" if i == best else cell)
            papers = [r["paper"] for r in row]
            same = "-" if None in papers else ("yes" if min(range(len(RULES)), key=lambda i: papers[i]) == best
                                               else "no")
            lines.append(f"| {game} | {order} | " + " | ".join(cells) + f" | {same} |")
    lines += ["", "Notes:", ""] + [f"- {n}" for n in NOTES]
    with open(os.path.join(OUT, "convergence.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--render"]:  # re-render the markdown from the records
        write([])
    else:
        write(run(sys.argv[1:] or list(GAMES)))
