"""TexasSolver (bupticybee/TexasSolver, C++, AGPL-3.0) as a benchmark peer: its console solver.

Nothing of TexasSolver is in this repository: `--texassolver DIR` names the user's checkout of
its `console` branch (the no-Qt build; `master` is the Qt GUI), built outside the repository:

    git clone -b console https://github.com/bupticybee/TexasSolver DIR
    cmake -S DIR -B DIR/build -DCMAKE_BUILD_TYPE=Release     # Release: its -O3 (CMAKE_CXX_FLAGS is -fPIC -fopenmp)
    cmake --build DIR/build --target console_solver -j 1

The arm runs `DIR/build/console_solver` (or `DIR/console_solver`, `DIR/install/console_solver`;
`--texassolver-exe` names another) with `-r DIR/resources -m holdem -i SCRIPT`. Without DIR or
without the binary it is skipped with the reason.

    python bench/compare.py --peers texassolver --texassolver DIR
    python bench/peers/texassolver_peer.py --texassolver DIR [--spots river turn] [--turn-iterations 100]

Hand-rank dictionary: the console build reads `resources/compairer/card5_dic_sorted.txt`
(2,598,960 lines "Ks-Qs-Js-Ts-9s,rank", rank 1 the best, 7,462 classes). The snapshot of the
repository this project used stores that file without its content (its largest files are
absent); when it is missing the arm writes it into DIR/resources/compairer from TexasSolver's
own compact table `resources/compairer/card5_dic_zipped.bin` (master branch; read from the
checkout's git objects, `origin/master` or `master`, when the console branch lacks it). That
table (`FiveCardsStrength` in master's `Dic5Compairer.cpp`: flush hands keyed by their card
bits, the others by their rank counts) was made from the text file, so the ranks are
TexasSolver's; the same-game check would expose a wrong rank (cfrjax has its own evaluator).

What it runs: the spot of a cfrjax spec as a TexasSolver script. `set_pot` (pot), then
`set_effective_stack` (stack - pot/2 behind; TexasSolver adds the half pot back), the board,
both ranges every combo (all 169 classes, weight 1), `set_bet_sizes {oop,ip},{turn,river},bet,50,100`
(and `oop,river,donk,50,100` on the turn spot: TexasSolver calls OOP's river lead after OOP
called the turn a donk bet and takes its sizes from `donk`), no raise sizes (no raises), no
`allin` (no all-in added), `set_allin_threshold 100` (its default 0.67 turns a bet taking the
commitment over 67% of the starting stack into an all-in: the turn spot's 60-chip river pot bet
would become 80), `set_accuracy 0` (no early stop), `set_use_isomorphism 1` (its sample's
setting; no suit pair is isomorphic on these boards), `set_print_interval N-1` so that its only
exploitability inside the loop is printed after iteration N, then `dump_result` (average
strategy, JSON). Its algorithm (`PCfrSolver` + `DiscountedCfrTrainable`, console branch):
alternating updates (player 0 then 1 in each iteration), float32, DCFR regrets (alpha 1.5,
beta 0.5), average strategy `cum = 0.9 cum + (t/(t+1))^2 sigma_t` (not reach-weighted: an
exponentially decayed average, not DCFR's). Threads: OpenMP over the deal of a chance node
only; the river spot has none (PCfrSolver's "do not use multithread in river"), so its
2-thread run is the 1-thread run; the turn spot splits the 48 river cards.

Timing: ms/iter is TexasSolver's own clock around its iteration loop (`time used`, ms
resolution, excluding the initial and final best-response passes, the dictionary load and the
tree build) / N; each timing is run `--repeats` times (river 3, turn 1) and the median kept
(`ms_per_iter_runs` has them all). Each output line is also time-stamped here: `startup_s`
(process start to its first best response: ~9 s of dictionary load, the tree build,
trainables), `eval_s` (its final best-response pass), `wall_s`; `cpu_s` and `max_rss_mib` are
the whole process's (wait4), `load_avg_1m_before` the machine's load when it started.

Units: TexasSolver's players are 0 = IP, 1 = OOP (OOP acts first; cfrjax's player 0). Its
payoffs are net chips (a win gains the opponent's commitment, half pot included: cfrjax's
convention). `player p exploitability X` is p's best-response value in chips (BestResponse::
getBestReponseEv: per-hand values weighted by the hand's probability over compatible pairs);
`Total exploitability Y precent` is (BR_IP + BR_OOP) / 2 / pot * 100 (printExploitability),
i.e. cfrjax's exploitability in % of the starting pot (`exploitability_pct_pot`; the records'
`exploitability` is the same in chips, from the two best-response values). The console solver
does not print the profile's value.

Same-game check (river and turn): its dumped average strategy is loaded into cfrjax's public
form (`public_policy.py`, shared with the postflop-solver arm: nodes matched by betting
history, hands by their two cards) and evaluated in float64. Both best-response values and
the exploitability (chips; and its printed % of pot) must equal TexasSolver's own float32
numbers within `tol_chips` (default 1e-4 chips = 5e-6 of the pot), and cfrjax's value of the
strategy must lie in [-BR_IP, BR_OOP] as TexasSolver reports them (any profile's value does).
Why that tolerance: TexasSolver accumulates in float32 (running sums of reach over up to 1,081
opponent hands, ~1e3, ulp 6e-5; payoffs up to 30 chips; the per-player total over 1,081
hands), errors of order 1e-6 chips. Measured: 3e-7 to 1.4e-6 at 1,000 river iterations, up to
6e-6 at 10 iterations, up to 3.7e-6 on the turn (in its game, below); 1e-4 is 16x the largest
and 11x below the river's 1,000-iteration exploitability (1.1e-3 chips), while a real
difference of game shows as 4e-2 to 2e-1 chips (the turn, below).

The turn is not the same game: TexasSolver weighs each dealt card reach / (52 - |board| - 2),
1/46 on a turn, where a pair of hands leaves 44 cards (raised in its issue #95, still open; its
author holds the two equivalent), so every river continuation counts 44/46 of its value
against the turn folds. The check records `same_game: false` with the gaps in cfrjax's game (0.04-0.08
chips at 100 iterations) and `ok` from cfrjax's game with the forest stakes scaled by 44/46
(`its_game`), which reproduces TexasSolver's numbers to ~4e-6 chips: same tree and hands
(the same work per iteration, so the timings compare), another payoff. Its turn
exploitability is in that game; `cfrjax_float64.exploitability` is its strategy's in the real
one. The river (no deal) is the same game.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT_DEFAULT = os.path.join(ROOT, "bench", "results", "peers_texassolver_cpu.jsonl")
DIC_TEXT = os.path.join("compairer", "card5_dic_sorted.txt")
DIC_BIN = "resources/compairer/card5_dic_zipped.bin"
RANKS = "23456789TJQKA"
SUITS = "cdhs"  # TexasSolver's card int: (rank - 2) * 4 + suit, c d h s = 0..3

sys.path.insert(0, HERE)
from public_policy import evaluate, policy_from_nodes  # noqa: E402  (shared with postflop_peer)
import postflop_peer  # noqa: E402  (its cfrjax arm and record writer)

SPOTS = postflop_peer.SPOTS  # the spots both peers run (`postflop_peer.spot_runs`)


# ---------------------------------------------------------------- the checkout and its build

def find_solver(ts_dir: str | None, exe: str | None = None) -> tuple[str | None, str | None, str | None]:
    """(console_solver path, resources dir, None) or (None, None, reason to skip)."""
    if not ts_dir:
        return None, None, ("no --texassolver DIR given (a checkout of github.com/bupticybee/TexasSolver, "
                            "branch console, built with cmake: see bench/peers/texassolver_peer.py)")
    ts_dir = os.path.abspath(os.path.expanduser(ts_dir))
    if not os.path.isdir(ts_dir):
        return None, None, f"{ts_dir}: no such directory"
    if os.path.commonpath([ts_dir, ROOT]) == ROOT:
        return None, None, f"{ts_dir} is inside the repository; give a checkout outside"
    cands = [exe] if exe else [os.path.join(ts_dir, *p) for p in
                               (("build", "console_solver"), ("console_solver",), ("install", "console_solver"))]
    found = next((c for c in cands if c and os.path.isfile(c) and os.access(c, os.X_OK)), None)
    if found is None:
        return None, None, (f"no console_solver binary ({', '.join(cands)}): build it with cmake -S {ts_dir} -B "
                            f"{ts_dir}/build -DCMAKE_BUILD_TYPE=Release && cmake --build {ts_dir}/build "
                            f"--target console_solver")
    res = next((r for r in (os.path.join(ts_dir, "resources"), os.path.join(ts_dir, "install", "resources"))
                if os.path.isdir(r)), None)
    if res is None:
        return None, None, f"{ts_dir}: no resources/ directory"
    return found, res, None


def ensure_dictionary(ts_dir: str, resources: str, log=print) -> str | None:
    """Make sure resources/compairer/card5_dic_sorted.txt exists; None or the reason it cannot."""
    path = os.path.join(resources, DIC_TEXT)
    if os.path.isfile(path) and os.path.getsize(path) > 0:
        return None
    blob, src = _dictionary_bin(ts_dir)
    if blob is None:
        return f"{path} missing and no {DIC_BIN} to make it from ({src})"
    log(f"texassolver: writing {path} from {src}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        f.writelines(dictionary_lines(blob))
    os.replace(path + ".tmp", path)
    with open(path + ".source", "w") as f:
        f.write(f"made by cfrjax bench/peers/texassolver_peer.py from {src}\n")
    return None


def _dictionary_bin(ts_dir: str) -> tuple[bytes | None, str]:
    p = os.path.join(ts_dir, DIC_BIN)
    if os.path.isfile(p):
        with open(p, "rb") as f:
            return f.read(), p
    for rev in ("origin/master", "master"):
        out = subprocess.run(["git", "-C", ts_dir, "cat-file", "blob", f"{rev}:{DIC_BIN}"], capture_output=True)
        if out.returncode == 0 and out.stdout:
            c = subprocess.run(["git", "-C", ts_dir, "rev-parse", rev], capture_output=True, text=True).stdout.strip()
            return out.stdout, f"git {rev} ({c}):{DIC_BIN}"
    return None, f"not in {ts_dir} nor in its git objects (origin/master, master)"


def dictionary_lines(blob: bytes):
    """TexasSolver's compact 5-card table (master's FiveCardsStrength::save layout: int32 n, n x
    (uint64 card bits, int32 rank) for flushes, then the same keyed by per-rank counts) ->
    the console branch's text lines "c1-c2-c3-c4-c5,rank" for all C(52,5) hands."""
    def table(off):
        n = int(np.frombuffer(blob, "<i4", 1, off)[0])
        rec = np.frombuffer(blob, np.dtype([("k", "<u8"), ("v", "<i4")]), n, off + 4)
        return dict(zip(rec["k"].tolist(), rec["v"].tolist())), off + 4 + 12 * n
    flush, off = table(0)
    other, off = table(off)
    if off != len(blob):
        raise ValueError(f"{DIC_BIN}: {len(blob) - off} bytes left after the two tables")
    names = [r + s for r in RANKS for s in SUITS]
    m0, m1 = 0x5555555555555, 0x3333333333333
    for combo in itertools.combinations(range(52), 5):
        bits = 0
        for c in combo:
            bits |= 1 << c
        if len({c & 3 for c in combo}) == 1:
            rank = flush[bits]
        else:
            h = (bits & m0) + ((bits >> 1) & m0)
            rank = other[(h & m1) + ((h >> 2) & m1)]
        yield "-".join(names[c] for c in combo) + f",{rank}\n"


