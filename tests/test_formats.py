"""Formats that scale (issue 48): policies, checkpoints, `cfrjax show` and `cfrjax games`
on spots of millions of information sets.

* A `.json` policy is refused above a size (`MAX_JSON_BYTES`, 50 MB), estimated from the
  counts before anything is written (`json_size`, checked against written files), by
  `save_policy` and by `cfrjax solve --save-policy` before it solves; a policy name
  without an extension is `.npz` for the public form, `.json` for the tabular.
* `solve_chunks` without `checkpoint_every` writes the checkpoint at an evaluation at
  most once per `checkpoint_min_interval_s` (60 s), and always at the end (a fake clock
  here, no waiting).
* `cfrjax show SPOT NODE --checkpoint / --policy` reads the solve's recorded
  exploitability and runs no solve or evaluation.
* `cfrjax games` imports neither JAX nor OpenSpiel and builds nothing; the shipped specs'
  sizes it prints equal the built games'.

Small: a river spot of the shipped betting (every live combo, six hands per range) under
a random policy, Kuhn for the tabular form and the cadence.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

import cfrjax
from cfrjax import cli, driver, strategy
from cfrjax.games.poker import load_poker_config
from cfrjax.games.poker.public_tree import build_public
from test_show import RIVER_TOML, random_policy


@pytest.fixture(scope="module")
def river(tmp_path_factory):
    """`(spec path, game, random policy)`."""
    path = tmp_path_factory.mktemp("formats") / "fmt_river.toml"
    path.write_text(RIVER_TOML.replace('name = "show_river"', 'name = "fmt_river"\nhands = "all"'))   # 1,081 hands
    game = build_public(load_poker_config(path))
    return str(path), game, random_policy(game, 7)


#: The river spot's command-line solve (the same executables in every test here).
SOLVE = ("--iterations", "4", "--eval-every", "1")


def _one_error(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cfrjax: error: "), lines
    return lines[0]


def _no_solving(monkeypatch):
    """Make every solve and evaluation entry point fail, as the command line reaches them."""
    def boom(*args, **kwargs):
        raise AssertionError("solved or evaluated")
    for name in cfrjax.__all__:  # the whole API imported first: a module first imported while the patch
        getattr(cfrjax, name)    # holds would keep `boom` (`from cfrjax.driver import evaluate`) after it
    for name in ("solve", "solve_with_trace", "solve_chunks", "evaluate", "exploitability", "average_policy"):
        monkeypatch.setattr(cfrjax, name, boom)
    monkeypatch.setattr(driver, "evaluate", boom)


# ----------------------------------------------------------------------------------------
# Policy files


def test_json_size_estimate_is_close(river, tmp_path):
    """`json_size` (from counts alone) is within 25% of the file `save_policy` writes, for
    the public form and the tabular one."""
    _, game, policy = river
    kuhn = cfrjax.load_game("kuhn_poker")
    leduc = cfrjax.load_game("leduc_poker")
    rng = np.random.default_rng(0)
    for g, p in ((game, policy), (kuhn, cfrjax.policy.uniform_policy(kuhn)),
                 (leduc, np.asarray(cfrjax.policy.uniform_policy(leduc)) * rng.uniform(0.5, 1.5, leduc.slot_shape))):
        path = cfrjax.save_policy(tmp_path / "p.json", g, p)
        assert 0.75 < strategy.json_size(g) / os.path.getsize(path) < 1.25, g.name


def test_save_policy_refuses_large_json(river, tmp_path):
    """Over `max_json_bytes` a `.json` policy is refused in one line naming the `.npz`,
    and nothing is written; under it, written. The default bound is 50 MB, which a turn
    spot's JSON exceeds."""
    _, game, policy = river
    size = strategy.json_size(game)
    path = tmp_path / "big.json"
    with pytest.raises(ValueError, match=r"over the 0\.1 MB limit for \.json .*write it as \.npz instead \(.*big\.npz"):
        cfrjax.save_policy(path, game, policy, max_json_bytes=100_000)
    assert size > 100_000 and not path.exists()
    assert cfrjax.save_policy(path, game, policy, max_json_bytes=2 * size) == str(path) and path.exists()
    assert strategy.MAX_JSON_BYTES == 50 * 10 ** 6
    turn = cfrjax.load_game("hunl_turn", hands="all")
    assert strategy.json_size(turn) > strategy.MAX_JSON_BYTES
    with pytest.raises(ValueError, match=r"over the 50 MB limit for \.json"):
        strategy.check_json_size(tmp_path / "turn.json", turn)
    strategy.check_json_size(tmp_path / "turn.npz", turn)   # .npz: any size


