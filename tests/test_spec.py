"""Bad input gets a clear error naming the problem, never a silent wrong answer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import cfrjax
from cfrjax.spec import CHANCE, TERMINAL, SpecError
from random_games import kuhn_spec


def _fields(spec):
    return {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}


def _rebuild(spec, **changes):
    fields = _fields(spec)
    fields.update(changes)
    return cfrjax.GameSpec(**fields)


@pytest.fixture(scope="module")
def kuhn():
    return kuhn_spec()


def test_three_players_rejected():
    with pytest.raises(SpecError, match="3 players"):
        cfrjax.load_game("kuhn_poker(players=3)")


def test_general_sum_rejected():
    with pytest.raises(SpecError, match="general_sum"):
        cfrjax.load_game("matrix_pd")


def test_unknown_game_rejected():
    with pytest.raises(SpecError, match="no_such_game"):
        cfrjax.load_game("no_such_game")


def test_nan_payoff_rejected(kuhn):
    payoff = kuhn.payoff.copy()
    z = int(np.flatnonzero(kuhn.kind == TERMINAL)[3])
    payoff[z] = np.nan
    with pytest.raises(SpecError, match=rf"node {z} .*payoff is nan"):
        _rebuild(kuhn, payoff=payoff)


def test_chance_probabilities_must_sum_to_one(kuhn):
    prob = kuhn.chance_prob.copy()
    root = int(np.flatnonzero(kuhn.parent < 0)[0])
    child = int(np.flatnonzero(kuhn.parent == root)[0])
    prob[child] = 0.5
    with pytest.raises(SpecError, match=rf"node {root} .*sum to 1.1666"):
        _rebuild(kuhn, chance_prob=prob)


def test_imperfect_recall_rejected(kuhn):
    # Merge player 0's second-decision sets "0:J:pb" and "0:Q:pb": the members then differ
    # in the earlier own information set ("0:J:" vs "0:Q:") -> imperfect recall.
    keys = list(kuhn.infoset_keys)
    a, b = keys.index("0:J:pb"), keys.index("0:Q:pb")
    infoset = kuhn.infoset.copy()
    infoset[infoset == b] = a
    remap = np.arange(len(keys))
    remap[b:] -= 1
    remap[b] = a if a < b else a - 1
    infoset = np.where(infoset >= 0, remap[np.maximum(infoset, 0)], -1)
    keep = [i for i in range(len(keys)) if i != b]
    with pytest.raises(SpecError, match="0:J:pb.*perfect recall"):
        _rebuild(kuhn, infoset=infoset, infoset_keys=tuple(keys[i] for i in keep),
                 infoset_player=kuhn.infoset_player[keep], action_names=tuple(kuhn.action_names[i] for i in keep))


def test_non_zero_sum_returns_rejected():
    from cfrjax.spec import zero_sum_payoffs
    with pytest.raises(SpecError, match="not zero-sum"):
        zero_sum_payoffs(np.array([[1.0, -1.0], [2.0, 0.0]]))
    shifted, offset = zero_sum_payoffs(np.array([[1.0, 0.0], [0.0, 1.0]]))
    np.testing.assert_array_equal(shifted, [0.5, -0.5])
    assert offset == 0.5


def test_structure_errors(kuhn):
    parent = kuhn.parent.copy()
    parent[5] = -1
    with pytest.raises(SpecError, match="exactly one root"):
        _rebuild(kuhn, parent=parent)
    kind = kuhn.kind.copy()
    dec = int(np.flatnonzero(kuhn.kind == 0)[0])
    kind[dec] = 1
    with pytest.raises(SpecError, match="two owners"):
        _rebuild(kuhn, kind=kind)
    kind = kuhn.kind.copy()
    kind[int(np.flatnonzero(kuhn.kind == CHANCE)[1])] = TERMINAL
    with pytest.raises(SpecError, match="terminal node has children"):
        _rebuild(kuhn, kind=kind)
    names = list(kuhn.action_names)
    names[0] = ("p", "b", "x")
    with pytest.raises(SpecError, match="one action list per information set"):
        _rebuild(kuhn, action_names=tuple(names))
