"""Turn benchmark JSONL records into markdown tables (never runs a solver).

    python bench/report.py bench/results/foundation.jsonl > bench/results/foundation.md
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


if __name__ == "__main__":
    print(foundation_table(load(sys.argv[1])), end="")
