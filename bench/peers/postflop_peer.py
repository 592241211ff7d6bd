"""postflop-solver (b-inary/postflop-solver, Rust, AGPL-3.0) as a benchmark peer, through our driver.

Nothing of postflop-solver is in this repository: `--postflop-solver DIR` names the user's
checkout; `bench/peers/postflop_driver/` (ours: Cargo.toml + src/main.rs) is copied to a build
directory outside the repository (default `~/.cache/cfrjax-peers/postflop-driver`), its
dependency path set to DIR, and built with `cargo build --release`. Without DIR (or without
cargo, or when the build fails) the arm is skipped with the reason.

    python bench/compare.py --peers postflop --postflop-solver ~/src/postflop-solver
    python bench/peers/postflop_peer.py --postflop-solver DIR [--spots river turn] [--turn-iterations 100]
    python bench/peers/postflop_peer.py --postflop-solver DIR --spots turn_sizes --cfrjax-rules --append

Offline builds: cargo must find the crates postflop-solver needs (regex, once_cell, rayon).
`--cargo-source-dir DIR` writes `.cargo/config.toml` in the build directory replacing
crates.io by that directory source (e.g. Debian's `/usr/share/cargo/registry`); the checkout's
version requirements must then be ones that directory satisfies. `--rustflags` is passed as
RUSTFLAGS (default `RUSTFLAGS`: `-C target-cpu=native`, as its author builds it, and
`-A dangerous_implicit_autorefs`, which a current rustc needs for its sources); every record
names the rustflags of its driver.

What it runs (the driver's header has the details): the spot of a cfrjax spec (board, pot,
stack - pot/2 behind, full ranges, its bet sizes as postflop-solver's strings: fractions as
"%" sizes, or the spec's `[betting]` strings per street and player with donk sizes and the
all-in / merging thresholds; raises only where the spec has no raise cap, postflop-solver has
none; the spec's `[rake]` passed as its rake rate and cap), N iterations of postflop-solver's
DCFR (alternating, float32, its own discounting) on
1 and 2 threads; then the same spot in cfrjax's public-tree form on the CPU (CFR+ and DCFR,
float32 iterations as cfrjax runs them by default, evaluated in float64).

Spots (`SPOTS`): `river` (`hunl_river_full`), `turn` (`hunl_turn_full`), and `turn_sizes`
(`spots/hunl_turn_sizes.toml`, not shipped: bets "50%, 100%", raises "2.5x", add-all-in
threshold 1.5, full ranges on the turn Ks Js Th 7d, pot 20, 100 behind).

Units: postflop-solver's `compute_exploitability` is (BR_OOP + BR_IP)/2 in chips (cfrjax's
`exploitability`); `compute_current_ev` already subtracts the half pot; the per-hand
`expected_values` after `finalize` include the half pot each player put in (subtract pot/2:
10 for pot 20). Its player 0 is OOP, the first to act: cfrjax's player 0.

Same-game check (`CHECK_SPOTS`: river and turn_sizes): the driver dumps postflop-solver's average
strategy; it is loaded into cfrjax's public form (nodes matched by betting history, action
names and amounts, hands by their two cards) and evaluated there in float64: its value and
both best-response values must equal postflop-solver's own (float32) numbers within
`tol_chips` (default 1e-5 chips = 5e-7 of the pot). Every node and action must match, so
the check also says the two trees are the same. Why that tolerance: its values are float32 sums over the 1,081 x 1,081 hand pairs
(terms up to 110 chips, normalized by ~1.1M combinations), and its per-hand EVs carry the
half pot (10 chips, float32 ulp ~1e-6); measured gaps are ~4e-8 chips (values, best
responses) and ~1.4e-7 (value through `expected_values`), so 1e-5 leaves room for other
orders of summation (threads) while staying 20x below the 1,000-iteration exploitability.

Raked spots (`river_rake`, `turn_rake`: `hunl_*_full_rake`, rate 0.05, cap 3): the game is not
zero-sum; its `compute_exploitability` is then ((BR_OOP - v_OOP) + (BR_IP - v_IP)) / 2 with
`v = compute_current_ev`, as cfrjax's `exploitability` of a raked game, and the check also
compares player 1's value (`value1`: `current_ev[1]` against `cfrjax.best_response.expected_values`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DRIVER_SRC = os.path.join(HERE, "postflop_driver")
DEFAULT_BUILD = os.path.join(os.path.expanduser("~"), ".cache", "cfrjax-peers", "postflop-driver")
#: The driver's default RUSTFLAGS: postflop-solver built for the host's processor, as its author
#: intends (`-C target-cpu=native`; generic x86-64 lacks AVX2 and ran 1.2-1.4x slower), and the
#: lint a current rustc needs silenced for its sources.
RUSTFLAGS = "-C target-cpu=native -A dangerous_implicit_autorefs"
SPOTS = {"river": "hunl_river_full", "turn": "hunl_turn_full", "turn_sizes": "hunl_turn_sizes",
         "river_rake": "hunl_river_full_rake", "turn_rake": "hunl_turn_full_rake",
         "turn_sizes_rake": "hunl_turn_sizes_rake"}
#: Spots whose spec is not shipped with cfrjax: spec name -> file.
SPEC_FILES = {name: os.path.join(HERE, "spots", name + ".toml") for name in ("hunl_turn_sizes", "hunl_turn_sizes_rake")}
#: Spots whose 1-thread run dumps its strategy for the same-game check.
CHECK_SPOTS = ("river", "turn_sizes", "river_rake", "turn_rake", "turn_sizes_rake")

sys.path.insert(0, HERE)
from public_policy import evaluate, history_code, policy_from_nodes  # noqa: E402  (shared with texassolver_peer)


# ---------------------------------------------------------------- building our driver

def build_driver(solver_dir: str | None, build_dir: str = DEFAULT_BUILD, cargo_source_dir: str | None = None,
                 rustflags: str | None = RUSTFLAGS, jobs: int = 1, log=print,
                 lock_only: bool = False) -> tuple[str | None, str | None]:
    """(path of the built driver, None) or (None, reason to skip); `rustflags` is passed as
    RUSTFLAGS (`None`: the environment's). `lock_only`: only write the build directory's
    Cargo.lock (`cargo generate-lockfile`) and return its path."""
    if not solver_dir:
        return None, "no --postflop-solver DIR given (a checkout of github.com/b-inary/postflop-solver)"
    solver_dir = os.path.abspath(os.path.expanduser(solver_dir))
    if not os.path.isfile(os.path.join(solver_dir, "Cargo.toml")):
        return None, f"{solver_dir}: no Cargo.toml (not a postflop-solver checkout)"
    cargo = shutil.which("cargo")
    if cargo is None:
        return None, "cargo not found"
    build_dir = os.path.abspath(os.path.expanduser(build_dir))
    if os.path.commonpath([build_dir, ROOT]) == ROOT:
        return None, f"build directory {build_dir} is inside the repository; give one outside"
    os.makedirs(os.path.join(build_dir, "src"), exist_ok=True)
    with open(os.path.join(DRIVER_SRC, "Cargo.toml")) as f:
        toml = f.read().replace("@POSTFLOP_SOLVER_DIR@", solver_dir.replace("\\", "/"))
    _write_if_changed(os.path.join(build_dir, "Cargo.toml"), toml)
    with open(os.path.join(DRIVER_SRC, "src", "main.rs")) as f:
        _write_if_changed(os.path.join(build_dir, "src", "main.rs"), f.read())
    if cargo_source_dir:
        os.makedirs(os.path.join(build_dir, ".cargo"), exist_ok=True)
        _write_if_changed(os.path.join(build_dir, ".cargo", "config.toml"),
                          '[source.crates-io]\nreplace-with = "local"\n\n'
                          f'[source.local]\ndirectory = "{cargo_source_dir}"\n')
    env = dict(os.environ)
    if rustflags:
        env["RUSTFLAGS"] = rustflags
    cmd = ([cargo, "generate-lockfile"] if lock_only else [cargo, "build", "--release", "-j", str(jobs)]) \
        + (["--offline"] if cargo_source_dir else [])
    log(f"postflop: building driver in {build_dir}: {' '.join(cmd)}")
    out = subprocess.run(cmd, cwd=build_dir, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        return None, f"cargo build failed: {out.stderr.strip()[-1500:]}"
    if lock_only:
        return os.path.join(build_dir, "Cargo.lock"), None
    exe = os.path.join(build_dir, "target", "release", "cfrjax-postflop-driver")
    return (exe, None) if os.path.isfile(exe) else (None, f"{exe} missing after the build")


def _write_if_changed(path, text):
    if os.path.isfile(path):
        with open(path) as f:
            if f.read() == text:
                return
    with open(path, "w") as f:
        f.write(text)


def solver_version(solver_dir: str) -> dict:
    v = {}
    try:
        with open(os.path.join(solver_dir, "Cargo.toml")) as f:
            for line in f:
                if line.startswith("version"):
                    v["postflop-solver"] = line.split("=")[1].strip().strip('"')
                    break
    except OSError:
        pass
    try:
        rc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
        v["rustc"] = rc
    except OSError:
        pass
    return v


# ---------------------------------------------------------------- the spot

def spec_file(spec_name: str) -> str:
    """The spec file of a spot: a path to a `.toml` file as given, else `SPEC_FILES`, else
    the shipped `cfrjax/specs/<name>.toml`."""
    if spec_name.endswith(".toml"):
        return spec_name
    return SPEC_FILES.get(spec_name) or os.path.join(ROOT, "cfrjax", "specs", spec_name + ".toml")


def spot_of_spec(spec_name: str, combos: bool = False, range_strings: bool = False) -> dict:
    """Driver arguments for a cfrjax poker spec (`spec_file`), after checking the spec is one
    the driver can build: full ranges, whole chips, raises only without a raise cap.
    `combos=True` also takes a spec with other ranges: the hands cfrjax deals each player
    (with their weights) become the driver's `range0`/`range1` strings of single combos
    ("AsKh,QdQc:0.5,...", postflop-solver's syntax; builds cfrjax's game to read them).
    `range_strings=True` instead passes the spec's `range0`/`range1` strings as they are
    (postflop-solver parses the same notation, "TT+,AJs+,KQo"; no game is built: for flops),
    so a caller must compare the hand counts (the driver's `num_hands`) with cfrjax's.

    `bets` / `raises`: the sizes of player 0 on the spot's first street (postflop-solver's
    strings); `sizes_at`: `(street, player, bets, raises)` of every other cell that differs;
    `donk`: street -> donk sizes; `thresholds`: the non-zero all-in / merging thresholds."""
    from cfrjax.games.poker import load_poker_config
    from cfrjax.games.poker.betting import PLAYERS, STREETS, THRESHOLDS
    path = spec_file(spec_name)
    cfg = load_poker_config(path)
    rules = cfg.bet_sizes
    problems = []
    full = cfg.random_hands is None and all(r in (None, "any") for r in (cfg.range0, cfg.range1))
    if not full and not combos and not (range_strings and cfg.random_hands is None):
        problems.append("ranges are not full")
    if cfg.raise_cap not in (0, None):
        problems.append(f"raise_cap {cfg.raise_cap} (postflop-solver caps raises only by the stack)")
    if cfg.pot != int(cfg.pot) or cfg.stack - cfg.pot / 2 != int(cfg.stack - cfg.pot / 2):
        problems.append("pot or stack behind not whole chips")
    if problems:
        raise ValueError(f"{spec_name}: {', '.join(problems)}: not the driver's spot")
    text = lambda sizes: ",".join(str(x) for x in sizes)  # noqa: E731
    cells = {(s, p): (text(rules.bets[2 * STREETS.index(s) + k]),
                      "" if cfg.raise_cap == 0 else text(rules.raises[2 * STREETS.index(s) + k]))
             for s in cfg.streets for k, p in enumerate(PLAYERS)}
    bets, raises = cells[(cfg.street, "oop")]
    pot, behind = int(cfg.pot), int(cfg.stack - cfg.pot / 2)
    spot = dict(spec=spec_name, board=cfg.board, pot=pot, stack=int(cfg.stack), behind=behind, bets=bets,
                raises=raises, sizes_at=[[s, p, *c] for (s, p), c in cells.items() if c != (bets, raises)],
                donk={s: text(rules.donks[STREETS.index(s)]) for s in cfg.streets
                      if s != "flop" and rules.donks[STREETS.index(s)] is not None},
                thresholds={k: getattr(rules, k) for k in THRESHOLDS if getattr(rules, k)},
                spec_path=os.path.relpath(path, ROOT),
                **({"rake_rate": float(cfg.rake_rate), "rake_cap": float(cfg.rake_cap)} if cfg.raked else {}))
    if not full and range_strings:
        spot.update({f"range{p}": r for p, r in enumerate((cfg.range0, cfg.range1)) if r not in (None, "any")})
    elif not full:
        spot.update(range0=combo_range(spec_name, 0), range1=combo_range(spec_name, 1))
    return spot


def combo_range(spec_name: str, player: int) -> str:
    """The hands cfrjax's public form of the spec deals `player`, as a postflop-solver range
    string of single combos, weights other than 1 after a colon."""
    import cfrjax
    game = cfrjax.load_game(spec_file(spec_name), form="public")
    return combo_string(game.labels.hand_names, np.asarray(game.weights, np.float64)[player])


def combo_string(hand_names, weights) -> str:
    """Hands (cfrjax's names, "AsKh") and their weights as a postflop-solver range string of
    single combos, the higher rank first ("QdAc" is refused), weights other than 1 after a
    colon, hands of weight 0 left out."""
    order = "23456789TJQKA"

    def high_first(n):
        a, b = n[:2], n[2:]
        return a + b if order.index(a[0]) >= order.index(b[0]) else b + a
    return ",".join(high_first(n) + ("" if x == 1 else f":{x:.9g}") for n, x in zip(hand_names, weights) if x > 0)



def run_measured(cmd: list, env: dict | None = None, timeout: float | None = None) -> dict:
    """Run `cmd` to its end: `rc`, `stdout`, `stderr` (text) and `wall_s` (from the start to
    the exit; a run past `timeout` seconds is killed, `rc` -9). No peak RSS here: `wait4`'s
    ru_maxrss of a child that Python starts by vfork counts the parent's memory, so each
    program reports its own VmHWM."""
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        rc, so, se = out.returncode, out.stdout, out.stderr
    except subprocess.TimeoutExpired as e:
        so, se = (x.decode() if isinstance(x, bytes) else x or "" for x in (e.stdout, e.stderr))
        rc, se = -9, se + f"\n(killed after {timeout} s)"
    return dict(rc=rc, stdout=so, stderr=se, wall_s=time.perf_counter() - t0)


def run_driver(exe: str, spot: dict, iterations: int, threads: int, dump: str | None = None,
               eval_every: int = 0, extra=(), prefix=()) -> dict:
    """One driver run (its JSON record, plus `command` and `process_wall_s`: `run_measured`).
    `extra`: more driver arguments (`--target`, `--max-seconds`); `prefix`: a command to run
    it under (`taskset -c 0`)."""
    cmd = [exe, "--board", spot["board"], "--pot", str(spot["pot"]), "--stack", str(spot["behind"]),
           "--bets", spot["bets"], "--iterations", str(iterations), "--threads", str(threads)]
    if spot.get("raises"):
        cmd += ["--raises", spot["raises"]]
    for cell in spot.get("sizes_at", ()):
        cmd += ["--sizes-at", *cell]
    for street, sizes in spot.get("donk", {}).items():
        cmd += [f"--{street}-donk", sizes]
    for k, v in spot.get("thresholds", {}).items():
        cmd += ["--" + k.replace("_", "-"), repr(float(v))]
    for p in (0, 1):
        if spot.get(f"range{p}"):
            cmd += [f"--range{p}", spot[f"range{p}"]]
    if eval_every:
        cmd += ["--eval-every", str(eval_every)]
    if "rake_rate" in spot:
        cmd += ["--rake-rate", repr(spot["rake_rate"]), "--rake-cap", repr(spot["rake_cap"])]
    if dump:
        cmd += ["--dump-strategy", dump]
    cmd += [str(x) for x in extra]
    out = run_measured(list(prefix) + cmd)
    if out["rc"] != 0:
        raise RuntimeError(f"driver failed: {out['stderr'].strip()[-1000:]}")
    rec = json.loads(out["stdout"].strip().splitlines()[-1])
    rec["process_wall_s"] = out["wall_s"]
    shown = [c if len(c) < 400 else f"<{c.count(',') + 1} combos>" for c in cmd[1:]]
    rec["command"] = " ".join(list(prefix) + ["cfrjax-postflop-driver"] + [f'"{c}"' if " " in c or not c else c
                                                                           for c in shown])
    return rec


# ---------------------------------------------------------------- its strategy in cfrjax

def _code(history: list[str]) -> str:
    """postflop-solver history labels -> cfrjax public node code ('k.b10', 'k.k/2s/k.b20')."""
    return history_code(history)


def strategy_to_cfrjax(game, dump_path: str) -> np.ndarray:
    """postflop-solver's dumped average strategy as a cfrjax public-form policy `[S, H]` (float64).
    Its action "allin X" is cfrjax's "all-in X" (both: street total X)."""
    def node(line):
        n = json.loads(line)
        n["actions"] = [a.replace("allin ", "all-in ") for a in n["actions"]]
        return n

    with open(dump_path) as f:
        head = json.loads(f.readline())
        return policy_from_nodes(game, head["hands"], (node(line) for line in f), peer="postflop-solver")


def same_game_check(game, rec: dict, dump_path: str, tol_chips: float = 1e-5) -> dict:
    """Evaluate postflop-solver's strategy in cfrjax (float64) against its own numbers."""
    ev = evaluate(game, strategy_to_cfrjax(game, dump_path))
    theirs = dict(value=rec["current_ev"][0], br0=rec["mes_ev"][0], br1=rec["mes_ev"][1],
                  exploitability=rec["exploitability"],
                  value_from_expected_values=rec["expected_value_with_bias"][0] - rec["pot"] / 2)
    if "rake_rate" in rec:   # not zero-sum: player 1's value too
        theirs["value1"] = rec["current_ev"][1]
    ours = dict(ev, value_from_expected_values=ev["value"])
    gaps = {k: abs(ours[k] - theirs[k]) for k in ours}
    return dict(kind="same_game_check", peer="postflop-solver", spot=rec["spot"], iterations=rec["iterations"],
                threads=rec["threads"], postflop_solver=theirs, cfrjax_float64=ours, gaps_chips=gaps,
                tol_chips=tol_chips, ok=bool(max(gaps.values()) <= tol_chips),
                note="postflop-solver's average strategy evaluated by cfrjax's public form in float64; "
                     "br0/br1 are best-response values of OOP/IP (cfrjax convention: pot/2 subtracted)")


# ---------------------------------------------------------------- cfrjax on the same spot

def cfrjax_spot(spec_name: str, rule: str, iterations: int, repeats: int, dtype: str = "float32") -> dict:
    import jax
    import cfrjax
    sys.path.insert(0, os.path.dirname(HERE))
    from common import environment, time_solve
    t0 = time.perf_counter()
    game = cfrjax.load_game(spec_file(spec_name))
    build_s = time.perf_counter() - t0
    state = cfrjax.init(game, rule=rule, dtype=dtype)
    t = time_solve(game, state, iterations, repeats=repeats)
    out = cfrjax.solve(game, state, iterations)
    out = out[0] if isinstance(out, tuple) else out
    expl, value = cfrjax.evaluate(game, out)
    env = environment()
    cfg = state.config if hasattr(state, "config") else None
    return dict(backend="cfrjax", spot=spec_name, form=cfrjax.forms.form_name(game), rule=rule,
                order=getattr(cfg, "order", "simultaneous"), averaging=getattr(cfg, "averaging", None),
                precision=f"{dtype} iterations, float64 evaluation", threads="XLA CPU (all cores)",
                device=f"{env['backend']} ({env['device']}, {env['cpu_count']} cores)",
                versions=dict(jax=jax.__version__, commit=env["commit"]), build_s=build_s,
                exploitability=float(expl), value=float(value), **t,
                command=f"python bench/compare.py --peers postflop  # cfrjax arm: load_game({spec_name!r}), "
                        f"{rule} {dtype}, {iterations} iterations x {repeats} repeats")


# ---------------------------------------------------------------- the arm

def compare_main(args) -> int:
    out_path = os.path.join(ROOT, "bench", "results", "peers_postflop_cpu.jsonl")
    return run_arm(args.postflop_solver, out_path, river_iterations=args.peer_iterations or 1000,
                   cargo_source_dir=getattr(args, "cargo_source_dir", None),
                   rustflags=os.environ.get("RUSTFLAGS") or RUSTFLAGS)


def run_arm(solver_dir, out_path, spots=("river", "turn"), river_iterations=1000, turn_iterations=100,
            threads=(1, 2), cargo_source_dir=None, rustflags=None, build_dir=DEFAULT_BUILD,
            cfrjax_rules=("cfr+", "dcfr"), append=False,
            cmd="python bench/compare.py --peers postflop --postflop-solver DIR") -> int:
    """Run the spots; `append`: add the records to `out_path` instead of rewriting it."""
    exe, why = build_driver(solver_dir, build_dir, cargo_source_dir, rustflags)
    records = skipped_records("postflop-solver", "postflop", exe, why, cmd)
    failed = False
    vers = solver_version(os.path.abspath(os.path.expanduser(solver_dir))) if exe else {}
    for spot_name, spec, spot, T in spot_runs(spots, river_iterations, turn_iterations):
        if exe:
            for th in threads:
                dump = f"/tmp/cfrjax_postflop_{spot_name}_{os.getpid()}.jsonl" \
                    if (spot_name in CHECK_SPOTS and th == 1) else None
                rec = run_driver(exe, spot, T, th, dump=dump)
                rec.update(backend="postflop-solver", spot=spec, form="its own tree (range vectors, float32)",
                           rustflags=rustflags,
                           device=f"CPU ({os.cpu_count()} cores), {th} thread" + ("s" if th > 1 else ""),
                           versions=vers, pot=spot["pot"], board=spot["board"], behind=spot["behind"],
                           bets=spot["bets"],
                           **{k: spot[k] for k in ("raises", "sizes_at", "donk", "thresholds") if spot.get(k)},
                           **{k: spot[k] for k in ("rake_rate", "rake_cap") if k in spot},
                           value_cfrjax_convention=rec["expected_value_with_bias"][0] - spot["pot"] / 2,
                           units="exploitability: (BR_OOP+BR_IP)/2 chips; current_ev: pot/2 subtracted; "
                                 "expected_value_with_bias: includes pot/2 (subtract it for cfrjax's value)")
                records.append(rec)
                print(f"postflop: {spot_name} {th} thread(s): {rec['ms_per_iter']:.4f} ms/iter, exploitability "
                      f"{rec['exploitability']:.3e} chips, value {rec['current_ev'][0]:.6f}", flush=True)
                if dump:
                    chk = check_record(same_game_check, spec, rec, dump, cmd, "postflop")
                    records.append(chk)
                    failed |= not chk["ok"]
        records += cfrjax_arm(spec, spot_name, cfrjax_rules, T)
    write_records(out_path, records, "postflop", append=append)
    return 1 if failed else 0


def cfrjax_arm(spec, spot_name, rules, T) -> list[dict]:
    """cfrjax's records on the spot, one per rule (`cfrjax_spot`; 3 repeats on the river)."""
    out = []
    for rule in rules:
        c = cfrjax_spot(spec, rule, T, repeats=3 if spot_name == "river" else 1)
        out.append(c)
        print(f"cfrjax: {spot_name} {rule}: {c['ms_per_iter']:.4f} ms/iter, exploitability "
              f"{c['exploitability']:.3e}, value {c['value']:.6f}", flush=True)
    return out


def skipped_records(backend, label, exe, why, cmd) -> list[dict]:
    """A run's first records: one saying why the peer was skipped when `exe` is None."""
    if exe is not None:
        return []
    print(f"{label}: skipped:", why, flush=True)
    return [dict(backend=backend, skipped=why, command=cmd)]


def spot_runs(spots, river_iterations, turn_iterations, spot_of=None):
    """`(spot name, spec name, spot, iterations)` of each spot to run: `SPOTS`, read by
    `spot_of` (default `spot_of_spec`; a peer may add its own fields)."""
    spot_of = spot_of or spot_of_spec
    for name in spots:
        yield name, SPOTS[name], spot_of(SPOTS[name]), river_iterations if name.startswith("river") else turn_iterations


def check_record(check, spec, rec, dump, cmd, label, **kw) -> dict:
    """`check(cfrjax.load_game(spec), rec, dump, **kw)` (a peer's same-game check of the run
    that wrote `dump`) as a record with the command, printed; the dump is removed."""
    import cfrjax

    chk = check(cfrjax.load_game(spec_file(spec)), rec, dump, **kw)
    chk["command"] = cmd
    print(f"{label} check:", json.dumps(chk), flush=True)
    os.remove(dump)
    return chk


def write_records(out_path, records, label, append=False) -> None:
    """The run's records as JSONL (one file per peer, rewritten by each run; `append`: added)."""
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "a" if append else "w") as f:
        for r in records:
            f.write(json.dumps(r, default=float) + "\n")
    print(f"{label}: {len(records)} records -> {out_path}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--postflop-solver", default=None, help="postflop-solver checkout")
    ap.add_argument("--spots", nargs="+", default=["river", "turn"], choices=list(SPOTS))
    ap.add_argument("--river-iterations", type=int, default=1000)
    ap.add_argument("--turn-iterations", type=int, default=100)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--cfrjax-rules", nargs="*", default=["cfr+", "dcfr"])
    ap.add_argument("--build-dir", default=DEFAULT_BUILD)
    ap.add_argument("--cargo-source-dir", default=None, help="directory source replacing crates.io (offline)")
    ap.add_argument("--rustflags", default=RUSTFLAGS)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "peers_postflop_cpu.jsonl"))
    ap.add_argument("--append", action="store_true", help="add the records to --out instead of rewriting it")
    a = ap.parse_args(argv)
    import jax
    jax.config.update("jax_enable_x64", True)
    cmd = "python bench/peers/postflop_peer.py " + " ".join(
        "DIR" if x == a.postflop_solver else x for x in (sys.argv[1:] if argv is None else argv))
    return run_arm(a.postflop_solver, a.out, a.spots, a.river_iterations, a.turn_iterations, tuple(a.threads),
                   a.cargo_source_dir, a.rustflags, a.build_dir, tuple(a.cfrjax_rules), a.append, cmd)


if __name__ == "__main__":
    sys.exit(main())