def test_policy_name_without_extension_gets_the_forms_default(river, tmp_path):
    """No extension: `.npz` for the public form, `.json` for the tabular; another
    extension is an error naming both."""
    _, game, policy = river
    written = cfrjax.save_policy(tmp_path / "spot", game, policy)
    assert written == str(tmp_path / "spot.npz") and strategy.is_policy_file(written)
    np.testing.assert_array_equal(np.asarray(cfrjax.load_policy(written, game)), policy)
    kuhn = cfrjax.load_game("kuhn_poker")
    assert cfrjax.save_policy(tmp_path / "kuhn", kuhn, cfrjax.policy.uniform_policy(kuhn)) == str(tmp_path / "kuhn.json")
    with pytest.raises(ValueError, match=r"must end with \.json or \.npz"):
        cfrjax.save_policy(tmp_path / "spot.csv", game, policy)


def test_cli_refuses_large_json_before_solving(river, tmp_path, monkeypatch, capsys):
    """`cfrjax solve --save-policy X.json` of a spot over the bound fails in one line before
    any solving (the solver is made to fail): with a small bound on the river spot, and at
    the real 50 MB on the shipped turn spot."""
    path, _, _ = river
    _no_solving(monkeypatch)
    monkeypatch.setattr(strategy, "MAX_JSON_BYTES", 100_000)
    out = tmp_path / "river.json"
    assert cli.main(["solve", path, "--iterations", "5", "--save-policy", str(out)]) == 2
    err = _one_error(capsys)
    assert "over the 0.1 MB limit for .json" in err and str(tmp_path / "river.npz") in err and not out.exists()
    monkeypatch.setattr(strategy, "MAX_JSON_BYTES", 50 * 10 ** 6)
    assert cli.main(["solve", "hunl_turn", "--hands", "all", "--iterations", "5", "--save-policy",
                     str(tmp_path / "t.json")]) == 2
    assert "over the 50 MB limit for .json" in _one_error(capsys)


# ----------------------------------------------------------------------------------------
# Checkpoint cadence


