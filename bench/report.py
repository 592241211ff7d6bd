"""Turn benchmark JSONL records into markdown tables and plots (never runs a solver).

    python bench/report.py bench/results/foundation.jsonl > bench/results/foundation.md
    python bench/report.py bench/results/matrix.jsonl bench/results/batched.jsonl \
        [--plots bench/results] > bench/results/gpu.md

Records are dispatched on their `bench` field: `foundation` (the foundation table),
`kernels` (bench/kernels.py: ms/iter and kernels per rule, with the ratio to CFR+),
`matrix` and `replica_check` (bench/matrix.py: the tab:matrix-style ms/iter table, one
row per arm and device, and a detail table), `batched` and `bandwidth` (bench/batched.py:
throughput per batch size with the bytes-per-iteration model). With `--plots DIR`
(matplotlib), writes `matrix_ms_per_iter.png` (ms/iter vs nodes, log-log) and
`batched_throughput.png` (subgame-iterations/s vs B, log-log) into DIR.
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


def batched_table(records, bandwidth) -> str:
    lines = []
    for b in bandwidth:
        lines.append(f"Copy bandwidth on {b['device']}: {b['copy_gbs']:.1f} GB/s (median; read + write of "
                     f"{b['mib']} MiB float32).")
    lines += ["", "| device | game | nodes | B | subgame-it/s | ms / batched it | model MB / subgame-it | "
              "achieved GB/s | % of copy | compile s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(records, key=lambda r: (r["device"], r["nodes"], r["batch"])):
        lines.append(f"| {r['device']} | {r['game']} | {r['nodes']:,} | {r['batch']} | {r['subgame_iters_per_s']:.4g} | "
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
    for dev, game in sorted({(r["device"], r["game"]) for r in records}, key=lambda k: (k[0], k[1])):
        rs = sorted((r for r in records if r["device"] == dev and r["game"] == game), key=lambda r: r["batch"])
        ax.plot([r["batch"] for r in rs], [r["subgame_iters_per_s"] for r in rs], "o-", label=f"{game} ({dev})")
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


def render(records, plots_dir=None) -> str:
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
    if plots_dir:
        import os
        os.makedirs(plots_dir, exist_ok=True)
        if by.get("matrix"):
            plot_matrix(by["matrix"], os.path.join(plots_dir, "matrix_ms_per_iter.png"))
        if by.get("batched"):
            plot_batched(by["batched"], os.path.join(plots_dir, "batched_throughput.png"))
    return "\n".join(parts)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--plots", default=None, help="directory for the PNG plots (matplotlib)")
    a = ap.parse_args()
    print(render([r for f in a.files for r in load(f)], a.plots), end="")
