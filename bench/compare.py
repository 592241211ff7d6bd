"""ms/iter side by side: cfrjax vs OpenSpiel (C++ CFR+, Python CFR) vs LiteEFG vs NoRegret, on this CPU.

    python bench/compare.py [--games kuhn_poker leduc_poker liars_dice] [--iterations 100]
    python bench/compare.py --peers noregret    # NoRegret dev17 (own Python 3.12 venv) + same-game check
    python bench/compare.py --peers postflop --postflop-solver DIR   # full-range river/turn
    python bench/compare.py --peers texassolver --texassolver DIR    # TexasSolver console build; river/turn
    python bench/compare.py --peers all --postflop-solver DIR --texassolver DIR2   # every arm; absent ones skipped

`--peers noregret` writes `bench/results/peers_noregret_cpu.jsonl` (`bench/peers/noregret_peer.py`:
it makes its venv, runs CFR / CFR+ / PCFR+ simultaneous float64 on the suite's OpenSpiel
games and checks NoRegret against cfrjax float64 at 1,000 iterations on Kuhn and Leduc; a
configuration that does not agree to 1e-6 relative makes the run exit 1). `--peers postflop`
writes `bench/results/peers_postflop_cpu.jsonl` (`bench/peers/postflop_peer.py`). `--peers texassolver`
writes `bench/results/peers_texassolver_cpu.jsonl` (`bench/peers/texassolver_peer.py`: TexasSolver's
console solver, 1 and 2 threads, with the same-game check of its dumped strategy; without
`--texassolver DIR` or its built `console_solver` the arm is a skip record).
Without `--peers` (the default arms): writes `bench/results/compare.jsonl` (one record per game x backend, with the semantics
each backend really runs) and `bench/results/compare.md`. Each run also feeds the
value-agreement certificate (`cfrjax.certificate`) per game.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "peers"))

import jax  # noqa: E402

import cfrjax  # noqa: E402
from cfrjax.certificate import format_table, value_certificate  # noqa: E402
from cfrjax.games.efg_file import write_efg  # noqa: E402


def cfrjax_run(spec, iterations):
    game = cfrjax.load_game(spec)
    state = cfrjax.init(game, rule="cfr+", order="simultaneous", averaging="linear", dtype="float32")
    run = jax.jit(lambda g, s: _solve(g, s, iterations))
    out = run(game, state)  # compile + warm-up
    jax.block_until_ready(out)
    t0 = time.perf_counter()
    out = run(game, state)
    jax.block_until_ready(out)
    solve_s = time.perf_counter() - t0
    st = out[0] if isinstance(out, tuple) else out
    pol = cfrjax.average_policy(game, st)
    return dict(backend="cfrjax", iterations=iterations, solve_s=solve_s, ms_per_iter=1e3 * solve_s / iterations,
                rule="cfr+", order="simultaneous", averaging="linear", precision=str(jax.numpy.zeros(0).dtype),
                execution=f"jax {jax.__version__} {jax.default_backend()}, lax.scan",
                value=float(cfrjax.expected_value(game, pol)), nash_conv=2 * float(cfrjax.exploitability(game, pol)))


def _solve(g, s, n):
    out = cfrjax.solve(g, s, iterations=n)
    return out[0] if isinstance(out, tuple) else out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--games", nargs="+", default=["kuhn_poker", "leduc_poker", "liars_dice"])
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--python-max-nodes", type=int, default=20_000, help="skip OpenSpiel Python CFR above this size")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "compare.jsonl"))
    ap.add_argument("--peers", default="default", choices=["default", "noregret", "postflop", "texassolver", "all"],
                    help="default: cfrjax vs OpenSpiel and LiteEFG (this file's original arms); noregret, "
                         "postflop, texassolver: that arm only (own output file); all: every arm")
    ap.add_argument("--noregret-venv", default=None, help="NoRegret's Python 3.12 venv (made if absent; "
                    "default ~/.cache/cfrjax-peers/noregret-venv)")
    ap.add_argument("--noregret-games", nargs="+", default=None,
                    help="games for NoRegret's timing runs (default: the suite's OpenSpiel games)")
    ap.add_argument("--postflop-solver", default=None, help="a postflop-solver checkout (b-inary/postflop-solver)")
    ap.add_argument("--cargo-source-dir", default=None, help="offline cargo: a directory source replacing "
                    "crates.io for the postflop driver's build (e.g. Debian's /usr/share/cargo/registry)")
    ap.add_argument("--texassolver", default=None, help="a TexasSolver checkout (bupticybee/TexasSolver, branch "
                    "console) with its console_solver built in DIR/build")
    ap.add_argument("--texassolver-exe", default=None, help="TexasSolver's console_solver (default DIR/build/console_solver)")
    ap.add_argument("--peer-iterations", type=int, default=None,
                    help="iterations of the peers' timing runs (default: each arm's own)")
    args = ap.parse_args(argv)
    if args.peers != "default":
        jax.config.update("jax_enable_x64", True)  # float64 arms; the default arms pass float32 explicitly
    failed = False
    if args.peers in ("noregret", "all"):
        import noregret_peer
        failed |= noregret_peer.compare_main(args) != 0
    if args.peers in ("postflop", "all"):
        import postflop_peer
        failed |= postflop_peer.compare_main(args) != 0
    if args.peers in ("texassolver", "all"):
        import texassolver_peer
        failed |= texassolver_peer.compare_main(args) != 0
    if args.peers in ("noregret", "postflop", "texassolver"):
        return 1 if failed else 0
    rc = _default_arms(args)
    return 1 if failed or rc else 0


def _default_arms(args) -> int:
    import openspiel_peer
    try:
        import liteefg_peer
    except ImportError as e:
        liteefg_peer, why = None, str(e)
    records = []
    tmp = tempfile.mkdtemp()
    for name in args.games:
        spec = cfrjax.games.openspiel.spec_from_openspiel(name)
        T = args.iterations
        recs = [cfrjax_run(spec, T)]
        recs.append(openspiel_peer.run(name, "cfr+", "cpp", T))
        if spec.num_nodes <= args.python_max_nodes:
            recs.append(openspiel_peer.run(name, "cfr", "python", max(2, T // 10)))
        if liteefg_peer is not None:
            path = os.path.join(tmp, name + ".efg")
            t0 = time.perf_counter()
            write_efg(spec, path)
            export_s = time.perf_counter() - t0
            for rule in ("cfr", "cfr+"):
                r = liteefg_peer.run(path, spec, rule, T)
                r["export_s"] = export_s
                recs.append(r)
        else:
            recs.append(dict(backend="liteefg", skipped=why))
        recs.append(dict(backend="noregret", skipped="run by `--peers noregret` (its own Python 3.12 venv; "
                                                     "records in bench/results/peers_noregret_cpu.jsonl)"))
        cert = {f"{r['backend']}:{r.get('rule')}": (r["value"], r["nash_conv"]) for r in recs if "nash_conv" in r}
        rows = value_certificate(cert, strict=False)
        for r in recs:
            r.pop("_policy", None)
            r.pop("_rows", None)
            r.update(game=name, nodes=spec.num_nodes, infosets=spec.num_infosets, host_cpus=os.cpu_count())
            records.append(r)
        records.append(dict(game=name, certificate=rows, holds=all(x["ok"] for x in rows)))
        print(name, "certificate holds:", all(x["ok"] for x in rows), flush=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        for r in records:
            f.write(json.dumps(r, default=float) + "\n")
    md = ["| game | backend | rule | order | avg | precision | iters | ms/iter | NashConv/2 | value |",
          "|---|---|---|---|---|---|---:|---:|---:|---:|"]
    for r in records:
        if "ms_per_iter" in r:
            md.append(f"| {r['game']} | {r['backend']} | {r['rule']} | {r['order']} | {r['averaging']} | {r['precision']} | "
                      f"{r['iterations']} | {r['ms_per_iter']:.3f} | {r['nash_conv'] / 2:.3e} | {r['value']:.6f} |")
        elif "skipped" in r:
            md.append(f"| {r['game']} | {r['backend']} | skipped: {r['skipped']} | | | | | | | |")
    for r in records:
        if "certificate" in r:
            md += ["", f"Certificate, {r['game']}:", "", format_table(r["certificate"])]
    with open(os.path.splitext(args.out)[0] + ".md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
