"""The `cfrjax` command line (thin: parses, calls the public API, prints).

    cfrjax solve GAME [--iterations N | --target X|X% [--max-iterations N]] [--rule R] [--order ...]
                      [--averaging uniform|linear] [--dtype float32|float64] [--hands range|all|player]
                                   --target: stop at the first evaluation at or below X
                                   (the game's unit, e.g. 0.001) or X% of a poker spot's
                                   starting pot (e.g. 0.5%), --max-iterations the cap
                      [--eval-every K] [--chance folded|explicit] [--json]
                      [--checkpoint PATH [--checkpoint-every K]] [--warm-start PATH]
                      [--save-policy PATH[.npz|.json]] [--plot PATH.png] [--save-game PATH.npz]
    cfrjax solve-batch GAME --batch N --out DIR [--iterations N] [--target X|X%] [--seed S] [--chunk K]
                      [--coordinator HOST:PORT --num-processes N --process-id I]
                                   a batch of random subgames, one shard file per process
                                   (multi-host: the same command on every host, see
                                   cfrjax.multihost; SLURM variables are read when the
                                   three options are not given)
    cfrjax show SPOT NODE (--checkpoint PATH | --policy PATH | --iterations N)
                      [--player 0|1] [--sort equity|ev|weight|combos|hand] [--all] [--limit K]
                      [--csv FILE.csv] [--npz FILE.npz]
                                   a poker spot's hands at a public node: strategy, EV,
                                   equity, range (cfrjax.public.report)
    cfrjax datagen [SPEC] --out DIR --shards N [--spots B] [--iterations N] [--pots P,P,..]
                      [--stack S] [--seed S] [--board CARDS] [--worker I --num-workers N]
                                   random river spots solved in batches, written to
                                   DIR/shard-*.npz (cfrjax.datagen: schema, resuming,
                                   SLURM job arrays)
    cfrjax show POLICY INFOSET     action probabilities of a saved policy
    cfrjax games [--dir DIR]       built-in games and the specs in games/, with sizes

Errors are one line on stderr (`cfrjax: error: ...`) with exit code 2. A solve with
`--checkpoint` stopped by SIGTERM or SIGINT finishes its current chunk, writes the
checkpoint and exits with 128 + the signal number; the same command resumes it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time

# Seconds to sleep after each chunk (solve, solve-batch) or shard (datagen): only for tests
# that interrupt a run (a real run is too fast to catch between checkpoints). Not a user option.
_CHUNK_DELAY_ENV = "CFRJAX_TEST_CHUNK_DELAY_S"
#: `--max-iterations`' default: the iteration cap of a solve to a `--target`.
TARGET_MAX_ITERATIONS = 10_000


class _Parser(argparse.ArgumentParser):
    """argparse with the project's one-line errors (`cfrjax: error: ...`, exit code 2)."""

    def error(self, message):
        sub = self.prog.partition(" ")[2]
        hint = f"cfrjax {sub} --help" if sub else "cfrjax --help"
        self.exit(2, f"cfrjax: error: {' '.join(message.split())} ({hint} for usage)\n")


