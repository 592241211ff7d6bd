"""The public-tree builder builds the same game as before it was vectorised (issue 51).

`tests/data/build_reference.json` holds, for a few small spots (rivers, turns, reduced
flops: narrow ranges, few sizes, raked and unraked, paired and monotone boards), a sha256
per array leaf (dtype, shape and bytes), per static field (its `repr`), per label field
(materialised) and the fingerprint, written ONCE by the builder of commit 2e0fa20 (the
last commit before the vectorised build; `python tests/test_build_identity.py --write`
there). The test builds the same spots with today's builder and compares every entry,
so any change to an array, a static field, a label or the digest (checkpoints depend on
it) fails here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "tests", "data", "build_reference.json")
#: The label fields compared after materialising them (the builder may defer them).
LABEL_FIELDS = ("name", "fingerprint", "payoff_offset", "node_codes", "node_player", "action_names", "node_dealt",
                "node_slot_start", "hands", "hand_names", "hand_cards", "node_committed")


def _spot(name: str):
    from cfrjax.games.poker import PokerSubgameSpec, load_poker_config

    games = os.path.join(ROOT, "games")
    if name == "river_all":        # one board, every live combo (a spot kernel plan)
        return load_poker_config(os.path.join(games, "hunl_river.toml"), hands="all")
    if name == "river_raked":      # size strings with raises, all-in threshold, rake
        return PokerSubgameSpec(board="Ah 9c 5d 5s 2h", pot=30, stack=115, name=name,
                                betting={"bet": "50%, a", "raise": "3x", "add_allin_threshold": 1.5},
                                range0="AA,KK,55,A9s,98s,KQo", range1="QQ+,A5s,T9s,AKo", rake_rate=0.05, rake_cap=3.0)
    if name == "turn_small":       # the suite's turn, five random hands each
        return load_poker_config(os.path.join(games, "hunl_turn.toml"), random_hands=5, seed=2)
    if name == "turn_donk":        # donk sizes, raises, all-in called on the turn
        return PokerSubgameSpec(board="Qs 7h 2c 9d", pot=40, stack=110, name=name,
                                betting={"bet": "75%", "raise": "2.5x", "river": {"donk": "33%", "bet": "a"},
                                         "force_allin_threshold": 0.15},
                                range0="99,77,AQs,KQs,JTs,A2o", range1="QQ,T8s,A9s,KJo,22")
    if name == "flop_one_size":    # a dry flop, one bet size, no raises
        return PokerSubgameSpec(board="Ks 7d 2c", pot=20, stack=60, name=name, bet_fractions=(0.5,), raise_cap=0,
                                range0="AA,KQs,76s,JTo", range1="KK,22,A7s,QJo")
    if name == "flop_monotone":    # flushes and straight flushes on the river, raises, rake
        return PokerSubgameSpec(board="8s 6s 2s", pot=30, stack=90, name=name,
                                betting={"bet": "50%", "raise": "3x", "turn": {"raise": ""}, "river": {"raise": ""}},
                                range0="AsKs,9s7s,5s4s,QQ,T9s,Ah5h", range1="KsQs,JsTs,As2d,88,66,T9o",
                                rake_rate=0.05, rake_cap=4.0)
    if name == "flop_paired":      # paired board (full houses, quads), all-in threshold
        return PokerSubgameSpec(board="Kd Kc 4h", pot=55, stack=100, name=name,
                                betting={"bet": "75%", "raise": "", "add_allin_threshold": 1.5},
                                range0="KhQh,44,AhAd,Ks4s,JcTc", range1="AsKs,QQ,4d4c,76s")
    raise KeyError(name)


SPOTS = ("river_all", "river_raked", "turn_small", "turn_donk", "flop_one_size", "flop_monotone", "flop_paired")


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def _array_hash(x) -> str:
    a = np.ascontiguousarray(np.asarray(x))
    return _h(f"{a.dtype.str}:{a.shape};".encode() + a.tobytes())


def game_digests(game) -> dict:
    """`{entry: sha256}` of a `PublicGame`: `leaf:NAME` per array leaf, `static:NAME` per
    static field (its `repr`), `label:NAME` per label field, `source` (the provenance
    without the build time)."""
    out = {}
    for f in dataclasses.fields(game):
        v = getattr(game, f.name)
        if f.name in ("labels", "plan"):
            continue
        if f.metadata.get("static"):
            out[f"static:{f.name}"] = _h(repr(v).encode())
        elif v is not None:
            out[f"leaf:{f.name}"] = _array_hash(v)
    lb = game.labels
    for k in LABEL_FIELDS:
        v = getattr(lb, k)
        out[f"label:{k}"] = _array_hash(v) if isinstance(v, np.ndarray) else _h(repr(v).encode())
    src = json.loads(json.dumps(lb.source))
    src["poker"].pop("build_s", None)
    out["source"] = _h(json.dumps(src, sort_keys=True).encode())
    return out


def build(name: str):
    from cfrjax.games.poker.public_tree import build_public

    return build_public(_spot(name), terminals="sorted")


@pytest.mark.parametrize("name", SPOTS)
def test_build_equals_reference(name):
    with open(REFERENCE) as f:
        ref = json.load(f)["spots"][name]
    got = game_digests(build(name))
    assert got["label:fingerprint"] == ref["label:fingerprint"]
    bad = sorted(k for k in set(ref) | set(got) if ref.get(k) != got.get(k))
    assert not bad, f"{name}: differs from the reference in {bad}"


if __name__ == "__main__":   # regenerate only from the pre-vectorised builder (commit 2e0fa20)
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_build_identity.py --write   (at commit 2e0fa20 only)")
    import jax

    jax.config.update("jax_enable_x64", True)   # as tests/conftest.py: float64 leaves
    sys.path.insert(0, ROOT)
    spots = {n: game_digests(build(n)) for n in SPOTS}
    with open(REFERENCE, "w") as f:
        json.dump({"commit": "2e0fa20", "note": "sha256[:24] per entry, tests/test_build_identity.py", "spots": spots},
                  f, indent=0, sort_keys=True)
        f.write("\n")
