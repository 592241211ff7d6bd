"""The river data generator (`cfrjax.datagen`, `cfrjax datagen`).

Checked: DeepStack's recursive range sampling and the hand strength it sorts by (by hand
and against eval7), the tree groups of a pot grid, the worker split and SLURM's array
variables, the shard schema and what the labels mean (a stored spot re-evaluated on a
fresh build in chips, its per-hand values by the brute-force evaluator), and that a
dataset is the same whatever the split and however it is interrupted: a command-line run
stopped by SIGTERM, and another killed by SIGKILL, each after its first shard, then
completed in this process, equal a run split over two workers, array for array.

One tiny tree (a river with one pot-sized bet and no raise, full ranges, 2 spots per
shard, 3 shards, 8 iterations of CFR+) so the suite compiles its executables once (in the
first command-line run; the others read them from the session's compilation cache); the two
command-line runs start in the background at collection (`tests/background.py`) with 64-bit
types on, as in this process, so that both run the same programs.
"""

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np
import pytest

import background
import cfrjax
from cfrjax import datagen
from cfrjax.cli import main as cli_main
from cfrjax.games.poker import (
    COMBO_NAMES, COMBOS, PokerSpecError, PokerSubgameSpec, card_str, combos_blocked_by, parse_board, parse_combo)
from cfrjax.games.poker.public_tree import build_public
from cfrjax.policy import normalize

jax.config.update("jax_enable_x64", True)

WORK = tempfile.mkdtemp(prefix="cfrjax-datagen-")
SPEC = os.path.join(WORK, "tiny_river.toml")
with open(SPEC, "w") as _f:
    _f.write('game = "poker_subgame"\nname = "tiny_river"\nboard = "Ks Js Th 7d 2c"\npot = 10\nstack = 55\n'
             '[betting]\nbet_fractions = [1.0]\nraise_cap = 0\n')
# CFR+ simultaneous: one pass per iteration, the cheapest solve to compile (the rule is not what is tested here).
OPTIONS = dict(pots=(10.0, 20.0), shards=3, spots=2, iterations=8, seed=3, rule="cfr+", order="simultaneous")
CLI_ARGS = ("datagen", SPEC, "--shards", "3", "--spots", "2", "--iterations", "8", "--pots", "10,20", "--seed", "3",
            "--rule", "cfr+", "--order", "simultaneous")


def config(**kw):
    return datagen.DatagenConfig(SPEC, **{**OPTIONS, **kw})


# ----------------------------------------------------------------------------------------
# Background: command-line runs interrupted after their first shard.


def _interrupted(sig):
    """`cfrjax datagen` into a fresh folder, `sig` sent once its first shard exists (each
    shard is followed by a 2 s pause, the test hook, while the next one is in flight):
    `(folder, return code, stderr, files there when the signal was sent)`."""
    out = os.path.join(WORK, f"run-{sig.name}")
    env = dict(os.environ, JAX_ENABLE_X64="1", CFRJAX_TEST_CHUNK_DELAY_S="2")
    proc = subprocess.Popen([sys.executable, "-m", "cfrjax", *CLI_ARGS, "--out", out], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    first = datagen.shard_path(out, 0, 3)
    deadline = time.time() + 240
    while not os.path.exists(first) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    there = sorted(os.listdir(out)) if os.path.isdir(out) else []
    if os.path.exists(first):
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=240)
    return out, proc.returncode, err, there


BACKGROUND = {"sigterm": lambda: _interrupted(signal.SIGTERM), "sigkill": lambda: _interrupted(signal.SIGKILL)}


atexit.register(shutil.rmtree, WORK, True)   # also when the module's tests are all deselected


@pytest.fixture(scope="module")
def reference():
    """The dataset written by two workers, one after the other (after the SIGTERM run:
    its executables are then read back from the session's compilation cache)."""
    background.result(__name__, "sigterm")
    out = os.path.join(WORK, "reference")
    cfg = config()
    for w in (1, 0):
        r = datagen.generate(cfg, out, worker=w, num_workers=2, progress=False)
        assert r["written"] == len(range(w, 3, 2)) and r["complete"]
        assert r["plan"]["name"] == "auto"                                 # the plan that ran
    return out


def shards_of(out) -> dict:
    return {i: datagen.load_shard(datagen.shard_path(out, i, 3)) for i in range(3)}