def solver_version(ts_dir: str, exe: str) -> dict:
    v = {}
    def git(*a):
        return subprocess.run(["git", "-C", ts_dir, *a], capture_output=True, text=True).stdout.strip()
    if git("rev-parse", "HEAD"):
        v["TexasSolver"] = git("rev-parse", "HEAD")
        v["TexasSolver_branch"] = git("rev-parse", "--abbrev-ref", "HEAD")
        v["TexasSolver_commit_date"] = git("log", "-1", "--format=%cI")
    cache = os.path.join(os.path.dirname(exe), "CMakeCache.txt")
    if os.path.isfile(cache):
        with open(cache) as f:
            kv = dict(line.strip().split("=", 1) for line in f if "=" in line and not line.startswith(("#", "//")))
        cxx = kv.get("CMAKE_CXX_COMPILER:FILEPATH") or kv.get("CMAKE_CXX_COMPILER:STRING")
        v["build_type"] = kv.get("CMAKE_BUILD_TYPE:STRING")
        if cxx:
            try:
                out = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
                v["compiler"] = out.splitlines()[0]
            except (OSError, IndexError):
                v["compiler"] = cxx
    src = os.path.join(ts_dir, "resources", DIC_TEXT + ".source")
    if os.path.isfile(src):
        with open(src) as f:
            v["dictionary"] = f.read().strip()
    return v


