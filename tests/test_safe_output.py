"""Nothing lost, nothing killed: output paths checked before any work, a result whose write
fails after the solve kept in a named file, and a spot too large for the machine refused
from its betting tree in seconds, before it is built (`MemoryPlanError`), with a plan equal
to the built game's."""

import os
import re
import shutil

import numpy as np
import pytest

import cfrjax
from cfrjax import cli
from cfrjax.games.poker import PokerSubgameSpec, load_poker_config
from cfrjax.games.poker.public_tree import build_public, check_public_fits, public_plan, public_shapes
from cfrjax.games.poker.subgame import check_tabular_fits, tabular_sizes
from cfrjax.memory import MemoryPlanError, memory_plan, plan_from_sizes

HERE = os.path.dirname(os.path.abspath(__file__))
#: A realistic three-bet-pot flop (two bet sizes and raises on every street, every live
#: combo): a public tree of 2.5 million nodes and 2.2 million slots x 1,176 hands, a plan
#: of about 240 GiB. Building it took 22.8 GB before the refusal existed.
BIG_FLOP = os.path.join(HERE, "fixtures", "spots", "3bp_Ah8d4c_flop.toml")
#: A flop with the smallest betting (one size, no raises; three hands): 2,352 boards.
TINY_FLOP = dict(board="Ks 7d 2c", pot=20, stack=30, bet_fractions=(1.0,), raise_cap=0,
                 range0={"AsAh": 1, "QhJh": 1}, range1={"KdQd": 1, "9h8h": 1})


def _main(argv, capsys):
    code = cli.main(argv)
    return code, capsys.readouterr()


def _one_error_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cfrjax: error:"), err
    return lines[0]


# ----------------------------------------------------------------------------------------
# Output paths


@pytest.mark.parametrize("argv", [
    ["solve", "kuhn_poker", "--save-policy", "{x}/p.npz"],
    ["solve", "kuhn_poker", "--plot", "{x}/c.png"],
    ["solve", "kuhn_poker", "--save-game", "{x}/g.npz"],
    ["solve", "kuhn_poker", "--checkpoint", "{x}/sub/run.ckpt"],
    ["show", "hunl_river", "root", "--iterations", "5", "--csv", "{x}/r.csv"],
    ["show", "hunl_river", "root", "--iterations", "5", "--npz", "{x}/r.npz"],
    ["solve-batch", "hunl_river", "--batch", "2", "--out", "{x}/shards"],
    ["datagen", "--out", "{x}/data", "--shards", "1"],
])
def test_output_path_refused_before_any_work(argv, tmp_path, monkeypatch, capsys):
    """An output folder that cannot be created (a file in the way): one line, exit code 2,
    and no command ran (each command's body fails the test if called)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder")

    def ran(*a, **k):
        raise AssertionError("the command ran before its output paths were checked")

    for name in ("_solve", "_show", "_datagen", "_solve_batch", "_supervised_batch", "_load_game_quietly"):
        monkeypatch.setattr(cli, name, ran)
    code, out = _main([a.format(x=blocker) for a in argv], capsys)
    line = _one_error_line(out.err)
    assert code == 2 and f"{blocker} is a file" in line, line


def test_output_path_that_is_a_folder_refused(tmp_path, capsys):
    code, out = _main(["solve", "kuhn_poker", "--save-policy", str(tmp_path)], capsys)
    assert code == 2 and "is a folder" in _one_error_line(out.err)


def _kuhn(tmp_path, *extra):
    return ["solve", "kuhn_poker", "--iterations", "10", "--eval-every", "10", "--compile-cache", "off", *extra]


def test_missing_folders_created_and_a_failed_write_kept_in_a_named_file(tmp_path, monkeypatch, capsys):
    """Missing folders are created before the solve; a write that still fails after it (its
    folder removed meanwhile) leaves the policy in a named file in the working folder, said
    on stderr, loadable, and the summary names that file."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    gone = tmp_path / "gone"
    check = cli._check_outputs

    def check_then_remove(args):   # the folder exists when checked, and is gone when written
        check(args)
        assert gone.is_dir()
        shutil.rmtree(gone)

    monkeypatch.setattr(cli, "_check_outputs", check_then_remove)
    ckpt = tmp_path / "new" / "deeper" / "run.ckpt"
    game_file = tmp_path / "games" / "kuhn.npz"
    code, out = _main(_kuhn(tmp_path, "--checkpoint", str(ckpt), "--save-game", str(game_file),
                            "--save-policy", str(gone / "p.npz")), capsys)
    assert code == 0, out.err
    assert ckpt.is_file() and game_file.is_file()
    kept = [f for f in os.listdir(work) if f.startswith("cfrjax-p-") and f.endswith(".npz")]
    assert len(kept) == 1, os.listdir(work)
    alt = str(work / kept[0])
    assert f"could not write the policy to {gone / 'p.npz'}" in out.err and f"wrote it to {alt}" in out.err
    assert f"policy: {alt}" in out.out
    game = cfrjax.load_game(str(game_file))
    state = cfrjax.load_checkpoint(str(ckpt), game)
    np.testing.assert_allclose(cfrjax.load_policy(alt, game), cfrjax.average_policy(game, state), atol=1e-6)