def _parser() -> argparse.ArgumentParser:
    from cfrjax.columns import CSV_FIELDS

    p = _Parser(prog="cfrjax", description="Solve two-player zero-sum games with CFR in JAX.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("solve", help="solve a game and report exploitability")
    s.add_argument("game", help="OpenSpiel game string, a saved .npz game, a poker .toml spec, or the name of a "
                                "shipped spec (cfrjax games lists them)")
    s.add_argument("--iterations", type=int, default=None,
                   help="total iterations without --target (default 1000; a resumed run continues up to this number)")
    s.add_argument("--target", default=None, metavar="X|X%",
                   help="solve to a target: stop at the first evaluation whose exploitability is at or below X (the "
                        "game's unit, chips for poker; e.g. 0.001) or X%% of a poker spot's starting pot (e.g. 0.5%%); "
                        "evaluations every --eval-every iterations (default: after 10, 20, 30, 40, 50, 70, 90, 120, "
                        "... iterations, each a quarter more), --max-iterations the cap")
    s.add_argument("--max-iterations", type=int, default=None, metavar="N",
                   help=f"with --target: stop after N iterations in all if the target is not met (default "
                        f"{TARGET_MAX_ITERATIONS}; not with --iterations)")
    _solver_options(s)
    _hands_option(s)
    _isomorphism_option(s)
    _plan_options(s)
    s.add_argument("--chance", choices=("folded", "explicit"), default="folded")
    s.add_argument("--eval-every", type=int, default=None,
                   help="evaluate exploitability every K iterations (default: 10 evaluations; with --target: see "
                        "there)")
    s.add_argument("--checkpoint", default=None, metavar="PATH",
                   help="resume from PATH if it exists (same game and options), save the state there")
    s.add_argument("--checkpoint-every", type=int, default=None, metavar="K",
                   help="save the checkpoint every K iterations and at the end (default: at an evaluation at least a "
                        "minute after the last save, and at the end)")
    s.add_argument("--warm-start", default=None, metavar="PATH",
                   help="start from this checkpoint of a solve of the same tree (other ranges or payoffs allowed, "
                        "same --rule/--order/--averaging/--dtype) and run --iterations more; or from a policy file "
                        "(--save-policy) of the same tree alone: a new solve that starts playing it "
                        "(cfrjax.warm_start)")
    s.add_argument("--save-policy", default=None, metavar="PATH",
                   help="write the average policy: PATH.npz (compact; the default for a poker spot's public form "
                        "when PATH has no extension) or PATH.json (keyed by information-set names; the default for "
                        "the tabular form; refused above 50 MB)")
    s.add_argument("--plot", default=None, metavar="PATH",
                   help="write the exploitability curve (vs iterations and vs seconds) as a PNG (needs matplotlib)")
    s.add_argument("--save-game", default=None, help="also write the compiled game to this .npz path")
    s.add_argument("--precision", choices=("float32", "int16"), default="float32",
                   help="storage of the regrets and average between iterations: float32 (default) or int16 "
                        "(16-bit integers with a float32 scale per decision node; float32 arithmetic)")
    s.add_argument("--memory-plan", action="store_true",
                   help="print the memory plan (one row per buffer) before compiling, or with the error when the "
                        "plan does not fit")
    s.add_argument("--json", action="store_true", help="print one JSON object as the last stdout line")

    b = sub.add_parser("solve-batch", help="solve a batch of random subgames of one game, on one or many "
                                           "processes / hosts; each process writes its shard of the results")
    b.add_argument("game", help="a poker .toml spec or the name of a shipped spec (random ranges per subgame), or "
                                "any game `solve` takes whose root is chance (random root-chance probabilities)")
    b.add_argument("--batch", type=int, required=True, metavar="N",
                   help="number of subgames (a multiple of the number of devices of all processes)")
    b.add_argument("--out", required=True, metavar="DIR",
                   help="output directory: each process writes DIR/shard-<process>-of-<count>.npz (rewritten "
                        "after every chunk; the same command resumes from it)")
    b.add_argument("--iterations", type=int, default=1000, help="iterations per subgame (with --target: the cap)")
    b.add_argument("--target", default=None, metavar="X|X%",
                   help="stop each subgame at its first evaluation at or below X (the game's unit) or X%% of the "
                        "pot, as `solve --target`; a stopped subgame's state is kept as it was (its state.iteration "
                        "says where); evaluated and written as `solve --target` evaluates, or every --chunk")
    b.add_argument("--seed", type=int, default=0, help="seed of the random ranges / root-chance probabilities")
    b.add_argument("--chunk", type=int, default=None, metavar="K",
                   help="iterations between two writes of the shard (default: a tenth of --iterations)")
    _solver_options(b)
    _hands_option(b)
    _plan_options(b)
    b.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="process 0's address and a free port, the same on every process (default: "
                        "$CFRJAX_COORDINATOR, else the first host of $SLURM_STEP_NODELIST)")
    b.add_argument("--num-processes", type=int, default=None, metavar="N",
                   help="number of processes (default: $CFRJAX_NUM_PROCESSES, else $SLURM_NTASKS, else 1)")
    b.add_argument("--process-id", type=int, default=None, metavar="I",
                   help="this process, 0..N-1 (default: $CFRJAX_PROCESS_ID, else $SLURM_PROCID)")
    b.add_argument("--init-timeout", type=int, default=None, metavar="S",
                   help="seconds to wait for every process to connect (default 120)")
    b.add_argument("--heartbeat-timeout", type=int, default=None, metavar="S",
                   help="seconds without a heartbeat after which a process counts as lost (default 10)")
    b.add_argument("--restart", action="store_true", help="start over instead of resuming from the shard files")
    b.add_argument("--json", action="store_true", help="print one JSON object (this process's summary) as the "
                                                       "last stdout line")

    d = sub.add_parser("datagen", help="training data for value networks: random river spots (board, pot, "
                                       "ranges), solved in batches, written to sharded .npz files (resumable)")
    d.add_argument("spec", nargs="?", default="hunl_river_full",
                   help="template river spot whose betting (bet sizes, raises) the data use: a shipped spec name "
                        "or a .toml path (default hunl_river_full)")
    d.add_argument("--out", required=True, metavar="DIR",
                   help="dataset folder: dataset.json and shard-<i>-of-<n>.npz; shards already there are kept")
    d.add_argument("--shards", type=int, required=True, metavar="N", help="shards in the dataset")
    d.add_argument("--spots", type=int, default=1024, metavar="B",
                   help="spots per shard, solved as one batch (one board per spot; default 1024)")
    d.add_argument("--iterations", type=int, default=1000, help="iterations per spot (default 1000)")
    d.add_argument("--pots", default=None, metavar="P,P,...",
                   help="pot grid in chips, each spot's pot uniform over it (default: 2 stack / 2^k, k = 5..1)")
    d.add_argument("--stack", type=float, default=None,
                   help="each player's stack at the start of the hand, chips (default: the spec's)")
    d.add_argument("--seed", type=int, default=0, help="dataset seed (shard i: SeedSequence(seed, spawn_key=(i,)))")
    d.add_argument("--board", default=None, metavar="CARDS",
                   help="cards every shard's board holds, e.g. \"Ks Js Th 7d\" (at most 4; the rest drawn uniformly; "
                        "default: none, the whole board uniform)")
    _worker_options(d, "it fills shards I, I+N, ...", "filling one dataset")
    _solver_options(d)
    _plan_options(d)
    d.add_argument("--json", action="store_true", help="print one JSON object (the summary) as the last stdout line")

    sh = sub.add_parser("show", help="a poker spot's hand x action table at a public node (strategy, EV, equity), "
                                     "or the action probabilities of information sets in a saved policy")
    sh.add_argument("source", help="a poker spot as `solve` takes it (shipped spec name or .toml), or a policy file "
                                   "written by `cfrjax solve --save-policy` (.json or .npz)")
    sh.add_argument("where", help="for a spot: a public decision node's code such as 'k.b10' or 'k.b10.c/Qh/k' "
                                  "('' or 'root': the root); for a policy file: an information-set name, or a part "
                                  "of names (every match is printed)")
    sh.add_argument("--checkpoint", default=None, metavar="PATH",
                    help="the solution: a checkpoint written by `cfrjax solve SPOT --checkpoint PATH`")
    sh.add_argument("--policy", default=None, metavar="PATH",
                    help="the solution: a policy file written by `cfrjax solve SPOT --save-policy PATH`")
    sh.add_argument("--iterations", type=int, default=None, metavar="N",
                    help="the solution: solve the spot here for N iterations (with --rule, --order, ...)")
    _solver_options(sh)
    _hands_option(sh)
    _isomorphism_option(sh)
    sh.add_argument("--player", type=int, choices=(0, 1), default=None,
                    help="whose hands to list (default: the player to act, with its strategy columns)")
    sh.add_argument("--sort", choices=SHOW_SORTS, default="equity",
                    help="row order, largest first (hand: hand-list order); default equity")
    sh.add_argument("--all", action="store_true", help="list (and write to --csv) every live hand of the hand list "
                                                     "(--hands), also those the player does not bring here (weight 0; "
                                                     "counterfactual EV)")
    sh.add_argument("--csv", default=None, metavar="FILE",
                    help="write the rows of the listed player's range (every live hand with --all), both players' "
                         "columns: " + ", ".join(CSV_FIELDS) + ", then one column per action (the acting player's "
                         "probabilities). Hands high card first (AsKs); weight: the player's reach with the range "
                         "weight (postflop-solver's weights); combos: weight times the opponent's reach mass of hands "
                         "sharing no card with it (its normalized_weights); ev: postflop-solver's expected_values, "
                         "the chips the hand expects to take from the pot less those it still puts in, given the node "
                         "is reached, the player's pot / 2 and chips put in so far counted as its stake (a hand that "
                         "folds at once: 0); equity: showdown share against the opponent's range at the node")
    sh.add_argument("--npz", default=None, metavar="FILE",
                    help="write the report's arrays (cfrjax.public.report.load_report reads it back)")
    sh.add_argument("--limit", type=int, default=None,
                    help="print at most this many rows (default: all) or matching information sets (default 20)")

    rp = sub.add_parser("report", help="one betting tree solved on many flops, its strategy read across them "
                                       "(resumable; `cfrjax report show DIR` reads a report back)")
    rp.add_argument("tree", help="a flop spot file (.toml) whose board is replaced by each flop, or `show`")
    rp.add_argument("folder", nargs="?", default=None, help="with `show`: the report folder")
    rp.add_argument("--flops", default="stratified", metavar="SET",
                    help="all (the 1,755 classes of flops under suit isomorphism, weighted), stratified (a fixed "
                         "subset across textures, --num-flops of them) or a list such as Ks7h2c,8s6s2s "
                         "(default stratified)")
    rp.add_argument("--num-flops", type=int, default=25, metavar="N", help="size of the stratified subset (default 25)")
    rp.add_argument("--target", default="0.5%", help="stop each flop at this exploitability: x%% of the pot or chips "
                                                    "(default 0.5%%)")
    rp.add_argument("--max-iterations", type=int, default=1000, metavar="N",
                    help="iteration cap per flop (default 1000)")
    rp.add_argument("--rule", default="dcfr", help="CFR rule (default dcfr)")
    rp.add_argument("--order", default="alternating", help="alternating (default) or simultaneous")
    rp.add_argument("--batch", type=int, default=1, metavar="B",
                    help="solve up to B flops of one shape together, as one batch (XLA passes under vmap; fewer "
                         "where the memory plan says they do not fit); default 1, one at a time with the fast kernels")
    rp.add_argument("--dtype", default="float32", help="float32 (default) or float64")
    rp.add_argument("--out", default=None, metavar="DIR",
                    help="report folder: flops/<flop>.json and .npz per flop (kept: a solved flop is never solved "
                         "again), report.csv, summary.json, bet_frequency.png, ev.png")
    _worker_options(rp, "flops I, I+N, ... of the set", "sharing --out")
    rp.add_argument("--flop", default=None, help="with `show`: one flop's root, hand by hand")
    rp.add_argument("--player", type=int, choices=(0, 1), default=None, help="with `show --flop`: whose hands")
    rp.add_argument("--sort", choices=SHOW_SORTS, default="equity", help="with `show --flop`: row order")
    rp.add_argument("--all", action="store_true", help="with `show --flop`: every live hand")
    rp.add_argument("--limit", type=int, default=None, help="with `show --flop`: at most this many rows")

    _games_parser(sub)
    return p


def _games_parser(sub) -> None:
    g = sub.add_parser("games", help="list built-in games and the game specs in a directory, with sizes")
    g.add_argument("--dir", default=None,
                   help="directory with suite.toml and .toml / .npz specs (default: ./games, else the "
                        "repository's games/)")
    g.add_argument("--sizes", action="store_true", help="also compute the sizes not known in advance (slow)")


def _solver_options(p) -> None:
    """The solver options of `solve` and `solve-batch` (one set of defaults)."""
    from cfrjax.rules import AVERAGING, DEFAULT_ORDER, DEFAULT_RULE, DTYPES, ORDERS, RULES

    p.add_argument("--rule", choices=RULES, default=DEFAULT_RULE,
                   help=f"default {DEFAULT_RULE} (measured fastest, README 'Defaults'); the paper's: cfr+")
    p.add_argument("--order", choices=ORDERS, default=DEFAULT_ORDER,
                   help=f"default {DEFAULT_ORDER}; the paper's: simultaneous")
    p.add_argument("--averaging", choices=AVERAGING, default="linear")
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--form", choices=("public", "tabular"), default=None,
                   help="compiled form: poker specs default to public (vectors over hands), tabular is the "
                        "per-deal tree; other games have only the tabular form")
    p.add_argument("--compile-cache", default=None, metavar="DIR|off",
                   help="keep compiled executables in DIR for the next run (default: $CFRJAX_COMPILE_CACHE, else "
                        "~/.cache/cfrjax/xla; 'off' to compile afresh)")


