"""Issue 52's bench: one tree over a set of flops (`cfrjax report`), timed, and the whole
1,755 projected from it.

Runs `cfrjax.games.poker.flop_report.run_report` on a tree (a flop spot file, its board
replaced by each flop) and a flop set, in this process (the clock starts after
`jax.devices()`), then writes one JSONL record per flop (its report record: iterations,
exploitability, seconds, textures) and a summary record: flops, total wall, seconds per
flop (the first of each shape compiles), and the projection to every class of flops: the
mean seconds per flop of each stratum (suits x pairing, as the stratified subset is
drawn) times its number of classes, summed. Every record carries device, versions,
commit and the plan.

    python bench/flop_report.py .ab/spots/srp_Qs7h2c_flop.toml --flops stratified \\
        --target 0.5% --out /tmp/report --records bench/results/flop_report_h200.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # this checkout's cfrjax

import jax  # noqa: E402

from common import append_records, environment  # noqa: E402


def _stratum(record: dict) -> str:
    return record["suits"] + ("|unpaired" if record["pairing"] == "unpaired" else "|paired")


def projection(records: list[dict]) -> dict:
    """Seconds to solve every class of flops, from the mean seconds per flop of each
    stratum of `records` (warm flops only where a stratum has one: the first flop of a
    shape pays its compile once per report, not once per flop)."""
    from cfrjax.games.poker.flops import flop_classes, flop_textures

    flops, _ = flop_classes()
    tex = flop_textures(flops)
    counts: dict = {}
    for s, p in zip(tex["suits"], tex["pairing"]):
        key = s + ("|unpaired" if p == "unpaired" else "|paired")
        counts[key] = counts.get(key, 0) + 1
    by: dict = {}
    for r in records:
        by.setdefault(_stratum(r), []).append(r["seconds"])
    mean_all = sum(r["seconds"] for r in records) / len(records)
    per = {k: (sorted(v)[:-1] or v) for k, v in by.items()}     # drop the slowest (a compile) where there are two
    seconds = {k: counts[k] * (sum(per[k]) / len(per[k]) if k in per else mean_all) for k in counts}
    return {"classes": counts, "seconds_by_stratum": seconds, "seconds": sum(seconds.values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree")
    ap.add_argument("--flops", default="stratified")
    ap.add_argument("--num-flops", type=int, default=25)
    ap.add_argument("--target", default="0.5%")
    ap.add_argument("--max-iterations", type=int, default=1000)
    ap.add_argument("--rule", default="dcfr")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--out", required=True, help="the report folder (kept: a resumed run skips solved flops)")
    ap.add_argument("--records", default=None, help="JSONL file the records are appended to")
    args = ap.parse_args(argv)

    jax.devices()
    jax.config.update("jax_enable_x64", True)    # the reports' float64, as the CLI; the solves stay float32
    from cfrjax.games.poker import flop_report as fr

    options = fr.ReportOptions(target=args.target, max_iterations=args.max_iterations, rule=args.rule,
                               batch=args.batch)
    t0 = time.perf_counter()
    solved = fr.run_report(args.tree, args.flops, args.out, options=options, progress=True, num_flops=args.num_flops)
    wall = time.perf_counter() - t0
    summary = fr.collect(args.out)
    env = environment()
    folder = os.path.join(args.out, "flops")
    records = []
    for name in solved:
        with open(os.path.join(folder, name + ".json")) as f:
            records.append(json.load(f))
    base = dict(env, bench="flop_report", tree=os.path.basename(args.tree), flops_set=args.flops,
                num_flops=args.num_flops, target=args.target, rule=args.rule, batch=args.batch)
    out = [dict(base, kind="flop", **{k: r[k] for k in ("flop", "weight", "high", "suits", "pairing", "straight",
                                                          "iterations", "exploitability_pct_pot", "target_reached",
                                                          "seconds")}) for r in records]
    proj = projection(records) if records else None
    out.append(dict(base, kind="summary", flops_solved=len(records), wall_s=round(wall, 2),
                    seconds_per_flop=round(wall / max(len(records), 1), 3),
                    all_reached=all(r["target_reached"] for r in records),
                    weighted_exploitability_pct_pot=summary["all"]["exploitability_pct_pot"],
                    projection_all_classes_s=None if proj is None else round(proj["seconds"], 1),
                    projection=proj, command=" ".join(["python", "bench/flop_report.py"] + list(argv or sys.argv[1:]))))
    if args.records:
        append_records(args.records, out)
    print(json.dumps(out[-1], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