def test_a_failed_checkpoint_write_keeps_the_state(tmp_path, monkeypatch, capsys):
    """The checkpoint's folder removed after the check: the solve stops at its first save
    with one line naming the file that holds the state, which resumes the run."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    gone = tmp_path / "gone"
    check = cli._check_outputs

    def check_then_remove(args):
        check(args)
        shutil.rmtree(gone)

    monkeypatch.setattr(cli, "_check_outputs", check_then_remove)
    code, out = _main(_kuhn(tmp_path, "--checkpoint", str(gone / "run.ckpt")), capsys)
    errors = [x for x in out.err.splitlines() if x.startswith("cfrjax: error:")]
    assert len(errors) == 1 and out.err.strip().endswith(errors[0]), out.err
    line = errors[0]
    kept = [f for f in os.listdir(work) if f.startswith("cfrjax-run-") and f.endswith(".ckpt")]
    assert code == 2 and len(kept) == 1, (out.err, os.listdir(work))
    assert "stopped at iteration 10" in line and f"--checkpoint {work / kept[0]}" in line, line
    assert int(cfrjax.checkpoint.checkpoint_info(str(work / kept[0]))["iteration"]) == 10


# ----------------------------------------------------------------------------------------
# Spots too large for the machine


def _no_build(monkeypatch):
    def build(*a, **k):
        raise AssertionError("the spot was built before its memory plan was checked")

    monkeypatch.setattr(cfrjax.load, "build_public", build)


def test_spot_over_the_budget_refused_without_building(monkeypatch):
    """(a) A shipped spec whose plan exceeds `budget_bytes`: `MemoryPlanError` naming the
    sizes, the plan and the remedy, before anything is built; under the plan's total it
    builds."""
    plan = public_plan(load_poker_config(cfrjax.load.spec_path("hunl_turn")))
    with monkeypatch.context() as m:
        _no_build(m)
        with pytest.raises(MemoryPlanError, match="refused before building it") as e:
            cfrjax.load_game("hunl_turn", budget_bytes=plan.total_bytes // 2)
    msg = str(e.value)
    assert f"{plan.sizes['nodes']:,} public nodes" in msg and "fewer bet and raise sizes" in msg
    assert e.value.plan.total_bytes == plan.total_bytes
    game = cfrjax.load_game("hunl_turn", budget_bytes=2 * plan.total_bytes)
    assert game.sizes() == public_shapes(load_poker_config(cfrjax.load.spec_path("hunl_turn"))).sizes()


def _skip_if_it_fits():
    try:
        check_public_fits(load_poker_config(BIG_FLOP))
    except MemoryPlanError:
        return
    pytest.skip("this machine has the memory for the 240 GiB flop")


def test_realistic_flop_refused_in_seconds_python(monkeypatch):
    """(b) A realistic flop exceeding this machine: `cfrjax.load_game` raises
    `MemoryPlanError` within seconds without building it."""
    _skip_if_it_fits()
    _no_build(monkeypatch)
    with pytest.raises(MemoryPlanError, match=r"3bp_Ah8d4c_flop.*flop spot: 2,491,952 public nodes over 2,352"):
        cfrjax.load_game(BIG_FLOP)


def test_realistic_flop_refused_in_seconds_cli(monkeypatch, capsys):
    """(b) The same through the command line: one line, exit code 2, nothing built."""
    _skip_if_it_fits()
    _no_build(monkeypatch)
    code, out = _main(["solve", BIG_FLOP, "--iterations", "1"], capsys)
    line = _one_error_line(out.err)
    assert code == 2 and "refused before building it" in line and "a later street" in line, line
    # --memory-plan: the refused plan's table, then the same line
    code, out = _main(["solve", BIG_FLOP, "--memory-plan"], capsys)
    lines = out.err.strip().splitlines()
    free = re.compile(r"has [0-9.]+ \w+ free")   # the free memory moves between two calls
    assert code == 2 and free.sub("", lines[-1]) == free.sub("", line), out.err
    assert any(x.startswith("buffer") for x in lines) and "state.regret [in]" in out.err, out.err


class _Accelerator:
    """A stand-in accelerator: `memory_stats` as a GPU reports them (`limit` bytes, none used)."""

    platform = "gpu"

    def __init__(self, limit):
        self.limit = limit

    def memory_stats(self):
        return {"bytes_limit": self.limit, "bytes_in_use": 0}

    def __str__(self):
        return "gpu:0 (stand-in)"


def test_accelerator_checked_by_its_memory_and_the_host_by_the_build():
    """On an accelerator the plan is checked against the device's memory, and against the
    host's available memory, where the game is built."""
    cfg = load_poker_config(cfrjax.load.spec_path("hunl_turn"))
    total = public_plan(cfg).total_bytes
    assert check_public_fits(cfg, device=_Accelerator(2 * total))["source"] == "memory_stats"
    with pytest.raises(MemoryPlanError, match=r"device gpu:0 \(stand-in\) has .* free \(limit"):
        check_public_fits(cfg, device=_Accelerator(total))
    _skip_if_it_fits()
    with pytest.raises(MemoryPlanError, match="built on the host.* device cpu:0 has .* free .host MemAvailable"):
        check_public_fits(load_poker_config(BIG_FLOP), device=_Accelerator(2 ** 50))