def assert_same_dataset(a, b):
    sa, sb = shards_of(a), shards_of(b)
    for i in range(3):
        assert sa[i]["meta"] == sb[i]["meta"], i
        for k in datagen.ARRAYS:
            assert sa[i][k].dtype == sb[i][k].dtype and np.array_equal(sa[i][k], sb[i][k]), (i, k)


# ----------------------------------------------------------------------------------------
# Sampling.


def test_recursive_ranges_by_hand():
    """Three and four live hands: the weaker floor(n / 2) get u1 of the mass, then each
    half is split again, one uniform per split, level by level (the draws replayed from a
    copy of the generator)."""
    strength = np.full(1326, np.nan)
    strength[[7, 3, 11]] = [0.5, 0.2, 0.9]                      # ascending: 3, 7, 11
    rng = np.random.default_rng(5)
    u1, u2 = np.random.default_rng(5).random((2, 4, 1))
    r = datagen.recursive_ranges(strength, 4, rng)
    np.testing.assert_allclose(r[:, 3], u1[:, 0])
    np.testing.assert_allclose(r[:, 7], (1 - u1[:, 0]) * u2[:, 0])
    np.testing.assert_allclose(r[:, 11], (1 - u1[:, 0]) * (1 - u2[:, 0]))
    assert np.count_nonzero(r) == 12

    strength[20] = 0.5                                           # a tie with 7: combo order, 7 first
    copy = np.random.default_rng(9)
    a = copy.random((3, 1))[:, 0]
    b, c = copy.random((3, 2)).T
    r = datagen.recursive_ranges(strength, 3, np.random.default_rng(9))
    np.testing.assert_allclose(r[:, [3, 7, 20, 11]], np.stack([a * b, a * (1 - b), (1 - a) * c, (1 - a) * (1 - c)], 1))


def test_recursive_ranges_on_a_board():
    board = parse_board("Ks Js Th 7d 2c")
    strength = datagen.hand_strength(board)
    r = datagen.recursive_ranges(strength, 400, np.random.default_rng(0))
    blocked = combos_blocked_by(board)
    np.testing.assert_allclose(r.sum(1), 1.0)
    assert (r[:, blocked] == 0).all() and (r[:, ~blocked] > 0).all()
    # The first split gives the weaker 540 of the 1,081 hands a uniform share of the mass.
    weak = np.argsort(np.where(blocked, np.inf, strength), kind="stable")[:540]
    share = r[:, weak].sum(1)
    assert 0.4 < share.mean() < 0.6 and 0.05 < np.mean(share < 0.1) < 0.16
    # Chunks of ranges on threads: the same numbers, and the generator left in the same state.
    # (a split of each of the 1,080 segments with two hands or more: 1,080 draws per range)
    after = np.random.default_rng(0).random(400 * 1080 + 1)[-1]
    for workers in (1, 3, 8):
        rng = np.random.default_rng(0)
        assert np.array_equal(datagen.recursive_ranges(strength, 400, rng, workers=workers), r)
        assert rng.random() == after


def test_hand_strength():
    board = parse_board("Ks Js Th 7d 2c")   # no flush possible: AQ is the nut straight
    s = datagen.hand_strength(board)
    aq = parse_combo("AsQs")
    # 990 opponent hands share no card with AsQs and the board; 9 of them (AQ without a spade) tie.
    assert s[aq] == pytest.approx((981 + 4.5) / 990, abs=1e-15)
    assert np.isnan(s[combos_blocked_by(board)]).all()
    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    spot = bf.Spot("Ks Js Th 7d 2c", 10, 55, (1.0,), range0={}, range1={})
    live = np.flatnonzero(~combos_blocked_by(board))
    for h in np.random.default_rng(1).choice(live, 3, replace=False):
        mine = tuple(int(c) for c in COMBOS[h])
        wins = ties = total = 0
        for g in live:
            other = tuple(int(c) for c in COMBOS[g])
            if set(mine) & set(other):
                continue
            a, b = spot.strength(mine, tuple(board)), spot.strength(other, tuple(board))
            wins, ties, total = wins + (a > b), ties + (a == b), total + 1
        assert s[h] == pytest.approx((wins + ties / 2) / total, abs=1e-15)


