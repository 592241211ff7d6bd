"""A Libratus endgame in both compiled forms: the same game, value and exploitability (issue 20).

    python bench/libratus_forms.py DIR [--endgame 1] [--top-hands N] [--iterations 100]
                                       [--rule cfr+] [--order simultaneous] [--out bench/results/libratus_forms.jsonl]

`DIR` holds the Libratus endgame files (`subgame<k>.txt`). The endgame is loaded with
`load_libratus_endgame` (its 2 x 1,326 reach vectors are the root ranges; `--top-hands N`
keeps each player's N hands of highest reach: a reduced-range record, named so) and built
in the public form (`build_public`, the ranges' support as hand list) and the tabular form
(`compile_game(build_spec(...))`). In float64, then:

* **same iterations**: both forms run the same `--iterations` of the same rule and order
  from zero; the exploitability and value of each form's average policy (`cfrjax.evaluate`).
  Turn endgames have exact value ties (a river card that changes nothing for a hand) where
  the two forms' rounding leaves 0 in one and +-1e-18 in the other and regret matching then
  plays another strategy, so these trajectories may part (tests/test_public_solver.py);
  the record says by how much.
* **same profile**: the public form's average policy, moved into the tabular form by
  information-set name (`save_policy` / `load_policy`), evaluated in both forms: the check
  that the two forms are the same game. Pass: relative difference <= 1e-9 for both the
  exploitability and the value.

Relative difference: `|a - b| / max(|a|, |b|)` (0 when both are 0).

Before building the tabular form the script counts its nodes (deals x nodes per deal, from
the public form's trunk and river trees; checked against the built form) and above
`--max-tabular-nodes` records the public form alone, the tabular arm `skipped` with its
size: the full-range endgame 1 has 23,863,135,765 tabular nodes (731,796 deals x 32,609),
far beyond any machine this project has. One JSONL record per run; exit code 1 when the
same-profile check fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import cfrjax  # noqa: E402
from cfrjax.games.poker import build_spec, load_libratus_endgame  # noqa: E402
from cfrjax.games.poker.deals import subgame_deals  # noqa: E402
from cfrjax.games.poker.public_tree import build_public  # noqa: E402
from cfrjax.games.poker.subgame import RIVER_CARDS  # noqa: E402
from common import append_records, environment, peak_memory_bytes  # noqa: E402

PASS_REL = 1e-9
DEFAULT_OUT = os.path.join(os.path.dirname(__file__), "results", "libratus_forms.jsonl")


def rel_diff(a: float, b: float) -> float:
    """`|a - b| / max(|a|, |b|)`, 0 when both are 0."""
    scale = max(abs(a), abs(b))
    return 0.0 if scale == 0 else abs(a - b) / scale


def tabular_nodes(cfg, pub) -> tuple[int, int]:
    """`(deals, nodes)` of the tabular form, without building it: a chance root, then per deal
    the turn street (the public trunk) and one river tree per live river card (44), or on a
    river the river tree (the public forest of one board)."""
    deals = int(subgame_deals(cfg)[0].size)
    sizes = pub.sizes()
    per_deal = sizes["trunk_nodes"] + RIVER_CARDS * sizes["forest_nodes"] if pub.num_boards > 1 \
        else sizes["forest_nodes"]
    return deals, 1 + deals * per_deal


def host_peak_bytes() -> int:
    """This process's peak resident memory (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def solve_and_evaluate(game, iterations, rule, order):
    """`(state, seconds, exploitability, value, memory plan bytes)` after `iterations` from zero, float64."""
    t0 = time.perf_counter()
    state = jax.block_until_ready(cfrjax.solve(game, cfrjax.init(game, rule=rule, order=order, dtype="float64"),
                                               iterations))
    solve_s = time.perf_counter() - t0
    e, v = cfrjax.evaluate(game, state)
    return state, solve_s, float(e), float(v), cfrjax.memory.memory_plan(game, state).total_bytes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", help="folder of the Libratus endgame files subgame<k>.txt")
    ap.add_argument("--endgame", type=int, default=1)
    ap.add_argument("--top-hands", type=int, default=None,
                    help="keep each player's N hands of highest reach (a reduced-range record)")
    ap.add_argument("--iterations", type=int, default=100)
    ap.add_argument("--rule", default="cfr+")
    ap.add_argument("--order", default="simultaneous")
    ap.add_argument("--max-tabular-nodes", type=float, default=3e8,
                    help="skip the tabular form above this many nodes (estimated before it is built; "
                         "default 3e8: at the rates measured on --top-hands 20, about 320 bytes of host memory "
                         "and 245 bytes of float64 device memory per node, 96 GB and 74 GB)")
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    env = environment()
    cfg = load_libratus_endgame(os.path.join(args.dir, f"subgame{args.endgame}.txt"), top_n=args.top_hands)
    rec = dict(bench="libratus_forms", game=cfg.name, endgame=args.endgame,
               ranges="full" if args.top_hands is None else f"top{args.top_hands}", reduced=args.top_hands is not None,
               street=cfg.street, board=cfg.board, pot=cfg.pot, rule=args.rule, order=args.order, dtype="float64",
               iterations=args.iterations, pass_rel=PASS_REL)

    t0 = time.perf_counter()
    pub = build_public(cfg, hands="range")
    build_s = time.perf_counter() - t0
    deals, nodes = tabular_nodes(cfg, pub)
    print(f"{cfg.name}: public form {pub.sizes()}; tabular form {deals:,} deals, {nodes:,} nodes", flush=True)
    ps, solve_s, e, v, plan = solve_and_evaluate(pub, args.iterations, args.rule, args.order)
    rec["public"] = dict(**pub.sizes(), build_s=build_s, solve_s=solve_s, exploitability=e, value=v, plan_bytes=plan)
    print(f"public:  built {build_s:.1f} s, {args.iterations} iterations {solve_s:.1f} s (compile included), "
          f"exploitability {e:.15g}, value {v:.15g}", flush=True)

    if nodes > args.max_tabular_nodes:
        why = f"{nodes:,} nodes ({deals:,} deals) above --max-tabular-nodes {args.max_tabular_nodes:.3g}"
        print(f"tabular: skipped: {why}", flush=True)
        rec["tabular"] = dict(deals=deals, nodes=nodes, skipped=why)
        rec.update(host_peak_bytes=host_peak_bytes(), device_peak_bytes=peak_memory_bytes(), **env)
        append_records(args.out, [rec])
        return 0

    t0 = time.perf_counter()
    tab = cfrjax.compile.compile_game(build_spec(cfg))
    build_s = time.perf_counter() - t0
    if tab.num_nodes != nodes:
        raise AssertionError(f"tabular form has {tab.num_nodes} nodes, estimated {nodes}")
    ts, solve_s, e, v, plan = solve_and_evaluate(tab, args.iterations, args.rule, args.order)
    del ts
    rec["tabular"] = dict(deals=deals, **tab.sizes(), build_s=build_s, solve_s=solve_s, exploitability=e, value=v,
                          plan_bytes=plan)
    print(f"tabular: built {build_s:.1f} s, {args.iterations} iterations {solve_s:.1f} s (compile included), "
          f"exploitability {e:.15g}, value {v:.15g}", flush=True)
    rel = {k: rel_diff(rec["public"][k], rec["tabular"][k]) for k in ("exploitability", "value")}
    rec.update(same_iterations_rel=rel, same_iterations_pass=max(rel.values()) <= PASS_REL)

    # The public average policy in the tabular form, by information-set name.
    policy = cfrjax.average_policy(pub, ps)
    with tempfile.TemporaryDirectory() as d:
        cfrjax.save_policy(os.path.join(d, "public.npz"), pub, policy)
        tab_policy = cfrjax.load_policy(os.path.join(d, "public.npz"), tab, dtype="float64")
    prof = dict(public_exploitability=float(cfrjax.exploitability(pub, policy)),
                public_value=float(cfrjax.expected_value(pub, policy)),
                tabular_exploitability=float(cfrjax.exploitability(tab, tab_policy)),
                tabular_value=float(cfrjax.expected_value(tab, tab_policy)))
    rel = {k: rel_diff(prof[f"public_{k}"], prof[f"tabular_{k}"]) for k in ("exploitability", "value")}
    rec.update(same_profile=prof, same_profile_rel=rel, same_profile_pass=max(rel.values()) <= PASS_REL,
               host_peak_bytes=host_peak_bytes(), device_peak_bytes=peak_memory_bytes(), **env)
    print(f"same iterations: relative difference {rec['same_iterations_rel']}; same profile: {rel} "
          f"({'pass' if rec['same_profile_pass'] else 'FAIL'} at {PASS_REL:g})", flush=True)
    append_records(args.out, [rec])
    return 0 if rec["same_profile_pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