# ----------------------------------------------------------------------------------------
# The estimate is the built game's sizes and plan


@pytest.mark.parametrize("spot, hands, terminals", [
    ("hunl_river", None, "auto"), ("hunl_river", "all", "dense"), ("hunl_river", "range", "auto"),
    ("hunl_turn", "all", "auto"), ("hunl_turn", "range", "dense"), ("hunl_turn_full_raise", "range", "auto"),
    ("hunl_turn_full_rake", "range", "auto"), ("tiny_flop", "range", "auto"), ("tiny_flop_raked", "range", "auto"),
])
def test_estimate_is_the_built_game(spot, hands, terminals):
    """`public_shapes` (betting trees only) gives the built game's sizes exactly, and
    `memory_plan` of it is the built game's plan, row by row (every terminal form, raked
    or not, river, turn and flop)."""
    if spot.startswith("tiny_flop"):
        cfg = PokerSubgameSpec(**TINY_FLOP, **(dict(rake_rate=0.05, rake_cap=3.0) if spot.endswith("raked") else {}))
    else:
        cfg = load_poker_config(cfrjax.load.spec_path(spot))
    shapes = public_shapes(cfg, hands=hands, terminals=terminals)
    game = build_public(cfg, hands=hands, terminals=terminals)
    assert shapes.sizes() == game.sizes()
    assert (shapes.forest_levels, shapes.trunk_levels, shapes.slot_split) == \
        (game.forest_levels, game.trunk_levels, game.slot_split)
    for order in ("simultaneous", "alternating"):
        est, built = memory_plan(shapes, order=order), memory_plan(game, order=order)
        assert [(b.name, b.elements, b.dtype) for b in est.buffers] == \
            [(b.name, b.elements, b.dtype) for b in built.buffers]
        assert est.total_bytes == built.total_bytes


@pytest.mark.parametrize("spot", ["hunl_river", "hunl_turn"])
def test_tabular_estimate_is_the_built_game(spot):
    """The tabular form: `tabular_sizes` (deals and betting template only) gives the built
    tree's nodes, decision edges and path width exactly; the pre-build plan (slots and
    information sets left out) is a lower bound within 5% of the built game's plan."""
    game = cfrjax.load_game(spot, form="tabular")
    cfg = load_poker_config(cfrjax.load.spec_path(spot))
    z, sizes = tabular_sizes(cfg), game.sizes()
    assert (z["nodes"], z["decision_edges"], z["path_width"]) == \
        (sizes["nodes"], sizes["decision_edges"], game.path_slot.shape[1])
    built = memory_plan(game).total_bytes
    exact = plan_from_sizes(sizes["nodes"], sizes["decision_edges"], sizes["slots"], sizes["infosets"],
                            path_width=z["path_width"], dtype=game.payoff.dtype).total_bytes
    lower = check_tabular_fits(cfg, budget_bytes=2 ** 62)["plan"].total_bytes
    assert exact == built and 0.95 * built <= lower <= built, (exact, built, lower)


def test_tabular_form_of_a_full_range_turn_refused_in_seconds(monkeypatch, capsys):
    """`--form tabular` on the full-range turn (3.9 billion nodes, 650 GiB): one line, exit
    code 2, nothing built (it used to end in NumPy's traceback, or the kernel's kill)."""
    def build(*a, **k):
        raise AssertionError("the tabular tree was built before its memory plan was checked")

    monkeypatch.setattr(cfrjax.load, "build_spec", build)
    with pytest.raises(MemoryPlanError, match="hunl_turn_full' in the tabular form .*3,870,196,201 nodes"):
        cfrjax.load_game("hunl_turn_full", form="tabular")
    code, out = _main(["solve", "hunl_turn_full", "--form", "tabular"], capsys)
    line = _one_error_line(out.err)
    assert code == 2 and "refused before building it" in line and "use the public form" in line, line
