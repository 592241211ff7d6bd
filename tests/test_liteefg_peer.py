"""LiteEFG 1.0 loads our Kuhn export; its CFR+ agrees with OpenSpiel's to 1e-6."""

import os
import sys

import numpy as np
import pytest

pytest.importorskip("LiteEFG", reason="liteefg is not installed (pip install --no-deps liteefg==1.0.0)")
pytest.importorskip("pyspiel")

import cfrjax  # noqa: E402
from cfrjax.games.efg_file import write_efg  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench", "peers"))
import liteefg_peer  # noqa: E402

T = 50


def slots(game, spec, rows):
    """Per-spec-infoset rows -> `[S]` in the compiled game's slot order."""
    index = {k: i for i, k in enumerate(spec.infoset_keys)}
    return np.concatenate([rows[index[k]] for k in game.labels.infoset_keys])


def own_reach(game, spec, policy):
    """Own reach probability of each compiled infoset under `policy` `[S]` (perfect recall)."""
    offset = np.concatenate([[0], np.cumsum([len(a) for a in game.labels.action_names])])
    slot_of = {k: offset[i] for i, k in enumerate(game.labels.infoset_keys)}
    out = []
    for key in game.labels.infoset_keys:
        h = int(np.flatnonzero(spec.infoset == spec.infoset_keys.index(key))[0])
        owner, r = spec.kind[h], 1.0
        while spec.parent[h] >= 0:
            p = int(spec.parent[h])
            if spec.kind[p] == owner:
                r *= policy[slot_of[spec.infoset_keys[spec.infoset[p]]] + spec.action[h]]
            h = p
        out.append(r)
    return np.repeat(np.array(out), np.diff(offset))


def test_liteefg_cfr_plus_on_our_kuhn_export_matches_openspiel(tmp_path):
    import pyspiel
    from open_spiel.python.algorithms import cfr, exploitability

    spec = cfrjax.games.openspiel.spec_from_openspiel("kuhn_poker")
    write_efg(spec, tmp_path / "kuhn.efg")
    game = cfrjax.load_game(spec)
    rec = liteefg_peer.run(tmp_path / "kuhn.efg", spec, "cfr+", T)
    lite = slots(game, spec, rec["_rows"])

    # The same policy scored three ways: LiteEFG's evaluator, cfrjax's, OpenSpiel's.
    os_game = pyspiel.load_game("kuhn_poker")
    ours = float(cfrjax.exploitability(game, lite))
    theirs = exploitability.exploitability(os_game, cfrjax.games.openspiel.to_openspiel_policy(game, lite))
    assert abs(rec["exploitability"] - ours) < 1e-6 and abs(rec["exploitability"] - theirs) < 1e-9

    # OpenSpiel's CFR+ (alternating, RM+) after the same T iterations, averaged with
    # LiteEFG's convention (post-update iterates x_{t+1}, weight t, sequence-form).
    solver = cfr.CFRPlusSolver(os_game)
    num = np.zeros(game.num_slots)
    for t in range(1, T + 1):
        solver.evaluate_and_update_policy()
        x = cfrjax.games.openspiel.from_openspiel_policy(game, solver.current_policy())
        num += t * own_reach(game, spec, x) * x
    seg = np.asarray(game.slot_infoset)
    den = np.bincount(seg, weights=num)[seg]
    emulated = num / den
    np.testing.assert_allclose(lite, emulated, atol=1e-6)
    expl_os = exploitability.exploitability(os_game, cfrjax.games.openspiel.to_openspiel_policy(game, emulated))
    assert abs(rec["exploitability"] - expl_os) < 1e-6
    assert rec["value"] == pytest.approx(-1 / 18, abs=2 * rec["nash_conv"])
