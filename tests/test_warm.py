"""Warm start (`cfrjax.warm_start`): after a small change to a solved spot (one range
narrowed, or one information set locked), starting from the previous solution (its state,
or its average policy alone) reaches 0.3% of the pot in fewer iterations than a cold start;
a checkpoint of the same tree with other ranges is accepted as a warm start (and still
refused as a resumption)."""

from __future__ import annotations

import numpy as np
import pytest

import cfrjax
from cfrjax.games.poker import starting_pot

TARGET = 0.003  # of the starting pot


@pytest.fixture(scope="module")
def solved():
    """`hunl_river` with 30 random hands per player (public form), solved (library
    defaults) to 0.3% of the pot: `(game, state, pot)`."""
    game = cfrjax.load_game("hunl_river", random_hands=30)
    pot = starting_pot(game)
    state, _ = _to_target(game, cfrjax.init(game), pot)
    return game, state, pot


def _to_target(game, state, pot):
    """`(state, iterations run)` of a solve of `game` from `state` to `TARGET` of the pot."""
    out, trace = cfrjax.solve_with_trace(game, state, eval_every=5, target_exploitability=TARGET * pot, max_iterations=500)
    assert trace.exploitability[-1] < TARGET * pot, "did not reach the target"
    return out, int(trace.iteration[-1]) - int(state.iteration)


def _narrowed(game):
    """`game` with every third hand of player 0's range removed."""
    r0, r1 = cfrjax.poker.root_ranges(game)
    r0[np.flatnonzero(r0)[::3]] = 0.0
    return cfrjax.poker.set_root_ranges(game, r0, r1)


def test_narrowed_range_warm_start_beats_cold_start(solved):
    game, state, pot = solved
    changed = _narrowed(game)
    _, cold = _to_target(changed, cfrjax.init(changed), pot)
    _, warm = _to_target(changed, cfrjax.warm_start(changed, state), pot)
    assert warm < cold, (warm, cold)


def test_locked_node_warm_start_beats_cold_start(solved):
    game, state, pot = solved
    key = next(k for k, _, _ in game.labels.infoset_keys())       # a root set of player 0
    lock = {key: [0.0, 0.0, 1.0]}                                  # always bet the pot there
    _, cold = _to_target(game, cfrjax.lock(game, cfrjax.init(game), lock), pot)
    _, warm = _to_target(game, cfrjax.lock(game, cfrjax.warm_start(game, state), lock), pot)
    assert warm < cold, (warm, cold)


def test_policy_warm_start_beats_cold_start(solved, tmp_path):
    """From the average policy alone, as a policy file (`cfrjax solve --save-policy`): a
    fresh state (iteration 0, no average) whose regrets regret-match to the policy, and
    after the narrowing it reaches the target in fewer iterations than a cold start."""
    game, state, pot = solved
    changed = _narrowed(game)
    policy = cfrjax.average_policy(game, state)
    path = tmp_path / "solved.npz"
    cfrjax.save_policy(path, game, policy)
    warm = cfrjax.warm_start(changed, path, config=state.config)
    assert warm.config == state.config and int(warm.iteration) == 0 and float(warm.avg_weight) == 0
    regret, start = np.asarray(warm.regret), np.asarray(changed.infoset_slot_start)   # regret matching, by hand:
    total = np.add.reduceat(np.maximum(regret, 0), start[:-1], axis=0)[np.asarray(changed.slot_infoset)]
    assert (total > 0).all()
    np.testing.assert_allclose(np.maximum(regret, 0) / total, policy, rtol=0, atol=1e-12)   # it plays the policy
    assert np.asarray(cfrjax.warm_start(changed, policy, config=state.config).regret).tobytes() == \
        np.asarray(warm.regret).tobytes()                            # the file holds the array exactly
    _, cold = _to_target(changed, cfrjax.init(changed), pot)
    _, hot = _to_target(changed, warm, pot)
    assert hot < cold, (hot, cold)
    with pytest.raises(ValueError, match="strength must be a positive number of iterations, got 0"):
        cfrjax.warm_start(changed, policy, strength=0)
    with pytest.raises(ValueError, match="policy has shape"):
        cfrjax.warm_start(changed, policy[:-1])


def test_checkpoint_of_the_same_tree_warm_starts(solved, tmp_path):
    game, state, _ = solved
    changed = _narrowed(game)
    path = tmp_path / "solved.ckpt"
    cfrjax.save_checkpoint(path, game, state)
    with pytest.raises(cfrjax.CheckpointError, match="other payoffs or chance probabilities.*warm_start"):
        cfrjax.load_checkpoint(path, changed)          # resuming stays exact: refused
    warm = cfrjax.warm_start(changed, path)
    for field in cfrjax.state.ARRAY_FIELDS:
        assert np.asarray(getattr(warm, field)).tobytes() == np.asarray(getattr(state, field)).tobytes(), field
    assert warm.config == state.config


def test_another_tree_is_refused(solved, tmp_path):
    game, state, _ = solved
    kuhn = cfrjax.load_game("kuhn_poker")
    with pytest.raises(ValueError, match="same tree and form"):
        cfrjax.warm_start(kuhn, state)
    path = tmp_path / "kuhn.ckpt"
    cfrjax.save_checkpoint(path, kuhn, cfrjax.init(kuhn))
    with pytest.raises(cfrjax.CheckpointError, match="was made for game"):
        cfrjax.warm_start(game, path)


def test_cli_warm_start_continues_the_saved_solve(tmp_path, capsys):
    """`cfrjax solve --warm-start`: 4 iterations, then 6 more from their checkpoint, equal
    10 iterations in one run bit for bit; a checkpoint solved with another rule is a
    one-line error (exit 2)."""
    from cfrjax import cli

    def run(*args):
        code = cli.main(["solve", "kuhn_poker", "--dtype", "float64", *map(str, args)])
        return code, capsys.readouterr().err

    paths = {k: str(tmp_path / f"{k}.ckpt") for k in ("straight", "first", "warm")}
    assert run("--iterations", 10, "--checkpoint", paths["straight"])[0] == 0
    policy = str(tmp_path / "first.json")
    assert run("--iterations", 4, "--checkpoint", paths["first"], "--save-policy", policy)[0] == 0
    code, err = run("--iterations", 6, "--warm-start", paths["first"], "--checkpoint", paths["warm"])
    assert code == 0 and "warm start from" in err and "(iteration 4), 6 more iterations" in err
    game = cfrjax.load_game("kuhn_poker")
    straight, warm = (cfrjax.load_checkpoint(paths[k], game) for k in ("straight", "warm"))
    assert int(warm.iteration) == 10
    for field in cfrjax.state.ARRAY_FIELDS:
        assert np.asarray(getattr(warm, field)).tobytes() == np.asarray(getattr(straight, field)).tobytes(), field
    code, err = run("--iterations", 6, "--warm-start", policy)      # a policy alone: a new solve from it
    assert code == 0 and f"warm start from policy {policy} (iteration 0), 6 more iterations" in err
    code, err = run("--iterations", 6, "--rule", "cfr+", "--warm-start", paths["first"])
    assert code == 2 and err.count("\n") == 1 and "different config: rule 'dcfr' (asked: 'cfr+')" in err