class _Clock:
    """A clock the test moves: `now` seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _saves(tmp_path, step_s, **kwargs):
    """`(iteration, saved, iteration in the file)` per chunk of a 50-iteration Kuhn solve
    evaluated every 10, the fake clock moving `step_s` seconds per chunk."""
    kuhn = cfrjax.load_game("kuhn_poker")
    path = tmp_path / f"k{len(os.listdir(tmp_path))}.ckpt"
    clock = _Clock()
    run = cfrjax.solve_chunks(kuhn, cfrjax.init(kuhn), 50, eval_every=10, checkpoint=path, clock=clock, **kwargs)
    rows = []
    for chunk in run:
        rows.append((chunk.iteration, chunk.saved, cfrjax.checkpoint.checkpoint_info(path)["iteration"] if path.exists() else None))
        clock.now += step_s
    return rows


def test_checkpoint_cadence_is_time_based_by_default(tmp_path):
    """Default: at an evaluation 60 s or more after the last write (or the start), and at
    the end; 0 s: at every evaluation; `checkpoint_every`: every K iterations whatever
    the clock."""
    assert driver.CHECKPOINT_MIN_INTERVAL_S == 60
    assert _saves(tmp_path, 30) == [(10, False, None), (20, False, None), (30, True, 30), (40, False, 30),
                                    (50, True, 50)]
    assert [r[1] for r in _saves(tmp_path, 1)] == [False, False, False, False, True]
    assert [r[1] for r in _saves(tmp_path, 1, checkpoint_min_interval_s=0)] == [True] * 5
    assert [r[1] for r in _saves(tmp_path, 1000, checkpoint_every=20)] == [False, True, False, True, True]
    with pytest.raises(ValueError, match="checkpoint_min_interval_s must be"):
        _saves(tmp_path, 1, checkpoint_min_interval_s=-1)
    # between writes `save()` (the command line's, at SIGTERM) writes the state where it stands
    kuhn = cfrjax.load_game("kuhn_poker")
    run = cfrjax.solve_chunks(kuhn, cfrjax.init(kuhn), 50, eval_every=10, checkpoint=tmp_path / "s.ckpt")
    assert not next(iter(run)).saved
    run.save()
    assert cfrjax.checkpoint.checkpoint_info(tmp_path / "s.ckpt")["iteration"] == 10


def test_cli_checkpoint_cadence(river, tmp_path, monkeypatch):
    """`cfrjax solve --checkpoint`: one write for a solve under a minute (the last), where
    it used to write at each of its evaluations; `--checkpoint-every K` every K."""
    path, _, _ = river
    writes = []
    real = driver.save_checkpoint
    monkeypatch.setattr(driver, "save_checkpoint", lambda p, game, state, **kw: (
        writes.append(int(state.iteration)), real(p, game, state, **kw)))
    args = ["solve", path, *SOLVE, "--checkpoint"]
    assert cli.main(args + [str(tmp_path / "a.ckpt")]) == 0
    assert writes == [4]
    writes.clear()
    assert cli.main(args + [str(tmp_path / "b.ckpt"), "--checkpoint-every", "2"]) == 0
    assert writes == [2, 4]


# ----------------------------------------------------------------------------------------
# cfrjax show from a saved solution


def test_cli_show_reads_a_saved_solution_without_solving(river, tmp_path, monkeypatch, capsys):
    """`cfrjax solve SPOT --save-policy NAME --checkpoint P` writes NAME.npz (the public
    form's default); `cfrjax show SPOT NODE --policy NAME.npz` and `--checkpoint P` then
    print the report with the solve's own exploitability, with every solve and
    evaluation entry point failing."""
    path, game, _ = river
    ckpt, name = str(tmp_path / "r.ckpt"), str(tmp_path / "spot")
    assert cli.main(["solve", path, *SOLVE, "--save-policy", name, "--checkpoint", ckpt, "--json"]) == 0
    record = __import__("json").loads(capsys.readouterr().out.splitlines()[-1])
    assert os.path.isfile(name + ".npz") and not os.path.exists(name)
    expl = f"exploitability {record['exploitability']:.6g}"
    _no_solving(monkeypatch)
    assert cli.main(["show", path, "k", "--policy", name + ".npz"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"  solution: policy {name}.npz (dcfr alternating, iteration 4); {expl} ("), out[1]
    monkeypatch.setattr(cfrjax, "average_policy", cfrjax.policy.average_policy)   # the checkpoint's policy
    assert cli.main(["show", path, "k", "--checkpoint", ckpt]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith(f"  solution: checkpoint {ckpt} (dcfr alternating, iteration 4); {expl} ("), out[1]


# ----------------------------------------------------------------------------------------
# cfrjax games


def test_games_imports_no_solver_and_builds_nothing():
    """`cfrjax games` in a fresh process: JAX, OpenSpiel and the game builders are never
    imported, and every shipped spec is listed with its sizes."""
    code = ("import sys\nimport cfrjax.cli as cli\nrc = cli.main(['games'])\n"
            "print('imported:', sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'pyspiel') "
            "or m.startswith(('cfrjax.games', 'cfrjax.load', 'cfrjax.public'))))\nsys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == "imported: []", lines[-1]
    rows = {line.split()[0]: line.split() for line in lines[1:-2]}
    for name in cfrjax.specs.shipped_specs():
        assert rows[name][2] == "public" and rows[name][3] != "-" and rows[name][4] != "-", rows[name]


@pytest.mark.parametrize("name", [n for n in cfrjax.specs.shipped_specs() if "flop" not in n] + [
    pytest.param("hunl_flop_full", marks=pytest.mark.slow)])
def test_shipped_spec_sizes_are_the_built_games(name):
    """`SPEC_SIZES` holds every shipped spec as it is now (an edited spec's digest is not
    there) with the sizes of the game `cfrjax solve` builds from it."""
    path = cfrjax.specs.spec_path(name)
    game = build_public(load_poker_config(path))
    built = (game.num_nodes, game.num_infosets * game.num_hands)
    assert cli.SPEC_SIZES.get(cli._spec_digest(path)) == built, \
        f'update cli.SPEC_SIZES: "{cli._spec_digest(path)}": {built},  # {name}'
