"""Turn benchmark JSONL records into markdown tables and plots (never runs a solver).

    python bench/report.py bench/results/foundation.jsonl > bench/results/foundation.md
    python bench/report.py bench/results/matrix.jsonl bench/results/batched.jsonl \
        [--plots bench/results] > bench/results/gpu.md

Records are dispatched on their `bench` field: `foundation` (the foundation table),
`kernels` (bench/kernels.py: ms/iter and kernels per rule, with the ratio to CFR+),
`cpu_liteefg` (bench/cpu_liteefg.py: cfrjax vs LiteEFG's vanilla CFR per iteration on the
CPU, the exploitability sanity check, thread counts; latest run of each game),
`matrix` and `replica_check` (bench/matrix.py: the tab:matrix-style ms/iter table, one
row per arm and device, and a detail table), `batched` and `bandwidth` (bench/batched.py:
throughput per batch size with the bytes-per-iteration model). With `--plots DIR`
(matplotlib), writes `matrix_ms_per_iter.png` (ms/iter vs nodes, log-log) and
`batched_throughput.png` (subgame-iterations/s vs B, log-log) into DIR. `curves`
(bench/curves.py): per device, one time-to-target table of every arm with its ratio to
cfrjax, and with `--plots DIR` one `curves_<game>.png` per game (exploitability against
solve seconds, log-log, one line per arm).
"""

from __future__ import annotations

import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def foundation_table(records) -> str:
    """One row per (device, game, arm, rule, order): steady ms/iter, compile s."""
    lines = ["| device | jax | game | nodes | arm | rule | order | ms/iter (median) | compile s |",
             "|---|---|---|---:|---|---|---|---:|---:|"]
    for r in records:
        lines.append(f"| {r['device']} | {r['jax']} | {r['game']} | {r['nodes']:,} | {r.get('backend_arm', 'cfrjax')} | "
                     f"{r['rule']} | {r['order']} | {r['ms_per_iter']:.4f} | "
                     f"{r['compile_s']:.2f} |" if 'compile_s' in r else
                     f"| {r['device']} | {r['jax']} | {r['game']} | {r['nodes']:,} | {r.get('backend_arm')} | "
                     f"{r['rule']} | {r['order']} | {r['ms_per_iter']:.4f} | - |")
    cpu = {(r['game'], r.get('backend_arm', 'cfrjax'), r['rule'], r['order']): r['ms_per_iter']
           for r in records if r['backend'] == 'cpu'}
    ratios = []
    for game in sorted({g for g, *_ in cpu}):
        ours = cpu.get((game, 'cfrjax', 'cfr+', 'alternating'))
        theirs = cpu.get((game, 'openspiel_cpp_CFRPlusSolver', 'cfr+', 'alternating'))
        if ours and theirs:
            ratios.append(f"| {game} | {ours:.4f} | {theirs:.3f} | {theirs / ours:.0f}x |")
    if ratios:
        lines += ["", "CFR+ with alternating updates on the CPU, same run:", "",
                  "| game | cfrjax ms/iter | OpenSpiel C++ CFRPlusSolver ms/iter | speed-up |", "|---|---:|---:|---:|"]
        lines += ratios
    return "\n".join(lines) + "\n"


def _fmt_ms(x):
    return "-" if x is None else (f"{x:.4f}" if x < 1 else f"{x:.3f}")


def _mib(x):
    return "-" if not x else f"{x / 2**20:.1f}"