# ---------------------------------------------------------------- the spot as a TexasSolver script

def spot_of_spec(spec_name: str) -> dict:
    """The TexasSolver settings of a shipped cfrjax poker spec (full ranges, no raises):
    postflop-solver's spot (the same checks), bet sizes without '%' and the streets played."""
    spot = postflop_peer.spot_of_spec(spec_name)
    if any(spot[k] for k in ("raises", "sizes_at", "donk", "thresholds")):
        raise ValueError(f"{spec_name}: raises, per-street sizes or thresholds: not the TexasSolver arm's spot "
                         "(its script gives bet sizes only)")
    if "rake_rate" in spot:
        raise ValueError(f"{spec_name}: a raked spot; this arm does not pass rake to TexasSolver")
    board = spot["board"].split()
    return dict(spot, board=" ".join(board), bets=spot["bets"].replace("%", ""),
                streets=["flop", "turn", "river"][len(board) - 3:])


FULL_RANGE = ",".join(RANKS[i] + RANKS[j] for i in range(12, -1, -1) for j in range(i, -1, -1))  # AA,AK,..,22


def script(spot: dict, iterations: int, threads: int, dump: str | None, print_interval: int | None = None,
           accuracy_pct: float = 0.0) -> str:
    """Its console script. `print_interval`: default N-1 (one exploitability print, after
    iteration N); `accuracy_pct`: its early stop (exploitability in % of the pot; 0: none)."""
    if iterations < 2:
        raise ValueError("TexasSolver's exploitability print needs iterations >= 2 (print interval N-1)")
    lines = [f"set_pot {spot['pot']}", f"set_effective_stack {spot['behind']}",
             "set_board " + ",".join(spot["board"].split()),
             f"set_range_ip {FULL_RANGE}", f"set_range_oop {FULL_RANGE}"]
    for street in spot["streets"]:
        for pl in ("oop", "ip"):
            lines.append(f"set_bet_sizes {pl},{street},bet,{spot['bets']}")
        if street == "river" and len(spot["streets"]) > 1:
            lines.append(f"set_bet_sizes oop,river,donk,{spot['bets']}")
    lines += ["set_allin_threshold 100", "build_tree", f"set_thread_num {threads}", f"set_accuracy {accuracy_pct:g}",
              f"set_max_iteration {iterations}", f"set_print_interval {print_interval or iterations - 1}",
              "set_use_isomorphism 1", "start_solve"]
    if dump:  # dump_rounds: streets below the root included (its chance nodes count one each)
        lines += [f"set_dump_rounds {len(spot['streets'])}", f"dump_result {dump}"]
    return "\n".join(lines) + "\n"