def test_tree_groups_and_config_errors():
    # Stack 55, one pot-sized bet. Pots 10 and 20 (behind 50, 45) fit a pot bet: one game
    # divided by the pot. Pot 40 (behind 35) caps it to an all-in of 0.875 pots, pot 60
    # (behind 25) to 0.417 pots: two other games. Pot 110: nothing behind, check-check only.
    cfg = config(pots=(10, 40, 20, 60, 110))
    assert cfg.tree_groups == ((0, 2), (1,), (3,), (4,))
    assert cfg.pots == (10.0, 40.0, 20.0, 60.0, 110.0) and cfg.stack == 55.0
    assert datagen.default_pots(110) == (6.875, 13.75, 27.5, 55.0, 110.0)
    for kw, msg in ((dict(pots=(10, 111)), "pot 111 is outside"), (dict(pots=(10, 10)), "twice"),
                    (dict(spots=0), "spots 0"), (dict(rule="cfrx"), "unknown rule 'cfrx'")):
        with pytest.raises((ValueError, PokerSpecError), match=msg) as e:
            config(**kw)
        assert "\n" not in str(e.value)
    with pytest.raises(PokerSpecError, match="turn spot"):
        datagen.DatagenConfig("hunl_turn_full")
    with pytest.raises(PokerSpecError, match="no_such_spec"):
        datagen.DatagenConfig("no_such_spec")


def test_shard_samples_follow_the_distribution():
    cfg = config(pots=(10, 20, 110), shards=8, spots=4)
    groups = []
    for i in range(8):
        s = datagen.sample_shard(cfg, i)
        assert s.ranges.shape == (4, 2, 1326) and s.ranges.dtype == np.float32
        assert s.boards.shape == (4, 5) and all(len(set(b)) == 5 for b in s.boards.tolist())
        assert set(s.pots) <= set(cfg.pots[k] for k in cfg.tree_groups[s.group])
        groups.append(s.group)
    assert cfg.tree_groups == ((0, 1), (2,)) and 0 < groups.count(1) < 8    # group 1 drawn with probability 1/3
    # Shard i depends on the seed and i only; another seed gives other spots.
    a, b = datagen.sample_shard(cfg, 7), datagen.sample_shard(config(pots=(10, 20, 110), shards=8, spots=4), 7)
    assert np.array_equal(a.ranges, b.ranges) and np.array_equal(a.boards, b.boards)
    c = datagen.sample_shard(config(pots=(10, 20, 110), shards=8, spots=4, seed=4), 7)
    assert not np.array_equal(a.ranges, c.ranges)


def test_fixed_board_cards():
    """`board` fixes cards of every spot's board (the rest uniform per spot); the default
    draw is the whole board, and the manifest names `board` only where cards are fixed."""
    cfg = config(board="7d Ks Js Th", shards=3, spots=4)
    assert cfg.board == tuple(sorted(parse_board("Ks Js Th 7d").tolist()))
    assert cfg.manifest()["board"] == "7d Th Js Ks"              # card ids ascending
    rivers = set()
    for i in range(3):
        for board in datagen.sample_shard(cfg, i).boards:
            b = set(board.tolist())
            assert len(b) == 5 and set(cfg.board) <= b
            rivers |= b - set(cfg.board)
    assert len(rivers) > 6                                      # the fifth card varies
    assert "board" not in config().manifest() and config(board="").board is None
    for bad, msg in (("Ks Js Th 7d 2c", "at most 4"), ("Ks Ks", "appears twice"), ("Kx", "Kx")):
        with pytest.raises(PokerSpecError, match=msg):
            config(board=bad)