def matrix_table(records) -> str:
    """tab:matrix layout: one column per game (suite order), one row per (device, arm)."""
    games, seen = [], set()
    for r in sorted(records, key=lambda r: r["nodes"]):
        if r["game"] not in seen:
            seen.add(r["game"])
            games.append(r)
    cells = {}
    for r in records:
        cells[(r["device"], r["backend_arm"], r["game"])] = r["ms_per_iter"]
    rows = sorted({(r["device"], r["backend_arm"]) for r in records})
    head = "| device | arm | " + " | ".join(g.get("title", g["game"]) for g in games) + " |"
    lines = ["ms per CFR+ iteration (simultaneous, float32; median):", "", head,
             "|---|---|" + "---:|" * len(games),
             "| | nodes | " + " | ".join(f"{g['nodes']:,}" for g in games) + " |"]
    for dev, arm in rows:
        lines.append(f"| {dev} | {arm} | " + " | ".join(_fmt_ms(cells.get((dev, arm, g["game"]))) for g in games) + " |")
    lines += ["", "| device | game | arm | nodes | depth | compile s | first solve s | ms/iter (min-max) | "
              "kernels / Aten ops | peak MiB | exec/buffer MiB | bytes/node |",
              "|---|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for r in sorted(records, key=lambda r: (r["device"], r["nodes"], r["backend_arm"])):
        ops = r.get("kernels", r.get("aten_ops", "-"))
        comp = f"{r['compile_s']:.2f}" if "compile_s" in r else f"{r.get('setup_s', 0):.3f} (setup)"
        first = f"{r['first_solve_s']:.2f}" if "first_solve_s" in r else "-"
        lines.append(f"| {r['device']} | {r['game']} | {r['backend_arm']} | {r['nodes']:,} | {r['depth']} | {comp} | "
                     f"{first} | {_fmt_ms(r['ms_per_iter'])} ({_fmt_ms(r.get('ms_per_iter_min'))}-"
                     f"{_fmt_ms(r.get('ms_per_iter_max'))}) | {ops} | {_mib(r.get('peak_bytes'))} | "
                     f"{_mib(r.get('exec_bytes') or r.get('buffer_bytes'))} | {r.get('bytes_per_node', 0):.0f} |")
    return "\n".join(lines) + "\n"


def check_table(records) -> str:
    lines = ["Replica vs cfrjax after 20 iterations (max abs difference):", "",
             "| device | game | arm | regret diff | regret scale | average-policy diff |", "|---|---|---|---:|---:|---:|"]
    for r in records:
        lines.append(f"| {r['device']} | {r['game']} | {r['backend_arm']} | {r['regret_max_abs']:.2e} | "
                     f"{r['regret_scale']:.3g} | {r['policy_max_abs']:.2e} |")
    return "\n".join(lines) + "\n"


def latest_batched(records) -> list:
    """The newest record (records are appended in time order) per (device, game, layout, B)."""
    last = {}
    for r in records:
        last[(r["device"], r["game"], r.get("layout", "vmap"), r["batch"])] = r
    return list(last.values())


def latest_curves(records) -> list:
    """The newest record (records are appended in time order, `bench/curves.py`) per
    (device, game, arm): a file holding several runs gives each arm's latest."""
    last = {}
    for r in records:
        last[(_curve_device(r), r["game"], r["arm"])] = r
    return list(last.values())


def batched_table(records, bandwidth) -> str:
    records = latest_batched(records)
    lines = []
    for b in bandwidth:
        lines.append(f"Copy bandwidth on {b['device']}: {b['copy_gbs']:.1f} GB/s (median; read + write of "
                     f"{b['mib']} MiB float32).")
    lines += ["", "Layout `last`: `cfrjax.solve_batch` (batch axis last); `vmap`: `jax.vmap(cfrjax.solve)` "
              "(records without a layout predate `solve_batch` and are vmap). Newest record per (device, game, layout, B).",
              "", "| device | game | nodes | layout | B | subgame-it/s | ms / batched it | model MB / subgame-it | "
              "achieved GB/s | % of copy | compile s |", "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(records, key=lambda r: (r["device"], r["nodes"], r.get("layout", "vmap"), r["batch"])):
        lines.append(f"| {r['device']} | {r['game']} | {r['nodes']:,} | {r.get('layout', 'vmap')} | {r['batch']} | "
                     f"{r['subgame_iters_per_s']:.4g} | "
                     f"{r['ms_per_iter']:.3f} | {r['model_bytes_per_subgame_iter'] / 1e6:.3f} | {r['achieved_gbs']:.1f} | "
                     f"{100 * r['bandwidth_fraction']:.1f} | {r['compile_s']:.1f} |")
    return "\n".join(lines) + "\n"


def plot_matrix(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for dev, arm in sorted({(r["device"], r["backend_arm"]) for r in records}):
        rs = sorted((r for r in records if r["device"] == dev and r["backend_arm"] == arm), key=lambda r: r["nodes"])
        ax.plot([r["nodes"] for r in rs], [r["ms_per_iter"] for r in rs], "o-", label=f"{arm} ({dev})")
    ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="ms per iteration",
           title="CFR+ simultaneous float32: ms/iter vs game size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def plot_batched(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4.2))
    records = latest_batched(records)
    keys = sorted({(r["device"], r["game"], r.get("layout", "vmap")) for r in records})
    for dev, game, layout in keys:
        rs = sorted((r for r in records if (r["device"], r["game"], r.get("layout", "vmap")) == (dev, game, layout)),
                    key=lambda r: r["batch"])
        ax.plot([r["batch"] for r in rs], [r["subgame_iters_per_s"] for r in rs], "o-" if layout == "last" else "x--",
                label=f"{game}, {layout} ({dev})")
    ax.set(xscale="log", yscale="log", xlabel="batch size B (subgames sharing one tree)",
           ylabel="subgame-iterations / s", title="Batched CFR+ throughput")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def rules_table(records) -> str:
    """bench/kernels.py records: ms/iter (and kernels) per rule, with the ratio to CFR+ of the same game and order."""
    base = {(r["device"], r["game"], r["order"]): r["ms_per_iter"] for r in records if r["rule"] == "cfr+"}
    lines = ["| device | game | order | rule | ms/iter | x CFR+ | kernels |", "|---|---|---|---|---:|---:|---:|"]
    for r in records:
        ref = base.get((r["device"], r["game"], r["order"]))
        ratio = f"{r['ms_per_iter'] / ref:.2f}" if ref else "-"
        lines.append(f"| {r['device']} | {r['game']} | {r['order']} | {r['rule']} | {r['ms_per_iter']:.4f} | "
                     f"{ratio} | {r['kernels']} |")
    return "\n".join(lines) + "\n"


def cpu_liteefg_table(records) -> str:
    """bench/cpu_liteefg.py records: cfrjax vs LiteEFG's single-thread vanilla CFR, latest run of each game."""
    latest = {}
    for r in records:
        latest[r["game"]] = max(latest.get(r["game"], ""), r["run"])
    recs = [r for r in records if r["run"] == latest[r["game"]]]
    games = sorted({r["game"] for r in recs}, key=lambda g: next(r["nodes"] for r in recs if r["game"] == g))
    arm = {(r["game"], r["backend"], r["rule"], r["dtype"] if r["backend"] == "cfrjax" else "float64",
            r["threads"]): r for r in recs}
    lite = {g: arm.get((g, "liteefg", "cfr", "float64", 1)) for g in games}
    title = {r["game"]: r.get("title", r["game"]) for r in recs}

    def ms(g, rule, dtype, threads):
        r = arm.get((g, "cfrjax", rule, dtype, threads))
        return None if r is None else r["ms_per_iter"]

    def ratio(g, x):
        return "-" if x is None or lite[g] is None else f"{lite[g]['ms_per_iter'] / x:.1f}x"

    some = recs[0]
    lines = [f"cfrjax vs LiteEFG {some.get('liteefg', '')} (vanilla CFR, simultaneous, uniform averaging, "
             f"float64, `set_threads(1)`) on {some.get('cpu_model', '?')} ({some.get('cpu_count')} cores), "
             f"jax {some.get('jax')}, cfrjax {str(some.get('git_commit'))[:10]}"
             + (" (cfrjax/ modified)" if any(r.get("cfrjax_dirty") for r in recs) else "")
             + f"; runs {', '.join(sorted(set(latest.values())))}. cfrjax runs the same rule "
             "(`rule=\"cfr\", order=\"simultaneous\", averaging=\"uniform\"`, float32) with both cores and "
             "pinned to one (`taskset -c 0`). ms/iter: median of the timed calls of T iterations after a "
             "warm-up call (compile excluded); T per solver. Target: games at least Leduc's size. Others' load: the most cores "
             "other processes kept busy during any arm's timed calls (those of 1 s or more) or in the 3 s after the "
             "game (/proc/stat); a game is rerun (up to twice) when it exceeds the threshold, \"busy\" when the "
             "last attempt still did.", "",
             "| game | nodes | T LiteEFG / cfrjax, x reps | cfrjax ms/iter, 2 cores | cfrjax ms/iter, 1 core | LiteEFG ms/iter (1 thread) "
             "| speed-up, 2 cores | speed-up, 1 core | met? (2 cores / 1 core) | others' load |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for g in games:
        two, one = ms(g, "cfr", "float32", 2), ms(g, "cfr", "float32", 1)
        L = lite[g]
        n = next(r for r in recs if r["game"] == g)
        if not n.get("target"):
            met = "(below Leduc)"
        elif L is None or two is None:
            met = "-"
        else:
            met = " / ".join("yes" if x is not None and x <= L["ms_per_iter"] else "NO" for x in (two, one))
        load = [x for r in recs if r["game"] == g for x in (r.get("others_cpu_per_wall"), r.get("load_after"))
                if x is not None]
        cj = arm.get((g, "cfrjax", "cfr", "float32", 2))
        its = f"{L['iterations'] if L else '-'} / {cj['iterations'] if cj else '-'}, x {n['repeats']}"
        lines.append(f"| {title[g]} | {n['nodes']:,} | {its} | {_fmt_ms(two)} | "
                     f"{_fmt_ms(one)} | {_fmt_ms(L and L['ms_per_iter'])} | {ratio(g, two)} | {ratio(g, one)} | {met} | "
                     + (f"{max(load):.2f}" if load else "-") + (" (busy)" if n.get("busy") else "") + " |")
    lines += ["", "Every arm, ms/iter (min-max over the repetitions):", "",
              "| game | cfrjax CFR f32, 2 cores | CFR f32, 1 core | CFR f64, 2 cores | CFR f64, 1 core | "
              "CFR+ f32, 2 cores | CFR+ f32, 1 core | LiteEFG CFR f64, 1 thread | CFR+ f32 2 cores vs LiteEFG |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def cell(r):
        return "-" if r is None else f"{_fmt_ms(r['ms_per_iter'])} ({_fmt_ms(r['ms_per_iter_min'])}-{_fmt_ms(r['ms_per_iter_max'])})"
    keys = [("cfrjax", "cfr", "float32", 2), ("cfrjax", "cfr", "float32", 1), ("cfrjax", "cfr", "float64", 2),
            ("cfrjax", "cfr", "float64", 1), ("cfrjax", "cfr+", "float32", 2), ("cfrjax", "cfr+", "float32", 1),
            ("liteefg", "cfr", "float64", 1)]
    for g in games:
        lines.append(f"| {title[g]} | " + " | ".join(cell(arm.get((g, *k))) for k in keys)
                     + f" | {ratio(g, ms(g, 'cfr+', 'float32', 2))} |")
    lines += ["", "Sanity, exploitability (NashConv / 2) of the average policy after N = (reps + 1) T iterations. "
              "LiteEFG averages x_2..x_{N+1}, cfrjax x_1..x_N; \"cfrjax, LiteEFG's averaging\" rebuilds LiteEFG's "
              "average from cfrjax's running means (2-core arms), max |diff| is its largest slot difference from "
              "LiteEFG's average policy, and the last column scores LiteEFG's average with cfrjax's float64 "
              "evaluator:", "",
              "| game | N | LiteEFG | cfrjax CFR f64 | cfrjax CFR f32 | cfrjax f64, LiteEFG's averaging | max diff f64 "
              "| cfrjax f32, LiteEFG's averaging | max diff f32 | LiteEFG's average by cfrjax | cfrjax CFR+ f32 |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def e(r, key="exploitability"):
        return "-" if r is None or r.get(key) is None else f"{r[key]:.4e}"
    for g in games:
        f64, f32, plus = (arm.get((g, "cfrjax", "cfr", "float64", 2)), arm.get((g, "cfrjax", "cfr", "float32", 2)),
                          arm.get((g, "cfrjax", "cfr+", "float32", 2)))
        N = (lite[g] or f32 or {}).get("total_iterations", "-")
        lines.append(f"| {title[g]} | {N} | {e(lite[g])} | {e(f64)} | {e(f32)} | "
                     f"{e(f64, 'exploitability_liteefg_averaging')} | {e(f64, 'liteefg_policy_max_abs_diff')} | "
                     f"{e(f32, 'exploitability_liteefg_averaging')} | {e(f32, 'liteefg_policy_max_abs_diff')} | "
                     f"{e(f64, 'liteefg_exploitability_by_cfrjax')} | {e(plus)} |")
    lines += ["", "Threads: CPU time / wall time of the timed calls, and (in parentheses) the CPUs the process may run "
              "on / XLA's intra-op pool threads (`tf_XLAEigen`):", "",
              "| game | " + " | ".join(f"{b} {ru} {dt}, {th} {'thread' if b == 'liteefg' else 'core'}{'s' if th > 1 else ''}"
                                     for b, ru, dt, th in keys) + " |",
              "|---|" + "---:|" * len(keys)]
    for g in games:
        cells = []
        for k in keys:
            r = arm.get((g, *k))
            cells.append("-" if r is None else f"{r['cpu_per_wall']:.2f} ({len(r.get('affinity', []))}/"
                         f"{r.get('xla_eigen_threads', '?') if r['backend'] == 'cfrjax' else r.get('threads')})")
        lines.append(f"| {title[g]} | " + " | ".join(cells) + " |")
    lines += ["", "Notes from a one-off investigation at a6d5f61 (not regenerated):", "",
              "* Where the sanity columns part. The rebuilt average equals LiteEFG's to rounding (1e-12 or better) "
              "until some cumulative regret that is exactly zero in exact arithmetic comes out as a tiny nonzero in "
              "one solver; regret matching then switches between uniform and a pure action and the trajectories "
              "part. Battleship: after two float64 iterations cfrjax's root placement information set `T=1 ` has "
              "regrets [0, 0, 0, 1.39e-17], so it plays one placement while LiteEFG keeps uniform (LiteEFG's "
              "average stays an exact equilibrium, exploitability ~1e-15, which cfrjax's evaluator confirms). "
              "After one iteration, 16 Goofspiel-5 and 69 HUNL turn information sets are decided by positive "
              "regrets below 1e-12 (1e-17 to 1e-19); Leduc has none in its first three iterations and matched to "
              "1.5e-11 at N = 300, parting later. Kuhn, Dark Hex, HUNL river and Liar's Dice match throughout.",
              "* 2 cores vs 1. XLA:CPU splits loop fusions over its 2 intra-op threads (`outer_dimension_partitions`"
              "=2). On HUNL river the concatenation of the per-level node values (`f32[137716]`, a fusion of the "
              "backward pass) then costs about 450 CPU-us per iteration on 2 threads against 12.6 us on one "
              "(jax.profiler trace, also at 808a34e): most of the 1.29 vs 0.78 ms/iter there. Battleship, "
              "Liar's Dice and the HUNL turn gain from the second core; the five smaller games do not."]
    return "\n".join(lines) + "\n"


CURVES_REFERENCE = ("dcfr", "alternating")  # cfrjax's default: the ratios' denominator


def _curve_device(r) -> str:
    """The machine a curves record was measured on: "CPU", or the GPU's name."""
    dev = r.get("device") or r.get("jax_backend") or "?"
    return "CPU" if dev.lower() == "cpu" else dev


def _curve_reference(recs, game):
    """cfrjax's default configuration, its game's default form, all cores (None if absent)."""
    form = "tabular" if all(r.get("form") != "public" for r in recs if r["game"] == game
                            and r.get("backend") == "cfrjax") else "public"
    for r in recs:
        if (r["game"] == game and r.get("backend") == "cfrjax" and not r.get("pinning") and r.get("form") == form
                and (r.get("rule"), r.get("order")) == CURVES_REFERENCE and "to_target" in r):
            return r
    return None


def _target_label(r, k) -> str:
    t = r["thresholds"][k]
    return f"{100 * t / r['pot']:g}%" if r.get("pot") else f"{t:g}"


TICK_CLOCKS = ("TexasSolver",)  # CPU time read from /proc in 10 ms ticks: shown only from 0.1 s


def _cpu(r, c):
    """A CPU-seconds figure of record `r`, or None where its clock is too coarse for it."""
    return None if c is None or (r.get("backend") in TICK_CLOCKS and c < 0.1) else c


def _secs(x) -> str:
    return "-" if x is None else (f"{x:.3g}" if x < 100 else f"{x:.0f}")


def curves_table(records, compact: bool = False) -> str:
    """bench/curves.py records: per device, every arm's ms/iter and time to each target
    (wall seconds of solving, evaluation excluded; CPU seconds in parentheses) and its ratio
    to cfrjax's default (DCFR alternating, the game's default form, all cores). `compact`:
    the README's columns (game, arm, ms/iter, times and ratios). CPU figures of an arm whose
    CPU clock ticks in 10 ms (`TICK_CLOCKS`) are left out below 0.1 s."""
    parts = []
    for dev in dict.fromkeys(_curve_device(r) for r in records):
        recs = [r for r in records if _curve_device(r) == dev]
        r0 = recs[0]
        notes = sorted({r.get("machine_note") for r in recs if r.get("machine_note")})
        lines = [f"**{dev}** ({r0.get('cpu_count')} cores; jax {r0.get('jax')}; cfrjax commit {r0.get('commit')}; "
                 f"run {', '.join(sorted({r.get('run_started', '?') for r in recs}))}"
                 + (f"; {'; '.join(notes)}" if notes else "") + "). "
                 f"Command: `{r0.get('run_command', 'python bench/curves.py')}`.", "",
                 ("| game (targets) | arm | ms/iter (CPU) | to target 1: s (CPU s) | x cfrjax (CPU) | "
                  "to target 2: s (CPU s) | x cfrjax (CPU) |" if compact else
                  "| game (targets) | arm | rule, order, averaging | precision | threads | ms/iter (CPU) | "
                  "to target 1: s (CPU s) | x cfrjax (CPU) | to target 2: s (CPU s) | x cfrjax (CPU) | last point |"),
                 "|---|---|---:|---:|---:|---:|---:|" if compact else "|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
        for game in dict.fromkeys(r["game"] for r in recs):
            ref = _curve_reference(recs, game)
            for r in (x for x in recs if x["game"] == game and "to_target" in x):
                tgt = " / ".join(_target_label(r, k) for k in range(len(r["thresholds"])))
                cells = []
                for k, tt in enumerate(r["to_target"]):
                    rt = ref["to_target"][k] if ref else None
                    reached = rt is not None and rt["iterations"] is not None
                    if tt["iterations"] is None:
                        w, c, more = r["solve_s"][-1], _cpu(r, r["cpu_s"][-1]), "> "
                        cells.append(f"> {_secs(w)}")
                    else:
                        w, c, more = tt["solve_s"], _cpu(r, tt["cpu_s"]), ""
                        cells.append(f"{_secs(w)}" + ("" if c is None else f" ({_secs(c)})"))
                    if not reached:
                        cells.append("-")
                    else:
                        cr = "" if c is None or not rt["cpu_s"] else f" ({more}{c / rt['cpu_s']:.3g})"
                        cells.append(f"{more}{w / rt['solve_s']:.3g}{cr}")
                cpu = "" if _cpu(r, r["cpu_s"][-1]) is None else f" ({r['cpu_ms_per_iter']:.3g})"
                same = "" if r.get("same_game", True) else " (its own game)"
                pin = ", pinned" if r.get("pinning") == "taskset -c 0" else ""
                if compact:
                    lines.append(f"| {r['title']} ({tgt}) | {r['arm']}{same}{pin} | {r['ms_per_iter']:.3g}{cpu} | "
                                 + " | ".join(cells) + " |")
                    continue
                lines.append(f"| {r['title']} ({tgt}) | {r['arm']}{same} | {r.get('rule')}, {r.get('order')}, "
                             f"{r.get('averaging')} | {r.get('precision')} | {r.get('threads')}{pin} | "
                             f"{r['ms_per_iter']:.3g}{cpu} | " + " | ".join(cells) +
                             f" | {r['final_exploitability']:.2e} at {r['iterations_run']} ({r.get('stopped')}) |")
        skipped = [r for r in recs if "skipped" in r or "failed" in r]
        if skipped and not compact:
            lines += ["", "Not run:", ""]
            for r in skipped:
                lines.append(f"* {r['title']}, {r['arm']}: " + (r.get("skipped") or f"FAILED: {r['failed'][-300:]}"))
        parts.append("\n".join(lines) + "\n")
    return "\n".join(parts)


def plot_curves(records, plots_dir) -> list[str]:
    """One PNG per game: exploitability (poker: % of the pot) against solve seconds, log-log."""
    import os
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    devices = list(dict.fromkeys(_curve_device(r) for r in records))
    for game in dict.fromkeys(r["game"] for r in records):
        recs = [r for r in records if r["game"] == game and "to_target" in r]
        if not recs:
            continue
        pot = recs[0].get("pot")
        scale = 100 / pot if pot else 1.0
        fig, ax = plt.subplots(figsize=(10, 4.8))
        for r in recs:
            pts = [(s, e * scale) for s, e in zip(r["solve_s"], r["exploitability"]) if s > 0 and e > 0]
            if not pts:
                continue
            label = r["arm"] + ("" if r.get("same_game", True) else " (its own game)") + \
                (f" [{_curve_device(r)}]" if len(devices) > 1 else "")
            style = "-" if r.get("backend") == "cfrjax" else "--"
            ax.plot(*zip(*pts), style, marker=".", markersize=3, linewidth=1.2, label=label)
        for t in recs[0]["thresholds"]:
            ax.axhline(t * scale, color="gray", linewidth=0.6, linestyle=":")
        ax.set(xscale="log", yscale="log", xlabel="solve seconds (wall, evaluation excluded)",
               ylabel="exploitability, % of the pot" if pot else "exploitability (NashConv / 2)",
               title=f"{recs[0]['title']}: exploitability against time")
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        path = os.path.join(plots_dir, f"curves_{game}.png")
        fig.savefig(path, dpi=130)
        plt.close(fig)
        paths.append(path)
    return paths


def call_to_answer_table(records) -> str:
    """bench/call_to_answer.sh records: per device and spot, the cold run's build, trace,
    compile, solve and evaluation seconds, the seconds to the target and the process wall
    cold / warm, and ms/iter."""
    runs = {}
    for r in records:
        runs.setdefault((r["device"], r["spot"]), {})[r["run"]] = r   # the newest record of each run
    lines = ["| device | spot | iterations (% of the pot) | build s | trace s | compile s | solve s | evaluations s | "
             "to target s, cold / warm | process s, cold / warm | ms/iter |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (device, spot), rr in runs.items():
        c, w = rr.get("cold"), rr.get("warm")
        if c is None:
            continue
        pair = lambda k, f: f"{c[k]:{f}} / " + (f"{w[k]:{f}}" if w else "-")   # noqa: E731
        lines.append(f"| {device} | `{spot}` | {c['iterations']} ({c['exploitability_pct_pot']:.3f}) | "
                     f"{c['build_s']:.2f} | {c['trace_s']:.2f} | {c['compile_s']:.2f} | {c['solve_s']:.2f} | "
                     f"{c['eval_s']:.2f} | {pair('seconds_to_target', '.2f')} | {pair('process_wall_s', '.2f')} | "
                     f"{c['ms_per_iter']:.2f} |")
    first = records[0]
    return "\n".join(lines + ["", f"Command: `{first.get('command', 'bench/call_to_answer.sh')}` (commit "
                                   f"{first.get('commit')}, jax {first.get('jax')}, {first.get('rule')} "
                                   f"{first.get('order')} {first.get('dtype')}).", ""])


def render(records, plots_dir=None, compact=False) -> str:
    by = {}
    for r in records:
        by.setdefault(r.get("bench", "foundation"), []).append(r)
    parts = []
    if by.get("foundation"):
        parts.append(foundation_table(by["foundation"]))
    if by.get("matrix"):
        parts.append(matrix_table(by["matrix"]))
    if by.get("replica_check"):
        parts.append(check_table(by["replica_check"]))
    if by.get("batched") or by.get("bandwidth"):
        parts.append(batched_table(by.get("batched", []), by.get("bandwidth", [])))
    if by.get("kernels"):
        parts.append(rules_table(by["kernels"]))
    if by.get("cpu_liteefg"):
        parts.append(cpu_liteefg_table(by["cpu_liteefg"]))
    if by.get("curves"):
        parts.append(curves_table(latest_curves(by["curves"]), compact))
    if by.get("call_to_answer"):
        parts.append(call_to_answer_table(by["call_to_answer"]))
    if plots_dir:
        import os
        os.makedirs(plots_dir, exist_ok=True)
        if by.get("matrix"):
            plot_matrix(by["matrix"], os.path.join(plots_dir, "matrix_ms_per_iter.png"))
        if by.get("batched"):
            plot_batched(by["batched"], os.path.join(plots_dir, "batched_throughput.png"))
        if by.get("curves"):
            plot_curves(latest_curves(by["curves"]), plots_dir)
    return "\n".join(parts)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--plots", default=None, help="directory for the PNG plots (matplotlib)")
    ap.add_argument("--compact", action="store_true", help="curves: the README's narrower table")
    a = ap.parse_args()
    print(render([r for f in a.files for r in load(f)], a.plots, a.compact), end="")
