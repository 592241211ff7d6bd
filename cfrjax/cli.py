"""The `cfrjax` command line (thin: parses, calls the public API, prints).

    cfrjax solve GAME [--iterations N] [--rule cfr|cfr+] [--order simultaneous|alternating]
                      [--averaging uniform|linear] [--dtype float32|float64]
                      [--eval-every K] [--chance folded|explicit] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def _parser() -> argparse.ArgumentParser:
    from cfrjax.rules import AVERAGING, DTYPES, ORDERS, RULES

    p = argparse.ArgumentParser(prog="cfrjax", description="Solve two-player zero-sum games with CFR in JAX.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="solve a game and report exploitability")
    s.add_argument("game", help="OpenSpiel game string, a saved .npz game, or a poker .toml spec")
    s.add_argument("--iterations", type=int, default=1000)
    s.add_argument("--rule", choices=RULES, default="cfr+")
    s.add_argument("--order", choices=ORDERS, default="simultaneous")
    s.add_argument("--averaging", choices=AVERAGING, default="linear")
    s.add_argument("--dtype", choices=DTYPES, default="float32")
    s.add_argument("--chance", choices=("folded", "explicit"), default="folded")
    s.add_argument("--eval-every", type=int, default=None,
                   help="evaluate exploitability every K iterations (default: 10 evaluations)")
    s.add_argument("--save-game", default=None, help="also write the compiled game to this .npz path")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")
    return p


def _solve(args) -> dict:
    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # an application may flip it; the library never does
    import cfrjax
    from cfrjax.solve import _solve as solve_executable
    from tqdm import tqdm

    if args.iterations <= 0:
        raise ValueError(f"--iterations must be positive, got {args.iterations}")
    t0 = time.perf_counter()
    game = cfrjax.load_game(args.game, chance=args.chance)
    build_s = time.perf_counter() - t0
    if args.save_game:
        cfrjax.save_game(game, args.save_game)
    state = cfrjax.init(game, rule=args.rule, order=args.order, averaging=args.averaging, dtype=args.dtype)
    every = args.eval_every or max(1, args.iterations // 10)
    if every <= 0:
        raise ValueError(f"--eval-every must be positive, got {every}")
    chunks = [every] * (args.iterations // every) + ([args.iterations % every] if args.iterations % every else [])

    t0 = time.perf_counter()
    for size in sorted(set(chunks)):
        solve_executable.lower(game, state, size, None).compile()
    evaluate = jax.jit(lambda g, s: (cfrjax.exploitability(g, cfrjax.average_policy(g, s)),
                                     cfrjax.expected_value(g, cfrjax.average_policy(g, s))))
    evaluate.lower(game, state).compile()
    compile_s = time.perf_counter() - t0

    solve_s = 0.0
    expl = value = float("nan")
    bar = tqdm(total=args.iterations, unit="it", file=sys.stderr, disable=None, dynamic_ncols=True)
    for size in chunks:
        t0 = time.perf_counter()
        state = jax.block_until_ready(cfrjax.solve(game, state, size))
        solve_s += time.perf_counter() - t0
        e, v = evaluate(game, state)
        expl, value = float(e), float(v)
        bar.update(size)
        bar.set_postfix(expl=f"{expl:.3e}", it_s=f"{int(state.iteration) / solve_s:,.0f}")
    bar.close()
    sizes = game.sizes()
    return dict(game=game.name, rule=args.rule, order=args.order, averaging=args.averaging, dtype=args.dtype,
                chance=args.chance, iterations=int(state.iteration), exploitability=expl, value=value,
                nodes=sizes["nodes"], infosets=sizes["infosets"], slots=sizes["slots"], depth=sizes["depth"],
                device=str(jax.devices()[0].device_kind), backend=jax.default_backend(), jax=jax.__version__,
                build_s=round(build_s, 4), compile_s=round(compile_s, 4), solve_s=round(solve_s, 4),
                ms_per_iter=1e3 * solve_s / max(1, int(state.iteration)))


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from cfrjax.spec import SpecError

    try:
        result = _solve(args)
    except (SpecError, ValueError, FileNotFoundError, ImportError) as e:
        print(f"cfrjax: error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['game']}: {result['rule']} {result['order']} {result['averaging']} {result['dtype']}, "
              f"{result['iterations']} iterations")
        print(f"  exploitability {result['exploitability']:.6e}   value (player 0) {result['value']:.6f}")
        print(f"  {result['nodes']:,} nodes, {result['infosets']:,} infosets, {result['slots']:,} slots, "
              f"depth {result['depth']}")
        print(f"  compile {result['compile_s']:.2f} s, solve {result['solve_s']:.3f} s "
              f"({result['ms_per_iter']:.4f} ms/iter) on {result['device']}")
    return 0