def _isomorphism_option(p) -> None:
    """`--isomorphism on|off` of the commands that build one poker spot
    (`load_game(..., isomorphism=...)`; solve-batch's random ranges break the symmetry)."""
    p.add_argument("--isomorphism", choices=("on", "off"), default=None,
                   help="a poker spot's suit isomorphism in the public form (default: the spec's isomorphism key, "
                        "else off): on solves one representative per class of suit-isomorphic turn and river cards "
                        "(where the board and both ranges are symmetric; XLA passes only)")


def _iso(args):
    """`load_game`'s `isomorphism` from `--isomorphism` (`None`: the spec's key)."""
    v = getattr(args, "isomorphism", None)
    return None if v is None else v == "on"


def _worker_options(p, owns: str, share: str) -> None:
    """`--worker` / `--num-workers` of a job split over independent workers (datagen's
    shards, a report's flops), defaulting to a SLURM job array's place."""
    p.add_argument("--worker", type=int, default=None, metavar="I",
                   help=f"this worker, 0..N-1: {owns} (default: $SLURM_ARRAY_TASK_ID's place in the job array, else 0)")
    p.add_argument("--num-workers", type=int, default=None, metavar="N",
                   help=f"independent workers {share} (default: $SLURM_ARRAY_TASK_COUNT, else 1)")


def _hands_option(p) -> None:
    """`--hands` of the commands that build a poker spot (`load_game(..., hands=...)`)."""
    from cfrjax.games.poker.config import HAND_LISTS

    p.add_argument("--hands", choices=HAND_LISTS, default=None,
                   help="a poker spot's hand list in the public form (default: the spec's hands key, else range): "
                        "range, the hands of positive weight in either range (every vector and the memory plan scale "
                        "with them); all, every combo the board does not block (for setting other ranges on the "
                        "built game); player, one list per player, its own range's hands (XLA passes only)")


# ----------------------------------------------------------------------------------------
# solve


class _Stop:
    """Records SIGTERM / SIGINT so the loop can stop after the current chunk."""

    def __init__(self):
        self.signum = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.signum = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


class _Status:
    """A one-line status with the elapsed seconds while a long step runs (building a game,
    compiling), on stderr when it is a terminal (erased when the step ends); nothing
    otherwise, so piped output and one-line errors stay clean."""

    def __init__(self, text: str):
        self.text = text
        self._done = None

    def __enter__(self):
        if sys.stderr.isatty():
            import threading

            self._done = threading.Event()
            t0 = time.perf_counter()

            def show():
                while not self._done.wait(0.25):
                    sys.stderr.write(f"\r\033[Kcfrjax: {self.text} {time.perf_counter() - t0:.0f} s")
                    sys.stderr.flush()
            threading.Thread(target=show, daemon=True).start()
        return self

    def __exit__(self, *exc):
        if self._done is not None:
            self._done.set()
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


#: Per command, the options naming a path it writes (`out`: a folder) and so checks first.
_OUTPUTS = {"solve": ("save_policy", "plot", "save_game", "checkpoint"), "show": ("csv", "npz"),
            "solve-batch": ("out",), "datagen": ("out",), "report": ("out",)}


def _check_outputs(args) -> None:
    """Every path the command writes, checked before any work (building, solving): its
    folder is created if missing and must take a new file, so a result is never lost to a
    missing folder after a solve; else one line naming the option and the cause."""
    import tempfile

    for name in _OUTPUTS.get(args.command, ()):
        path = getattr(args, name)
        if path is None:
            continue
        flag = "--" + name.replace("_", "-")
        folder = os.path.abspath(path) if name == "out" else os.path.dirname(os.path.abspath(path))
        if name != "out" and os.path.isdir(path):
            raise ValueError(f"{flag} {path}: is a folder; give a file name")
        above = folder
        while not os.path.exists(above):
            above = os.path.dirname(above)
        if not os.path.isdir(above):
            raise ValueError(f"{flag} {path}: cannot create the folder {folder}: {above} is a file")
        try:
            os.makedirs(folder, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".cfrjax-probe-", dir=folder)
            os.close(fd)
            os.unlink(probe)
        except OSError as e:
            raise ValueError(f"{flag} {path}: cannot write into {folder} ({e.strerror or e})") from None


def _fallback(what: str, path: str, write, error: OSError, say: bool = True) -> str:
    """After `write(path)` failed with `error` (the folder removed, the disk full, ...):
    write the result to a new file named after `path` in the working folder, else the
    temporary folder, and (`say`) say where in one line on stderr. Returns the file
    written; raises `error` if neither takes it."""
    import tempfile

    stem, ext = os.path.splitext(os.path.basename(path))
    for folder in (os.getcwd(), tempfile.gettempdir()):
        alt = None
        try:
            fd, alt = tempfile.mkstemp(prefix=f"cfrjax-{stem}-", suffix=ext, dir=folder)
            os.close(fd)
            write(alt)
        except OSError:
            if alt is not None and os.path.exists(alt):
                os.unlink(alt)
            continue
        if say:
            print(f"cfrjax: could not write the {what} to {path} ({error.strerror or error}); wrote it to {alt} "
                  "instead", file=sys.stderr)
        return alt
    raise error


def _write_result(what: str, path: str, write) -> str:
    """`write(path)`, or after a failure `_fallback`: the path the result is in."""
    try:
        write(path)
        return path
    except OSError as e:
        return _fallback(what, path, write, e)


class _Interrupted(Exception):
    def __init__(self, signum, iteration, path):
        super().__init__(signum)
        self.signum, self.iteration, self.path = signum, iteration, path


def _check_plot_available(path):
    if path is None:
        return
    if not path.lower().endswith(".png"):
        raise ValueError(f"--plot {path!r}: the file name must end with .png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'cfrjax[bench]' (or pip install matplotlib)") from None


