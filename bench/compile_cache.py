"""First-run against cached compile seconds of `cfrjax solve` (JAX's persistent cache).

Per spot, two `cfrjax solve SPOT --json` processes in a row share a fresh
`--compile-cache` folder: the first compiles and keeps its executables, the second reads
them back. Recorded per run: the CLI's `compile_s` (the solve executable), `build_s`, and
the process's wall seconds (imports, build, compile, iterations, evaluations). Records go
to `bench/results/compile_cache.jsonl`.

    python bench/compile_cache.py [--spots kuhn_poker,hunl_river_full,hunl_turn_full] [--iterations 100]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import append_records, environment  # noqa: E402

OUT = os.path.join(HERE, "results", "compile_cache.jsonl")


def _cli(spot: str, iterations: int, cache: str) -> dict:
    cmd = [sys.executable, "-m", "cfrjax", "solve", spot, "--iterations", str(iterations), "--json",
           "--compile-cache", cache]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip().splitlines()[-1:]}")
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    # the CLI's trace_s and compile_s, summed: what its compile_s was before they were apart
    return dict(compile_s=rec["compile_s"] + rec.get("trace_s", 0.0), build_s=rec.get("build_s"), solve_s=rec["solve_s"],
                compile_cache=rec.get("compile_cache"), wall_s=wall,
                exploitability=rec["exploitability"], command=" ".join(cmd[1:]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spots", default="kuhn_poker,hunl_river_full,hunl_turn_full")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--label", default=None, help="free text stored with the records (e.g. 'loaded machine')")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    env = environment()
    records = []
    for spot in args.spots.split(","):
        cache = tempfile.mkdtemp(prefix="cfrjax-bench-cache-")
        try:
            first = _cli(spot, args.iterations, os.path.join(cache, "xla"))
            cached = _cli(spot, args.iterations, os.path.join(cache, "xla"))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        same = first["exploitability"] == cached["exploitability"]
        for run, r in (("first", first), ("cached", cached)):
            rec = dict(env, bench="compile_cache", game=spot, run=run, iterations=args.iterations,
                       same_result=same, label=args.label, **r)
            records.append(rec)
            print(f"{spot:>18} {run:>6}: compile {r['compile_s']:7.2f} s, wall {r['wall_s']:7.2f} s "
                  f"(exploitability {r['exploitability']:.6e})")
    append_records(args.out, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