def test_worker_split_and_slurm_variables():
    parts = [list(datagen.worker_shards(10, w, 3)) for w in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    assert datagen.worker_from_env({}) == (0, 1)
    env = dict(SLURM_ARRAY_TASK_ID="7", SLURM_ARRAY_TASK_MIN="3", SLURM_ARRAY_TASK_COUNT="5")
    assert datagen.worker_from_env(env) == (4, 5)
    assert datagen.worker_from_env(dict(env, SLURM_ARRAY_TASK_STEP="2", SLURM_ARRAY_TASK_ID="9")) == (3, 5)
    with pytest.raises(ValueError, match="evenly"):
        datagen.worker_from_env(dict(env, SLURM_ARRAY_TASK_ID="9"))
    with pytest.raises(ValueError, match="worker 3 must be"):
        datagen.worker_shards(10, 3, 3)


def test_cli_errors_are_one_line(tmp_path, capsys):
    out = str(tmp_path / "d")
    for extra, msg in ((("--pots", "10,x"), "--pots '10,x'"), (("--pots", "10,200"), "pot 200 is outside"),
                       (("--worker", "1"), "both worker and num_workers"), (("--form", "tabular"), "public form"),
                       (("--board", "Ks Js Th 7d 2c"), "at most 4")):
        assert cli_main([*CLI_ARGS, "--out", out, *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("cfrjax: error:") and msg in err[0], err


# ----------------------------------------------------------------------------------------
# The data.


def test_schema_and_labels(reference):
    cfg = config()
    with open(os.path.join(reference, datagen.MANIFEST)) as f:
        manifest = json.load(f)
    assert manifest == cfg.manifest()
    assert {k: manifest["betting"][k] for k in ("bet_fractions", "raise_fractions", "raise_cap")} == dict(
        bet_fractions=[1.0], raise_fractions=None, raise_cap=0)
    data = datagen.read_dataset(reference)
    N = 6
    shapes = dict(board=((N, 5), np.int8), pot=((N,), np.float64), stack=((N,), np.float64),
                  ranges=((N, 2, 1326), np.float32), values=((N, 2, 1326), np.float32), norm=((N,), np.float64),
                  value=((N, 2), np.float64), exploitability=((N,), np.float64),
                  exploitability_pct_pot=((N,), np.float64))
    for k, (shape, dt) in shapes.items():
        assert data[k].shape == shape and data[k].dtype == dt, k
    assert list(data["shard"]) == [0, 0, 1, 1, 2, 2] and set(data["pot"]) <= {10.0, 20.0}
    assert (data["stack"] == 55).all()
    for n in range(N):
        board = data["board"][n]
        blocked = combos_blocked_by(board)
        r = data["ranges"][n].astype(np.float64)
        assert np.allclose(r.sum(1), 1.0, atol=1e-6) and (r[:, blocked] == 0).all()
        assert (data["values"][n][:, blocked] == 0).all()
        # The probability that two hands drawn from the ranges share no card, by brute force
        # (pairs of live combos sharing no card; one board per spot).
        cards = COMBOS[~blocked]
        compat = ~(cards[:, None, :, None] == cards[None, :, None, :]).any((-1, -2))
        assert data["norm"][n] == pytest.approx(r[0, ~blocked] @ compat @ r[1, ~blocked], rel=1e-12)
        # Per-hand values weighted by the ranges: each player's value, in chips.
        got = (r * data["values"][n]).sum(1) * data["pot"][n] / data["norm"][n]
        np.testing.assert_allclose(got, data["value"][n], atol=1e-5 * data["pot"][n])
        assert data["value"][n, 1] == pytest.approx(-data["value"][n, 0], abs=1e-9)
    assert (data["exploitability"] > 0).all()
    np.testing.assert_allclose(data["exploitability_pct_pot"], 100 * data["exploitability"] / data["pot"])
    meta = datagen.load_shard(datagen.shard_path(reference, 1, 3))["meta"]
    assert meta["shard"] == 1 and meta["schema"] == 2 and meta["iterations"] == 8 and meta["tree_pots"] == [10.0, 20.0]


@jax.jit
def _evaluate(game, avg):
    """`(policy, expected value)` of the average `avg`."""
    policy = normalize(game, avg)
    return policy, cfrjax.expected_value(game, policy)


def test_stored_spot_reevaluated_on_a_fresh_build(reference):
    """Shard 1 solved again (`solve_spots`: the same arrays as stored), and its spot 0's
    average policy (solved as the game of pot 10, the group's first) evaluated on the spot
    built afresh in chips at its own pot, 20, from the stored board and ranges (labels
    kept, float64): the value by `cfrjax.expected_value`, per-hand
    values of a few hands by the brute-force evaluator (eval7, deal by deal). (The
    exploitability is the same best-response pass every solve reports; a second compile
    of it here would double this test's cost.)"""
    cfg = config()
    stored = datagen.load_shard(datagen.shard_path(reference, 1, 3))
    job = datagen.solve_spots(cfg, datagen.sample_shard(cfg, 1))
    again = job.result()
    for k in datagen.ARRAYS:
        assert np.array_equal(again[k], stored[k]), k
    n = 0
    pot = float(stored["pot"][n])
    assert pot == 20.0 and cfg.reference_pot(stored["meta"]["tree_group"]) == 10.0
    board = " ".join(card_str(c) for c in stored["board"][n])
    r = stored["ranges"][n].astype(np.float64)
    g = build_public(PokerSubgameSpec(board=board, pot=pot, stack=55, bet_fractions=(1.0,), raise_cap=0,
                                      range0=r[0], range1=r[1]), dtype="float64")
    avg = jax.tree.map(lambda x: x[n], job.states).avg.astype(np.float64)
    policy, ev = _evaluate(g, avg)
    assert float(ev) == pytest.approx(stored["value"][n, 0], rel=1e-9, abs=1e-12)

    bf = pytest.importorskip("poker_brute_force", reason="needs eval7")
    p = np.asarray(policy)
    table = {key: tuple(p[sl, h]) for key, sl, h in g.labels.infoset_keys()}
    ranges = [{COMBO_NAMES[h]: float(r[q, h]) for h in np.flatnonzero(r[q])} for q in (0, 1)]
    for q in (0, 1):
        for h in np.argsort(-r[q])[[0, 1, 500]]:     # the two likeliest hands and one unlikely
            one = {COMBO_NAMES[h]: 1.0}
            spot = bf.Spot(board, pot, 55, (1.0,), None, 0, *((one, ranges[1]) if q == 0 else (ranges[0], one)))
            want = spot.expected_value(table) * spot.norm() / pot * (1 if q == 0 else -1)
            assert stored["values"][n, q, h] == pytest.approx(want, rel=1e-5, abs=1e-7), (q, h)


def test_manifest_guards_the_folder(reference):
    with pytest.raises(ValueError, match="iterations 8 there, 9 here"):
        datagen.generate(config(iterations=9), reference, worker=0, num_workers=1, progress=False)


def test_a_folder_with_the_older_six_digit_names_is_read_and_resumed(reference, tmp_path):
    """Shards were once named with 6 digits: such a folder is complete (nothing rewritten)
    and reads as the same dataset."""
    old = tmp_path / "old"
    shutil.copytree(reference, old)
    for i in range(3):
        os.rename(old / f"shard-{i:05d}-of-00003.npz", old / f"shard-{i:06d}-of-000003.npz")
    names = [datagen.MANIFEST, "shard-000000-of-000003.npz", "shard-000001-of-000003.npz", "shard-000002-of-000003.npz"]
    assert sorted(os.listdir(old)) == names
    r = datagen.generate(config(), old, progress=False)
    assert (r["skipped"], r["written"], r["complete"]) == (3, 0, True) and sorted(os.listdir(old)) == names
    a, b = datagen.read_dataset(old), datagen.read_dataset(reference)
    for k in datagen.ARRAYS + ("shard",):
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


@pytest.mark.background("sigterm")
def test_sigterm_then_rerun_equals_split_run(reference):
    out, rc, err, there = background.result(__name__, "sigterm")
    assert "shard-00000-of-00003.npz" in there, err
    assert rc == 128 + signal.SIGTERM, err
    lines = [l for l in err.splitlines() if l.startswith("cfrjax:")]
    assert len(lines) == 1 and "stopped by SIGTERM" in lines[0] and "Traceback" not in err
    # Shard 1 was in flight when the signal came (shard 0 written, the pause): it was finished.
    assert "shard-00001-of-00003.npz" not in there
    kept = sorted(f for f in os.listdir(out) if f != datagen.MANIFEST)
    assert kept[:2] == ["shard-00000-of-00003.npz", "shard-00001-of-00003.npz"] and len(kept) < 3, kept
    r = datagen.generate(config(), out, progress=False)
    assert (r["skipped"], r["written"], r["complete"]) == (2, 1, True)
    assert_same_dataset(out, reference)


@pytest.mark.background("sigkill")
def test_sigkill_then_rerun_equals_split_run(reference):
    out, rc, err, there = background.result(__name__, "sigkill")
    assert "shard-00000-of-00003.npz" in there, err
    assert rc == -signal.SIGKILL, err
    kept = sorted(f for f in os.listdir(out) if f.startswith("shard-"))
    assert kept[0] == "shard-00000-of-00003.npz" and len(kept) < 3, kept    # shard 2 was never dispatched
    for f in kept:                           # complete shards only
        datagen.load_shard(os.path.join(out, f))
    # A writer killed mid-write leaves its temporary file: the rerun removes it.
    with open(os.path.join(out, ".shard-00002-of-00003.npz.x1y2z3.tmp"), "wb") as f:
        f.write(b"torn")
    r = datagen.generate(config(), out, progress=False)
    assert r["skipped"] == len(kept) and r["complete"]
    assert sorted(os.listdir(out)) == [datagen.MANIFEST] + [datagen.shard_path("", i, 3) for i in range(3)]
    assert_same_dataset(out, reference)