def write_plot(history: list, path: str, title: str) -> None:
    """Exploitability vs iterations and vs solve seconds (log y) as a PNG.

    `history` rows are `[iteration, seconds, exploitability, value]`.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = [r for r in history if r[2] is not None and math.isfinite(r[2]) and r[2] > 0]
    fig = Figure(figsize=(10, 4), dpi=100)
    FigureCanvasAgg(fig)
    for k, (col, label) in enumerate(((0, "iterations"), (1, "solve time (s)"))):
        ax = fig.add_subplot(1, 2, k + 1)
        ax.plot([r[col] for r in rows], [r[2] for r in rows], marker="o", markersize=3)
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("exploitability")
        ax.grid(True, which="both", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, format="png")


def _load_game_quietly(source: str, chance: str, form: str | None = None, hands: str | None = None,
                       isomorphism: bool | None = None):
    """`cfrjax.load_game` (which refuses an unknown name before OpenSpiel), with OpenSpiel's
    own C++ message on stderr held back when loading fails (the exception carries it), so
    an error stays one line."""
    import tempfile

    import cfrjax

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as held:
        os.dup2(held.fileno(), 2)
        try:
            game = cfrjax.load_game(source, chance=chance, form=form, hands=hands, isomorphism=isomorphism)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        held.seek(0)
        text = held.read().decode(errors="replace")
    if text:
        sys.stderr.write(text)  # warnings of a successful load are not lost
    return game


def _plan_options(p) -> None:
    """`--plan` and `--verbose` of `solve`, `solve-batch` and `datagen`."""
    from cfrjax.plan import PRESETS

    p.add_argument("--plan", choices=PRESETS, default="auto",
                   help="implementations to run (cfrjax.plan): auto (native code on a CPU, CUDA and Pallas kernels on "
                        "an NVIDIA GPU, where they build) or xla (the XLA passes alone); the JSON record names it")
    p.add_argument("--verbose", action="store_true", help="print the plan that runs to stderr")


def _say_plan(args, plan) -> None:
    """Print `plan` to stderr under `--verbose`."""
    if args.verbose:
        print(f"cfrjax: plan {plan.summary()}", file=sys.stderr)


#: XLA's switch for reserving most of a GPU's memory at the first transfer (its own variable).
_PREALLOCATE = "XLA_PYTHON_CLIENT_PREALLOCATE"


def _solve(args) -> dict:
    # One solve's buffers are a small part of a GPU, and XLA reserving 75% of its memory at
    # the first transfer was a large part of a cold solve (bench/README.md, "History from
    # the code"): the command lets XLA's pool grow instead, unless the variable is set.
    # Before the backend starts.
    os.environ.setdefault(_PREALLOCATE, "false")
    import jax

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # an application may flip it; the library never does
    import cfrjax
    from tqdm import tqdm

    from cfrjax.games.poker.pot import parse_target

    if args.target is None:
        if args.max_iterations is not None:
            raise ValueError("--max-iterations is the cap of a solve to a --target; without one, use --iterations N")
        iterations, flag = (1000 if args.iterations is None else args.iterations), "--iterations"
    else:
        if args.iterations is not None:
            raise ValueError("--iterations with --target: the iteration cap of a solve to a target is "
                             "--max-iterations N")
        parse_target(args.target)  # a bad value fails before the build
        iterations = TARGET_MAX_ITERATIONS if args.max_iterations is None else args.max_iterations
        flag = "--max-iterations"
    if iterations <= 0:
        raise ValueError(f"{flag} must be positive, got {iterations}")
    if args.eval_every is not None and args.eval_every <= 0:
        raise ValueError(f"--eval-every must be positive, got {args.eval_every}")
    if args.checkpoint_every is not None:
        if args.checkpoint is None:
            raise ValueError("--checkpoint-every needs --checkpoint PATH")
        if args.checkpoint_every <= 0:
            raise ValueError(f"--checkpoint-every must be positive, got {args.checkpoint_every}")
    if args.save_policy is not None and not args.save_policy.endswith((".json", ".npz")) and \
            os.path.splitext(os.path.basename(args.save_policy))[1]:
        raise ValueError(f"--save-policy {args.save_policy!r}: the file name must end with .json or .npz (or have "
                         "no extension: .npz for a poker spot's public form, .json for the tabular form)")
    _check_plot_available(args.plot)

    from cfrjax.compile_cache import compile_count, enable_compile_cache
    from cfrjax.games.poker.pot import starting_pot, target_chips
    from cfrjax.memory import device_peak_bytes

    cache = enable_compile_cache(args.compile_cache)
    # The runtime's start (a GPU's driver and memory pool) is the process's, not the
    # spot's: started here, before the clock of "from the call to the answer", and reported
    # apart (`backend_s`); the build's first device query (its memory check) started it.
    tb = time.perf_counter()
    jax.devices()
    t0 = time.perf_counter()
    with _Status(f"building {args.game} ..."):
        game = _load_game_quietly(args.game, args.chance, args.form, args.hands, _iso(args))
        game = cfrjax.memory.group_boards(cfrjax.plan.use(game, args.plan))
    build_s = time.perf_counter() - t0
    _say_plan(args, game.plan)
    pot = starting_pot(game)  # poker spots: exploitability also in % of the starting pot
    target = None if args.target is None else target_chips(args.target, game)
    if args.save_policy:  # the form's default extension; a .json too large refused before solving
        args.save_policy = cfrjax.strategy.policy_path(args.save_policy, game)
        cfrjax.strategy.check_json_size(args.save_policy, game)
    if args.save_game:
        cfrjax.save_game(game, args.save_game)
    state = cfrjax.init(game, rule=args.rule, order=args.order, averaging=args.averaging, dtype=args.dtype,
                        precision=args.precision)
    if args.warm_start:
        from cfrjax.strategy import is_policy_file

        state = cfrjax.warm_start(game, args.warm_start, config=state.config)
        what = "policy " if is_policy_file(args.warm_start) else ""
        print(f"cfrjax: warm start from {what}{args.warm_start} (iteration {int(state.iteration)}), "
              f"{iterations} more iterations{' at most' if target is not None else ''}", file=sys.stderr)
    if args.memory_plan:
        print(cfrjax.memory.memory_plan(game, state, donate=True).table(), file=sys.stderr)
    run = cfrjax.solve_chunks(game, state, int(state.iteration) + iterations, eval_every=args.eval_every,
                              checkpoint=args.checkpoint, checkpoint_every=args.checkpoint_every,
                              extra=dict(game=args.game), target=target, donate=True)
    if run.resumed_from is not None:
        print(f"cfrjax: resuming {game.name} from {args.checkpoint} at iteration {run.resumed_from}", file=sys.stderr)
    plan, free = run.memory["plan"], run.memory["free"]
    nodes = game.sizes().get("nodes") or 1
    free = "" if free is None else f" of {cfrjax.memory.format_bytes(free)} free"
    print(f"cfrjax: memory plan {cfrjax.memory.format_bytes(plan.total_bytes)} "
          f"({plan.total_bytes / nodes:.0f} B/node{_hand_list(game)}){free} on {jax.devices()[0].device_kind}",
          file=sys.stderr)
    with _Status("compiling ..."), compile_count() as compiled:
        run.compile()
    start, reached_s = run.start, None
    delay = float(os.environ.get(_CHUNK_DELAY_ENV, "0") or 0)
    bar = tqdm(total=run.iterations, initial=min(start, run.iterations), unit="it", file=sys.stderr,
               disable=None, dynamic_ncols=True)
    solve_before = run.solve_s
    try:
        with _Stop() if args.checkpoint else _NoStop() as stop:
            done = start
            for chunk in run:
                bar.update(chunk.iteration - done)
                done = chunk.iteration
                if run.reached is not None:
                    reached_s = time.perf_counter() - t0
                if chunk.exploitability is not None:
                    bar.set_postfix(expl=f"{chunk.exploitability:.3e}",
                                    **({} if pot is None else {"pot": f"{100 * chunk.exploitability / pot:.4f}%"}),
                                    **({} if target is None else {"target": args.target}),
                                    it_s=f"{(done - start) / max(run.solve_s - solve_before, 1e-9):,.0f}")
                if delay:  # test hook: slow chunks, each announced, so a test can interrupt a running solve
                    print(f"{_CHUNK_DELAY_ENV}: iteration {done}", file=sys.stderr, flush=True)
                    time.sleep(delay)
                if stop.signum is not None:
                    break
            bar.close()
            if stop.signum is not None:
                run.save()
                raise _Interrupted(stop.signum, int(run.state.iteration), args.checkpoint)
    except KeyboardInterrupt:  # Ctrl-C without a checkpoint (with one, SIGINT is caught by _Stop)
        last = run.history[-1] if run.history else None
        raise _CtrlC(int(run.state.iteration), None if last is None else (last[0], last[2])) from None
    except OSError as e:  # a checkpoint write failed: the state so far goes to a named file
        if not args.checkpoint:
            raise
        alt = _fallback("checkpoint", args.checkpoint, lambda p: (setattr(run, "checkpoint", p), run.save()), e,
                        say=False)
        raise OSError(f"stopped at iteration {int(run.state.iteration)}: writing the checkpoint {args.checkpoint} "
                      f"failed ({e.strerror or e}); the state is in {alt} (resume with --checkpoint {alt})") from None
    if run.reached == start:
        print(f"cfrjax: {args.checkpoint} already meets the target (exploitability {run.history[-1][2]:.6e} at "
              f"iteration {start}); nothing to run", file=sys.stderr)
    elif start >= run.iterations:
        if not run.history:
            run.evaluate()
        print(f"cfrjax: {args.checkpoint} already holds {start} iterations (--iterations {run.iterations}); "
              "nothing to run", file=sys.stderr)
    state = run.state
    expl, value = run.history[-1][2], run.history[-1][3]
    solve_s = run.solve_s - solve_before

    meta = dict(game=game.name, form=cfrjax.forms.form_name(game), rule=args.rule, order=args.order,
                averaging=args.averaging, dtype=args.dtype, chance=args.chance, iterations=int(state.iteration), exploitability=expl, value=value,
                precision=args.precision)
    if pot is not None:
        meta.update(pot=pot, exploitability_pct_pot=100 * expl / pot)
    if cfrjax.forms.raked(game):  # not zero-sum: both players' values, and the expected rake
        values = cfrjax.driver.evaluate_values(game, state)
        meta.update(values=[float(values[0]), float(values[1])], expected_rake=-float(values.sum()))
    if args.save_policy:
        policy = cfrjax.average_policy(game, state)
        args.save_policy = _write_result("policy", args.save_policy,
                                         lambda p: cfrjax.save_policy(p, game, policy, meta=meta))
    if args.plot:
        title = f"{game.name}: {args.rule} {args.order} {args.averaging} {args.dtype}"
        args.plot = _write_result("plot", args.plot, lambda p: write_plot(run.history, p, title))
    sizes = game.sizes()
    ran = int(state.iteration) - start
    record = dict(meta, nodes=sizes.get("nodes"), infosets=sizes.get("infosets"), slots=sizes.get("slots"),
                  depth=sizes.get("depth"), device=str(jax.devices()[0].device_kind),
                  backend=jax.default_backend(), jax=jax.__version__, backend_s=round(t0 - tb, 4),
                  build_s=round(build_s, 4),
                  preallocate=os.environ.get(_PREALLOCATE), trace_s=round(run.trace_s, 4),
                  compile_s=round(run.compile_s, 4), compile_cache=compiled.cache(cache), solve_s=round(solve_s, 4),
                  eval_s=round(run.eval_s, 4), ms_per_iter=1e3 * solve_s / max(1, ran),
                  plan=game.plan.describe(), peak_device_bytes=device_peak_bytes())
    if target is not None:
        record.update(target=target, target_pct_pot=None if pot is None else 100 * target / pot,
                      target_reached=run.reached is not None, seconds_to_target=reached_s,
                      max_iterations=run.iterations, eval_every=args.eval_every)
    if args.checkpoint:
        record["resumed_from"] = run.resumed_from
    return record


def _hand_list(game) -> str:
    """`", H hands: the ranges' hands"` (or `every live combo`) for a poker spot in the
    public form (what its vectors span, `--hands`); `""` for any other game."""
    meta = ((getattr(game, "labels", None) and game.labels.source) or {}).get("poker") or {}
    if meta.get("form") != "public":
        return ""
    what = {"range": "the ranges' hands", "all": "every live combo"}.get(meta.get("hand_list"), "a given list")
    if meta.get("hand_list") == "player":
        h0, h1 = meta["player_hands"]
        return f", {h0:,} / {h1:,} hands: each player's range ({meta['hands']:,} columns)"
    return f", {meta['hands']:,} hands: {what}"


class _CtrlC(Exception):
    """Ctrl-C during a solve without a checkpoint: where it got to."""

    def __init__(self, iteration: int, exploitability):
        super().__init__(iteration)
        self.iteration, self.exploitability = iteration, exploitability


class _NoStop:
    signum = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


# ----------------------------------------------------------------------------------------
# solve-batch


def _solve_batch(args) -> dict:
    import jax

    from cfrjax import multihost
    from cfrjax.games.poker.pot import parse_target, target_chips

    for name in ("batch", "iterations", "chunk", "init_timeout", "heartbeat_timeout"):
        v = getattr(args, name)
        if v is not None and v <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive, got {v}")
    if args.target is not None:
        parse_target(args.target)  # a bad value fails before the build
    cluster = multihost.cluster_config(args.coordinator, args.num_processes, args.process_id)
    from cfrjax.compile_cache import enable_compile_cache
    enable_compile_cache(args.compile_cache)
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # an application may flip it; the library never does
    delay = float(os.environ.get(_CHUNK_DELAY_ENV, "0") or 0)

    def ready(info):
        print(f"cfrjax: process {info['process_id']} of {info['num_processes']}: {info['game']}, rows "
              f"[{info['rows'][0]}, {info['rows'][1]}) of {args.batch} on {info['local_devices']} of "
              f"{info['devices']} devices; solving", file=sys.stderr, flush=True)
        _say_plan(args, info["plan"])

    timeouts = {k: v for k, v in (("initialization_timeout", args.init_timeout),
                                  ("heartbeat_timeout", args.heartbeat_timeout)) if v is not None}
    return multihost.solve_batch_to_dir(
        args.game, args.out, batch=args.batch, iterations=args.iterations, seed=args.seed, form=args.form,
        rule=args.rule, order=args.order, averaging=args.averaging, dtype=args.dtype, chunk=args.chunk,
        cluster=cluster, resume=not args.restart, on_ready=ready, plan=args.plan, hands=args.hands,
        target=None if args.target is None else (lambda g: target_chips(args.target, g)),
        on_chunk=(lambda _: time.sleep(delay)) if delay else None, **timeouts)


def _supervised_batch(args, argv) -> int | None:
    """A process other than 0 of a multi-process `solve-batch` runs its work in a child
    (`cfrjax.supervise`): if process 0 (the coordinator) is lost, jaxlib aborts the
    child, and this process reports it in one line with what the shard file kept.
    `None`: run in this process (one process, process 0, or not supported here)."""
    from cfrjax import multihost, supervise

    cluster = multihost.cluster_config(args.coordinator, args.num_processes, args.process_id)
    if cluster.num_processes == 1 or cluster.process_id == 0 or not supervise.available():
        return None
    path = multihost.shard_path(args.out, cluster.process_id, cluster.num_processes)

    def describe(signum):
        try:
            done = f"iteration {multihost._read_npz(path)[1]['iterations_done']} of {args.iterations}"
        except (OSError, ValueError, KeyError):
            done = "no completed chunk"
        cause = (f"the distributed runtime aborted it (SIGABRT), which it does when process 0 (the coordinator at "
                 f"{cluster.coordinator}) is lost: check that process") if signum == signal.SIGABRT else \
            f"killed by {signal.Signals(signum).name}"
        return (f"process {cluster.process_id} of {cluster.num_processes} stopped: {cause}; its shard {path} keeps "
                f"{done} (run the same commands to resume)")

    rc = supervise.run(argv, describe)
    return 128 - rc if rc < 0 else rc


# ----------------------------------------------------------------------------------------
# datagen


def _datagen(args) -> int:
    """`cfrjax datagen`: `cfrjax.datagen.generate` with a stop on SIGTERM / SIGINT after
    the shard in flight (exit code 128 + the signal) and a one-line summary (or JSON)."""
    import jax

    if args.form == "tabular":
        raise ValueError("--form tabular: datagen solves in the public form (batches of full-range spots)")
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # an application may flip it; the library never does
    from cfrjax import datagen
    from cfrjax.compile_cache import enable_compile_cache

    pots = None
    if args.pots is not None:
        try:
            pots = tuple(float(p) for p in args.pots.split(","))
        except ValueError:
            raise ValueError(f"--pots {args.pots!r}: expected chips separated by commas, e.g. 10,20,40") from None
    config = datagen.DatagenConfig(args.spec, stack=args.stack, pots=pots, spots=args.spots, shards=args.shards,
                                   iterations=args.iterations, rule=args.rule, order=args.order,
                                   averaging=args.averaging, dtype=args.dtype, seed=args.seed, board=args.board)
    enable_compile_cache(args.compile_cache)
    from cfrjax.plan import resolve_plan
    plan = resolve_plan(choice=args.plan)
    _say_plan(args, plan)
    delay = float(os.environ.get(_CHUNK_DELAY_ENV, "0") or 0)

    def slow(shard):  # test hook: a pause after each shard, announced, so a test can interrupt a run
        print(f"{_CHUNK_DELAY_ENV}: shard {shard.index}", file=sys.stderr, flush=True)
        time.sleep(delay)

    with _Stop() as stop:
        r = datagen.generate(config, args.out, worker=args.worker, num_workers=args.num_workers, progress=None,
                             stop=lambda: stop.signum is not None, on_shard=slow if delay else None, plan=plan)
    done = r["skipped"] + r["written"]
    if args.json:
        print(json.dumps(dict(r, out=args.out, stopped_by=None if stop.signum is None else
                              signal.Signals(stop.signum).name)))
    else:
        rate = "" if r["solves_per_minute"] is None else f" ({r['solves_per_minute']:,.0f} solves per minute)"
        expl = "" if r["exploitability_pct_pot_median"] is None else \
            f"; exploitability median {r['exploitability_pct_pot_median']:.4g}%, max " \
            f"{r['exploitability_pct_pot_max']:.4g}% of the pot"
        print(f"datagen worker {r['worker']} of {r['num_workers']}: wrote {r['written']} shards ({r['spots']:,} "
              f"spots) to {args.out} in {r['seconds']:.1f} s{rate}{expl}; {done} of its {r['owned']} shards done")
    if stop.signum is not None:
        print(f"cfrjax: stopped by {signal.Signals(stop.signum).name} after the shard in flight; {done} of this "
              f"worker's {r['owned']} shards are written (run the same command to resume)", file=sys.stderr)
        return 128 + stop.signum
    return 0


# ----------------------------------------------------------------------------------------
# show

#: `cfrjax show SPOT NODE --sort` keys (largest first; "hand": hand-list order).
SHOW_SORTS = ("equity", "ev", "weight", "combos", "hand")


def _show(args) -> None:
    solution = [o for o, v in (("--checkpoint", args.checkpoint), ("--policy", args.policy),
                               ("--iterations", args.iterations)) if v is not None]
    from cfrjax.strategy import is_policy_file

    if not solution and is_policy_file(args.source):
        _show_policy(args)
    else:
        _show_node(args, solution)


def _show_node(args, solution: list) -> None:
    """`cfrjax show SPOT NODE`: the per-hand report of `cfrjax.public.report`, as a table."""
    import jax

    jax.config.update("jax_enable_x64", True)  # reports in float64; an application may flip it, the library never does
    import cfrjax
    from cfrjax.compile_cache import enable_compile_cache
    from cfrjax.public.report import check_reportable, decision_node, node_report

    if len(solution) != 1:
        raise ValueError(f"cfrjax show SPOT NODE needs one solution of the spot, got {len(solution) or 'none'}"
                         f"{' (' + ', '.join(solution) + ')' if solution else ''}: --checkpoint PATH (cfrjax solve "
                         "SPOT --checkpoint PATH), --policy PATH (--save-policy) or --iterations N (solve it here)")
    if args.iterations is not None and args.iterations <= 0:
        raise ValueError(f"--iterations must be positive, got {args.iterations}")
    for flag, path in (("--csv", args.csv), ("--npz", args.npz)):
        if path is not None and not path.endswith("." + flag[2:]):
            raise ValueError(f"{flag} {path!r}: the file name must end with .{flag[2:]}")
    with _Status(f"building {args.source} ..."):
        game = _load_game_quietly(args.source, "folded", args.form, args.hands, _iso(args))
    if cfrjax.forms.form_name(game) != "public":
        raise ValueError(f"cfrjax show SPOT NODE reports hands at public nodes of a poker spot in the public form; "
                         f"{args.source!r} is compiled to the {cfrjax.forms.form_name(game)} form (for its information "
                         "sets: cfrjax solve GAME --save-policy P.json, then cfrjax show P.json INFOSET)")
    code = "" if args.where == "root" else args.where
    decision_node(game, code)            # an unknown node fails before any solving
    check_reportable(game)               # so does a game without node reports
    enable_compile_cache(args.compile_cache)  # the report's program, kept: a later show of this spot reads it back
    if args.checkpoint is not None:
        state = cfrjax.load_checkpoint(args.checkpoint, game)
        policy = cfrjax.average_policy(game, state)
        origin = f"checkpoint {args.checkpoint} ({state.config.rule} {state.config.order}, iteration " \
                 f"{int(state.iteration)})"
        # the solve's own evaluation of this iteration, if its history holds one (cfrjax solve --checkpoint)
        last = (cfrjax.checkpoint.checkpoint_info(args.checkpoint).get("extra") or {}).get("history") or [[None]]
        expl = last[-1][2] if last[-1][0] == int(state.iteration) else float(cfrjax.evaluate(game, state)[0])
    elif args.policy is not None:
        policy = cfrjax.load_policy(args.policy, game)
        saved = cfrjax.strategy.policy_info(args.policy)["meta"] or {}
        run = f" ({saved['rule']} {saved['order']}, iteration {saved['iterations']})" \
            if {"rule", "order", "iterations"} <= set(saved) else ""
        origin = f"policy {args.policy}{run}"
        # the solve's own evaluation, if it recorded one (cfrjax solve --save-policy)
        expl = saved.get("exploitability")
        if expl is None:
            expl = float(cfrjax.exploitability(game, policy.astype(game.weights.dtype)))
    else:
        state = cfrjax.init(game, rule=args.rule, order=args.order, averaging=args.averaging, dtype=args.dtype)
        with _Status(f"solving {args.iterations} iterations ..."):
            state, trace = cfrjax.solve_with_trace(game, state, args.iterations, eval_every=args.iterations)
            policy = cfrjax.average_policy(game, state)
        origin = f"solved here: {args.iterations} iterations, {args.rule} {args.order} {args.dtype}"
        expl = float(trace.exploitability[-1])
    report = node_report(game, policy, code)
    _print_report(report, origin, expl, args)
    if args.csv:
        rows = report.rows(args.player, all_hands=args.all)
        print(f"  csv: {_write_result('csv table', args.csv, lambda path: report.save_csv(path, rows))}")
    if args.npz:
        print(f"  npz: {_write_result('report', args.npz, report.save_npz)}")


def _flop_report(args) -> int:
    """`cfrjax report TREE --out DIR` (solve and collect) and `cfrjax report show DIR`."""
    from cfrjax.games.poker import flop_report as fr
    from cfrjax.games.poker.flops import canonical_flop, flop_str

    if args.tree == "show":
        if args.folder is None:
            raise ValueError("cfrjax report show DIR: give the report folder")
        if args.flop is None:
            summary = fr.collect(args.folder, write=False)
            _print_flop_summary(summary)
            return 0
        from cfrjax.public.report import load_report

        name = flop_str(canonical_flop(args.flop))
        path = os.path.join(args.folder, "flops", name)
        if not os.path.exists(path + ".json"):
            raise ValueError(f"{args.folder!r} holds no solved flop {args.flop} (its class: {name})")
        with open(path + ".json") as f:
            record = json.load(f)
        _print_report(load_report(path + ".npz"), f"report {args.folder}, flop {name} (weight {record['weight']}), "
                      f"{record['iterations']} iterations {record['rule']}", record["exploitability"], args)
        return 0
    if args.folder is not None:
        raise ValueError(f"cfrjax report TREE takes one tree file; {args.folder!r} is extra (the folder is --out DIR)")
    if args.out is None:
        raise ValueError("cfrjax report TREE needs --out DIR (the report folder; a run resumes there)")
    import jax

    jax.config.update("jax_enable_x64", True)   # the reports' float64 (as cfrjax show); the solve keeps --dtype
    options = fr.ReportOptions(target=args.target, max_iterations=args.max_iterations, rule=args.rule,
                               order=args.order, dtype=args.dtype, batch=args.batch)
    solved = fr.run_report(args.tree, args.flops, args.out, options=options, worker=args.worker,
                           num_workers=args.num_workers, progress=True, num_flops=args.num_flops)
    summary = fr.collect(args.out)
    print(f"{len(solved)} flops solved here; the report holds {summary['flops']} ({args.out}/report.csv, "
          f"summary.json{', plots' if summary.get('plots') else ''})")
    _print_flop_summary(summary)
    return 0


def _print_flop_summary(summary: dict) -> None:
    """Means weighted by flop frequency: overall and by suits and pairing."""
    freq = [k for k in summary["all"] if k.count(":") == 1]
    print(f"  {summary['flops']} flops (weight {summary['weight']}); weighted means:")
    print(f"  {'':<12} {'expl %pot':>9} {'EV0':>8} {'eq0':>6}  " + " ".join(f"{k:>14}" for k in freq))
    groups = [("all", summary["all"])] + [(g, v) for t in ("suits", "pairing") for g, v in summary["by"][t].items()]
    for name, m in groups:
        cells = " ".join("-".rjust(14) if m.get(k) is None else f"{100 * m[k]:13.1f}%" for k in freq)
        print(f"  {name:<12} {m['exploitability_pct_pot']:9.3f} {m['ev0']:8.3f} {100 * m['equity0']:5.1f}%  {cells}")


def _print_report(r, origin: str, expl: float, args) -> None:
    """The hand x action table of a `NodeReport` (rows: one player's hands)."""
    import numpy as np

    meta = r.meta
    acting = r.player
    p = acting if args.player is None else args.player
    pot = meta.get("pot")
    where = "the root" if not r.node else repr(r.node)
    print(f"{r.game}: {where}, player {acting} to act ({', '.join(r.actions)}); board {meta.get('board', '?')}, "
          f"starting pot {pot:g}" if pot is not None else f"{r.game}: {where}, player {acting} to act")
    pct = f" ({100 * expl / pot:.4f}% of the pot)" if pot else ""
    print(f"  solution: {origin}; exploitability {expl:.6g}{pct}")
    for q in (0, 1):
        s = r.summary(q)
        freq = "" if "frequencies" not in s else "; " + ", ".join(
            f"{a} {100 * f:.1f}%" for a, f in zip(r.actions, s["frequencies"]))
        print(f"  player {q}{' (to act)' if q == acting else ''}: {s['combos']:.6g} combos, EV {s['ev']:+.4f}, "
              f"equity {100 * s['equity']:.2f}%{freq}")
    keep = r.rows(p, all_hands=args.all)
    rows = keep
    key = {"equity": r.equity[p], "ev": r.ev[p], "weight": r.weight[p], "combos": r.combos[p]}.get(args.sort)
    if key is not None:
        k = np.where(np.isnan(key[rows]), -np.inf, key[rows])
        rows = rows[np.argsort(-k, kind="stable")]
    if args.limit is not None:
        rows = rows[:max(0, args.limit)]
    acts = list(r.actions) if p == acting else []
    width = [max(6, len(a)) for a in acts]
    head = f"  {'hand':<6} {'weight':>8} {'combos':>9}  " + " ".join(f"{a:>{w}}" for a, w in zip(acts, width))
    print(head.rstrip() + f"  {'EV':>10} {'equity':>8}")
    for h in rows:
        probs = " ".join(f"{x:>{w}.3f}" for x, w in zip(r.strategy[h], width)) if acts else ""
        ev = "-" if np.isnan(r.ev[p, h]) else f"{r.ev[p, h]:+.4f}"
        eq = "-" if np.isnan(r.equity[p, h]) else f"{100 * r.equity[p, h]:.2f}%"
        line = f"  {r.hands[h]:<6} {r.weight[p, h]:>8.4g} {r.combos[p, h]:>9.4g}  {probs}"
        print(line.rstrip() + f"  {ev:>10} {eq:>8}")
    shown = f"{len(rows)} of {len(keep)}" if args.limit is not None else f"{len(rows)}"
    print(f"  {shown} hands of player {p} (sorted by {args.sort}; weight: reach with the range weight, combos: "
          "deals reaching the node, EV: chips won from the pot less chips still put in, given the node is reached "
          "(postflop-solver's), equity: showdown share vs the range here)")


def _show_policy(args) -> None:
    from cfrjax.games.poker.cards import canonical_hand, canonical_key
    from cfrjax.strategy import read_policy_file

    doc = read_policy_file(args.source)
    infosets = {canonical_key(k): v for k, v in doc["infosets"].items()}   # files written low card first too
    limit = 20 if args.limit is None else args.limit
    where = canonical_key(canonical_hand(args.where, strict=False))   # a poker hand in either card order
    if where in infosets:
        keys = [where]
    else:
        keys = [k for k in infosets if where in k]
    if not keys:
        sample = ", ".join(repr(k) for k in list(infosets)[:3])
        raise ValueError(f"no information set of {doc.get('game')!r} in {args.source} matches {args.where!r} "
                         f"({len(infosets)} information sets, e.g. {sample})")
    for key in keys[:max(1, limit)]:
        entry = infosets[key]
        print(f"{key}  (player {entry.get('player')})")
        actions = entry["actions"]
        width = max(len(a) for a in actions) if actions else 0
        for name, prob in actions.items():
            print(f"  {name:<{width}}  {prob:.6f}")
    if len(keys) > limit:
        print(f"... and {len(keys) - limit} more (use --limit or a longer name)")


# ----------------------------------------------------------------------------------------
# games

# OpenSpiel games listed when there is no `games/suite.toml`, and the sizes of OpenSpiel
# sources (as a `GameSpec`: histories and information sets), so that listing is instant.
BUILTIN_GAMES = (
    ("kuhn", "kuhn_poker"),
    ("leduc", "leduc_poker"),
    ("liars_dice_1x6", "liars_dice"),
    ("goofspiel4", "goofspiel(num_cards=4,imp_info=True)"),
    ("dark_hex_2x2", "dark_hex(num_rows=2,num_cols=2)"),
)
KNOWN_SIZES = {
    "kuhn_poker": (58, 12),
    "leduc_poker": (9457, 936),
    "liars_dice": (294883, 24576),
    "dark_hex(num_rows=2,num_cols=2)": (441, 134),
    "goofspiel(num_cards=4,imp_info=True)": (26773, 3608),
    "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))": (26931, 2124),
    "battleship(board_width=2,board_height=2,ship_sizes=[1],ship_values=[1],num_shots=4)": (209941, 30162),
}
#: `(public nodes, decision nodes x hands)` of the shipped poker specs in the public form, by
#: `_spec_digest` of the file: listing them takes no build (the flop's takes seconds). A spec
#: edited since has another digest: its sizes are '-' until `--sizes` builds it
#: (tests/test_formats.py checks this table against the builder).
SPEC_SIZES = {
    "c6b3b92065b70b51": (191844, 100270464),  # hunl_flop_full
    "42da9c4649a1025c": (15, 1200),  # hunl_river
    "6b3531a9d7045d70": (15, 6486),  # hunl_river_full
    "0e73a31d97618e67": (15, 6486),  # hunl_river_full_rake
    "957daef171fb6a1d": (3615, 34704),  # hunl_turn
    "df75c65bdc6435c6": (3615, 1631088),  # hunl_turn_full
    "37668eb0dad3fc73": (8235, 3584784),  # hunl_turn_full_raise
    "1730ee0da48b1a2e": (3615, 1631088),  # hunl_turn_full_rake
}


def _spec_digest(path: str) -> str:
    """The first 16 hex digits of the SHA-256 of a spec file's bytes (`SPEC_SIZES`' key)."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def _short(path):
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def _games_dir(arg):
    if arg is not None:
        if not os.path.isdir(arg):
            raise FileNotFoundError(f"--dir {arg}: no such directory")
        return arg
    for d in ("games", os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "games")):
        if os.path.isdir(d):
            return d
    return None


def _suite_entries(path):
    """`[[game]]` entries of a `suite.toml` (as bench/suite.py reads them): `(name, title, source)`."""
    import tomllib

    with open(path, "rb") as f:
        data = tomllib.load(f)
    games = data.get("game", [])
    if not isinstance(games, list) or not all(isinstance(g, dict) and isinstance(g.get("source"), str)
                                              for g in games):
        raise ValueError(f"{path}: expected [[game]] tables with a 'source' string")
    return [(str(g.get("name", g["source"])), str(g.get("title", "")), g["source"]) for g in games]


def _resolve_source(src, games_dir):
    """A `.toml`/`.npz` source relative to the repository root (the parent of games/) or to
    games/ itself; other sources (OpenSpiel strings) as they are."""
    if not src.endswith((".toml", ".npz")) or os.path.isabs(src):
        return src
    for base in (os.path.dirname(os.path.abspath(games_dir)), games_dir):
        if os.path.isfile(os.path.join(base, src)):
            return _short(os.path.join(base, src))
    return src


def _sizes(src, compute):
    """`(nodes, infosets, form)` of a source in the form `cfrjax solve` compiles it to;
    sizes `None` where they are not known in advance and `compute` is false (nothing is
    imported or built then: no JAX, no OpenSpiel)."""
    if src.endswith(".toml") and not compute:
        return (*SPEC_SIZES.get(_spec_digest(src), (None, None)), "public")
    if src.endswith(".toml"):
        from cfrjax.games.poker import load_poker_config
        from cfrjax.games.poker.public_tree import build_public
        g = build_public(load_poker_config(src))
        return g.num_nodes, g.num_infosets * g.num_hands, "public"
    if src.endswith(".npz"):
        import numpy as np
        with np.load(src) as z:
            meta = json.loads(z["meta"].tobytes().decode())
        return meta["num_nodes"], meta["num_infosets"], "tabular"
    if src in KNOWN_SIZES:
        return (*KNOWN_SIZES[src], "tabular")
    if compute:
        from cfrjax.games.openspiel import spec_from_openspiel
        s = spec_from_openspiel(src)
        return s.num_nodes, s.num_infosets, "tabular"
    return None, None, "tabular"


def _games(args) -> None:
    from cfrjax.specs import shipped_specs

    d = _games_dir(args.dir)
    suite = os.path.join(d, "suite.toml") if d else None
    if suite and os.path.isfile(suite):
        entries = [(n, _resolve_source(src, d)) for n, _, src in _suite_entries(suite)]
    else:
        entries = list(BUILTIN_GAMES)
    listed = {os.path.realpath(src) for _, src in entries if os.path.isfile(src)}
    extra = [(os.path.splitext(f)[0], _short(os.path.join(d, f))) for f in sorted(os.listdir(d))
             if f != "suite.toml" and f.endswith((".toml", ".npz"))] if d else []
    extra += [(name, _short(path)) for name, path in shipped_specs().items()]
    for name, src in extra:
        if os.path.realpath(src) not in listed:
            entries.append((name, src))
            listed.add(os.path.realpath(src))
    rows = []
    for name, src in entries:
        try:
            nodes, infosets, form = _sizes(src, args.sizes)
        except Exception as e:  # noqa: BLE001 - a listing shows a bad entry instead of failing
            nodes, infosets, form = None, None, "-"
            name = f"{name} ({type(e).__name__}: {' '.join(str(e).split())[:60]})"
        rows.append((name, src, form, nodes, infosets))
    fmt = lambda x: "-" if x is None else f"{x:,}"  # noqa: E731
    w0 = max(len("game"), *(len(r[0]) for r in rows))
    w1 = max(len("source"), *(len(r[1]) for r in rows))
    print(f"{'game':<{w0}}  {'source':<{w1}}  {'form':<7}  {'nodes':>9}  {'infosets':>9}")
    for name, src, form, nodes, infosets in rows:
        print(f"{name:<{w0}}  {src:<{w1}}  {form:<7}  {fmt(nodes):>9}  {fmt(infosets):>9}")
    unknown = any(r[3] is None for r in rows)
    print("solve one with: cfrjax solve NAME (a shipped spec) or SOURCE; any OpenSpiel game string works too; "
          "poker specs compile to the public form (nodes: public nodes; infosets: decision nodes x hands), "
          "--form tabular for the per-deal tree"
          + ("; sizes '-' are computed by --sizes (may take a while)" if unknown and not args.sizes else ""))


# ----------------------------------------------------------------------------------------


def _exit_now(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def main(argv=None) -> int:
    if (sys.argv[1:] if argv is None else list(argv))[:1] == ["games"]:
        return _games_command(argv)
    args = _parser().parse_args(argv)
    from cfrjax.memory import MemoryPlanError
    from cfrjax.multihost import PeerLostError
    from cfrjax.spec import SpecError

    try:
        _check_outputs(args)
        if args.command == "show":
            _show(args)
            return 0
        if args.command == "datagen":
            return _datagen(args)
        if args.command == "report":
            return _flop_report(args)
        if args.command == "solve-batch":
            supervised = _supervised_batch(args, sys.argv[1:] if argv is None else list(argv))
            if supervised is not None:
                return supervised
            return _report_batch(args, _solve_batch(args))
        result = _solve(args)
    except _Interrupted as e:
        name = signal.Signals(e.signum).name
        print(f"cfrjax: stopped by {name} at iteration {e.iteration}; checkpoint {e.path} is complete "
              "(run the same command to resume)", file=sys.stderr)
        return 128 + e.signum
    except _CtrlC as e:
        reached = "" if e.exploitability is None else \
            f"; exploitability {e.exploitability[1]:.6e} at iteration {e.exploitability[0]}"
        print(f"cfrjax: interrupted at iteration {e.iteration}{reached} (nothing saved: use --checkpoint PATH "
              "to keep and resume a run)", file=sys.stderr)
        if argv is None:  # as below: the next chunk may still be running on XLA's threads; end here
            _exit_now(130)
        return 130
    except KeyboardInterrupt:
        if args.command == "solve-batch":
            print(f"cfrjax: interrupted; the shard files in {args.out} hold the chunks completed so far (run the "
                  "same command to resume)", file=sys.stderr)
        else:
            print("cfrjax: interrupted before any iteration ran", file=sys.stderr)
        if argv is None:  # the program itself: XLA may still be compiling on another thread, and an interpreter
            _exit_now(130)  # shutdown under it can crash (SIGSEGV instead of 130); end the process here
        return 130
    except PeerLostError as e:
        return _error(e, code=1)
    except (SpecError, ValueError, OSError, ImportError, MemoryPlanError) as e:
        if getattr(e, "plan", None) is not None and getattr(args, "memory_plan", False):
            print(e.plan.table(), file=sys.stderr)   # the refused plan, asked for by --memory-plan
        return _error(e)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['game']}: {result['rule']} {result['order']} {result['averaging']} {result['dtype']}, "
              f"{result['iterations']} iterations")
        pct = "" if result.get("pot") is None else \
            f" ({result['exploitability_pct_pot']:.6f}% of the starting pot {result['pot']:g})"
        print(f"  exploitability {result['exploitability']:.6e}{pct}   value (player 0) {result['value']:.6f}")
        if "values" in result:
            print(f"  raked: value (player 1) {result['values'][1]:.6f}, expected rake {result['expected_rake']:.6f}")
        print(f"  {result['nodes']:,} nodes, {result['infosets']:,} infosets, {result['slots']:,} slots, "
              f"depth {result['depth']}")
        if "target" in result:
            unit = "" if result["target_pct_pot"] is None else f" ({result['target_pct_pot']:.4g}% of the pot)"
            print(f"  target {result['target']:.6g}{unit}: " + (
                f"reached at iteration {result['iterations']}, {result['seconds_to_target']:.2f} s from the start"
                if result["seconds_to_target"] is not None else "met by the checkpoint" if result["target_reached"]
                else f"not reached by the cap, --max-iterations {result['max_iterations']}"))
        print(f"  build {result['build_s']:.2f} s, trace {result['trace_s']:.2f} s, "
              f"compile {result['compile_s']:.2f} s (compilation cache {result['compile_cache']}), solve {result['solve_s']:.3f} s "
              f"({result['ms_per_iter']:.4f} ms/iter), evaluation {result['eval_s']:.3f} s on {result['device']}")
        for what, path in (("policy", args.save_policy), ("plot", args.plot), ("checkpoint", args.checkpoint)):
            if path:
                print(f"  {what}: {path}")
    return 0


def _games_command(argv) -> int:
    """`cfrjax games`, parsed and run without the other commands' imports (their option
    choices import JAX): the listing takes a fraction of a second."""
    p = _Parser(prog="cfrjax")
    _games_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    try:
        _games(args)
    except (ValueError, OSError) as e:
        return _error(e)
    return 0


def _error(e: Exception, code: int = 2) -> int:
    """The one-line error of `e` on stderr; returns the exit `code` (2: bad input)."""
    msg = " ".join(str(e).split()) or type(e).__name__
    print(f"cfrjax: error: {msg}", file=sys.stderr)
    return code


def _report_batch(args, r: dict) -> int:
    if args.json:
        print(json.dumps(r))
        return 0
    ms = "-" if r["ms_per_iter"] is None else f"{r['ms_per_iter']:.3f} ms/iter"
    resumed = "" if r["resumed_from"] is None else f" (resumed at {r['resumed_from']})"
    print(f"process {r['process_id']} of {r['num_processes']}: {r['game']} rows [{r['rows'][0]}, {r['rows'][1]}) "
          f"of {r['batch']}, {r['iterations_done']} iterations{resumed} on {r['devices']} {r['device_kind']} "
          f"device(s) -> {r['path']}")
    print(f"  build {r['build_s']:.2f} s, first chunk (with compiling) {r['first_chunk_s'] or 0:.2f} s, "
          f"then {ms} for the {r['batch'] // r['num_processes']}-subgame share")
    if r.get("target") is not None:
        print(f"  target {r['target']:.6g}: {r['stopped']} of {r['rows'][1] - r['rows'][0]} subgames stopped at it, "
              f"largest exploitability {r['exploitability_max']:.6g}; evaluation {r['eval_s']:.2f} s")
    return 0