def run_solver(exe: str, resources: str, spot: dict, iterations: int, threads: int,
               dump: str | None = None) -> dict:
    """One console_solver run; its numbers in cfrjax's player order ([OOP, IP])."""
    work = tempfile.mkdtemp(prefix="cfrjax_texassolver_")
    try:
        spath = os.path.join(work, "input.txt")
        with open(spath, "w") as f:
            f.write(script(spot, iterations, threads, dump))
        cmd = [exe, "-i", spath, "-r", resources, "-m", "holdem"]
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        stamped = [(time.perf_counter() - t0, line.rstrip("\n")) for line in p.stdout]
        _, status, ru = os.wait4(p.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        p.returncode = rc
        wall = time.perf_counter() - t0
        text = "\n".join(line for _, line in stamped)
        if rc != 0:
            raise RuntimeError(f"console_solver exited {rc}: {text[-1500:]}")
        with open(spath) as f:
            script_text = f.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    iters = [(k, int(m.group(1))) for k, (_, line) in enumerate(stamped) if (m := re.match(r"Iter: (\d+)$", line))]
    if len(iters) < 2 or iters[-1][1] != iterations:
        raise RuntimeError(f"no exploitability after iteration {iterations} in its output: {text[-1500:]}")
    k0, k1 = iters[0][0], iters[-1][0]
    tail = stamped[k1:]
    br_ts = {}
    pct = used = None
    k_total = None
    for j, (_, line) in enumerate(tail):
        if m := re.match(r"player (\d) exploitability (\S+)$", line):
            br_ts[int(m.group(1))] = float(m.group(2))
        elif m := re.match(r"Total exploitability (\S+) precent$", line):
            pct, k_total = float(m.group(1)), j
        elif m := re.match(r"time used: (\S+)$", line):
            used = float(m.group(1))
    if len(br_ts) != 2 or pct is None or used is None:
        raise RuntimeError(f"could not read its final exploitability / time: {text[-1500:]}")
    br = [br_ts[1], br_ts[0]]  # cfrjax order: OOP (its player 1), IP (its player 0)
    m = re.search(r"Using (\d+) threads", text)
    return dict(solver="TexasSolver", algorithm="its DCFR (alpha 1.5, beta 0.5; average cum = 0.9 cum + "
                "(t/(t+1))^2 sigma, not reach-weighted), alternating",
                precision="float32", threads=threads, threads_reported=int(m.group(1)) if m else None,
                iterations=iterations, solve_s=used, ms_per_iter=1e3 * used / iterations,
                startup_s=stamped[k0][0], eval_s=tail[k_total][0] - tail[0][0], wall_s=wall,
                cpu_s=ru.ru_utime + ru.ru_stime, max_rss_mib=ru.ru_maxrss / 1024, load_avg_1m_before=load,
                exploitability=(br[0] + br[1]) / 2, exploitability_pct_pot=pct,
                exploitability_pct_pot_from_br=100 * (br[0] + br[1]) / 2 / spot["pot"],
                mes_ev=br, br_texassolver_players={"0 (IP)": br_ts[0], "1 (OOP)": br_ts[1]},
                num_hands=[_combos(spot)] * 2, script=script_text,
                command=" ".join(["console_solver", "-i", "SCRIPT", "-r", resources, "-m", "holdem"]))


def _proc_cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system, all threads) a running process has used (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def run_curve(exe: str, resources: str, spot: dict, max_iterations: int, threads: int, eval_every: int,
              target_pct: float = 0.0, max_solve_s: float = 0.0, prefix=()) -> dict:
    """One console_solver run printing its exploitability every `eval_every` iterations (its
    print interval: after iterations K+1, 2K+1, ...), for `bench/curves.py`.

    Evaluation is excluded from the times as follows. Its `time used` is its own clock from
    the loop's start to the checkpoint, so it includes the best-response passes of the
    earlier checkpoints; each pass is timed here from the output lines' arrival (the
    "-----" line printed before it to the "time used" line printed after it) and the earlier
    passes are subtracted: `solve_s` = time used - sum of earlier passes. CPU time: the
    process's (all threads), read from /proc/PID/stat at those lines (10 ms ticks), minus
    the start-up (up to the end of its first best response: dictionary load, tree build) and
    the passes. Stops at `target_pct` (its `set_accuracy`, % of the pot), after
    `max_iterations`, or, killed here, at the first checkpoint whose `solve_s` reaches
    `max_solve_s`. Its exploitability is in its own game: on a turn spot it weighs each river
    card 1/46 (see `its_game`)."""
    work = tempfile.mkdtemp(prefix="cfrjax_texassolver_")
    points, stopped = [], "max_iterations"
    try:
        spath = os.path.join(work, "input.txt")
        with open(spath, "w") as f:
            f.write(script(spot, max_iterations, threads, None, print_interval=eval_every, accuracy_pct=target_pct))
        cmd = list(prefix) + [exe, "-i", spath, "-r", resources, "-m", "holdem"]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started = cpu0 = dash = None
        it, br, evals_s, evals_cpu, tail = None, {}, 0.0, 0.0, []
        for line in p.stdout:
            ts, cpu, line = time.perf_counter() - t0, _proc_cpu_s(p.pid), line.rstrip("\n")
            tail = (tail + [line])[-30:]
            if line.startswith("Total exploitability") and started is None:
                started, cpu0 = ts, cpu
            elif line.startswith("-------------------"):
                dash = (ts, cpu)
            elif m := re.match(r"Iter: (\d+)$", line):
                it = int(m.group(1))
            elif m := re.match(r"player (\d) exploitability (\S+)$", line):
                br[int(m.group(1))] = float(m.group(2))
            elif (m := re.match(r"Total exploitability (\S+) precent$", line)) and dash is not None:
                pct = float(m.group(1))
            elif (m := re.match(r"time used: (\S+)$", line)) and dash is not None:
                used = float(m.group(1))
                solve_cpu = None if None in (cpu0, dash[1]) else dash[1] - cpu0 - evals_cpu
                points.append([it, used - evals_s, pct * spot["pot"] / 100, solve_cpu, [br.get(1), br.get(0)]])
                evals_s += ts - dash[0]
                evals_cpu += 0.0 if None in (cpu, dash[1]) else cpu - dash[1]
                dash = None
                if target_pct > 0 and pct <= target_pct:
                    stopped = "target"
                elif max_solve_s > 0 and points[-1][1] >= max_solve_s:
                    stopped = "max_solve_s"
                    p.terminate()  # our own child, by its handle
                    break
        _, status, ru = os.wait4(p.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        if rc != 0 and stopped != "max_solve_s":
            raise RuntimeError(f"console_solver exited {rc}: {chr(10).join(tail)[-1500:]}")
        if not points:
            raise RuntimeError(f"no exploitability in its output: {chr(10).join(tail)[-1500:]}")
        with open(spath) as f:
            script_text = f.read()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dict(solver="TexasSolver", threads=threads, stopped=stopped, startup_s=started,
                eval_s=evals_s, wall_s=wall, process_cpu_s=ru.ru_utime + ru.ru_stime, max_rss_mib=ru.ru_maxrss / 1024,
                curve=[q[:4] for q in points], best_response_values=[q[4] for q in points], script=script_text,
                command=" ".join(list(prefix) + ["console_solver", "-i", "SCRIPT", "-r", resources, "-m", "holdem"]))


def _combos(spot):
    n = 52 - len(spot["board"].split())
    return n * (n - 1) // 2


# ---------------------------------------------------------------- its strategy in cfrjax

def _label(action: str) -> str:
    """TexasSolver action string ('CHECK', 'BET 10.000000') -> the shared spelling ('check', 'bet 10')."""
    a = action.split()
    if a[0] in ("CHECK", "CALL", "FOLD") and len(a) == 1:
        return a[0].lower()
    if a[0] == "BET" and len(a) == 2:
        return f"bet {float(a[1]):g}"
    raise ValueError(f"TexasSolver action {action!r} has no cfrjax counterpart "
                     "(raises and all-ins are not in the spot)")


def dump_nodes(tree: dict, board: str = ""):
    """TexasSolver's dump_result JSON -> (hands per cfrjax player, decision nodes for public_policy).
    Its chance nodes list every card of the deck, the board's too (subtrees without strategies)."""
    hands = [None, None]
    nodes = []
    dead = set(board.split())

    def walk(node, hist):
        if node.get("node_type") == "chance_node":
            for card, child in node.get("dealcards", {}).items():
                if card not in dead:
                    walk(child, hist + [f"deal {card}"])
            return
        p = 1 - int(node["player"])
        st = node["strategy"]
        if hands[p] is None:
            hands[p] = list(st["strategy"])
        if len(st["strategy"]) != len(hands[p]):
            raise ValueError(f"node {hist}: {len(st['strategy'])} hands, {len(hands[p])} at the first node")
        nodes.append(dict(history=hist, player=p, actions=[_label(a) for a in st["actions"]],
                          strategy=np.array([st["strategy"][h] for h in hands[p]], np.float64).T))
        for a, child in node.get("childrens", {}).items():
            walk(child, hist + [_label(a)])

    walk(tree, [])
    return hands, nodes


def strategy_to_cfrjax(game, dump_path: str, board: str = "") -> np.ndarray:
    with open(dump_path) as f:
        tree = json.load(f)
    hands, nodes = dump_nodes(tree, board)
    return policy_from_nodes(game, hands, nodes, peer="TexasSolver")


def its_game(game, board: str):
    """cfrjax's public game weighted as TexasSolver weighs a dealt card: (game, factor).

    TexasSolver's chance nodes (PCfrSolver::chanceUtility, BestResponse::chanceBestReponse) give
    each card reach / `possible_deals` with possible_deals = 52 - |board| - 2 (46 on a turn),
    whereas a pair of hands leaves 52 - |board| - 4 cards (44): every value below the deal is
    scaled by 44/46 against the folds before it (its issue #95). cfrjax's turn form folds the
    1/44 into the forest's stakes; this copy scales them by 44/46. A river spot: unchanged."""
    nb = len(board.split())
    if nb == 5:
        return game, 1.0
    if nb != 4 or not getattr(game, "dealt", False):
        raise ValueError("its_game: turn spots in cfrjax's public form only")
    f = (52 - nb - 4) / (52 - nb - 2)
    return dataclasses.replace(game, forest_fold_payoff=game.forest_fold_payoff * f,
                               forest_showdown_stake=game.forest_showdown_stake * f), f


def _compare(ours: dict, theirs: dict, tol: float) -> tuple[dict, dict, bool]:
    gaps = {k: abs(ours["exploitability" if k == "exploitability_from_pct" else k] - v) for k, v in theirs.items()}
    lo, hi = -theirs["br1"], theirs["br0"]
    bracket = dict(low=lo, high=hi, value=ours["value"], ok=bool(lo - tol <= ours["value"] <= hi + tol))
    return gaps, bracket, bool(max(gaps.values()) <= tol and bracket["ok"])


def same_game_check(game, rec: dict, dump_path: str, tol_chips: float = 1e-4) -> dict:
    """Evaluate TexasSolver's average strategy in cfrjax (float64) against its own numbers.

    `same_game`: cfrjax's game reproduces them. `ok`: the game TexasSolver solves (`its_game`:
    cfrjax's on a river spot; on a turn spot its 1/46 card weight) reproduces them."""
    pol = strategy_to_cfrjax(game, dump_path, rec["board"])
    pot = rec["pot"]
    theirs = dict(br0=rec["mes_ev"][0], br1=rec["mes_ev"][1], exploitability=rec["exploitability"],
                  exploitability_from_pct=rec["exploitability_pct_pot"] * pot / 100)
    ours = evaluate(game, pol)
    gaps, bracket, same = _compare(ours, theirs, tol_chips)
    out = dict(kind="same_game_check", peer="TexasSolver", spot=rec["spot"], iterations=rec["iterations"],
               threads=rec["threads"], texassolver=theirs, cfrjax_float64=ours, gaps_chips=gaps,
               value_bracket=bracket, tol_chips=tol_chips, same_game=same, ok=same,
               note="TexasSolver's average strategy (dump_result) evaluated by cfrjax's public form in float64; "
                    "br0/br1 are best-response values of OOP/IP in chips (its 'player 1/0 exploitability'); "
                    "exploitability_from_pct is its printed % of pot times pot/100; TexasSolver prints no "
                    "profile value, so cfrjax's value is checked to lie in [-BR_IP, BR_OOP] (value_bracket)")
    g2, f = its_game(game, rec["board"])
    if f != 1.0:
        ours2 = evaluate(g2, pol)
        gaps2, bracket2, ok2 = _compare(ours2, theirs, tol_chips)
        out.update(ok=ok2, its_card_weight=f"1/{52 - len(rec['board'].split()) - 2} (cfrjax: 1/"
                                           f"{52 - len(rec['board'].split()) - 4}); stakes below the deal x {f:.6f}",
                   cfrjax_float64_its_game=ours2, gaps_chips_its_game=gaps2, value_bracket_its_game=bracket2,
                   note=out["note"] + "; turn: TexasSolver weighs each river card 1/(52-|board|-2), not "
                        "1/(52-|board|-4) (github.com/bupticybee/TexasSolver/issues/95), so it solves another game "
                        "(same tree, river continuations x 44/46): same_game is false, ok is the check in its game "
                        "(cfrjax's public form with the forest stakes scaled by 44/46)")
    return out


# ---------------------------------------------------------------- the arm

def compare_main(args) -> int:
    return run_arm(args.texassolver, OUT_DEFAULT, river_iterations=args.peer_iterations or 1000,
                   exe=getattr(args, "texassolver_exe", None))


def run_arm(ts_dir, out_path, spots=("river", "turn"), river_iterations=1000, turn_iterations=100,
            threads=(1, 2), exe=None, cfrjax_rules=("cfr+", "dcfr"), cfrjax_spots=("river",),
            tol_chips=1e-4, check_spots=("river", "turn"), repeats=(3, 1)) -> int:
    """repeats: (river, turn) runs of each timing (ms_per_iter: their median; numbers from the first)."""
    cmd = "python bench/compare.py --peers texassolver --texassolver DIR"
    exe, resources, why = find_solver(ts_dir, exe)
    if exe is not None:
        why = ensure_dictionary(os.path.abspath(os.path.expanduser(ts_dir)), resources)
        if why is not None:
            exe = None
    records = postflop_peer.skipped_records("TexasSolver", "texassolver", exe, why, cmd)
    failed = False
    vers = solver_version(os.path.abspath(os.path.expanduser(ts_dir)), exe) if exe else {}
    for spot_name, spec, spot, T in postflop_peer.spot_runs(spots, river_iterations, turn_iterations,
                                                                  spot_of_spec):
        if exe:
            for th in threads:
                dump = os.path.join(tempfile.gettempdir(), f"cfrjax_texassolver_{spot_name}_{os.getpid()}.json") \
                    if (spot_name in check_spots and th == threads[0]) else None
                R = repeats[0] if spot_name == "river" else repeats[1]
                runs = [run_solver(exe, resources, spot, T, th, dump=dump if r == 0 else None) for r in range(R)]
                rec, ms = runs[0], [x["ms_per_iter"] for x in runs]
                rec.update(ms_per_iter=float(np.median(ms)), solve_s=float(np.median([x["solve_s"] for x in runs])),
                           ms_per_iter_min=min(ms), ms_per_iter_max=max(ms), ms_per_iter_runs=ms, repeats=R,
                           load_avg_1m_before_runs=[x["load_avg_1m_before"] for x in runs],
                           cpu_s_runs=[x["cpu_s"] for x in runs], wall_s_runs=[x["wall_s"] for x in runs],
                           same_numbers_all_runs=all(x["mes_ev"] == rec["mes_ev"] for x in runs))
                rec.update(backend="TexasSolver", spot=spec, form="its own tree (range vectors, float32)",
                           rule="dcfr (its own: alpha 1.5, beta 0.5, average 0.9-decayed, (t/(t+1))^2-weighted)",
                           order="alternating", cpu_affinity=len(os.sched_getaffinity(0)),
                           device=f"CPU ({os.cpu_count()} cores), {th} thread" + ("s" if th > 1 else ""),
                           versions=vers, pot=spot["pot"], board=spot["board"], behind=spot["behind"],
                           bets=spot["bets"] + " (% of pot, both players, every street of the spot)",
                           units="exploitability: (BR_OOP+BR_IP)/2 chips; exploitability_pct_pot: its printed "
                                 "'Total exploitability' (% of the starting pot); mes_ev: best-response values "
                                 "[OOP, IP] in chips (cfrjax convention: pot/2 subtracted)")
                if spot_name == "river":
                    rec["note"] = "river: no chance node, TexasSolver runs no parallel region (threads > 1 = 1)"
                records.append(rec)
                print(f"texassolver: {spot_name} {th} thread(s): {rec['ms_per_iter']:.4f} ms/iter, exploitability "
                      f"{rec['exploitability']:.3e} chips ({rec['exploitability_pct_pot']:.4g}% of pot)", flush=True)
                if dump:
                    chk = postflop_peer.check_record(same_game_check, spec, rec, dump, cmd, "texassolver",
                                                     tol_chips=tol_chips)
                    records.append(chk)
                    failed |= not chk["ok"]
        if spot_name in cfrjax_spots:
            for c in postflop_peer.cfrjax_arm(spec, spot_name, cfrjax_rules, T):
                c["exploitability_pct_pot"] = 100 * c["exploitability"] / spot["pot"]
                if os.environ.get("XLA_FLAGS"):
                    c["threads"] = f"XLA CPU, XLA_FLAGS={os.environ['XLA_FLAGS']}"
                c["command"] = (f"{cmd}  # cfrjax arm: load_game({spec!r}), {c['rule']} float32, {T} iterations x "
                                f"{c['repeats']} repeats")
                records.append(c)
    postflop_peer.write_records(out_path, records, "texassolver")
    return 1 if failed else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--texassolver", default=None, help="TexasSolver checkout (console branch), built")
    ap.add_argument("--texassolver-exe", default=None, help="console_solver binary (default: DIR/build/console_solver)")
    ap.add_argument("--spots", nargs="+", default=["river", "turn"], choices=list(SPOTS))
    ap.add_argument("--river-iterations", type=int, default=1000)
    ap.add_argument("--turn-iterations", type=int, default=100)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--cfrjax-rules", nargs="*", default=["cfr+", "dcfr"])
    ap.add_argument("--cfrjax-spots", nargs="*", default=["river"], choices=list(SPOTS),
                    help="spots on which cfrjax is timed in the same run (its turn numbers: peers_postflop_cpu.jsonl)")
    ap.add_argument("--tol-chips", type=float, default=1e-4)
    ap.add_argument("--repeats", type=int, nargs=2, default=[3, 1], metavar=("RIVER", "TURN"),
                    help="runs of each TexasSolver timing (median ms/iter)")
    ap.add_argument("--check-spots", nargs="*", default=["river", "turn"], choices=list(SPOTS),
                    help="spots with the same-game check (turn: a ~100 MB dump, cfrjax's turn public form)")
    ap.add_argument("--out", default=OUT_DEFAULT)
    a = ap.parse_args(argv)
    import jax
    jax.config.update("jax_enable_x64", True)
    return run_arm(a.texassolver, a.out, a.spots, a.river_iterations, a.turn_iterations, tuple(a.threads),
                   a.texassolver_exe, tuple(a.cfrjax_rules), tuple(a.cfrjax_spots), a.tol_chips,
                   tuple(a.check_spots), tuple(a.repeats))


if __name__ == "__main__":
    sys.exit(main())
